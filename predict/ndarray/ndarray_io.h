/*
 * MXNet's binary NDArray list format: .params checkpoints and mx.nd.save.
 *
 * File:   u64 0x112 | u64 reserved | u64 N | N records | u64 K | K names
 *         (K is 0 for a list, N for a dict; a name is u64 length + bytes).
 * Record: u32 magic, then by version
 *   V2 0xF993FAC9 (MXNet 1.x default): i32 storage type, shape, [ndim 0: none]
 *   V3 0xF993FACA (numpy semantics): as V2, but ndim -1 is none, 0 a scalar
 *   V1 0xF993FAC8: shape, [ndim 0: none]
 *   legacy (no magic): the u32 is ndim, followed by ndim u32 dims
 *   then (all but none): i32 dev_type, i32 dev_id, i32 type flag, raw data.
 * A shape is i32 ndim + ndim i64 dims. Everything is little-endian.
 * Sparse records (storage type 1 or 2) are reported as unsupported.
 */
#ifndef MXLITE_NDARRAY_NDARRAY_IO_H_
#define MXLITE_NDARRAY_NDARRAY_IO_H_

#include <string>
#include <vector>

#include "ndarray.h"

namespace mxlite {

// Parses a whole file held in memory. `source` names it in error messages.
// `names` receives one name per array, or stays empty for a list file.
Status LoadNDArrayList(const void* bytes, size_t size, const std::string& source,
                       std::vector<NDArray>* arrays, std::vector<std::string>* names);

// Serialises arrays (and names: empty, or one per array) in the V2 layout
// that MXNet 1.9.1 writes.
Status SaveNDArrayList(const std::vector<NDArray>& arrays,
                       const std::vector<std::string>& names, std::string* out);

}  // namespace mxlite

#endif  // MXLITE_NDARRAY_NDARRAY_IO_H_
