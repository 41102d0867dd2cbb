/* KILN_TRACE=nvtx on Vulkan: each command's VK_EXT_debug_utils label,
 * named as its NVTX range is. meson runs this with kiln's recording layer
 * (label_layer/) put in front of the driver through VK_ADD_LAYER_PATH and
 * VK_INSTANCE_LAYERS: it writes every label call it sees to the file
 * $KILN_LABEL_LOG, and the test compares that file with what each program
 * should have labelled, and how the labels nest. Once with the validation
 * layer on (it must say nothing), once without it. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "kiln/kiln.h"
#include "tests/core/kiln_check.h"
#include "validation_log.h"

extern const kiln_module_image vk_test_images[];
enum {
  FIXED_SIZE = 0
}; /* vk_fixed_size, first of tests/vulkan/meson.build's */

static const char *log_path(void) {
  const char *path = getenv("KILN_LABEL_LOG");
  if (!path || !path[0])
    fail_msg("KILN_LABEL_LOG is not set: run this through meson test");
  return path;
}

static void clear_log(void) {
  FILE *f = fopen(log_path(), "w");
  if (!f) fail_msg("cannot write %s", log_path());
  fclose(f);
}

/* What the layer wrote since the last clear_log (malloc'd). */
static char *read_log(void) {
  FILE *f = fopen(log_path(), "r");
  if (!f) fail_msg("cannot read %s", log_path());
  size_t cap = 4096, n = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  size_t got;
  while ((got = fread(text + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (n + 1 == cap) {
      cap *= 2;
      text = realloc(text, cap);
      assert_non_null(text);
    }
  }
  fclose(f);
  text[n] = '\0';
  return text;
}

static void check_log(const char *expected) {
  char *text = read_log();
  if (strcmp(text, expected) != 0)
    fail_msg("the layer saw:\n%s\nexpected:\n%s", text, expected);
  free(text);
}

/* The Vulkan loader's version, 0 where it cannot be asked. */
static uint32_t loader_version(void) {
  void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  void *sym = dlsym(lib, "vkGetInstanceProcAddr");
  PFN_vkGetInstanceProcAddr gipa = NULL;
  memcpy(&gipa, &sym, sizeof sym);
  PFN_vkEnumerateInstanceVersion version =
      gipa ? (PFN_vkEnumerateInstanceVersion)gipa(VK_NULL_HANDLE,
                                                  "vkEnumerateInstanceVersion")
           : NULL;
  uint32_t v = 0;
  if (version && version(&v) != VK_SUCCESS) v = 0;
  dlclose(lib);
  return v;
}

/* The layer is in the process (kiln's instance is made when main asks
 * whether Vulkan is available): without it, a run that sees no label would
 * prove nothing. */
static void require_layer(void) {
  const char *path = getenv("KILN_LABEL_LAYER");
  if (!path) fail_msg("KILN_LABEL_LAYER is not set: run this through meson");
  void *lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (lib) {
    dlclose(lib);
    return;
  }
  const uint32_t v = loader_version();
  if (v && v < VK_MAKE_API_VERSION(0, 1, 3, 234))
    kiln_skip(
        "the Vulkan loader is %u.%u.%u, older than 1.3.234, the "
        "first to read VK_ADD_LAYER_PATH, so the recording layer "
        "could not be put in",
        VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v),
        VK_API_VERSION_PATCH(v));
  fail_msg(
      "the Vulkan loader did not load the recording layer %s "
      "(VK_ADD_LAYER_PATH=%s, VK_INSTANCE_LAYERS=%s)",
      path, getenv("VK_ADD_LAYER_PATH"), getenv("VK_INSTANCE_LAYERS"));
}

/* A Vulkan context made with KILN_TRACE and KILN_VULKAN_TRANSFER as
 * given (NULL: unset). */
static kiln_context *open_context(const char *trace, const char *transfer) {
  if (trace) setenv("KILN_TRACE", trace, 1);
  if (transfer) setenv("KILN_VULKAN_TRANSFER", transfer, 1);
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_VULKAN;
  kiln_context *ctx;
  kiln_status st = kiln_context_create(&o, &ctx);
  unsetenv("KILN_TRACE");
  unsetenv("KILN_VULKAN_TRANSFER");
  check_ok(st);
  return ctx;
}

typedef struct program {
  kiln_module *module;
  kiln_kernel *kernel;
  kiln_buffer *a, *b;
} program;

static program program_open(kiln_context *ctx) {
  program p;
  check_ok(kiln_module_create(ctx, &vk_test_images[FIXED_SIZE], 1, &p.module));
  check_ok(kiln_module_get_kernel(p.module, "vk_fixed_size", &p.kernel));
  check_ok(kiln_buffer_create(ctx, 300 * 4, 0, &p.a));
  check_ok(kiln_buffer_create(ctx, 300 * 4, 0, &p.b));
  return p;
}

static void program_close(program *p) {
  check_ok(kiln_buffer_destroy(p->a));
  check_ok(kiln_buffer_destroy(p->b));
  check_ok(kiln_module_destroy(p->module));
}

static void launch(const program *p) {
  kiln_arg args[2] = {kiln_arg_buffer(p->a, 0), kiln_arg_u32(300)};
  kiln_launch_config c = {{3, 2, 1}, {64, 2, 1}, 0};
  check_ok(kiln_launch(NULL, p->kernel, &c, args, 2));
}

/* A launch, a copy, a fill of whole words (vkCmdFillBuffer) and one of odd
 * bytes, which kiln does with its kernel kiln_fill, issued inside. */
static void launch_copy_fill(kiln_context *ctx) {
  program p = program_open(ctx);
  const uint32_t word = 0x01020304u;
  const uint8_t byte = 7;
  launch(&p);
  check_ok(kiln_buffer_copy(NULL, p.b, 0, p.a, 0, 256));
  check_ok(kiln_buffer_fill(NULL, p.b, 0, 256, &word, 4));
  check_ok(kiln_buffer_fill(NULL, p.b, 1, 3, &byte, 1));
  check_ok(kiln_context_synchronize(ctx));
  program_close(&p);
}

static const char launch_copy_fill_labels[] =
    "begin vk_fixed_size\n"
    "end\n"
    "begin kiln_buffer_copy 256 B\n"
    "end\n"
    "begin kiln_buffer_fill 256 B\n"
    "end\n"
    "begin kiln_buffer_fill 3 B\n"
    "begin kiln_fill\n"
    "end\n"
    "end\n";

static void no_label_without_trace(void **state) {
  (void)state;
  require_layer();
  kiln_context *ctx = open_context(NULL, NULL);
  clear_log();
  launch_copy_fill(ctx);
  check_ok(kiln_context_destroy(ctx));
  check_log("");
}

/* Each command in a label of its NVTX range's name, the fill kernel's
 * inside its fill's; then a context made without KILN_TRACE, in the same
 * process and thread, labels nothing. */
static void labels_name_each_command(void **state) {
  (void)state;
  require_layer();
  kiln_context *plain = open_context(NULL, NULL);
  kiln_context *ctx = open_context("nvtx", NULL);
  clear_log();
  launch_copy_fill(ctx);
  check_log(launch_copy_fill_labels);
  clear_log();
  launch_copy_fill(plain);
  check_ok(kiln_context_destroy(plain));
  check_ok(kiln_context_destroy(ctx));
  check_log("");
}

/* A copy on the transfer lane (KILN_VULKAN_TRANSFER=compute runs it on the
 * compute queues, so every device has one) is labelled on the queue, around
 * its submission; the launch after it in its command buffer again. */
static void transfer_lane_labels_its_submission(void **state) {
  (void)state;
  require_layer();
  kiln_context *ctx = open_context("nvtx", "compute");
  program p = program_open(ctx);
  check_ok(kiln_context_synchronize(ctx));
  clear_log();
  check_ok(kiln_buffer_copy(NULL, p.b, 0, p.a, 0, 256));
  check_ok(kiln_context_synchronize(ctx));
  launch(&p);
  check_ok(kiln_context_synchronize(ctx));
  check_log(
      "queue begin kiln_buffer_copy 256 B\n"
      "queue end\n"
      "begin vk_fixed_size\n"
      "end\n");
  program_close(&p);
  check_ok(kiln_context_destroy(ctx));
}

/* A graph's replay is one submission of a command buffer recorded at its
 * build, which the core names nothing in: a queue label around it. */
static void graph_replay_labels_its_submission(void **state) {
  (void)state;
  require_layer();
  kiln_context *ctx = open_context("nvtx", NULL);
  program p = program_open(ctx);
  kiln_stream *s;
  kiln_graph *g;
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_stream_begin_capture(s));
  kiln_arg args[2] = {kiln_arg_buffer(p.a, 0), kiln_arg_u32(300)};
  kiln_launch_config c = {{3, 2, 1}, {64, 2, 1}, 0};
  check_ok(kiln_launch(s, p.kernel, &c, args, 2));
  check_ok(kiln_stream_end_capture(s, &g));
  check_ok(kiln_context_synchronize(ctx));
  clear_log();
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_context_synchronize(ctx));
  check_log(
      "queue begin kiln_graph_launch\n"
      "queue end\n"
      "queue begin kiln_graph_launch\n"
      "queue end\n");
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_stream_destroy(s));
  program_close(&p);
  check_ok(kiln_context_destroy(ctx));
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
      cmocka_unit_test(no_label_without_trace),
      cmocka_unit_test(labels_name_each_command),
      cmocka_unit_test(transfer_lane_labels_its_submission),
      cmocka_unit_test(graph_replay_labels_its_submission),
  };
  int failed = cmocka_run_group_tests_name("vulkan-labels", tests, NULL, NULL);
  if (vk_test_validation_messages)
    fprintf(stderr, "%d Vulkan validation messages\n", vk_test_validation_messages);
  return failed || vk_test_validation_messages ? 1 : 0;
}
