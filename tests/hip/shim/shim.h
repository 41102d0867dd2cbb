/*
 * kiln's HIP-on-CUDA test shim: a libamdhip64 stand-in, never installed,
 * that implements on the CUDA driver API exactly the HIP runtime entry
 * points kiln's HIP backend uses (backends/hip/symbols.h), with HIP's
 * semantics and HIP's error codes. Pointed at with KILN_HIP_LIBRARY, it
 * runs the HIP backend, and the conformance suite through it, on an NVIDIA
 * GPU; the kernels are then the .hip sources compiled by nvcc.
 *
 * It opens libcuda.so.1 itself (no driver at build time, and no driver at
 * run time means hipErrorNoDevice, as libamdhip64 says without a GPU) and
 * resolves each entry point with cuGetProcAddress at the ABI version of the
 * cudaTypedefs.h type it is called through.
 *
 * shim.c: loading, errors, devices and the per-thread current device.
 * shim_ops.c: memory, transfers, modules and their globals, limits,
 * launches, streams and events. shim_pool.c: memory pools and
 * stream-ordered allocation. shim_graph.c: stream capture and graphs.
 * shim_rtc.c (shim_rtc.h): HIPRTC, which ROCm 5's libamdhip64 carries too,
 * on NVRTC.
 */
#ifndef KILN_TESTS_HIP_SHIM_H
#define KILN_TESTS_HIP_SHIM_H

#include <cuda.h>
#include <cudaTypedefs.h>

#define KILN_HIP_API_ONLY
#include "backends/hip/hip.h"

#define SHIM_EXPORT __attribute__((visibility("default")))

/* Every HIP entry point the backend resolves, with its exact prototype, so
 * a definition that drifts from symbols.h does not compile. */
#define SHIM_DECLARE(ret, name, params) SHIM_EXPORT ret name params;
KILN_HIP_SYMBOLS(SHIM_DECLARE)
KILN_HIP_OPTIONAL_SYMBOLS(SHIM_DECLARE)
#undef SHIM_DECLARE

/* The CUDA driver entry points used, X(name, version): called through
 * PFN_<name>_v<version>, resolved at that version. */
#define SHIM_CUDA_SYMBOLS(X)            \
  X(cuGetErrorName, 6000)               \
  X(cuGetErrorString, 6000)             \
  X(cuInit, 2000)                       \
  X(cuDriverGetVersion, 2020)           \
  X(cuDeviceGet, 2000)                  \
  X(cuDeviceGetCount, 2000)             \
  X(cuDeviceGetName, 2000)              \
  X(cuDeviceGetUuid, 11040)             \
  X(cuDeviceTotalMem, 3020)             \
  X(cuDeviceGetAttribute, 2000)         \
  X(cuDevicePrimaryCtxRetain, 7000)     \
  X(cuDeviceGetPCIBusId, 4010)          \
  X(cuDeviceCanAccessPeer, 4000)        \
  X(cuCtxEnablePeerAccess, 4000)        \
  X(cuCtxGetCurrent, 4000)              \
  X(cuCtxSetCurrent, 4000)              \
  X(cuCtxSynchronize, 2000)             \
  X(cuCtxSetLimit, 3010)                \
  X(cuCtxGetLimit, 3010)                \
  X(cuMemAlloc, 3020)                   \
  X(cuMemFree, 3020)                    \
  X(cuMemGetAddressRange, 3020)         \
  X(cuMemHostAlloc, 2020)               \
  X(cuMemHostGetDevicePointer, 3020)    \
  X(cuMemFreeHost, 2000)                \
  X(cuMemcpyAsync, 4000)                \
  X(cuMemcpyHtoDAsync, 3020)            \
  X(cuMemcpyDtoHAsync, 3020)            \
  X(cuMemcpyDtoDAsync, 3020)            \
  X(cuMemcpyPeerAsync, 4000)            \
  X(cuMemsetD8Async, 3020)              \
  X(cuMemsetD16Async, 3020)             \
  X(cuMemsetD32Async, 3020)             \
  X(cuModuleLoadData, 2000)             \
  X(cuModuleUnload, 2000)               \
  X(cuModuleGetFunction, 2000)          \
  X(cuModuleGetGlobal, 3020)            \
  X(cuFuncSetAttribute, 9000)           \
  X(cuFuncGetAttribute, 2020)           \
  X(cuOccupancyMaxPotentialBlockSize, 6050) \
  X(cuLaunchKernel, 4000)               \
  X(cuStreamCreate, 2000)               \
  X(cuStreamDestroy, 4000)              \
  X(cuStreamGetCtx, 9020)               \
  X(cuStreamSynchronize, 2000)          \
  X(cuStreamQuery, 2000)                \
  X(cuStreamWaitEvent, 3020)            \
  X(cuStreamWaitValue32, 11070)         \
  X(cuEventCreate, 2000)                \
  X(cuEventDestroy, 4000)               \
  X(cuEventRecord, 2000)                \
  X(cuEventQuery, 2000)                 \
  X(cuEventSynchronize, 2000)           \
  X(cuEventElapsedTime, 2000)           \
  X(cuEventRecordWithFlags, 11010)      \
  X(cuStreamBeginCapture, 10010)        \
  X(cuStreamEndCapture, 10000)          \
  X(cuStreamGetCaptureInfo, 11030)      \
  X(cuGraphInstantiateWithFlags, 11040) \
  X(cuGraphLaunch, 10000)               \
  X(cuGraphKernelNodeGetParams, 12000)  \
  X(cuCtxGetStreamPriorityRange, 5050)  \
  X(cuStreamCreateWithPriority, 5050)   \
  X(cuGraphExecKernelNodeSetParams, 12000) \
  X(cuGraphExecDestroy, 10000)             \
  X(cuGraphDestroy, 10000)                 \
  X(cuMemPoolCreate, 11020)                \
  X(cuMemPoolDestroy, 11020)               \
  X(cuMemAllocFromPoolAsync, 11020)        \
  X(cuMemFreeAsync, 11020)                 \
  X(cuMemPoolTrimTo, 11020)                \
  X(cuMemPoolSetAttribute, 11020)          \
  X(cuMemPoolGetAttribute, 11020)          \
  X(cuFuncLoad, 12040)

/* cuda.h #defines some names to versioned ones (cuMemAlloc to
 * cuMemAlloc_v2). The type is pasted from the name as written (## stops
 * the macro), while the field name goes through the same macros as the
 * calls do, so shim_cu.cuMemAlloc names the right field either way. */
typedef struct shim_cuda {
#define SHIM_X(name, version) PFN_##name##_v##version name;
  SHIM_CUDA_SYMBOLS(SHIM_X)
#undef SHIM_X
} shim_cuda;

/* Resolved by shim_ready(); read-only afterwards. */
extern shim_cuda shim_cu;

/* Loads the driver and counts devices once per process; the status every
 * entry point returns when that failed. */
hipError_t shim_ready(void);

/* The thread's current HIP device's CUDA context, made current, as every
 * entry point that touches the device needs (hipSetDevice's device, 0 until
 * the thread sets one). */
hipError_t shim_enter(void);
/* Device `device`'s CUDA context (retained on first use, not made
 * current), for calls that name a device other than the current one. */
hipError_t shim_device_context(int device, CUcontext *out);
/* The CUdevice of HIP device `device`, for calls that name a device by
 * ordinal in a struct (a pool's location). */
hipError_t shim_device(int device, CUdevice *out);
/* The context of `stream`'s device made current: HIP runs work on the
 * stream's device whatever the thread's current device is. The null
 * stream means the current device's. */
hipError_t shim_enter_stream(hipStream_t stream);

/* The HIP error for a CUDA result of `call`; the CUDA name and text are
 * kept for hipGetErrorString on this thread. */
hipError_t shim_error(CUresult result, const char *call);

/* Converts between HIP's handles and CUDA's, which the shim hands out as
 * HIP's (both are pointers to opaque structs). */
#define SHIM_HANDLE(type, value) ((type)(void *)(value))

#endif /* KILN_TESTS_HIP_SHIM_H */
