/* Devices and contexts: properties, creation from the environment and from
 * explicit options, several contexts at once. */
#include <stdio.h>

#include "conformance.h"

static bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

/* Field by field: a struct copy need not carry its padding. */
static bool same_device(const kiln_device_properties *a,
                        const kiln_device_properties *b) {
  return a->backend == b->backend && strcmp(a->name, b->name) == 0 &&
         a->vendor_id == b->vendor_id && a->device_id == b->device_id &&
         a->type == b->type && a->memory_bytes == b->memory_bytes &&
         a->max_threads_per_block == b->max_threads_per_block &&
         memcmp(a->uuid, b->uuid, sizeof a->uuid) == 0 &&
         strcmp(a->pci_bus_id, b->pci_bus_id) == 0;
}

static void library_matches_header(void **state) {
  (void)state;
  assert_int_equal(kiln_version(), KILN_VERSION);
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", KILN_VERSION_MAJOR,
           KILN_VERSION_MINOR, KILN_VERSION_PATCH);
  assert_string_equal(kiln_version_string(), want);
}

static void properties_are_sane(void **state) {
  (void)state;
  const kiln_device_properties *p = &conf.props;
  assert_int_equal(p->backend, conf.backend);
  assert_true(p->name[0] != '\0');
  assert_true(p->vendor[0] != '\0');
  assert_true(p->architecture[0] != '\0');
  assert_true(p->api_version[0] != '\0');
  assert_true(p->driver_version[0] != '\0');
  assert_true(p->type <= KILN_DEVICE_TYPE_CPU);
  assert_true(p->memory_bytes > 0);
  /* The minimums every backend's API guarantees (Vulkan's are lowest). */
  assert_true(p->max_threads_per_block >= 128);
  assert_true(p->max_block_size[0] >= 128 && p->max_block_size[1] >= 128 &&
              p->max_block_size[2] >= 64);
  for (int d = 0; d < 3; d++) assert_true(p->max_grid_size[d] >= 65535);
  assert_true(p->max_shared_memory_per_block >= 16384);
  assert_true(p->max_shared_memory_per_block_optin >=
              p->max_shared_memory_per_block);
  assert_true(power_of_two(p->subgroup_size));
  assert_true(p->max_kernel_argument_bytes >= 128);
  printf("  %s: %s, %s %s, %u compute units, %.1f GiB, %u threads per block, "
         "%zu/%zu bytes shared, subgroup %u, %zu argument bytes, API %s\n",
         p->name, kiln_device_type_name(p->type), p->vendor, p->architecture,
         p->compute_units, (double)p->memory_bytes / (1 << 30),
         p->max_threads_per_block, p->max_shared_memory_per_block,
         p->max_shared_memory_per_block_optin, p->subgroup_size,
         p->max_kernel_argument_bytes, p->api_version);
}

static bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Every device's, as "dddd:bb:dd.f" in lower-case hex (a domain of 4 to 6
 * digits), or "" where the API gives none (Vulkan only: CUDA and HIP
 * drivers always tell it). */
static void pci_bus_ids(void **state) {
  (void)state;
  static const char shape[] = ":xx:xx.x";
  size_t count = 0;
  check_ok(kiln_device_count(conf.backend, &count));
  for (size_t i = 0; i < count; i++) {
    kiln_device_properties p;
    check_ok(kiln_device_get_properties(conf.backend, i, &p));
    const char *id = p.pci_bus_id;
    if (!id[0] && conf.backend == KILN_BACKEND_VULKAN) continue;
    size_t domain = 0;
    while (is_hex(id[domain])) domain++;
    const char *rest = id + domain;
    bool right = domain >= 4 && domain <= 6 &&
                 strlen(rest) == sizeof shape - 1;
    for (size_t c = 0; right && shape[c]; c++)
      right = shape[c] == 'x' ? is_hex(rest[c]) : rest[c] == shape[c];
    if (!right || rest[7] > '7')
      fail_msg("%s device %zu (%s): pci_bus_id \"%s\" is not "
               "domain:bus:device.function (\"0000:3b:00.0\")",
               kiln_backend_name(conf.backend), i, p.name, id);
    printf("  device %zu: %s at PCI %s\n", i, p.name, id);
  }
}

static void device_list_has_the_context_device(void **state) {
  (void)state;
  assert_true(kiln_backend_compiled(conf.backend));
  const char *reason = NULL;
  check_ok(kiln_backend_available(conf.backend, &reason));
  assert_string_equal(reason, "");
  size_t n = 0;
  check_ok(kiln_device_count(conf.backend, &n));
  assert_true(n >= 1);
  bool found = false;
  for (size_t i = 0; i < n; i++) {
    kiln_device_properties p;
    check_ok(kiln_device_get_properties(conf.backend, i, &p));
    assert_int_equal(p.backend, conf.backend);
    if (same_device(&p, &conf.props)) found = true;
  }
  assert_true(found);
  kiln_device_properties p;
  check_fails(kiln_device_get_properties(conf.backend, n, &p),
              KILN_ERROR_NOT_FOUND);
}

/* The run's environment names the backend; explicit options must agree. */
static void contexts_from_environment_and_options(void **state) {
  (void)state;
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(NULL, &ctx));
  assert_int_equal(kiln_context_backend(ctx), conf.backend);
  check_ok(kiln_context_destroy(ctx));

  kiln_context_options o = kiln_context_options_default();
  check_ok(kiln_context_create(&o, &ctx));
  assert_int_equal(kiln_context_backend(ctx), conf.backend);
  check_ok(kiln_context_destroy(ctx));

  size_t n;
  check_ok(kiln_device_count(conf.backend, &n));
  for (size_t i = 0; i < n; i++) {
    o.backend = conf.backend;
    o.device_index = i;
    check_ok(kiln_context_create(&o, &ctx));
    kiln_device_properties a, b;
    check_ok(kiln_context_get_properties(ctx, &a));
    check_ok(kiln_device_get_properties(conf.backend, i, &b));
    assert_true(same_device(&a, &b));
    check_ok(kiln_context_synchronize(ctx));
    check_ok(kiln_context_destroy(ctx));
  }
  o.device_index = n;
  ctx = NULL;
  check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_NOT_FOUND);
  assert_null(ctx);
}

/* Two contexts on one device keep their own memory and streams. */
static void two_contexts_at_once(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  kiln_context *other;
  kiln_context_options o = {conf.backend, KILN_DEVICE_FROM_ENV,
                            KILN_SYNC_DEFAULT};
  check_ok(kiln_context_create(&o, &other));
  enum { N = 100003 };
  unsigned char *a = conf_alloc(N), *b = conf_alloc(N), *got = conf_alloc(N);
  conf_random_bytes(&r, a, N);
  conf_random_bytes(&r, b, N);
  kiln_buffer *ba, *bb;
  kiln_stream *sb;
  check_ok(kiln_buffer_create(conf.ctx, N, 0, &ba));
  check_ok(kiln_buffer_create(other, N, 0, &bb));
  check_ok(kiln_stream_create(other, &sb));
  check_ok(kiln_buffer_write(NULL, ba, 0, a, N));
  check_ok(kiln_buffer_write(sb, bb, 0, b, N));
  check_ok(kiln_buffer_read(NULL, bb, 0, got, N));
  conf_check_bytes(got, b, N, "the second context's buffer");
  check_ok(kiln_buffer_read(NULL, ba, 0, got, N));
  conf_check_bytes(got, a, N, "the first context's buffer");
  check_ok(kiln_stream_destroy(sb));
  check_ok(kiln_buffer_destroy(bb));
  check_ok(kiln_context_destroy(other));
  /* The first context is untouched by the second's end. */
  check_ok(kiln_buffer_read(NULL, ba, 0, got, N));
  conf_check_bytes(got, a, N, "the first context's buffer afterwards");
  check_ok(kiln_buffer_destroy(ba));
  free(a);
  free(b);
  free(got);
}

/* Destroying a context with objects alive reports them and frees them. */
static void context_destroy_reports_live_objects(void **state) {
  (void)state;
  kiln_context *ctx;
  check_ok(kiln_context_create(NULL, &ctx));
  kiln_buffer *b;
  kiln_host_buffer *h;
  kiln_stream *s;
  kiln_event *e;
  check_ok(kiln_buffer_create(ctx, 4096, KILN_BUFFER_ZERO, &b));
  check_ok(kiln_host_buffer_create(ctx, 4096, 0, &h));
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_event_create(ctx, &e));
  check_ok(kiln_buffer_read_async(s, b, 0, h, 0, 4096));
  check_ok(kiln_event_record(e, s));
  check_fails(kiln_context_destroy(ctx), KILN_ERROR_OBJECTS_ALIVE);
  check_message_has("4 objects");
}

int conf_run_device_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(library_matches_header),
      CONF_TEST(properties_are_sane),
      CONF_TEST(pci_bus_ids),
      CONF_TEST(device_list_has_the_context_device),
      CONF_TEST(contexts_from_environment_and_options),
      CONF_TEST(two_contexts_at_once),
      CONF_TEST(context_destroy_reports_live_objects),
  };
  return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
