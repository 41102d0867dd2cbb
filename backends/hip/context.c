/* Contexts: a HIP device ordinal. The HIP runtime owns one implicit context
 * per device for the whole process, so a kiln context adds no state of its
 * own; its device is made current around the calls that need it
 * (kiln_hip_device_enter, device.c). */
#include "backends/hip/hip.h"

/* Kiln's priorities count up from the runtime's default (0) towards its
 * greatest, which HIP numbers downwards; AMD's priorities below the
 * default are not offered. The device is current. */
kiln_status kiln_hip_context_priorities(kiln_context *ctx) {
  int least = 0, greatest = 0;
  hipError_t err =
      kiln_hip_api.hipDeviceGetStreamPriorityRange(&least, &greatest);
  if (err != hipSuccess)
    return kiln_hip_error(err,
                          "hipDeviceGetStreamPriorityRange");
  ctx->properties.max_stream_priority = greatest < 0 ? (uint32_t)-greatest : 0;
  return KILN_OK;
}

kiln_status kiln_hip_context_init(kiln_context *ctx) {
  kiln_hip_context_cast(ctx)->device = (int)ctx->device_index;
  /* A device the runtime cannot select fails here rather than in the
   * middle of the first allocation. */
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(ctx, &scope);
  if (st != KILN_OK) return st;
  st = kiln_hip_context_priorities(ctx);
  kiln_hip_device_leave(&scope);
  if (st == KILN_OK) st = kiln_hip_reorder_check(ctx);
  return st;
}

void kiln_hip_context_deinit(kiln_context *ctx) {
  kiln_hip_pool_deinit(ctx);
  kiln_hip_reorder_deinit(ctx);
}

kiln_status kiln_hip_context_synchronize(kiln_context *ctx,
                                        uint64_t timeout_ns) {
  /* hipDeviceSynchronize has no bound and waits as the process's device
   * flag says: kiln's streams are waited for first, polled within the
   * bound or as the policy says, so that only work they have finished (or
   * other code's) is left for it. */
  kiln_hip_open_gates(ctx);
  kiln_status st =
      timeout_ns != KILN_WAIT_FOREVER
          ? kiln_poll_streams(ctx, kiln_hip_stream_query, timeout_ns)
          : kiln_sync_streams(ctx);
  if (st != KILN_OK) return st;
  kiln_hip_device_scope scope;
  if ((st = kiln_hip_device_enter(ctx, &scope)) != KILN_OK) return st;
  hipError_t err = kiln_hip_api.hipDeviceSynchronize();
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipDeviceSynchronize");
  return KILN_OK;
}

kiln_status kiln_hip_peer_direct(const kiln_context *a, const kiln_context *b,
                                 bool *out_direct) {
  int da = kiln_hip_context_cast_const(a)->device;
  int db = kiln_hip_context_cast_const(b)->device;
  if (da == db) {
    *out_direct = true;
    return KILN_OK;
  }
  int ab = 0, ba = 0;
  hipError_t err = kiln_hip_api.hipDeviceCanAccessPeer(&ab, da, db);
  if (err == hipSuccess)
    err = kiln_hip_api.hipDeviceCanAccessPeer(&ba, db, da);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipDeviceCanAccessPeer between HIP devices "
                               "%d and %d",
                          da, db);
  *out_direct = ab && ba;
  return KILN_OK;
}
