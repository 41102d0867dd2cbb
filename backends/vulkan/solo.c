/* The batches of one launch a stream keeps (vulkan.h, "How it works"). A
 * launch into an idle stream is recorded and submitted alone; NVIDIA's
 * driver takes about 2.3 µs to record and submit such a batch anew
 * against one already recorded (docs/performance.md, twelfth session),
 * which a loop of a launch and a wait pays each time. So the stream
 * keeps a few of them, by launch, and launch.c submits a kept one again
 * when the same launch comes to the stream idle: same pipeline, grid and
 * push constants (the arguments, buffers as addresses) make the same
 * commands. Only the books are here: launch.c decides and submit.c
 * submits and keeps. */
#include <string.h>

#include "backends/vulkan/vulkan.h"

static bool same_key(const kiln_vulkan_solo_key *a,
                     const kiln_vulkan_solo_key *b) {
  return a->pipeline == b->pipeline && a->epoch == b->epoch &&
         a->grid[0] == b->grid[0] && a->grid[1] == b->grid[1] &&
         a->grid[2] == b->grid[2] && a->push_bytes == b->push_bytes &&
         memcmp(a->push, b->push, a->push_bytes) == 0;
}

/* Gives kept[i]'s command buffer back to the compute lane's spares and
 * empties the place. Not in flight: batches are looked up and kept only
 * for a launch that found the stream idle. */
static void drop(kiln_vulkan_stream *st, size_t i) {
  kiln_vulkan_lane_state *ls = &st->lanes[KILN_VULKAN_LANE_COMPUTE];
  ls->spare[ls->spare_count++] = st->solo.kept[i].cmd;
  st->solo.kept[i].cmd = VK_NULL_HANDLE;
}

VkCommandBuffer kiln_vulkan_solo_find(kiln_vulkan_stream *st,
                                      const kiln_vulkan_solo_key *key) {
  kiln_vulkan_solo *so = &st->solo;
  for (size_t i = 0; i < KILN_VULKAN_SOLO_KEPT; i++) {
    if (!so->kept[i].cmd) continue;
    if (so->kept[i].key.epoch != key->epoch) {
      drop(st, i);
    } else if (same_key(&so->kept[i].key, key)) {
      so->kept[i].used = ++so->clock;
      return so->kept[i].cmd;
    }
  }
  return VK_NULL_HANDLE;
}

void kiln_vulkan_solo_keep(kiln_vulkan_stream *st, VkCommandBuffer cmd) {
  kiln_vulkan_solo *so = &st->solo;
  size_t at = 0;
  for (size_t i = 0; i < KILN_VULKAN_SOLO_KEPT; i++) {
    if (!so->kept[i].cmd) {
      at = i;
      break;
    }
    if (so->kept[i].used < so->kept[at].used) at = i;
  }
  if (so->kept[at].cmd) drop(st, at);
  so->kept[at].key = so->pending;
  so->kept[at].cmd = cmd;
  so->kept[at].used = ++so->clock;
  kiln_log(KILN_LOG_DEBUG,
           "vulkan: a stream keeps the batch of a launch of %u x %u x %u "
           "workgroups, to submit it again when the launch repeats",
           so->pending.grid[0], so->pending.grid[1], so->pending.grid[2]);
}
