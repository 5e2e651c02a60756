/*
 * ndarray_tool: exposes mxlite's NDArray file reader and writer to the
 * tests, which have no other way to reach the writer yet.
 *
 *   ndarray_tool resave IN OUT    read IN (any version), write OUT (V2)
 *
 * Built from the amalgamated source together with this file.
 */
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "../../predict/c_api/environment.h"
#include "../../predict/ndarray/ndarray_io.h"

int main(int argc, char** argv) {
  // This driver is the API boundary: the environment (MXLITE_ISA caps the
  // kernels' instruction set) applies here.
  {
    const mxlite::Status environment = mxlite::ApplyProcessEnvironment();
    if (!environment.ok()) {
      std::fprintf(stderr, "%s\n", environment.message().c_str());
      return 2;
    }
  }
  if (argc != 4 || std::string(argv[1]) != "resave") {
    std::fprintf(stderr, "usage: %s resave IN OUT\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<mxlite::NDArray> arrays;
  std::vector<std::string> names;
  mxlite::Status status = mxlite::LoadNDArrayList(bytes.data(), bytes.size(), argv[2], &arrays, &names);
  std::string out;
  if (status.ok()) status = mxlite::SaveNDArrayList(arrays, names, &out);
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  std::ofstream(argv[3], std::ios::binary).write(out.data(), static_cast<std::streamsize>(out.size()));
  return 0;
}
