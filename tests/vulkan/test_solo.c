/* The batches of one launch a Vulkan stream keeps (backends/vulkan/solo.c),
 * on the stream's own books: a launch into an idle stream keeps its batch
 * once and finds it again, and once its kernel's pipelines are destroyed
 * the kept batch is never found, even by a launch whose new pipeline has
 * the old one's handle (which a driver may hand out again: lavapipe's are
 * pointers), and goes back to the stream's spare command buffers. The
 * conformance suite's launches_repeated_alone checks the results through
 * the API; a reused handle cannot be arranged there. Runs with the
 * validation layer on (meson.build) and fails on any of its messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/vulkan/vulkan.h"
#include "tests/core/kiln_check.h"
#include "validation_log.h"

extern const kiln_module_image vk_test_images[];
extern const size_t vk_test_images_count;
enum { NO_ARGS = 3 };

/* The kept batches' places that hold one. */
static size_t kept_count(const kiln_vulkan_stream *st) {
  size_t n = 0;
  for (size_t i = 0; i < KILN_VULKAN_SOLO_KEPT; i++)
    n += st->solo.kept[i].cmd != VK_NULL_HANDLE;
  return n;
}

static void kept_batch_outlives_no_pipeline(void **state) {
  (void)state;
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_VULKAN;
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(ctx);
  kiln_stream *s;
  check_ok(kiln_stream_create(ctx, &s));
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_module *m;
  check_ok(kiln_module_create(ctx, &vk_test_images[NO_ARGS], 1, &m));
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "vk_no_args", &k));
  const kiln_launch_config c = kiln_launch_config_1d(1000, 128);
  for (int i = 0; i < 3; i++) {
    check_ok(kiln_launch(s, k, &c, NULL, 0));
    check_ok(kiln_stream_synchronize(s));
  }
  /* Kept by the first launch, found by the next two. */
  assert_int_equal(kept_count(st), 1);
  size_t at = 0;
  while (!st->solo.kept[at].cmd) at++;
  const kiln_vulkan_solo_key key = st->solo.kept[at].key;
  const VkCommandBuffer cmd = st->solo.kept[at].cmd;
  assert_int_equal(key.grid[0], 8);
  kiln_vulkan_stream_lock(st);
  assert_ptr_equal(kiln_vulkan_solo_find(st, &key), cmd);
  kiln_vulkan_stream_unlock(st);

  check_ok(kiln_module_destroy(m));
  /* A launch of a new pipeline with the old handle looks for this. */
  kiln_vulkan_solo_key now = key;
  now.epoch = atomic_load(&vc->pipeline_epoch);
  if (now.epoch == key.epoch)
    fail_msg("destroying a module left the context's pipeline epoch at %llu",
             (unsigned long long)key.epoch);
  kiln_vulkan_lane_state *ls = &st->lanes[KILN_VULKAN_LANE_COMPUTE];
  const size_t spare = ls->spare_count;
  kiln_vulkan_stream_lock(st);
  const VkCommandBuffer found = kiln_vulkan_solo_find(st, &now);
  kiln_vulkan_stream_unlock(st);
  if (found)
    fail_msg("a batch kept for a destroyed pipeline was found again for a "
             "new one with its handle");
  assert_int_equal(kept_count(st), 0);
  assert_int_equal(ls->spare_count, spare + 1);
  assert_ptr_equal(ls->spare[spare], cmd);

  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_context_destroy(ctx));
  assert_int_equal(vk_test_validation_messages, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(kept_batch_outlives_no_pipeline),
  };
  return vk_test_run_on_device("vulkan-solo", tests,
                               sizeof tests / sizeof *tests);
}
