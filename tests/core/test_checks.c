/* The core's argument checks, one test per class of bad input. Each checks
 * the status and that a message was left; none may reach the backend.
 *
 * Over 600 lines: one short test per class of bad input, all on one fake
 * backend's set-up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

static kiln_launch_config one_thread(void) {
  kiln_launch_config c = {{1, 1, 1}, {1, 1, 1}, 0};
  return c;
}

/* A kernel of the fixture's context from a fake image. */
static kiln_module *load(kiln_context *ctx, const char *text) {
  kiln_module_image img = fake_image(text);
  kiln_module *m = NULL;
  check_ok(kiln_module_create(ctx, &img, 1, &m));
  return m;
}

static kiln_kernel *kernel(kiln_module *m, const char *name) {
  kiln_kernel *k = NULL;
  check_ok(kiln_module_get_kernel(m, name, &k));
  return k;
}

static void null_handles(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b = NULL;
  kiln_host_buffer *hb = NULL;
  kiln_stream *s = NULL;
  kiln_event *e = NULL;
  kiln_module *m = NULL;
  kiln_kernel *k = NULL;
  kiln_device_properties p;
  kiln_launch_config c = one_thread();
  unsigned char byte = 0;
  float ms;
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &b));
  check_ok(kiln_host_buffer_create(f->ctx, 16, 0, &hb));

  check_fails(kiln_buffer_create(NULL, 16, 0, &b), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_host_buffer_create(NULL, 16, 0, &hb),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_stream_create(NULL, &s), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_event_create(NULL, &e), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_module_create(NULL, NULL, 0, &m), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_context_synchronize(NULL), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_context_get_properties(NULL, &p), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_context_default_stream(NULL, &s), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_context_builtin_module(NULL, &m), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_write(NULL, NULL, 0, &byte, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_read(NULL, NULL, 0, &byte, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_copy(NULL, NULL, 0, b, 0, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_copy(NULL, b, 0, NULL, 0, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_fill(NULL, NULL, 0, 1, &byte, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_write_async(NULL, b, 0, NULL, 0, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_read_async(NULL, b, 0, NULL, 0, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_write_async(NULL, NULL, 0, hb, 0, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_module_get_kernel(NULL, "k", &k), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_launch(NULL, NULL, &c, NULL, 0), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_stream_synchronize(NULL), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_event_record(NULL, NULL), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_stream_wait_event(NULL, NULL), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_event_synchronize(NULL), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_event_query(NULL), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_event_elapsed_ms(NULL, NULL, &ms),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_axpy_f32(NULL, 1, 1.0f, NULL, 0, b, 0),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_axpy_f32(NULL, 1, 1.0f, b, 0, NULL, 0),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_reduce_sum_f32(NULL, 1, NULL, 0, b, 0),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_dot_f32(NULL, 1, b, 0, NULL, 0, b, 4),
              KILN_ERROR_INVALID_HANDLE);

  /* Destroying NULL is a no-op; the size and data of NULL are empty. */
  check_ok(kiln_buffer_destroy(NULL));
  check_ok(kiln_host_buffer_destroy(NULL));
  check_ok(kiln_module_destroy(NULL));
  check_ok(kiln_stream_destroy(NULL));
  check_ok(kiln_event_destroy(NULL));
  check_ok(kiln_context_destroy(NULL));
  assert_int_equal(kiln_buffer_size(NULL), 0);
  assert_int_equal(kiln_host_buffer_size(NULL), 0);
  assert_null(kiln_host_buffer_data(NULL));

  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_host_buffer_destroy(hb));
  assert_int_equal(f->fb.calls[FAKE_OP_WRITE] + f->fb.calls[FAKE_OP_READ] +
                       f->fb.calls[FAKE_OP_COPY] + f->fb.calls[FAKE_OP_FILL],
                   0);
}

/* NULL out-parameters and meaningless values. */
static void invalid_arguments(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b;
  check_fails(kiln_buffer_create(f->ctx, 16, 0, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_create(f->ctx, 0, 0, &b),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_create(f->ctx, 16, 0x80, &b),
              KILN_ERROR_INVALID_ARGUMENT);
  kiln_host_buffer *hb;
  check_fails(kiln_host_buffer_create(f->ctx, 0, 0, &hb),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_host_buffer_create(f->ctx, 16, 0, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_stream_create(f->ctx, NULL), KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_event_create(f->ctx, NULL), KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_context_default_stream(f->ctx, NULL),
              KILN_ERROR_INVALID_ARGUMENT);

  check_ok(kiln_buffer_create(f->ctx, 16, 0, &b));
  check_fails(kiln_buffer_write(NULL, b, 0, NULL, 4),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_read(NULL, b, 0, NULL, 4),
              KILN_ERROR_INVALID_ARGUMENT);
  /* Overlapping ranges of one buffer cannot be copied; touching ones can. */
  check_fails(kiln_buffer_copy(NULL, b, 0, b, 4, 8),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_copy(NULL, b, 4, b, 0, 8),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_copy(NULL, b, 2, b, 2, 1),
              KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_buffer_copy(NULL, b, 0, b, 8, 8));
  check_ok(kiln_buffer_copy(NULL, b, 8, b, 0, 8));
  /* The built-in helpers take float offsets. */
  check_fails(kiln_axpy_f32(NULL, 1, 2.0f, b, 2, b, 8),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_reduce_sum_f32(NULL, 1, b, 0, b, 6),
              KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_buffer_destroy(b));
}

/* A handle of another type, and ones that look live but are not: copies of
 * live objects, which kiln never handed out (test_handles.c has destroyed
 * ones). */
static void wrong_type_and_destroyed_handles(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b;
  kiln_stream *s;
  kiln_event *e;
  kiln_host_buffer *hb;
  unsigned char bytes[8] = {0};
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &b));
  check_ok(kiln_stream_create(f->ctx, &s));
  check_ok(kiln_event_create(f->ctx, &e));
  check_ok(kiln_host_buffer_create(f->ctx, 16, 0, &hb));

  check_fails(kiln_buffer_write(NULL, (kiln_buffer *)s, 0, bytes, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_write(s, (kiln_buffer *)hb, 0, bytes, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_write((kiln_stream *)e, b, 0, bytes, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_write_async(NULL, b, 0, (kiln_host_buffer *)b, 0, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_event_record((kiln_event *)s, NULL),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_stream_destroy((kiln_stream *)e), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_destroy((kiln_buffer *)hb),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_context_synchronize((kiln_context *)b),
              KILN_ERROR_INVALID_HANDLE);
  assert_int_equal(kiln_buffer_size((kiln_buffer *)s), 0);

  kiln_buffer dead_b = *b;
  kiln_stream dead_s = *s;
  kiln_event dead_e = *e;
  check_fails(kiln_buffer_write(NULL, &dead_b, 0, bytes, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_destroy(&dead_b), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_write(&dead_s, b, 0, bytes, 1),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_stream_destroy(&dead_s), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_event_record(&dead_e, NULL), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_event_destroy(&dead_e), KILN_ERROR_INVALID_HANDLE);

  assert_int_equal(f->fb.calls[FAKE_OP_WRITE], 0);
  assert_int_equal(f->fb.calls[FAKE_OP_EVENT_RECORD], 0);
  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(b));
}

static void objects_of_another_context(void **state) {
  fake_fixture *f = *state;
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *other;
  check_ok(kiln_context_create(&o, &other));
  kiln_buffer *a, *b;
  kiln_host_buffer *hb;
  kiln_stream *sa, *sb;
  kiln_event *ea, *eb;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &a));
  check_ok(kiln_buffer_create(other, 64, 0, &b));
  check_ok(kiln_host_buffer_create(other, 64, 0, &hb));
  check_ok(kiln_stream_create(f->ctx, &sa));
  check_ok(kiln_stream_create(other, &sb));
  check_ok(kiln_event_create(f->ctx, &ea));
  check_ok(kiln_event_create(other, &eb));
  kiln_module *m = load(f->ctx, "k");
  kiln_kernel *k = kernel(m, "k");
  unsigned char bytes[8] = {0};
  const uint32_t pattern = 7;

  check_fails(kiln_buffer_write(sb, a, 0, bytes, 8), KILN_ERROR_WRONG_CONTEXT);
  check_fails(kiln_buffer_read(sb, a, 0, bytes, 8), KILN_ERROR_WRONG_CONTEXT);
  check_fails(kiln_buffer_copy(NULL, a, 0, b, 0, 8), KILN_ERROR_WRONG_CONTEXT);
  check_fails(kiln_buffer_copy(sa, b, 0, b, 8, 8), KILN_ERROR_WRONG_CONTEXT);
  check_fails(kiln_buffer_fill(sb, a, 0, 8, &pattern, 4),
              KILN_ERROR_WRONG_CONTEXT);
  check_fails(kiln_buffer_write_async(NULL, a, 0, hb, 0, 8),
              KILN_ERROR_WRONG_CONTEXT);
  check_fails(kiln_buffer_read_async(NULL, a, 0, hb, 0, 8),
              KILN_ERROR_WRONG_CONTEXT);

  kiln_launch_config c = one_thread();
  kiln_arg args[2] = {kiln_arg_buffer(a, 0), kiln_arg_buffer(b, 0)};
  check_fails(kiln_launch(NULL, k, &c, args, 2), KILN_ERROR_WRONG_CONTEXT);
  check_fails(kiln_launch(sb, k, &c, args, 1), KILN_ERROR_WRONG_CONTEXT);
  check_fails(kiln_axpy_f32(NULL, 4, 1.0f, b, 0, a, 0),
              KILN_ERROR_WRONG_CONTEXT);
  check_fails(kiln_dot_f32(NULL, 4, a, 0, b, 0, a, 32),
              KILN_ERROR_WRONG_CONTEXT);
  check_fails(kiln_reduce_sum_f32(sb, 4, a, 0, a, 32),
              KILN_ERROR_WRONG_CONTEXT);

  check_fails(kiln_event_record(ea, sb), KILN_ERROR_WRONG_CONTEXT);
  check_ok(kiln_event_record(ea, sa));
  check_ok(kiln_event_record(eb, sb));
  check_fails(kiln_stream_wait_event(sb, ea), KILN_ERROR_WRONG_CONTEXT);
  float ms;
  check_fails(kiln_event_elapsed_ms(ea, eb, &ms), KILN_ERROR_WRONG_CONTEXT);

  assert_int_equal(f->fb.calls[FAKE_OP_LAUNCH], 0);
  assert_int_equal(f->fb.calls[FAKE_OP_WRITE] + f->fb.calls[FAKE_OP_READ] +
                       f->fb.calls[FAKE_OP_COPY] + f->fb.calls[FAKE_OP_FILL],
                   0);
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_event_destroy(ea));
  check_ok(kiln_stream_destroy(sa));
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_event_destroy(eb));
  check_ok(kiln_stream_destroy(sb));
  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_context_destroy(other));
}

/* offset + size wrapping around SIZE_MAX. */
static void size_overflow(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b;
  kiln_host_buffer *hb;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &b));
  check_ok(kiln_host_buffer_create(f->ctx, 64, 0, &hb));
  unsigned char bytes[16] = {0};
  const uint64_t pattern = 0;
  const size_t big = SIZE_MAX - 7; /* a multiple of 8 */
  check_fails(kiln_buffer_write(NULL, b, big, bytes, 16), KILN_ERROR_OVERFLOW);
  check_fails(kiln_buffer_read(NULL, b, big, bytes, 16), KILN_ERROR_OVERFLOW);
  check_fails(kiln_buffer_write(NULL, b, 8, bytes, SIZE_MAX),
              KILN_ERROR_OVERFLOW);
  kiln_buffer *c;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &c));
  check_fails(kiln_buffer_copy(NULL, b, big, c, 0, 16), KILN_ERROR_OVERFLOW);
  check_fails(kiln_buffer_copy(NULL, b, 0, c, big, 16), KILN_ERROR_OVERFLOW);
  check_fails(kiln_buffer_fill(NULL, b, big, 16, &pattern, 8),
              KILN_ERROR_OVERFLOW);
  check_fails(kiln_buffer_write_async(NULL, b, 0, hb, big, 16),
              KILN_ERROR_OVERFLOW);
  check_fails(kiln_buffer_read_async(NULL, b, 0, hb, big, 16),
              KILN_ERROR_OVERFLOW);
  check_fails(kiln_axpy_f32(NULL, 4, 1.0f, b, SIZE_MAX - 3, c, 0),
              KILN_ERROR_OVERFLOW);
  check_fails(kiln_reduce_sum_f32(NULL, 4, b, 0, c, SIZE_MAX - 3),
              KILN_ERROR_OVERFLOW);
  check_ok(kiln_buffer_destroy(c));
  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_buffer_destroy(b));
}

static void ranges_out_of_bounds(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b, *c;
  kiln_host_buffer *hb;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &b));
  check_ok(kiln_buffer_create(f->ctx, 32, 0, &c));
  check_ok(kiln_host_buffer_create(f->ctx, 16, 0, &hb));
  unsigned char bytes[128] = {0};
  const uint16_t pattern = 0x1234;

  check_ok(kiln_buffer_write(NULL, b, 60, bytes, 4));
  check_fails(kiln_buffer_write(NULL, b, 60, bytes, 5),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_buffer_write(NULL, b, 0, bytes, 65),
              KILN_ERROR_OUT_OF_RANGE);
  /* A zero-length range is still checked: at the end is fine, past not. */
  check_ok(kiln_buffer_write(NULL, b, 64, bytes, 0));
  check_fails(kiln_buffer_write(NULL, b, 65, bytes, 0),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_buffer_read(NULL, b, 32, bytes, 33),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_buffer_copy(NULL, c, 0, b, 0, 33), KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_buffer_copy(NULL, b, 0, c, 16, 17), KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_buffer_fill(NULL, c, 30, 4, &pattern, 2),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_buffer_write_async(NULL, b, 0, hb, 8, 9),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_buffer_write_async(NULL, c, 24, hb, 0, 16),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_buffer_read_async(NULL, b, 0, hb, 0, 17),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_buffer_read_async(NULL, c, 20, hb, 0, 16),
              KILN_ERROR_OUT_OF_RANGE);
  /* 9 floats do not fit in 32 bytes; 8 at offset 4 neither. */
  check_fails(kiln_axpy_f32(NULL, 9, 1.0f, b, 0, c, 0),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_axpy_f32(NULL, 8, 1.0f, c, 4, b, 0),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_reduce_sum_f32(NULL, 8, b, 0, c, 32),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_dot_f32(NULL, 16, b, 0, c, 0, b, 0),
              KILN_ERROR_OUT_OF_RANGE);

  kiln_module *m = load(f->ctx, "k:8");
  kiln_kernel *k = kernel(m, "k");
  kiln_launch_config cfg = one_thread();
  kiln_arg past = kiln_arg_buffer(c, 33);
  check_fails(kiln_launch(NULL, k, &cfg, &past, 1), KILN_ERROR_OUT_OF_RANGE);
  kiln_arg at_end = kiln_arg_buffer(c, 32);
  check_ok(kiln_launch(NULL, k, &cfg, &at_end, 1));
  check_ok(kiln_module_destroy(m));

  assert_int_equal(f->fb.calls[FAKE_OP_WRITE], 1);
  assert_int_equal(f->fb.calls[FAKE_OP_READ] + f->fb.calls[FAKE_OP_COPY] +
                       f->fb.calls[FAKE_OP_FILL] +
                       f->fb.calls[FAKE_OP_WRITE_ASYNC] +
                       f->fb.calls[FAKE_OP_READ_ASYNC],
                   0);
  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_buffer_destroy(c));
  check_ok(kiln_buffer_destroy(b));
}

static void zero_length_operations_do_nothing(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b, *c;
  kiln_host_buffer *hb;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &b));
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &c));
  check_ok(kiln_host_buffer_create(f->ctx, 64, 0, &hb));
  unsigned char bytes[4] = {0};
  const uint32_t pattern = 1;
  check_ok(kiln_buffer_write(NULL, b, 3, bytes, 0));
  check_ok(kiln_buffer_read(NULL, b, 3, bytes, 0));
  check_ok(kiln_buffer_copy(NULL, b, 5, c, 7, 0));
  check_ok(kiln_buffer_copy(NULL, b, 5, b, 5, 0));
  check_ok(kiln_buffer_fill(NULL, b, 8, 0, &pattern, 4));
  check_ok(kiln_buffer_write_async(NULL, b, 1, hb, 2, 0));
  check_ok(kiln_buffer_read_async(NULL, b, 1, hb, 2, 0));
  check_ok(kiln_axpy_f32(NULL, 0, 2.0f, b, 0, c, 0));
  assert_int_equal(f->fb.calls[FAKE_OP_WRITE] + f->fb.calls[FAKE_OP_READ] +
                       f->fb.calls[FAKE_OP_COPY] + f->fb.calls[FAKE_OP_FILL] +
                       f->fb.calls[FAKE_OP_WRITE_ASYNC] +
                       f->fb.calls[FAKE_OP_READ_ASYNC] +
                       f->fb.calls[FAKE_OP_LAUNCH],
                   0);

  /* A launch with a zero grid dimension does nothing, after the checks. */
  kiln_module *m = load(f->ctx, "k:8");
  kiln_kernel *k = kernel(m, "k");
  kiln_arg a = kiln_arg_buffer(b, 0);
  const kiln_launch_config empty[3] = {{{0, 1, 1}, {64, 1, 1}, 0},
                                       {{4, 0, 1}, {64, 1, 1}, 0},
                                       {{4, 1, 0}, {64, 1, 1}, 0}};
  for (int i = 0; i < 3; i++) check_ok(kiln_launch(NULL, k, &empty[i], &a, 1));
  assert_int_equal(f->fb.calls[FAKE_OP_LAUNCH], 0);
  kiln_arg wrong = kiln_arg_u32(1);
  check_fails(kiln_launch(NULL, k, &empty[0], &wrong, 1),
              KILN_ERROR_INVALID_ARGUMENT);
  const kiln_launch_config too_big = {{0, 1, 1}, {4096, 1, 1}, 0};
  check_fails(kiln_launch(NULL, k, &too_big, &a, 1), KILN_ERROR_OUT_OF_RANGE);

  /* Checks still apply to empty operations. */
  check_fails(kiln_buffer_write(NULL, NULL, 0, bytes, 0),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_fill(NULL, b, 0, 0, &pattern, 3),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_copy(NULL, b, 65, c, 0, 0), KILN_ERROR_OUT_OF_RANGE);
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_buffer_destroy(c));
  check_ok(kiln_buffer_destroy(b));
}

static void fill_pattern_sizes_and_alignment(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &b));
  const unsigned char pattern[16] = {0x11, 0x22, 0x33, 0x44, 0x55,
                                     0x66, 0x77, 0x88, 0x99, 0xaa};
  const size_t bad_sizes[] = {0, 3, 5, 6, 7, 9, 16};
  for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++)
    check_fails(kiln_buffer_fill(NULL, b, 0, 16, pattern, bad_sizes[i]),
                KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_fill(NULL, b, 0, 16, NULL, 4),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_fill(NULL, b, 2, 16, pattern, 4),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_fill(NULL, b, 0, 6, pattern, 4),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_fill(NULL, b, 4, 16, pattern, 8),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_buffer_fill(NULL, b, 1, 2, pattern, 2),
              KILN_ERROR_INVALID_ARGUMENT);
  assert_int_equal(f->fb.calls[FAKE_OP_FILL], 0);

  /* The backend gets the pattern's bytes in memory order. */
  const size_t sizes[] = {1, 2, 4, 8};
  for (size_t i = 0; i < 4; i++) {
    size_t ps = sizes[i];
    check_ok(kiln_buffer_fill(NULL, b, ps, 4 * ps, pattern, ps));
    uint64_t expected = 0;
    memcpy(&expected, pattern, ps);
    assert_int_equal(f->fb.last_fill_pattern, expected);
    assert_int_equal(f->fb.last_fill_pattern_size, ps);
    unsigned char got[64];
    check_ok(kiln_buffer_read(NULL, b, 0, got, 64));
    for (size_t j = 0; j < 4 * ps; j++)
      assert_int_equal(got[ps + j], pattern[j % ps]);
  }
  check_ok(kiln_buffer_destroy(b));
}

static void argument_count_and_bytes(void **state) {
  fake_fixture *f = *state;
  kiln_module *m = load(f->ctx, "any");
  kiln_kernel *k = kernel(m, "any");
  kiln_launch_config c = one_thread();
  kiln_arg args[KILN_MAX_KERNEL_ARGS + 1];
  for (size_t i = 0; i <= KILN_MAX_KERNEL_ARGS; i++) args[i] = kiln_arg_u32(1);
  /* The fake device takes 256 bytes: 64 u32 fit, 65 arguments never do. */
  check_ok(kiln_launch(NULL, k, &c, args, KILN_MAX_KERNEL_ARGS));
  check_fails(kiln_launch(NULL, k, &c, args, KILN_MAX_KERNEL_ARGS + 1),
              KILN_ERROR_OUT_OF_RANGE);
  for (size_t i = 0; i <= 32; i++) args[i] = kiln_arg_u64(1);
  check_ok(kiln_launch(NULL, k, &c, args, 32));
  check_fails(kiln_launch(NULL, k, &c, args, 33), KILN_ERROR_OUT_OF_RANGE);
  check_message_has("256");
  /* A 4-byte argument after 252 bytes would fit; alignment makes the next
   * 8-byte one start at 256, past the limit. */
  for (size_t i = 0; i < 63; i++) args[i] = kiln_arg_u32(1);
  args[63] = kiln_arg_f64(1.0);
  check_fails(kiln_launch(NULL, k, &c, args, 64), KILN_ERROR_OUT_OF_RANGE);

  args[0].type = (kiln_arg_type)0;
  check_fails(kiln_launch(NULL, k, &c, args, 1), KILN_ERROR_INVALID_ARGUMENT);
  args[0].type = (kiln_arg_type)99;
  check_fails(kiln_launch(NULL, k, &c, args, 1), KILN_ERROR_INVALID_ARGUMENT);
  args[0] = kiln_arg_buffer(NULL, 0);
  check_fails(kiln_launch(NULL, k, &c, args, 1), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_launch(NULL, k, &c, NULL, 1), KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_launch(NULL, k, &c, NULL, 0));
  assert_int_equal(f->fb.calls[FAKE_OP_LAUNCH], 3);
  check_ok(kiln_module_destroy(m));
}

/* The packed size of the list must equal the kernel's, when known. */
static void argument_list_against_kernel(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &b));
  kiln_module *m = load(f->ctx, "saxpy:24 pair:16 none:0");
  kiln_kernel *k = kernel(m, "saxpy");
  assert_int_equal(k->arg_bytes, 24);
  kiln_launch_config c = one_thread();
  kiln_arg args[5] = {kiln_arg_buffer(b, 0), kiln_arg_buffer(b, 32),
                      kiln_arg_f32(2.0f), kiln_arg_u32(8), kiln_arg_u32(0)};
  check_ok(kiln_launch(NULL, k, &c, args, 4));
  check_fails(kiln_launch(NULL, k, &c, args, 3), KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("saxpy");
  check_fails(kiln_launch(NULL, k, &c, args, 5), KILN_ERROR_INVALID_ARGUMENT);
  args[2] = kiln_arg_f64(2.0);
  check_fails(kiln_launch(NULL, k, &c, args, 4), KILN_ERROR_INVALID_ARGUMENT);
  /* u32 then u64 pads to 16 bytes, as a C struct would. */
  kiln_kernel *pair = kernel(m, "pair");
  kiln_arg padded[2] = {kiln_arg_u32(1), kiln_arg_u64(2)};
  check_ok(kiln_launch(NULL, pair, &c, padded, 2));
  kiln_arg packed[3] = {kiln_arg_u32(1), kiln_arg_u32(2), kiln_arg_u64(3)};
  check_ok(kiln_launch(NULL, pair, &c, packed, 3));
  check_fails(kiln_launch(NULL, pair, &c, packed, 2),
              KILN_ERROR_INVALID_ARGUMENT);
  kiln_kernel *none = kernel(m, "none");
  check_ok(kiln_launch(NULL, none, &c, NULL, 0));
  check_fails(kiln_launch(NULL, none, &c, args, 1),
              KILN_ERROR_INVALID_ARGUMENT);
  assert_int_equal(f->fb.calls[FAKE_OP_LAUNCH], 4);
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_buffer_destroy(b));
}

static void launch_limits(void **state) {
  fake_fixture *f = *state;
  kiln_module *m = load(f->ctx, "k:0");
  kiln_kernel *k = kernel(m, "k");
  /* The fake device: blocks up to 1024x1024x64 and 1024 threads, grids up
   * to 2^31-1 x 65535 x 65535, 48 KiB shared memory, 96 KiB opted in. */
  const kiln_launch_config ok[] = {
      {{1, 1, 1}, {1024, 1, 1}, 0},
      {{1, 1, 1}, {1, 1024, 1}, 0},
      {{1, 1, 1}, {1, 16, 64}, 0},
      {{0x7fffffffu, 65535, 65535}, {1, 1, 1}, 0},
      {{1, 1, 1}, {32, 1, 1}, 48 * 1024},
      {{1, 1, 1}, {32, 1, 1}, 96 * 1024},
  };
  const kiln_launch_config too_big[] = {
      {{1, 1, 1}, {1025, 1, 1}, 0},
      {{1, 1, 1}, {1, 1025, 1}, 0},
      {{1, 1, 1}, {1, 1, 65}, 0},
      {{1, 1, 1}, {32, 32, 2}, 0},
      {{1, 1, 1}, {64, 64, 1}, 0},
      {{1, 65536, 1}, {1, 1, 1}, 0},
      {{1, 1, 65536}, {1, 1, 1}, 0},
      {{0x80000000u, 1, 1}, {1, 1, 1}, 0},
      {{1, 1, 1}, {32, 1, 1}, 96 * 1024 + 1},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    check_ok(kiln_launch(NULL, k, &ok[i], NULL, 0));
  for (size_t i = 0; i < sizeof too_big / sizeof too_big[0]; i++)
    check_fails(kiln_launch(NULL, k, &too_big[i], NULL, 0),
                KILN_ERROR_OUT_OF_RANGE);
  const kiln_launch_config empty_block[] = {{{1, 1, 1}, {0, 1, 1}, 0},
                                            {{1, 1, 1}, {1, 0, 1}, 0},
                                            {{1, 1, 1}, {1, 1, 0}, 0}};
  for (size_t i = 0; i < 3; i++)
    check_fails(kiln_launch(NULL, k, &empty_block[i], NULL, 0),
                KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_launch(NULL, k, NULL, NULL, 0), KILN_ERROR_INVALID_ARGUMENT);
  assert_int_equal(f->fb.calls[FAKE_OP_LAUNCH], sizeof ok / sizeof ok[0]);
  const fake_launch *l = fake_launch_back(&f->fb, 0);
  assert_non_null(l);
  assert_int_equal(l->config.shared_memory_bytes, 96 * 1024);
  check_ok(kiln_module_destroy(m));
}

static void kernel_names(void **state) {
  fake_fixture *f = *state;
  kiln_module *m = load(f->ctx, "alpha beta:8");
  kiln_kernel *a = NULL, *again = NULL, *k = NULL;
  check_ok(kiln_module_get_kernel(m, "alpha", &a));
  check_ok(kiln_module_get_kernel(m, "alpha", &again));
  assert_ptr_equal(a, again);
  assert_string_equal(kiln_kernel_name(a), "alpha");
  /* The fake backend tells nothing of its kernels' needs. */
  check_fails(kiln_kernel_get_attributes(a, &(kiln_kernel_attributes){0}),
              KILN_ERROR_UNSUPPORTED);
  check_fails(kiln_kernel_suggest_block_size(a, 0, &(uint32_t){0}, NULL),
              KILN_ERROR_UNSUPPORTED);
  check_fails(kiln_module_get_kernel(m, "gamma", &k), KILN_ERROR_NOT_FOUND);
  check_message_has("gamma");
  check_fails(kiln_module_get_kernel(m, "alph", &k), KILN_ERROR_NOT_FOUND);
  check_fails(kiln_module_get_kernel(m, "", &k), KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_get_kernel(m, NULL, &k), KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_get_kernel(m, "beta", NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  assert_null(k);
  check_ok(kiln_module_destroy(m));
  assert_int_equal(f->fb.live[KILN_OBJECT_KERNEL], 0);
}

static void images_for_the_wrong_backend(void **state) {
  fake_fixture *f = *state;
  static const unsigned char fatbin[] = {0x50, 0xed, 0x55, 0xba, 0, 0, 0, 0};
  kiln_module_image images[3] = {
      {KILN_IMAGE_FATBIN, fatbin, sizeof fatbin},
      {KILN_IMAGE_HIP_CODE_OBJECT, fatbin, sizeof fatbin},
      fake_image("k"),
  };
  kiln_module *m = NULL;
  check_fails(kiln_module_create(f->ctx, images, 2, &m), KILN_ERROR_NO_IMAGE);
  check_message_has("vulkan");
  check_fails(kiln_module_create(f->ctx, images, 1, &m), KILN_ERROR_NO_IMAGE);
  assert_null(m);
  assert_int_equal(f->fb.calls[FAKE_OP_MODULE_INIT], 0);
  /* With one that fits, only that one reaches the backend. */
  check_ok(kiln_module_create(f->ctx, images, 3, &m));
  check_ok(kiln_module_destroy(m));

  images[0].format = (kiln_image_format)42;
  check_fails(kiln_module_create(f->ctx, images, 3, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_create(f->ctx, images, 0, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_create(f->ctx, NULL, 1, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_create(f->ctx, &images[2], 1, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  kiln_module_image empty = {KILN_IMAGE_SPIRV, "k", 0};
  check_fails(kiln_module_create(f->ctx, &empty, 1, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  /* What the backend rejects comes back as it said. */
  kiln_module_image bad = fake_image("k:x");
  m = NULL;
  check_fails(kiln_module_create(f->ctx, &bad, 1, &m),
              KILN_ERROR_INVALID_IMAGE);
  check_message_has("k:x");
  assert_null(m);
}

static void default_stream_and_builtin_module_are_owned(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s = NULL, *again = NULL;
  check_ok(kiln_context_default_stream(f->ctx, &s));
  check_ok(kiln_context_default_stream(f->ctx, &again));
  assert_non_null(s);
  assert_ptr_equal(s, again);
  check_fails(kiln_stream_destroy(s), KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_stream_synchronize(s));
  kiln_module *m = NULL;
  check_ok(kiln_context_builtin_module(f->ctx, &m));
  check_fails(kiln_module_destroy(m), KILN_ERROR_INVALID_ARGUMENT);
  kiln_module *m2 = NULL;
  check_ok(kiln_context_builtin_module(f->ctx, &m2));
  assert_ptr_equal(m, m2);
  check_fails(kiln_context_builtin_module(f->ctx, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
}

static void events_not_recorded(void **state) {
  fake_fixture *f = *state;
  kiln_event *a, *b;
  check_ok(kiln_event_create(f->ctx, &a));
  check_ok(kiln_event_create(f->ctx, &b));
  float ms = -1.0f;
  check_fails(kiln_event_synchronize(a), KILN_ERROR_INVALID_STATE);
  check_fails(kiln_stream_wait_event(NULL, a), KILN_ERROR_INVALID_STATE);
  check_fails(kiln_event_elapsed_ms(a, b, &ms), KILN_ERROR_INVALID_STATE);
  check_ok(kiln_event_record(a, NULL));
  check_fails(kiln_event_elapsed_ms(a, b, &ms), KILN_ERROR_INVALID_STATE);
  check_fails(kiln_event_elapsed_ms(b, a, &ms), KILN_ERROR_INVALID_STATE);
  assert_true(ms == -1.0f);
  assert_int_equal(f->fb.calls[FAKE_OP_EVENT_SYNCHRONIZE] +
                       f->fb.calls[FAKE_OP_STREAM_WAIT_EVENT],
                   0);
  check_ok(kiln_event_record(b, NULL));
  check_fails(kiln_event_elapsed_ms(a, b, NULL), KILN_ERROR_INVALID_ARGUMENT);
  /* A time is there once both records are done. */
  check_ok(kiln_event_synchronize(b));
  check_ok(kiln_event_elapsed_ms(a, b, &ms));
  assert_true(ms >= 0.0f);
  check_ok(kiln_event_destroy(b));
  check_ok(kiln_event_destroy(a));
}

int main(void) {
#define T(name)                                                                \
  cmocka_unit_test_setup_teardown(name, fake_fixture_setup,                    \
                                  fake_fixture_teardown)
  const struct CMUnitTest tests[] = {
      T(null_handles),
      T(invalid_arguments),
      T(wrong_type_and_destroyed_handles),
      T(objects_of_another_context),
      T(size_overflow),
      T(ranges_out_of_bounds),
      T(zero_length_operations_do_nothing),
      T(fill_pattern_sizes_and_alignment),
      T(argument_count_and_bytes),
      T(argument_list_against_kernel),
      T(launch_limits),
      T(kernel_names),
      T(images_for_the_wrong_backend),
      T(default_stream_and_builtin_module_are_owned),
      T(events_not_recorded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
