/* The host's waits for a timeline semaphore, as the context's sync policy
 * says, and the probe that turns a wait for faulted work into a lost
 * device. */
#include <sched.h>

#include "backends/vulkan/vulkan.h"

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
  if (pthread_mutex_trylock(&vc->queues.compute[0].lock) != 0) return KILN_OK;
  VkResult r = vc->vk.vkQueueSubmit(vc->queues.compute[0].handle, 0, NULL,
                                    VK_NULL_HANDLE);
  pthread_mutex_unlock(&vc->queues.compute[0].lock);
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
  if (vc->reorder.on) {
    kiln_status s = kiln_vulkan_release(vc, semaphore, value);
    if (s != KILN_OK) return s;
  }
  const kiln_sync_policy policy = block ? KILN_SYNC_BLOCK : vc->base.sync;
  const bool polls = policy == KILN_SYNC_SPIN || policy == KILN_SYNC_YIELD;
  /* auto: spin a little first, then poll yielding the core, for the
   * latency of short waits (core/backend.h). */
  if (policy == KILN_SYNC_AUTO) {
    const uint64_t phases[2] = {KILN_SYNC_AUTO_SPIN_NS,
                                KILN_SYNC_AUTO_YIELD_NS -
                                    KILN_SYNC_AUTO_SPIN_NS};
    uint64_t spent = 0;
    for (int i = 0; i < 2 && spent < timeout_ns; i++) {
      const uint64_t budget =
          timeout_ns - spent < phases[i] ? timeout_ns - spent : phases[i];
      VkResult r = poll_for(vc, semaphore, value, budget, i == 1);
      if (r == VK_SUCCESS) return KILN_OK;
      if (r != VK_TIMEOUT)
        return kiln_vulkan_error(r, "vkGetSemaphoreCounterValue");
      spent = kiln_now_ns() - start;
    }
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
