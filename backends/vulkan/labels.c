/* KILN_TRACE=nvtx on Vulkan: the commands each kiln command records lie,
 * in the command buffer, inside a VK_EXT_debug_utils label of its NVTX
 * range's name, which RenderDoc and Nsight Systems show; a command the
 * core issues inside another (kiln_fill in a kiln_buffer_fill of odd
 * bytes) gets its label inside the other's, as its range is.
 *
 * The core names the commands on the thread that issues them (the labels
 * table's ops: a stack per thread, so two threads issuing on one stream
 * each label their own work, with no lock), and submit.c asks here as it
 * records a command into a batch: the labels the batch has open that the
 * thread's stack no longer holds are ended, those it lacks begun, before
 * the barrier that orders the command. What is open when a batch ends is
 * ended in it, so every batch is balanced, and a command split over
 * several batches (a staged write in chunks) is labelled in each.
 *
 * The transfer lane is the exception: a queue without graphics or compute
 * may not take labels in its command buffers, so its batch, which holds
 * one command, is wrapped in queue labels around its submission instead.
 * So is a graph's replay, the submission of a command buffer recorded
 * before (the build's commands, which the core never names, carry none).
 * Neither gets one under KILN_DEBUG=reorder, whose submissions are made
 * later, by whichever wait needs them.
 *
 * What records nothing gets no label: a write copied straight into mapped
 * memory, a read from cached mapped memory, a wait for an event (a
 * semaphore of the next submission). Without the extension (instance.c)
 * nothing is recorded, and the first label asked for says so once, at the
 * info level. */
#include "backends/vulkan/vulkan.h"

/* The commands the calling thread is issuing, outermost first: `depth`
 * counts them all, the first KILN_VULKAN_LABEL_DEPTH are kept (deeper ones
 * go unlabelled); each has an id no other label has had and its name, the
 * core's until stream_label_end. */
static _Thread_local struct {
  uint32_t depth;
  uint64_t ids[KILN_VULKAN_LABEL_DEPTH];
  const char *names[KILN_VULKAN_LABEL_DEPTH];
} current;

static atomic_uint_fast64_t last_id;
static atomic_flag said_off = ATOMIC_FLAG_INIT;

static uint32_t kept(void) {
  return current.depth < KILN_VULKAN_LABEL_DEPTH ? current.depth
                                                 : KILN_VULKAN_LABEL_DEPTH;
}

void kiln_vulkan_stream_label_begin(kiln_stream *s, const char *name) {
  (void)s;
  if (!kiln_vulkan_lib.vkCmdBeginDebugUtilsLabelEXT) {
    if (!atomic_flag_test_and_set(&said_off))
      kiln_log(KILN_LOG_INFO,
               "vulkan: KILN_TRACE=nvtx: no debug labels: the Vulkan "
               "instance has no %s",
               VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    return;
  }
  if (current.depth < KILN_VULKAN_LABEL_DEPTH) {
    current.ids[current.depth] = atomic_fetch_add(&last_id, 1) + 1;
    current.names[current.depth] = name;
  }
  current.depth++;
}

void kiln_vulkan_stream_label_end(kiln_stream *s) {
  (void)s;
  if (kiln_vulkan_lib.vkCmdBeginDebugUtilsLabelEXT && current.depth > 0)
    current.depth--;
}

static VkDebugUtilsLabelEXT label_info(uint32_t level) {
  return (VkDebugUtilsLabelEXT){
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_LABEL_EXT,
      .pLabelName = current.names[level],
  };
}

static void end_open(kiln_vulkan_stream *st, uint32_t keep) {
  for (; st->label_depth > keep; st->label_depth--)
    kiln_vulkan_lib.vkCmdEndDebugUtilsLabelEXT(st->cmd);
}

void kiln_vulkan_label_submission(kiln_vulkan_stream *st) {
  const uint32_t want = kept();
  st->label_queued = want ? current.ids[want - 1] : 0;
}

bool kiln_vulkan_label_issuing(void) { return current.depth > 0; }

void kiln_vulkan_label_command(kiln_vulkan_stream *st) {
  if (st->base.building) return;
  const uint32_t want = kept();
  uint32_t same = 0;
  while (same < st->label_depth && same < want &&
         st->label_open[same] == current.ids[same])
    same++;
  end_open(st, same);
  if (st->lane == KILN_VULKAN_LANE_TRANSFER) {
    kiln_vulkan_label_submission(st);
    return;
  }
  for (; st->label_depth < want; st->label_depth++) {
    VkDebugUtilsLabelEXT info = label_info(st->label_depth);
    kiln_vulkan_lib.vkCmdBeginDebugUtilsLabelEXT(st->cmd, &info);
    st->label_open[st->label_depth] = current.ids[st->label_depth];
  }
}

void kiln_vulkan_label_close(kiln_vulkan_stream *st, bool recorded) {
  if (recorded) end_open(st, 0);
  st->label_depth = 0;
  if (!recorded) st->label_queued = 0;
}

uint32_t kiln_vulkan_label_queue_begin(kiln_vulkan_stream *st, VkQueue queue) {
  const uint64_t id = st->label_queued;
  const uint32_t want = kept();
  st->label_queued = 0;
  if (!id || !want || current.ids[want - 1] != id) return 0;
  for (uint32_t level = 0; level < want; level++) {
    VkDebugUtilsLabelEXT info = label_info(level);
    kiln_vulkan_lib.vkQueueBeginDebugUtilsLabelEXT(queue, &info);
  }
  return want;
}

void kiln_vulkan_label_queue_end(VkQueue queue, uint32_t count) {
  for (uint32_t i = 0; i < count; i++)
    kiln_vulkan_lib.vkQueueEndDebugUtilsLabelEXT(queue);
}
