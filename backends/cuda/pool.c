/* Stream-ordered allocation: buffers made and released on a stream, from a
 * CUmemoryPool of the context's own (cuMemPoolCreate) rather than the
 * device's default pool. The default pool is the whole process's: a CUDA
 * runtime program beside kiln allocates from it with cudaMallocAsync, and
 * kiln's release threshold and trims would change how much memory that
 * program keeps. The pool is made by the first allocation, so a context
 * that never allocates in stream order costs the device nothing.
 *
 * The allocation and the release are the paths whose cost counts (issue
 * 29: within 1.2 times of the driver's own calls): each is the gate check
 * every op makes, the current-context check, one atomic load of the pool
 * and the driver's call. */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "backends/cuda/cuda.h"

/* Guards the making of every context's pool and the threshold it gets.
 * One lock serves all contexts: each takes it once to make its pool, and
 * again only to change the threshold, never on the allocation's path. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* The first pool entry point the driver lacks, or NULL. */
static const char *missing_entry_point(void) {
#define KILN_CUDA_MISSING(name, version) \
  if (!kiln_cuda_api.name) return #name;
  KILN_CUDA_POOL_SYMBOLS(KILN_CUDA_MISSING)
#undef KILN_CUDA_MISSING
  return NULL;
}

kiln_status kiln_cuda_pool_supported(kiln_context *base) {
  const char *missing = missing_entry_point();
  if (missing)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "stream-ordered allocation needs %s of CUDA 11.2, "
                          "which the CUDA driver (%d.%d) lacks",
                          missing, kiln_cuda_api.driver_version / 1000,
                          kiln_cuda_api.driver_version % 1000 / 10);
  int pools = 0;
  CUresult r = kiln_cuda_api.cuDeviceGetAttribute(
      &pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
      kiln_cuda_context_cast(base)->device);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuDeviceGetAttribute(MEMORY_POOLS_SUPPORTED) "
                              "on %s", base->properties.name);
  if (!pools)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "%s has no memory pools "
                          "(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0), "
                          "so the CUDA driver cannot allocate in stream "
                          "order on it",
                          base->properties.name);
  return KILN_OK;
}

static kiln_status set_threshold(const kiln_context *ctx, CUmemoryPool pool,
                                 uint64_t keep) {
  cuuint64_t value = keep;
  CUresult r = kiln_cuda_api.cuMemPoolSetAttribute(
      pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &value);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r,
                           "cuMemPoolSetAttribute(RELEASE_THRESHOLD, %" PRIu64
                           " bytes) of the stream-ordered pool on %s",
                           keep, ctx->properties.name);
  return KILN_OK;
}

/* Makes ctx's pool, under pool_lock; ctx is current. */
static kiln_status make_pool(kiln_cuda_context *ctx, CUmemoryPool *out) {
  kiln_status st = kiln_cuda_pool_supported(&ctx->base);
  if (st != KILN_OK) return st;
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = (int)ctx->device;
  CUmemoryPool pool = NULL;
  CUresult r = kiln_cuda_api.cuMemPoolCreate(&pool, &props);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemPoolCreate (the stream-ordered pool) on "
                              "%s", ctx->base.properties.name);
  /* The driver's default threshold, 0, would hand every free block back
   * at each synchronize, and the next allocation would ask the device
   * again: keeping all is what makes a pool worth having. */
  st = set_threshold(&ctx->base, pool,
                     ctx->pool_keep_set ? ctx->pool_keep : UINT64_MAX);
  /* Memory released on one stream may go to another only once the
   * release is done, never by the driver making the second stream wait
   * for the first: an allocation must not add a dependency between
   * streams that the program did not ask for (kiln.h). */
  int no = 0;
  if (st == KILN_OK &&
      (r = kiln_cuda_api.cuMemPoolSetAttribute(
           pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &no)) !=
          CUDA_SUCCESS)
    st = kiln_cuda_error(r, "cuMemPoolSetAttribute(REUSE_ALLOW_INTERNAL_"
                            "DEPENDENCIES, 0) on %s",
                         ctx->base.properties.name);
  if (st != KILN_OK) {
    r = kiln_cuda_api.cuMemPoolDestroy(pool);
    if (r != CUDA_SUCCESS) kiln_cuda_warn(r, "cuMemPoolDestroy");
    return st;
  }
  atomic_store_explicit(&ctx->pool, pool, memory_order_release);
  *out = pool;
  return KILN_OK;
}

/* ctx's pool, made on first use; ctx is current. A pool that could not be
 * made is tried again by the next allocation. */
static kiln_status pool_of(kiln_cuda_context *ctx, CUmemoryPool *out) {
  *out = atomic_load_explicit(&ctx->pool, memory_order_acquire);
  if (*out) return KILN_OK;
  pthread_mutex_lock(&pool_lock);
  kiln_status st = KILN_OK;
  *out = atomic_load_explicit(&ctx->pool, memory_order_relaxed);
  if (!*out) st = make_pool(ctx, out);
  pthread_mutex_unlock(&pool_lock);
  return st;
}

kiln_status kiln_cuda_buffer_init_async(kiln_buffer *buf, kiln_stream *s,
                                        uint32_t flags) {
  kiln_cuda_context *ctx = kiln_cuda_context_cast(buf->base.context);
  CUmemoryPool pool = NULL;
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(&ctx->base);
  if (st == KILN_OK) st = pool_of(ctx, &pool);
  if (st != KILN_OK) return st;
  CUstream stream = kiln_cuda_stream_cast(s)->handle;
  CUdeviceptr ptr = 0;
  CUresult r =
      kiln_cuda_api.cuMemAllocFromPoolAsync(&ptr, buf->size, pool, stream);
  bool trimmed = false;
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    /* The free memory the pool keeps may be what the device lacks (for
     * this pool's next block, or for other allocations that took the
     * rest): give it all back and try once more. */
    CUresult t = kiln_cuda_api.cuMemPoolTrimTo(pool, 0);
    if (t == CUDA_SUCCESS) {
      trimmed = true;
      r = kiln_cuda_api.cuMemAllocFromPoolAsync(&ptr, buf->size, pool,
                                                stream);
    } else {
      kiln_cuda_warn(t, "cuMemPoolTrimTo(0) after running out of memory");
    }
  }
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemAllocFromPoolAsync of %zu bytes on %s%s",
                           buf->size, ctx->base.properties.name,
                           trimmed ? " (tried again after the pool gave its "
                                     "free memory back to the device)"
                                   : "");
  if (flags & KILN_BUFFER_ZERO) {
    /* In s's order, as the memory itself is: work queued after it on s,
     * or on another stream after an event, sees the zeroes. */
    r = kiln_cuda_api.cuMemsetD8Async(ptr, 0, buf->size, stream);
    if (r != CUDA_SUCCESS) {
      st = kiln_cuda_error(r, "zeroing a new %zu-byte buffer in stream order "
                              "(cuMemsetD8Async)", buf->size);
      r = kiln_cuda_api.cuMemFreeAsync(ptr, stream);
      if (r != CUDA_SUCCESS)
        kiln_cuda_warn(r, "cuMemFreeAsync of a buffer that could not be "
                          "zeroed");
      return st;
    }
  }
  buf->device_address = (uint64_t)ptr;
  return KILN_OK;
}

kiln_status kiln_cuda_buffer_deinit_async(kiln_buffer *buf, kiln_stream *s) {
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(s->base.context);
  if (st != KILN_OK) return st;
  CUresult r = kiln_cuda_api.cuMemFreeAsync(kiln_cuda_address(buf, 0),
                                            kiln_cuda_stream_cast(s)->handle);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemFreeAsync of a %zu-byte buffer",
                           buf->size);
  return KILN_OK;
}

kiln_status kiln_cuda_pool_trim(kiln_context *base, size_t keep_bytes) {
  CUmemoryPool pool = atomic_load_explicit(
      &kiln_cuda_context_cast(base)->pool, memory_order_acquire);
  if (!pool) return KILN_OK;
  kiln_status st = kiln_cuda_make_current(base);
  if (st != KILN_OK) return st;
  CUresult r = kiln_cuda_api.cuMemPoolTrimTo(pool, keep_bytes);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemPoolTrimTo(%zu bytes) of the "
                              "stream-ordered pool on %s",
                           keep_bytes, base->properties.name);
  return KILN_OK;
}

kiln_status kiln_cuda_pool_usage(kiln_context *base, size_t *out_reserved,
                                 size_t *out_used) {
  *out_reserved = 0;
  *out_used = 0;
  CUmemoryPool pool = atomic_load_explicit(
      &kiln_cuda_context_cast(base)->pool, memory_order_acquire);
  if (!pool) return KILN_OK;
  kiln_status st = kiln_cuda_make_current(base);
  if (st != KILN_OK) return st;
  cuuint64_t reserved = 0, used = 0;
  CUresult r = kiln_cuda_api.cuMemPoolGetAttribute(
      pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
  if (r == CUDA_SUCCESS)
    r = kiln_cuda_api.cuMemPoolGetAttribute(
        pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuMemPoolGetAttribute (the stream-ordered "
                              "pool's usage) on %s", base->properties.name);
  *out_reserved = (size_t)reserved;
  *out_used = (size_t)used;
  return KILN_OK;
}

kiln_status kiln_cuda_pool_set_keep(kiln_context *base, size_t keep_bytes) {
  kiln_cuda_context *ctx = kiln_cuda_context_cast(base);
  pthread_mutex_lock(&pool_lock);
  CUmemoryPool pool = atomic_load_explicit(&ctx->pool, memory_order_relaxed);
  kiln_status st = KILN_OK;
  if (pool && (st = kiln_cuda_make_current(base)) == KILN_OK)
    st = set_threshold(base, pool, keep_bytes);
  if (st == KILN_OK) {
    ctx->pool_keep = keep_bytes;
    ctx->pool_keep_set = true;
  }
  pthread_mutex_unlock(&pool_lock);
  return st;
}

/* CU_MEMPOOL_ATTR_USED_MEM_CURRENT counts an allocation's bytes as
 * asked. */
size_t kiln_cuda_buffer_pool_bytes(const kiln_buffer *buf) {
  return buf->size;
}

void kiln_cuda_pool_deinit(kiln_context *base) {
  kiln_cuda_context *ctx = kiln_cuda_context_cast(base);
  CUmemoryPool pool = atomic_exchange(&ctx->pool, NULL);
  /* Work still running may use the pool's memory: keep it. */
  if (!pool || base->abandoned) return;
  kiln_cuda_make_current_for_deinit(base, "destroying the stream-ordered "
                                          "pool");
  /* Blocks whose frees are still queued go back to the device once those
   * are done: the driver defers that part of the destroy. */
  CUresult r = kiln_cuda_api.cuMemPoolDestroy(pool);
  if (r != CUDA_SUCCESS) kiln_cuda_warn(r, "cuMemPoolDestroy");
}
