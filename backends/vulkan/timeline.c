/* Timeline semaphores, each shared by its stream, the events recorded on
 * it and the waits of other streams, and destroyed when the last of them
 * lets go. */
#include <stdlib.h>

#include "backends/vulkan/vulkan.h"

kiln_status kiln_vulkan_timeline_create(kiln_vulkan_context *vc,
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
  for (uint32_t i = 0; i < vc->queues.compute_count; i++)
    drain_queue(vc, &vc->queues.compute[i]);
  for (uint32_t i = 0; i < vc->queues.transfer_count; i++)
    drain_queue(vc, &vc->queues.transfer[i]);
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
