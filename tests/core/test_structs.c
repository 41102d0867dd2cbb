/* Structs that grow (kiln.h's conventions): kiln reads only the bytes the
 * caller's kiln.h has, takes zero for the rest, writes no more than the
 * caller's struct holds, and refuses a newer caller's field it does not
 * know. Each case calls the _sized entry point as a program built against
 * an older or a newer kiln.h would, with its own copy of the struct. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

/* A newer kiln.h's options: the fields of today's, then one more. */
typedef struct newer_options {
  kiln_context_options today;
  uint64_t added;
} newer_options;

/* A newer kiln.h's properties, and a poison pattern in the bytes past
 * today's, to tell what kiln wrote. */
typedef struct newer_properties {
  kiln_device_properties today;
  unsigned char added[64];
} newer_properties;

static void a_newer_caller_with_zero_fields_is_served(void **state) {
  fake_fixture *f = *state;
  newer_options o;
  memset(&o, 0, sizeof o);
  o.today = kiln_context_options_default();
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create_sized(&o.today, sizeof o, &ctx));
  check_ok(kiln_context_destroy(ctx));
  (void)f;
}

static void a_newer_callers_field_is_refused_in_words(void **state) {
  (void)state;
  newer_options o;
  memset(&o, 0, sizeof o);
  o.today = kiln_context_options_default();
  o.added = 7;
  kiln_context *ctx = NULL;
  check_fails(kiln_context_create_sized(&o.today, sizeof o, &ctx),
              KILN_ERROR_UNSUPPORTED);
  check_message_has("kiln_context_create");
  check_message_has("newer kiln.h");
  assert_null(ctx);
}

static void a_size_below_any_kiln_h_is_refused(void **state) {
  fake_fixture *f = *state;
  kiln_context_options o = kiln_context_options_default();
  kiln_context *ctx = NULL;
  check_fails(kiln_context_create_sized(&o, 0, &ctx),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("0 bytes");
  check_fails(kiln_context_create_sized(&o, sizeof o.backend, &ctx),
              KILN_ERROR_INVALID_ARGUMENT);
  assert_null(ctx);
  kiln_device_properties p;
  check_fails(kiln_context_get_properties_sized(f->ctx, 4, &p),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("out_properties");
}

static void out_structs_get_what_the_caller_has(void **state) {
  fake_fixture *f = *state;
  kiln_device_properties want;
  check_ok(kiln_context_get_properties(f->ctx, &want));
  /* Newer: today's fields, then zeros where this kiln has nothing. */
  newer_properties got;
  memset(&got, 0xa5, sizeof got);
  check_ok(kiln_context_get_properties_sized(f->ctx, sizeof got, &got.today));
  assert_memory_equal(&got.today, &want, sizeof want);
  for (size_t i = 0; i < sizeof got.added; i++)
    assert_int_equal(got.added[i], 0);
  check_ok(kiln_device_get_properties_sized(KILN_BACKEND_VULKAN, 0,
                                            sizeof got, &got.today));
  for (size_t i = 0; i < sizeof got.added; i++)
    assert_int_equal(got.added[i], 0);
  /* Exactly today's size: nothing past it is written. */
  unsigned char exact[sizeof(kiln_device_properties) + 16];
  memset(exact, 0x5a, sizeof exact);
  check_ok(kiln_context_get_properties_sized(
      f->ctx, sizeof(kiln_device_properties),
      (kiln_device_properties *)(void *)exact));
  for (size_t i = sizeof(kiln_device_properties); i < sizeof exact; i++)
    assert_int_equal(exact[i], 0x5a);
  kiln_module_build_info info[2];
  memset(info, 0x5a, sizeof info);
  kiln_module *m;
  const kiln_module_image image = fake_image("k");
  check_ok(kiln_module_create(f->ctx, &image, 1, &m));
  check_ok(kiln_module_get_build_info(m, &info[0]));
  assert_int_equal(info[0].source_count, 0);
  const unsigned char *after = (const unsigned char *)&info[1];
  for (size_t i = 0; i < sizeof info[1]; i++) assert_int_equal(after[i], 0x5a);
  check_ok(kiln_module_destroy(m));
}

static void stream_options_of_a_newer_caller(void **state) {
  fake_fixture *f = *state;
  struct {
    kiln_stream_options today;
    uint32_t added;
  } o = {{0}, 0};
  kiln_stream *s;
  check_ok(kiln_stream_create_with_options_sized(f->ctx, &o.today, sizeof o,
                                                 &s));
  check_ok(kiln_stream_destroy(s));
  o.added = 1;
  check_fails(kiln_stream_create_with_options_sized(f->ctx, &o.today, sizeof o,
                                                    &s),
              KILN_ERROR_UNSUPPORTED);
}

int main(void) {
#define T(name) \
  cmocka_unit_test_setup_teardown(name, fake_fixture_setup, fake_fixture_teardown)
  const struct CMUnitTest tests[] = {
      T(a_newer_caller_with_zero_fields_is_served),
      T(a_newer_callers_field_is_refused_in_words),
      T(a_size_below_any_kiln_h_is_refused),
      T(out_structs_get_what_the_caller_has),
      T(stream_options_of_a_newer_caller),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
