/* The shim's graphs: HIP's stream capture, instantiation, replay and kernel
 * node parameters as the CUDA driver calls that do the same. Graphs, their
 * nodes and executable forms are CUDA's handles handed out as HIP's. */
#include <stdint.h>
#include <string.h>

#include "tests/hip/shim/shim.h"

hipError_t hipEventRecordWithFlags(hipEvent_t event, hipStream_t stream,
                                   unsigned int flags) {
  if (!event || (flags & ~(unsigned)hipEventRecordExternal))
    return hipErrorInvalidValue;
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(
      shim_cu.cuEventRecordWithFlags(
          SHIM_HANDLE(CUevent, event), SHIM_HANDLE(CUstream, stream),
          flags ? CU_EVENT_RECORD_EXTERNAL : CU_EVENT_RECORD_DEFAULT),
      "cuEventRecordWithFlags");
}

hipError_t hipStreamBeginCapture(hipStream_t stream,
                                 hipStreamCaptureMode mode) {
  if (mode != hipStreamCaptureModeRelaxed) return hipErrorInvalidValue;
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(
      shim_cu.cuStreamBeginCapture(SHIM_HANDLE(CUstream, stream),
                                   CU_STREAM_CAPTURE_MODE_RELAXED),
      "cuStreamBeginCapture");
}

hipError_t hipStreamEndCapture(hipStream_t stream, hipGraph_t *graph) {
  if (!graph) return hipErrorInvalidValue;
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  CUgraph g = NULL;
  err =
      shim_error(shim_cu.cuStreamEndCapture(SHIM_HANDLE(CUstream, stream), &g),
                 "cuStreamEndCapture");
  if (err == hipSuccess) *graph = SHIM_HANDLE(hipGraph_t, g);
  return err;
}

hipError_t hipStreamGetCaptureInfo_v2(hipStream_t stream,
                                      hipStreamCaptureStatus *status,
                                      unsigned long long *id, hipGraph_t *graph,
                                      const hipGraphNode_t **dependencies,
                                      size_t *count) {
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  CUstreamCaptureStatus cs;
  cuuint64_t cid = 0;
  CUgraph g = NULL;
  const CUgraphNode *deps = NULL;
  size_t n = 0;
  err = shim_error(shim_cu.cuStreamGetCaptureInfo(SHIM_HANDLE(CUstream, stream),
                                                  &cs, &cid, &g, &deps, &n),
                   "cuStreamGetCaptureInfo");
  if (err != hipSuccess) return err;
  /* The values of the two enumerations are the same. */
  if (status) *status = (hipStreamCaptureStatus)cs;
  if (id) *id = cid;
  if (graph) *graph = SHIM_HANDLE(hipGraph_t, g);
  if (dependencies) *dependencies = (const hipGraphNode_t *)(const void *)deps;
  if (count) *count = n;
  return hipSuccess;
}

hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *exec, hipGraph_t graph,
                                        unsigned long long flags) {
  if (!exec || !graph || flags) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUgraphExec e = NULL;
  err = shim_error(
      shim_cu.cuGraphInstantiateWithFlags(&e, SHIM_HANDLE(CUgraph, graph), 0),
      "cuGraphInstantiateWithFlags");
  if (err == hipSuccess) *exec = SHIM_HANDLE(hipGraphExec_t, e);
  return err;
}

hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
  if (!exec) return hipErrorInvalidValue;
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuGraphLaunch(SHIM_HANDLE(CUgraphExec, exec),
                                          SHIM_HANDLE(CUstream, stream)),
                    "cuGraphLaunch");
}

hipError_t hipGraphKernelNodeGetParams(hipGraphNode_t node,
                                       hipKernelNodeParams *params) {
  if (!node || !params) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUDA_KERNEL_NODE_PARAMS_v2 p;
  err = shim_error(
      shim_cu.cuGraphKernelNodeGetParams(SHIM_HANDLE(CUgraphNode, node), &p),
      "cuGraphKernelNodeGetParams");
  if (err != hipSuccess) return err;
  params->blockDim = (dim3){p.blockDimX, p.blockDimY, p.blockDimZ};
  params->gridDim = (dim3){p.gridDimX, p.gridDimY, p.gridDimZ};
  params->extra = p.extra;
  params->func = (void *)p.func;
  params->kernelParams = p.kernelParams;
  params->sharedMemBytes = p.sharedMemBytes;
  return hipSuccess;
}

hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t exec,
                                           hipGraphNode_t node,
                                           const hipKernelNodeParams *params) {
  if (!exec || !node || !params) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUDA_KERNEL_NODE_PARAMS_v2 p;
  memset(&p, 0, sizeof p);
  p.func = (CUfunction)params->func;
  p.gridDimX = params->gridDim.x;
  p.gridDimY = params->gridDim.y;
  p.gridDimZ = params->gridDim.z;
  p.blockDimX = params->blockDim.x;
  p.blockDimY = params->blockDim.y;
  p.blockDimZ = params->blockDim.z;
  p.sharedMemBytes = params->sharedMemBytes;
  p.kernelParams = params->kernelParams;
  p.extra = params->extra;
  return shim_error(
      shim_cu.cuGraphExecKernelNodeSetParams(
          SHIM_HANDLE(CUgraphExec, exec), SHIM_HANDLE(CUgraphNode, node), &p),
      "cuGraphExecKernelNodeSetParams");
}

hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
  if (!exec) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuGraphExecDestroy(SHIM_HANDLE(CUgraphExec, exec)),
                    "cuGraphExecDestroy");
}

hipError_t hipGraphDestroy(hipGraph_t graph) {
  if (!graph) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuGraphDestroy(SHIM_HANDLE(CUgraph, graph)),
                    "cuGraphDestroy");
}
