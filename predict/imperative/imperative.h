/*
 * The imperative layer: arrays that compute lazily on the engine, the core
 * of mxlite.nd (MXNet's mx.nd).
 *
 * An EngineArray is an NDArray plus the engine variable that guards its
 * storage. Every operation here infers what it can synchronously -- output
 * shapes and dtypes, attribute errors -- allocates its outputs, pushes the
 * computation onto the process-wide engine with the inputs' variables as
 * const_vars and the outputs' as mutable_vars, and returns at once. Reading
 * an array's values (ReadToHost, WaitToRead) waits for the writes pushed
 * before it and reports the failure of any of them, so an error inside a
 * pushed operation surfaces at the next read of what it computed.
 *
 * A view (a leading-axis slice, a reshape) shares both the storage and the
 * variable of its base, so reads and writes through either are ordered
 * against each other exactly like accesses to one array.
 *
 * Operators compute in float32 (as in the executor): arrays of other types
 * are converted on the way in and out, inside the pushed operation.
 *
 * Not part of the minimal device build (MXLITE_PREDICT_ONLY).
 */
#ifndef MXLITE_IMPERATIVE_IMPERATIVE_H_
#define MXLITE_IMPERATIVE_IMPERATIVE_H_

#include <memory>
#include <string>
#include <vector>

#include "../base/status.h"
#include "../engine/engine.h"
#include "../ndarray/ndarray.h"
#include "../operators/attr_parser.h"

namespace mxlite {

struct EngineArray {
  NDArray data;
  VarHandle var;
};
using ArrayRef = std::shared_ptr<EngineArray>;

// A zero-filled array with a variable of its own.
Status NewEngineArray(const Shape& shape, int dtype, ArrayRef* out);
// `count` elements of `base` from element `offset` on, seen as `shape`:
// same storage, same variable.
Status ViewOf(const ArrayRef& base, int64_t offset, const Shape& shape, ArrayRef* out);

// Runs the registered operator `op_name` (an alias works too) on `inputs`;
// *outputs receives its visible outputs, fresh arrays being computed.
Status Invoke(const std::string& op_name, const AttrMap& attrs,
              const std::vector<ArrayRef>& inputs, std::vector<ArrayRef>* outputs);

// out = op(a) . op(b) for 2-d float32 arrays (Sgemm on the shared pool).
Status Dot(const ArrayRef& a, const ArrayRef& b, bool trans_a, bool trans_b, ArrayRef* out);

// to[:] = from (equal element counts; converts the element type).
Status CopyFromTo(const ArrayRef& from, const ArrayRef& to);
// to[:] = value, rounded to to's element type.
Status Fill(const ArrayRef& to, double value);
// to[:] = host data of `dtype` holding to's element count (copied now,
// written once earlier operations on `to` are done).
Status WriteFromHost(const ArrayRef& to, const void* data, int dtype);

// Random numbers from a counter-based generator: element i of draw number
// `stream` under `seed` is a hash of (seed, stream, i), so the values are
// reproducible and independent of threads. They differ from MXNet's.
// kind: "uniform" (in [low, high)) or "normal" (mean low, std high).
Status RandomFill(const ArrayRef& to, const std::string& kind, double low, double high,
                  uint64_t seed, uint64_t stream);

// Waits for the writes of `array` pushed so far; returns their failure.
Status WaitToRead(const ArrayRef& array);
// Waits for everything pushed so far; returns the first unreported failure.
Status WaitAll();
// Waits, then copies the values into a new plain NDArray.
Status ReadToHost(const ArrayRef& array, NDArray* out);

// Testing aid: pushes an operation writing `arrays` that sleeps `millis`
// and then fails with `failure` unless it is empty.
Status PushSleep(const std::vector<ArrayRef>& arrays, int millis, const std::string& failure);

}  // namespace mxlite

#endif  // MXLITE_IMPERATIVE_IMPERATIVE_H_
