/* Streams: commands recorded into a command buffer and submitted in
 * batches, a timeline semaphore per stream counting the submissions, and
 * the barriers that keep each stream in order. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

/* A batch is submitted when it holds this many commands: submissions cost
 * microseconds each, so many small dispatches must share one... */
#define BATCH_COMMANDS 256
/* ...but a stream with nothing in flight submits its first command at
 * once, and again after this many, so that its work starts without
 * waiting for the host's next synchronize (which may be another stream's:
 * two streams then run side by side, as CUDA's do). */
#define EAGER_COMMANDS 16
/* Recording blocks once this many submissions are pending, as a CUDA
 * stream does when its queue is full, so memory stays bounded. */
#define MAX_INFLIGHT 64

static kiln_status timeline_create(kiln_vulkan_context *vc,
                                   kiln_vulkan_timeline **out) {
  kiln_vulkan_timeline *tl = calloc(1, sizeof *tl);
  if (!tl)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory creating a Vulkan stream");
  VkSemaphoreTypeCreateInfo type = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
      .initialValue = 0,
  };
  VkSemaphoreCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
  VkResult r =
      vc->vk.vkCreateSemaphore(vc->device, &info, NULL, &tl->semaphore);
  if (r != VK_SUCCESS) {
    free(tl);
    return kiln_vulkan_error(r, "vkCreateSemaphore");
  }
  atomic_init(&tl->refs, 1);
  *out = tl;
  return KILN_OK;
}

/* The semaphore's last signal may be seen before the driver is done with
 * it: Mesa's timeline emulation (lavapipe 22.3) still locks the
 * semaphore's mutex to release the signalled point after a waiter can see
 * the value, and destroying it then was a use after free in the driver's
 * queue thread (the conformance suite's context teardowns, 1 run in about
 * 7 on lavapipe). Every queue is drained first; this runs only when a
 * timeline's last user lets go, after its stream is destroyed. */
static void drain_queue(kiln_vulkan_context *vc, kiln_vulkan_queue *q) {
  pthread_mutex_lock(&q->lock);
  VkResult r = vc->vk.vkQueueWaitIdle(q->handle);
  pthread_mutex_unlock(&q->lock);
  if (r != VK_SUCCESS)
    kiln_vulkan_warn(r, "vkQueueWaitIdle before destroying a semaphore");
}

static void drain_queues(kiln_vulkan_context *vc) {
  for (uint32_t i = 0; i < vc->queue_count; i++)
    drain_queue(vc, &vc->queues[i]);
  for (uint32_t i = 0; i < vc->transfer_count; i++)
    drain_queue(vc, &vc->transfer[i]);
}

void kiln_vulkan_timeline_release(kiln_vulkan_context *vc,
                                  kiln_vulkan_timeline *tl) {
  if (tl && atomic_fetch_sub(&tl->refs, 1) == 1) {
    if (!tl->foreign) {
      drain_queues(vc);
      vc->vk.vkDestroySemaphore(vc->device, tl->semaphore, NULL);
    }
    free(tl);
  }
}

static void release_waits(kiln_vulkan_context *vc, kiln_vulkan_wait *waits,
                          uint32_t count) {
  for (uint32_t i = 0; i < count; i++)
    kiln_vulkan_timeline_release(vc, waits[i].timeline);
}

void kiln_vulkan_stream_lock(kiln_vulkan_stream *st) {
  pthread_mutex_lock(&st->lock);
}

void kiln_vulkan_stream_unlock(kiln_vulkan_stream *st) {
  pthread_mutex_unlock(&st->lock);
}

static void set_busy(kiln_vulkan_stream *st, bool busy) {
  if (st->busy == busy) return;
  st->busy = busy;
  atomic_fetch_add(&st->ctx->busy_streams, busy ? 1 : -1);
}

static void retire(kiln_vulkan_stream *st) {
  kiln_vulkan_context *vc = st->ctx;
  while (st->inflight_count > 0) {
    kiln_vulkan_batch *b = &st->inflight[st->inflight_first];
    if (b->value > st->completed) break;
    kiln_vulkan_lane_state *ls = &st->lanes[b->lane];
    if (b->cmd) ls->spare[ls->spare_count++] = b->cmd;
    release_waits(vc, b->waits, b->wait_count);
    free(b->waits);
    st->inflight_first = (st->inflight_first + 1) % st->inflight_cap;
    st->inflight_count--;
  }
  kiln_vulkan_staging_retire(st);
  if (!st->cmd && st->wait_count == 0 && st->completed >= st->submitted)
    set_busy(st, false);
}

kiln_status kiln_vulkan_stream_poll(kiln_vulkan_stream *st) {
  if (st->completed < st->submitted) {
    uint64_t value = 0;
    VkResult r = st->ctx->vk.vkGetSemaphoreCounterValue(
        st->ctx->device, st->timeline->semaphore, &value);
    if (r != VK_SUCCESS)
      return kiln_vulkan_error(r, "vkGetSemaphoreCounterValue");
    st->completed = value;
  }
  retire(st);
  return KILN_OK;
}

/* How long one vkWaitSemaphores may block, or polling go on, before kiln
 * asks whether the device was lost: NVIDIA's driver reports a kernel's
 * fault to a submission only, and a wait for the faulted work would never
 * end. */
#define LOST_PROBE_NS UINT64_C(250000000)

/* KILN_ERROR_DEVICE_LOST in words if an empty submission, which reports a
 * lost device without waiting, says so; else KILN_OK. A queue busy in
 * another thread (perhaps in vkQueueWaitIdle, which may itself never end
 * on a faulted device) is left alone: the next slice asks again. */
static kiln_status probe_lost(kiln_vulkan_context *vc, const char *what) {
  if (pthread_mutex_trylock(&vc->queues[0].lock) != 0) return KILN_OK;
  VkResult r =
      vc->vk.vkQueueSubmit(vc->queues[0].handle, 0, NULL, VK_NULL_HANDLE);
  pthread_mutex_unlock(&vc->queues[0].lock);
  if (r == VK_ERROR_DEVICE_LOST)
    return kiln_vulkan_error(r, "vkQueueSubmit, while waiting for %s", what);
  return KILN_OK;
}

/* Sleeps in the driver until the semaphore reaches `value` (VK_SUCCESS) or
 * timeout_ns pass (VK_TIMEOUT). */
static VkResult sleep_for(kiln_vulkan_context *vc, VkSemaphore semaphore,
                          uint64_t value, uint64_t timeout_ns) {
  VkSemaphoreWaitInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .semaphoreCount = 1,
      .pSemaphores = &semaphore,
      .pValues = &value,
  };
  return vc->vk.vkWaitSemaphores(vc->device, &info, timeout_ns);
}

/* Looks at the semaphore until it reaches `value` (VK_SUCCESS) or
 * budget_ns pass (VK_TIMEOUT), yielding the core between looks or not.
 * The counter is read first, so a wait for finished work costs one call. */
static VkResult poll_for(kiln_vulkan_context *vc, VkSemaphore semaphore,
                         uint64_t value, uint64_t budget_ns, bool yield) {
  const uint64_t start = kiln_now_ns();
  for (;;) {
    uint64_t now_value = 0;
    VkResult r =
        vc->vk.vkGetSemaphoreCounterValue(vc->device, semaphore, &now_value);
    if (r != VK_SUCCESS || now_value >= value) return r;
    if (kiln_now_ns() - start >= budget_ns) return VK_TIMEOUT;
    if (yield) sched_yield();
  }
}

kiln_status kiln_vulkan_wait_semaphore(kiln_vulkan_context *vc,
                                       VkSemaphore semaphore, uint64_t value,
                                       const char *what, uint64_t timeout_ns,
                                       bool block) {
  const uint64_t start = kiln_now_ns();
  /* Every wait of the host is one that held work must not block. */
  if (vc->reorder) {
    kiln_status s = kiln_vulkan_release(vc, semaphore, value);
    if (s != KILN_OK) return s;
  }
  const kiln_sync_policy policy = block ? KILN_SYNC_BLOCK : vc->base.sync;
  const bool polls = policy == KILN_SYNC_SPIN || policy == KILN_SYNC_YIELD;
  /* auto: spin a little first, for the latency of short waits. */
  if (policy == KILN_SYNC_AUTO) {
    const uint64_t spin = timeout_ns < KILN_SYNC_AUTO_SPIN_NS
                              ? timeout_ns
                              : KILN_SYNC_AUTO_SPIN_NS;
    VkResult r = poll_for(vc, semaphore, value, spin, false);
    if (r == VK_SUCCESS) return KILN_OK;
    if (r != VK_TIMEOUT)
      return kiln_vulkan_error(r, "vkGetSemaphoreCounterValue");
  }
  for (;;) {
    /* The semaphore is looked at before the deadline is: work done long
     * ago meets a bound of 0, or one already spent, with success. */
    const uint64_t spent = kiln_now_ns() - start;
    const uint64_t left = timeout_ns == KILN_WAIT_FOREVER ? KILN_WAIT_FOREVER
                          : spent < timeout_ns            ? timeout_ns - spent
                                                          : 0;
    const uint64_t slice = left < LOST_PROBE_NS ? left : LOST_PROBE_NS;
    VkResult r = polls ? poll_for(vc, semaphore, value, slice,
                                  policy == KILN_SYNC_YIELD)
                       : sleep_for(vc, semaphore, value, slice);
    if (r == VK_SUCCESS) return KILN_OK;
    if (r != VK_TIMEOUT)
      return kiln_vulkan_error(r, "%s", polls ? "vkGetSemaphoreCounterValue"
                                              : "vkWaitSemaphores");
    const uint64_t waited = kiln_now_ns() - start;
    if (timeout_ns != KILN_WAIT_FOREVER && waited >= timeout_ns)
      return kiln_set_error(KILN_ERROR_TIMEOUT,
                            "%s was still running after %.1f ms", what,
                            (double)waited / 1e6);
    kiln_status st = probe_lost(vc, what);
    if (st != KILN_OK) return st;
  }
}

kiln_status kiln_vulkan_stream_wait_for(kiln_vulkan_stream *st,
                                        uint64_t value, uint64_t timeout_ns) {
  if (value > st->submitted) {
    kiln_status s = kiln_vulkan_stream_flush(st);
    if (s != KILN_OK) return s;
  }
  if (st->completed < value) {
    kiln_status s =
        kiln_vulkan_wait_semaphore(st->ctx, st->timeline->semaphore, value,
                                   "the stream's work", timeout_ns, false);
    if (s != KILN_OK) return s;
    /* Reached: no need to ask the driver again. */
    st->completed = value;
  }
  retire(st);
  return KILN_OK;
}

kiln_status kiln_vulkan_stream_wait(kiln_vulkan_stream *st, uint64_t value) {
  return kiln_vulkan_stream_wait_for(st, value,
                                     st->ctx->base.sync_timeout_ns);
}

kiln_status kiln_vulkan_stream_finish(kiln_vulkan_stream *st) {
  kiln_status s = kiln_vulkan_stream_flush(st);
  if (s != KILN_OK) return s;
  return kiln_vulkan_stream_wait(st, st->submitted);
}

/* The array, reallocated if needed so that `more` entries fit after
 * `count`; NULL (and the array untouched) when out of memory. */
static void *grow(void *array, size_t *cap, size_t count, size_t more,
                  size_t size) {
  if (count + more <= *cap) return array;
  size_t n = *cap ? *cap * 2 : 8;
  while (n < count + more) n *= 2;
  void *p = realloc(array, n * size);
  if (p) *cap = n;
  return p;
}

/* The stages and accesses of the open batch's lane: a transfer queue
 * has no compute stage. */
static VkPipelineStageFlags lane_stages(const kiln_vulkan_stream *st) {
  return st->lane == KILN_VULKAN_LANE_TRANSFER
             ? VK_PIPELINE_STAGE_TRANSFER_BIT
             : VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
                   VK_PIPELINE_STAGE_TRANSFER_BIT;
}

static VkAccessFlags lane_writes(const kiln_vulkan_stream *st) {
  return st->lane == KILN_VULKAN_LANE_TRANSFER
             ? VK_ACCESS_TRANSFER_WRITE_BIT
             : VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
}

/* Orders everything recorded so far before what comes next, between the
 * compute and transfer stages kiln records. */
static void device_barrier(kiln_vulkan_stream *st) {
  const VkAccessFlags writes = lane_writes(st);
  VkMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = writes,
      .dstAccessMask = writes | VK_ACCESS_TRANSFER_READ_BIT |
                       (st->lane == KILN_VULKAN_LANE_TRANSFER
                            ? 0
                            : VK_ACCESS_SHADER_READ_BIT),
  };
  const VkPipelineStageFlags stages = lane_stages(st);
  st->ctx->vk.vkCmdPipelineBarrier(st->cmd, stages, stages, 0, 1, &barrier, 0,
                                   NULL, 0, NULL);
}

/* Makes the batch's writes visible to the host once its submission is seen
 * complete: reads of mapped memory, and writes of the host that follow. */
static void host_barrier(kiln_vulkan_stream *st) {
  VkMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = lane_writes(st),
      .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT,
  };
  st->ctx->vk.vkCmdPipelineBarrier(st->cmd, lane_stages(st),
                                   VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier,
                                   0, NULL, 0, NULL);
}

/* Makes the next submission, on `lane`, wait for the stream's last one
 * when that went to the other lane: submission order keeps the work of
 * one queue in order, not of two. */
static kiln_status follow_other_lane(kiln_vulkan_stream *st,
                                     kiln_vulkan_lane lane) {
  if (lane == st->submitted_lane || st->completed >= st->submitted)
    return KILN_OK;
  return kiln_vulkan_stream_add_wait(st, st->timeline, st->submitted);
}

static kiln_status open_batch(kiln_vulkan_stream *st, kiln_vulkan_lane lane) {
  if (st->cmd && st->lane == lane) return KILN_OK;
  /* The other lane's batch goes first, in the stream's order. */
  kiln_status s = st->cmd ? kiln_vulkan_stream_flush(st) : KILN_OK;
  if (s != KILN_OK) return s;
  kiln_vulkan_context *vc = st->ctx;
  kiln_vulkan_lane_state *ls = &st->lanes[lane];
  VkCommandBuffer cmd;
  if (ls->spare_count > 0) {
    cmd = ls->spare[--ls->spare_count];
  } else {
    VkCommandBufferAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = ls->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    /* Every command buffer may end up spare at once. */
    VkCommandBuffer *spare =
        grow(ls->spare, &ls->spare_cap, st->inflight_count, 1, sizeof *spare);
    if (!spare)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "out of host memory recording a command");
    ls->spare = spare;
    VkResult r = vc->vk.vkAllocateCommandBuffers(vc->device, &info, &cmd);
    if (r != VK_SUCCESS)
      return kiln_vulkan_error(r, "vkAllocateCommandBuffers");
  }
  VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
  };
  VkResult r = vc->vk.vkBeginCommandBuffer(cmd, &begin);
  if (r == VK_SUCCESS) {
    s = follow_other_lane(st, lane);
    if (s != KILN_OK) vc->vk.vkResetCommandBuffer(cmd, 0);
  } else {
    s = kiln_vulkan_error(r, "vkBeginCommandBuffer");
  }
  if (s != KILN_OK) {
    ls->spare[ls->spare_count++] = cmd;
    return s;
  }
  st->cmd = cmd;
  st->lane = lane;
  st->recorded = 0;
  st->bound = VK_NULL_HANDLE;
  /* A batch's first command gets a barrier too: its scope reaches back over
   * every earlier submission to the queue, other streams' included, which
   * keeps work ordered by host waits (a synchronize, a read) in order on
   * the device as well. */
  st->dirty = true;
  set_busy(st, true);
  return KILN_OK;
}

kiln_status kiln_vulkan_stream_open(kiln_vulkan_stream *st,
                                    VkCommandBuffer *out) {
  kiln_status s = open_batch(st, KILN_VULKAN_LANE_COMPUTE);
  if (s == KILN_OK) *out = st->cmd;
  return s;
}

kiln_vulkan_lane kiln_vulkan_copy_lane(kiln_vulkan_stream *st,
                                       const kiln_vulkan_allocation *dst,
                                       const kiln_vulkan_allocation *src,
                                       bool host) {
  if (!st->lanes[KILN_VULKAN_LANE_TRANSFER].queue || st->base.building ||
      !dst->any_queue || !src->any_queue ||
      (!host && st->ctx->transfer_mode == KILN_VULKAN_TRANSFER_HOST))
    return KILN_VULKAN_LANE_COMPUTE;
  /* Behind the stream's own unfinished compute work, a copy on the
   * transfer queue would wait there for it, holding up the copies of every
   * stream that shares the queue (a device has only a few); it follows
   * that work on the compute queue instead, where it would wait anyway. */
  if (st->cmd && st->lane == KILN_VULKAN_LANE_COMPUTE)
    return KILN_VULKAN_LANE_COMPUTE;
  if (st->submitted_lane == KILN_VULKAN_LANE_COMPUTE &&
      st->completed < st->submitted &&
      (kiln_vulkan_stream_poll(st) != KILN_OK ||
       st->completed < st->submitted))
    return KILN_VULKAN_LANE_COMPUTE;
  return KILN_VULKAN_LANE_TRANSFER;
}

kiln_status kiln_vulkan_stream_command(kiln_vulkan_stream *st,
                                       kiln_vulkan_lane lane,
                                       VkCommandBuffer *out) {
  kiln_status s = open_batch(st, lane);
  if (s != KILN_OK) return s;
  if (st->dirty) {
    device_barrier(st);
    st->dirty = false;
  }
  *out = st->cmd;
  return KILN_OK;
}

kiln_status kiln_vulkan_stream_recorded(kiln_vulkan_stream *st) {
  st->dirty = true;
  st->recorded++;
  /* A graph's command buffer holds all of it, submitted at each replay. */
  if (st->base.building) return KILN_OK;
  /* A copy is submitted at once: its engine is there to run it beside
   * kernels, and copies worth a DMA engine cost far more than the
   * submission. */
  if (st->recorded >= BATCH_COMMANDS || st->lane == KILN_VULKAN_LANE_TRANSFER)
    return kiln_vulkan_stream_flush(st);
  if (st->recorded == 1 || st->recorded == EAGER_COMMANDS) {
    kiln_status s = kiln_vulkan_stream_poll(st);
    if (s != KILN_OK) return s;
    if (st->completed >= st->submitted) return kiln_vulkan_stream_flush(st);
  }
  return KILN_OK;
}

/* Makes room for one more submission in the FIFO, keeping it in order. */
static bool inflight_reserve(kiln_vulkan_stream *st) {
  if (st->inflight_count < st->inflight_cap) return true;
  size_t old = st->inflight_cap, cap = old ? old * 2 : 16;
  kiln_vulkan_batch *p = realloc(st->inflight, cap * sizeof *p);
  if (!p) return false;
  /* Full: [first, old) then [0, first); move the second part after the
   * first. */
  memcpy(&p[old], p, st->inflight_first * sizeof *p);
  st->inflight = p;
  st->inflight_cap = cap;
  return true;
}

/* Drops a batch that could not be submitted. */
static void discard_batch(kiln_vulkan_stream *st) {
  if (st->cmd) {
    kiln_vulkan_lane_state *ls = &st->lanes[st->lane];
    st->ctx->vk.vkResetCommandBuffer(st->cmd, 0);
    ls->spare[ls->spare_count++] = st->cmd;
    st->cmd = VK_NULL_HANDLE;
  }
  release_waits(st->ctx, st->waits, st->wait_count);
  st->wait_count = 0;
  st->recorded = 0;
  retire(st);
}

static kiln_status submit(kiln_vulkan_stream *st, kiln_vulkan_lane lane,
                          VkCommandBuffer cmd, uint64_t value) {
  enum { INLINE_WAITS = 8 };
  VkSemaphore inline_sems[INLINE_WAITS];
  uint64_t inline_values[INLINE_WAITS];
  VkPipelineStageFlags inline_stages[INLINE_WAITS];
  VkSemaphore *sems = inline_sems;
  uint64_t *values = inline_values;
  VkPipelineStageFlags *stages = inline_stages;
  uint32_t n = st->wait_count;
  if (n > INLINE_WAITS) {
    sems = malloc(n * sizeof *sems);
    values = malloc(n * sizeof *values);
    stages = malloc(n * sizeof *stages);
  }
  kiln_status s = KILN_OK;
  if (!sems || !values || !stages) {
    s = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                       "out of host memory submitting Vulkan work");
  } else {
    for (uint32_t i = 0; i < n; i++) {
      sems[i] = st->waits[i].timeline->semaphore;
      values[i] = st->waits[i].value;
      stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    }
    VkTimelineSemaphoreSubmitInfo timeline = {
        .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
        .waitSemaphoreValueCount = n,
        .pWaitSemaphoreValues = values,
        .signalSemaphoreValueCount = 1,
        .pSignalSemaphoreValues = &value,
    };
    VkSubmitInfo info = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .pNext = &timeline,
        .waitSemaphoreCount = n,
        .pWaitSemaphores = sems,
        .pWaitDstStageMask = stages,
        .commandBufferCount = cmd ? 1 : 0,
        .pCommandBuffers = &cmd,
        .signalSemaphoreCount = 1,
        .pSignalSemaphores = &st->timeline->semaphore,
    };
    kiln_vulkan_queue *queue = st->lanes[lane].queue;
    if (st->ctx->reorder) {
      s = kiln_vulkan_hold(st->ctx, queue, cmd, sems, values, n,
                           st->timeline->semaphore, value);
    } else {
      pthread_mutex_lock(&queue->lock);
      VkResult r =
          st->ctx->vk.vkQueueSubmit(queue->handle, 1, &info, VK_NULL_HANDLE);
      pthread_mutex_unlock(&queue->lock);
      if (r != VK_SUCCESS) s = kiln_vulkan_error(r, "vkQueueSubmit");
    }
  }
  if (n > INLINE_WAITS) {
    free(sems);
    free(values);
    free(stages);
  }
  return s;
}

kiln_status kiln_vulkan_stream_collect_writes(kiln_vulkan_stream *st) {
  kiln_vulkan_context *vc = st->ctx;
  if (atomic_load(&vc->write_epoch) == st->write_epoch) return KILN_OK;
  kiln_status s = KILN_OK;
  pthread_mutex_lock(&vc->writes_lock);
  for (size_t i = 0; i < vc->write_count && s == KILN_OK; i++)
    if (vc->writes[i].timeline != st->timeline)
      s = kiln_vulkan_stream_add_wait(st, vc->writes[i].timeline,
                                      vc->writes[i].value);
  if (s == KILN_OK) st->write_epoch = atomic_load(&vc->write_epoch);
  pthread_mutex_unlock(&vc->writes_lock);
  return s;
}

kiln_status kiln_vulkan_stream_publish_writes(kiln_vulkan_stream *st) {
  kiln_status s = kiln_vulkan_stream_flush(st);
  if (s != KILN_OK) return s;
  kiln_vulkan_context *vc = st->ctx;
  pthread_mutex_lock(&vc->writes_lock);
  /* Drop the writes already done, and replace this stream's. */
  size_t keep = 0;
  bool found = false;
  for (size_t i = 0; i < vc->write_count; i++) {
    kiln_vulkan_wait w = vc->writes[i];
    uint64_t value = 0;
    if (w.timeline == st->timeline) {
      w.value = st->submitted;
      found = true;
    } else if (vc->vk.vkGetSemaphoreCounterValue(
                   vc->device, w.timeline->semaphore, &value) == VK_SUCCESS &&
               value >= w.value) {
      kiln_vulkan_timeline_release(vc, w.timeline);
      continue;
    }
    vc->writes[keep++] = w;
  }
  vc->write_count = keep;
  if (!found) {
    kiln_vulkan_wait *writes =
        grow(vc->writes, &vc->write_cap, vc->write_count, 1, sizeof *writes);
    if (!writes) {
      s = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                         "out of host memory recording a write");
    } else {
      vc->writes = writes;
      atomic_fetch_add(&st->timeline->refs, 1);
      writes[vc->write_count++] =
          (kiln_vulkan_wait){st->timeline, st->submitted};
    }
  }
  atomic_fetch_add(&vc->write_epoch, 1);
  st->write_epoch = atomic_load(&vc->write_epoch);
  pthread_mutex_unlock(&vc->writes_lock);
  return s;
}

void kiln_vulkan_release_writes(kiln_vulkan_context *vc,
                                kiln_vulkan_timeline *only) {
  pthread_mutex_lock(&vc->writes_lock);
  size_t keep = 0;
  for (size_t i = 0; i < vc->write_count; i++) {
    if (!only || vc->writes[i].timeline == only)
      kiln_vulkan_timeline_release(vc, vc->writes[i].timeline);
    else
      vc->writes[keep++] = vc->writes[i];
  }
  vc->write_count = keep;
  pthread_mutex_unlock(&vc->writes_lock);
}

/* What comes before a submission: the staged writes of other streams to
 * wait for, and room among the submissions in flight. */
static kiln_status prepare_submission(kiln_vulkan_stream *st) {
  kiln_status s = kiln_vulkan_stream_collect_writes(st);
  if (s == KILN_OK && st->inflight_count >= MAX_INFLIGHT)
    s = kiln_vulkan_stream_wait(st, st->inflight[st->inflight_first].value);
  return s;
}

/* Submits `cmd` (may be VK_NULL_HANDLE) to `lane`'s queue with the
 * pending waits as the stream's next value and tracks it until it
 * completes; the batch recycles `cmd` then only if `recycle`. */
static kiln_status submit_tracked(kiln_vulkan_stream *st,
                                  kiln_vulkan_lane lane, VkCommandBuffer cmd,
                                  bool recycle) {
  kiln_vulkan_wait *waits = NULL;
  if (!inflight_reserve(st) ||
      (st->wait_count > 0 &&
       !(waits = malloc(st->wait_count * sizeof *waits))))
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory submitting Vulkan work");
  uint64_t value = st->submitted + 1;
  kiln_status s = submit(st, lane, cmd, value);
  if (s != KILN_OK) {
    free(waits);
    return s;
  }
  kiln_vulkan_batch *b =
      &st->inflight[(st->inflight_first + st->inflight_count) %
                    st->inflight_cap];
  b->cmd = recycle ? cmd : VK_NULL_HANDLE;
  b->lane = lane;
  b->value = value;
  b->waits = waits;
  b->wait_count = st->wait_count;
  if (waits) memcpy(waits, st->waits, st->wait_count * sizeof *waits);
  st->inflight_count++;
  st->wait_count = 0;
  st->submitted = value;
  st->submitted_lane = lane;
  set_busy(st, true);
  return KILN_OK;
}

kiln_status kiln_vulkan_stream_flush(kiln_vulkan_stream *st) {
  if (!st->cmd && st->wait_count == 0) return KILN_OK;
  kiln_status s = prepare_submission(st);
  if (s != KILN_OK) return s;
  if (st->cmd) {
    if (st->dirty) host_barrier(st);
    VkResult r = st->ctx->vk.vkEndCommandBuffer(st->cmd);
    if (r != VK_SUCCESS) {
      discard_batch(st);
      return kiln_vulkan_error(r, "vkEndCommandBuffer");
    }
  }
  /* A submission of waits only goes where the last one went: it needs no
   * wait for the other lane. */
  const kiln_vulkan_lane lane = st->cmd ? st->lane : st->submitted_lane;
  if ((s = submit_tracked(st, lane, st->cmd, true)) != KILN_OK) {
    discard_batch(st);
    return s;
  }
  st->cmd = VK_NULL_HANDLE;
  st->recorded = 0;
  return KILN_OK;
}

void kiln_vulkan_stream_record_into(kiln_vulkan_stream *st,
                                    VkCommandBuffer cmd) {
  st->cmd = cmd;
  st->lane = KILN_VULKAN_LANE_COMPUTE;
  st->recorded = 0;
  st->bound = VK_NULL_HANDLE;
  st->dirty = true;
}

kiln_status kiln_vulkan_stream_end_recording(kiln_vulkan_stream *st) {
  if (st->dirty) host_barrier(st);
  VkResult r = st->ctx->vk.vkEndCommandBuffer(st->cmd);
  st->cmd = VK_NULL_HANDLE;
  st->recorded = 0;
  return r == VK_SUCCESS ? KILN_OK : kiln_vulkan_error(r, "vkEndCommandBuffer");
}

kiln_status kiln_vulkan_stream_submit_external(kiln_vulkan_stream *st,
                                               VkCommandBuffer cmd) {
  kiln_status s = follow_other_lane(st, KILN_VULKAN_LANE_COMPUTE);
  if (s == KILN_OK) s = prepare_submission(st);
  if (s == KILN_OK) s = submit_tracked(st, KILN_VULKAN_LANE_COMPUTE, cmd, false);
  return s;
}

kiln_status kiln_vulkan_stream_add_wait(kiln_vulkan_stream *st,
                                        kiln_vulkan_timeline *timeline,
                                        uint64_t value) {
  for (uint32_t i = 0; i < st->wait_count; i++) {
    if (st->waits[i].timeline == timeline) {
      if (st->waits[i].value < value) st->waits[i].value = value;
      return KILN_OK;
    }
  }
  size_t cap = st->wait_cap;
  kiln_vulkan_wait *waits =
      grow(st->waits, &cap, st->wait_count, 1, sizeof *waits);
  if (!waits)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory adding a stream wait");
  st->waits = waits;
  st->wait_cap = (uint32_t)cap;
  atomic_fetch_add(&timeline->refs, 1);
  st->waits[st->wait_count].timeline = timeline;
  st->waits[st->wait_count].value = value;
  st->wait_count++;
  set_busy(st, true);
  return KILN_OK;
}

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
  if (s == KILN_OK && vc->transfer_family != UINT32_MAX) {
    transfer->queue =
        vc->transfer_count > 0
            ? &vc->transfer[atomic_fetch_add(&vc->next_transfer, 1) %
                            vc->transfer_count]
            : queue;
    s = create_pool(vc, vc->transfer_family, &transfer->pool);
  }
  if (s == KILN_OK) s = timeline_create(vc, &st->timeline);
  if (s != KILN_OK) {
    destroy_lanes(st);
    pthread_mutex_destroy(&st->lock);
    return s;
  }
  pthread_mutex_lock(&vc->streams_lock);
  st->next = vc->streams;
  if (vc->streams) vc->streams->prev = st;
  vc->streams = st;
  pthread_mutex_unlock(&vc->streams_lock);
  return KILN_OK;
}

void kiln_vulkan_stream_teardown(kiln_vulkan_stream *st) {
  kiln_vulkan_context *vc = st->ctx;
  pthread_mutex_lock(&vc->streams_lock);
  if (st->prev)
    st->prev->next = st->next;
  else
    vc->streams = st->next;
  if (st->next) st->next->prev = st->prev;
  pthread_mutex_unlock(&vc->streams_lock);

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
    discard_batch(st);
    if (vc->reorder) kiln_vulkan_forget_held(vc, st->timeline->semaphore);
  }
  kiln_vulkan_stream_unlock(st);
  /* Its writes are done: nobody needs to wait for them any more. */
  kiln_vulkan_release_writes(vc, st->timeline);
  set_busy(st, false);
  kiln_vulkan_staging_release(st);
  destroy_lanes(st);
  free(st->inflight);
  free(st->waits);
  kiln_vulkan_timeline_release(vc, st->timeline);
  pthread_mutex_destroy(&st->lock);
}

kiln_status kiln_vulkan_stream_init(kiln_stream *s) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(s->base.context);
  /* Priority 1 (possible only with two queues or more): the last queue,
   * created with the higher queue priority; the rest share the others. */
  unsigned normal = vc->queue_count >= 2 ? vc->queue_count - 1 : 1;
  unsigned i = s->priority > 0 ? vc->queue_count - 1
                               : atomic_fetch_add(&vc->next_queue, 1) % normal;
  return kiln_vulkan_stream_setup(vc, kiln_vulkan_stream_cast(s),
                                  &vc->queues[i]);
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
