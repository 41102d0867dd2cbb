/* When a Vulkan stream submits the batch it records (backends/vulkan/
 * submit.c), on the stream's own books: while the device is busy, launches
 * fill the batch and none is submitted early; once the device has run dry,
 * the batch goes at the next 16th command, not only at the 256th, so the
 * device is not left idle while the host records the rest of it. The
 * device is held busy by a gate (a timeline semaphore of the test's that
 * the stream waits on, kiln_stream_wait_native) rather than by a slow
 * kernel, so no figure depends on the machine's speed. Runs with the
 * validation layer on (meson.build) and fails on any of its messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "backends/vulkan/vulkan.h"
#include "tests/core/kiln_check.h"
#include "validation_log.h"

extern const kiln_module_image vk_test_images[];
extern const size_t vk_test_images_count;
enum { NO_ARGS = 3 };

/* A timeline semaphore of the test's on ctx's device, at 0. */
typedef struct gate {
  VkDevice device;
  VkSemaphore semaphore;
  PFN_vkSignalSemaphore signal;
  PFN_vkDestroySemaphore destroy;
} gate;

static void gate_make(kiln_context *ctx, gate *g) {
  kiln_native_context nc;
  check_ok(kiln_context_get_native(ctx, &nc));
  PFN_vkGetInstanceProcAddr gipa =
      (PFN_vkGetInstanceProcAddr)nc.vk_get_instance_proc_addr;
  PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(
      (VkInstance)nc.vk_instance, "vkGetDeviceProcAddr");
  assert_non_null(gdpa);
  g->device = (VkDevice)nc.vk_device;
  PFN_vkCreateSemaphore create =
      (PFN_vkCreateSemaphore)gdpa(g->device, "vkCreateSemaphore");
  g->signal = (PFN_vkSignalSemaphore)gdpa(g->device, "vkSignalSemaphore");
  g->destroy = (PFN_vkDestroySemaphore)gdpa(g->device, "vkDestroySemaphore");
  assert_true(create && g->signal && g->destroy);
  VkSemaphoreTypeCreateInfo type = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
  VkSemaphoreCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
  assert_int_equal(create(g->device, &info, NULL, &g->semaphore), VK_SUCCESS);
}

static void gate_open(gate *g) {
  VkSemaphoreSignalInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
      .semaphore = g->semaphore,
      .value = 1};
  assert_int_equal(g->signal(g->device, &info), VK_SUCCESS);
}

/* What the stream has submitted, and whether a batch is open. */
static uint64_t submitted(kiln_vulkan_stream *st, uint32_t *recorded) {
  kiln_vulkan_stream_lock(st);
  const uint64_t n = st->submitted;
  *recorded = st->cmd ? st->recorded : 0;
  kiln_vulkan_stream_unlock(st);
  return n;
}

/* Polls until the device has completed all the stream submitted, without
 * submitting what it recorded since; fails after 60 s. */
static void wait_for_device(kiln_vulkan_stream *st) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    kiln_vulkan_stream_lock(st);
    const kiln_status s = kiln_vulkan_stream_poll(st);
    const bool done = st->completed >= st->submitted;
    kiln_vulkan_stream_unlock(st);
    check_ok(s);
    if (done) return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > 60)
      fail_msg("the device did not complete the stream's submissions in 60 s "
               "after the gate opened");
    nanosleep(&(struct timespec){0, 100000}, NULL);
  }
}

static void idle_device_gets_the_batch_early(void **state) {
  (void)state;
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_VULKAN;
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_stream *s;
  check_ok(kiln_stream_create(ctx, &s));
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_module *m;
  check_ok(kiln_module_create(ctx, &vk_test_images[NO_ARGS], 1, &m));
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "vk_no_args", &k));
  const kiln_launch_config c = kiln_launch_config_1d(1000, 128);
  gate g;
  gate_make(ctx, &g);
  check_ok(kiln_stream_wait_native(s, (uint64_t)(uintptr_t)g.semaphore, 1));

  /* The first launch into the idle stream goes at once, behind the gate. */
  uint32_t recorded = 0;
  const uint64_t before = submitted(st, &recorded);
  check_ok(kiln_launch(s, k, &c, NULL, 0));
  const uint64_t held = submitted(st, &recorded);
  assert_int_equal(held, before + 1);
  assert_int_equal(recorded, 0);

  /* While the device waits at the gate, 47 launches fill one batch: the
   * looks at the 16th and 32nd find the device busy. */
  for (int i = 0; i < 47; i++) check_ok(kiln_launch(s, k, &c, NULL, 0));
  if (submitted(st, &recorded) != held || recorded != 47)
    fail_msg("with the device busy, 47 launches left %u commands recorded "
             "and %llu submissions after the first (expected 47 and 0)",
             recorded,
             (unsigned long long)(submitted(st, &recorded) - held));

  /* The device runs dry; the 48th command of the batch submits it. */
  gate_open(&g);
  wait_for_device(st);
  assert_int_equal(submitted(st, &recorded), held);
  check_ok(kiln_launch(s, k, &c, NULL, 0));
  const uint64_t after = submitted(st, &recorded);
  if (after != held + 1 || recorded != 0)
    fail_msg("with the device idle, the 48th command of a batch left it "
             "open (%u commands recorded, %llu submissions since): the "
             "device waits for the 256th",
             recorded, (unsigned long long)(after - held));

  check_ok(kiln_stream_synchronize(s));
  g.destroy(g.device, g.semaphore, NULL);
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_context_destroy(ctx));
  assert_int_equal(vk_test_validation_messages, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(idle_device_gets_the_batch_early),
  };
  return vk_test_run_on_device("vulkan-batches", tests,
                               sizeof tests / sizeof *tests);
}
