/* Kernel launches: cuLaunchKernel with the one argument ABI. This is the
 * path whose overhead counts, so it allocates nothing, takes no lock and
 * makes one driver call besides the launch (cuCtxGetCurrent). */
#include "backends/cuda/cuda.h"

/* Raises the kernel's dynamic shared memory limit, once, to everything the
 * device allows next to its static shared memory; concurrent first
 * launches all set the same value. Then checks `bytes` against it. */
static kiln_status allow_shared(kiln_cuda_kernel *k, const kiln_context *ctx,
                                size_t bytes) {
  size_t optin = ctx->properties.max_shared_memory_per_block_optin;
  size_t limit = atomic_load_explicit(&k->shared_limit, memory_order_relaxed);
  if (limit == 0) {
    int static_bytes = 0;
    CUresult r = kiln_cuda_api.cuFuncGetAttribute(
        &static_bytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, k->handle);
    if (r != CUDA_SUCCESS)
      return kiln_cuda_error(r, "cuFuncGetAttribute(SHARED_SIZE_BYTES) of "
                                "kernel '%s'", k->base.name);
    limit = optin > (size_t)static_bytes ? optin - (size_t)static_bytes : 1;
    r = kiln_cuda_api.cuFuncSetAttribute(
        k->handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        (int)limit);
    if (r != CUDA_SUCCESS)
      return kiln_cuda_error(r, "raising the dynamic shared memory limit of "
                                "kernel '%s' to %zu bytes", k->base.name,
                             limit);
    atomic_store_explicit(&k->shared_limit, limit, memory_order_relaxed);
  }
  if (bytes > limit)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "kiln_launch: kernel '%s' has %zu bytes of static "
                          "shared memory, which leaves %zu of the device's "
                          "%zu bytes per block for dynamic shared memory; "
                          "the launch asks for %zu",
                          k->base.name, optin - limit, limit, optin, bytes);
  return KILN_OK;
}

kiln_status kiln_cuda_launch(kiln_stream *s, kiln_kernel *base,
                             const kiln_launch_config *c,
                             const kiln_packed_args *args) {
  kiln_cuda_kernel *k = kiln_cuda_kernel_cast(base);
  const kiln_context *ctx = s->base.context;
  kiln_status st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  /* Up to the default limit every kernel may use dynamic shared memory;
   * beyond it the kernel must opt in first. */
  if (c->shared_memory_bytes > ctx->properties.max_shared_memory_per_block &&
      (st = allow_shared(k, ctx, c->shared_memory_bytes)) != KILN_OK)
    return st;
  /* kernelParams[i] points at argument i in the packed list; the driver
   * copies the values out before cuLaunchKernel returns. */
  void *params[KILN_MAX_KERNEL_ARGS];
  for (size_t i = 0; i < args->count; i++)
    params[i] = (void *)(args->data + args->offsets[i]);
  CUresult r = kiln_cuda_api.cuLaunchKernel(
      k->handle, c->grid.x, c->grid.y, c->grid.z, c->block.x, c->block.y,
      c->block.z, (unsigned)c->shared_memory_bytes,
      kiln_cuda_stream_cast(s)->handle, params, NULL);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error_as(r, KILN_ERROR_LAUNCH_FAILED,
                              "cuLaunchKernel of '%s' (grid %ux%ux%u, block "
                              "%ux%ux%u, %zu bytes of dynamic shared memory)",
                              k->base.name, c->grid.x, c->grid.y, c->grid.z,
                              c->block.x, c->block.y, c->block.z,
                              c->shared_memory_bytes);
  return KILN_OK;
}
