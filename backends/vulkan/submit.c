/* A stream's commands: recorded into a command buffer on one of its two
 * lanes, behind the barriers that keep the stream in order, and submitted
 * in batches that signal the stream's timeline; the staged writes every
 * submission waits for; and the stream's waits for its own work. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

/* A batch is submitted when it holds this many commands: submissions cost
 * microseconds each, so many small dispatches must share one... */
#define BATCH_COMMANDS 256
/* ...but a stream with nothing in flight submits its first command at
 * once, so that its work starts without waiting for the host's next
 * synchronize (which may be another stream's: two streams then run side
 * by side, as CUDA's do); and it looks again every this many commands, so
 * that a device which caught up with the host is not left idle while the
 * rest of a batch is recorded. Looking only once, at the 16th, the H200
 * sat idle for most of each 256-command batch the host took as long to
 * record as the device took to run (2.3 µs a launch against 3-5 µs a
 * dispatch for arrays of 4-16 MiB): kiln's triad and dot there ran at
 * 0.88-0.94 of the same SPIR-V recorded once through raw Vulkan, and at
 * 0.94-1.00 with a look every 16th (docs/performance.md). A host that
 * outruns the device finds it busy and still fills whole batches. */
#define EAGER_COMMANDS 16
/* Recording blocks once this many submissions are pending, as a CUDA
 * stream does when its queue is full, so memory stays bounded. */
#define MAX_INFLIGHT 64

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

void kiln_vulkan_stream_set_busy(kiln_vulkan_stream *st, bool busy) {
  if (st->busy == busy) return;
  st->busy = busy;
  atomic_fetch_add(&st->ctx->streams.busy, busy ? 1 : -1);
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
    kiln_vulkan_stream_set_busy(st, false);
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
    /* Every command buffer may end up spare at once, kept ones too. */
    VkCommandBuffer *spare =
        grow(ls->spare, &ls->spare_cap,
             st->inflight_count + KILN_VULKAN_SOLO_KEPT, 1, sizeof *spare);
    if (!spare)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "out of host memory recording a command");
    ls->spare = spare;
    VkResult r = vc->vk.vkAllocateCommandBuffers(vc->device, &info, &cmd);
    if (r != VK_SUCCESS)
      return kiln_vulkan_error(r, "vkAllocateCommandBuffers");
  }
  /* A batch that may be kept is submitted more than once. */
  VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = st->solo.pending_set
                   ? 0
                   : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
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
  kiln_vulkan_stream_set_busy(st, true);
  return KILN_OK;
}

kiln_status kiln_vulkan_stream_open(kiln_vulkan_stream *st,
                                    VkCommandBuffer *out) {
  kiln_status s = open_batch(st, KILN_VULKAN_LANE_COMPUTE);
  if (s == KILN_OK) {
    kiln_vulkan_label_command(st);
    *out = st->cmd;
  }
  return s;
}

kiln_vulkan_lane kiln_vulkan_copy_lane(kiln_vulkan_stream *st,
                                       const kiln_vulkan_allocation *dst,
                                       const kiln_vulkan_allocation *src,
                                       bool host) {
  if (!st->lanes[KILN_VULKAN_LANE_TRANSFER].queue || st->base.building ||
      !dst->any_queue || !src->any_queue ||
      (!host && st->ctx->queues.transfer_mode == KILN_VULKAN_TRANSFER_HOST))
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
  /* The wait at the barrier is the command's own. */
  kiln_vulkan_label_command(st);
  if (st->dirty) {
    device_barrier(st);
    st->dirty = false;
  }
  *out = st->cmd;
  return KILN_OK;
}

kiln_status kiln_vulkan_stream_recorded(kiln_vulkan_stream *st) {
  st->recorded++;
  /* A graph's command buffer holds all of it, submitted at each replay,
   * with barriers only between the levels of its build (graph.c). */
  if (st->base.building) return KILN_OK;
  st->dirty = true;
  /* A copy is submitted at once: its engine is there to run it beside
   * kernels, and copies worth a DMA engine cost far more than the
   * submission. */
  if (st->recorded >= BATCH_COMMANDS || st->lane == KILN_VULKAN_LANE_TRANSFER)
    return kiln_vulkan_stream_flush(st);
  if (st->recorded == 1 || st->recorded % EAGER_COMMANDS == 0) {
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

void kiln_vulkan_stream_discard(kiln_vulkan_stream *st) {
  kiln_vulkan_label_close(st, false);
  if (st->cmd) {
    kiln_vulkan_lane_state *ls = &st->lanes[st->lane];
    st->ctx->vk.vkResetCommandBuffer(st->cmd, 0);
    ls->spare[ls->spare_count++] = st->cmd;
    st->cmd = VK_NULL_HANDLE;
  }
  release_waits(st->ctx, st->waits, st->wait_count);
  st->wait_count = 0;
  st->recorded = 0;
  st->solo.pending_set = false;
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
    if (st->ctx->reorder.on) {
      s = kiln_vulkan_hold(st->ctx, queue, cmd, sems, values, n,
                           st->timeline->semaphore, value);
    } else {
      pthread_mutex_lock(&queue->lock);
      const uint32_t labels = kiln_vulkan_label_queue_begin(st, queue->handle);
      VkResult r =
          st->ctx->vk.vkQueueSubmit(queue->handle, 1, &info, VK_NULL_HANDLE);
      kiln_vulkan_label_queue_end(queue->handle, labels);
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
  if (atomic_load(&vc->writes.epoch) == st->write_epoch) return KILN_OK;
  kiln_status s = KILN_OK;
  pthread_mutex_lock(&vc->writes.lock);
  for (size_t i = 0; i < vc->writes.count && s == KILN_OK; i++)
    if (vc->writes.list[i].timeline != st->timeline)
      s = kiln_vulkan_stream_add_wait(st, vc->writes.list[i].timeline,
                                      vc->writes.list[i].value);
  if (s == KILN_OK) st->write_epoch = atomic_load(&vc->writes.epoch);
  pthread_mutex_unlock(&vc->writes.lock);
  return s;
}

kiln_status kiln_vulkan_stream_publish_writes(kiln_vulkan_stream *st) {
  kiln_status s = kiln_vulkan_stream_flush(st);
  if (s != KILN_OK) return s;
  kiln_vulkan_context *vc = st->ctx;
  pthread_mutex_lock(&vc->writes.lock);
  /* Drop the writes already done, and replace this stream's. */
  size_t keep = 0;
  bool found = false;
  for (size_t i = 0; i < vc->writes.count; i++) {
    kiln_vulkan_wait w = vc->writes.list[i];
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
    vc->writes.list[keep++] = w;
  }
  vc->writes.count = keep;
  if (!found) {
    kiln_vulkan_wait *writes = grow(vc->writes.list, &vc->writes.cap,
                                    vc->writes.count, 1, sizeof *writes);
    if (!writes) {
      s = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                         "out of host memory recording a write");
    } else {
      vc->writes.list = writes;
      atomic_fetch_add(&st->timeline->refs, 1);
      writes[vc->writes.count++] =
          (kiln_vulkan_wait){st->timeline, st->submitted};
    }
  }
  atomic_fetch_add(&vc->writes.epoch, 1);
  st->write_epoch = atomic_load(&vc->writes.epoch);
  pthread_mutex_unlock(&vc->writes.lock);
  return s;
}

void kiln_vulkan_release_writes(kiln_vulkan_context *vc,
                                kiln_vulkan_timeline *only) {
  pthread_mutex_lock(&vc->writes.lock);
  size_t keep = 0;
  for (size_t i = 0; i < vc->writes.count; i++) {
    if (!only || vc->writes.list[i].timeline == only)
      kiln_vulkan_timeline_release(vc, vc->writes.list[i].timeline);
    else
      vc->writes.list[keep++] = vc->writes.list[i];
  }
  vc->writes.count = keep;
  pthread_mutex_unlock(&vc->writes.lock);
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
  kiln_vulkan_stream_set_busy(st, true);
  return KILN_OK;
}

kiln_status kiln_vulkan_stream_flush(kiln_vulkan_stream *st) {
  if (!st->cmd && st->wait_count == 0) return KILN_OK;
  kiln_status s = prepare_submission(st);
  if (s != KILN_OK) return s;
  if (st->cmd) {
    kiln_vulkan_label_close(st, true);
    if (st->dirty) host_barrier(st);
    VkResult r = st->ctx->vk.vkEndCommandBuffer(st->cmd);
    if (r != VK_SUCCESS) {
      kiln_vulkan_stream_discard(st);
      return kiln_vulkan_error(r, "vkEndCommandBuffer");
    }
  }
  /* A submission of waits only goes where the last one went: it needs no
   * wait for the other lane. */
  const kiln_vulkan_lane lane = st->cmd ? st->lane : st->submitted_lane;
  /* The batch of the one launch it was opened for is kept, not recycled
   * (solo.c). */
  const bool keep = st->cmd && st->solo.pending_set && st->recorded == 1 &&
                    lane == KILN_VULKAN_LANE_COMPUTE;
  if ((s = submit_tracked(st, lane, st->cmd, !keep)) != KILN_OK) {
    kiln_vulkan_stream_discard(st);
    return s;
  }
  if (keep) kiln_vulkan_solo_keep(st, st->cmd);
  st->solo.pending_set = false;
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
  host_barrier(st);
  VkResult r = st->ctx->vk.vkEndCommandBuffer(st->cmd);
  st->cmd = VK_NULL_HANDLE;
  st->recorded = 0;
  return r == VK_SUCCESS ? KILN_OK : kiln_vulkan_error(r, "vkEndCommandBuffer");
}

kiln_status kiln_vulkan_stream_submit_external(kiln_vulkan_stream *st,
                                               VkCommandBuffer cmd) {
  kiln_status s = follow_other_lane(st, KILN_VULKAN_LANE_COMPUTE);
  if (s == KILN_OK) s = prepare_submission(st);
  if (s == KILN_OK) {
    kiln_vulkan_label_submission(st);
    s = submit_tracked(st, KILN_VULKAN_LANE_COMPUTE, cmd, false);
  }
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
  kiln_vulkan_stream_set_busy(st, true);
  return KILN_OK;
}
