/* Whether the CUDA backend can run here, and why not when it cannot. Runs
 * on every machine: with no driver (the library does not load) the backend
 * must be unavailable with a reason naming the library; with a driver it
 * must be available and list its devices. `--unavailable=TEXT` expects
 * unavailability whatever loads, with TEXT in the reason (the toolkit's
 * stub libcuda, which loads but is not a driver). */
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

static const char *library_name(void) {
  const char *name = getenv("KILN_CUDA_LIBRARY");
  return name && name[0] ? name : "libcuda.so.1";
}

static bool library_loads(void) {
  void *handle = dlopen(library_name(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return false;
  dlclose(handle);
  return true;
}

static void test_unavailable(void **state) {
  (void)state;
  assert_true(kiln_backend_compiled(KILN_BACKEND_CUDA));
  const char *reason = NULL;
  check_fails(kiln_backend_available(KILN_BACKEND_CUDA, &reason),
              KILN_ERROR_UNAVAILABLE);
  assert_non_null(reason);
  if (!strstr(reason, expected_reason))
    fail_msg("the reason \"%s\" does not mention \"%s\"", reason,
             expected_reason);
  check_message_has(expected_reason);

  /* Asking again gives the same answer without loading anything again. */
  const char *again = NULL;
  check_fails(kiln_backend_available(KILN_BACKEND_CUDA, &again),
              KILN_ERROR_UNAVAILABLE);
  assert_string_equal(again, reason);

  size_t count = 99;
  check_ok(kiln_device_count(KILN_BACKEND_CUDA, &count));
  assert_int_equal(count, 0);
  kiln_device_properties p;
  check_fails(kiln_device_get_properties(KILN_BACKEND_CUDA, 0, &p),
              KILN_ERROR_UNAVAILABLE);
  check_message_has(expected_reason);

  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_CUDA;
  kiln_context *ctx = NULL;
  check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_UNAVAILABLE);
  check_message_has(expected_reason);
  assert_null(ctx);
}

static void check_version_text(const char *text) {
  int major = -1, minor = -1;
  char rest = '\0';
  if (sscanf(text, "%d.%d%c", &major, &minor, &rest) != 2 || major < 12)
    fail_msg("\"%s\" is not a CUDA version like \"13.0\"", text);
}

static void test_available(void **state) {
  (void)state;
  const char *reason = NULL;
  check_ok(kiln_backend_available(KILN_BACKEND_CUDA, &reason));
  assert_string_equal(reason, "");
  size_t count = 0;
  check_ok(kiln_device_count(KILN_BACKEND_CUDA, &count));
  assert_true(count >= 1);
  for (size_t i = 0; i < count; i++) {
    kiln_device_properties p;
    check_ok(kiln_device_get_properties(KILN_BACKEND_CUDA, i, &p));
    assert_int_equal(p.backend, KILN_BACKEND_CUDA);
    assert_true(p.name[0] != '\0');
    assert_string_equal(p.vendor, "NVIDIA");
    assert_int_equal(p.vendor_id, 0x10de);
    assert_true(p.type == KILN_DEVICE_TYPE_DISCRETE_GPU ||
                p.type == KILN_DEVICE_TYPE_INTEGRATED_GPU);
    assert_true(strncmp(p.architecture, "sm_", 3) == 0);
    assert_true(p.memory_bytes > 0);
    assert_true(p.compute_units > 0);
    assert_int_equal(p.subgroup_size, 32);
    assert_true(p.max_threads_per_block >= 1024);
    for (int d = 0; d < 3; d++) {
      assert_true(p.max_block_size[d] > 0);
      assert_true(p.max_grid_size[d] > 0);
    }
    assert_true(p.max_shared_memory_per_block >= 48 * 1024);
    assert_true(p.max_shared_memory_per_block_optin >=
                p.max_shared_memory_per_block);
    assert_true(p.max_kernel_argument_bytes >= 256);
    check_version_text(p.api_version);
    check_version_text(p.driver_version);
    bool uuid_set = false;
    for (int b = 0; b < 16; b++) uuid_set |= p.uuid[b] != 0;
    assert_true(uuid_set);
    printf("CUDA device %zu: %s, %s, %u SMs, %llu MiB, CUDA %s\n", i, p.name,
           p.architecture, p.compute_units,
           (unsigned long long)(p.memory_bytes >> 20), p.driver_version);
  }

  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_CUDA;
  o.device_index = 0;
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(&o, &ctx));
  assert_int_equal(kiln_context_backend(ctx), KILN_BACKEND_CUDA);
  check_ok(kiln_context_destroy(ctx));
}

int main(int argc, char **argv) {
  static const char flag[] = "--unavailable=";
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], flag, sizeof flag - 1) == 0)
      expected_reason = argv[i] + sizeof flag - 1;
  if (!expected_reason && !library_loads()) expected_reason = library_name();

  const struct CMUnitTest unavailable[] = {cmocka_unit_test(test_unavailable)};
  const struct CMUnitTest available[] = {cmocka_unit_test(test_available)};
  if (expected_reason)
    return cmocka_run_group_tests_name("cuda: unavailable", unavailable, NULL,
                                       NULL);
  return cmocka_run_group_tests_name("cuda: available", available, NULL, NULL);
}
