/* HIP modules from damaged and foreign images: kiln must reject them with
 * KILN_ERROR_INVALID_IMAGE before the runtime reads past their end, and
 * load the intact image. Needs a HIP device (exits 77 without one); the
 * image is the build's built-in kernels (hip_test_images, embedded from the
 * same file the library embeds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../core/kiln_check.h"

extern const kiln_module_image hip_test_images[];

static int setup(void **state) {
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_HIP;
  o.device_index = 0;
  kiln_context *ctx = NULL;
  if (kiln_context_create(&o, &ctx) != KILN_OK) return -1;
  *state = ctx;
  return 0;
}

static int teardown(void **state) {
  return kiln_context_destroy(*state) == KILN_OK ? 0 : -1;
}

static kiln_status load(kiln_context *ctx, const void *data, size_t size,
                        kiln_module **out) {
  kiln_module_image image = {KILN_IMAGE_HIP_CODE_OBJECT, data, size};
  return kiln_module_create(ctx, &image, 1, out);
}

static void test_intact(void **state) {
  kiln_module *m = NULL;
  check_ok(load(*state, hip_test_images[0].data, hip_test_images[0].size, &m));
  kiln_kernel *k = NULL, *again = NULL;
  check_ok(kiln_module_get_kernel(m, "kiln_axpy_f32", &k));
  check_ok(kiln_module_get_kernel(m, "kiln_axpy_f32", &again));
  assert_ptr_equal(k, again);
  check_fails(kiln_module_get_kernel(m, "no_such_kernel", &k),
              KILN_ERROR_NOT_FOUND);
  check_message_has("no_such_kernel");
  check_ok(kiln_module_destroy(m));
}

/* Every prefix the header claims more than: the whole header, and half. */
static void test_truncated(void **state) {
  const size_t full = hip_test_images[0].size;
  const size_t cuts[] = {12, 40, full / 2, full - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    /* A copy of exactly the prefix, so a read past it is a real overrun
     * that sanitizers and valgrind see. */
    void *prefix = malloc(cuts[i]);
    assert_non_null(prefix);
    memcpy(prefix, hip_test_images[0].data, cuts[i]);
    kiln_module *m = NULL;
    check_fails(load(*state, prefix, cuts[i], &m), KILN_ERROR_INVALID_IMAGE);
    assert_null(m);
    free(prefix);
  }
}

static void test_garbage(void **state) {
  unsigned char garbage[256];
  for (size_t i = 0; i < sizeof garbage; i++)
    garbage[i] = (unsigned char)(i * 37 + 11);
  kiln_module *m = NULL;
  kiln_status st = load(*state, garbage, sizeof garbage, &m);
  if (st != KILN_ERROR_INVALID_IMAGE && st != KILN_ERROR_NO_IMAGE)
    fail_msg("loading garbage gave %s (%s)", kiln_status_name(st),
             kiln_last_error());
  assert_null(m);
}

int main(void) {
  if (kiln_backend_available(KILN_BACKEND_HIP, NULL) != KILN_OK) {
    printf("skipped: %s\n", kiln_last_error());
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_intact),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_garbage),
  };
  return cmocka_run_group_tests_name("hip: modules", tests, setup, teardown);
}
