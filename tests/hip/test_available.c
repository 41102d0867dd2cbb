/* Whether the HIP backend can run here, and why not when it cannot. Runs on
 * every machine: with no HIP runtime the backend must be unavailable with a
 * reason naming the library; with a runtime but no GPU (Debian's
 * libamdhip64 on a machine without one, or the HIP-on-CUDA shim without a
 * CUDA driver) the reason must be hipErrorNoDevice; with a device it must
 * be available, describe the device, and run a built-in kernel.
 * `--unavailable=TEXT` expects unavailability whatever loads, with TEXT in
 * the reason. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../core/kiln_check.h"

static const char *expected_reason;

/* The runtime kiln would open, opened here first to tell "not installed"
 * from "installed, but no device". Left open, as kiln leaves it. */
static bool runtime_loads(void) {
  const char *chosen = getenv("KILN_HIP_LIBRARY");
  if (chosen && chosen[0]) return dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
  static const char *const names[] = {"libamdhip64.so.6", "libamdhip64.so.5",
                                      "libamdhip64.so"};
  for (size_t i = 0; i < 3; i++)
    if (dlopen(names[i], RTLD_NOW | RTLD_LOCAL)) return true;
  return false;
}

static void test_unavailable(void **state) {
  (void)state;
  assert_true(kiln_backend_compiled(KILN_BACKEND_HIP));
  const char *reason = NULL;
  check_fails(kiln_backend_available(KILN_BACKEND_HIP, &reason),
              KILN_ERROR_UNAVAILABLE);
  assert_non_null(reason);
  printf("hip is unavailable: %s\n", reason);
  if (!strstr(reason, expected_reason))
    fail_msg("the reason \"%s\" does not mention \"%s\"", reason,
             expected_reason);
  check_message_has(expected_reason);

  const char *again = NULL;
  check_fails(kiln_backend_available(KILN_BACKEND_HIP, &again),
              KILN_ERROR_UNAVAILABLE);
  assert_string_equal(again, reason);

  size_t count = 99;
  check_ok(kiln_device_count(KILN_BACKEND_HIP, &count));
  assert_int_equal(count, 0);
  kiln_device_properties p;
  check_fails(kiln_device_get_properties(KILN_BACKEND_HIP, 0, &p),
              KILN_ERROR_UNAVAILABLE);
  check_message_has(expected_reason);

  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_HIP;
  kiln_context *ctx = NULL;
  check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_UNAVAILABLE);
  check_message_has(expected_reason);
  assert_null(ctx);
}

static void check_version_text(const char *text) {
  int major = -1, minor = -1;
  if (sscanf(text, "%d.%d", &major, &minor) != 2 || major < 5)
    fail_msg("\"%s\" is not a version like \"5.2\" or \"12.8\"", text);
}

/* y = 2x + y and the sum of y through the built-in kernels, when this
 * build has them. */
static void run_builtins(kiln_context *ctx) {
  kiln_module *builtins = NULL;
  kiln_status st = kiln_context_builtin_module(ctx, &builtins);
  if (st == KILN_ERROR_UNSUPPORTED) {
    printf("no built-in kernels in this build: %s\n", kiln_last_error());
    return;
  }
  check_ok(st);
  enum { N = 3000 };
  static float x[N], y[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)(i % 7);
    y[i] = 1.0f;
  }
  kiln_buffer *bx = NULL, *by = NULL, *sum = NULL;
  check_ok(kiln_buffer_create(ctx, sizeof x, 0, &bx));
  check_ok(kiln_buffer_create(ctx, sizeof y, 0, &by));
  check_ok(kiln_buffer_create(ctx, 4, KILN_BUFFER_ZERO, &sum));
  check_ok(kiln_buffer_write(NULL, bx, 0, x, sizeof x));
  check_ok(kiln_buffer_write(NULL, by, 0, y, sizeof y));
  check_ok(kiln_axpy_f32(NULL, N, 2.0f, bx, 0, by, 0));
  check_ok(kiln_reduce_sum_f32(NULL, N, by, 0, sum, 0));
  float total = 0.0f;
  check_ok(kiln_buffer_read(NULL, sum, 0, &total, 4));
  double expected = 0.0;
  for (int i = 0; i < N; i++) expected += 2.0 * x[i] + 1.0;
  if (total != (float)expected)
    fail_msg("the built-in kernels summed %g, expected %g", (double)total,
             expected);
  check_ok(kiln_buffer_destroy(sum));
  check_ok(kiln_buffer_destroy(by));
  check_ok(kiln_buffer_destroy(bx));
}

static void test_available(void **state) {
  (void)state;
  const char *reason = NULL;
  check_ok(kiln_backend_available(KILN_BACKEND_HIP, &reason));
  assert_string_equal(reason, "");
  size_t count = 0;
  check_ok(kiln_device_count(KILN_BACKEND_HIP, &count));
  assert_true(count >= 1);
  for (size_t i = 0; i < count; i++) {
    kiln_device_properties p;
    check_ok(kiln_device_get_properties(KILN_BACKEND_HIP, i, &p));
    assert_int_equal(p.backend, KILN_BACKEND_HIP);
    assert_true(p.name[0] != '\0');
    assert_string_equal(p.vendor, "AMD");
    assert_int_equal(p.vendor_id, 0x1002);
    assert_true(p.type == KILN_DEVICE_TYPE_DISCRETE_GPU ||
                p.type == KILN_DEVICE_TYPE_INTEGRATED_GPU);
    /* gfx on AMD; the shim's NVIDIA devices have no gfx name. */
    assert_true(strncmp(p.architecture, "gfx", 3) == 0 ||
                strncmp(p.architecture, "sm_", 3) == 0);
    assert_true(p.memory_bytes > 0);
    assert_true(p.compute_units > 0);
    assert_true(p.subgroup_size == 32 || p.subgroup_size == 64);
    assert_true(p.max_threads_per_block >= 256);
    for (int d = 0; d < 3; d++) {
      assert_true(p.max_block_size[d] > 0);
      assert_true(p.max_grid_size[d] > 0);
    }
    assert_true(p.max_shared_memory_per_block >= 32 * 1024);
    assert_true(p.max_shared_memory_per_block_optin >=
                p.max_shared_memory_per_block);
    assert_true(p.max_kernel_argument_bytes >= 256);
    check_version_text(p.api_version);
    check_version_text(p.driver_version);
    printf("HIP device %zu: %s, %s, %u CUs, wavefront %u, %llu MiB, HIP %s, "
           "driver %s\n",
           i, p.name, p.architecture, p.compute_units, p.subgroup_size,
           (unsigned long long)(p.memory_bytes >> 20), p.api_version,
           p.driver_version);
  }

  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_HIP;
  o.device_index = 0;
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(&o, &ctx));
  assert_int_equal(kiln_context_backend(ctx), KILN_BACKEND_HIP);
  run_builtins(ctx);
  check_ok(kiln_context_destroy(ctx));
}

int main(int argc, char **argv) {
  static const char flag[] = "--unavailable=";
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], flag, sizeof flag - 1) == 0)
      expected_reason = argv[i] + sizeof flag - 1;
  if (!expected_reason) {
    if (!runtime_loads())
      expected_reason = getenv("KILN_HIP_LIBRARY") ? "KILN_HIP_LIBRARY"
                                                   : "libamdhip64";
    else if (kiln_backend_available(KILN_BACKEND_HIP, NULL) != KILN_OK)
      expected_reason = "hipErrorNoDevice";
  }

  const struct CMUnitTest unavailable[] = {cmocka_unit_test(test_unavailable)};
  const struct CMUnitTest available[] = {cmocka_unit_test(test_available)};
  if (expected_reason)
    return cmocka_run_group_tests_name("hip: unavailable", unavailable, NULL,
                                       NULL);
  return cmocka_run_group_tests_name("hip: available", available, NULL, NULL);
}
