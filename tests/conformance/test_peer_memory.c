/* Copies between contexts and the memory behind them: where the
 * destination reads the source's own memory (Vulkan, two contexts on one
 * GPU), what it imports must follow that memory (released with it, never
 * found again for a block that takes its place, freed when either context
 * goes) and a copy longer than one of the copy kernel's pieces must land
 * whole. The copies themselves, at every edge, are test_peers.c's. */
#include <stdio.h>

#include "conformance.h"
#include "timing.h"

/* What kiln's debug log says of an import (Vulkan): made, released. */
static void count_imports(void) {
  conf_count_log_begin("imported into another context",
                       "into another context released");
}

/* Whether copies between conf.ctx and `other` should read the source's
 * own memory: two Vulkan contexts that share device memory, made with
 * KILN_VULKAN_PEER unset or auto. */
static bool expect_imports(kiln_context *other) {
  if (conf.backend != KILN_BACKEND_VULKAN) return false;
  const char *peer = getenv("KILN_VULKAN_PEER");
  if (peer && strcmp(peer, "auto") != 0) return false;
  bool direct = false;
  check_ok(kiln_context_can_copy_peer(conf.ctx, other, &direct));
  return direct;
}

/* Copies out of memory that is freed and handed out again in between,
 * both ways. Where the destination reads the source's own memory (Vulkan
 * on one GPU imports the source's block into the destination's device),
 * an import kept past its block's release would read that block's old
 * bytes: each round's source is new, with bytes that differ from every
 * earlier round's at each position, and large enough for memory of its
 * own (past Vulkan's largest shared block, a multiple of 4 bytes for the
 * copy kernel), which goes with it. There, each round must import anew,
 * and release the import when its source goes (kiln's debug log says
 * so): an import kept by the block's address alone would be found again
 * where a new block takes a freed one's place, only where the allocator
 * happens to reuse it. */
static void copies_out_of_reused_memory(void **state) {
  (void)state;
  const size_t n = ((size_t)129 << 20) + 256;
  kiln_context *other = conf_second_context();
  kiln_context *ends[2] = {conf.ctx, other};
  const bool imports = expect_imports(other);
  if (imports) count_imports();
  unsigned char *want = conf_alloc(n), *got = conf_alloc(n);
  for (int round = 0; round < 4; round++) {
    kiln_context *from = ends[round / 2], *to = ends[1 - round / 2];
    for (size_t i = 0; i < n; i++)
      want[i] = (unsigned char)(((i >> 2) * 2654435761u >> 24) + 37u * round);
    kiln_buffer *src, *dst;
    check_ok(kiln_buffer_create(from, n, 0, &src));
    check_ok(kiln_buffer_create(to, n, 0, &dst));
    check_ok(kiln_buffer_write(NULL, src, 0, want, n));
    check_ok(kiln_buffer_copy_peer(NULL, dst, 0, NULL, src, 0, n));
    check_ok(kiln_buffer_read(NULL, dst, 0, got, n));
    char what[96];
    snprintf(what, sizeof what, "round %d's copy of %zu bytes between "
             "contexts", round, n);
    conf_check_bytes(got, want, n, what);
    /* The source last: its memory is the last freed when the next
     * round's source, made first, asks for the same again. */
    check_ok(kiln_buffer_destroy(dst));
    check_ok(kiln_buffer_destroy(src));
    unsigned n[CONF_LOG_NEEDLES] = {0, 0};
    if (imports) conf_count_log_read(n);
    const unsigned want = (unsigned)round + 1;
    if (imports && (n[0] != want || n[1] != want)) {
      conf_count_log_end();
      fail_msg("after round %d, %u imports of a source's memory were made "
               "and %u released (expected %d each: one per copy, released "
               "with its source)",
               round, n[0], n[1], round + 1);
    }
  }
  if (imports) conf_count_log_end();
  free(want);
  free(got);
  check_ok(kiln_context_destroy(other));
}

/* Two contexts that copied between each other destroyed at once, on two
 * threads: whatever they keep for each other (Vulkan: slots of shared
 * memory, imports of each other's blocks) is freed by one of them, never
 * into a device the other has destroyed meanwhile. On Vulkan, with the
 * imports and (KILN_VULKAN_PEER=slots) through the slots. 40 rounds: a
 * destruction that did not wait for the other's frees crashed or freed
 * twice in every run of them on lavapipe (plain and under ASan). */
typedef struct destroyer {
  kiln_context *ctx;
  kiln_status status;
} destroyer;

static void *destroy_context(void *arg) {
  destroyer *d = arg;
  d->status = kiln_context_destroy(d->ctx);
  return NULL;
}

static void contexts_destroyed_at_once(void **state) {
  (void)state;
  const size_t n = ((size_t)2 << 20) + 64;
  unsigned char *bytes = conf_alloc(n), *got = conf_alloc(n);
  conf_rng r = conf_rng_for(__func__);
  for (int round = 0; round < 40; round++) {
    kiln_context *a, *b;
    conf_contexts_with_peer(round % 2 ? "slots" : "auto", &a, &b);
    kiln_buffer *ba, *bb;
    check_ok(kiln_buffer_create(a, n, 0, &ba));
    check_ok(kiln_buffer_create(b, n, 0, &bb));
    conf_random_bytes(&r, bytes, n);
    check_ok(kiln_buffer_write(NULL, ba, 0, bytes, n));
    check_ok(kiln_buffer_copy_peer(NULL, bb, 0, NULL, ba, 0, n));
    check_ok(kiln_buffer_copy_peer(NULL, ba, 0, NULL, bb, 0, n));
    check_ok(kiln_buffer_read(NULL, ba, 0, got, n));
    conf_check_bytes(got, bytes, n, "a copy there and back between contexts");
    check_ok(kiln_buffer_destroy(ba));
    check_ok(kiln_buffer_destroy(bb));
    destroyer d[2] = {{a, KILN_ERROR_BACKEND}, {b, KILN_ERROR_BACKEND}};
    conf_thread *t[2] = {conf_thread_start(destroy_context, &d[0]),
                         conf_thread_start(destroy_context, &d[1])};
    conf_thread_join(t[0], "destroying one of two contexts");
    conf_thread_join(t[1], "destroying the other");
    for (int i = 0; i < 2; i++)
      if (d[i].status != KILN_OK)
        fail_msg("round %d: kiln_context_destroy on a thread of its own: %s",
                 round, kiln_status_name(d[i].status));
  }
  free(bytes);
  free(got);
}

/* Byte i of the pattern copy_in_pieces writes: the top byte of a product
 * with an odd 64-bit constant, which every bit of i changes, so that no
 * stretch repeats at a power of two (a piece read from the wrong place
 * would then still match). */
static unsigned char piece_pattern(size_t i) {
  return (unsigned char)(((uint64_t)i * 0x9e3779b97f4a7c15ull) >> 56);
}

/* One copy between contexts longer than 256 MiB, the largest piece in
 * which Vulkan copies out of the source's own memory (its copy kernel
 * counts 32-bit words), at offsets that are multiples of 4 but not of a
 * piece: each piece lands where it belongs and the bytes around the copy
 * stay. Where the copy should read the source's memory, it must (one
 * import). Written and checked 64 MiB at a time, and only where the
 * device has room for both buffers three times over (lavapipe's 2 GiB
 * has). */
static void copy_in_pieces(void **state) {
  (void)state;
  const size_t n = ((size_t)256 << 20) + (256 << 10) + 12, at = 8, to_at = 4;
  const size_t total = n + 16, chunk = (size_t)64 << 20;
  if (conf.props.memory_bytes < 6 * (uint64_t)total) {
    print_message("%s has %llu bytes of memory, fewer than 6 x %zu\n",
                  conf.props.name, (unsigned long long)conf.props.memory_bytes,
                  total);
    skip();
  }
  kiln_context *other = conf_second_context();
  const bool imports = expect_imports(other);
  if (imports) count_imports();
  kiln_buffer *src, *dst;
  check_ok(kiln_buffer_create(other, total, 0, &src));
  check_ok(kiln_buffer_create(conf.ctx, total, 0, &dst));
  unsigned char *bytes = conf_alloc(chunk), *got = conf_alloc(chunk);
  for (size_t off = 0; off < total; off += chunk) {
    const size_t len = total - off < chunk ? total - off : chunk;
    for (size_t i = 0; i < len; i++) bytes[i] = piece_pattern(off + i);
    check_ok(kiln_buffer_write(NULL, src, off, bytes, len));
  }
  const unsigned char fill = 0xa5u;
  check_ok(kiln_buffer_fill(NULL, dst, 0, total, &fill, 1));
  check_ok(kiln_buffer_copy_peer(NULL, dst, to_at, NULL, src, at, n));
  for (size_t off = 0; off < total; off += chunk) {
    const size_t len = total - off < chunk ? total - off : chunk;
    for (size_t i = 0; i < len; i++) {
      const size_t j = off + i;
      bytes[i] = j >= to_at && j < to_at + n
                     ? piece_pattern(j - to_at + at)
                     : (unsigned char)0xa5u;
    }
    check_ok(kiln_buffer_read(NULL, dst, off, got, len));
    char what[96];
    snprintf(what, sizeof what, "bytes %zu to %zu of a copy of %zu bytes",
             off, off + len, n);
    conf_check_bytes(got, bytes, len, what);
  }
  check_ok(kiln_buffer_destroy(src));
  check_ok(kiln_buffer_destroy(dst));
  if (imports) {
    unsigned n[CONF_LOG_NEEDLES];
    conf_count_log_read(n);
    conf_count_log_end();
    if (n[0] != 1)
      fail_msg("%u imports of the source's memory were made for one copy "
               "(expected 1: the copy reads the source's own memory)",
               n[0]);
  }
  free(bytes);
  free(got);
  check_ok(kiln_context_destroy(other));
}

int conf_run_peer_memory_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(copies_out_of_reused_memory),
      CONF_TEST(contexts_destroyed_at_once),
      CONF_TEST(copy_in_pieces),
  };
  return cmocka_run_group_tests_name("peer-memory", tests, NULL, NULL);
}
