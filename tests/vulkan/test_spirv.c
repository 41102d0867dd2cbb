/* The Vulkan backend's SPIR-V reflection (backends/vulkan/spirv.c), on the
 * test kernels of kernels/ and on broken images. Needs no device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/vulkan/vulkan.h"

/* tools/kiln-embed's list of the kernels/ shaders, in meson.build's order. */
extern const kiln_module_image vk_test_images[];
enum { FIXED_SIZE, LAYOUT, MIXED_ARGS, NO_ARGS };

static void reflect_ok(int which, kiln_vulkan_spirv_info *info) {
  const kiln_module_image *img = &vk_test_images[which];
  assert_int_equal(kiln_vulkan_spirv_reflect(img->data, img->size, 0, info),
                   KILN_OK);
  assert_int_equal(info->entry_point_count, 1);
}

static void fixed_block_size_and_arguments_in_a_function(void **state) {
  (void)state;
  kiln_vulkan_spirv_info info;
  reflect_ok(FIXED_SIZE, &info);
  const kiln_vulkan_spirv_entry_point *e = &info.entry_points[0];
  assert_string_equal(e->name, "vk_fixed_size");
  assert_int_equal(e->push_constant_bytes, 12);
  assert_int_equal(e->local_size[0], 64);
  assert_int_equal(e->local_size[1], 2);
  assert_int_equal(e->local_size[2], 1);
  for (int d = 0; d < 3; d++) assert_int_equal(e->local_size_spec_id[d], -1);
  assert_false(info.has_shared_bytes_spec);
  kiln_vulkan_spirv_free(&info);
}

static void specialized_block_size_without_arguments(void **state) {
  (void)state;
  kiln_vulkan_spirv_info info;
  reflect_ok(NO_ARGS, &info);
  const kiln_vulkan_spirv_entry_point *e = &info.entry_points[0];
  assert_string_equal(e->name, "vk_no_args");
  assert_int_equal(e->push_constant_bytes, 0);
  for (int d = 0; d < 3; d++) assert_int_equal(e->local_size_spec_id[d], d);
  kiln_vulkan_spirv_free(&info);
}

static void every_scalar_width(void **state) {
  (void)state;
  kiln_vulkan_spirv_info info;
  reflect_ok(MIXED_ARGS, &info);
  assert_int_equal(info.entry_points[0].push_constant_bytes, 40);
  kiln_vulkan_spirv_free(&info);
}

static void matrices_arrays_and_shared_bytes(void **state) {
  (void)state;
  kiln_vulkan_spirv_info info;
  reflect_ok(LAYOUT, &info);
  assert_int_equal(info.entry_points[0].push_constant_bytes, 60);
  assert_true(info.has_shared_bytes_spec);
  kiln_vulkan_spirv_free(&info);
}

/* Reflects `size` bytes of `words` and expects INVALID_IMAGE with `text`
 * in the message. */
static void expect_invalid(const uint32_t *words, size_t size,
                           const char *text) {
  kiln_vulkan_spirv_info info;
  kiln_status st = kiln_vulkan_spirv_reflect(words, size, 3, &info);
  assert_int_equal(st, KILN_ERROR_INVALID_IMAGE);
  if (!strstr(kiln_last_error(), text))
    fail_msg("message \"%s\" lacks \"%s\"", kiln_last_error(), text);
  assert_non_null(strstr(kiln_last_error(), "image 3"));
  assert_null(info.entry_points);
}

static void broken_images(void **state) {
  (void)state;
  const kiln_module_image *img = &vk_test_images[MIXED_ARGS];
  size_t words = img->size / 4;
  uint32_t *w = malloc(img->size + 8);
  assert_non_null(w);
  memcpy(w, img->data, img->size);

  expect_invalid(w, img->size - 2, "multiple of 4");
  expect_invalid(w, 16, "shorter than a SPIR-V header");
  w[0] = 0x12345678;
  expect_invalid(w, img->size, "magic");
  w[0] = 0x03022307;
  expect_invalid(w, img->size, "byte-swapped");
  w[0] = 0x07230203;

  /* The header alone: valid, but nothing to launch. */
  expect_invalid(w, 20, "no GLCompute entry point");

  /* An instruction that claims more words than there are. */
  memcpy(w, img->data, img->size);
  w[words] = (5u << 16) | 1u; /* OpSource, 5 words, 1 present */
  expect_invalid(w, img->size + 4, "runs past the end");
  w[words] = 0; /* word count 0 */
  expect_invalid(w, img->size + 4, "runs past the end");

  /* Ids beyond the declared bound. */
  w[3] = 2;
  expect_invalid(w, img->size, "bound");
  w[3] = 0;
  expect_invalid(w, img->size, "id bound is out of range");
  free(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fixed_block_size_and_arguments_in_a_function),
      cmocka_unit_test(specialized_block_size_without_arguments),
      cmocka_unit_test(every_scalar_width),
      cmocka_unit_test(matrices_arrays_and_shared_bytes),
      cmocka_unit_test(broken_images),
  };
  return cmocka_run_group_tests_name("vulkan-spirv", tests, NULL, NULL);
}
