/* Device and host buffers: transfers, copies and fills of every size and
 * alignment, checked byte for byte with guards around every output. */
#include <stdio.h>

#include "conformance.h"

static void sizes_round_trip(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  static const size_t sizes[] = {
      1,    2,    3,    4,    5,    7,    8,     9,     15,    16,
      17,   31,   32,   33,   63,   64,   65,    255,   256,   257,
      1023, 1024, 1025, 4095, 4096, 4097, 65535, 65536, 65537, (1u << 20) + 3};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    unsigned char *data = conf_alloc(n);
    conf_random_bytes(&r, data, n);
    kiln_buffer *b;
    check_ok(kiln_buffer_create(conf.ctx, n, 0, &b));
    assert_int_equal(kiln_buffer_size(b), n);
    check_ok(kiln_buffer_write(NULL, b, 0, data, n));
    unsigned char *got = conf_alloc(n + 2 * CONF_GUARD);
    memset(got, 0x5a, n + 2 * CONF_GUARD);
    check_ok(kiln_buffer_read(NULL, b, 0, got + CONF_GUARD, n));
    char what[64];
    snprintf(what, sizeof what, "a %zu-byte buffer read back", n);
    conf_check_bytes(got + CONF_GUARD, data, n, what);
    for (size_t j = 0; j < CONF_GUARD; j++)
      if (got[j] != 0x5a || got[CONF_GUARD + n + j] != 0x5a)
        fail_msg("kiln_buffer_read of %zu bytes wrote outside them", n);
    check_ok(kiln_buffer_destroy(b));
    free(data);
    free(got);
  }
}

/* 256 MiB written, read back, copied and read again. */
static void large_buffers(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  const size_t n = (size_t)256 << 20;
  unsigned char *data = conf_alloc(n);
  conf_random_bytes(&r, data, n);
  conf_guarded a, b;
  conf_guarded_create(&a, n, &r);
  conf_guarded_create(&b, n, &r);
  check_ok(kiln_buffer_write(NULL, a.buf, CONF_GUARD, data, n));
  conf_guarded_check(&a, NULL, data, "256 MiB written and read back");
  check_ok(kiln_buffer_copy(NULL, b.buf, CONF_GUARD, a.buf, CONF_GUARD, n));
  conf_guarded_check(&b, NULL, data, "256 MiB copied");
  /* Copies of whole words large enough for a backend's copy kernel
   * (Vulkan), at addresses 16-byte aligned and not, with a tail of
   * words. */
  static const size_t at[][3] = {{16, 32, ((size_t)1 << 20) + 20},
                                 {4, 8, ((size_t)3 << 20) + 12},
                                 {12, 0, ((size_t)1 << 19) + 4}};
  for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
    memcpy(data + at[i][1], data + n / 2 + at[i][0], at[i][2]);
    check_ok(kiln_buffer_copy(NULL, b.buf, CONF_GUARD + at[i][1], a.buf,
                              CONF_GUARD + n / 2 + at[i][0], at[i][2]));
    check_ok(kiln_buffer_copy(NULL, a.buf, CONF_GUARD + at[i][1], b.buf,
                              CONF_GUARD + at[i][1], at[i][2]));
  }
  conf_guarded_check(&b, NULL, data, "words copied at aligned offsets");
  conf_guarded_check(&a, NULL, data, "the same words copied back");
  /* A copy between the two halves of one buffer, at odd offsets. */
  const size_t half = n / 2 - 3;
  memmove(data + 1, data + half + 5, half);
  check_ok(kiln_buffer_copy(NULL, b.buf, CONF_GUARD + 1, b.buf,
                            CONF_GUARD + half + 5, half));
  conf_guarded_check(&b, NULL, data, "128 MiB copied within one buffer");
  conf_guarded_destroy(&b);
  conf_guarded_destroy(&a);
  free(data);
}

/* Random writes, reads and copies at odd offsets and lengths, against a
 * host mirror of two buffers. */
static void odd_offsets_and_lengths(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { N = 65536 + 13 };
  conf_guarded g[2];
  unsigned char *mirror[2], *got = conf_alloc(4096 + 64);
  unsigned char *data = conf_alloc(4096 + 64);
  for (int i = 0; i < 2; i++) {
    conf_guarded_create(&g[i], N, &r);
    mirror[i] = conf_alloc(N);
    memcpy(mirror[i], conf_guarded_initial(&g[i]), N);
  }
  for (int op = 0; op < 400; op++) {
    int d = (int)conf_below(&r, 2), s = (int)conf_below(&r, 2);
    size_t len =
        conf_below(&r, 8) == 0 ? conf_below(&r, 4) : conf_below(&r, 4097);
    size_t off = conf_below(&r, N - len + 1);
    /* Host memory at any alignment too. */
    size_t host = conf_below(&r, 32);
    switch (conf_below(&r, 3)) {
    case 0:
      conf_random_bytes(&r, data + host, len);
      check_ok(kiln_buffer_write(NULL, g[d].buf, CONF_GUARD + off, data + host,
                                 len));
      memcpy(mirror[d] + off, data + host, len);
      break;
    case 1: {
      size_t src = conf_below(&r, N - len + 1);
      if (s == d && (src < off + len && off < src + len)) break;
      check_ok(kiln_buffer_copy(NULL, g[d].buf, CONF_GUARD + off, g[s].buf,
                                CONF_GUARD + src, len));
      memmove(mirror[d] + off, mirror[s] + src, len);
      break;
    }
    default:
      memset(got, 0xee, len + 64);
      check_ok(
          kiln_buffer_read(NULL, g[d].buf, CONF_GUARD + off, got + host, len));
      char what[96];
      snprintf(what, sizeof what, "operation %d: %zu bytes read at %zu", op,
               len, off);
      conf_check_bytes(got + host, mirror[d] + off, len, what);
      for (size_t j = 0; j < len + 64; j++)
        if ((j < host || j >= host + len) && got[j] != 0xee)
          fail_msg("%s: host byte %zu outside the destination was written",
                   what, j);
    }
  }
  conf_guarded_check(&g[0], NULL, mirror[0], "the first buffer at the end");
  conf_guarded_check(&g[1], NULL, mirror[1], "the second buffer at the end");
  for (int i = 0; i < 2; i++) {
    conf_guarded_destroy(&g[i]);
    free(mirror[i]);
  }
  free(got);
  free(data);
}

/* The caller's memory is free for reuse as soon as kiln_buffer_write
 * returns, with no synchronization in between. */
static void write_source_reusable_at_once(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { CHUNK = 4096 + 7, CHUNKS = 64 };
  conf_guarded g;
  conf_guarded_create(&g, (size_t)CHUNK * CHUNKS, &r);
  unsigned char *want = conf_alloc((size_t)CHUNK * CHUNKS);
  unsigned char *scratch = conf_alloc(CHUNK);
  for (int c = 0; c < CHUNKS; c++) {
    conf_random_bytes(&r, scratch, CHUNK);
    memcpy(want + (size_t)c * CHUNK, scratch, CHUNK);
    check_ok(kiln_buffer_write(NULL, g.buf, CONF_GUARD + (size_t)c * CHUNK,
                               scratch, CHUNK));
    memset(scratch, 0xdd, CHUNK);
  }
  conf_guarded_check(&g, NULL, want, "writes whose source was reused");
  conf_guarded_destroy(&g);
  free(want);
  free(scratch);
}

static void fill_every_pattern_and_alignment(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { N = 8192 };
  conf_guarded g;
  conf_guarded_create(&g, N, &r);
  unsigned char *mirror = conf_alloc(N);
  memcpy(mirror, conf_guarded_initial(&g), N);
  static const size_t counts[] = {1, 2, 3, 5, 8, 17, 64, 255, 1000};
  for (size_t ps = 1; ps <= 8; ps *= 2) {
    for (size_t off = 0; off < 32; off += ps) {
      for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        size_t size = counts[c] * ps;
        /* Spread the fills over the buffer so that they do not all overlap. */
        size_t at =
            off + ps * 64 * conf_below(&r, (N - size - off) / (ps * 64));
        unsigned char pattern[8];
        conf_random_bytes(&r, pattern, sizeof pattern);
        check_ok(
            kiln_buffer_fill(NULL, g.buf, CONF_GUARD + at, size, pattern, ps));
        for (size_t i = 0; i < size; i++) mirror[at + i] = pattern[i % ps];
      }
      char what[96];
      snprintf(what, sizeof what,
               "fills of a %zu-byte pattern at offset %zu "
               "mod 64",
               ps, off);
      conf_guarded_check(&g, NULL, mirror, what);
    }
  }
  conf_guarded_destroy(&g);

  /* One large fill. */
  const size_t big = (size_t)16 << 20;
  conf_guarded_create(&g, big, &r);
  unsigned char *want = conf_alloc(big);
  memcpy(want, conf_guarded_initial(&g), big);
  const uint32_t word = 0xa5c3e187u;
  check_ok(kiln_buffer_fill(NULL, g.buf, CONF_GUARD + 4, big - 8, &word, 4));
  for (size_t i = 4; i < big - 4; i += 4) memcpy(want + i, &word, 4);
  conf_guarded_check(&g, NULL, want, "a 16 MiB fill");
  conf_guarded_destroy(&g);
  free(want);
  free(mirror);
}

static void zero_filled_creation(void **state) {
  (void)state;
  static const size_t sizes[] = {1, 13, 4096, (1u << 20) + 5, 64u << 20};
  /* Dirty memory first, so that a buffer that is merely recycled shows. */
  const size_t dirty = 64u << 20;
  kiln_buffer *b;
  const uint8_t ff = 0xff;
  check_ok(kiln_buffer_create(conf.ctx, dirty, 0, &b));
  check_ok(kiln_buffer_fill(NULL, b, 0, dirty, &ff, 1));
  check_ok(kiln_buffer_destroy(b));
  unsigned char *zero = calloc(1, 64u << 20);
  unsigned char *got = conf_alloc(64u << 20);
  assert_non_null(zero);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    check_ok(kiln_buffer_create(conf.ctx, sizes[i], KILN_BUFFER_ZERO, &b));
    check_ok(kiln_buffer_read(NULL, b, 0, got, sizes[i]));
    char what[64];
    snprintf(what, sizeof what, "a new %zu-byte KILN_BUFFER_ZERO buffer",
             sizes[i]);
    conf_check_bytes(got, zero, sizes[i], what);
    check_ok(kiln_buffer_destroy(b));
  }
  free(zero);
  free(got);
}

static void host_buffers_async(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  const size_t n = (1u << 20) + 100;
  kiln_host_buffer *src, *dst;
  check_ok(kiln_host_buffer_create(conf.ctx, n, 0, &src));
  check_ok(kiln_host_buffer_create(conf.ctx, n, 0, &dst));
  assert_int_equal(kiln_host_buffer_size(src), n);
  unsigned char *s = kiln_host_buffer_data(src),
                *d = kiln_host_buffer_data(dst);
  assert_non_null(s);
  assert_non_null(d);
  assert_ptr_not_equal(s, d);
  conf_random_bytes(&r, s, n);
  unsigned char *canary = conf_alloc(n);
  conf_random_bytes(&r, canary, n);
  memcpy(d, canary, n);

  kiln_stream *stream;
  check_ok(kiln_stream_create(conf.ctx, &stream));
  conf_guarded g;
  conf_guarded_create(&g, n, &r);
  unsigned char *want = conf_alloc(n);
  memcpy(want, conf_guarded_initial(&g), n);
  /* Host buffer -> device at odd offsets, a fill in between, and back. */
  const size_t len = n - 200;
  check_ok(kiln_buffer_write_async(stream, g.buf, CONF_GUARD + 3, src, 7, len));
  memcpy(want + 3, s + 7, len);
  const uint16_t pattern = 0x1234;
  check_ok(kiln_buffer_fill(stream, g.buf, CONF_GUARD + 64, 128, &pattern, 2));
  for (size_t i = 0; i < 128; i += 2) memcpy(want + 64 + i, &pattern, 2);
  check_ok(
      kiln_buffer_read_async(stream, g.buf, CONF_GUARD + 1, dst, 11, len + 40));
  check_ok(kiln_stream_synchronize(stream));
  unsigned char *expect_dst = conf_alloc(n);
  memcpy(expect_dst, canary, n);
  memcpy(expect_dst + 11, want + 1, len + 40);
  conf_check_bytes(d, expect_dst, n, "the host buffer after read_async");
  conf_guarded_check(&g, stream, want, "the device buffer after write_async");

  /* The same through the default stream, many small transfers queued. */
  for (size_t i = 0; i < 64; i++)
    check_ok(kiln_buffer_write_async(NULL, g.buf, CONF_GUARD + i * 1001, src,
                                     i * 999, 1000));
  for (size_t i = 0; i < 64; i++) memcpy(want + i * 1001, s + i * 999, 1000);
  memcpy(d, canary, n);
  check_ok(kiln_buffer_read_async(NULL, g.buf, CONF_GUARD, dst, 0, n));
  kiln_stream *def;
  check_ok(kiln_context_default_stream(conf.ctx, &def));
  check_ok(kiln_stream_synchronize(def));
  conf_check_bytes(d, want, n, "64 queued write_async then read_async");
  conf_guarded_check(&g, NULL, want, "the device buffer");

  conf_guarded_destroy(&g);
  check_ok(kiln_stream_destroy(stream));
  check_ok(kiln_host_buffer_destroy(dst));
  check_ok(kiln_host_buffer_destroy(src));
  free(canary);
  free(want);
  free(expect_dst);
}

int conf_run_buffer_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(sizes_round_trip),
      CONF_TEST(large_buffers),
      CONF_TEST(odd_offsets_and_lengths),
      CONF_TEST(write_source_reusable_at_once),
      CONF_TEST(fill_every_pattern_and_alignment),
      CONF_TEST(zero_filled_creation),
      CONF_TEST(host_buffers_async),
  };
  return cmocka_run_group_tests_name("buffers", tests, NULL, NULL);
}
