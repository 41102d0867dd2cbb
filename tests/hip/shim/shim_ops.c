/* The shim's memory, transfers, modules, limits, launches, streams and
 * events: each HIP call as the CUDA driver call that does the same, with
 * HIP's rules where the two differ (hipFree waits for the device, work goes
 * to the stream's device, a null pointer or zero size is no error). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tests/hip/shim/shim.h"

#define SHIM_DEVPTR(p) ((CUdeviceptr)(uintptr_t)(p))

/* ---- Memory ------------------------------------------------------------- */

hipError_t hipMalloc(void **ptr, size_t size) {
  if (!ptr) return hipErrorInvalidValue;
  *ptr = NULL;
  hipError_t err = shim_enter();
  if (err != hipSuccess || size == 0) return err;
  CUdeviceptr d;
  err = shim_error(shim_cu.cuMemAlloc(&d, size), "cuMemAlloc");
  if (err == hipSuccess) *ptr = (void *)(uintptr_t)d;
  return err;
}

/* HIP's frees wait for the device first. */
static hipError_t quiesce(void) {
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuCtxSynchronize(), "cuCtxSynchronize");
}

hipError_t hipFree(void *ptr) {
  if (!ptr) return shim_ready();
  hipError_t err = quiesce();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuMemFree(SHIM_DEVPTR(ptr)), "cuMemFree");
}

hipError_t hipMemGetAddressRange(hipDeviceptr_t *base, size_t *size,
                                 hipDeviceptr_t ptr) {
  if (!base || !size) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUdeviceptr start = 0;
  err = shim_error(shim_cu.cuMemGetAddressRange(&start, size, SHIM_DEVPTR(ptr)),
                   "cuMemGetAddressRange");
  if (err == hipSuccess) *base = (hipDeviceptr_t)(uintptr_t)start;
  return err;
}

/* Of HIP's flags, those kiln passes: mapped (for KILN_DEBUG=reorder's gate
 * words) and portable, which the shim's memory always is. */
hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags) {
  const unsigned known = hipHostMallocMapped | hipHostMallocPortable;
  if (!ptr || (flags & ~known)) return hipErrorInvalidValue;
  *ptr = NULL;
  hipError_t err = shim_enter();
  if (err != hipSuccess || size == 0) return err;
  /* Portable: HIP's pinned memory serves every device. */
  unsigned cu_flags = CU_MEMHOSTALLOC_PORTABLE;
  if (flags & hipHostMallocMapped) cu_flags |= CU_MEMHOSTALLOC_DEVICEMAP;
  return shim_error(shim_cu.cuMemHostAlloc(ptr, size, cu_flags),
                    "cuMemHostAlloc");
}

hipError_t hipHostGetDevicePointer(void **device_ptr, void *host_ptr,
                                   unsigned int flags) {
  if (!device_ptr || !host_ptr || flags != 0) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUdeviceptr d = 0;
  err = shim_error(shim_cu.cuMemHostGetDevicePointer(&d, host_ptr, 0),
                   "cuMemHostGetDevicePointer");
  if (err == hipSuccess) *device_ptr = (void *)(uintptr_t)d;
  return err;
}

hipError_t hipHostFree(void *ptr) {
  if (!ptr) return shim_ready();
  hipError_t err = quiesce();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuMemFreeHost(ptr), "cuMemFreeHost");
}

/* ---- Transfers ---------------------------------------------------------- */

hipError_t hipMemcpyAsync(void *dst, const void *src, size_t size,
                          hipMemcpyKind kind, hipStream_t stream) {
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess || size == 0) return err;
  CUstream s = SHIM_HANDLE(CUstream, stream);
  switch (kind) {
  case hipMemcpyHostToDevice:
    return shim_error(
        shim_cu.cuMemcpyHtoDAsync(SHIM_DEVPTR(dst), src, size, s),
        "cuMemcpyHtoDAsync");
  case hipMemcpyDeviceToHost:
    return shim_error(
        shim_cu.cuMemcpyDtoHAsync(dst, SHIM_DEVPTR(src), size, s),
        "cuMemcpyDtoHAsync");
  case hipMemcpyDeviceToDevice:
    return shim_error(shim_cu.cuMemcpyDtoDAsync(SHIM_DEVPTR(dst),
                                                SHIM_DEVPTR(src), size, s),
                      "cuMemcpyDtoDAsync");
  case hipMemcpyDefault:
    return shim_error(shim_cu.cuMemcpyAsync(SHIM_DEVPTR(dst),
                                            SHIM_DEVPTR(src), size, s),
                      "cuMemcpyAsync");
  case hipMemcpyHostToHost:
    /* In stream order, as HIP does it. */
    err = shim_error(shim_cu.cuStreamSynchronize(s), "cuStreamSynchronize");
    if (err == hipSuccess) memmove(dst, src, size);
    return err;
  }
  return hipErrorInvalidMemcpyDirection;
}

/* HIP names devices where the driver names their contexts. */
hipError_t hipMemcpyPeerAsync(void *dst, int dst_device_id, const void *src,
                              int src_device_id, size_t size,
                              hipStream_t stream) {
  CUcontext dst_ctx, src_ctx;
  hipError_t err = shim_device_context(dst_device_id, &dst_ctx);
  if (err == hipSuccess) err = shim_device_context(src_device_id, &src_ctx);
  if (err == hipSuccess) err = shim_enter_stream(stream);
  if (err != hipSuccess || size == 0) return err;
  return shim_error(shim_cu.cuMemcpyPeerAsync(SHIM_DEVPTR(dst), dst_ctx,
                                              SHIM_DEVPTR(src), src_ctx, size,
                                              SHIM_HANDLE(CUstream, stream)),
                    "cuMemcpyPeerAsync");
}

hipError_t hipMemsetD8Async(hipDeviceptr_t dst, unsigned char value,
                            size_t count, hipStream_t stream) {
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess || count == 0) return err;
  return shim_error(shim_cu.cuMemsetD8Async(SHIM_DEVPTR(dst), value, count,
                                            SHIM_HANDLE(CUstream, stream)),
                    "cuMemsetD8Async");
}

hipError_t hipMemsetD16Async(hipDeviceptr_t dst, unsigned short value,
                             size_t count, hipStream_t stream) {
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess || count == 0) return err;
  return shim_error(shim_cu.cuMemsetD16Async(SHIM_DEVPTR(dst), value, count,
                                             SHIM_HANDLE(CUstream, stream)),
                    "cuMemsetD16Async");
}

hipError_t hipMemsetD32Async(hipDeviceptr_t dst, int value, size_t count,
                             hipStream_t stream) {
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess || count == 0) return err;
  return shim_error(shim_cu.cuMemsetD32Async(SHIM_DEVPTR(dst),
                                             (unsigned int)value, count,
                                             SHIM_HANDLE(CUstream, stream)),
                    "cuMemsetD32Async");
}

/* ---- Modules and launches ----------------------------------------------- */

/* The image is what nvcc made of the .hip sources for hip_platform=nvidia:
 * a fatbin (or cubin, or PTX), which the driver loads as it is. */
hipError_t hipModuleLoadData(hipModule_t *module, const void *image) {
  if (!module || !image) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUmodule m;
  err = shim_error(shim_cu.cuModuleLoadData(&m, image), "cuModuleLoadData");
  if (err == hipSuccess) *module = SHIM_HANDLE(hipModule_t, m);
  return err;
}

hipError_t hipModuleUnload(hipModule_t module) {
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuModuleUnload(SHIM_HANDLE(CUmodule, module)),
                    "cuModuleUnload");
}

hipError_t hipModuleGetFunction(hipFunction_t *function, hipModule_t module,
                                const char *name) {
  if (!function || !name) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUfunction f;
  err = shim_error(shim_cu.cuModuleGetFunction(
                       &f, SHIM_HANDLE(CUmodule, module), name),
                   "cuModuleGetFunction");
  /* AMD's runtime has a module's code on the device once hipModuleLoad*
   * returns; CUDA's lazy loading would load the function at its first
   * launch instead, waiting there for work already queued. */
  if (err == hipSuccess)
    err = shim_error(shim_cu.cuFuncLoad(f), "cuFuncLoad");
  if (err == hipSuccess) *function = SHIM_HANDLE(hipFunction_t, f);
  return err;
}

hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int grid_x,
                                 unsigned int grid_y, unsigned int grid_z,
                                 unsigned int block_x, unsigned int block_y,
                                 unsigned int block_z,
                                 unsigned int shared_bytes, hipStream_t stream,
                                 void **kernel_params, void **extra) {
  /* kiln passes its arguments as kernelParams only. */
  if (extra) return hipErrorNotSupported;
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(
      shim_cu.cuLaunchKernel(SHIM_HANDLE(CUfunction, f), grid_x, grid_y,
                             grid_z, block_x, block_y, block_z, shared_bytes,
                             SHIM_HANDLE(CUstream, stream), kernel_params,
                             NULL),
      "cuLaunchKernel");
}

/* HIP takes the function as a const void *, for runtime-API kernels and
 * module functions alike; here it is always a module function. */
hipError_t hipFuncSetAttribute(const void *func, hipFuncAttribute attr,
                               int value) {
  if (!func || attr != hipFuncAttributeMaxDynamicSharedMemorySize)
    return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(
      shim_cu.cuFuncSetAttribute((CUfunction)(uintptr_t)func,
                                 CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 value),
      "cuFuncSetAttribute");
}

/* hipFunction_attribute's values are CUfunction_attribute's, as HIP on
 * NVIDIA defines them (nvidia_hip_runtime_api.h). */
hipError_t hipFuncGetAttribute(int *value, hipFunction_attribute attrib,
                               hipFunction_t hfunc) {
  if (!value || !hfunc) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(
      shim_cu.cuFuncGetAttribute(value, (CUfunction_attribute)attrib,
                                 SHIM_HANDLE(CUfunction, hfunc)),
      "cuFuncGetAttribute");
}

hipError_t hipModuleOccupancyMaxPotentialBlockSize(int *gridSize,
                                                   int *blockSize,
                                                   hipFunction_t f,
                                                   size_t dynSharedMemPerBlk,
                                                   int blockSizeLimit) {
  if (!gridSize || !blockSize || !f) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuOccupancyMaxPotentialBlockSize(
                        gridSize, blockSize, SHIM_HANDLE(CUfunction, f), NULL,
                        dynSharedMemPerBlk, blockSizeLimit),
                    "cuOccupancyMaxPotentialBlockSize");
}

/* A module's variable, as HIP documents it: either out-parameter may be
 * NULL. */
hipError_t hipModuleGetGlobal(hipDeviceptr_t *address, size_t *size,
                              hipModule_t module, const char *name) {
  if (!name) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUdeviceptr d = 0;
  size_t bytes = 0;
  err = shim_error(shim_cu.cuModuleGetGlobal(&d, &bytes,
                                             SHIM_HANDLE(CUmodule, module),
                                             name),
                   "cuModuleGetGlobal");
  if (err != hipSuccess) return err;
  if (address) *address = (hipDeviceptr_t)(uintptr_t)d;
  if (size) *size = bytes;
  return hipSuccess;
}

/* ---- Limits ------------------------------------------------------------- */

/* HIP's limits are the current device's: here its primary context's. */
static bool to_cuda_limit(enum hipLimit_t limit, CUlimit *out) {
  switch (limit) {
  case hipLimitStackSize: *out = CU_LIMIT_STACK_SIZE; return true;
  case hipLimitPrintfFifoSize: *out = CU_LIMIT_PRINTF_FIFO_SIZE; return true;
  case hipLimitMallocHeapSize: *out = CU_LIMIT_MALLOC_HEAP_SIZE; return true;
  }
  return false;
}

hipError_t hipDeviceSetLimit(enum hipLimit_t limit, size_t value) {
  CUlimit l;
  if (!to_cuda_limit(limit, &l)) return hipErrorUnsupportedLimit;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuCtxSetLimit(l, value), "cuCtxSetLimit");
}

hipError_t hipDeviceGetLimit(size_t *value, enum hipLimit_t limit) {
  if (!value) return hipErrorInvalidValue;
  CUlimit l;
  if (!to_cuda_limit(limit, &l)) return hipErrorUnsupportedLimit;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuCtxGetLimit(value, l), "cuCtxGetLimit");
}

/* ---- Streams ------------------------------------------------------------ */

hipError_t hipStreamCreateWithFlags(hipStream_t *stream, unsigned int flags) {
  if (!stream || (flags & ~(unsigned int)hipStreamNonBlocking))
    return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUstream s;
  err = shim_error(
      shim_cu.cuStreamCreate(&s, flags & hipStreamNonBlocking
                                     ? CU_STREAM_NON_BLOCKING
                                     : CU_STREAM_DEFAULT),
      "cuStreamCreate");
  if (err == hipSuccess) *stream = SHIM_HANDLE(hipStream_t, s);
  return err;
}

/* HIP's priorities are CUDA's numbers (lower is more urgent), clamped to
 * the range by both. */
hipError_t hipStreamCreateWithPriority(hipStream_t *stream, unsigned int flags,
                                       int priority) {
  if (!stream || (flags & ~(unsigned int)hipStreamNonBlocking))
    return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUstream s;
  err = shim_error(shim_cu.cuStreamCreateWithPriority(
                       &s,
                       flags & hipStreamNonBlocking ? CU_STREAM_NON_BLOCKING
                                                    : CU_STREAM_DEFAULT,
                       priority),
                   "cuStreamCreateWithPriority");
  if (err == hipSuccess) *stream = SHIM_HANDLE(hipStream_t, s);
  return err;
}

hipError_t hipDeviceGetStreamPriorityRange(int *leastPriority,
                                           int *greatestPriority) {
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(
      shim_cu.cuCtxGetStreamPriorityRange(leastPriority, greatestPriority),
      "cuCtxGetStreamPriorityRange");
}

hipError_t hipStreamDestroy(hipStream_t stream) {
  if (!stream) return hipErrorInvalidHandle;
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuStreamDestroy(SHIM_HANDLE(CUstream, stream)),
                    "cuStreamDestroy");
}

hipError_t hipStreamSynchronize(hipStream_t stream) {
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(
      shim_cu.cuStreamSynchronize(SHIM_HANDLE(CUstream, stream)),
      "cuStreamSynchronize");
}

hipError_t hipStreamQuery(hipStream_t stream) {
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuStreamQuery(SHIM_HANDLE(CUstream, stream)),
                    "cuStreamQuery");
}

hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event,
                              unsigned int flags) {
  if (!event || (flags & ~(unsigned)hipEventWaitExternal))
    return hipErrorInvalidValue;
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(
      shim_cu.cuStreamWaitEvent(
          SHIM_HANDLE(CUstream, stream), SHIM_HANDLE(CUevent, event),
          flags ? CU_EVENT_WAIT_EXTERNAL : CU_EVENT_WAIT_DEFAULT),
      "cuStreamWaitEvent");
}

/* Only what CUDA's wait does alike: HIP's >= on the whole word, which for
 * counters that do not wrap is CUDA's GEQ. */
hipError_t hipStreamWaitValue32(hipStream_t stream, void *ptr, uint32_t value,
                                unsigned int flags, uint32_t mask) {
  if (!ptr || flags != hipStreamWaitValueGte || mask != 0xffffffffu)
    return hipErrorInvalidValue;
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuStreamWaitValue32(SHIM_HANDLE(CUstream, stream),
                                                SHIM_DEVPTR(ptr), value,
                                                CU_STREAM_WAIT_VALUE_GEQ),
                    "cuStreamWaitValue32");
}

/* ---- Events ------------------------------------------------------------- */

hipError_t hipEventCreateWithFlags(hipEvent_t *event, unsigned int flags) {
  const unsigned known = hipEventBlockingSync | hipEventDisableTiming;
  if (!event || (flags & ~known)) return hipErrorInvalidValue;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  CUevent e;
  unsigned cu = CU_EVENT_DEFAULT;
  if (flags & hipEventBlockingSync) cu |= CU_EVENT_BLOCKING_SYNC;
  if (flags & hipEventDisableTiming) cu |= CU_EVENT_DISABLE_TIMING;
  err = shim_error(shim_cu.cuEventCreate(&e, cu), "cuEventCreate");
  if (err == hipSuccess) *event = SHIM_HANDLE(hipEvent_t, e);
  return err;
}

hipError_t hipEventDestroy(hipEvent_t event) {
  if (!event) return hipErrorInvalidHandle;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuEventDestroy(SHIM_HANDLE(CUevent, event)),
                    "cuEventDestroy");
}

hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  if (!event) return hipErrorInvalidHandle;
  hipError_t err = shim_enter_stream(stream);
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuEventRecord(SHIM_HANDLE(CUevent, event),
                                          SHIM_HANDLE(CUstream, stream)),
                    "cuEventRecord");
}

hipError_t hipEventSynchronize(hipEvent_t event) {
  if (!event) return hipErrorInvalidHandle;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuEventSynchronize(SHIM_HANDLE(CUevent, event)),
                    "cuEventSynchronize");
}

hipError_t hipEventQuery(hipEvent_t event) {
  if (!event) return hipErrorInvalidHandle;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuEventQuery(SHIM_HANDLE(CUevent, event)),
                    "cuEventQuery");
}

hipError_t hipEventElapsedTime(float *ms, hipEvent_t start, hipEvent_t stop) {
  if (!ms) return hipErrorInvalidValue;
  if (!start || !stop) return hipErrorInvalidHandle;
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuEventElapsedTime(ms, SHIM_HANDLE(CUevent, start),
                                               SHIM_HANDLE(CUevent, stop)),
                    "cuEventElapsedTime");
}
