/* kiln declares the part of the HIP API it uses itself (backends/hip/hip.h
 * and symbols.h). This file, built only where ROCm's headers are installed,
 * holds those declarations against ROCm's: every value, every prototype and
 * every hand-written type must agree, or it does not compile. */
#include <hip/hip_runtime_api.h>
#include <stddef.h>

#include "backends/hip/symbols.h"

#define KILN_CHECK_VALUE(name, value) \
  _Static_assert((long long)(name) == (value), #name " differs from ROCm's");
KILN_HIP_ERRORS(KILN_CHECK_VALUE)
KILN_HIP_DEVICE_ATTRIBUTES(KILN_CHECK_VALUE)
KILN_HIP_MEMCPY_KINDS(KILN_CHECK_VALUE)
KILN_HIP_FUNC_ATTRIBUTES(KILN_CHECK_VALUE)
KILN_HIP_FUNCTION_ATTRIBUTES(KILN_CHECK_VALUE)
KILN_HIP_LIMITS(KILN_CHECK_VALUE)
KILN_HIP_FLAGS(KILN_CHECK_VALUE)
KILN_HIP_CAPTURE_MODES(KILN_CHECK_VALUE)
KILN_HIP_CAPTURE_STATUSES(KILN_CHECK_VALUE)
KILN_HIP_MEM_POOL_ATTRS(KILN_CHECK_VALUE)
KILN_HIP_MEM_LOCATION_TYPES(KILN_CHECK_VALUE)
KILN_HIP_MEM_ALLOCATION_TYPES(KILN_CHECK_VALUE)
KILN_HIP_MEM_HANDLE_TYPES(KILN_CHECK_VALUE)

#define KILN_CHECK_PROTOTYPE(ret, name, params)                      \
  _Static_assert(                                                    \
      __builtin_types_compatible_p(__typeof__(&name), ret(*) params), \
      #name "'s prototype differs from ROCm's");
KILN_HIP_SYMBOLS(KILN_CHECK_PROTOTYPE)
KILN_HIP_OPTIONAL_SYMBOLS_ROCM5(KILN_CHECK_PROTOTYPE)
/* What ROCm 5.2's headers lack. */
#if HIP_VERSION_MAJOR >= 6
KILN_HIP_LIMITS_ROCM6(KILN_CHECK_VALUE)
KILN_HIP_FLAGS_ROCM6(KILN_CHECK_VALUE)
KILN_HIP_OPTIONAL_SYMBOLS_ROCM6(KILN_CHECK_PROTOTYPE)
#endif

/* The types hip.h writes out by hand. */
_Static_assert(__builtin_types_compatible_p(hipDevice_t, int),
               "hipDevice_t differs from ROCm's");
_Static_assert(__builtin_types_compatible_p(hipDeviceptr_t, void *),
               "hipDeviceptr_t differs from ROCm's");
_Static_assert(__builtin_types_compatible_p(hipStream_t, struct ihipStream_t *),
               "hipStream_t differs from ROCm's");
_Static_assert(__builtin_types_compatible_p(hipEvent_t, struct ihipEvent_t *),
               "hipEvent_t differs from ROCm's");
_Static_assert(__builtin_types_compatible_p(hipModule_t, struct ihipModule_t *),
               "hipModule_t differs from ROCm's");
_Static_assert(__builtin_types_compatible_p(hipFunction_t,
                                            struct ihipModuleSymbol_t *),
               "hipFunction_t differs from ROCm's");
_Static_assert(__builtin_types_compatible_p(hipGraph_t, struct ihipGraph *),
               "hipGraph_t differs from ROCm's");
_Static_assert(__builtin_types_compatible_p(hipGraphNode_t,
                                            struct hipGraphNode *),
               "hipGraphNode_t differs from ROCm's");
_Static_assert(__builtin_types_compatible_p(hipGraphExec_t,
                                            struct hipGraphExec *),
               "hipGraphExec_t differs from ROCm's");
_Static_assert(__builtin_types_compatible_p(hipMemPool_t,
                                            struct ihipMemPoolHandle_t *),
               "hipMemPool_t differs from ROCm's");
/* hip.h's layouts of the pool's properties (hipMemPoolProps also asserted
 * there): ROCm 6's maxSize lies in what hip.h calls reserved. */
_Static_assert(sizeof(hipMemLocation) == 8 &&
                   offsetof(hipMemLocation, type) == 0 &&
                   offsetof(hipMemLocation, id) == 4,
               "hipMemLocation differs from ROCm's");
_Static_assert(sizeof(hipMemPoolProps) == 88 &&
                   offsetof(hipMemPoolProps, allocType) == 0 &&
                   offsetof(hipMemPoolProps, handleTypes) == 4 &&
                   offsetof(hipMemPoolProps, location) == 8 &&
                   offsetof(hipMemPoolProps, win32SecurityAttributes) == 16,
               "hipMemPoolProps differs from ROCm's");
/* hip.h's layout of hipKernelNodeParams (also asserted there). */
_Static_assert(sizeof(hipKernelNodeParams) == 64 &&
                   offsetof(hipKernelNodeParams, blockDim) == 0 &&
                   offsetof(hipKernelNodeParams, extra) == 16 &&
                   offsetof(hipKernelNodeParams, func) == 24 &&
                   offsetof(hipKernelNodeParams, gridDim) == 32 &&
                   offsetof(hipKernelNodeParams, kernelParams) == 48 &&
                   offsetof(hipKernelNodeParams, sharedMemBytes) == 56,
               "hipKernelNodeParams differs from ROCm's");
_Static_assert(sizeof(hipUUID) == 16 && offsetof(hipUUID, bytes) == 0,
               "hipUUID differs from ROCm's");
_Static_assert(sizeof(hipError_t) == sizeof(int) &&
                   sizeof(hipDeviceAttribute_t) == sizeof(int) &&
                   sizeof(hipMemcpyKind) == sizeof(int) &&
                   sizeof(hipFuncAttribute) == sizeof(int) &&
                   sizeof(enum hipLimit_t) == sizeof(int) &&
                   sizeof(hipMemPoolAttr) == sizeof(int) &&
                   sizeof(hipMemLocationType) == sizeof(int) &&
                   sizeof(hipMemAllocationType) == sizeof(int) &&
                   sizeof(hipMemAllocationHandleType) == sizeof(int),
               "an enumeration's size differs from ROCm's");
/* device.c finds the architecture name after the device name. */
_Static_assert(offsetof(hipDeviceProp_t, name) == 0 &&
                   sizeof(((hipDeviceProp_t *)0)->name) == 256 &&
                   offsetof(hipDeviceProp_t, gcnArchName) >= 256,
               "hipDeviceProp_t no longer starts with the 256-byte name");

int main(void) { return 0; }
