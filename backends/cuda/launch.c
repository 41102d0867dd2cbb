/* Kernel launches: cuLaunchKernel with the one argument ABI. This is the
 * path whose overhead counts, so it allocates nothing and makes one driver
 * call besides the launch (cuCtxGetCurrent); only a launch asking for more
 * dynamic shared memory than its kernel was allowed so far takes a lock. */
#include <pthread.h>
#include <string.h>

#include "backends/cuda/cuda.h"

/* Raising a kernel's limit happens at most once per larger size it is
 * launched with, so a few locks, picked by the kernel's address, serve
 * every kernel: two kernels that share one merely take turns at raising. */
#define RAISE_LOCKS 8u
static pthread_mutex_t raise_locks[RAISE_LOCKS] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
};

/* The dynamic shared memory opt-in, done as on HIP (backends/hip/launch.c):
 * k->shared_limit is the most the kernel was allowed so far. A launch
 * beyond it raises the driver's attribute to exactly what it asks for,
 * under the kernel's lock, and publishes the new limit only once the
 * driver has it: two threads raising at once cannot leave the attribute at
 * the smaller value while the limit says the larger, and no launch trusts a
 * limit the driver does not have yet. A request that cannot fit next to the
 * kernel's static shared memory is refused in words, before the driver
 * would refuse it (an API error in compute-sanitizer's report). */
static kiln_status allow_shared(kiln_cuda_kernel *k, const kiln_context *ctx,
                                size_t bytes, const char *fn) {
  pthread_mutex_t *lock = &raise_locks[((uintptr_t)k >> 6) % RAISE_LOCKS];
  pthread_mutex_lock(lock);
  kiln_status st = KILN_OK;
  if (bytes > atomic_load_explicit(&k->shared_limit, memory_order_relaxed)) {
    size_t optin = ctx->properties.max_shared_memory_per_block_optin;
    int static_bytes = 0;
    CUresult r = kiln_cuda_api.cuFuncGetAttribute(
        &static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->handle);
    size_t room =
        optin > (size_t)static_bytes ? optin - (size_t)static_bytes : 0;
    if (r != CUDA_SUCCESS)
      st = kiln_cuda_error(r, "cuFuncGetAttribute(SHARED_SIZE_BYTES) of "
                              "kernel '%s'", k->base.name);
    else if (bytes > room)
      st = kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: kernel '%s' has %d bytes of static shared "
                          "memory, which leaves %zu of the device's %zu "
                          "bytes per block for dynamic shared memory; %zu "
                          "were asked for",
                          fn, k->base.name, static_bytes, room, optin, bytes);
    else if ((r = kiln_cuda_api.cuFuncSetAttribute(
                  k->handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                  (int)bytes)) != CUDA_SUCCESS)
      st = kiln_cuda_error(r,
                           "cuFuncSetAttribute raising the dynamic shared "
                           "memory limit of kernel '%s' to %zu bytes",
                           k->base.name, bytes);
    else
      atomic_store_explicit(&k->shared_limit, bytes, memory_order_release);
  }
  pthread_mutex_unlock(lock);
  return st;
}

kiln_status kiln_cuda_need_shared(kiln_cuda_kernel *k, const kiln_context *ctx,
                                  size_t bytes, const char *fn) {
  if (bytes <= ctx->properties.max_shared_memory_per_block ||
      bytes <= atomic_load_explicit(&k->shared_limit, memory_order_acquire))
    return KILN_OK;
  return allow_shared(k, ctx, bytes, fn);
}

static uint64_t packed_u64(const kiln_packed_args *args, size_t i) {
  uint64_t v;
  memcpy(&v, args->data + args->offsets[i], sizeof v);
  return v;
}

static uint32_t packed_u32(const kiln_packed_args *args, size_t i) {
  uint32_t v;
  memcpy(&v, args->data + args->offsets[i], sizeof v);
  return v;
}

/* A row-major matrix of `rows` x `cols` halves with a pitch of `pitch`
 * halves, as a tensor map of boxes of box_cols x box_rows with the
 * 128-byte swizzle and zeros past its edges: the layout
 * shaders/cuda/hgemm_wgmma.cu's stages are written for. The core launches
 * GEMMs of m, n, k >= 1 only. */
static kiln_status encode_map(CUtensorMap *map, uint64_t address,
                              uint32_t rows, uint32_t cols, uint32_t pitch,
                              uint32_t box_cols, uint32_t box_rows,
                              const char *name) {
  const cuuint64_t dims[2] = {cols, rows};
  const cuuint64_t strides[1] = {(cuuint64_t)pitch * 2};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t steps[2] = {1, 1};
  CUresult r = kiln_cuda_api.cuTensorMapEncodeTiled(
      map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, (void *)(uintptr_t)address,
      dims, strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuTensorMapEncodeTiled for %s (%u x %u "
                              "halves, pitch %u)", name, rows, cols, pitch);
  return KILN_OK;
}

kiln_status kiln_cuda_params_of(const kiln_cuda_kernel *k,
                                const kiln_packed_args *args,
                                kiln_cuda_params *out) {
  for (size_t i = 0; i < args->count; i++)
    out->params[i] = (void *)(args->data + args->offsets[i]);
  if (!k->maps) return KILN_OK;
  /* module.c marks only kernels of the GEMM's list, and the core checks
   * every launch against it. */
  const uint32_t m = packed_u32(args, KILN_CUDA_GEMM_M);
  const uint32_t n = packed_u32(args, KILN_CUDA_GEMM_N);
  const uint32_t depth = packed_u32(args, KILN_CUDA_GEMM_K);
  kiln_status st =
      encode_map(&out->maps[0], packed_u64(args, KILN_CUDA_GEMM_A), m, depth,
                 packed_u32(args, KILN_CUDA_GEMM_LDA), 64, 128, "A");
  if (st == KILN_OK)
    st = encode_map(&out->maps[1], packed_u64(args, KILN_CUDA_GEMM_B), depth,
                    n, packed_u32(args, KILN_CUDA_GEMM_LDB), 64, 64, "B");
  out->params[KILN_CUDA_GEMM_ARGS] = &out->maps[0];
  out->params[KILN_CUDA_GEMM_ARGS + 1] = &out->maps[1];
  return st;
}

kiln_status kiln_cuda_launch(kiln_stream *s, kiln_kernel *base,
                             const kiln_launch_config *c,
                             const kiln_packed_args *args) {
  kiln_cuda_kernel *k = kiln_cuda_kernel_cast(base);
  const kiln_context *ctx = s->base.context;
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  if ((st = kiln_cuda_need_shared(k, ctx, c->shared_memory_bytes,
                                   "kiln_launch")) != KILN_OK)
    return st;
  kiln_cuda_params p;
  if ((st = kiln_cuda_params_of(k, args, &p)) != KILN_OK) return st;
  void **params = p.params;
  CUstream stream = kiln_cuda_stream_cast(s)->handle;
  CUresult r;
  if (k->follows) {
    /* The kernel waits for its predecessor itself (module.c): its blocks
     * may be placed while that one drains. */
    CUlaunchAttribute overlap = {
        .id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        .value.programmaticStreamSerializationAllowed = 1,
    };
    CUlaunchConfig config = {
        .gridDimX = c->grid.x, .gridDimY = c->grid.y, .gridDimZ = c->grid.z,
        .blockDimX = c->block.x, .blockDimY = c->block.y,
        .blockDimZ = c->block.z,
        .sharedMemBytes = (unsigned)c->shared_memory_bytes,
        .hStream = stream, .attrs = &overlap, .numAttrs = 1,
    };
    r = kiln_cuda_api.cuLaunchKernelEx(&config, k->handle, params, NULL);
  } else {
    r = kiln_cuda_api.cuLaunchKernel(
        k->handle, c->grid.x, c->grid.y, c->grid.z, c->block.x, c->block.y,
        c->block.z, (unsigned)c->shared_memory_bytes, stream, params, NULL);
  }
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error_as(r, KILN_ERROR_LAUNCH_FAILED,
                              "%s of '%s' (grid %ux%ux%u, block "
                              "%ux%ux%u, %zu bytes of dynamic shared memory)",
                              k->follows ? "cuLaunchKernelEx" : "cuLaunchKernel",
                              k->base.name, c->grid.x, c->grid.y, c->grid.z,
                              c->block.x, c->block.y, c->block.z,
                              c->shared_memory_bytes);
  return KILN_OK;
}
