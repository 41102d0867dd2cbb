/* What only the Vulkan backend has, through the public API: kernels whose
 * block size is fixed in the shader, kernels without arguments, the
 * push-constant layout of every scalar width, subgroup operations (and
 * those the device lacks, refused), modules of several SPIR-V images,
 * staged transfers seen from other streams, and where copies go
 * (KILN_VULKAN_TRANSFER). Runs with the
 * validation layer on (meson.build) and fails on any of its messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <vulkan/vulkan.h>

#include "kiln/kiln.h"
#include "validation_log.h"

extern const kiln_module_image vk_test_images[];
extern const size_t vk_test_images_count;
enum { FIXED_SIZE, LAYOUT, MIXED_ARGS, NO_ARGS, SUBGROUP_SUM };

static kiln_context *ctx;
#define check_ok(call)                                                         \
  do {                                                                         \
    kiln_status st_ = (call);                                                  \
    if (st_ != KILN_OK)                                                        \
      fail_msg("%s: %s: %s", #call, kiln_status_name(st_), kiln_last_error()); \
  } while (0)

static int setup(void **state) {
  (void)state;
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_VULKAN;
  return kiln_context_create(&o, &ctx) == KILN_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return kiln_context_destroy(ctx) == KILN_OK && vk_test_validation_messages == 0 ? 0
                                                                          : -1;
}

static kiln_kernel *kernel_of(kiln_module *m, const char *name) {
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, name, &k));
  return k;
}

static void fixed_block_size(void **state) {
  (void)state;
  kiln_module *m;
  check_ok(kiln_module_create(ctx, &vk_test_images[FIXED_SIZE], 1, &m));
  kiln_kernel *k = kernel_of(m, "vk_fixed_size");
  enum { N = 300 };
  kiln_buffer *out;
  check_ok(kiln_buffer_create(ctx, N * 4, KILN_BUFFER_ZERO, &out));
  kiln_arg args[2] = {kiln_arg_buffer(out, 0), kiln_arg_u32(N)};
  kiln_launch_config c = {{3, 2, 1}, {64, 2, 1}, 0};
  check_ok(kiln_launch(NULL, k, &c, args, 2));
  uint32_t got[N];
  check_ok(kiln_buffer_read(NULL, out, 0, got, sizeof got));
  for (uint32_t i = 0; i < N; i++) assert_int_equal(got[i], i);

  c.block.x = 128;
  c.block.y = 1;
  assert_int_equal(kiln_launch(NULL, k, &c, args, 2), KILN_ERROR_LAUNCH_FAILED);
  assert_non_null(strstr(kiln_last_error(), "fixed at 64x2x1"));
  check_ok(kiln_buffer_destroy(out));
  check_ok(kiln_module_destroy(m));
}

static void kernel_without_arguments(void **state) {
  (void)state;
  kiln_module *m;
  check_ok(kiln_module_create(ctx, &vk_test_images[NO_ARGS], 1, &m));
  kiln_kernel *k = kernel_of(m, "vk_no_args");
  kiln_launch_config c = kiln_launch_config_1d(1000, 128);
  check_ok(kiln_launch(NULL, k, &c, NULL, 0));
  kiln_arg extra = kiln_arg_u32(1);
  assert_int_not_equal(kiln_launch(NULL, k, &c, &extra, 1), KILN_OK);
  check_ok(kiln_context_synchronize(ctx));
  check_ok(kiln_module_destroy(m));
}

static void every_scalar_width(void **state) {
  (void)state;
  kiln_module *m;
  check_ok(kiln_module_create(ctx, &vk_test_images[MIXED_ARGS], 1, &m));
  kiln_buffer *out;
  check_ok(kiln_buffer_create(ctx, 24, KILN_BUFFER_ZERO, &out));
  const int64_t i64 = -0x123456789abcdefLL;
  const uint64_t u64 = 0xfedcba9876543210ULL;
  kiln_arg args[5] = {kiln_arg_buffer(out, 0), kiln_arg_f32(-2.5f),
                      kiln_arg_i64(i64), kiln_arg_u32(0xdeadbeefu),
                      kiln_arg_u64(u64)};
  kiln_launch_config c = kiln_launch_config_1d(1, 32);
  check_ok(kiln_launch(NULL, kernel_of(m, "vk_mixed_args"), &c, args, 5));
  uint32_t got[6];
  check_ok(kiln_buffer_read(NULL, out, 0, got, sizeof got));
  float f;
  memcpy(&f, &got[0], 4);
  assert_true(f == -2.5f);
  assert_int_equal(got[1], (uint32_t)(uint64_t)i64);
  assert_int_equal(got[2], (uint32_t)((uint64_t)i64 >> 32));
  assert_int_equal(got[3], 0xdeadbeefu);
  assert_int_equal(got[4], (uint32_t)u64);
  assert_int_equal(got[5], (uint32_t)(u64 >> 32));
  check_ok(kiln_buffer_destroy(out));
  check_ok(kiln_module_destroy(m));
}

/* A kernel with subgroup operations loads and runs: each invocation gets
 * the sum of its subgroup's invocation indices, s (s - 1) / 2 for a
 * subgroup of s (the device's subgroup size divides the block of 64). */
static void subgroup_operations(void **state) {
  (void)state;
  kiln_module *m;
  check_ok(kiln_module_create(ctx, &vk_test_images[SUBGROUP_SUM], 1, &m));
  kiln_device_properties p;
  check_ok(kiln_context_get_properties(ctx, &p));
  enum { N = 256 };
  kiln_buffer *out;
  check_ok(kiln_buffer_create(ctx, N * 4, KILN_BUFFER_ZERO, &out));
  kiln_arg args[2] = {kiln_arg_buffer(out, 0), kiln_arg_u32(N)};
  kiln_launch_config c = kiln_launch_config_1d(N, 64);
  check_ok(kiln_launch(NULL, kernel_of(m, "vk_subgroup_sum"), &c, args, 2));
  uint32_t got[N];
  check_ok(kiln_buffer_read(NULL, out, 0, got, sizeof got));
  const uint32_t s = p.subgroup_size < 64 ? p.subgroup_size : 64;
  for (uint32_t i = 0; i < N; i++) assert_int_equal(got[i], s * (s - 1) / 2);
  check_ok(kiln_buffer_destroy(out));
  check_ok(kiln_module_destroy(m));
}

/* The context's native handles, and an instance-level entry point `name`
 * through the vkGetInstanceProcAddr kiln loaded: what the tests below ask
 * Vulkan itself, rather than kiln, about the device. */
static PFN_vkVoidFunction instance_entry(const char *name,
                                         kiln_native_context *n) {
  check_ok(kiln_context_get_native(ctx, n));
  PFN_vkGetInstanceProcAddr instance_proc =
      (PFN_vkGetInstanceProcAddr)n->vk_get_instance_proc_addr;
  PFN_vkVoidFunction fn = instance_proc((VkInstance)n->vk_instance, name);
  assert_non_null(fn);
  return fn;
}

/* Whether the context's device offers extension `name`. */
static bool device_offers(const char *name) {
  kiln_native_context n;
  PFN_vkEnumerateDeviceExtensionProperties list =
      (PFN_vkEnumerateDeviceExtensionProperties)instance_entry(
          "vkEnumerateDeviceExtensionProperties", &n);
  VkPhysicalDevice dev = (VkPhysicalDevice)n.vk_physical_device;
  uint32_t count = 0;
  assert_int_equal(list(dev, NULL, &count, NULL), VK_SUCCESS);
  VkExtensionProperties *exts = calloc(count ? count : 1, sizeof *exts);
  assert_non_null(exts);
  assert_int_equal(list(dev, NULL, &count, exts), VK_SUCCESS);
  bool found = false;
  for (uint32_t i = 0; i < count && !found; i++)
    found = strcmp(exts[i].extensionName, name) == 0;
  free(exts);
  return found;
}

/* The subgroup operations (VkSubgroupFeatureFlags) the context's device
 * offers compute shaders. */
static uint32_t device_subgroup_operations(void) {
  kiln_native_context n;
  PFN_vkGetPhysicalDeviceProperties2 properties =
      (PFN_vkGetPhysicalDeviceProperties2)instance_entry(
          "vkGetPhysicalDeviceProperties2", &n);
  VkPhysicalDeviceSubgroupProperties sub = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 p = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sub};
  properties((VkPhysicalDevice)n.vk_physical_device, &p);
  return (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT)
             ? sub.supportedOperations
             : 0;
}

/* Clustered subgroup operations, which some devices lack (lavapipe): kiln
 * refuses the module naming the capability exactly where Vulkan says the
 * device lacks them, rather than hand the driver what it cannot run (the
 * layer would flag it, failing this suite); where it has them, the sums
 * of 4 come out. */
static void missing_subgroup_operations_are_refused(void **state) {
  (void)state;
  static const char text[] =
      "#version 460\n"
      "#extension GL_EXT_buffer_reference : require\n"
      "#extension GL_KHR_shader_subgroup_clustered : require\n"
      "layout(local_size_x_id = 0) in;\n"
      "layout(buffer_reference, std430) buffer U32 { uint v[]; };\n"
      "layout(push_constant, std430) uniform Args { U32 out_sums; } args;\n"
      "void main() {\n"
      "  args.out_sums.v[gl_GlobalInvocationID.x] =\n"
      "      subgroupClusteredAdd(gl_GlobalInvocationID.x % 4, 4);\n"
      "}\n";
  const char *description = NULL;
  if (kiln_compiler_available(KILN_BACKEND_VULKAN, &description) != KILN_OK)
    skip();
  const kiln_source src = {KILN_SOURCE_GLSL, text, "clustered.comp",
                           "clustered"};
  kiln_module *m = NULL;
  const kiln_status st =
      kiln_module_create_from_source(ctx, &src, 1, NULL, &m);
  if (!(device_subgroup_operations() & VK_SUBGROUP_FEATURE_CLUSTERED_BIT)) {
    assert_int_equal(st, KILN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(kiln_last_error(), "GroupNonUniformClustered"));
    assert_null(m);
    return;
  }
  check_ok(st);
  enum { N = 64 };
  kiln_buffer *out;
  check_ok(kiln_buffer_create(ctx, N * 4, KILN_BUFFER_ZERO, &out));
  kiln_arg arg = kiln_arg_buffer(out, 0);
  kiln_launch_config c = kiln_launch_config_1d(N, N);
  check_ok(kiln_launch(NULL, kernel_of(m, "clustered"), &c, &arg, 1));
  uint32_t got[N];
  check_ok(kiln_buffer_read(NULL, out, 0, got, sizeof got));
  for (uint32_t i = 0; i < N; i++) assert_int_equal(got[i], 0 + 1 + 2 + 3);
  check_ok(kiln_buffer_destroy(out));
  check_ok(kiln_module_destroy(m));
}

/* A kernel that calls debugPrintfEXT declares SPV_KHR_non_semantic_info:
 * taken where the device offers VK_KHR_shader_non_semantic_info (kiln
 * enables it, and the layer checks that it did), refused elsewhere naming
 * it and what would take it (lavapipe, whose Vulkan 1.3 takes it only
 * under KILN_VULKAN_VALIDATION=printf: the printf conformance group runs
 * that). */
static void debug_printf_needs_non_semantic_info(void **state) {
  (void)state;
  static const char text[] =
      "#version 460\n"
      "#extension GL_EXT_debug_printf : require\n"
      "layout(local_size_x = 1) in;\n"
      "void main() { debugPrintfEXT(\"seven %d\", 7); }\n";
  const char *description = NULL;
  if (kiln_compiler_available(KILN_BACKEND_VULKAN, &description) != KILN_OK)
    skip();
  const bool offered =
      device_offers(VK_KHR_SHADER_NON_SEMANTIC_INFO_EXTENSION_NAME);
  const kiln_source src = {KILN_SOURCE_GLSL, text, "print.comp", "print"};
  kiln_module *m = NULL;
  const kiln_status st = kiln_module_create_from_source(ctx, &src, 1, NULL, &m);
  if (offered) {
    if (st != KILN_OK)
      fail_msg("the device offers %s, yet a debugPrintfEXT kernel was "
               "refused: %s: %s",
               VK_KHR_SHADER_NON_SEMANTIC_INFO_EXTENSION_NAME,
               kiln_status_name(st), kiln_last_error());
    kiln_kernel *k = NULL;
    check_ok(kiln_module_get_kernel(m, "print", &k));
    const kiln_launch_config one = {{1, 1, 1}, {1, 1, 1}, 0};
    check_ok(kiln_launch(NULL, k, &one, NULL, 0));
    check_ok(kiln_context_synchronize(ctx));
    check_ok(kiln_module_destroy(m));
    return;
  }
  assert_int_equal(st, KILN_ERROR_UNSUPPORTED);
  assert_non_null(strstr(kiln_last_error(), "SPV_KHR_non_semantic_info"));
  assert_non_null(strstr(kiln_last_error(), "KILN_VULKAN_VALIDATION=printf"));
  assert_null(m);
}

/* All the test images in one module, each copied to an address that is
 * not 4-byte aligned. */
static void module_of_several_unaligned_images(void **state) {
  (void)state;
  size_t n = vk_test_images_count;
  kiln_module_image *images = calloc(n, sizeof *images);
  unsigned char **copies = calloc(n, sizeof *copies);
  assert_non_null(images);
  assert_non_null(copies);
  for (size_t i = 0; i < n; i++) {
    copies[i] = malloc(vk_test_images[i].size + 1);
    assert_non_null(copies[i]);
    memcpy(copies[i] + 1, vk_test_images[i].data, vk_test_images[i].size);
    images[i] = vk_test_images[i];
    images[i].data = copies[i] + 1;
  }
  kiln_module *m;
  check_ok(kiln_module_create(ctx, images, n, &m));
  for (size_t i = 0; i < n; i++) free(copies[i]);
  free(copies);
  free(images);
  kiln_kernel *k;
  assert_int_equal(kiln_module_get_kernel(m, "vk_missing", &k),
                   KILN_ERROR_NOT_FOUND);
  const char *names[] = {"vk_fixed_size", "vk_layout", "vk_mixed_args",
                         "vk_no_args"};
  for (size_t i = 0; i < 4; i++) {
    assert_non_null(strstr(kiln_last_error(), names[i]));
  }
  for (size_t i = 0; i < 4; i++) kernel_of(m, names[i]);
  /* The last image's kernel runs from the shared module. */
  kiln_launch_config c = kiln_launch_config_1d(64, 64);
  check_ok(kiln_launch(NULL, kernel_of(m, "vk_no_args"), &c, NULL, 0));
  check_ok(kiln_context_synchronize(ctx));
  check_ok(kiln_module_destroy(m));
}

/* A write from host memory is seen by work that any stream submits after
 * it returns, also when it had to be staged behind queued work. */
static void writes_seen_by_other_streams(void **state) {
  (void)state;
  enum { N = (3 << 20) + 7 };
  unsigned char *data = malloc(N), *got = malloc(N);
  assert_non_null(data);
  assert_non_null(got);
  for (size_t i = 0; i < N; i++) data[i] = (unsigned char)(i * 131 + 7);
  kiln_stream *a, *b;
  check_ok(kiln_stream_create(ctx, &a));
  check_ok(kiln_stream_create(ctx, &b));
  kiln_buffer *src, *dst;
  check_ok(kiln_buffer_create(ctx, N + 1, 0, &src));
  check_ok(kiln_buffer_create(ctx, N, 0, &dst));
  for (int round = 0; round < 4; round++) {
    /* Work queued on a first, so that the write cannot bypass the queue. */
    const uint8_t pattern = 0x5a;
    check_ok(kiln_buffer_fill(a, src, 0, N + 1, &pattern, 1));
    data[round] ^= 0xff;
    check_ok(kiln_buffer_write(a, src, 1, data, N));
    check_ok(kiln_buffer_read(b, src, 1, got, N));
    assert_memory_equal(got, data, N);
    check_ok(kiln_buffer_fill(a, src, 0, N + 1, &pattern, 1));
    check_ok(kiln_buffer_write(a, src, 1, data, N));
    check_ok(kiln_buffer_copy(b, dst, 0, src, 1, N));
    check_ok(kiln_buffer_read(b, dst, 0, got, N));
    assert_memory_equal(got, data, N);
  }
  check_ok(kiln_stream_destroy(a));
  check_ok(kiln_stream_destroy(b));
  check_ok(kiln_buffer_destroy(src));
  check_ok(kiln_buffer_destroy(dst));
  free(data);
  free(got);
}

/* KILN_VULKAN_TRANSFER picks where copies go; each mode moves bytes
 * correctly through a staged write, a device copy and a read behind
 * queued work, and a value that is none of them fails the context with
 * words. */
static void transfer_modes_from_the_environment(void **state) {
  (void)state;
  static const char *const modes[] = {"auto", "all", "off", "compute"};
  enum { N = (1 << 20) + 12 };
  unsigned char *data = malloc(N), *got = malloc(N);
  assert_non_null(data);
  assert_non_null(got);
  for (size_t i = 0; i < N; i++) data[i] = (unsigned char)(i * 29 + 3);
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_VULKAN;
  for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
    setenv("KILN_VULKAN_TRANSFER", modes[m], 1);
    kiln_context *c;
    check_ok(kiln_context_create(&o, &c));
    kiln_stream *s;
    check_ok(kiln_context_default_stream(c, &s));
    kiln_buffer *a, *b;
    check_ok(kiln_buffer_create(c, N, 0, &a));
    check_ok(kiln_buffer_create(c, N, 0, &b));
    const uint8_t pattern = 0xa5;
    check_ok(kiln_buffer_fill(s, a, 0, N, &pattern, 1));
    check_ok(kiln_buffer_write(s, a, 4, data, N - 8));
    check_ok(kiln_buffer_copy(s, b, 0, a, 0, N));
    check_ok(kiln_buffer_read(s, b, 4, got, N - 8));
    if (memcmp(got, data, N - 8) != 0)
      fail_msg("KILN_VULKAN_TRANSFER=%s: the bytes read differ", modes[m]);
    check_ok(kiln_buffer_destroy(b));
    check_ok(kiln_buffer_destroy(a));
    check_ok(kiln_context_destroy(c));
  }
  setenv("KILN_VULKAN_TRANSFER", "sideways", 1);
  kiln_context *c = NULL;
  assert_int_equal(kiln_context_create(&o, &c), KILN_ERROR_INVALID_ARGUMENT);
  assert_null(c);
  assert_non_null(
      strstr(kiln_last_error(), "KILN_VULKAN_TRANSFER=\"sideways\""));
  assert_non_null(strstr(kiln_last_error(), "auto, all, off or compute"));
  unsetenv("KILN_VULKAN_TRANSFER");
  free(data);
  free(got);
}

/* KILN_VULKAN_PEER takes auto, slots or host; anything else fails the context
 * with words (the copies of each mode are checked in the conformance
 * suite's peers group). */
static void peer_mode_from_the_environment(void **state) {
  (void)state;
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_VULKAN;
  static const char *const good[] = {"auto", "slots", "host"};
  for (size_t m = 0; m < 3; m++) {
    setenv("KILN_VULKAN_PEER", good[m], 1);
    kiln_context *c = NULL;
    check_ok(kiln_context_create(&o, &c));
    check_ok(kiln_context_destroy(c));
  }
  setenv("KILN_VULKAN_PEER", "pigeon", 1);
  kiln_context *c = NULL;
  assert_int_equal(kiln_context_create(&o, &c), KILN_ERROR_INVALID_ARGUMENT);
  assert_null(c);
  assert_non_null(strstr(kiln_last_error(), "KILN_VULKAN_PEER=\"pigeon\""));
  assert_non_null(strstr(kiln_last_error(), "auto, slots or host"));
  unsetenv("KILN_VULKAN_PEER");
}

int main(void) {
  kiln_set_log_handler(vk_test_on_log, NULL);
  if (kiln_get_log_level() < KILN_LOG_ERROR) kiln_set_log_level(KILN_LOG_ERROR);
  const char *reason;
  if (kiln_backend_available(KILN_BACKEND_VULKAN, &reason) != KILN_OK) {
    fprintf(stderr, "skipped: Vulkan is unavailable: %s\n", reason);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fixed_block_size),
      cmocka_unit_test(kernel_without_arguments),
      cmocka_unit_test(every_scalar_width),
      cmocka_unit_test(subgroup_operations),
      cmocka_unit_test(missing_subgroup_operations_are_refused),
      cmocka_unit_test(debug_printf_needs_non_semantic_info),
      cmocka_unit_test(module_of_several_unaligned_images),
      cmocka_unit_test(writes_seen_by_other_streams),
      cmocka_unit_test(transfer_modes_from_the_environment),
      cmocka_unit_test(peer_mode_from_the_environment),
  };
  int failed =
      cmocka_run_group_tests_name("vulkan-backend", tests, setup, teardown);
  if (vk_test_validation_messages)
    fprintf(stderr, "%d Vulkan validation messages\n", vk_test_validation_messages);
  return failed || vk_test_validation_messages ? 1 : 0;
}
