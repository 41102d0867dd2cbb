/* KILN_DEBUG=reorder: submissions are held back instead of made, and made
 * only when the host waits for them, in an order unlike the program's.
 *
 * A device with one queue (lavapipe, CI's) runs every stream's work in the
 * order it was submitted, so a missing cross-stream wait goes unseen: the
 * work it should have waited for ran first anyway. Held, each stream's
 * work runs only once something the host does needs it done (a wait for
 * its semaphore: a synchronize, a blocking read, an event's query, the
 * bound on work in flight), and then with only what it waits for through
 * semaphores submitted before it. So work another stream did not say it
 * waits for comes after it, and a context-wide release submits the stream
 * held last first, which puts the program's order upside down.
 *
 * Two orders stay as they must: a stream's own submissions are made in
 * its order (a timeline's signals must increase), and a submission is
 * made only after those that signal what it waits for, since a queue that
 * runs submissions one after another (lavapipe's thread) would otherwise
 * block for good on a wait for a signal still held here.
 *
 * Polls that kiln makes for itself (recycling command buffers, forgetting
 * finished writes) read the semaphores as they are, so held work counts as
 * not done and stays held. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

typedef enum held_state { HELD, RELEASED } held_state;

typedef struct kiln_vulkan_held {
  kiln_vulkan_queue *queue;
  VkCommandBuffer cmd; /* VK_NULL_HANDLE for waits only */
  VkSemaphore *waits;
  uint64_t *wait_values;
  uint32_t wait_count;
  VkSemaphore signal;
  uint64_t value;
  held_state state;
} kiln_vulkan_held;

kiln_status kiln_vulkan_hold(kiln_vulkan_context *vc, kiln_vulkan_queue *queue,
                             VkCommandBuffer cmd, const VkSemaphore *waits,
                             const uint64_t *wait_values, uint32_t wait_count,
                             VkSemaphore signal, uint64_t value) {
  VkSemaphore *w = NULL;
  uint64_t *v = NULL;
  if (wait_count > 0) {
    w = malloc(wait_count * sizeof *w);
    v = malloc(wait_count * sizeof *v);
  }
  pthread_mutex_lock(&vc->reorder.lock);
  kiln_vulkan_held *held = vc->reorder.held;
  if (vc->reorder.count == vc->reorder.cap) {
    size_t cap = vc->reorder.cap ? vc->reorder.cap * 2 : 64;
    held = realloc(vc->reorder.held, cap * sizeof *held);
    if (held) {
      vc->reorder.held = held;
      vc->reorder.cap = cap;
    }
  }
  if (!held || (wait_count > 0 && (!w || !v))) {
    pthread_mutex_unlock(&vc->reorder.lock);
    free(w);
    free(v);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory holding Vulkan work "
                          "(KILN_DEBUG=reorder)");
  }
  if (wait_count > 0) {
    memcpy(w, waits, wait_count * sizeof *w);
    memcpy(v, wait_values, wait_count * sizeof *v);
  }
  vc->reorder.held[vc->reorder.count++] = (kiln_vulkan_held){
      .queue = queue,
      .cmd = cmd,
      .waits = w,
      .wait_values = v,
      .wait_count = wait_count,
      .signal = signal,
      .value = value,
      .state = HELD,
  };
  pthread_mutex_unlock(&vc->reorder.lock);
  return KILN_OK;
}

/* Submits held submission i after the held ones it needs: first its
 * stream's earlier ones (each after what it needs), then, the newest
 * first, other streams' that signal what it waits for, so that the
 * program's order is kept only where a wait asks for it. Only submissions
 * held before it can be needed (a wait names a value already handed to
 * kiln_vulkan_hold), so the recursion ends. reorder.lock held. */
static kiln_status release_one(kiln_vulkan_context *vc, size_t i) {
  kiln_vulkan_held *h = &vc->reorder.held[i];
  if (h->state != HELD) return KILN_OK;
  kiln_status s = KILN_OK;
  for (size_t j = i; j-- > 0;)
    if (vc->reorder.held[j].state == HELD &&
        vc->reorder.held[j].signal == h->signal) {
      s = release_one(vc, j);
      break;
    }
  for (size_t j = i; s == KILN_OK && j-- > 0;) {
    const kiln_vulkan_held *e = &vc->reorder.held[j];
    bool needed = false;
    for (uint32_t k = 0; k < h->wait_count && !needed; k++)
      needed = e->signal == h->waits[k] && e->value <= h->wait_values[k];
    if (needed && e->state == HELD) s = release_one(vc, j);
  }
  /* Marked first: a submission that failed is not tried again. */
  h->state = RELEASED;
  if (s != KILN_OK) return s;
  enum { INLINE_WAITS = 8 };
  VkPipelineStageFlags inline_stages[INLINE_WAITS];
  VkPipelineStageFlags *stages = inline_stages;
  if (h->wait_count > INLINE_WAITS &&
      !(stages = malloc(h->wait_count * sizeof *stages)))
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory releasing Vulkan work "
                          "(KILN_DEBUG=reorder)");
  for (uint32_t k = 0; k < h->wait_count; k++)
    stages[k] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  VkTimelineSemaphoreSubmitInfo timeline = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .waitSemaphoreValueCount = h->wait_count,
      .pWaitSemaphoreValues = h->wait_values,
      .signalSemaphoreValueCount = 1,
      .pSignalSemaphoreValues = &h->value,
  };
  VkSubmitInfo info = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .pNext = &timeline,
      .waitSemaphoreCount = h->wait_count,
      .pWaitSemaphores = h->waits,
      .pWaitDstStageMask = stages,
      .commandBufferCount = h->cmd ? 1 : 0,
      .pCommandBuffers = &h->cmd,
      .signalSemaphoreCount = 1,
      .pSignalSemaphores = &h->signal,
  };
  pthread_mutex_lock(&h->queue->lock);
  VkResult r = vc->vk.vkQueueSubmit(h->queue->handle, 1, &info, VK_NULL_HANDLE);
  pthread_mutex_unlock(&h->queue->lock);
  if (stages != inline_stages) free(stages);
  return r == VK_SUCCESS ? KILN_OK
                         : kiln_vulkan_error(r,
                                             "vkQueueSubmit (KILN_DEBUG="
                                             "reorder, released)");
}

/* Drops the released submissions from the list, keeping the order of the
 * rest. reorder.lock held. */
static void compact(kiln_vulkan_context *vc) {
  size_t keep = 0;
  for (size_t i = 0; i < vc->reorder.count; i++) {
    if (vc->reorder.held[i].state == HELD) {
      vc->reorder.held[keep++] = vc->reorder.held[i];
    } else {
      free(vc->reorder.held[i].waits);
      free(vc->reorder.held[i].wait_values);
    }
  }
  vc->reorder.count = keep;
}

kiln_status kiln_vulkan_release(kiln_vulkan_context *vc, VkSemaphore semaphore,
                                uint64_t value) {
  pthread_mutex_lock(&vc->reorder.lock);
  kiln_status s = KILN_OK;
  /* The newest of the semaphore's submissions up to `value` brings the
   * older ones with it. */
  size_t last = SIZE_MAX;
  for (size_t i = 0; i < vc->reorder.count; i++)
    if (vc->reorder.held[i].signal == semaphore &&
        vc->reorder.held[i].value <= value)
      last = i;
  if (last != SIZE_MAX) {
    s = release_one(vc, last);
    compact(vc);
  }
  pthread_mutex_unlock(&vc->reorder.lock);
  return s;
}

kiln_status kiln_vulkan_release_all(kiln_vulkan_context *vc) {
  pthread_mutex_lock(&vc->reorder.lock);
  kiln_status s = KILN_OK;
  /* The stream held last goes first, with all it holds. */
  while (vc->reorder.count > 0) {
    kiln_status r = release_one(vc, vc->reorder.count - 1);
    if (s == KILN_OK) s = r;
    compact(vc);
  }
  pthread_mutex_unlock(&vc->reorder.lock);
  return s;
}

void kiln_vulkan_forget_held(kiln_vulkan_context *vc, VkSemaphore semaphore) {
  pthread_mutex_lock(&vc->reorder.lock);
  for (size_t i = 0; i < vc->reorder.count; i++)
    if (vc->reorder.held[i].signal == semaphore)
      vc->reorder.held[i].state = RELEASED;
  compact(vc);
  pthread_mutex_unlock(&vc->reorder.lock);
}
