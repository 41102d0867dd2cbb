/* Several contexts in one process: copies between buffers of two contexts
 * (on two devices where the backend has several, else two on one device)
 * at every edge of offset and size, byte for byte; their order with
 * launches queued before and after on both sides; and the peer query. */
#include <stdio.h>

#include "conformance.h"

#define LCG_MUL 1664525u
#define LCG_ADD 1013904223u

/* Both ways, and between one context and itself. */
static void peer_query(void **state) {
  (void)state;
  kiln_context *b = conf_second_context();
  kiln_device_properties pb;
  check_ok(kiln_context_get_properties(b, &pb));
  const bool one_device = memcmp(conf.props.uuid, pb.uuid, sizeof pb.uuid) == 0;
  if (one_device)
    assert_string_equal(conf.props.pci_bus_id, pb.pci_bus_id);
  bool same = false, ab = true, ba = true;
  check_ok(kiln_context_can_copy_peer(conf.ctx, conf.ctx, &same));
  check_ok(kiln_context_can_copy_peer(conf.ctx, b, &ab));
  check_ok(kiln_context_can_copy_peer(b, conf.ctx, &ba));
  assert_true(same);
  assert_int_equal(ab, ba);
  /* Two CUDA or HIP contexts on one device share its memory, and on two
   * devices copy directly where the driver allows peer access; two Vulkan
   * contexts are two VkDevices, which copy directly only where they share
   * device memory (one GPU, VK_KHR_external_memory_fd): never between two
   * GPUs, and never with KILN_VULKAN_PEER=host (copy_through_host_memory). */
  if (conf.backend != KILN_BACKEND_VULKAN && one_device) assert_true(ab);
  if (conf.backend == KILN_BACKEND_VULKAN && !one_device) assert_false(ab);
  if (!one_device)
    print_message("  peers: %s (%s) and %s (%s): %s\n", conf.props.name,
                  conf.props.pci_bus_id, pb.name, pb.pci_bus_id,
                  ab ? "direct" : "staged through the host");
  check_ok(kiln_context_destroy(b));
}

/* Both buffers against their host models, naming the case on a mismatch. */
static void check_models(kiln_buffer *a, const unsigned char *ma,
                         kiln_buffer *b, const unsigned char *mb, size_t n,
                         const char *what) {
  unsigned char *got = conf_alloc(n);
  check_ok(kiln_buffer_read(NULL, a, 0, got, n));
  char name[160];
  snprintf(name, sizeof name, "context A's buffer after %s", what);
  conf_check_bytes(got, ma, n, name);
  check_ok(kiln_buffer_read(NULL, b, 0, got, n));
  snprintf(name, sizeof name, "context B's buffer after %s", what);
  conf_check_bytes(got, mb, n, name);
  free(got);
}

/* Copies at every small offset and size, both ways, and to and from the
 * buffers' last byte: each copy is queued on the destination's default
 * stream after the one before it, which went the other way, so the models
 * also check that each copy waits for the last. Within one context too,
 * between two streams of it. */
static void copy_edges(void **state) {
  (void)state;
  enum { N = 8192 + 512 };
  static const size_t offsets[] = {0, 1, 2, 3, 4, 5, 7, 8, 255, 256, 257,
                                   4093, 4096};
  static const size_t sizes[] = {1,   2,    3,    4,    5,    7,    8,
                                 15,  16,   17,   255,  256,  257,  1023,
                                 1024, 1025, 4095, 4096, 4097};
  conf_rng r = conf_rng_for(__func__);
  kiln_context *cb = conf_second_context();
  kiln_buffer *a = NULL, *b = NULL;
  kiln_stream *a2 = NULL;
  check_ok(kiln_buffer_create(conf.ctx, N, 0, &a));
  check_ok(kiln_buffer_create(cb, N, 0, &b));
  check_ok(kiln_stream_create(conf.ctx, &a2));
  unsigned char *ma = conf_alloc(N), *mb = conf_alloc(N);
  conf_random_bytes(&r, ma, N);
  conf_random_bytes(&r, mb, N);
  check_ok(kiln_buffer_write(NULL, a, 0, ma, N));
  check_ok(kiln_buffer_write(NULL, b, 0, mb, N));
  const size_t n_off = sizeof offsets / sizeof offsets[0];
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    const size_t size = sizes[si];
    for (size_t oi = 0; oi < n_off; oi++) {
      const size_t doff = offsets[oi], soff = offsets[(oi + si) % n_off];
      /* A to B, then B to A at other offsets, then B's last bytes. */
      check_ok(kiln_buffer_copy_peer(NULL, b, doff, NULL, a, soff, size));
      memmove(mb + doff, ma + soff, size);
      check_ok(kiln_buffer_copy_peer(NULL, a, soff, NULL, b, doff + 1, size));
      memmove(ma + soff, mb + doff + 1, size);
    }
    check_ok(kiln_buffer_copy_peer(NULL, b, N - size, NULL, a, N - size,
                                   size));
    memmove(mb + N - size, ma + N - size, size);
    check_ok(kiln_buffer_copy_peer(NULL, a, 0, NULL, b, N - size, size));
    memmove(ma, mb + N - size, size);
    /* One context, two streams: a2 waits for the default stream's copies
     * above and the default stream for a2's. */
    check_ok(kiln_buffer_copy_peer(a2, a, N - size, NULL, a, 0, size));
    memmove(ma + N - size, ma, size);
    char what[64];
    snprintf(what, sizeof what, "the copies of %zu bytes", size);
    check_models(a, ma, b, mb, N, what);
  }
  check_ok(kiln_buffer_copy_peer(NULL, b, 0, NULL, a, 0, N));
  memcpy(mb, ma, N);
  check_models(a, ma, b, mb, N, "copying the whole buffer");
  free(ma);
  free(mb);
  check_ok(kiln_stream_destroy(a2));
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_context_destroy(cb));
}

/* `size` bytes from a to b at word-aligned offsets, then back at odd ones,
 * on the default streams, between buffers of each context. */
static void copy_there_and_back(kiln_context *ca, kiln_context *cb, size_t size,
                                const char *what) {
  const size_t n = size + 16;
  conf_rng r = conf_rng_for(what);
  kiln_buffer *a = NULL, *b = NULL;
  check_ok(kiln_buffer_create(ca, n, 0, &a));
  check_ok(kiln_buffer_create(cb, n, 0, &b));
  unsigned char *ma = conf_alloc(n), *mb = conf_alloc(n);
  conf_random_bytes(&r, ma, n);
  conf_random_bytes(&r, mb, n);
  check_ok(kiln_buffer_write(NULL, a, 0, ma, n));
  check_ok(kiln_buffer_write(NULL, b, 0, mb, n));
  check_ok(kiln_buffer_copy_peer(NULL, b, 4, NULL, a, 8, size));
  memcpy(mb + 4, ma + 8, size);
  check_ok(kiln_buffer_copy_peer(NULL, a, 3, NULL, b, 1, size));
  memcpy(ma + 3, mb + 1, size);
  check_models(a, ma, b, mb, n, what);
  free(ma);
  free(mb);
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_buffer_destroy(b));
}

/* copy_there_and_back of `size` bytes between conf.ctx and a second
 * context, then between two contexts made with KILN_VULKAN_PEER=slots:
 * on Vulkan (one GPU) the first copy out of the source's own memory, the
 * second through the slots both see, as buffers made before the second
 * context do. */
static void copy_both_ways(size_t size, const char *what) {
  kiln_context *cb = conf_second_context();
  copy_there_and_back(conf.ctx, cb, size, what);
  check_ok(kiln_context_destroy(cb));
  kiln_context *sa, *sb;
  conf_contexts_with_peer("slots", &sa, &sb);
  char slots[96];
  snprintf(slots, sizeof slots, "%s through the slots", what);
  copy_there_and_back(sa, sb, size, slots);
  check_ok(kiln_context_destroy(sa));
  check_ok(kiln_context_destroy(sb));
}

/* Larger than the chunks a staged copy goes in (Vulkan: 16 MiB), back at
 * offsets that are not multiples of 4. */
static void copy_large(void **state) {
  (void)state;
  copy_both_ways(((size_t)33 << 20) + 4097, "copies of 33 MiB + 4097 bytes");
}

/* Larger than all the memory a copy between contexts goes through
 * together (Vulkan, two contexts on one GPU: one slot of 256 MiB of device
 * memory), so that the slot is filled again, both ways, its last chunk
 * smaller than the copy kernel takes; and so, out of the source's own
 * memory, larger than Vulkan's largest shared block. */
static void copy_larger_than_the_slots(void **state) {
  (void)state;
  copy_both_ways(((size_t)257 << 20) + 5, "copies of 257 MiB + 5 bytes");
}

/* On Vulkan, two contexts made with KILN_VULKAN_PEER=host copy through
 * host memory both import (as two GPUs do, and one GPU whose driver shares
 * no device memory), here tested on one device; larger than those slots
 * (4 of 8 MiB) too. Other backends ignore the variable. */
static void copy_through_host_memory(void **state) {
  (void)state;
  kiln_context *ca, *cb;
  conf_contexts_with_peer("host", &ca, &cb);
  if (conf.backend == KILN_BACKEND_VULKAN) {
    bool direct = true;
    check_ok(kiln_context_can_copy_peer(ca, cb, &direct));
    assert_false(direct);
  }
  copy_there_and_back(ca, cb, ((size_t)41 << 20) + 7,
                      "copies of 41 MiB + 7 bytes through host memory");
  copy_there_and_back(ca, cb, 4097, "copies of 4097 bytes through the host");
  check_ok(kiln_context_destroy(ca));
  check_ok(kiln_context_destroy(cb));
}

/* Large copies back and forth between three contexts, one destroyed in
 * between: on Vulkan they go through host memory kept for each pair of
 * contexts, used again by the next copy either way and freed with either
 * context. */
static void copies_between_contexts_that_come_and_go(void **state) {
  (void)state;
  const size_t n = ((size_t)19 << 20) + 12;
  conf_rng r = conf_rng_for(__func__);
  kiln_context *other[2] = {conf_second_context(), NULL};
  kiln_buffer *a = NULL, *b[2] = {NULL, NULL};
  unsigned char *ma = conf_alloc(n), *mb = conf_alloc(n);
  conf_random_bytes(&r, ma, n);
  check_ok(kiln_buffer_create(conf.ctx, n, 0, &a));
  check_ok(kiln_buffer_write(NULL, a, 0, ma, n));
  for (int round = 0; round < 2; round++) {
    if (round == 1) other[1] = conf_second_context();
    kiln_buffer **to = &b[round];
    check_ok(kiln_buffer_create(other[round], n, 0, to));
    conf_random_bytes(&r, mb, n);
    check_ok(kiln_buffer_write(NULL, *to, 0, mb, n));
    for (int rep = 0; rep < 3; rep++) {
      const size_t at = 4 * (size_t)rep, len = n - 4 * (size_t)rep - 8;
      check_ok(kiln_buffer_copy_peer(NULL, *to, at, NULL, a, at + 4, len));
      memcpy(mb + at, ma + at + 4, len);
      check_ok(kiln_buffer_fill(NULL, a, 0, 4, &rep, 4));
      memcpy(ma, &rep, 4);
      check_ok(kiln_buffer_copy_peer(NULL, a, 8, NULL, *to, 0, len));
      memcpy(ma + 8, mb, len);
      check_models(a, ma, *to, mb, n,
                   round ? "copies to and from a newer context"
                         : "copies to and from the first context");
    }
    if (round == 0) {
      check_ok(kiln_buffer_destroy(b[0]));
      check_ok(kiln_context_destroy(other[0]));
    }
  }
  check_ok(kiln_buffer_destroy(b[1]));
  check_ok(kiln_context_destroy(other[1]));
  check_ok(kiln_buffer_destroy(a));
  free(ma);
  free(mb);
}

static void launch(kiln_stream *s, kiln_kernel *k, kiln_buffer *buf,
                   uint32_t n, uint32_t value) {
  kiln_launch_config c = kiln_launch_config_1d(n, 128);
  if (c.grid.x > 256) c.grid.x = 256;
  const kiln_arg args[3] = {kiln_arg_buffer(buf, 0), kiln_arg_u32(n),
                            kiln_arg_u32(value)};
  check_ok(kiln_launch(s, k, &c, args, 3));
}

static uint32_t busy_ref(uint32_t v, uint32_t rounds) {
  for (uint32_t i = 0; i < rounds; i++) v = v * LCG_MUL + LCG_ADD;
  return v;
}

/* Reads `buf` on `s` and fails the test, naming `what`, at the first
 * element that is not want[i]. */
static void expect_u32(kiln_stream *s, kiln_buffer *buf, const uint32_t *want,
                       size_t n, const char *what) {
  uint32_t *got = conf_alloc(n * 4);
  check_ok(kiln_buffer_read(s, buf, 0, got, n * 4));
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i])
      fail_msg("%s: element %zu is %u, expected %u: the copy did not run "
               "between the launches queued before and after it",
               what, i, got[i], want[i]);
  free(got);
}

/* The copy runs after the launches queued before it on both streams and
 * before those queued after it: a long kernel writes the source before
 * the copy, and one adds to it after; one writes the destination before,
 * and one adds to it after. Nothing is synchronized in between. Between
 * two contexts on their own streams, back on the default streams, and
 * within one context between two streams. */
static void copy_ordered_with_launches(void **state) {
  (void)state;
  enum { N = 1 << 16, ROUNDS = 256 };
  conf_rng r = conf_rng_for(__func__);
  kiln_context *cb = conf_second_context();
  size_t count;
  const kiln_module_image *images = conf_images(&count);
  kiln_module *mb = NULL;
  check_ok(kiln_module_create(cb, images, count, &mb));
  kiln_kernel *add_a = conf_kernel("conf_add_u32"),
              *busy_a = conf_kernel("conf_busy"), *add_b = NULL,
              *busy_b = NULL;
  check_ok(kiln_module_get_kernel(mb, "conf_add_u32", &add_b));
  check_ok(kiln_module_get_kernel(mb, "conf_busy", &busy_b));
  kiln_stream *sa = NULL, *sa2 = NULL, *sb = NULL;
  check_ok(kiln_stream_create(conf.ctx, &sa));
  check_ok(kiln_stream_create(conf.ctx, &sa2));
  check_ok(kiln_stream_create(cb, &sb));
  kiln_buffer *src = NULL, *src2 = NULL, *dst = NULL;
  check_ok(kiln_buffer_create(conf.ctx, N * 4, 0, &src));
  check_ok(kiln_buffer_create(conf.ctx, N * 4, 0, &src2));
  check_ok(kiln_buffer_create(cb, N * 4, 0, &dst));
  uint32_t *x = conf_alloc(N * 4), *y = conf_alloc(N * 4),
           *at_copy = conf_alloc(N * 4), *want = conf_alloc(N * 4);
  conf_random_bytes(&r, x, N * 4);
  conf_random_bytes(&r, y, N * 4);

  check_ok(kiln_buffer_write(sa, src, 0, x, N * 4));
  launch(sa, busy_a, src, N, ROUNDS);
  launch(sa, add_a, src, N, 1);
  check_ok(kiln_buffer_write(sb, dst, 0, y, N * 4));
  launch(sb, busy_b, dst, N, ROUNDS);
  check_ok(kiln_buffer_copy_peer(sb, dst, 0, sa, src, 0, N * 4));
  launch(sa, add_a, src, N, 100);
  launch(sb, add_b, dst, N, 1000);
  for (size_t i = 0; i < N; i++) at_copy[i] = busy_ref(x[i], ROUNDS) + 1;
  for (size_t i = 0; i < N; i++) want[i] = at_copy[i] + 1000;
  expect_u32(sb, dst, want, N, "the destination, between two contexts");
  for (size_t i = 0; i < N; i++) want[i] = at_copy[i] + 100;
  expect_u32(sa, src, want, N, "the source, between two contexts");

  /* B to A on the default streams (NULL); sa's and sb's work is done. */
  launch(NULL, busy_b, dst, N, ROUNDS);
  check_ok(kiln_buffer_copy_peer(NULL, src, 0, NULL, dst, 0, N * 4));
  launch(NULL, add_b, dst, N, 7);
  launch(NULL, add_a, src, N, 3);
  for (size_t i = 0; i < N; i++)
    at_copy[i] = busy_ref(at_copy[i] + 1000, ROUNDS);
  for (size_t i = 0; i < N; i++) want[i] = at_copy[i] + 3;
  expect_u32(NULL, src, want, N, "the destination, on default streams");
  for (size_t i = 0; i < N; i++) want[i] = at_copy[i] + 7;
  expect_u32(NULL, dst, want, N, "the source, on default streams");

  /* One context, two streams, the destination's busy for longer. */
  launch(sa, busy_a, src, N, ROUNDS);
  launch(sa2, busy_a, src2, N, 4 * ROUNDS);
  check_ok(kiln_buffer_copy_peer(sa2, src2, 0, sa, src, 0, N * 4));
  launch(sa, add_a, src, N, 5);
  launch(sa2, add_a, src2, N, 9);
  for (size_t i = 0; i < N; i++)
    at_copy[i] = busy_ref(at_copy[i] + 3, ROUNDS);
  for (size_t i = 0; i < N; i++) want[i] = at_copy[i] + 9;
  expect_u32(sa2, src2, want, N, "the destination, within one context");
  for (size_t i = 0; i < N; i++) want[i] = at_copy[i] + 5;
  expect_u32(sa, src, want, N, "the source, within one context");

  free(x);
  free(y);
  free(at_copy);
  free(want);
  check_ok(kiln_buffer_destroy(src));
  check_ok(kiln_buffer_destroy(src2));
  check_ok(kiln_buffer_destroy(dst));
  check_ok(kiln_stream_destroy(sa));
  check_ok(kiln_stream_destroy(sa2));
  check_ok(kiln_stream_destroy(sb));
  check_ok(kiln_module_destroy(mb));
  check_ok(kiln_context_destroy(cb));
}

/* A capturing stream on either side refuses the copy, which needs more
 * than one context's graph; a buffer whose context was destroyed is an
 * invalid handle. */
static void copy_refused(void **state) {
  (void)state;
  kiln_context *cb = conf_second_context();
  kiln_buffer *a = NULL, *b = NULL;
  kiln_stream *sa = NULL, *sb = NULL;
  check_ok(kiln_buffer_create(conf.ctx, 64, 0, &a));
  check_ok(kiln_buffer_create(cb, 64, 0, &b));
  check_ok(kiln_stream_create(conf.ctx, &sa));
  check_ok(kiln_stream_create(cb, &sb));
  kiln_graph *g = NULL;
  check_ok(kiln_stream_begin_capture(sa));
  check_fails(kiln_buffer_copy_peer(sa, a, 0, NULL, b, 0, 16),
              KILN_ERROR_INVALID_STATE);
  check_message_has("kiln_buffer_copy_peer");
  check_fails(kiln_buffer_copy_peer(NULL, b, 0, sa, a, 0, 16),
              KILN_ERROR_INVALID_STATE);
  check_ok(kiln_stream_end_capture(sa, &g));
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_stream_destroy(sa));
  check_ok(kiln_stream_destroy(sb));
  check_ok(kiln_buffer_destroy(a));
  check_fails(kiln_context_destroy(cb), KILN_ERROR_OBJECTS_ALIVE);
  kiln_buffer *c = NULL;
  check_ok(kiln_buffer_create(conf.ctx, 64, 0, &c));
  check_fails(kiln_buffer_copy_peer(NULL, c, 0, NULL, b, 0, 16),
              KILN_ERROR_INVALID_HANDLE);
  check_message_has("kiln_buffer_copy_peer");
  check_fails(kiln_buffer_copy_peer(NULL, b, 0, NULL, c, 0, 16),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_context_can_copy_peer(conf.ctx, cb, &(bool){false}),
              KILN_ERROR_INVALID_HANDLE);
  check_ok(kiln_buffer_destroy(c));
}

int conf_run_peer_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(peer_query),
      CONF_TEST(copy_edges),
      CONF_TEST(copy_large),
      CONF_TEST(copy_larger_than_the_slots),
      CONF_TEST(copy_through_host_memory),
      CONF_TEST(copies_between_contexts_that_come_and_go),
      CONF_TEST(copy_ordered_with_launches),
      CONF_TEST(copy_refused),
  };
  return cmocka_run_group_tests_name("peers", tests, NULL, NULL);
}
