/* Stream-ordered allocation: buffers made and released on a stream, from a
 * hipMemPool_t of the context's own (hipMemPoolCreate) rather than the
 * device's default pool. The default pool is the whole process's: other
 * HIP code beside kiln allocates from it with hipMallocAsync, and kiln's
 * release threshold and trims would change how much memory that code
 * keeps. The pool is made by the first allocation, so a context that never
 * allocates in stream order costs the device nothing.
 *
 * HIP runs a stream's work on the stream's device, and a pool belongs to
 * the device it was made for, so only the pool's making and destruction
 * make the context's device current; the allocation and the release, whose
 * cost counts, are the gate check every op makes, one atomic load of the
 * pool and the runtime's call. */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "backends/hip/hip.h"

/* Guards the making of every context's pool and the threshold it gets.
 * One lock serves all contexts: each takes it once to make its pool, and
 * again only to change the threshold, never on the allocation's path. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* The first pool entry point the runtime lacks, or NULL. */
static const char *missing_entry_point(void) {
#define KILN_HIP_MISSING(ret, name, params) \
  if (!kiln_hip_api.name) return #name;
  KILN_HIP_POOL_SYMBOLS(KILN_HIP_MISSING)
#undef KILN_HIP_MISSING
  return NULL;
}

kiln_status kiln_hip_pool_supported(kiln_context *base) {
  const char *missing = missing_entry_point();
  if (missing)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "stream-ordered allocation needs %s, which the HIP "
                          "runtime lacks",
                          missing);
  int pools = 0;
  hipError_t err = kiln_hip_api.hipDeviceGetAttribute(
      &pools, hipDeviceAttributeMemoryPoolsSupported,
      kiln_hip_context_cast(base)->device);
  /* A runtime older than the attribute refuses to be asked. */
  if (err != hipSuccess)
    return kiln_hip_error_as(err, KILN_ERROR_UNSUPPORTED,
                             "hipDeviceGetAttribute("
                             "hipDeviceAttributeMemoryPoolsSupported) on %s",
                             base->properties.name);
  if (!pools)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "%s reports no memory pools "
                          "(hipDeviceAttributeMemoryPoolsSupported is 0), so "
                          "the HIP runtime cannot allocate in stream order "
                          "on it (AMD's runtime offers them where the "
                          "environment has HIP_MEM_POOL_SUPPORT=1)",
                          base->properties.name);
  return KILN_OK;
}

static kiln_status set_threshold(const kiln_context *ctx, hipMemPool_t pool,
                                 uint64_t keep) {
  uint64_t value = keep;
  hipError_t err = kiln_hip_api.hipMemPoolSetAttribute(
      pool, hipMemPoolAttrReleaseThreshold, &value);
  if (err != hipSuccess)
    return kiln_hip_error(err,
                          "hipMemPoolSetAttribute(hipMemPoolAttrRelease"
                          "Threshold, %" PRIu64
                          " bytes) of the stream-ordered pool on %s",
                          keep, ctx->properties.name);
  return KILN_OK;
}

/* Makes ctx's pool, under pool_lock. */
static kiln_status make_pool(kiln_hip_context *ctx, hipMemPool_t *out) {
  kiln_status st = kiln_hip_pool_supported(&ctx->base);
  if (st != KILN_OK) return st;
  hipMemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = hipMemAllocationTypePinned;
  props.handleTypes = hipMemHandleTypeNone;
  props.location.type = hipMemLocationTypeDevice;
  props.location.id = ctx->device;
  kiln_hip_device_scope scope;
  if ((st = kiln_hip_device_enter(&ctx->base, &scope)) != KILN_OK) return st;
  hipMemPool_t pool = NULL;
  hipError_t err = kiln_hip_api.hipMemPoolCreate(&pool, &props);
  if (err != hipSuccess) {
    st = kiln_hip_error(err, "hipMemPoolCreate (the stream-ordered pool) on "
                             "%s", ctx->base.properties.name);
  } else {
    /* The runtime's default threshold, 0, would hand every free block
     * back at each synchronize, and the next allocation would ask the
     * device again: keeping all is what makes a pool worth having. */
    st = set_threshold(&ctx->base, pool,
                       ctx->pool_keep_set ? ctx->pool_keep : UINT64_MAX);
    /* Memory released on one stream may go to another only once the
     * release is done, never by the runtime making the second stream
     * wait for the first: an allocation must not add a dependency
     * between streams that the program did not ask for (kiln.h). */
    int no = 0;
    if (st == KILN_OK &&
        (err = kiln_hip_api.hipMemPoolSetAttribute(
             pool, hipMemPoolReuseAllowInternalDependencies, &no)) !=
            hipSuccess)
      st = kiln_hip_error(err, "hipMemPoolSetAttribute(hipMemPoolReuse"
                               "AllowInternalDependencies, 0) on %s",
                          ctx->base.properties.name);
    if (st != KILN_OK) {
      err = kiln_hip_api.hipMemPoolDestroy(pool);
      if (err != hipSuccess) kiln_hip_warn(err, "hipMemPoolDestroy");
    }
  }
  kiln_hip_device_leave(&scope);
  if (st != KILN_OK) return st;
  atomic_store_explicit(&ctx->pool, pool, memory_order_release);
  *out = pool;
  return KILN_OK;
}

/* ctx's pool, made on first use. A pool that could not be made is tried
 * again by the next allocation. */
static kiln_status pool_of(kiln_hip_context *ctx, hipMemPool_t *out) {
  *out = atomic_load_explicit(&ctx->pool, memory_order_acquire);
  if (*out) return KILN_OK;
  pthread_mutex_lock(&pool_lock);
  kiln_status st = KILN_OK;
  *out = atomic_load_explicit(&ctx->pool, memory_order_relaxed);
  if (!*out) st = make_pool(ctx, out);
  pthread_mutex_unlock(&pool_lock);
  return st;
}

kiln_status kiln_hip_buffer_init_async(kiln_buffer *buf, kiln_stream *s,
                                       uint32_t flags) {
  kiln_hip_context *ctx = kiln_hip_context_cast(buf->base.context);
  hipMemPool_t pool = NULL;
  kiln_status st = kiln_hip_hold(s);
  if (st == KILN_OK) st = pool_of(ctx, &pool);
  if (st != KILN_OK) return st;
  hipStream_t stream = kiln_hip_stream_handle(s);
  void *ptr = NULL;
  hipError_t err =
      kiln_hip_api.hipMallocFromPoolAsync(&ptr, buf->size, pool, stream);
  bool trimmed = false;
  if (err == hipErrorOutOfMemory) {
    /* The free memory the pool keeps may be what the device lacks (for
     * this pool's next block, or for other allocations that took the
     * rest): give it all back and try once more. */
    hipError_t t = kiln_hip_api.hipMemPoolTrimTo(pool, 0);
    if (t == hipSuccess) {
      trimmed = true;
      err = kiln_hip_api.hipMallocFromPoolAsync(&ptr, buf->size, pool,
                                                stream);
    } else {
      kiln_hip_warn(t, "hipMemPoolTrimTo(0) after running out of memory");
    }
  }
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipMallocFromPoolAsync of %zu bytes on %s%s",
                          buf->size, ctx->base.properties.name,
                          trimmed ? " (tried again after the pool gave its "
                                    "free memory back to the device)"
                                  : "");
  if (flags & KILN_BUFFER_ZERO) {
    /* In s's order, as the memory itself is: work queued after it on s,
     * or on another stream after an event, sees the zeroes. */
    err = kiln_hip_api.hipMemsetD8Async(ptr, 0, buf->size, stream);
    if (err != hipSuccess) {
      st = kiln_hip_error(err, "zeroing a new %zu-byte buffer in stream "
                               "order (hipMemsetD8Async)", buf->size);
      err = kiln_hip_api.hipFreeAsync(ptr, stream);
      if (err != hipSuccess)
        kiln_hip_warn(err, "hipFreeAsync of a buffer that could not be "
                           "zeroed");
      return st;
    }
  }
  buf->device_address = (uint64_t)(uintptr_t)ptr;
  return KILN_OK;
}

kiln_status kiln_hip_buffer_deinit_async(kiln_buffer *buf, kiln_stream *s) {
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  hipError_t err = kiln_hip_api.hipFreeAsync(kiln_hip_buffer_ptr(buf, 0),
                                             kiln_hip_stream_handle(s));
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipFreeAsync of a %zu-byte buffer",
                          buf->size);
  return KILN_OK;
}

kiln_status kiln_hip_pool_trim(kiln_context *base, size_t keep_bytes) {
  hipMemPool_t pool = atomic_load_explicit(
      &kiln_hip_context_cast(base)->pool, memory_order_acquire);
  if (!pool) return KILN_OK;
  hipError_t err = kiln_hip_api.hipMemPoolTrimTo(pool, keep_bytes);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipMemPoolTrimTo(%zu bytes) of the "
                               "stream-ordered pool on %s",
                          keep_bytes, base->properties.name);
  return KILN_OK;
}

kiln_status kiln_hip_pool_usage(kiln_context *base, size_t *out_reserved,
                                size_t *out_used) {
  *out_reserved = 0;
  *out_used = 0;
  hipMemPool_t pool = atomic_load_explicit(
      &kiln_hip_context_cast(base)->pool, memory_order_acquire);
  if (!pool) return KILN_OK;
  uint64_t reserved = 0, used = 0;
  hipError_t err = kiln_hip_api.hipMemPoolGetAttribute(
      pool, hipMemPoolAttrReservedMemCurrent, &reserved);
  if (err == hipSuccess)
    err = kiln_hip_api.hipMemPoolGetAttribute(
        pool, hipMemPoolAttrUsedMemCurrent, &used);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipMemPoolGetAttribute (the stream-ordered "
                               "pool's usage) on %s", base->properties.name);
  *out_reserved = (size_t)reserved;
  *out_used = (size_t)used;
  return KILN_OK;
}

kiln_status kiln_hip_pool_set_keep(kiln_context *base, size_t keep_bytes) {
  kiln_hip_context *ctx = kiln_hip_context_cast(base);
  pthread_mutex_lock(&pool_lock);
  hipMemPool_t pool = atomic_load_explicit(&ctx->pool, memory_order_relaxed);
  kiln_status st = pool ? set_threshold(base, pool, keep_bytes) : KILN_OK;
  if (st == KILN_OK) {
    ctx->pool_keep = keep_bytes;
    ctx->pool_keep_set = true;
  }
  pthread_mutex_unlock(&pool_lock);
  return st;
}

/* hipMemPoolAttrUsedMemCurrent counts an allocation's bytes as
 * asked. */
size_t kiln_hip_buffer_pool_bytes(const kiln_buffer *buf) {
  return buf->size;
}

void kiln_hip_pool_deinit(kiln_context *base) {
  kiln_hip_context *ctx = kiln_hip_context_cast(base);
  hipMemPool_t pool = atomic_exchange(&ctx->pool, NULL);
  /* Work still running may use the pool's memory: keep it. */
  if (!pool || base->abandoned) return;
  kiln_hip_device_scope scope;
  if (!kiln_hip_device_enter_for_deinit(base, &scope, "destroying the "
                                        "stream-ordered pool"))
    return;
  /* Blocks whose frees are still queued go back to the device once those
   * are done: the runtime defers that part of the destroy. */
  hipError_t err = kiln_hip_api.hipMemPoolDestroy(pool);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess) kiln_hip_warn(err, "hipMemPoolDestroy");
}
