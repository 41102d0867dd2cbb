/* Streams: their creation on a queue and their teardown, and the waits for
 * every stream of a context. What a stream records and submits is
 * submit.c's. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

static kiln_status create_pool(kiln_vulkan_context *vc, uint32_t family,
                               VkCommandPool *out) {
  VkCommandPoolCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
      .queueFamilyIndex = family,
  };
  VkResult r = vc->vk.vkCreateCommandPool(vc->device, &info, NULL, out);
  return r == VK_SUCCESS ? KILN_OK
                         : kiln_vulkan_error(r, "vkCreateCommandPool");
}

/* Destroying a pool frees its command buffers. */
static void destroy_lanes(kiln_vulkan_stream *st) {
  for (int i = 0; i < 2; i++) {
    if (st->lanes[i].pool)
      st->ctx->vk.vkDestroyCommandPool(st->ctx->device, st->lanes[i].pool,
                                       NULL);
    free(st->lanes[i].spare);
    memset(&st->lanes[i], 0, sizeof st->lanes[i]);
  }
}

kiln_status kiln_vulkan_stream_setup(kiln_vulkan_context *vc,
                                     kiln_vulkan_stream *st,
                                     kiln_vulkan_queue *queue) {
  st->ctx = vc;
  if (pthread_mutex_init(&st->lock, NULL) != 0)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for a Vulkan stream");
  kiln_vulkan_lane_state *compute = &st->lanes[KILN_VULKAN_LANE_COMPUTE];
  kiln_vulkan_lane_state *transfer = &st->lanes[KILN_VULKAN_LANE_TRANSFER];
  compute->queue = queue;
  kiln_status s = create_pool(vc, vc->phys->queue_family, &compute->pool);
  if (s == KILN_OK && vc->queues.transfer_family != UINT32_MAX) {
    transfer->queue =
        vc->queues.transfer_count > 0
            ? &vc->queues
                   .transfer[atomic_fetch_add(&vc->queues.next_transfer, 1) %
                             vc->queues.transfer_count]
            : queue;
    s = create_pool(vc, vc->queues.transfer_family, &transfer->pool);
  }
  if (s == KILN_OK) s = kiln_vulkan_timeline_create(vc, &st->timeline);
  if (s != KILN_OK) {
    destroy_lanes(st);
    pthread_mutex_destroy(&st->lock);
    return s;
  }
  pthread_mutex_lock(&vc->streams.lock);
  st->next = vc->streams.list;
  if (vc->streams.list) vc->streams.list->prev = st;
  vc->streams.list = st;
  pthread_mutex_unlock(&vc->streams.lock);
  return KILN_OK;
}

void kiln_vulkan_stream_teardown(kiln_vulkan_stream *st) {
  kiln_vulkan_context *vc = st->ctx;
  pthread_mutex_lock(&vc->streams.lock);
  if (st->prev)
    st->prev->next = st->next;
  else
    vc->streams.list = st->next;
  if (st->next) st->next->prev = st->prev;
  pthread_mutex_unlock(&vc->streams.lock);

  kiln_vulkan_stream_lock(st);
  /* The core has waited within its bound before any destroy, so what is
   * left is waited for in full: nothing may be freed while in use. */
  kiln_status s = kiln_vulkan_stream_flush(st);
  if (s == KILN_OK)
    s = kiln_vulkan_stream_wait_for(st, st->submitted, KILN_WAIT_FOREVER);
  if (s != KILN_OK) {
    /* The device is gone; nothing it held can still be in use. */
    kiln_log(KILN_LOG_WARN, "vulkan: waiting for a stream before destroying "
             "it failed: %s", kiln_last_error());
    VkResult r = vc->vk.vkDeviceWaitIdle(vc->device);
    if (r != VK_SUCCESS)
      kiln_vulkan_warn(r, "vkDeviceWaitIdle before destroying a stream");
    st->completed = st->submitted;
    kiln_vulkan_stream_discard(st);
    if (vc->reorder.on) kiln_vulkan_forget_held(vc, st->timeline->semaphore);
  }
  kiln_vulkan_stream_unlock(st);
  /* Its writes are done: nobody needs to wait for them any more. */
  kiln_vulkan_release_writes(vc, st->timeline);
  kiln_vulkan_stream_set_busy(st, false);
  kiln_vulkan_staging_release(st);
  destroy_lanes(st);
  free(st->inflight);
  free(st->waits);
  kiln_vulkan_memory_forget_timeline(vc, st->timeline);
  kiln_vulkan_timeline_release(vc, st->timeline);
  pthread_mutex_destroy(&st->lock);
}

kiln_status kiln_vulkan_stream_init(kiln_stream *s) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(s->base.context);
  /* Priority 1 (possible only with two queues or more): the last queue,
   * created with the higher queue priority; the rest share the others. */
  unsigned normal =
      vc->queues.compute_count >= 2 ? vc->queues.compute_count - 1 : 1;
  unsigned i = s->priority > 0
                   ? vc->queues.compute_count - 1
                   : atomic_fetch_add(&vc->queues.next_compute, 1) % normal;
  return kiln_vulkan_stream_setup(vc, kiln_vulkan_stream_cast(s),
                                  &vc->queues.compute[i]);
}

void kiln_vulkan_stream_deinit(kiln_stream *s) {
  kiln_vulkan_stream_teardown(kiln_vulkan_stream_cast(s));
}

kiln_status kiln_vulkan_stream_synchronize(kiln_stream *s,
                                           uint64_t timeout_ns) {
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_stream_lock(st);
  kiln_status status = kiln_vulkan_stream_flush(st);
  if (status == KILN_OK)
    status = kiln_vulkan_stream_wait_for(st, st->submitted, timeout_ns);
  kiln_vulkan_stream_unlock(st);
  return status;
}

static kiln_status quiesce(kiln_vulkan_context *vc, uint64_t timeout_ns) {
  const uint64_t start = kiln_now_ns();
  kiln_status result = KILN_OK;
  pthread_mutex_lock(&vc->streams.lock);
  /* Submit everywhere first so that the streams finish together. */
  for (kiln_vulkan_stream *st = vc->streams.list; st; st = st->next) {
    kiln_vulkan_stream_lock(st);
    kiln_status s = kiln_vulkan_stream_flush(st);
    kiln_vulkan_stream_unlock(st);
    if (result == KILN_OK) result = s;
  }
  /* At once, the stream held last first, rather than in the list's order
   * by the waits below. */
  if (vc->reorder.on) {
    kiln_status s = kiln_vulkan_release_all(vc);
    if (result == KILN_OK) result = s;
  }
  for (kiln_vulkan_stream *st = vc->streams.list; st; st = st->next) {
    uint64_t waited = kiln_now_ns() - start, left = KILN_WAIT_FOREVER;
    if (timeout_ns != KILN_WAIT_FOREVER)
      left = waited < timeout_ns ? timeout_ns - waited : 0;
    kiln_vulkan_stream_lock(st);
    kiln_status s = kiln_vulkan_stream_wait_for(st, st->submitted, left);
    kiln_vulkan_stream_unlock(st);
    if (result == KILN_OK) result = s;
  }
  pthread_mutex_unlock(&vc->streams.lock);
  return result;
}

void kiln_vulkan_quiesce_for_deinit(kiln_vulkan_context *vc,
                                    const char *what) {
  if (quiesce(vc, KILN_WAIT_FOREVER) != KILN_OK)
    kiln_log(KILN_LOG_WARN, "vulkan: waiting for the device before %s "
             "failed: %s", what, kiln_last_error());
}

kiln_status kiln_vulkan_context_synchronize(kiln_context *ctx,
                                            uint64_t timeout_ns) {
  return quiesce(kiln_vulkan_context_cast(ctx), timeout_ns);
}
