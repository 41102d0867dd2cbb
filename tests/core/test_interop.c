/* The core's side of native handles (core/api/interop.c) on the fake backend,
 * whose device memory is host memory: the address handed out is past
 * KILN_DEBUG=guard's leading guard, a borrowed import is never freed and
 * an adopted one is (AddressSanitizer sees a double free or a leak
 * otherwise), the stream waits reach the backend as given, a context
 * goes out and comes back in, and a backend without the interop table
 * answers KILN_ERROR_UNSUPPORTED in words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/internal.h"
#include "fake_backend.h"
#include "kiln_check.h"

static kiln_context *ctx_of(void **state) {
  return ((fake_fixture *)*state)->ctx;
}

static int guard_setup(void **state) {
  setenv("KILN_DEBUG", "guard", 1);
  int rc = fake_fixture_setup(state);
  unsetenv("KILN_DEBUG");
  return rc;
}

static void address_is_past_the_guard(void **state) {
  kiln_buffer *buf;
  check_ok(kiln_buffer_create(ctx_of(state), 100, 0, &buf));
  kiln_native_buffer n;
  check_ok(kiln_buffer_get_native(buf, &n));
  assert_int_equal(n.backend, KILN_BACKEND_VULKAN);
  assert_int_equal(n.size, 100);
  assert_true(n.device_address == buf->device_address + KILN_GUARD_BYTES);
  check_ok(kiln_buffer_destroy(buf));
}

static void borrowed_is_kept_and_adopted_is_freed(void **state) {
  unsigned char *mine = malloc(64);
  assert_non_null(mine);
  kiln_native_buffer n = {KILN_BACKEND_VULKAN, (uint64_t)(uintptr_t)mine, 64,
                          0, 0, 0};
  kiln_buffer *buf;
  check_ok(kiln_buffer_create_from_native(ctx_of(state), &n, 0, &buf));
  assert_true(buf->borrowed);
  const unsigned char bytes[4] = {1, 2, 3, 4};
  check_ok(kiln_buffer_write(NULL, buf, 8, bytes, sizeof bytes));
  assert_memory_equal(mine + 8, bytes, sizeof bytes);
  check_ok(kiln_buffer_destroy(buf));
  free(mine); /* still the caller's */

  n.device_address = (uint64_t)(uintptr_t)malloc(64);
  assert_true(n.device_address != 0);
  check_ok(kiln_buffer_create_from_native(ctx_of(state), &n,
                                          KILN_NATIVE_ADOPT, &buf));
  assert_false(buf->borrowed);
  check_ok(kiln_buffer_destroy(buf)); /* the fake frees it */
}

static void streams_import_and_wait(void **state) {
  kiln_stream *s, *wrapped;
  check_ok(kiln_stream_create(ctx_of(state), &s));
  kiln_native_stream n;
  check_ok(kiln_stream_get_native(s, &n));
  assert_ptr_equal(n.stream, s);
  check_ok(kiln_stream_create_from_native(ctx_of(state), &n, 0, &wrapped));
  assert_true(wrapped->borrowed);
  check_ok(kiln_stream_wait_native(wrapped, 0x1234, 77));
  fake_backend *fb = &((fake_fixture *)*state)->fb;
  assert_true(fb->last_wait_handle == 0x1234);
  assert_true(fb->last_wait_value == 77);
  check_ok(kiln_stream_destroy(wrapped));
  check_ok(kiln_stream_create_from_native(ctx_of(state), &n,
                                          KILN_NATIVE_ADOPT, &wrapped));
  assert_false(wrapped->borrowed);
  check_ok(kiln_stream_destroy(wrapped));
  check_ok(kiln_stream_destroy(s));
}

/* A context's handles open a second context on the same device (the
 * fake's handles name it), borrowed or adopted; handles that name no
 * device are refused in words. */
static void contexts_export_and_import(void **state) {
  kiln_context *ctx = ctx_of(state);
  kiln_native_context nc;
  check_ok(kiln_context_get_native(ctx, &nc));
  assert_int_equal(nc.backend, KILN_BACKEND_VULKAN);
  assert_ptr_equal(nc.vk_device, ctx);
  for (uint32_t flags = 0; flags <= KILN_NATIVE_ADOPT;
       flags += KILN_NATIVE_ADOPT) {
    kiln_context *other = NULL;
    check_ok(kiln_context_create_from_native(&nc, flags, &other));
    assert_ptr_not_equal(other, ctx);
    kiln_device_properties mine, theirs;
    check_ok(kiln_context_get_properties(ctx, &mine));
    check_ok(kiln_context_get_properties(other, &theirs));
    assert_string_equal(theirs.name, mine.name);
    check_ok(kiln_context_destroy(other));
  }
  nc.vk_physical_device = &nc;
  kiln_context *none = NULL;
  check_fails(kiln_context_create_from_native(&nc, 0, &none),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("kiln_context_create_from_native");
  check_message_has("names no device");
  assert_null(none);
}

/* Without the interop table every native-handle call answers
 * KILN_ERROR_UNSUPPORTED, naming the call, the backend and the ability. */
static void no_interop_is_unsupported(void **state) {
  fake_backend *fb = &((fake_fixture *)*state)->fb;
  kiln_context *ctx = ctx_of(state);
  kiln_buffer *buf;
  check_ok(kiln_buffer_create(ctx, 16, 0, &buf));
  kiln_stream *s;
  check_ok(kiln_stream_create(ctx, &s));
  kiln_native_context nc;
  check_ok(kiln_context_get_native(ctx, &nc));
  kiln_native_buffer nb;
  check_ok(kiln_buffer_get_native(buf, &nb));
  kiln_native_stream ns;
  check_ok(kiln_stream_get_native(s, &ns));
  fb->ops.interop = NULL;
  static const char words[] = "the vulkan backend has no native handles";
  check_fails(kiln_context_get_native(ctx, &nc), KILN_ERROR_UNSUPPORTED);
  check_message_has("kiln_context_get_native");
  check_message_has(words);
  kiln_context *other = NULL;
  check_fails(kiln_context_create_from_native(&nc, 0, &other),
              KILN_ERROR_UNSUPPORTED);
  check_message_has("kiln_context_create_from_native");
  check_message_has(words);
  assert_null(other);
  check_fails(kiln_buffer_get_native(buf, &nb), KILN_ERROR_UNSUPPORTED);
  check_message_has("kiln_buffer_get_native");
  kiln_buffer *imported = NULL;
  check_fails(kiln_buffer_create_from_native(ctx, &nb, 0, &imported),
              KILN_ERROR_UNSUPPORTED);
  check_message_has("kiln_buffer_create_from_native");
  assert_null(imported);
  check_fails(kiln_stream_get_native(s, &ns), KILN_ERROR_UNSUPPORTED);
  check_message_has("kiln_stream_get_native");
  kiln_stream *wrapped = NULL;
  check_fails(kiln_stream_create_from_native(ctx, &ns, 0, &wrapped),
              KILN_ERROR_UNSUPPORTED);
  check_message_has("kiln_stream_create_from_native");
  assert_null(wrapped);
  check_fails(kiln_stream_wait_native(s, 0x1234, 1), KILN_ERROR_UNSUPPORTED);
  check_message_has("kiln_stream_wait_native");
  check_message_has(words);
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(buf));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(address_is_past_the_guard, guard_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(borrowed_is_kept_and_adopted_is_freed,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(streams_import_and_wait,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(contexts_export_and_import,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(no_interop_is_unsupported,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
