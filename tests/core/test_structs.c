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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* A struct of a newer kiln.h: today's bytes, then a zero tail (`newer`),
 * or a tail with a byte set (`newer_set`). */
#define NEWER(type)  \
  struct {           \
    type today;      \
    uint64_t added;  \
  }

/* The native handles both ways, every _sized entry point: a newer caller
 * with nothing set in its tail is served, one that set a byte there is
 * refused, and a size below any kiln.h's is invalid. Out-structs of a
 * newer caller get zeros past today's fields. */
static void native_handles_of_every_size(void **state) {
  fake_fixture *f = *state;
  NEWER(kiln_native_context) nc;
  memset(&nc, 0xa5, sizeof nc);
  check_ok(kiln_context_get_native_sized(f->ctx, sizeof nc, &nc.today));
  assert_true(nc.added == 0);
  check_fails(kiln_context_get_native_sized(f->ctx, 0, &nc.today),
              KILN_ERROR_INVALID_ARGUMENT);
  kiln_context *other = NULL;
  check_ok(kiln_context_create_from_native_sized(&nc.today, sizeof nc, 0,
                                                 &other));
  check_ok(kiln_context_destroy(other));
  nc.added = 1;
  check_fails(kiln_context_create_from_native_sized(&nc.today, sizeof nc, 0,
                                                    &other),
              KILN_ERROR_UNSUPPORTED);
  check_fails(kiln_context_create_from_native_sized(&nc.today, 3, 0, &other),
              KILN_ERROR_INVALID_ARGUMENT);

  kiln_buffer *buf, *wrapped;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &buf));
  NEWER(kiln_native_buffer) nb;
  memset(&nb, 0xa5, sizeof nb);
  check_ok(kiln_buffer_get_native_sized(buf, sizeof nb, &nb.today));
  assert_true(nb.added == 0);
  assert_int_equal(nb.today.size, 64);
  check_fails(kiln_buffer_get_native_sized(buf, 1, &nb.today),
              KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_buffer_create_from_native_sized(f->ctx, &nb.today, sizeof nb,
                                                0, &wrapped));
  check_ok(kiln_buffer_destroy(wrapped));
  nb.added = 1;
  check_fails(kiln_buffer_create_from_native_sized(f->ctx, &nb.today,
                                                   sizeof nb, 0, &wrapped),
              KILN_ERROR_UNSUPPORTED);
  check_fails(kiln_buffer_create_from_native_sized(f->ctx, &nb.today, 0, 0,
                                                   &wrapped),
              KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_buffer_destroy(buf));

  kiln_stream *st, *wrapped_stream;
  check_ok(kiln_stream_create(f->ctx, &st));
  NEWER(kiln_native_stream) ns;
  memset(&ns, 0xa5, sizeof ns);
  check_ok(kiln_stream_get_native_sized(st, sizeof ns, &ns.today));
  assert_true(ns.added == 0);
  check_fails(kiln_stream_get_native_sized(st, 0, &ns.today),
              KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_stream_create_from_native_sized(f->ctx, &ns.today, sizeof ns,
                                                0, &wrapped_stream));
  check_ok(kiln_stream_destroy(wrapped_stream));
  ns.added = 1;
  check_fails(kiln_stream_create_from_native_sized(f->ctx, &ns.today,
                                                   sizeof ns, 0,
                                                   &wrapped_stream),
              KILN_ERROR_UNSUPPORTED);
  check_fails(kiln_stream_create_from_native_sized(f->ctx, &ns.today, 2, 0,
                                                   &wrapped_stream),
              KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_stream_destroy(st));
}

/* Compile options and build info through the _sized entry points, as a
 * newer and a bogus caller would call them. */
static void compiling_with_options_of_every_size(void **state) {
  fake_fixture *f = *state;
  fake_compiler_enable(&f->fb);
  char dir[] = "/tmp/kiln-structs-XXXXXX";
  assert_non_null(mkdtemp(dir));
  setenv("KILN_CACHE", "off", 1);
  const kiln_source src = {KILN_SOURCE_GLSL, "ka\n", "k.comp", NULL};
  NEWER(kiln_compile_options) o;
  memset(&o, 0, sizeof o);
  kiln_module *m;
  check_ok(kiln_module_create_from_source_sized(f->ctx, &src, 1, &o.today,
                                                sizeof o, &m));
  NEWER(kiln_module_build_info) info;
  memset(&info, 0xa5, sizeof info);
  check_ok(kiln_module_get_build_info_sized(m, sizeof info, &info.today));
  assert_int_equal(info.today.source_count, 1);
  assert_true(info.added == 0);
  check_fails(kiln_module_get_build_info_sized(m, 8, &info.today),
              KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_module_destroy(m));
  char path[64];
  snprintf(path, sizeof path, "%s/k.comp", dir);
  FILE *file = fopen(path, "w");
  assert_non_null(file);
  fputs("ka\n", file);
  fclose(file);
  const char *const paths[1] = {path};
  check_ok(kiln_module_create_from_files_sized(f->ctx, paths, 1, &o.today,
                                               sizeof o, &m));
  check_ok(kiln_module_destroy(m));
  o.added = 1;
  check_fails(kiln_module_create_from_source_sized(f->ctx, &src, 1, &o.today,
                                                   sizeof o, &m),
              KILN_ERROR_UNSUPPORTED);
  check_fails(kiln_module_create_from_files_sized(f->ctx, paths, 1, &o.today,
                                                  sizeof o, &m),
              KILN_ERROR_UNSUPPORTED);
  check_fails(kiln_module_create_from_source_sized(f->ctx, &src, 1, &o.today,
                                                   0, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_create_from_files_sized(f->ctx, paths, 1, &o.today,
                                                  4, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  /* NULL options take the defaults whatever the size. */
  check_ok(kiln_module_create_from_source_sized(f->ctx, &src, 1, NULL, 0, &m));
  check_ok(kiln_module_destroy(m));
  unsetenv("KILN_CACHE");
  assert_int_equal(remove(path), 0);
  assert_int_equal(rmdir(dir), 0);
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
      T(native_handles_of_every_size),
      T(compiling_with_options_of_every_size),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
