/* Events: a value on the timeline semaphore of the stream where the event
 * was recorded, plus a timestamp query for timing (none for an event made
 * with KILN_EVENT_NO_TIMING, whose record is then one submission). */
#include "backends/vulkan/vulkan.h"

kiln_status kiln_vulkan_event_init(kiln_event *e) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(e->base.context);
  kiln_vulkan_event *ve = kiln_vulkan_event_cast(e);
  if (vc->phys->timestamp_valid_bits == 0 || (e->flags & KILN_EVENT_NO_TIMING))
    return KILN_OK;
  VkQueryPoolCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
      .queryType = VK_QUERY_TYPE_TIMESTAMP,
      .queryCount = 1,
  };
  VkResult r = vc->vk.vkCreateQueryPool(vc->device, &info, NULL, &ve->queries);
  if (r != VK_SUCCESS) {
    ve->queries = VK_NULL_HANDLE;
    return kiln_vulkan_error(r, "vkCreateQueryPool");
  }
  return KILN_OK;
}

/* Waits at most timeout_ns (KILN_WAIT_FOREVER: no limit) for the timeline
 * to reach `value`, as the context's policy says unless `block`. */
static kiln_status wait_timeline(kiln_vulkan_context *vc,
                                 kiln_vulkan_timeline *tl, uint64_t value,
                                 uint64_t timeout_ns, bool block) {
  return kiln_vulkan_wait_semaphore(vc, tl->semaphore, value,
                                    "the event's work", timeout_ns, block);
}

/* KILN_OK once the event's mark is reached, KILN_ERROR_NOT_READY before. */
static kiln_status reached(kiln_vulkan_context *vc,
                           const kiln_vulkan_event *ve) {
  if (!ve->timeline) return KILN_OK;
  uint64_t value = 0;
  VkResult r = vc->vk.vkGetSemaphoreCounterValue(
      vc->device, ve->timeline->semaphore, &value);
  if (r != VK_SUCCESS)
    return kiln_vulkan_error(r, "vkGetSemaphoreCounterValue");
  return value >= ve->value ? KILN_OK : KILN_ERROR_NOT_READY;
}

void kiln_vulkan_event_deinit(kiln_event *e) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(e->base.context);
  kiln_vulkan_event *ve = kiln_vulkan_event_cast(e);
  if (ve->timeline) {
    /* The timestamp write may still be pending (the core has waited within
     * its bound already). */
    if (wait_timeline(vc, ve->timeline, ve->value, KILN_WAIT_FOREVER,
                      false) != KILN_OK)
      kiln_log(KILN_LOG_WARN, "vulkan: waiting for an event before "
               "destroying it failed: %s", kiln_last_error());
    kiln_vulkan_timeline_release(vc, ve->timeline);
  }
  if (ve->queries) vc->vk.vkDestroyQueryPool(vc->device, ve->queries, NULL);
}

kiln_status kiln_vulkan_event_record(kiln_event *e, kiln_stream *s) {
  kiln_vulkan_event *ve = kiln_vulkan_event_cast(e);
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_context *vc = st->ctx;
  if (s->building) return kiln_vulkan_graph_note_event(s, e, true);
  kiln_status status = KILN_OK;
  kiln_vulkan_stream_lock(st);
  /* Recorded before on another queue's stream: its timestamp write must be
   * done before this one resets the query. On the same stream, submission
   * order already keeps them apart. */
  if (ve->queries && ve->timeline && ve->timeline != st->timeline)
    status = wait_timeline(vc, ve->timeline, ve->value,
                           vc->base.sync_timeout_ns, false);
  VkCommandBuffer cmd;
  if (status == KILN_OK && ve->queries &&
      (status = kiln_vulkan_stream_open(st, &cmd)) == KILN_OK) {
    vc->vk.vkCmdResetQueryPool(cmd, ve->queries, 0, 1);
    vc->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                               ve->queries, 0);
  }
  /* The mark is a submitted value, so that any thread may wait for it. */
  if (status == KILN_OK) status = kiln_vulkan_stream_flush(st);
  if (status == KILN_OK) {
    atomic_fetch_add(&st->timeline->refs, 1);
    if (ve->timeline) kiln_vulkan_timeline_release(vc, ve->timeline);
    ve->timeline = st->timeline;
    ve->value = st->submitted;
  }
  kiln_vulkan_stream_unlock(st);
  return status;
}

kiln_status kiln_vulkan_stream_wait_event(kiln_stream *s, kiln_event *e) {
  kiln_vulkan_event *ve = kiln_vulkan_event_cast(e);
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  if (s->building) return kiln_vulkan_graph_note_event(s, e, false);
  /* The stream's own mark: its order already holds. */
  if (!ve->timeline || ve->timeline == st->timeline) return KILN_OK;
  kiln_status status = reached(st->ctx, ve);
  if (status != KILN_ERROR_NOT_READY) return status;
  kiln_vulkan_stream_lock(st);
  /* What was recorded before the wait need not wait. */
  status = kiln_vulkan_stream_flush(st);
  if (status == KILN_OK)
    status = kiln_vulkan_stream_add_wait(st, ve->timeline, ve->value);
  kiln_vulkan_stream_unlock(st);
  return status;
}

kiln_status kiln_vulkan_event_synchronize(kiln_event *e, uint64_t timeout_ns) {
  kiln_vulkan_event *ve = kiln_vulkan_event_cast(e);
  if (!ve->timeline) return KILN_OK;
  return wait_timeline(kiln_vulkan_context_cast(e->base.context), ve->timeline,
                       ve->value, timeout_ns, e->flags & KILN_EVENT_BLOCKING);
}

/* A query of the program's: under KILN_DEBUG=reorder the event's work is
 * made first, or a program that polls would wait for it for good. */
static kiln_status reached_for_program(kiln_vulkan_context *vc,
                                       const kiln_vulkan_event *ve) {
  if (vc->reorder.on && ve->timeline) {
    kiln_status s = kiln_vulkan_release(vc, ve->timeline->semaphore, ve->value);
    if (s != KILN_OK) return s;
  }
  return reached(vc, ve);
}

kiln_status kiln_vulkan_event_query(kiln_event *e) {
  return reached_for_program(kiln_vulkan_context_cast(e->base.context),
                             kiln_vulkan_event_cast(e));
}

static kiln_status timestamp(kiln_vulkan_context *vc,
                             const kiln_vulkan_event *ve, uint64_t *out) {
  VkResult r =
      vc->vk.vkGetQueryPoolResults(vc->device, ve->queries, 0, 1, sizeof *out,
                                   out, sizeof *out, VK_QUERY_RESULT_64_BIT);
  if (r == VK_NOT_READY)
    return kiln_set_error(KILN_ERROR_NOT_READY,
                          "kiln_event_elapsed_ms: the event's timestamp is "
                          "not available yet");
  return r == VK_SUCCESS ? KILN_OK
                         : kiln_vulkan_error(r, "vkGetQueryPoolResults");
}

kiln_status kiln_vulkan_event_elapsed_ms(kiln_event *start, kiln_event *end,
                                         float *out_ms) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(start->base.context);
  kiln_vulkan_event *a = kiln_vulkan_event_cast(start);
  kiln_vulkan_event *b = kiln_vulkan_event_cast(end);
  if (!a->queries)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "kiln_event_elapsed_ms: the Vulkan device's compute "
                          "queue has no timestamps (timestampValidBits 0)");
  kiln_status st = reached_for_program(vc, a);
  if (st == KILN_OK) st = reached_for_program(vc, b);
  if (st == KILN_ERROR_NOT_READY)
    return kiln_set_error(KILN_ERROR_NOT_READY,
                          "kiln_event_elapsed_ms: an event has not completed");
  if (st != KILN_OK) return st;
  uint64_t t0, t1;
  if ((st = timestamp(vc, a, &t0)) != KILN_OK ||
      (st = timestamp(vc, b, &t1)) != KILN_OK)
    return st;
  uint32_t bits = vc->phys->timestamp_valid_bits;
  uint64_t mask = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  uint64_t ticks = (t1 - t0) & mask;
  double sign = 1.0;
  /* An end reached before its start gives a negative time, as kiln.h
   * promises on every backend. */
  if (ticks > mask / 2) {
    ticks = (t0 - t1) & mask;
    sign = -1.0;
  }
  double ns = (double)ticks * vc->phys->limits.timestampPeriod;
  *out_ms = (float)(sign * ns / 1e6);
  return KILN_OK;
}
