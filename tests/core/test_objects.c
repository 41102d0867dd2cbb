/* What the core does between the checks and the backend: object lifetimes,
 * the report of live objects, lost devices, argument packing, the built-in
 * helpers, streams and events, and threads.
 *
 * Over 600 lines: each job listed shares the fake backend's set-up and the
 * live-object checks. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "deadline.h"
#include "fake_backend.h"
#include "kiln_check.h"

static kiln_module *load(kiln_context *ctx, const char *text) {
  kiln_module_image img = fake_image(text);
  kiln_module *m = NULL;
  check_ok(kiln_module_create(ctx, &img, 1, &m));
  return m;
}

static void destroy_reports_live_objects(void **state) {
  fake_fixture *f = *state;
  const long before = fake_live_objects(&f->fb);
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_buffer *b1, *b2;
  kiln_host_buffer *hb;
  kiln_stream *s;
  kiln_event *e;
  kiln_kernel *k;
  check_ok(kiln_buffer_create(ctx, 16, 0, &b1));
  check_ok(kiln_buffer_create(ctx, 32, KILN_BUFFER_ZERO, &b2));
  check_ok(kiln_host_buffer_create(ctx, 16, 0, &hb));
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_event_create(ctx, &e));
  check_ok(kiln_event_record(e, s));
  kiln_module *m = load(ctx, "a b");
  check_ok(kiln_module_get_kernel(m, "a", &k));
  /* Internal objects (built-in module, a stream's scratch) do not count. */
  const float one = 1.0f;
  check_ok(kiln_buffer_write(s, b2, 0, &one, 4));
  check_ok(kiln_reduce_sum_f32(s, 1, b2, 0, b2, 4));
  assert_true(fake_live_objects(&f->fb) > 0);

  check_fails(kiln_context_destroy(ctx), KILN_ERROR_OBJECTS_ALIVE);
  check_message_has("6 objects");
  /* Everything, the context's own objects included, was released. */
  assert_int_equal(fake_live_objects(&f->fb), before);

  /* With nothing left alive the destroy is clean, also with internal
   * objects created on the way. */
  check_ok(kiln_context_create(&o, &ctx));
  check_ok(kiln_buffer_create(ctx, 16, 0, &b1));
  check_ok(kiln_reduce_sum_f32(NULL, 2, b1, 0, b1, 8));
  check_ok(kiln_buffer_destroy(b1));
  check_ok(kiln_context_destroy(ctx));
}

static void device_lost_is_sticky(void **state) {
  fake_fixture *f = *state;
  const long before = fake_live_objects(&f->fb);
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_buffer *b, *c;
  kiln_host_buffer *hb;
  kiln_stream *s;
  kiln_event *e;
  check_ok(kiln_buffer_create(ctx, 64, 0, &b));
  check_ok(kiln_buffer_create(ctx, 64, 0, &c));
  check_ok(kiln_host_buffer_create(ctx, 64, 0, &hb));
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_event_create(ctx, &e));
  check_ok(kiln_event_record(e, s));
  kiln_module *m = load(ctx, "k");
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "k", &k));

  f->fb.fail_op = FAKE_OP_LAUNCH;
  f->fb.fail_status = KILN_ERROR_DEVICE_LOST;
  kiln_launch_config cfg = {{1, 1, 1}, {1, 1, 1}, 0};
  check_fails(kiln_launch(s, k, &cfg, NULL, 0), KILN_ERROR_DEVICE_LOST);
  /* The fake fails only once; the core must remember. */
  unsigned char bytes[8] = {0};
  const uint32_t pattern = 0;
  float ms;
  kiln_buffer *nb;
  kiln_host_buffer *nhb;
  kiln_stream *ns;
  kiln_event *ne;
  kiln_module *nm;
  kiln_kernel *nk;
  kiln_module_image img = fake_image("k");
  check_fails(kiln_launch(s, k, &cfg, NULL, 0), KILN_ERROR_DEVICE_LOST);
  check_message_has("injected failure of launch");
  check_fails(kiln_buffer_write(NULL, b, 0, bytes, 8), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_buffer_read(s, b, 0, bytes, 8), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_buffer_copy(s, c, 0, b, 0, 8), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_buffer_fill(s, b, 0, 8, &pattern, 4),
              KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_buffer_write_async(s, b, 0, hb, 0, 8),
              KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_buffer_read_async(s, b, 0, hb, 0, 8),
              KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_buffer_create(ctx, 8, 0, &nb), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_host_buffer_create(ctx, 8, 0, &nhb), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_stream_create(ctx, &ns), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_event_create(ctx, &ne), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_module_create(ctx, &img, 1, &nm), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_module_get_kernel(m, "k", &nk), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_stream_synchronize(s), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_context_synchronize(ctx), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_event_record(e, s), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_event_synchronize(e), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_event_query(e), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_event_elapsed_ms(e, e, &ms), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_stream_wait_event(s, e), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_axpy_f32(s, 2, 1.0f, b, 0, c, 0), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_reduce_sum_f32(s, 2, b, 0, c, 0), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_context_builtin_module(ctx, &nm), KILN_ERROR_DEVICE_LOST);
  assert_int_equal(f->fb.calls[FAKE_OP_LAUNCH], 1);
  assert_int_equal(f->fb.calls[FAKE_OP_WRITE] + f->fb.calls[FAKE_OP_READ], 0);

  /* The fixture's context on the same backend is unaffected. */
  check_ok(kiln_buffer_create(f->ctx, 8, 0, &nb));
  check_ok(kiln_buffer_write(NULL, nb, 0, bytes, 8));
  check_ok(kiln_buffer_destroy(nb));

  /* A lost context's objects can still be destroyed, and all are freed. */
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_buffer_destroy(c));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_context_destroy(ctx));
  assert_int_equal(fake_live_objects(&f->fb), before);
}

static void device_lost_from_any_op(void **state) {
  fake_fixture *f = *state;
  const long before = fake_live_objects(&f->fb);
  const fake_op ops[] = {FAKE_OP_WRITE,       FAKE_OP_READ,
                         FAKE_OP_FILL,        FAKE_OP_STREAM_SYNCHRONIZE,
                         FAKE_OP_EVENT_QUERY, FAKE_OP_BUFFER_INIT};
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    kiln_context *ctx;
    kiln_buffer *b, *extra;
    kiln_event *e;
    check_ok(kiln_context_create(&o, &ctx));
    check_ok(kiln_buffer_create(ctx, 64, 0, &b));
    check_ok(kiln_event_create(ctx, &e));
    check_ok(kiln_event_record(e, NULL));
    f->fb.fail_op = ops[i];
    f->fb.fail_status = KILN_ERROR_DEVICE_LOST;
    unsigned char bytes[8] = {0};
    const uint8_t pattern = 1;
    kiln_stream *s;
    check_ok(kiln_context_default_stream(ctx, &s));
    kiln_status st;
    switch (ops[i]) {
    case FAKE_OP_WRITE: st = kiln_buffer_write(NULL, b, 0, bytes, 8); break;
    case FAKE_OP_READ: st = kiln_buffer_read(NULL, b, 0, bytes, 8); break;
    case FAKE_OP_FILL: st = kiln_buffer_fill(NULL, b, 0, 8, &pattern, 1); break;
    case FAKE_OP_STREAM_SYNCHRONIZE: st = kiln_stream_synchronize(s); break;
    case FAKE_OP_EVENT_QUERY: st = kiln_event_query(e); break;
    default: st = kiln_buffer_create(ctx, 8, 0, &extra); break;
    }
    assert_int_equal(st, KILN_ERROR_DEVICE_LOST);
    check_fails(kiln_buffer_write(NULL, b, 0, bytes, 8),
                KILN_ERROR_DEVICE_LOST);
    check_message_has("injected failure");
    check_ok(kiln_event_destroy(e));
    check_ok(kiln_buffer_destroy(b));
    check_ok(kiln_context_destroy(ctx));
  }
  assert_int_equal(fake_live_objects(&f->fb), before);
}

/* Arguments reach the backend packed like a C struct of the same members,
 * with buffers resolved to device address + offset. */
static void arguments_are_packed_naturally(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b, *c;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &b));
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &c));
  kiln_module *m = load(f->ctx, "pack");
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "pack", &k));
  const kiln_arg args[] = {
      kiln_arg_buffer(b, 12),
      kiln_arg_i32(-5),
      kiln_arg_f64(2.5),
      kiln_arg_u32(0xdeadbeefu),
      kiln_arg_f32(1.5f),
      kiln_arg_u64(0x0123456789abcdefull),
      kiln_arg_i32(7),
      kiln_arg_buffer(c, 64),
      kiln_arg_i64(-1234567890123ll),
      kiln_arg_f32(-0.0f),
  };
  const size_t offsets[] = {0, 8, 16, 24, 28, 32, 40, 48, 56, 64};
  const kiln_launch_config cfg = {{3, 2, 1}, {32, 4, 2}, 1000};
  check_ok(kiln_launch(NULL, k, &cfg, args, 10));
  const fake_launch *l = fake_launch_back(&f->fb, 0);
  assert_non_null(l);
  assert_string_equal(l->kernel, "pack");
  assert_memory_equal(&l->config, &cfg, sizeof cfg);
  assert_int_equal(l->args.count, 10);
  assert_int_equal(l->args.size, 68);
  for (size_t i = 0; i < 10; i++)
    assert_int_equal(l->args.offsets[i], offsets[i]);

  const unsigned char *d = l->args.data;
  uint64_t addr;
  memcpy(&addr, d + 0, 8);
  assert_true(addr == b->device_address + 12);
  int32_t i32;
  memcpy(&i32, d + 8, 4);
  assert_int_equal(i32, -5);
  double f64;
  memcpy(&f64, d + 16, 8);
  assert_true(f64 == 2.5);
  uint32_t u32;
  memcpy(&u32, d + 24, 4);
  assert_int_equal(u32, 0xdeadbeefu);
  float f32;
  memcpy(&f32, d + 28, 4);
  assert_true(f32 == 1.5f);
  uint64_t u64;
  memcpy(&u64, d + 32, 8);
  assert_true(u64 == 0x0123456789abcdefull);
  memcpy(&i32, d + 40, 4);
  assert_int_equal(i32, 7);
  memcpy(&addr, d + 48, 8);
  assert_true(addr == c->device_address + 64);
  int64_t i64;
  memcpy(&i64, d + 56, 8);
  assert_true(i64 == -1234567890123ll);
  memcpy(&u32, d + 64, 4);
  assert_int_equal(u32, 0x80000000u); /* -0.0f, bit for bit */

  /* 32-bit scalars pack back to back; an empty list is size 0. */
  const kiln_arg small[] = {kiln_arg_u32(1), kiln_arg_f32(2.0f),
                            kiln_arg_i32(3)};
  check_ok(kiln_launch(NULL, k, &cfg, small, 3));
  l = fake_launch_back(&f->fb, 0);
  assert_int_equal(l->args.size, 12);
  assert_int_equal(l->args.offsets[2], 8);
  check_ok(kiln_launch(NULL, k, &cfg, NULL, 0));
  l = fake_launch_back(&f->fb, 0);
  assert_int_equal(l->args.size, 0);
  assert_int_equal(l->args.count, 0);
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_buffer_destroy(c));
  check_ok(kiln_buffer_destroy(b));
}

static void launch_config_1d(void **state) {
  (void)state;
  kiln_launch_config c = kiln_launch_config_1d(1000, 0);
  assert_int_equal(c.block.x, 256);
  assert_int_equal(c.grid.x, 4);
  assert_int_equal(c.block.y * c.block.z * c.grid.y * c.grid.z, 1);
  assert_int_equal(c.shared_memory_bytes, 0);
  c = kiln_launch_config_1d(1024, 256);
  assert_int_equal(c.grid.x, 4);
  c = kiln_launch_config_1d(1025, 256);
  assert_int_equal(c.grid.x, 5);
  c = kiln_launch_config_1d(1, 64);
  assert_int_equal(c.grid.x, 1);
  assert_int_equal(c.block.x, 64);
  c = kiln_launch_config_1d(0, 128);
  assert_int_equal(c.grid.x, 0);
  c = kiln_launch_config_1d(SIZE_MAX, 1);
  assert_int_equal(c.grid.x, 0x7fffffffu);
  c = kiln_launch_config_1d(SIZE_MAX, 0);
  assert_int_equal(c.grid.x, 0x7fffffffu);
}

static void write_read_copy_roundtrip(void **state) {
  fake_fixture *f = *state;
  enum { N = 4096 };
  unsigned char *src = malloc(N), *dst = malloc(N);
  assert_non_null(src);
  assert_non_null(dst);
  for (size_t i = 0; i < N; i++) src[i] = (unsigned char)(i * 131 + 7);
  kiln_buffer *a, *b, *z;
  check_ok(kiln_buffer_create(f->ctx, N, 0, &a));
  check_ok(kiln_buffer_create(f->ctx, N, 0, &b));
  check_ok(kiln_buffer_create(f->ctx, N, KILN_BUFFER_ZERO, &z));
  assert_int_equal(kiln_buffer_size(a), N);
  check_ok(kiln_buffer_write(NULL, a, 0, src, N));
  check_ok(kiln_buffer_copy(NULL, b, 1, a, 3, N - 3));
  check_ok(kiln_buffer_read(NULL, b, 1, dst, N - 3));
  assert_memory_equal(dst, src + 3, N - 3);
  check_ok(kiln_buffer_read(NULL, z, 0, dst, N));
  for (size_t i = 0; i < N; i++) assert_int_equal(dst[i], 0);

  kiln_host_buffer *h;
  check_ok(kiln_host_buffer_create(f->ctx, N, 0, &h));
  assert_int_equal(kiln_host_buffer_size(h), N);
  unsigned char *hd = kiln_host_buffer_data(h);
  assert_non_null(hd);
  memcpy(hd, src, N);
  kiln_stream *s;
  check_ok(kiln_context_default_stream(f->ctx, &s));
  check_ok(kiln_buffer_write_async(NULL, b, 5, h, 7, 100));
  /* The host buffer is the caller's again only once the write is done. */
  check_ok(kiln_stream_synchronize(s));
  memset(hd, 0, N);
  check_ok(kiln_buffer_read_async(NULL, b, 5, h, 9, 100));
  check_ok(kiln_stream_synchronize(s));
  assert_memory_equal(hd + 9, src + 7, 100);
  check_ok(kiln_host_buffer_destroy(h));
  check_ok(kiln_buffer_destroy(z));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_buffer_destroy(a));
  free(src);
  free(dst);
}

/* kiln_fill_with_kernel at every alignment, through the fake's kiln_fill. */
static void fill_through_the_kernel(void **state) {
  fake_fixture *f = *state;
  f->fb.fill_with_kernel = true;
  enum { N = 96 };
  kiln_buffer *b;
  check_ok(kiln_buffer_create(f->ctx, N, 0, &b));
  const unsigned char pattern[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  unsigned char mirror[N], got[N];
  for (size_t ps = 1; ps <= 8; ps *= 2) {
    for (size_t off = 0; off < 24; off += ps) {
      for (size_t len = ps; len + off <= N && len <= 40; len += ps * 3) {
        for (size_t i = 0; i < N; i++) mirror[i] = (unsigned char)(0x80 + i);
        check_ok(kiln_buffer_write(NULL, b, 0, mirror, N));
        check_ok(kiln_buffer_fill(NULL, b, off, len, pattern, ps));
        for (size_t i = 0; i < len; i++) mirror[off + i] = pattern[i % ps];
        check_ok(kiln_buffer_read(NULL, b, 0, got, N));
        if (memcmp(got, mirror, N) != 0)
          fail_msg("fill of %zu bytes at %zu with a %zu-byte pattern is "
                   "wrong",
                   len, off, ps);
      }
    }
  }
  const fake_launch *l = fake_launch_back(&f->fb, 0);
  assert_non_null(l);
  assert_string_equal(l->kernel, "kiln_fill");
  assert_int_equal(l->kernel_arg_bytes, 32);
  check_ok(kiln_buffer_destroy(b));
}

/* The sum of x[i] (times y[i] where y is given) for i < n, in double:
 * exact for the data below. */
static double sum_of(const float *x, const float *y, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++) s += y ? (double)x[i] * y[i] : x[i];
  return s;
}

/* The helpers' launches, checked through the fake's host versions of the
 * built-in kernels. */
static void builtin_helpers(void **state) {
  fake_fixture *f = *state;
  const size_t sizes[] = {0, 1, 2, 255, 256, 257, 1000, 65536, 262145, 1000003};
  const size_t max = 1000003;
  float *x = malloc(max * 4), *y = malloc(max * 4), *out = malloc(max * 4);
  assert_non_null(x);
  assert_non_null(y);
  assert_non_null(out);
  /* Small integers, none 0: x in +-1..4, y in 1..4. Every partial sum of
   * any subset in any order is an integer of magnitude at most
   * 16 * 1000003 < 2^24, which a float holds exactly, so the sums compare
   * exactly and one element left out or added twice changes them. */
  uint32_t r = 12345;
  for (size_t i = 0; i < max; i++) {
    r = r * 1664525u + 1013904223u;
    int v = (int)(r >> 29); /* 0..7 */
    x[i] = (float)(v < 4 ? v - 4 : v - 3);
    y[i] = (float)(i % 4 + 1);
  }
  kiln_buffer *bx, *by, *res;
  check_ok(kiln_buffer_create(f->ctx, max * 4 + 8, 0, &bx));
  check_ok(kiln_buffer_create(f->ctx, max * 4 + 8, 0, &by));
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &res));
  for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
    size_t n = sizes[t];
    check_ok(kiln_buffer_write(NULL, bx, 4, x, max * 4));
    check_ok(kiln_buffer_write(NULL, by, 8, y, max * 4));
    const float canary = 12345.0f;
    check_ok(kiln_buffer_fill(NULL, res, 0, 16, &canary, 4));

    check_ok(kiln_reduce_sum_f32(NULL, n, bx, 4, res, 4));
    check_ok(kiln_dot_f32(NULL, n, bx, 4, by, 8, res, 8));
    check_ok(kiln_axpy_f32(NULL, n, -1.5f, bx, 4, by, 8));
    float got[4];
    check_ok(kiln_buffer_read(NULL, res, 0, got, 16));
    assert_true(got[0] == canary && got[3] == canary);
    double want = sum_of(x, NULL, n);
    if ((double)got[1] != want)
      fail_msg("sum of %zu: %.9g, expected %.9g", n, got[1], want);
    want = sum_of(x, y, n);
    if ((double)got[2] != want)
      fail_msg("dot of %zu: %.9g, expected %.9g", n, got[2], want);
    check_ok(kiln_buffer_read(NULL, by, 8, out, max * 4));
    for (size_t i = 0; i < max; i++) {
      float e = i < n ? -1.5f * x[i] + y[i] : y[i];
      if (out[i] != e)
        fail_msg("axpy of %zu: y[%zu] = %.9g, expected %.9g", n, i, out[i], e);
    }
    if (n == 0) continue;
    /* One launch of a reduction, whose last block adds up. */
    const fake_launch *last = fake_launch_back(&f->fb, 1);
    assert_string_equal(last->kernel, "kiln_dot_f32");
    assert_int_equal(last->kernel_arg_bytes, 44);
    assert_true(last->config.grid.x >= 1 && last->config.grid.x <= 1024);
  }
  check_ok(kiln_buffer_destroy(res));
  check_ok(kiln_buffer_destroy(by));
  check_ok(kiln_buffer_destroy(bx));
  free(x);
  free(y);
  free(out);
}

/* kiln_sgemm_f32's checks and launch, through the fake's host version. */
static void sgemm_helper(void **state) {
  fake_fixture *f = *state;
  enum { M = 5, N = 7, K = 3, LDA = 4, LDB = 9, LDC = 8 };
  float a[M * LDA], b[K * LDB], c[M * LDC], want[M * LDC];
  for (int i = 0; i < M * LDA; i++) a[i] = (float)(i % 5) - 2.0f;
  for (int i = 0; i < K * LDB; i++) b[i] = (float)(i % 3) * 0.5f;
  for (int i = 0; i < M * LDC; i++) c[i] = want[i] = (float)i;
  const float alpha = 2.0f, beta = 0.5f;
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      float sum = 0.0f;
      for (int l = 0; l < K; l++) sum += a[i * LDA + l] * b[l * LDB + j];
      want[i * LDC + j] = alpha * sum + beta * c[i * LDC + j];
    }
  kiln_buffer *ba, *bb, *bc;
  check_ok(kiln_buffer_create(f->ctx, sizeof a + 4, 0, &ba));
  check_ok(kiln_buffer_create(f->ctx, sizeof b + 8, 0, &bb));
  check_ok(kiln_buffer_create(f->ctx, sizeof c + 12, 0, &bc));
  check_ok(kiln_buffer_write(NULL, ba, 4, a, sizeof a));
  check_ok(kiln_buffer_write(NULL, bb, 8, b, sizeof b));
  check_ok(kiln_buffer_write(NULL, bc, 12, c, sizeof c));
  check_ok(kiln_sgemm_f32(NULL, M, N, K, alpha, ba, 4, LDA, bb, 8, LDB, beta,
                          bc, 12, LDC));
  float got[M * LDC];
  check_ok(kiln_buffer_read(NULL, bc, 12, got, sizeof got));
  assert_memory_equal(got, want, sizeof got);
  const fake_launch *l = fake_launch_back(&f->fb, 0);
  /* One tile of C on the fake's 4 SMs: the 32 x 64 kernel
   * (docs/kernels.md). */
  assert_string_equal(l->kernel, "kiln_sgemm_f32_small");
  assert_int_equal(l->args.count, 11);
  assert_int_equal(l->args.size, 56);
  assert_int_equal(l->config.grid.x, 1);
  assert_int_equal(l->config.grid.y, 1);
  const size_t launches = f->fb.launch_count;

  /* The extents: A is (M-1)*LDA + K floats from its offset, and so on. */
  check_fails(
      kiln_sgemm_f32(NULL, M, N, K, 1, ba, 12, LDA, bb, 8, LDB, 0, bc, 12, LDC),
      KILN_ERROR_OUT_OF_RANGE);
  check_ok(kiln_sgemm_f32(NULL, M, N, K, 1, ba, 4 * (LDA - K + 1), LDA, bb, 8,
                          LDB, 0, bc, 12, LDC));
  check_fails(kiln_sgemm_f32(NULL, M + 1, N, K, 1, ba, 4, LDA, bb, 8, LDB, 0,
                             bc, 12, LDC),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_sgemm_f32(NULL, M, N, K, 1, ba, 4, K - 1, bb, 8, LDB, 0, bc,
                             12, LDC),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_sgemm_f32(NULL, M, N, K, 1, ba, 4, LDA, bb, 8, N - 1, 0, bc,
                             12, LDC),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_sgemm_f32(NULL, M, N, K, 1, ba, 4, LDA, bb, 8, LDB, 0, bc,
                             12, N - 1),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(
      kiln_sgemm_f32(NULL, M, N, 0, 1, ba, 4, LDA, bb, 8, LDB, 0, bc, 12, LDC),
      KILN_ERROR_INVALID_ARGUMENT);
  check_fails(
      kiln_sgemm_f32(NULL, M, N, K, 1, ba, 2, LDA, bb, 8, LDB, 0, bc, 12, LDC),
      KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_sgemm_f32(NULL, (size_t)1 << 33, N, K, 1, ba, 4, LDA, bb, 8,
                             LDB, 0, bc, 12, LDC),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_sgemm_f32(NULL, M, N, K, 1, NULL, 4, LDA, bb, 8, LDB, 0, bc,
                             12, LDC),
              KILN_ERROR_INVALID_HANDLE);
  /* m or n of 0 does nothing. */
  check_ok(
      kiln_sgemm_f32(NULL, 0, N, K, 1, ba, 4, LDA, bb, 8, LDB, 0, bc, 12, LDC));
  check_ok(
      kiln_sgemm_f32(NULL, M, 0, K, 1, ba, 4, LDA, bb, 8, LDB, 0, bc, 12, LDC));
  assert_int_equal(f->fb.launch_count, launches + 1);
  check_ok(kiln_buffer_destroy(bc));
  check_ok(kiln_buffer_destroy(bb));
  check_ok(kiln_buffer_destroy(ba));
}

/* kiln.h: "m or n of 0 does nothing" — whatever the leading dimensions,
 * which an empty matrix cannot be wrong about. */
static void sgemm_of_empty_matrices(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &b));
  check_ok(kiln_sgemm_f32(NULL, 4, 0, 2, 1, b, 0, 2, b, 0, 0, 0, b, 0, 0));
  check_ok(kiln_sgemm_f32(NULL, 0, 4, 2, 1, b, 0, 2, b, 0, 4, 0, b, 0, 4));
  assert_int_equal(f->fb.launch_count, 0);
  check_ok(kiln_buffer_destroy(b));
}

static void no_builtin_kernels(void **state) {
  fake_fixture *f = *state;
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  f->fb.ops.builtin_images = NULL;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_buffer *b;
  check_ok(kiln_buffer_create(ctx, 64, 0, &b));
  kiln_module *m;
  check_fails(kiln_context_builtin_module(ctx, &m), KILN_ERROR_UNSUPPORTED);
  check_fails(kiln_axpy_f32(NULL, 4, 1.0f, b, 0, b, 16),
              KILN_ERROR_UNSUPPORTED);
  check_fails(kiln_reduce_sum_f32(NULL, 4, b, 0, b, 16),
              KILN_ERROR_UNSUPPORTED);
  check_message_has("vulkan");
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_context_destroy(ctx));
}

static void streams_and_events(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s1, *s2;
  kiln_event *a, *b, *c;
  check_ok(kiln_stream_create(f->ctx, &s1));
  check_ok(kiln_stream_create(f->ctx, &s2));
  check_ok(kiln_event_create(f->ctx, &a));
  check_ok(kiln_event_create(f->ctx, &b));
  check_ok(kiln_event_create(f->ctx, &c));
  /* a, b and c in an order the streams keep (b after a on s1, c after a
   * wait for b on s2), so the times between them are ordered too. */
  check_ok(kiln_event_record(a, s1));
  check_ok(kiln_event_record(b, s1));
  check_ok(kiln_stream_wait_event(s2, b));
  check_ok(kiln_event_record(c, s2));
  check_ok(kiln_event_synchronize(c));
  check_ok(kiln_event_query(c));
  float ab, bc, ac;
  check_ok(kiln_event_elapsed_ms(a, b, &ab));
  check_ok(kiln_event_elapsed_ms(b, c, &bc));
  check_ok(kiln_event_elapsed_ms(a, c, &ac));
  assert_true(ab >= 0.0f && bc >= 0.0f && ac >= ab && ac >= bc);
  /* Not ready is an answer, with a message, and leaves *out_ms alone. */
  f->fb.events_pending = true;
  check_fails(kiln_event_query(c), KILN_ERROR_NOT_READY);
  f->fb.events_pending = false;
  check_ok(kiln_event_query(c));
  /* Re-recording moves the mark. */
  check_ok(kiln_event_record(a, s2));
  check_ok(kiln_stream_synchronize(s1));
  check_ok(kiln_context_synchronize(f->ctx));
  check_ok(kiln_event_destroy(c));
  check_ok(kiln_event_destroy(b));
  check_ok(kiln_event_destroy(a));
  check_ok(kiln_stream_destroy(s2));
  check_ok(kiln_stream_destroy(s1));
}

/* kiln.h: a NULL stream means the default stream of the context the other
 * arguments belong to; kiln_stream_wait_event has the event's. */
static void wait_event_on_the_default_stream(void **state) {
  fake_fixture *f = *state;
  kiln_event *e;
  check_ok(kiln_event_create(f->ctx, &e));
  check_ok(kiln_event_record(e, NULL));
  check_ok(kiln_stream_wait_event(NULL, e));
  assert_int_equal(f->fb.calls[FAKE_OP_STREAM_WAIT_EVENT], 1);
  check_ok(kiln_event_destroy(e));
}

typedef struct worker {
  kiln_context *ctx;
  int failures;
  char message[64];
} worker;

static void *churn(void *arg) {
  worker *w = arg;
  for (int i = 0; i < 200; i++) {
    kiln_buffer *b;
    kiln_event *e;
    uint32_t v = (uint32_t)i, back = 0;
    if (kiln_buffer_create(w->ctx, 64, 0, &b) != KILN_OK) {
      w->failures++;
      continue;
    }
    if (kiln_buffer_write(NULL, b, 4, &v, 4) != KILN_OK ||
        kiln_buffer_read(NULL, b, 4, &back, 4) != KILN_OK || back != v)
      w->failures++;
    if (kiln_event_create(w->ctx, &e) == KILN_OK)
      kiln_event_destroy(e);
    else
      w->failures++;
    kiln_buffer_destroy(b);
  }
  /* Errors are per thread: this one's is not the main thread's. */
  kiln_buffer_create(w->ctx, 0, 0, NULL);
  kiln_strlcpy(w->message, kiln_last_error(), sizeof w->message);
  return NULL;
}

static void threads_share_a_context(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b;
  check_fails(kiln_buffer_create(f->ctx, 0, 0, &b),
              KILN_ERROR_INVALID_ARGUMENT);
  char mine[256];
  kiln_strlcpy(mine, kiln_last_error(), sizeof mine);
  enum { THREADS = 4 };
  deadline_thread t[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].ctx = f->ctx;
    start_thread(&t[i], churn, &w[i]);
  }
  /* A fraction of a second under TSan; a deadlock in kiln meets this. */
  const uint64_t deadline = deadline_in(20);
  for (int i = 0; i < THREADS; i++) {
    join_thread(&t[i], deadline);
    assert_int_equal(w[i].failures, 0);
    assert_true(w[i].message[0] != '\0');
  }
  assert_string_equal(kiln_last_error(), mine);
}

/* design.md: an ability a backend lacks is a NULL sub-table in its table,
 * and the core answers KILN_ERROR_UNSUPPORTED or uses an honest fallback
 * (test_table.c holds those that answer UNSUPPORTED). Last in
 * the list, with the other that can crash a faulty core. */
static void missing_backend_operations(void **state) {
  fake_fixture *f = *state;
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  f->fb.ops.async_transfers = NULL;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_buffer *b;
  kiln_host_buffer *h;
  check_ok(kiln_buffer_create(ctx, 64, 0, &b));
  check_ok(kiln_host_buffer_create(ctx, 64, 0, &h));
  unsigned char *hd = kiln_host_buffer_data(h);
  for (int i = 0; i < 64; i++) hd[i] = (unsigned char)i;
  kiln_status st = kiln_buffer_write_async(NULL, b, 0, h, 0, 32);
  if (st == KILN_OK) {
    check_ok(kiln_buffer_read_async(NULL, b, 0, h, 32, 32));
    check_ok(kiln_context_synchronize(ctx));
    assert_memory_equal(hd, hd + 32, 32);
  } else {
    assert_int_equal(st, KILN_ERROR_UNSUPPORTED);
    assert_true(kiln_last_error()[0] != '\0');
  }
  check_ok(kiln_host_buffer_destroy(h));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_context_destroy(ctx));
}

int main(void) {
#define T(name)                                                                \
  cmocka_unit_test_setup_teardown(name, fake_fixture_setup,                    \
                                  fake_fixture_teardown)
  const struct CMUnitTest tests[] = {
      T(destroy_reports_live_objects),
      T(device_lost_is_sticky),
      T(device_lost_from_any_op),
      T(arguments_are_packed_naturally),
      cmocka_unit_test(launch_config_1d),
      T(write_read_copy_roundtrip),
      T(fill_through_the_kernel),
      T(builtin_helpers),
      T(sgemm_helper),
      T(no_builtin_kernels),
      T(streams_and_events),
      T(wait_event_on_the_default_stream),
      T(threads_share_a_context),
      T(sgemm_of_empty_matrices),
      T(missing_backend_operations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
