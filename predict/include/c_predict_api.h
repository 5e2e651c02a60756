/*
 * mxlite: the C predict API.
 *
 * Function for function and type for type this is the interface of Apache
 * MXNet 1.9.1's c_predict_api.h, so that a program written against MXNet's
 * predictor runs on mxlite by relinking. Every function returns 0 on success
 * and -1 on failure; after a failure MXGetLastError() gives a message that
 * names the file, node, input or parameter at fault. No function aborts the
 * host process.
 *
 * Where mxlite deliberately differs from MXNet 1.9.1 (all differences turn an
 * MXNet crash or silent garbage into a defined result):
 *   - MXPredGetOutputType writes *out_dtype (MXNet wrote out_dtype[index]).
 *   - A parameter that the computation reads but the params file lacks is an
 *     error naming it; MXNet ran with uninitialised memory. Labels such as
 *     softmax_label, which inference never reads, need no value.
 *   - Params saved without the "arg:"/"aux:" prefixes (Gluon's
 *     save_parameters) are accepted; MXNet silently ignored them.
 *   - MXPredCreateMultiThread needs no MXNET_ENGINE_TYPE setting, binds each
 *     handle at once, and gives each handle its own input buffers (weights
 *     are shared, read-only).
 *   - MXNDListCreate converts every element type to float32; MXNet handed out
 *     the raw bytes reinterpreted as floats.
 *
 * Unlike MXNet's header, this one includes what it uses (<stdint.h>,
 * <stdbool.h>), so it compiles on its own from C and C++.
 */
#ifndef MXLITE_C_PREDICT_API_H_
#define MXLITE_C_PREDICT_API_H_

#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif  /* !__cplusplus */

#ifndef MXNET_DLL
#ifdef _WIN32
#ifdef MXNET_EXPORTS
#define MXNET_DLL __declspec(dllexport)
#else
#define MXNET_DLL __declspec(dllimport)
#endif  /* MXNET_EXPORTS */
#elif defined(__GNUC__)
#define MXNET_DLL __attribute__((visibility("default")))
#else
#define MXNET_DLL
#endif  /* _WIN32 */
#endif  /* MXNET_DLL */

#ifdef __cplusplus
extern "C" {
#endif  /* __cplusplus */

/*! \brief unsigned integer type used for counts and shapes */
typedef uint32_t mx_uint;
/*! \brief element type of inputs and outputs */
typedef float mx_float;
/*! \brief handle to a predictor */
typedef void *PredictorHandle;
/*! \brief handle to a list of NDArrays read from a file */
typedef void *NDListHandle;
/*! \brief handle to one NDArray, as passed to a monitor callback */
typedef void *NDArrayHandle;
/*! \brief called with (output name, array, user data) after each operator */
typedef void (*PredMonitorCallback)(const char *, NDArrayHandle, void *);

/*! \brief message of the last failure on the calling thread; valid until the
 *  next failing call on that thread. */
MXNET_DLL const char *MXGetLastError(void);

/*!
 * \brief Create a predictor.
 * \param symbol_json_str the symbol JSON text (NUL-terminated)
 * \param param_bytes the bytes of a .params file (MXNet's NDArray list format)
 * \param param_size number of bytes in param_bytes
 * \param dev_type device type: 1 cpu, 2 gpu (mxlite runs on the cpu)
 * \param dev_id device id
 * \param num_input_nodes number of inputs whose shapes are given
 * \param input_keys names of those inputs
 * \param input_shape_indptr num_input_nodes+1 offsets into input_shape_data
 * \param input_shape_data the concatenated input shapes
 * \param out the new predictor
 */
MXNET_DLL int MXPredCreate(const char *symbol_json_str, const void *param_bytes,
                           int param_size, int dev_type, int dev_id,
                           mx_uint num_input_nodes, const char **input_keys,
                           const mx_uint *input_shape_indptr,
                           const mx_uint *input_shape_data,
                           PredictorHandle *out);

/*! \brief MXPredCreate plus the element types of some arguments (mshadow type
 *  flags: 0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, ...). A type
 *  given here applies to arguments that the params file does not type. */
MXNET_DLL int MXPredCreateEx(const char *symbol_json_str, const void *param_bytes,
                             int param_size, int dev_type, int dev_id,
                             const mx_uint num_input_nodes, const char **input_keys,
                             const mx_uint *input_shape_indptr,
                             const mx_uint *input_shape_data,
                             const mx_uint num_provided_arg_dtypes,
                             const char **provided_arg_dtype_names,
                             const int *provided_arg_dtypes, PredictorHandle *out);

/*! \brief MXPredCreate whose outputs are the internal outputs named by
 *  output_keys; key k selects the output "k_output" (a node name). A key
 *  that no output or several outputs (nodes sharing a name) answer to is an
 *  error; MXNet took the first of several. */
MXNET_DLL int MXPredCreatePartialOut(const char *symbol_json_str,
                                     const void *param_bytes, int param_size,
                                     int dev_type, int dev_id,
                                     mx_uint num_input_nodes, const char **input_keys,
                                     const mx_uint *input_shape_indptr,
                                     const mx_uint *input_shape_data,
                                     mx_uint num_output_nodes, const char **output_keys,
                                     PredictorHandle *out);

/*! \brief Create num_threads predictors that share the weights, one per
 *  thread; out must have room for num_threads handles. */
MXNET_DLL int MXPredCreateMultiThread(const char *symbol_json_str,
                                      const void *param_bytes, int param_size,
                                      int dev_type, int dev_id,
                                      mx_uint num_input_nodes, const char **input_keys,
                                      const mx_uint *input_shape_indptr,
                                      const mx_uint *input_shape_data,
                                      int num_threads, PredictorHandle *out);

/*! \brief Make a new predictor for new input shapes. The old handle stays
 *  valid and must still be freed; the two share the weights and, when the
 *  new shapes need no more of it, the memory for intermediate results, as
 *  in MXNet: run them one at a time, not concurrently. */
MXNET_DLL int MXPredReshape(mx_uint num_input_nodes, const char **input_keys,
                            const mx_uint *input_shape_indptr,
                            const mx_uint *input_shape_data, PredictorHandle handle,
                            PredictorHandle *out);

/*! \brief Shape of output `index`; *shape_data stays valid until the next
 *  call on this handle. */
MXNET_DLL int MXPredGetOutputShape(PredictorHandle handle, mx_uint index,
                                   mx_uint **shape_data, mx_uint *shape_ndim);

/*! \brief Element type (mshadow type flag) of output `out_index`, written to
 *  *out_dtype. */
MXNET_DLL int MXPredGetOutputType(PredictorHandle handle, mx_uint out_index,
                                  int *out_dtype);

/*! \brief Copy `size` elements into the argument `key` (usually an input).
 *  The bytes are read in the argument's element type; size must equal the
 *  argument's element count. */
MXNET_DLL int MXPredSetInput(PredictorHandle handle, const char *key,
                             const mx_float *data, mx_uint size);

/*! \brief Run the whole forward pass. */
MXNET_DLL int MXPredForward(PredictorHandle handle);

/*! \brief Run forward step `step` (one graph node, variables included);
 *  *step_left receives how many steps remain after it. */
MXNET_DLL int MXPredPartialForward(PredictorHandle handle, int step, int *step_left);

/*! \brief Copy output `index` (`size` elements, in the output's element
 *  type) into data. */
MXNET_DLL int MXPredGetOutput(PredictorHandle handle, mx_uint index, mx_float *data,
                              mx_uint size);

/*! \brief Free a predictor. */
MXNET_DLL int MXPredFree(PredictorHandle handle);

/*! \brief Read an NDArray list file from memory. */
MXNET_DLL int MXNDListCreate(const char *nd_file_bytes, int nd_file_size,
                             NDListHandle *out, mx_uint *out_length);

/*! \brief Entry `index` of a list: its key ("" if the file has no names), its
 *  data converted to float32, and its shape. */
MXNET_DLL int MXNDListGet(NDListHandle handle, mx_uint index, const char **out_key,
                          const mx_float **out_data, const mx_uint **out_shape,
                          mx_uint *out_ndim);

/*! \brief Call callback after every operator of the forward pass with each of
 *  its outputs (named "<node>_<output>"), and with its inputs too when
 *  monitor_all is true. */
MXNET_DLL int MXPredSetMonitorCallback(PredictorHandle handle,
                                       PredMonitorCallback callback,
                                       void *callback_handle, bool monitor_all);

/*! \brief Free a list. */
MXNET_DLL int MXNDListFree(NDListHandle handle);

#ifdef __cplusplus
}  /* extern "C" */
#endif  /* __cplusplus */

#endif  /* MXLITE_C_PREDICT_API_H_ */
