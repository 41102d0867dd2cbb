/* Contexts: the device's primary context, shared with any other CUDA code in
 * the process (the CUDA runtime uses the same one), instead of a context of
 * kiln's own that would split the device's memory and serialize with it. */
#include "backends/cuda/cuda.h"

/* Kiln's priorities count up from the driver's default (0) towards its
 * greatest, which CUDA numbers downwards (0 to -5 on current GPUs). The
 * range needs a current context, so it is known from here on. */
kiln_status kiln_cuda_context_priorities(kiln_context *base) {
  int least = 0, greatest = 0;
  CUresult r = kiln_cuda_api.cuCtxGetStreamPriorityRange(&least, &greatest);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuCtxGetStreamPriorityRange");
  base->properties.max_stream_priority = greatest < 0 ? (uint32_t)-greatest : 0;
  return KILN_OK;
}

kiln_status kiln_cuda_context_init(kiln_context *base) {
  kiln_cuda_context *ctx = kiln_cuda_context_cast(base);
  CUresult r = kiln_cuda_api.cuDeviceGet(&ctx->device, (int)base->device_index);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuDeviceGet(%zu)", base->device_index);
  r = kiln_cuda_api.cuDevicePrimaryCtxRetain(&ctx->handle, ctx->device);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuDevicePrimaryCtxRetain on %s",
                           base->properties.name);
  kiln_status st = kiln_cuda_make_current(base);
  if (st == KILN_OK) st = kiln_cuda_context_priorities(base);
  if (st == KILN_OK) st = kiln_cuda_reorder_check(base);
  if (st != KILN_OK) kiln_cuda_api.cuDevicePrimaryCtxRelease(ctx->device);
  return st;
}

void kiln_cuda_context_deinit(kiln_context *base) {
  kiln_cuda_context *ctx = kiln_cuda_context_cast(base);
  kiln_cuda_pool_deinit(base);
  kiln_cuda_reorder_deinit(base);
  /* Work still runs: releasing the last reference would destroy the
   * primary context, which waits for that work first (the kernel that
   * made the wait give up). kiln's reference stays until the process
   * ends, and a new context retains the same primary context. */
  if (base->abandoned || ctx->imported) return;
  CUresult r = kiln_cuda_api.cuDevicePrimaryCtxRelease(ctx->device);
  if (r != CUDA_SUCCESS) kiln_cuda_warn(r, "cuDevicePrimaryCtxRelease");
  /* Releasing the last reference destroys the primary context, but leaves
   * it current on this thread; clear it there so that later CUDA code on
   * the thread does not use a dead handle. While another user still holds
   * the context it stays active, and current, as that user expects. */
  unsigned flags = 0;
  int active = 1;
  CUcontext current = NULL;
  if (kiln_cuda_api.cuDevicePrimaryCtxGetState(ctx->device, &flags,
                                               &active) == CUDA_SUCCESS &&
      !active &&
      kiln_cuda_api.cuCtxGetCurrent(&current) == CUDA_SUCCESS &&
      current == ctx->handle)
    kiln_cuda_api.cuCtxSetCurrent(NULL);
}

kiln_status kiln_cuda_context_synchronize(kiln_context *ctx,
                                         uint64_t timeout_ns) {
  kiln_status st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  kiln_cuda_open_gates(ctx);
  /* cuCtxSynchronize has no bound and waits as the primary context's
   * flag says: kiln's streams are waited for first, polled within the
   * bound or as the policy says, so that only work they have finished (or
   * other code's in the primary context) is left for it. */
  st = timeout_ns != KILN_WAIT_FOREVER
           ? kiln_poll_streams(ctx, kiln_cuda_stream_query, timeout_ns)
           : kiln_sync_streams(ctx);
  if (st != KILN_OK) return st;
  CUresult r = kiln_cuda_api.cuCtxSynchronize();
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuCtxSynchronize");
  return KILN_OK;
}

kiln_status kiln_cuda_peer_direct(const kiln_context *a,
                                  const kiln_context *b, bool *out_direct) {
  CUdevice da = kiln_cuda_context_cast_const(a)->device;
  CUdevice db = kiln_cuda_context_cast_const(b)->device;
  /* One device: both hold its primary context, one address space. */
  if (da == db) {
    *out_direct = true;
    return KILN_OK;
  }
  int ab = 0, ba = 0;
  CUresult r = kiln_cuda_api.cuDeviceCanAccessPeer(&ab, da, db);
  if (r == CUDA_SUCCESS) r = kiln_cuda_api.cuDeviceCanAccessPeer(&ba, db, da);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuDeviceCanAccessPeer between CUDA devices "
                              "%zu and %zu",
                           a->device_index, b->device_index);
  *out_direct = ab && ba;
  return KILN_OK;
}
