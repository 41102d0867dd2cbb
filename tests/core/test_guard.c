/* KILN_DEBUG=guard on the fake backend, whose device memory is host memory
 * and whose kernels do nothing: a test plays the overrunning kernel by
 * writing next to the address a launch received, then checks which sync
 * points find it, what they say, that the guard is written again, that
 * legal writes over whole buffers (transfers, fills, fills through the
 * kiln_fill kernel, copies, built-in kernels) find nothing, that a graph's
 * replays are checked like the launches they hold, and that every
 * offset the backend gets is shifted past the leading guard. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/internal.h"
#include "fake_backend.h"
#include "kiln_check.h"

#define G KILN_GUARD_BYTES
#define GUARD_VALUE 0xfd

static int guard_setup(void **state) {
  setenv("KILN_DEBUG", "guard", 1);
  int rc = fake_fixture_setup(state);
  unsetenv("KILN_DEBUG");
  return rc;
}

static kiln_context *ctx_of(void **state) {
  return ((fake_fixture *)*state)->ctx;
}

static fake_backend *fake_of_state(void **state) {
  return &((fake_fixture *)*state)->fb;
}

/* The start of the buffer's allocation in (the fake's) device memory. */
static unsigned char *allocation(const kiln_buffer *b) {
  return (unsigned char *)(uintptr_t)b->device_address;
}

/* Fails unless both guards of b hold the guard value. */
static void check_guards_intact(const kiln_buffer *b) {
  const unsigned char *p = allocation(b);
  for (size_t i = 0; i < G; i++) {
    if (p[i] != GUARD_VALUE)
      fail_msg("guard byte -%zu is 0x%02x", G - i, p[i]);
    if (p[G + b->size + i] != GUARD_VALUE)
      fail_msg("guard byte size+%zu is 0x%02x", i, p[G + b->size + i]);
  }
}

/* A module with the kernel poke(p), which the tests overrun for. */
static kiln_kernel *poke_kernel(kiln_context *ctx, kiln_module **out_module) {
  kiln_module_image img = fake_image("poke(p) two(p,p)");
  check_ok(kiln_module_create(ctx, &img, 1, out_module));
  kiln_kernel *k = NULL;
  check_ok(kiln_module_get_kernel(*out_module, "poke", &k));
  return k;
}

/* Launches poke on (b, offset) and returns the address it received. */
static unsigned char *launch_poke(fake_backend *fb, kiln_stream *s,
                                  kiln_kernel *k, const kiln_buffer *b,
                                  size_t offset) {
  kiln_launch_config c = kiln_launch_config_1d(1, 1);
  kiln_arg arg = kiln_arg_buffer(b, offset);
  check_ok(kiln_launch(s, k, &c, &arg, 1));
  const fake_launch *l = fake_launch_back(fb, 0);
  assert_non_null(l);
  uint64_t address;
  memcpy(&address, l->args.data + l->args.offsets[0], sizeof address);
  return (unsigned char *)(uintptr_t)address;
}

/* The message must name fn, the buffer (its handle and size) and `where`.
 * The size is b's own field: the buffer may be destroyed by now. */
static void check_message_names(const kiln_buffer *b, const char *fn,
                                 const char *where) {
  char handle[64];
  snprintf(handle, sizeof handle, "buffer %p (%zu bytes", (const void *)b,
           b->size);
  check_message_has(fn);
  check_message_has("KILN_DEBUG=guard");
  check_message_has(handle);
  check_message_has(where);
}

/* ---- KILN_DEBUG ----------------------------------------------------------- */

static void debug_values(void **state) {
  (void)state;
  static const char *const bad[] = {"bogus", "guard,bogus", "Guard", " guard",
                                    "guard,", ",guard", "guard=1"};
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kiln_context *ctx = NULL;
    setenv("KILN_DEBUG", bad[i], 1);
    kiln_clear_error();
    kiln_status st = kiln_context_create(&o, &ctx);
    unsetenv("KILN_DEBUG");
    if (st != KILN_ERROR_INVALID_ARGUMENT)
      fail_msg("KILN_DEBUG=\"%s\" gave %s, expected "
               "KILN_ERROR_INVALID_ARGUMENT",
               bad[i], kiln_status_name(st));
    assert_null(ctx);
    check_message_has("KILN_DEBUG");
    check_message_has(bad[i]);
    check_message_has("guard");
  }
  static const char *const good[] = {"guard", "guard,guard", ""};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    kiln_context *ctx = NULL;
    setenv("KILN_DEBUG", good[i], 1);
    kiln_status st = kiln_context_create(&o, &ctx);
    unsetenv("KILN_DEBUG");
    if (st != KILN_OK)
      fail_msg("KILN_DEBUG=\"%s\" gave %s: %s", good[i], kiln_status_name(st),
               kiln_last_error());
    assert_int_equal(ctx->guard != NULL, good[i][0] != '\0');
    check_ok(kiln_context_destroy(ctx));
  }
}

static void off_by_default(void **state) {
  kiln_context *ctx = ctx_of(state);
  fake_backend *fb = fake_of_state(state);
  assert_null(ctx->guard);
  unsigned writes = fb->calls[FAKE_OP_WRITE];
  kiln_buffer *b;
  check_ok(kiln_buffer_create(ctx, 100, 0, &b));
  assert_int_equal(b->guard, 0);
  assert_int_equal(fb->calls[FAKE_OP_WRITE], writes);
  kiln_module *m;
  kiln_kernel *k = poke_kernel(ctx, &m);
  assert_ptr_equal(launch_poke(fb, NULL, k, b, 8), allocation(b) + 8);
  check_ok(kiln_context_synchronize(ctx));
  assert_int_equal(fb->calls[FAKE_OP_READ], 0);
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_buffer_destroy(b));
}

/* ---- Layout --------------------------------------------------------------- */

static void layout(void **state) {
  kiln_context *ctx = ctx_of(state);
  kiln_buffer *b, *z;
  check_ok(kiln_buffer_create(ctx, 101, 0, &b));
  check_ok(kiln_buffer_create(ctx, 37, KILN_BUFFER_ZERO, &z));
  assert_int_equal(kiln_buffer_size(b), 101);
  assert_int_equal(b->guard, G);
  check_guards_intact(b);
  check_guards_intact(z);
  for (size_t i = 0; i < 37; i++) assert_int_equal(allocation(z)[G + i], 0);

  /* Every transfer lands in the caller's range, shifted past the guard. */
  unsigned char data[101], back[101];
  for (size_t i = 0; i < sizeof data; i++) data[i] = (unsigned char)(i + 1);
  check_ok(kiln_buffer_write(NULL, b, 0, data, sizeof data));
  assert_memory_equal(allocation(b) + G, data, sizeof data);
  check_ok(kiln_buffer_read(NULL, b, 0, back, sizeof back));
  assert_memory_equal(back, data, sizeof data);
  check_ok(kiln_buffer_read(NULL, b, 100, back, 1));
  assert_int_equal(back[0], 101);
  check_ok(kiln_buffer_copy(NULL, z, 36, b, 100, 1));
  assert_int_equal(allocation(z)[G + 36], 101);
  const uint8_t seven = 7;
  check_ok(kiln_buffer_fill(NULL, z, 0, 1, &seven, 1));
  assert_int_equal(allocation(z)[G], 7);

  kiln_host_buffer *hb;
  check_ok(kiln_host_buffer_create(ctx, 101, 0, &hb));
  check_ok(kiln_buffer_read_async(NULL, b, 1, hb, 0, 100));
  check_ok(kiln_stream_synchronize(ctx->default_stream));
  assert_memory_equal(kiln_host_buffer_data(hb), data + 1, 100);
  check_ok(kiln_buffer_write_async(NULL, z, 0, hb, 0, 37));
  check_ok(kiln_stream_synchronize(ctx->default_stream));
  assert_memory_equal(allocation(z) + G, data + 1, 37);
  check_guards_intact(b);
  check_guards_intact(z);
  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_buffer_destroy(z));
  check_ok(kiln_buffer_destroy(b));
}

static void launch_arguments_shifted(void **state) {
  kiln_context *ctx = ctx_of(state);
  fake_backend *fb = fake_of_state(state);
  kiln_buffer *b;
  check_ok(kiln_buffer_create(ctx, 256, 0, &b));
  kiln_module *m;
  kiln_kernel *k = poke_kernel(ctx, &m);
  assert_ptr_equal(launch_poke(fb, NULL, k, b, 0), allocation(b) + G);
  assert_ptr_equal(launch_poke(fb, NULL, k, b, 12), allocation(b) + G + 12);
  assert_ptr_equal(launch_poke(fb, NULL, k, b, 256), allocation(b) + G + 256);
  check_ok(kiln_stream_synchronize(ctx->default_stream));
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_buffer_destroy(b));
}

static void huge_size_does_not_wrap(void **state) {
  kiln_context *ctx = ctx_of(state);
  kiln_buffer *b = NULL;
  check_fails(kiln_buffer_create(ctx, SIZE_MAX - 100, 0, &b),
              KILN_ERROR_OUT_OF_DEVICE_MEMORY);
  check_message_has("guard");
  assert_null(b);
}

static void failed_guard_write_leaks_nothing(void **state) {
  kiln_context *ctx = ctx_of(state);
  fake_backend *fb = fake_of_state(state);
  long live = fb->live[KILN_OBJECT_BUFFER];
  fb->fail_op = FAKE_OP_WRITE;
  fb->fail_status = KILN_ERROR_BACKEND;
  kiln_buffer *b = NULL;
  check_fails(kiln_buffer_create(ctx, 64, 0, &b), KILN_ERROR_BACKEND);
  assert_null(b);
  assert_int_equal(fb->live[KILN_OBJECT_BUFFER], live);
}

/* ---- Overruns ------------------------------------------------------------- */

static void overrun_after(void **state) {
  kiln_context *ctx = ctx_of(state);
  fake_backend *fb = fake_of_state(state);
  kiln_buffer *b;
  check_ok(kiln_buffer_create(ctx, 4096, 0, &b));
  kiln_module *m;
  kiln_kernel *k = poke_kernel(ctx, &m);
  unsigned char *p = launch_poke(fb, NULL, k, b, 0);
  memset(p + 4096, 0x11, 4); /* the kernel's four bytes past the end */
  check_fails(kiln_stream_synchronize(ctx->default_stream),
              KILN_ERROR_MEMORY_CORRUPTION);
  check_message_names(b, "kiln_stream_synchronize",
                      "after its end at offsets size+0 to size+3");
  char address[64];
  snprintf(address, sizeof address, "device address 0x%llx",
           (unsigned long long)(uintptr_t)p);
  check_message_has(address);
  /* Written again, so reported once. */
  check_guards_intact(b);
  check_ok(kiln_stream_synchronize(ctx->default_stream));
  launch_poke(fb, NULL, k, b, 0);
  check_ok(kiln_stream_synchronize(ctx->default_stream));
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_buffer_destroy(b));
}

static void overrun_before(void **state) {
  kiln_context *ctx = ctx_of(state);
  fake_backend *fb = fake_of_state(state);
  kiln_buffer *b;
  check_ok(kiln_buffer_create(ctx, 4096, 0, &b));
  kiln_module *m;
  kiln_kernel *k = poke_kernel(ctx, &m);
  unsigned char *p = launch_poke(fb, NULL, k, b, 0);
  memset(p - 4, 0, 4);
  check_fails(kiln_context_synchronize(ctx), KILN_ERROR_MEMORY_CORRUPTION);
  check_message_names(b, "kiln_context_synchronize",
                      "before its start at offsets -4 to -1");
  check_guards_intact(b);
  check_ok(kiln_context_synchronize(ctx));
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_buffer_destroy(b));
}

static void both_sides_and_several_buffers(void **state) {
  kiln_context *ctx = ctx_of(state);
  fake_backend *fb = fake_of_state(state);
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create(ctx, 10, 0, &a));
  check_ok(kiln_buffer_create(ctx, 20, 0, &b));
  kiln_module *m;
  kiln_kernel *k = poke_kernel(ctx, &m);
  unsigned char *pa = launch_poke(fb, NULL, k, a, 0);
  unsigned char *pb = launch_poke(fb, NULL, k, b, 0);
  pa[-(ptrdiff_t)G] = 1;         /* the guard's first byte */
  pa[10 + G - 1] = 1;            /* and its last */
  pb[20 + 7] = GUARD_VALUE + 1;  /* one byte, well past the end */
  check_fails(kiln_stream_synchronize(ctx->default_stream),
              KILN_ERROR_MEMORY_CORRUPTION);
  /* The first buffer found is named (the list is newest first); the other
   * is counted. */
  check_message_names(b, "kiln_stream_synchronize",
                      "after its end at offset size+7");
  check_message_has("(and so was 1 more buffer, each logged");
  check_guards_intact(a);
  check_guards_intact(b);
  check_ok(kiln_stream_synchronize(ctx->default_stream));

  pa = launch_poke(fb, NULL, k, a, 0);
  pa[-(ptrdiff_t)G] = 1;
  pa[10 + G - 1] = 1;
  check_fails(kiln_stream_synchronize(ctx->default_stream),
              KILN_ERROR_MEMORY_CORRUPTION);
  check_message_names(a, "kiln_stream_synchronize",
                      "before its start at offset -4096 and after its end "
                      "at offset size+4095");
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_buffer_destroy(a));
}

/* Writes over every byte of buffers of odd and even sizes in every legal
 * way; nothing may be reported, and the bytes must be where they belong. */
static void legal_writes_find_nothing(void **state) {
  kiln_context *ctx = ctx_of(state);
  fake_backend *fb = fake_of_state(state);
  enum { ODD = 4099, FLOATS = 1024 };
  kiln_buffer *odd, *copy, *x, *y, *sum;
  check_ok(kiln_buffer_create(ctx, ODD, 0, &odd));
  check_ok(kiln_buffer_create(ctx, ODD, 0, &copy));
  check_ok(kiln_buffer_create(ctx, FLOATS * 4, 0, &x));
  check_ok(kiln_buffer_create(ctx, FLOATS * 4, 0, &y));
  check_ok(kiln_buffer_create(ctx, 4, 0, &sum));
  unsigned char bytes[ODD];
  for (size_t i = 0; i < ODD; i++) bytes[i] = (unsigned char)(i * 7);
  check_ok(kiln_buffer_write(NULL, odd, 0, bytes, ODD));
  check_ok(kiln_buffer_copy(NULL, copy, 0, odd, 0, ODD));
  const uint8_t b1 = 0x5a;
  const uint16_t b2 = 0x1234;
  const uint32_t b4 = 0xdeadbeef;
  const uint64_t b8 = 0x0102030405060708ull;
  check_ok(kiln_buffer_fill(NULL, odd, 0, ODD, &b1, 1));
  check_ok(kiln_buffer_fill(NULL, odd, 0, ODD - 1, &b2, 2));
  check_ok(kiln_buffer_fill(NULL, odd, 0, 4096, &b4, 4));
  check_ok(kiln_buffer_fill(NULL, odd, 0, 4096, &b8, 8));
  /* Through the kiln_fill kernel, as backends fill what their copy
   * engines cannot: its buffer argument is the caller's range. */
  fb->fill_with_kernel = true;
  check_ok(kiln_buffer_fill(NULL, copy, 1, ODD - 1, &b1, 1));
  check_ok(kiln_buffer_fill(NULL, copy, ODD - 3, 2, &b2, 2));
  check_ok(kiln_buffer_fill(NULL, x, 0, FLOATS * 4, &b8, 8));
  fb->fill_with_kernel = false;
  check_ok(kiln_context_synchronize(ctx));
  unsigned char got[ODD];
  check_ok(kiln_buffer_read(NULL, copy, 0, got, ODD));
  assert_int_equal(got[0], bytes[0]);
  for (size_t i = 1; i < ODD - 3; i++) assert_int_equal(got[i], 0x5a);
  assert_int_equal(got[ODD - 3], 0x34);
  assert_int_equal(got[ODD - 2], 0x12);
  assert_int_equal(got[ODD - 1], 0x5a);
  uint64_t first;
  check_ok(kiln_buffer_read(NULL, x, FLOATS * 4 - 8, &first, 8));
  assert_int_equal(first, b8);

  /* Built-in kernels over whole buffers, the reduction's scratch buffer
   * included. */
  float ones[FLOATS];
  for (size_t i = 0; i < FLOATS; i++) ones[i] = 1.0f;
  check_ok(kiln_buffer_write(NULL, x, 0, ones, sizeof ones));
  check_ok(kiln_buffer_write(NULL, y, 0, ones, sizeof ones));
  check_ok(kiln_axpy_f32(NULL, FLOATS, 2.0f, x, 0, y, 0));
  check_ok(kiln_reduce_sum_f32(NULL, FLOATS, y, 0, sum, 0));
  float total = 0;
  check_ok(kiln_buffer_read(NULL, sum, 0, &total, 4));
  assert_true(total == 3.0f * FLOATS);
  check_ok(kiln_context_synchronize(ctx));
  check_guards_intact(odd);
  check_guards_intact(copy);
  check_guards_intact(x);
  check_guards_intact(y);
  check_guards_intact(sum);
  check_ok(kiln_buffer_destroy(sum));
  check_ok(kiln_buffer_destroy(y));
  check_ok(kiln_buffer_destroy(x));
  check_ok(kiln_buffer_destroy(copy));
  check_ok(kiln_buffer_destroy(odd));
}

/* A graph's fill that its build made a kiln_fill launch (a device without
 * a fill of its own): each replay notes that kernel's buffer, as a
 * captured launch's are, so the sync after the replay reads its guards. */
static void graph_fill_kernels_checked_at_replay(void **state) {
  kiln_context *ctx = ctx_of(state);
  fake_backend *fb = fake_of_state(state);
  kiln_buffer *b;
  kiln_stream *s;
  kiln_graph *g;
  check_ok(kiln_buffer_create(ctx, 4096, 0, &b));
  check_ok(kiln_stream_create(ctx, &s));
  const uint32_t word = 0x01020304u;
  fb->fill_with_kernel = true;
  check_ok(kiln_stream_begin_capture(s));
  check_ok(kiln_buffer_fill(s, b, 0, 4096, &word, 4));
  check_ok(kiln_stream_end_capture(s, &g));
  fb->fill_with_kernel = false;
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_stream_synchronize(s));
  uint32_t got = 0;
  check_ok(kiln_buffer_read(s, b, 4092, &got, 4));
  assert_int_equal(got, word);
  check_guards_intact(b);
  check_ok(kiln_graph_launch(g, s));
  /* The replayed kiln_fill's four bytes past the end. */
  memset(allocation(b) + G + 4096, 0x11, 4);
  check_fails(kiln_stream_synchronize(s), KILN_ERROR_MEMORY_CORRUPTION);
  check_message_names(b, "kiln_stream_synchronize",
                      "after its end at offsets size+0 to size+3");
  check_guards_intact(b);
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(b));
}

/* ---- Sync points ---------------------------------------------------------- */

static void every_sync_point_checks(void **state) {
  kiln_context *ctx = ctx_of(state);
  fake_backend *fb = fake_of_state(state);
  kiln_buffer *b;
  check_ok(kiln_buffer_create(ctx, 64, 0, &b));
  kiln_module *m;
  kiln_kernel *k = poke_kernel(ctx, &m);
  kiln_stream *s;
  check_ok(kiln_stream_create(ctx, &s));
  kiln_event *e;
  check_ok(kiln_event_create(ctx, &e));
  unsigned char word[4];

  /* A blocking read on the launch's stream. */
  launch_poke(fb, s, k, b, 0)[64] = 0;
  check_fails(kiln_buffer_read(s, b, 0, word, 4),
              KILN_ERROR_MEMORY_CORRUPTION);
  check_message_names(b, "kiln_buffer_read", "size+0");

  /* The timed synchronize. */
  launch_poke(fb, s, k, b, 0)[65] = 0;
  check_fails(kiln_stream_synchronize_timeout(s, UINT64_MAX),
              KILN_ERROR_MEMORY_CORRUPTION);
  check_message_names(b, "kiln_stream_synchronize_timeout", "size+1");

  /* An event recorded before the launch does not cover it; one after
   * does. */
  check_ok(kiln_event_record(e, s));
  launch_poke(fb, s, k, b, 0)[-2] = 0;
  check_ok(kiln_event_synchronize(e));
  check_ok(kiln_event_record(e, s));
  check_fails(kiln_event_synchronize(e), KILN_ERROR_MEMORY_CORRUPTION);
  check_message_names(b, "kiln_event_synchronize", "offset -2");

  /* Destroying the stream. */
  launch_poke(fb, s, k, b, 0)[66] = 0;
  check_fails(kiln_stream_destroy(s), KILN_ERROR_MEMORY_CORRUPTION);
  check_message_names(b, "kiln_stream_destroy", "size+2");

  /* Destroying the buffer checks it whether a kernel took it or not; the
   * buffer is destroyed all the same. */
  allocation(b)[G + 64 + 100] = 0;
  check_fails(kiln_buffer_destroy(b), KILN_ERROR_MEMORY_CORRUPTION);
  char handle[64];
  snprintf(handle, sizeof handle, "buffer %p (64 bytes", (void *)b);
  check_message_has("kiln_buffer_destroy");
  check_message_has(handle);
  check_message_has("size+100");
  check_fails(kiln_buffer_destroy(b), KILN_ERROR_INVALID_HANDLE);
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_module_destroy(m));
}

static void context_destroy_checks_every_buffer(void **state) {
  (void)state;
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  setenv("KILN_DEBUG", "guard", 1);
  check_ok(kiln_context_create(&o, &ctx));
  unsetenv("KILN_DEBUG");
  kiln_buffer *b;
  check_ok(kiln_buffer_create(ctx, 8, 0, &b));
  allocation(b)[G - 1] = 0; /* no kernel took it */
  check_ok(kiln_context_synchronize(ctx));
  char handle[64];
  snprintf(handle, sizeof handle, "buffer %p (8 bytes", (void *)b);
  check_fails(kiln_context_destroy(ctx), KILN_ERROR_MEMORY_CORRUPTION);
  check_message_has("kiln_context_destroy");
  check_message_has(handle);
  check_message_has("offset -1");
}

/* Each check reads the guards of the buffers that kernels it proves done
 * took, and no others. */
static void reads_only_what_ran(void **state) {
  kiln_context *ctx = ctx_of(state);
  fake_backend *fb = fake_of_state(state);
  kiln_buffer *b1, *b2, *b3;
  check_ok(kiln_buffer_create(ctx, 16, 0, &b1));
  check_ok(kiln_buffer_create(ctx, 16, 0, &b2));
  check_ok(kiln_buffer_create(ctx, 16, 0, &b3));
  kiln_module *m;
  kiln_kernel *k = poke_kernel(ctx, &m);
  kiln_stream *a;
  check_ok(kiln_stream_create(ctx, &a));
  kiln_stream *d = ctx->default_stream;
  unsigned reads = fb->calls[FAKE_OP_READ];
#define READS_SINCE() (fb->calls[FAKE_OP_READ] - reads)

  check_ok(kiln_context_synchronize(ctx));
  check_ok(kiln_stream_synchronize(d));
  assert_int_equal(READS_SINCE(), 0);

  launch_poke(fb, d, k, b1, 0);
  check_ok(kiln_stream_synchronize(d));
  assert_int_equal(READS_SINCE(), 2);
  check_ok(kiln_stream_synchronize(d));
  assert_int_equal(READS_SINCE(), 2);

  /* Stream a's kernel is not proven done by the default stream. */
  launch_poke(fb, a, k, b2, 0);
  check_ok(kiln_stream_synchronize(d));
  assert_int_equal(READS_SINCE(), 2);
  check_ok(kiln_stream_synchronize(a));
  assert_int_equal(READS_SINCE(), 4);

  /* A buffer that kernels of two streams took waits for the context. */
  launch_poke(fb, a, k, b3, 0);
  launch_poke(fb, d, k, b3, 0);
  check_ok(kiln_stream_synchronize(a));
  check_ok(kiln_stream_synchronize(d));
  assert_int_equal(READS_SINCE(), 4);
  check_ok(kiln_context_synchronize(ctx));
  assert_int_equal(READS_SINCE(), 6);

  /* A launch of two buffer arguments notes both. */
  kiln_kernel *two;
  check_ok(kiln_module_get_kernel(m, "two", &two));
  kiln_launch_config c = kiln_launch_config_1d(1, 1);
  kiln_arg args[2] = {kiln_arg_buffer(b1, 0), kiln_arg_buffer(b2, 4)};
  check_ok(kiln_launch(d, two, &c, args, 2));
  check_ok(kiln_stream_synchronize(d));
  assert_int_equal(READS_SINCE(), 10);
#undef READS_SINCE
  check_ok(kiln_stream_destroy(a));
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_buffer_destroy(b3));
  check_ok(kiln_buffer_destroy(b2));
  check_ok(kiln_buffer_destroy(b1));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(debug_values, fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(off_by_default, fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(layout, guard_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(launch_arguments_shifted, guard_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(huge_size_does_not_wrap, guard_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(failed_guard_write_leaks_nothing,
                                      guard_setup, fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(overrun_after, guard_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(overrun_before, guard_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(both_sides_and_several_buffers,
                                      guard_setup, fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(legal_writes_find_nothing, guard_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(graph_fill_kernels_checked_at_replay,
                                      guard_setup, fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(every_sync_point_checks, guard_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(context_destroy_checks_every_buffer,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(reads_only_what_ran, guard_setup,
                                      fake_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
