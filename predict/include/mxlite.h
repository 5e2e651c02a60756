/*
 * mxlite.h: mxlite's extensions to MXNet's C predict API.
 *
 * c_predict_api.h stays MXNet's interface, unchanged, so programs written
 * against MXNet's predictor relink against mxlite. What MXNet's API cannot
 * say lives here, under the MXLite prefix.
 *
 * Runtime options are name/value strings, so that a new option changes no
 * signature. The names (docs/options.md lists them with their environment
 * variables; every one can also be set in the environment, which a create
 * call reads first and the explicit options override):
 *   threads             threads a forward pass splits its work over, the
 *                       caller's included; 0: one per core (at most 256)
 *   spin_ms             ms idle pool threads poll before sleeping (100)
 *   share_threads       1: predictors with the same thread count share one
 *                       pool of threads (default); 0: a pool of their own
 *   graph_optimization  1: fuse operators (default); 0: run as written
 *   fold_constants      1: with graph_optimization, compute once what
 *                       depends on parameters alone (default); 0: each pass
 *   split_batch         auto (default): a batch runs one image at a time,
 *                       each thread on its own images, where the operators
 *                       allow and the weights are smaller than one image's
 *                       intermediate results; 1: wherever they allow; 0: never
 *   winograd, shifted_gemm   convolution algorithm switches (1 default)
 *   profile             0, 1 (per operator type) or 2 (per node): timings on
 *                       stderr when the predictor is freed
 *   memory_budget       most bytes a predictor holds besides the parameters
 *                       (activations, prepared weights, scratch), e.g. "512M"; 0: the machine's physical memory or the
 *                       process's address-space limit, whichever is lower
 * An unknown name or a bad value fails the call with a message naming it.
 */
#ifndef MXLITE_MXLITE_H_
#define MXLITE_MXLITE_H_

#include "c_predict_api.h"

#ifdef __cplusplus
extern "C" {
#endif  /* __cplusplus */

/*
 * MXPredCreatePartialOut (num_output_nodes 0: the symbol's outputs) and
 * MXPredCreateMultiThread (num_handles handles written to out[0..n-1],
 * sharing the weights; 1 for a single predictor) with runtime options:
 * option_names[i] is set to option_values[i], in order, over the
 * environment's settings. With several handles and no thread count given,
 * each handle runs single-threaded.
 */
MXNET_DLL int MXLitePredCreateWithOptions(
    const char* symbol_json_str, const void* param_bytes, int param_size, int dev_type,
    int dev_id, mx_uint num_input_nodes, const char** input_keys,
    const mx_uint* input_shape_indptr, const mx_uint* input_shape_data,
    mx_uint num_output_nodes, const char** output_keys, mx_uint num_options,
    const char** option_names, const char** option_values, int num_handles,
    PredictorHandle* out);

#ifdef __cplusplus
}
#endif  /* __cplusplus */

#endif /* MXLITE_MXLITE_H_ */
