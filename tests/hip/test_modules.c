/* HIP modules from damaged and foreign images: kiln must reject them with
 * KILN_ERROR_INVALID_IMAGE before the runtime reads past their end, and
 * load the intact image. Modules of several images: every one loads, the
 * first that has a name gives its kernel, one for another GPU is passed
 * over, a broken one fails the module. Needs a HIP device (exits 77
 * without one). The images are in hip_test_images (tests/hip/meson.build):
 * the build's built-in kernels, embedded from the same file the library
 * embeds, and kernels/first.hip and second.hip. */
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
/* In tests/hip/meson.build's order. */
enum {
  BUILTINS,
  FIRST,  /* kiln_test_which (1), kiln_test_first */
  SECOND, /* kiln_test_which (2), kiln_test_second, kiln_test_mangled
             (C++ linkage) */
#if defined(KILN_TEST_HIP_OTHER_A)
  OTHER_A, /* second.hip for the architecture KILN_TEST_HIP_OTHER_A alone */
  OTHER_B, /* and for KILN_TEST_HIP_OTHER_B alone */
#endif
};

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

/* Launches `name` of `m`, one thread storing a number, and returns it. */
static uint32_t run_store(kiln_context *ctx, kiln_module *m,
                          const char *name) {
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, name, &k));
  kiln_buffer *out;
  check_ok(kiln_buffer_create(ctx, 4, KILN_BUFFER_ZERO, &out));
  kiln_launch_config c = kiln_launch_config_1d(1, 1);
  kiln_arg args[] = {kiln_arg_buffer(out, 0)};
  check_ok(kiln_launch(NULL, k, &c, args, 1));
  uint32_t value = 0;
  check_ok(kiln_buffer_read(NULL, out, 0, &value, 4));
  check_ok(kiln_buffer_destroy(out));
  return value;
}

static void test_intact(void **state) {
  kiln_module *m = NULL;
  check_ok(load(*state, hip_test_images[BUILTINS].data,
                hip_test_images[BUILTINS].size, &m));
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
  const size_t full = hip_test_images[BUILTINS].size;
  const size_t cuts[] = {12, 40, full / 2, full - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    /* A copy of exactly the prefix, so a read past it is a real overrun
     * that sanitizers and valgrind see. */
    void *prefix = malloc(cuts[i]);
    assert_non_null(prefix);
    memcpy(prefix, hip_test_images[BUILTINS].data, cuts[i]);
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

/* Every image loads, each with kernels of its own; a name in several
 * comes from the first of them in the caller's order. */
static void test_several_images(void **state) {
  kiln_context *ctx = *state;
  kiln_module_image images[] = {hip_test_images[FIRST],
                                hip_test_images[SECOND],
                                hip_test_images[BUILTINS]};
  kiln_module *m;
  check_ok(kiln_module_create(ctx, images, 3, &m));
  assert_int_equal(run_store(ctx, m, "kiln_test_which"), 1);
  assert_int_equal(run_store(ctx, m, "kiln_test_first"), 11);
  assert_int_equal(run_store(ctx, m, "kiln_test_second"), 22);
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "kiln_axpy_f32", &k));
  check_ok(kiln_module_destroy(m));

  kiln_module_image swapped[] = {images[1], images[0]};
  check_ok(kiln_module_create(ctx, swapped, 2, &m));
  assert_int_equal(run_store(ctx, m, "kiln_test_which"), 2);
  assert_int_equal(run_store(ctx, m, "kiln_test_first"), 11);
  check_ok(kiln_module_destroy(m));
}

/* HIP cannot list a module's kernels, so a missing one's message gives
 * the extern "C" hint whatever the module holds. */
static void test_not_found_message(void **state) {
  kiln_context *ctx = *state;
  kiln_module_image images[] = {hip_test_images[FIRST],
                                hip_test_images[SECOND]};
  kiln_module *m;
  check_ok(kiln_module_create(ctx, images, 2, &m));
  kiln_kernel *k = NULL;
  check_fails(kiln_module_get_kernel(m, "kiln_test_mangled", &k),
              KILN_ERROR_NOT_FOUND);
  assert_null(k);
  check_message_has("the module has no kernel named 'kiln_test_mangled' (a "
                    "C++ kernel keeps this name only when declared extern "
                    "\"C\")");
  if (strstr(kiln_last_error(), "passed over"))
    fail_msg("no image was passed over: %s", kiln_last_error());
  check_ok(kiln_module_destroy(m));
}

/* A broken image among good ones fails the module, naming it. */
static void test_broken_among_good(void **state) {
  kiln_context *ctx = *state;
  kiln_module_image images[] = {hip_test_images[FIRST],
                                hip_test_images[SECOND]};
  images[1].size /= 2;
  kiln_module *m = NULL;
  check_fails(kiln_module_create(ctx, images, 2, &m),
              KILN_ERROR_INVALID_IMAGE);
  assert_null(m);
  check_message_has("HIP image 1");
#if defined(KILN_TEST_HIP_NVIDIA)
  /* Whole, but rejected by the runtime: under HIP on NVIDIA an image is
   * whatever the CUDA driver loads, and it rejects PTX that does not
   * compile. */
  static const char bad_ptx[] =
      ".version 7.0\n.target sm_75\n.address_size 64\n"
      ".visible .entry kiln_test_bad(.param .u64 out)\n"
      "{\n    st.global.u32 [out], %kiln_no_such_register;\n    ret;\n}\n";
  images[1] = (kiln_module_image){KILN_IMAGE_HIP_CODE_OBJECT, bad_ptx,
                                  sizeof bad_ptx};
  check_fails(kiln_module_create(ctx, images, 2, &m),
              KILN_ERROR_INVALID_IMAGE);
  assert_null(m);
  check_message_has("HIP image 1 of 2 does not load");
#endif
}

/* An image with no code for this device is passed over while the others
 * load; a module of such images alone has none (KILN_ERROR_NO_IMAGE). */
static void test_other_gpu(void **state) {
#if defined(KILN_TEST_HIP_OTHER_A)
  kiln_context *ctx = *state;
  kiln_device_properties p;
  check_ok(kiln_context_get_properties(ctx, &p));
  /* Machine code for one architecture runs on no other (sm_75 on no later
   * GPU, sm_90 on no earlier one; gfx targets only on themselves). */
  const kiln_module_image other =
      hip_test_images[strcmp(p.architecture, KILN_TEST_HIP_OTHER_A) == 0
                          ? OTHER_B
                          : OTHER_A];
  kiln_module_image images[] = {other, hip_test_images[FIRST]};
  kiln_module *m;
  check_ok(kiln_module_create(ctx, images, 2, &m));
  assert_int_equal(run_store(ctx, m, "kiln_test_which"), 1);
  kiln_kernel *k = NULL;
  check_fails(kiln_module_get_kernel(m, "kiln_test_second", &k),
              KILN_ERROR_NOT_FOUND);
  check_message_has("passed over for having no code for this device: HIP "
                    "image 0 (hipErrorNoBinaryForGpu)");
  check_ok(kiln_module_destroy(m));

  kiln_module_image none[] = {other, other};
  m = NULL;
  check_fails(kiln_module_create(ctx, none, 2, &m), KILN_ERROR_NO_IMAGE);
  assert_null(m);
  check_message_has("HIP image 0: hipErrorNoBinaryForGpu");
  check_message_has("HIP image 1: hipErrorNoBinaryForGpu");
#else
  (void)state;
  kiln_skip("this build compiles for a single GPU target, so it has no "
            "image for another GPU");
#endif
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
      cmocka_unit_test(test_several_images),
      cmocka_unit_test(test_not_found_message),
      cmocka_unit_test(test_broken_among_good),
      cmocka_unit_test(test_other_gpu),
  };
  return cmocka_run_group_tests_name("hip: modules", tests, setup, teardown);
}
