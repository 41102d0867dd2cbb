/*
 * The part of the HIP runtime API that kiln uses, as X-macro lists: the
 * entry points loader.c resolves, and the values of the enumerations and
 * flags hip.h declares.
 *
 * kiln declares these itself instead of including ROCm's headers, so the
 * backend builds on any machine (ROCm's headers are seldom installed where
 * kiln is built, e.g. next to the CUDA toolkit) and every build runs against
 * whichever libamdhip64 the machine has. The values are ABI, fixed since
 * libamdhip64.so.5 (ROCm 5.0); tests/hip/api_check.c compiles these lists
 * against ROCm's own headers wherever they are installed and fails on any
 * difference in a value or a prototype.
 *
 * Entry points are X(return type, name, (parameters)), using only HIP's own
 * type names so that the same text means the same thing under ROCm's headers.
 * Values are X(name, value).
 */
#ifndef KILN_HIP_SYMBOLS_H
#define KILN_HIP_SYMBOLS_H

/* Every one of these must resolve, or the backend is unavailable. */
#define KILN_HIP_SYMBOLS(X)                                                   \
  X(const char *, hipGetErrorName, (hipError_t hip_error))                    \
  X(const char *, hipGetErrorString, (hipError_t hip_error))                  \
  X(hipError_t, hipInit, (unsigned int flags))                                \
  X(hipError_t, hipRuntimeGetVersion, (int *runtime_version))                 \
  X(hipError_t, hipDriverGetVersion, (int *driver_version))                   \
  X(hipError_t, hipGetDeviceCount, (int *count))                              \
  X(hipError_t, hipGetDevice, (int *device_id))                               \
  X(hipError_t, hipSetDevice, (int device_id))                                \
  X(hipError_t, hipDeviceGetStreamPriorityRange,                              \
    (int *least_priority, int *greatest_priority))                            \
  X(hipError_t, hipDeviceGet, (hipDevice_t *device, int ordinal))             \
  X(hipError_t, hipDeviceGetName, (char *name, int len, hipDevice_t device))  \
  X(hipError_t, hipDeviceTotalMem, (size_t *bytes, hipDevice_t device))       \
  X(hipError_t, hipDeviceGetAttribute,                                        \
    (int *value, hipDeviceAttribute_t attr, int device_id))                   \
  X(hipError_t, hipDeviceSynchronize, (void))                                 \
  X(hipError_t, hipDeviceGetPCIBusId, (char *pci_bus_id, int len, int device)) \
  X(hipError_t, hipDeviceCanAccessPeer,                                       \
    (int *can_access_peer, int device_id, int peer_device_id))                \
  X(hipError_t, hipDeviceEnablePeerAccess,                                    \
    (int peer_device_id, unsigned int flags))                                 \
  X(hipError_t, hipMalloc, (void **ptr, size_t size))                         \
  X(hipError_t, hipFree, (void *ptr))                                         \
  X(hipError_t, hipMemGetAddressRange,                                        \
    (hipDeviceptr_t *base, size_t *size, hipDeviceptr_t ptr))                 \
  X(hipError_t, hipHostMalloc, (void **ptr, size_t size, unsigned int flags)) \
  X(hipError_t, hipHostFree, (void *ptr))                                     \
  X(hipError_t, hipMemcpyAsync,                                               \
    (void *dst, const void *src, size_t size, hipMemcpyKind kind,             \
     hipStream_t stream))                                                     \
  X(hipError_t, hipMemcpyPeerAsync,                                           \
    (void *dst, int dst_device_id, const void *src, int src_device_id,        \
     size_t size, hipStream_t stream))                                        \
  X(hipError_t, hipMemsetD8Async,                                             \
    (hipDeviceptr_t dst, unsigned char value, size_t count,                   \
     hipStream_t stream))                                                     \
  X(hipError_t, hipMemsetD16Async,                                            \
    (hipDeviceptr_t dst, unsigned short value, size_t count,                  \
     hipStream_t stream))                                                     \
  X(hipError_t, hipMemsetD32Async,                                            \
    (hipDeviceptr_t dst, int value, size_t count, hipStream_t stream))        \
  X(hipError_t, hipModuleLoadData, (hipModule_t *module, const void *image))  \
  X(hipError_t, hipModuleUnload, (hipModule_t module))                        \
  X(hipError_t, hipModuleGetFunction,                                         \
    (hipFunction_t *function, hipModule_t module, const char *name))          \
  X(hipError_t, hipModuleLaunchKernel,                                        \
    (hipFunction_t f, unsigned int grid_x, unsigned int grid_y,               \
     unsigned int grid_z, unsigned int block_x, unsigned int block_y,         \
     unsigned int block_z, unsigned int shared_bytes, hipStream_t stream,     \
     void **kernel_params, void **extra))                                     \
  X(hipError_t, hipFuncSetAttribute,                                          \
    (const void *func, hipFuncAttribute attr, int value))                     \
  X(hipError_t, hipFuncGetAttribute,                                          \
    (int *value, hipFunction_attribute attrib, hipFunction_t hfunc))          \
  X(hipError_t, hipModuleOccupancyMaxPotentialBlockSize,                      \
    (int *gridSize, int *blockSize, hipFunction_t f,                          \
     size_t dynSharedMemPerBlk, int blockSizeLimit))                          \
  X(hipError_t, hipStreamCreateWithFlags,                                     \
    (hipStream_t *stream, unsigned int flags))                                \
  X(hipError_t, hipStreamCreateWithPriority,                                  \
    (hipStream_t *stream, unsigned int flags, int priority))                  \
  X(hipError_t, hipStreamDestroy, (hipStream_t stream))                       \
  X(hipError_t, hipStreamSynchronize, (hipStream_t stream))                   \
  X(hipError_t, hipStreamQuery, (hipStream_t stream))                         \
  X(hipError_t, hipStreamWaitEvent,                                           \
    (hipStream_t stream, hipEvent_t event, unsigned int flags))               \
  X(hipError_t, hipEventCreateWithFlags,                                      \
    (hipEvent_t *event, unsigned int flags))                                  \
  X(hipError_t, hipEventDestroy, (hipEvent_t event))                          \
  X(hipError_t, hipEventRecord, (hipEvent_t event, hipStream_t stream))       \
  X(hipError_t, hipEventSynchronize, (hipEvent_t event))                      \
  X(hipError_t, hipEventQuery, (hipEvent_t event))                            \
  X(hipError_t, hipEventElapsedTime,                                          \
    (float *ms, hipEvent_t start, hipEvent_t stop))

/*
 * Used when the runtime has them, left NULL otherwise. hipGetDeviceProperties
 * is the only source of the gfx architecture name; ROCm 6 still exports it
 * under this name with the ROCm 5 structure (the new layout is
 * hipGetDevicePropertiesR0600), and device.c reads only the name strings out
 * of it, by content rather than by offset, because that layout is not ABI
 * kiln wants to depend on. The limits (limit.c) and globals (module.c) are
 * optional so that a runtime without them still runs everything else, as
 * are KILN_DEBUG=reorder's gates (reorder.c), without which a context in
 * that mode is refused in words, and the memory pools of stream-ordered
 * allocation (pool.c), without which kiln_hip_pool_supported says so in
 * words and the core keeps a pool of its own.
 */
#define KILN_HIP_OPTIONAL_SYMBOLS(X) \
  KILN_HIP_OPTIONAL_SYMBOLS_ROCM5(X) \
  KILN_HIP_OPTIONAL_SYMBOLS_ROCM6(X)

/* Those that ROCm 5's headers declare. */
#define KILN_HIP_OPTIONAL_SYMBOLS_ROCM5(X)                             \
  X(hipError_t, hipDeviceGetUuid, (hipUUID *uuid, hipDevice_t device)) \
  X(hipError_t, hipGetDeviceProperties,                                \
    (hipDeviceProp_t *prop, int device_id))                            \
  X(hipError_t, hipDeviceGetLimit,                                     \
    (size_t *value, enum hipLimit_t limit))                            \
  X(hipError_t, hipModuleGetGlobal,                                    \
    (hipDeviceptr_t *address, size_t *size, hipModule_t module,        \
     const char *name))                                                \
  X(hipError_t, hipHostGetDevicePointer,                               \
    (void **device_ptr, void *host_ptr, unsigned int flags))           \
  X(hipError_t, hipStreamWaitValue32,                                  \
    (hipStream_t stream, void *ptr, uint32_t value, unsigned int flags, \
     uint32_t mask))                                                   \
  KILN_HIP_POOL_SYMBOLS(X)

#define KILN_HIP_POOL_SYMBOLS(X)                                          \
  X(hipError_t, hipMemPoolCreate,                                         \
    (hipMemPool_t *pool, const hipMemPoolProps *props))                   \
  X(hipError_t, hipMemPoolDestroy, (hipMemPool_t pool))                   \
  X(hipError_t, hipMallocFromPoolAsync,                                   \
    (void **ptr, size_t size, hipMemPool_t pool, hipStream_t stream))     \
  X(hipError_t, hipFreeAsync, (void *ptr, hipStream_t stream))            \
  X(hipError_t, hipMemPoolTrimTo, (hipMemPool_t pool, size_t keep_bytes)) \
  X(hipError_t, hipMemPoolSetAttribute,                                   \
    (hipMemPool_t pool, hipMemPoolAttr attr, void *value))                \
  X(hipError_t, hipMemPoolGetAttribute,                                   \
    (hipMemPool_t pool, hipMemPoolAttr attr, void *value))

/* Those that later releases added (ROCm 5.2 has no hipDeviceSetLimit,
 * ROCm 6 has); tests/hip/api_check.c checks them against ROCm 6's
 * headers. Graphs (graph.c) need all of the rest: an event record of a
 * capture that becomes a node of its own came with ROCm 6. */
#define KILN_HIP_OPTIONAL_SYMBOLS_ROCM6(X)                                    \
  X(hipError_t, hipDeviceSetLimit, (enum hipLimit_t limit, size_t value))    \
  KILN_HIP_GRAPH_SYMBOLS(X)

#define KILN_HIP_GRAPH_SYMBOLS(X)                                            \
  X(hipError_t, hipEventRecordWithFlags,                                     \
    (hipEvent_t event, hipStream_t stream, unsigned int flags))              \
  X(hipError_t, hipStreamBeginCapture,                                       \
    (hipStream_t stream, hipStreamCaptureMode mode))                         \
  X(hipError_t, hipStreamEndCapture, (hipStream_t stream, hipGraph_t *graph)) \
  X(hipError_t, hipStreamGetCaptureInfo_v2,                                  \
    (hipStream_t stream, hipStreamCaptureStatus *status,                     \
     unsigned long long *id, hipGraph_t *graph,                              \
     const hipGraphNode_t **dependencies, size_t *count))                    \
  X(hipError_t, hipGraphInstantiateWithFlags,                                \
    (hipGraphExec_t *exec, hipGraph_t graph, unsigned long long flags))      \
  X(hipError_t, hipGraphLaunch, (hipGraphExec_t exec, hipStream_t stream))   \
  X(hipError_t, hipGraphKernelNodeGetParams,                                 \
    (hipGraphNode_t node, hipKernelNodeParams *params))                      \
  X(hipError_t, hipGraphExecKernelNodeSetParams,                             \
    (hipGraphExec_t exec, hipGraphNode_t node,                               \
     const hipKernelNodeParams *params))                                     \
  X(hipError_t, hipGraphExecDestroy, (hipGraphExec_t exec))                  \
  X(hipError_t, hipGraphDestroy, (hipGraph_t graph))

/*
 * hipError_t: the codes error.c maps, as numbered since ROCm 5.0. Newer
 * runtimes added codes (ROCm 6 has a few above 900); those reach kiln as
 * KILN_ERROR_BACKEND with the runtime's own name for them.
 */
#define KILN_HIP_ERRORS(X)                     \
  X(hipSuccess, 0)                             \
  X(hipErrorInvalidValue, 1)                   \
  X(hipErrorOutOfMemory, 2)                    \
  X(hipErrorNotInitialized, 3)                 \
  X(hipErrorDeinitialized, 4)                  \
  X(hipErrorInvalidConfiguration, 9)           \
  X(hipErrorInvalidSymbol, 13)                 \
  X(hipErrorInvalidDevicePointer, 17)          \
  X(hipErrorInvalidMemcpyDirection, 21)        \
  X(hipErrorInsufficientDriver, 35)            \
  X(hipErrorMissingConfiguration, 52)          \
  X(hipErrorPriorLaunchFailure, 53)            \
  X(hipErrorInvalidDeviceFunction, 98)         \
  X(hipErrorNoDevice, 100)                     \
  X(hipErrorInvalidDevice, 101)                \
  X(hipErrorInvalidImage, 200)                 \
  X(hipErrorInvalidContext, 201)               \
  X(hipErrorNoBinaryForGpu, 209)               \
  X(hipErrorECCNotCorrectable, 214)            \
  X(hipErrorPeerAccessUnsupported, 217)        \
  X(hipErrorUnsupportedLimit, 215)             \
  X(hipErrorInvalidKernelFile, 218)            \
  X(hipErrorSharedObjectSymbolNotFound, 302)   \
  X(hipErrorSharedObjectInitFailed, 303)       \
  X(hipErrorOperatingSystem, 304)              \
  X(hipErrorInvalidHandle, 400)                \
  X(hipErrorNotFound, 500)                     \
  X(hipErrorNotReady, 600)                     \
  X(hipErrorIllegalAddress, 700)               \
  X(hipErrorLaunchOutOfResources, 701)         \
  X(hipErrorLaunchTimeOut, 702)                \
  X(hipErrorPeerAccessAlreadyEnabled, 704)     \
  X(hipErrorContextIsDestroyed, 709)           \
  X(hipErrorAssert, 710)                       \
  X(hipErrorLaunchFailure, 719)                \
  X(hipErrorCooperativeLaunchTooLarge, 720)    \
  X(hipErrorNotSupported, 801)                 \
  X(hipErrorUnknown, 999)                      \
  X(hipErrorRuntimeMemory, 1052)               \
  X(hipErrorRuntimeOther, 1053)

/*
 * hipDeviceAttribute_t: the attributes device.c queries. The trap: ROCm 5.0
 * renumbered the whole enumeration (CUDA-compatible ones from 0 in
 * alphabetical order, AMD-specific ones from 10000); these are the ROCm 5/6
 * numbers. ROCm 6 renamed a few it retired (hipDeviceAttributeName became
 * hipDeviceAttributeUnused1, ...) without moving the others, and appends new
 * ones at the end of each range, so the numbers below hold for both.
 */
#define KILN_HIP_DEVICE_ATTRIBUTES(X)             \
  X(hipDeviceAttributeIntegrated, 16)             \
  X(hipDeviceAttributeComputeCapabilityMajor, 23) \
  X(hipDeviceAttributeMaxBlockDimX, 26)           \
  X(hipDeviceAttributeMaxBlockDimY, 27)           \
  X(hipDeviceAttributeMaxBlockDimZ, 28)           \
  X(hipDeviceAttributeMaxGridDimX, 29)            \
  X(hipDeviceAttributeMaxGridDimY, 30)            \
  X(hipDeviceAttributeMaxGridDimZ, 31)            \
  X(hipDeviceAttributeMaxThreadsPerBlock, 56)     \
  X(hipDeviceAttributeComputeCapabilityMinor, 61) \
  X(hipDeviceAttributeMultiprocessorCount, 63)    \
  X(hipDeviceAttributeMaxSharedMemoryPerBlock, 74) \
  X(hipDeviceAttributeSharedMemPerBlockOptin, 75)  \
  X(hipDeviceAttributeWarpSize, 87)                \
  X(hipDeviceAttributeMemoryPoolsSupported, 88)

#define KILN_HIP_MEMCPY_KINDS(X)     \
  X(hipMemcpyHostToHost, 0)          \
  X(hipMemcpyHostToDevice, 1)        \
  X(hipMemcpyDeviceToHost, 2)        \
  X(hipMemcpyDeviceToDevice, 3)      \
  X(hipMemcpyDefault, 4)

#define KILN_HIP_FUNC_ATTRIBUTES(X) \
  X(hipFuncAttributeMaxDynamicSharedMemorySize, 8)

/* hipFunction_attribute, which hipFuncGetAttribute reads. */
#define KILN_HIP_FUNCTION_ATTRIBUTES(X)        \
  X(HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0) \
  X(HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 1)     \
  X(HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, 3)      \
  X(HIP_FUNC_ATTRIBUTE_NUM_REGS, 4)

/* hipLimit_t (an enum tag, not yet a typedef, in ROCm 5.2). ROCm 5.2 has
 * no stack limit, ROCm 6 has; a runtime without it answers
 * hipErrorUnsupportedLimit. api_check.c checks the second list against
 * ROCm 6's headers. */
#define KILN_HIP_LIMITS(X)        \
  X(hipLimitPrintfFifoSize, 0x01) \
  X(hipLimitMallocHeapSize, 0x02)
#define KILN_HIP_LIMITS_ROCM6(X) X(hipLimitStackSize, 0x00)

/* Flags, which HIP #defines. */
#define KILN_HIP_FLAGS(X)       \
  X(hipStreamNonBlocking, 0x1)  \
  X(hipEventDefault, 0x0)       \
  X(hipEventBlockingSync, 0x1)  \
  X(hipEventDisableTiming, 0x2) \
  X(hipHostMallocDefault, 0x0)  \
  X(hipHostMallocPortable, 0x1) \
  X(hipHostMallocMapped, 0x2)   \
  X(hipStreamWaitValueGte, 0x0)

/* Of hipStreamCaptureMode and hipStreamCaptureStatus, the values kiln
 * passes or compares. */
#define KILN_HIP_CAPTURE_MODES(X) X(hipStreamCaptureModeRelaxed, 2)
#define KILN_HIP_CAPTURE_STATUSES(X) X(hipStreamCaptureStatusActive, 1)

/* Of the memory pools' enumerations (pool.c), the values kiln passes:
 * ROCm 5's numbers, which ROCm 6 keeps. */
#define KILN_HIP_MEM_POOL_ATTRS(X)                   \
  X(hipMemPoolReuseAllowInternalDependencies, 0x3) \
  X(hipMemPoolAttrReleaseThreshold, 0x4)           \
  X(hipMemPoolAttrReservedMemCurrent, 0x5)         \
  X(hipMemPoolAttrUsedMemCurrent, 0x7)
#define KILN_HIP_MEM_LOCATION_TYPES(X) X(hipMemLocationTypeDevice, 1)
#define KILN_HIP_MEM_ALLOCATION_TYPES(X) X(hipMemAllocationTypePinned, 0x1)
#define KILN_HIP_MEM_HANDLE_TYPES(X) X(hipMemHandleTypeNone, 0x0)

/* Those of ROCm 6's graphs. */
#define KILN_HIP_FLAGS_ROCM6(X)   \
  X(hipEventRecordExternal, 0x1)  \
  X(hipEventWaitExternal, 0x1)

#endif /* KILN_HIP_SYMBOLS_H */
