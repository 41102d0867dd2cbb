/*
 * The CUDA driver entry points the backend uses, as X(name, version).
 *
 * `version` names the ABI kiln calls: the table entry has cudaTypedefs.h's
 * PFN_<name>_v<version> type and loader.c resolves it with
 * cuGetProcAddress("<name>", &fn, version, ...). The driver then hands back
 * the variant with exactly that signature even where it has since renamed
 * or re-versioned the function (cuMemAlloc -> cuMemAlloc_v2,
 * cuCtxSynchronize -> cuCtxSynchronize_v2 with a context argument in 13.0),
 * and a driver older than `version` reports the entry point missing instead
 * of returning an incompatible one.
 *
 * cuda.h #defines many of these names to their versioned spelling
 * (cuMemAlloc -> cuMemAlloc_v2). The table's field names go through the
 * same macros as the calls do, so kiln_cuda_api.cuMemAlloc(...) always
 * names the right field; only the PFN type and the string passed to the
 * driver use the base name as written here.
 */
#ifndef KILN_CUDA_SYMBOLS_H
#define KILN_CUDA_SYMBOLS_H

/* Every one of these must resolve, or the backend is unavailable. */
#define KILN_CUDA_SYMBOLS(X)           \
  X(cuGetErrorName, 6000)              \
  X(cuGetErrorString, 6000)            \
  X(cuInit, 2000)                      \
  X(cuDriverGetVersion, 2020)          \
  X(cuDeviceGet, 2000)                 \
  X(cuDeviceGetCount, 2000)            \
  X(cuDeviceGetName, 2000)             \
  X(cuDeviceGetUuid, 11040)            \
  X(cuDeviceTotalMem, 3020)            \
  X(cuDeviceGetAttribute, 2000)        \
  X(cuDevicePrimaryCtxRetain, 7000)    \
  X(cuDevicePrimaryCtxRelease, 11000)  \
  X(cuDevicePrimaryCtxGetState, 7000)  \
  X(cuCtxGetCurrent, 4000)             \
  X(cuCtxSetCurrent, 4000)             \
  X(cuCtxSynchronize, 2000)            \
  X(cuCtxGetDevice, 2000)              \
  X(cuCtxSetLimit, 3010)               \
  X(cuDeviceCanAccessPeer, 4000)       \
  X(cuCtxEnablePeerAccess, 4000)       \
  X(cuCtxGetLimit, 3010)               \
  X(cuMemAlloc, 3020)                  \
  X(cuMemFree, 3020)                   \
  X(cuMemHostAlloc, 2020)              \
  X(cuMemFreeHost, 2000)               \
  X(cuPointerGetAttributes, 7000)      \
  X(cuMemcpyHtoDAsync, 3020)           \
  X(cuMemcpyDtoHAsync, 3020)           \
  X(cuMemcpyDtoDAsync, 3020)           \
  X(cuMemcpyPeerAsync, 4000)           \
  X(cuMemsetD8Async, 3020)             \
  X(cuMemsetD16Async, 3020)            \
  X(cuMemsetD32Async, 3020)            \
  X(cuModuleLoadDataEx, 2010)          \
  X(cuModuleUnload, 2000)              \
  X(cuModuleGetFunction, 2000)         \
  X(cuModuleGetGlobal, 3020)           \
  X(cuFuncGetAttribute, 2020)          \
  X(cuOccupancyMaxPotentialBlockSize, 6050) \
  X(cuFuncSetAttribute, 9000)          \
  X(cuLaunchKernel, 4000)              \
  X(cuStreamCreate, 2000)              \
  X(cuStreamDestroy, 4000)             \
  X(cuStreamSynchronize, 2000)         \
  X(cuStreamQuery, 2000)               \
  X(cuStreamWaitEvent, 3020)           \
  X(cuStreamGetCtx, 9020)              \
  X(cuEventCreate, 2000)               \
  X(cuEventDestroy, 4000)              \
  X(cuEventRecord, 2000)               \
  X(cuEventQuery, 2000)                \
  X(cuEventSynchronize, 2000)          \
  X(cuCtxGetStreamPriorityRange, 5050) \
  X(cuStreamCreateWithPriority, 5050)  \
  X(cuEventElapsedTime, 2000)

/* Used when the driver implements at least the CUDA version given, left
 * NULL otherwise. The first three let module.c find which of a module's
 * CUmodules has a kernel without asking each one for it:
 * cuModuleGetFunction's CUDA_ERROR_NOT_FOUND from the ones that lack it
 * would show up as an API error in every user's compute-sanitizer report.
 * The last two give a kernel's parameters: cuFuncGetParamInfo alone would
 * have to be asked past the last one to find the count, an error of the
 * same kind, so it is used only with cuFuncGetParamCount (CUDA 13.2). The
 * graph entry points (graph.c) need a CUDA 12.0 driver; with an older one
 * a graph's build answers KILN_ERROR_UNSUPPORTED and all else runs.
 * cuLaunchKernelEx launches the built-in kernels that overlap their start
 * with the previous kernel's end (launch.c); without it they launch as any
 * other. KILN_DEBUG=reorder's gates (reorder.c) need cuStreamWaitValue32
 * and cuMemHostGetDevicePointer; without them a context in that mode is
 * refused in words. Stream-ordered allocation (pool.c) needs the memory
 * pool entry points of CUDA 11.2; without any of them
 * kiln_cuda_pool_supported says so and the core keeps a pool of its own.
 * cuFuncLoad (CUDA 12.4) loads a kernel when kiln hands it out (module.c
 * says why); an older driver loads it at its first launch.
 * cuTensorMapEncodeTiled (CUDA 12.0) makes the tensor maps through which
 * kiln_hgemm_f16_wgmma reads A and B (launch.c); without it that kernel is
 * refused and kiln_hgemm_f16 takes the next. */
#define KILN_CUDA_OPTIONAL_SYMBOLS(X)   \
  X(cuFuncGetName, 12030)               \
  X(cuModuleGetFunctionCount, 12040)    \
  X(cuModuleEnumerateFunctions, 12040)  \
  X(cuFuncGetParamInfo, 12040)          \
  X(cuFuncGetParamCount, 13020)         \
  X(cuLaunchKernelEx, 11060)            \
  X(cuStreamWaitValue32, 11070)         \
  X(cuMemHostGetDevicePointer, 3020)    \
  X(cuFuncLoad, 12040)                  \
  X(cuTensorMapEncodeTiled, 12000)      \
  KILN_CUDA_GRAPH_SYMBOLS(X)            \
  KILN_CUDA_POOL_SYMBOLS(X)

#define KILN_CUDA_GRAPH_SYMBOLS(X)          \
  X(cuEventRecordWithFlags, 11010)         \
  X(cuStreamBeginCapture, 10010)           \
  X(cuStreamEndCapture, 10000)             \
  X(cuStreamGetCaptureInfo, 11030)         \
  X(cuGraphInstantiateWithFlags, 11040)    \
  X(cuGraphLaunch, 10000)                  \
  X(cuGraphKernelNodeGetParams, 12000)     \
  X(cuGraphExecKernelNodeSetParams, 12000) \
  X(cuGraphExecDestroy, 10000)             \
  X(cuGraphDestroy, 10000)

#define KILN_CUDA_POOL_SYMBOLS(X)   \
  X(cuMemPoolCreate, 11020)         \
  X(cuMemPoolDestroy, 11020)        \
  X(cuMemAllocFromPoolAsync, 11020) \
  X(cuMemFreeAsync, 11020)          \
  X(cuMemPoolTrimTo, 11020)         \
  X(cuMemPoolSetAttribute, 11020)   \
  X(cuMemPoolGetAttribute, 11020)

#endif /* KILN_CUDA_SYMBOLS_H */
