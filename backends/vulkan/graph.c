/* Graphs: one reusable command buffer, recorded by the stream's own code
 * (launch.c, buffer.c), and replayed with one vkQueueSubmit that signals
 * the replaying stream's timeline, so that stream order, events and
 * synchronize hold as for any batch. The core hands the commands over in
 * levels (core/backend.h, graph_level): a barrier goes between two
 * levels only, so the independent branches of a capture run at once.
 *
 * The buffer is begun with SIMULTANEOUS_USE, so a replay may be submitted
 * while earlier ones are pending, on any queue. Recording it again (an
 * update of arguments) waits for the replays in flight first: a pending
 * command buffer must not be reset.
 *
 * Events: a replay waits, before its first command, for the marks the
 * graph's waits name as they stand at the replay, and marks the events the
 * graph records at its end (their timestamps are written in place). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

static kiln_vulkan_graph *graph_cast(kiln_graph *g) {
  return (kiln_vulkan_graph *)g;
}

/* Waits for every replay in flight and forgets them. */
static void wait_replays(kiln_vulkan_graph *vg) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(vg->base.base.context);
  /* KILN_DEBUG=reorder: the last replay's stream first, not the order of
   * the launches that the waits below would release them in. */
  for (size_t i = vg->replay_count; vc->reorder.on && i-- > 0;)
    if (kiln_vulkan_release(vc, vg->replays[i].timeline->semaphore,
                            vg->replays[i].value) != KILN_OK)
      kiln_log(KILN_LOG_WARN, "vulkan: releasing a graph's replays: %s",
               kiln_last_error());
  for (size_t i = 0; i < vg->replay_count; i++) {
    /* Nothing may be reset or freed while in use: without limit, as
     * every backend deinit waits (a lost device ends the wait). */
    if (kiln_vulkan_wait_semaphore(vc, vg->replays[i].timeline->semaphore,
                                   vg->replays[i].value, "a graph's replay",
                                   KILN_WAIT_FOREVER, true) != KILN_OK)
      kiln_log(KILN_LOG_WARN, "vulkan: waiting for a graph's replays: %s",
               kiln_last_error());
    kiln_vulkan_timeline_release(vc, vg->replays[i].timeline);
  }
  vg->replay_count = 0;
}

kiln_status kiln_vulkan_graph_begin(kiln_graph *g, kiln_stream *s) {
  kiln_vulkan_graph *vg = graph_cast(g);
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(g->base.context);
  VkResult r;
  if (!vg->pool) {
    VkCommandPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = vc->phys->queue_family,
    };
    r = vc->vk.vkCreateCommandPool(vc->device, &info, NULL, &vg->pool);
    if (r != VK_SUCCESS) {
      vg->pool = VK_NULL_HANDLE;
      return kiln_vulkan_error(r, "vkCreateCommandPool");
    }
    VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = vg->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    r = vc->vk.vkAllocateCommandBuffers(vc->device, &alloc, &vg->cmd);
    if (r != VK_SUCCESS) {
      vc->vk.vkDestroyCommandPool(vc->device, vg->pool, NULL);
      vg->pool = VK_NULL_HANDLE;
      return kiln_vulkan_error(r, "vkAllocateCommandBuffers");
    }
  } else {
    wait_replays(vg);
  }
  vg->wait_count = vg->record_count = 0;
  free(vg->printing);
  vg->printing = NULL;
  VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
  };
  r = vc->vk.vkBeginCommandBuffer(vg->cmd, &begin);
  if (r != VK_SUCCESS) return kiln_vulkan_error(r, "vkBeginCommandBuffer");
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_stream_lock(st);
  kiln_vulkan_stream_record_into(st, vg->cmd);
  kiln_vulkan_stream_unlock(st);
  return KILN_OK;
}

kiln_status kiln_vulkan_graph_note_event(kiln_stream *s, kiln_event *e,
                                         bool record) {
  kiln_vulkan_graph *vg = graph_cast(s->building);
  if (vg->wait_count + vg->record_count == vg->event_cap) {
    size_t cap = vg->event_cap ? vg->event_cap * 2 : 4;
    kiln_event **waits = realloc(vg->waits, cap * sizeof *waits);
    if (waits) vg->waits = waits;
    kiln_event **records = realloc(vg->records, cap * sizeof *records);
    if (records) vg->records = records;
    if (!waits || !records)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "out of host memory building a graph");
    vg->event_cap = cap;
  }
  if (!record) {
    vg->waits[vg->wait_count++] = e;
    return KILN_OK;
  }
  vg->records[vg->record_count++] = e;
  kiln_vulkan_event *ve = kiln_vulkan_event_cast(e);
  if (!ve->queries) return KILN_OK;
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_context *vc = st->ctx;
  kiln_vulkan_stream_lock(st);
  VkCommandBuffer cmd;
  kiln_status status = kiln_vulkan_stream_open(st, &cmd);
  if (status == KILN_OK) {
    vc->vk.vkCmdResetQueryPool(cmd, ve->queries, 0, 1);
    vc->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                               ve->queries, 0);
  }
  kiln_vulkan_stream_unlock(st);
  return status;
}

kiln_status kiln_vulkan_graph_note_kernel(kiln_graph *g, const char *kernel) {
  kiln_vulkan_graph *vg = graph_cast(g);
  const size_t have = vg->printing ? strlen(vg->printing) : 0;
  const size_t n = strlen(kernel);
  /* Each name once: a graph of a thousand launches of one kernel is
   * that kernel's. */
  for (const char *at = vg->printing; at && (at = strstr(at, kernel));
       at += n)
    if ((at == vg->printing || at[-1] == ' ') && (at[n] == ',' || !at[n]))
      return KILN_OK;
  char *p = realloc(vg->printing, have + n + 3);
  if (!p)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory building a graph");
  snprintf(p + have, n + 3, "%s%s", have ? ", " : "", kernel);
  vg->printing = p;
  return KILN_OK;
}

kiln_status kiln_vulkan_graph_level(kiln_graph *g, kiln_stream *s) {
  (void)g;
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_stream_lock(st);
  st->dirty = true;
  kiln_vulkan_stream_unlock(st);
  return KILN_OK;
}

kiln_status kiln_vulkan_graph_end(kiln_graph *g, kiln_stream *s, bool keep) {
  (void)g;
  (void)keep; /* a graph not kept is never submitted, ended or not */
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_stream_lock(st);
  kiln_status status = kiln_vulkan_stream_end_recording(st);
  kiln_vulkan_stream_unlock(st);
  return status;
}

/* Notes the replay that `st` just submitted (its lock held). */
static kiln_status note_replay(kiln_vulkan_graph *vg, kiln_vulkan_stream *st) {
  for (size_t i = 0; i < vg->replay_count; i++)
    if (vg->replays[i].timeline == st->timeline) {
      vg->replays[i].value = st->submitted;
      return KILN_OK;
    }
  if (vg->replay_count == vg->replay_cap) {
    size_t cap = vg->replay_cap ? vg->replay_cap * 2 : 4;
    kiln_vulkan_wait *p = realloc(vg->replays, cap * sizeof *p);
    if (!p) {
      /* Unrecorded, the replay cannot be waited for: wait now. */
      return kiln_vulkan_stream_wait(st, st->submitted);
    }
    vg->replays = p;
    vg->replay_cap = cap;
  }
  atomic_fetch_add(&st->timeline->refs, 1);
  vg->replays[vg->replay_count++] =
      (kiln_vulkan_wait){st->timeline, st->submitted};
  return KILN_OK;
}

kiln_status kiln_vulkan_graph_launch(kiln_graph *g, kiln_stream *s) {
  kiln_vulkan_graph *vg = graph_cast(g);
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_context *vc = st->ctx;
  kiln_vulkan_stream_lock(st);
  /* What the stream recorded before the replay goes first. */
  kiln_status status = kiln_vulkan_stream_flush(st);
  for (size_t i = 0; status == KILN_OK && i < vg->wait_count; i++) {
    kiln_vulkan_event *ve = kiln_vulkan_event_cast(vg->waits[i]);
    if (ve->timeline && ve->timeline != st->timeline)
      status = kiln_vulkan_stream_add_wait(st, ve->timeline, ve->value);
  }
  /* Replays of one graph run one after another, whichever streams they are
   * on, as CUDA runs the launches of one graph: a replay's scratch memory
   * (a captured reduction's slots and counter) is the graph's. */
  for (size_t i = 0; status == KILN_OK && i < vg->replay_count; i++)
    if (vg->replays[i].timeline != st->timeline)
      status = kiln_vulkan_stream_add_wait(st, vg->replays[i].timeline,
                                           vg->replays[i].value);
  /* A replay resets the queries of the events it records: their last
   * record on another stream must have written its timestamp first, as
   * kiln_vulkan_event_record waits for it, and an event's destroy waits
   * for its last mark only. */
  for (size_t i = 0; status == KILN_OK && i < vg->record_count; i++) {
    kiln_vulkan_event *ve = kiln_vulkan_event_cast(vg->records[i]);
    if (ve->queries && ve->timeline && ve->timeline != st->timeline)
      status = kiln_vulkan_stream_add_wait(st, ve->timeline, ve->value);
  }
  if (status == KILN_OK) {
    kiln_vulkan_printf_source(vg->printing);
    status = kiln_vulkan_stream_submit_external(st, vg->cmd);
    kiln_vulkan_printf_source(NULL);
  }
  if (status == KILN_OK) {
    for (size_t i = 0; i < vg->record_count; i++) {
      kiln_vulkan_event *ve = kiln_vulkan_event_cast(vg->records[i]);
      atomic_fetch_add(&st->timeline->refs, 1);
      if (ve->timeline) kiln_vulkan_timeline_release(vc, ve->timeline);
      ve->timeline = st->timeline;
      ve->value = st->submitted;
    }
    status = note_replay(vg, st);
  }
  kiln_vulkan_stream_unlock(st);
  return status;
}

void kiln_vulkan_graph_deinit(kiln_graph *g) {
  kiln_vulkan_graph *vg = graph_cast(g);
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(g->base.context);
  wait_replays(vg);
  /* Destroying the pool frees its command buffer. */
  if (vg->pool) vc->vk.vkDestroyCommandPool(vc->device, vg->pool, NULL);
  free(vg->replays);
  free(vg->waits);
  free(vg->records);
  free(vg->printing);
}
