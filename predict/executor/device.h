/*
 * Devices other than the CPU: the interface between an executor and the
 * code that runs its nodes elsewhere (today: CUDA GPUs, predict/cuda/).
 *
 * An executor bound for a GPU is first bound exactly as for the CPU: shapes,
 * dtypes and the memory plan are the same, and the host arena stays as the
 * staging area of nodes that have no GPU kernel. The device runner then
 * mirrors that plan in one device arena (same offsets, so in-place and
 * co-shared buffers behave identically), uploads the parameters once per
 * model, and runs each node with a GPU kernel; a node without one runs on
 * the host between explicit copies of its inputs and outputs. Graph outputs
 * are copied back to the host entries after each pass, so everything after
 * Forward (GetOutput, TakeOutputs) is unchanged.
 *
 * A build without CUDA (MXLITE_NO_CUDA, the default for a plain C++
 * compiler) keeps the interface and refuses every device with a clear error.
 */
#ifndef MXLITE_EXECUTOR_DEVICE_H_
#define MXLITE_EXECUTOR_DEVICE_H_

#include <memory>
#include <string>
#include <vector>

#include "../base/status.h"

namespace mxlite {

class Executor;

class DeviceRunner {
 public:
  virtual ~DeviceRunner() = default;
  // Whether the device runs node `n` itself (false: host fallback, or a
  // variable). Nodes it runs need no host Prepare.
  virtual bool RunsNode(int n) const = 0;
  // One whole pass: inputs from the host entries, outputs back to them.
  virtual Status Forward() = 0;
  // MXPredPartialForward's step `n` (inputs uploaded at step 0; the node's
  // outputs copied back to the host after it).
  virtual Status RunStep(int n) = 0;
  // "GPU 0 (NVIDIA H100): 52 of 54 nodes on the GPU; on the host: ...".
  virtual std::string Describe() const = 0;
};

// Checks that CUDA device `device_id` exists and can be used; the error
// names the device and CUDA's own reason ("CUDA driver version is
// insufficient for CUDA runtime version" on a machine without a GPU), or
// that this build has no CUDA.
Status CheckCudaDevice(int device_id);
// The CUDA devices this process can use: -1 when this build has no CUDA
// backend, 0 when it has one but CUDA finds no device (no driver, none
// visible).
int CudaDeviceCount();
// Makes the runner for a bound `executor` on CUDA device `device_id`.
Status CreateCudaRunner(Executor* executor, int device_id, std::unique_ptr<DeviceRunner>* out);

}  // namespace mxlite

#endif  // MXLITE_EXECUTOR_DEVICE_H_
