/*
 * Status: how every fallible function in mxlite reports failure.
 *
 * Library code never throws across module boundaries and never aborts: a
 * function that can fail returns a Status, and the C API turns a failed Status
 * into -1 plus a thread-local message (MXGetLastError). Messages are written
 * for the user: they name the file, node, input or parameter and the problem.
 */
#ifndef MXLITE_BASE_STATUS_H_
#define MXLITE_BASE_STATUS_H_

#include "config.h"

#include <initializer_list>
#include <sstream>
#include <type_traits>
#include <string>
#include <utility>

namespace mxlite {

class Status {
 public:
  Status() = default;  // success
  static Status Error(std::string message) {
    Status status;
    status.failed_ = true;
    status.message_ = std::move(message);
    return status;
  }
  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }
  // Prefixes the message with context ("loading params: " + message).
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return Error(context + message_);
  }

 private:
  bool failed_ = false;
  std::string message_;
};

// Concatenates any streamable values into one string. The work is done
// once per list of decayed types: string literals of different lengths
// (char[N]) share one instantiation as const char*, which keeps the
// hundreds of error messages from each compiling a copy of it.
template <typename... Parts>
std::string StrCatDecayed(const Parts&... parts) {
  std::ostringstream stream;
  (void)std::initializer_list<int>{((stream << parts), 0)...};
  return stream.str();
}
template <typename... Parts>
inline std::string StrCat(const Parts&... parts) {
  return StrCatDecayed<typename std::decay<const Parts>::type...>(parts...);
}

}  // namespace mxlite

// Returns early with the Status of `expr` when it failed.
#define MXL_RETURN_IF_ERROR(expr)                   \
  do {                                              \
    ::mxlite::Status mxl_status_ = (expr);          \
    if (!mxl_status_.ok()) return mxl_status_;      \
  } while (0)

// Returns a failed Status whose message is the concatenation of the remaining
// arguments when `cond` is false.
#define MXL_CHECK(cond, ...)                                               \
  do {                                                                     \
    if (!(cond)) return ::mxlite::Status::Error(::mxlite::StrCat(__VA_ARGS__)); \
  } while (0)

#endif  // MXLITE_BASE_STATUS_H_
