/* Choosing a backend and a device: KILN_BACKEND, KILN_DEVICE, explicit
 * options, the automatic choice, and what the failures say. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

typedef struct fakes {
  fake_backend cuda, hip, vulkan;
} fakes;

static const kiln_device_type discrete = KILN_DEVICE_TYPE_DISCRETE_GPU;

static int setup(void **state) {
  fakes *f = calloc(1, sizeof *f);
  if (!f) return -1;
  fake_init(&f->cuda, KILN_BACKEND_CUDA);
  fake_init(&f->hip, KILN_BACKEND_HIP);
  fake_init(&f->vulkan, KILN_BACKEND_VULKAN);
  unsetenv("KILN_BACKEND");
  unsetenv("KILN_DEVICE");
  *state = f;
  return 0;
}

static int teardown(void **state) {
  unsetenv("KILN_BACKEND");
  unsetenv("KILN_DEVICE");
  kiln_registry_override(NULL, 0);
  free(*state);
  return 0;
}

static void install_all(fakes *f) {
  fake_backend *list[] = {&f->cuda, &f->hip, &f->vulkan};
  fake_install(list, 3);
}

/* Creates a context with `o` (NULL: defaults) and checks where it landed. */
static void expect_context(const kiln_context_options *o, kiln_backend kind,
                           const char *device_name) {
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(o, &ctx));
  assert_int_equal(kiln_context_backend(ctx), kind);
  kiln_device_properties p;
  check_ok(kiln_context_get_properties(ctx, &p));
  assert_int_equal(p.backend, kind);
  assert_string_equal(p.name, device_name);
  check_ok(kiln_context_destroy(ctx));
}

static void expect_failure(const kiln_context_options *o, kiln_status status) {
  kiln_context *ctx = NULL;
  check_fails(kiln_context_create(o, &ctx), status);
  assert_null(ctx);
}

static void env_names_each_backend(void **state) {
  fakes *f = *state;
  install_all(f);
  setenv("KILN_BACKEND", "cuda", 1);
  expect_context(NULL, KILN_BACKEND_CUDA, f->cuda.devices[0].name);
  setenv("KILN_BACKEND", "hip", 1);
  expect_context(NULL, KILN_BACKEND_HIP, f->hip.devices[0].name);
  setenv("KILN_BACKEND", "vulkan", 1);
  expect_context(NULL, KILN_BACKEND_VULKAN, f->vulkan.devices[0].name);
  setenv("KILN_BACKEND", "VuLkAn", 1);
  expect_context(NULL, KILN_BACKEND_VULKAN, f->vulkan.devices[0].name);
  /* The default options defer to the environment just like NULL. */
  kiln_context_options o = kiln_context_options_default();
  assert_int_equal(o.backend, KILN_BACKEND_AUTO);
  assert_true(o.device_index == KILN_DEVICE_FROM_ENV);
  setenv("KILN_BACKEND", "hip", 1);
  expect_context(&o, KILN_BACKEND_HIP, f->hip.devices[0].name);
}

static void env_auto_and_unset_choose_automatically(void **state) {
  fakes *f = *state;
  install_all(f);
  expect_context(NULL, KILN_BACKEND_CUDA, f->cuda.devices[0].name);
  setenv("KILN_BACKEND", "auto", 1);
  expect_context(NULL, KILN_BACKEND_CUDA, f->cuda.devices[0].name);
  /* Set but empty counts as unset. */
  setenv("KILN_BACKEND", "", 1);
  expect_context(NULL, KILN_BACKEND_CUDA, f->cuda.devices[0].name);
}

static void env_nonsense_lists_what_is_available(void **state) {
  fakes *f = *state;
  fake_set_unavailable(&f->cuda, "no CUDA driver in this test");
  install_all(f);
  setenv("KILN_BACKEND", "nonsense", 1);
  expect_failure(NULL, KILN_ERROR_NOT_FOUND);
  check_message_has("nonsense");
  check_message_has("vulkan");
  check_message_has(f->vulkan.devices[0].name);
  check_message_has(f->hip.devices[0].name);
}

static void env_unavailable_backend_says_why(void **state) {
  fakes *f = *state;
  fake_set_unavailable(&f->hip, "hipErrorNoDevice in this test");
  install_all(f);
  setenv("KILN_BACKEND", "hip", 1);
  expect_failure(NULL, KILN_ERROR_UNAVAILABLE);
  check_message_has("hipErrorNoDevice in this test");
  check_message_has(f->vulkan.devices[0].name);
  check_message_has(f->cuda.devices[0].name);
}

static void env_backend_not_compiled_in(void **state) {
  fakes *f = *state;
  fake_backend *list[] = {&f->vulkan};
  fake_install(list, 1);
  assert_false(kiln_backend_compiled(KILN_BACKEND_CUDA));
  assert_true(kiln_backend_compiled(KILN_BACKEND_VULKAN));
  setenv("KILN_BACKEND", "cuda", 1);
  expect_failure(NULL, KILN_ERROR_UNAVAILABLE);
  check_message_has("cuda");
  check_message_has(f->vulkan.devices[0].name);
}

static void env_device_index(void **state) {
  fakes *f = *state;
  const kiln_device_type three[] = {discrete, discrete, discrete};
  fake_set_devices(&f->vulkan, 3, three);
  install_all(f);
  setenv("KILN_BACKEND", "vulkan", 1);
  setenv("KILN_DEVICE", "2", 1);
  expect_context(NULL, KILN_BACKEND_VULKAN, f->vulkan.devices[2].name);
  setenv("KILN_DEVICE", "0", 1);
  expect_context(NULL, KILN_BACKEND_VULKAN, f->vulkan.devices[0].name);
}

static void env_device_out_of_range(void **state) {
  fakes *f = *state;
  const kiln_device_type two[] = {discrete, discrete};
  fake_set_devices(&f->vulkan, 2, two);
  install_all(f);
  setenv("KILN_BACKEND", "vulkan", 1);
  setenv("KILN_DEVICE", "2", 1);
  expect_failure(NULL, KILN_ERROR_NOT_FOUND);
  check_message_has("2");
  check_message_has(f->vulkan.devices[1].name);
  setenv("KILN_DEVICE", "99999999999999999999999", 1);
  expect_failure(NULL, KILN_ERROR_INVALID_ARGUMENT);
  setenv("KILN_DEVICE", "one", 1);
  expect_failure(NULL, KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("one");
  setenv("KILN_DEVICE", "-1", 1);
  expect_failure(NULL, KILN_ERROR_INVALID_ARGUMENT);
}

static void options_override_environment(void **state) {
  fakes *f = *state;
  const kiln_device_type two[] = {discrete, discrete};
  fake_set_devices(&f->cuda, 2, two);
  fake_set_devices(&f->vulkan, 2, two);
  install_all(f);
  setenv("KILN_BACKEND", "cuda", 1);
  setenv("KILN_DEVICE", "1", 1);
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  expect_context(&o, KILN_BACKEND_VULKAN, f->vulkan.devices[0].name);
  o.device_index = KILN_DEVICE_FROM_ENV;
  expect_context(&o, KILN_BACKEND_VULKAN, f->vulkan.devices[1].name);
  o.backend = KILN_BACKEND_AUTO;
  o.device_index = 0;
  expect_context(&o, KILN_BACKEND_CUDA, f->cuda.devices[0].name);
  /* An explicit backend ignores a KILN_BACKEND that names nonsense. */
  setenv("KILN_BACKEND", "nonsense", 1);
  o.backend = KILN_BACKEND_HIP;
  expect_context(&o, KILN_BACKEND_HIP, f->hip.devices[0].name);
  o.device_index = 2;
  expect_failure(&o, KILN_ERROR_NOT_FOUND);
  o.backend = (kiln_backend)42;
  o.device_index = 0;
  expect_failure(&o, KILN_ERROR_INVALID_ARGUMENT);
}

static void auto_prefers_cuda_then_hip_then_vulkan(void **state) {
  fakes *f = *state;
  install_all(f);
  expect_context(NULL, KILN_BACKEND_CUDA, f->cuda.devices[0].name);
  fake_set_unavailable(&f->cuda, "no libcuda.so.1");
  install_all(f);
  expect_context(NULL, KILN_BACKEND_HIP, f->hip.devices[0].name);
  fake_set_unavailable(&f->hip, "no libamdhip64.so");
  install_all(f);
  expect_context(NULL, KILN_BACKEND_VULKAN, f->vulkan.devices[0].name);
}

static void auto_prefers_a_discrete_gpu(void **state) {
  fakes *f = *state;
  const kiln_device_type integrated = KILN_DEVICE_TYPE_INTEGRATED_GPU;
  const kiln_device_type cpu_then_discrete[] = {KILN_DEVICE_TYPE_CPU, discrete};
  fake_set_devices(&f->cuda, 1, &integrated);
  fake_set_unavailable(&f->hip, "no HIP here");
  fake_set_devices(&f->vulkan, 2, cpu_then_discrete);
  install_all(f);
  expect_context(NULL, KILN_BACKEND_VULKAN, f->vulkan.devices[1].name);
}

static void auto_falls_back_to_a_vulkan_cpu_device(void **state) {
  fakes *f = *state;
  const kiln_device_type cpu = KILN_DEVICE_TYPE_CPU;
  fake_set_unavailable(&f->cuda, "no libcuda.so.1");
  fake_set_unavailable(&f->hip, "no libamdhip64.so");
  fake_set_devices(&f->vulkan, 1, &cpu);
  install_all(f);
  expect_context(NULL, KILN_BACKEND_VULKAN, f->vulkan.devices[0].name);
  setenv("KILN_BACKEND", "auto", 1);
  expect_context(NULL, KILN_BACKEND_VULKAN, f->vulkan.devices[0].name);
  /* Also when only Vulkan is compiled in. */
  fake_backend *list[] = {&f->vulkan};
  fake_install(list, 1);
  expect_context(NULL, KILN_BACKEND_VULKAN, f->vulkan.devices[0].name);
}

static void auto_with_device_index(void **state) {
  fakes *f = *state;
  const kiln_device_type two[] = {discrete, discrete};
  fake_set_unavailable(&f->cuda, "no libcuda.so.1");
  fake_set_devices(&f->hip, 2, two);
  install_all(f);
  setenv("KILN_DEVICE", "1", 1);
  expect_context(NULL, KILN_BACKEND_HIP, f->hip.devices[1].name);
  setenv("KILN_DEVICE", "7", 1);
  expect_failure(NULL, KILN_ERROR_NOT_FOUND);
  check_message_has("7");
}

static void auto_with_nothing_available(void **state) {
  fakes *f = *state;
  fake_set_unavailable(&f->cuda, "reason one");
  fake_set_unavailable(&f->hip, "reason two");
  fake_set_unavailable(&f->vulkan, "reason three");
  install_all(f);
  expect_failure(NULL, KILN_ERROR_UNAVAILABLE);
  check_message_has("reason one");
  check_message_has("reason two");
  check_message_has("reason three");
  fake_install(NULL, 0);
  expect_failure(NULL, KILN_ERROR_UNAVAILABLE);
}

static void available_gives_reasons(void **state) {
  fakes *f = *state;
  fake_set_unavailable(&f->hip, "hipInit: no ROCm-capable device");
  fake_backend *list[] = {&f->hip, &f->vulkan};
  fake_install(list, 2);
  const char *reason = NULL;
  check_ok(kiln_backend_available(KILN_BACKEND_VULKAN, &reason));
  assert_non_null(reason);
  assert_string_equal(reason, "");
  check_ok(kiln_backend_available(KILN_BACKEND_VULKAN, NULL));

  reason = NULL;
  check_fails(kiln_backend_available(KILN_BACKEND_HIP, &reason),
              KILN_ERROR_UNAVAILABLE);
  assert_non_null(reason);
  assert_non_null(strstr(reason, "hipInit: no ROCm-capable device"));
  check_message_has("hipInit: no ROCm-capable device");

  reason = NULL;
  check_fails(kiln_backend_available(KILN_BACKEND_CUDA, &reason),
              KILN_ERROR_UNAVAILABLE);
  assert_non_null(reason);
  assert_true(reason[0] != '\0');

  /* The first call probes; later ones reuse the answer. */
  for (int i = 0; i < 3; i++) {
    kiln_backend_available(KILN_BACKEND_HIP, NULL);
    kiln_backend_available(KILN_BACKEND_VULKAN, NULL);
  }
  assert_int_equal(f->hip.probe_calls, 1);
  assert_int_equal(f->vulkan.probe_calls, 1);
  /* Overriding the registry forgets the answers. */
  fake_install(list, 2);
  kiln_backend_available(KILN_BACKEND_VULKAN, NULL);
  assert_int_equal(f->vulkan.probe_calls, 2);
}

static void device_count_and_properties(void **state) {
  fakes *f = *state;
  const kiln_device_type types[] = {KILN_DEVICE_TYPE_CPU, discrete,
                                    KILN_DEVICE_TYPE_INTEGRATED_GPU};
  fake_set_devices(&f->vulkan, 3, types);
  fake_set_unavailable(&f->cuda, "no driver");
  fake_backend *list[] = {&f->cuda, &f->vulkan};
  fake_install(list, 2);

  size_t n = 99;
  check_ok(kiln_device_count(KILN_BACKEND_VULKAN, &n));
  assert_int_equal(n, 3);
  n = 99;
  check_ok(kiln_device_count(KILN_BACKEND_CUDA, &n));
  assert_int_equal(n, 0);
  n = 99;
  check_ok(kiln_device_count(KILN_BACKEND_HIP, &n));
  assert_int_equal(n, 0);
  check_fails(kiln_device_count(KILN_BACKEND_VULKAN, NULL),
              KILN_ERROR_INVALID_ARGUMENT);

  for (size_t i = 0; i < 3; i++) {
    kiln_device_properties p;
    memset(&p, 0xab, sizeof p);
    check_ok(kiln_device_get_properties(KILN_BACKEND_VULKAN, i, &p));
    assert_int_equal(p.backend, KILN_BACKEND_VULKAN);
    assert_int_equal(p.type, types[i]);
    assert_string_equal(p.name, f->vulkan.devices[i].name);
  }
  kiln_device_properties p;
  memset(&p, 0xab, sizeof p);
  kiln_device_properties untouched = p;
  check_fails(kiln_device_get_properties(KILN_BACKEND_VULKAN, 3, &p),
              KILN_ERROR_NOT_FOUND);
  check_message_has("3");
  check_fails(kiln_device_get_properties(KILN_BACKEND_CUDA, 0, &p),
              KILN_ERROR_UNAVAILABLE);
  check_message_has("no driver");
  check_fails(kiln_device_get_properties(KILN_BACKEND_VULKAN, 0, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  /* Out-parameters are left alone on failure. */
  assert_memory_equal(&p, &untouched, sizeof p);
}

static void context_properties_match_the_device(void **state) {
  fakes *f = *state;
  const kiln_device_type two[] = {KILN_DEVICE_TYPE_CPU, discrete};
  fake_set_devices(&f->vulkan, 2, two);
  fake_backend *list[] = {&f->vulkan};
  fake_install(list, 1);
  kiln_context_options o = {KILN_BACKEND_VULKAN, 1, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_device_properties a, b;
  check_ok(kiln_context_get_properties(ctx, &a));
  check_ok(kiln_device_get_properties(KILN_BACKEND_VULKAN, 1, &b));
  assert_memory_equal(&a, &b, sizeof a);
  check_fails(kiln_context_get_properties(ctx, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_context_destroy(ctx));
  check_fails(kiln_context_create(&o, NULL), KILN_ERROR_INVALID_ARGUMENT);
}

static void context_init_failure_is_reported(void **state) {
  fakes *f = *state;
  fake_backend *list[] = {&f->vulkan};
  fake_install(list, 1);
  f->vulkan.fail_op = FAKE_OP_CONTEXT_INIT;
  f->vulkan.fail_status = KILN_ERROR_OUT_OF_DEVICE_MEMORY;
  expect_failure(NULL, KILN_ERROR_OUT_OF_DEVICE_MEMORY);
  f->vulkan.fail_op = FAKE_OP_STREAM_INIT;
  f->vulkan.fail_status = KILN_ERROR_BACKEND;
  expect_failure(NULL, KILN_ERROR_BACKEND);
  assert_int_equal(fake_live_objects(&f->vulkan), 0);
  expect_context(NULL, KILN_BACKEND_VULKAN, f->vulkan.devices[0].name);
}

static void backend_names(void **state) {
  (void)state;
  assert_string_equal(kiln_backend_name(KILN_BACKEND_AUTO), "auto");
  assert_string_equal(kiln_backend_name(KILN_BACKEND_CUDA), "cuda");
  assert_string_equal(kiln_backend_name(KILN_BACKEND_HIP), "hip");
  assert_string_equal(kiln_backend_name(KILN_BACKEND_VULKAN), "vulkan");
  assert_string_equal(kiln_backend_name((kiln_backend)17), "unknown");
  static const struct {
    const char *name;
    kiln_backend backend;
  } names[] = {
      {"auto", KILN_BACKEND_AUTO},     {"AUTO", KILN_BACKEND_AUTO},
      {"cuda", KILN_BACKEND_CUDA},     {"Cuda", KILN_BACKEND_CUDA},
      {"hip", KILN_BACKEND_HIP},       {"HIP", KILN_BACKEND_HIP},
      {"vulkan", KILN_BACKEND_VULKAN}, {"VULKAN", KILN_BACKEND_VULKAN}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    kiln_backend b = (kiln_backend)99;
    check_ok(kiln_backend_from_name(names[i].name, &b));
    assert_int_equal(b, names[i].backend);
  }
  kiln_backend b = (kiln_backend)99;
  check_fails(kiln_backend_from_name("metal", &b), KILN_ERROR_NOT_FOUND);
  check_message_has("metal");
  check_message_has("vulkan");
  check_fails(kiln_backend_from_name("", &b), KILN_ERROR_NOT_FOUND);
  check_fails(kiln_backend_from_name("vulkan ", &b), KILN_ERROR_NOT_FOUND);
  assert_int_equal(b, 99);
  check_fails(kiln_backend_from_name(NULL, &b), KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_backend_from_name("cuda", NULL),
              KILN_ERROR_INVALID_ARGUMENT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(env_names_each_backend, setup, teardown),
      cmocka_unit_test_setup_teardown(env_auto_and_unset_choose_automatically,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(env_nonsense_lists_what_is_available,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(env_unavailable_backend_says_why, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(env_backend_not_compiled_in, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(env_device_index, setup, teardown),
      cmocka_unit_test_setup_teardown(env_device_out_of_range, setup, teardown),
      cmocka_unit_test_setup_teardown(options_override_environment, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(auto_prefers_cuda_then_hip_then_vulkan,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(auto_prefers_a_discrete_gpu, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(auto_falls_back_to_a_vulkan_cpu_device,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(auto_with_device_index, setup, teardown),
      cmocka_unit_test_setup_teardown(auto_with_nothing_available, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(available_gives_reasons, setup, teardown),
      cmocka_unit_test_setup_teardown(device_count_and_properties, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(context_properties_match_the_device,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(context_init_failure_is_reported, setup,
                                      teardown),
      cmocka_unit_test(backend_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
