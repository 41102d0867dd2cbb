/* Many buffers at once, as a program that allocates freely makes them: more
 * live buffers than drivers allow allocations (maxMemoryAllocationCount,
 * 4096 on several Vulkan drivers, which kiln's sub-allocator must not be
 * held to), buffers of every size made and destroyed in any order without
 * overlapping, memory freed behind work and handed out again only once the
 * work is done, and threads doing all of it on their own streams. Every
 * byte is checked on every backend; the Vulkan sub-allocator's own books
 * are tested in tests/vulkan/test_suballoc.c. */
#include <pthread.h>
#include <stdio.h>

#include "conformance.h"
#include "timing.h"

/* Word i of buffer `id`'s pattern at round `round`: no two buffers, and no
 * two words of one buffer, alike. */
static uint32_t pattern_word(uint64_t id, uint64_t round, size_t i) {
  uint64_t v =
      (id + 1) * 0x9e3779b97f4a7c15ull ^ (round + 1) * 0xbf58476d1ce4e5b9ull;
  v ^= (uint64_t)i * 0x94d049bb133111ebull;
  v ^= v >> 31;
  return (uint32_t)(v ^ (v >> 29));
}

static void fill_pattern(unsigned char *dst, size_t size, uint64_t id,
                         uint64_t round) {
  size_t i = 0;
  for (; i + 4 <= size; i += 4) {
    const uint32_t w = pattern_word(id, round, i / 4);
    memcpy(dst + i, &w, 4);
  }
  const uint32_t w = pattern_word(id, round, i / 4);
  memcpy(dst + i, &w, size - i);
}

/* 100 000 buffers of 256 bytes alive at once, each written with its own
 * pattern, then all read back. */
static void suballoc_many_small_buffers(void **state) {
  (void)state;
  enum { COUNT = 100000, SIZE = 256 };
  kiln_buffer **b = conf_alloc(COUNT * sizeof *b);
  unsigned char data[SIZE], got[SIZE];
  for (size_t i = 0; i < COUNT; i++) {
    check_ok(kiln_buffer_create(conf.ctx, SIZE, 0, &b[i]));
    fill_pattern(data, SIZE, i, 0);
    check_ok(kiln_buffer_write(NULL, b[i], 0, data, SIZE));
  }
  for (size_t i = 0; i < COUNT; i++) {
    fill_pattern(data, SIZE, i, 0);
    check_ok(kiln_buffer_read(NULL, b[i], 0, got, SIZE));
    if (memcmp(got, data, SIZE) != 0)
      fail_msg("buffer %zu of %d does not hold its own pattern", i, COUNT);
  }
  for (size_t i = 0; i < COUNT; i++) check_ok(kiln_buffer_destroy(b[i]));
  free(b);
}

static uint64_t address_of(const kiln_buffer *b) {
  kiln_native_buffer native;
  check_ok(kiln_buffer_get_native(b, &native));
  return native.device_address;
}

typedef struct live_buffer {
  kiln_buffer *buf;
  size_t size;
  uint64_t id;
} live_buffer;

/* Fails the test unless no two live buffers' device address ranges
 * overlap. */
static void check_disjoint(const live_buffer *live, size_t count) {
  for (size_t i = 0; i < count; i++) {
    if (!live[i].buf) continue;
    const uint64_t a = address_of(live[i].buf);
    for (size_t j = i + 1; j < count; j++) {
      if (!live[j].buf) continue;
      const uint64_t b = address_of(live[j].buf);
      if (a < b + live[j].size && b < a + live[i].size)
        fail_msg(
            "buffers of %zu and %zu bytes overlap: [0x%llx, +%zu) and "
            "[0x%llx, +%zu)",
            live[i].size, live[j].size, (unsigned long long)a, live[i].size,
            (unsigned long long)b, live[j].size);
    }
  }
}

/* Writes every live buffer's pattern for `round`, then reads them all
 * back: a buffer that shares memory with another holds the other's. */
static void write_all_then_check(const live_buffer *live, size_t count,
                                 uint64_t round) {
  size_t most = 0;
  for (size_t i = 0; i < count; i++)
    if (live[i].buf && live[i].size > most) most = live[i].size;
  unsigned char *data = conf_alloc(most + 4), *got = conf_alloc(most + 4);
  for (size_t i = 0; i < count; i++) {
    if (!live[i].buf) continue;
    fill_pattern(data, live[i].size, live[i].id, round);
    check_ok(kiln_buffer_write(NULL, live[i].buf, 0, data, live[i].size));
  }
  for (size_t i = 0; i < count; i++) {
    if (!live[i].buf) continue;
    fill_pattern(data, live[i].size, live[i].id, round);
    check_ok(kiln_buffer_read(NULL, live[i].buf, 0, got, live[i].size));
    char what[96];
    snprintf(what, sizeof what, "buffer %llu (%zu bytes) at round %llu",
             (unsigned long long)live[i].id, live[i].size,
             (unsigned long long)round);
    conf_check_bytes(got, data, live[i].size, what);
  }
  free(data);
  free(got);
}

/* A size of every kind: mostly small and odd, some of a few MiB, now and
 * then one that on Vulkan needs a block larger than the usual one. */
static size_t random_size(conf_rng *r) {
  switch (conf_below(r, 16)) {
  case 0: return 1 + conf_below(r, 4 << 20);
  case 1: return (size_t)(33 << 20) + conf_below(r, 15 << 20);
  case 2:
  case 3: return (size_t)1 << conf_below(r, 21);
  default: return 1 + conf_below(r, 70000);
  }
}

/* Buffers of many sizes created and destroyed in random order; every so
 * often each live one is written and all are read back, and no two
 * overlap. Two large ones live throughout: on Vulkan one in a block of
 * its own size class, one in memory of its own. */
static void suballoc_sizes_interleaved(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  enum { SLOTS = 96, STEPS = 1200, CHECK_EVERY = 200 };
  live_buffer live[SLOTS + 2] = {{0}};
  uint64_t next_id = 0;
  static const size_t large[2] = {(size_t)40 << 20, (size_t)140 << 20};
  for (size_t i = 0; i < 2; i++) {
    live[SLOTS + i].size = large[i];
    live[SLOTS + i].id = next_id++;
    check_ok(kiln_buffer_create(conf.ctx, large[i], 0, &live[SLOTS + i].buf));
  }
  for (unsigned step = 1; step <= STEPS; step++) {
    live_buffer *l = &live[conf_below(&r, SLOTS)];
    if (l->buf) {
      check_ok(kiln_buffer_destroy(l->buf));
      l->buf = NULL;
    } else {
      l->size = random_size(&r);
      l->id = next_id++;
      check_ok(kiln_buffer_create(conf.ctx, l->size, 0, &l->buf));
    }
    if (step % CHECK_EVERY == 0) {
      check_disjoint(live, SLOTS + 2);
      write_all_then_check(live, SLOTS + 2, step);
    }
  }
  for (size_t i = 0; i < SLOTS + 2; i++)
    if (live[i].buf) check_ok(kiln_buffer_destroy(live[i].buf));
}

/* A buffer destroyed right after a long kernel was queued on it: the
 * memory is not handed out again while the kernel may still write it, so
 * the buffer made next, zeroed and then written, holds exactly that. */
static void suballoc_reuse_after_work(void **state) {
  (void)state;
  enum { WORDS = 1 << 16 };
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  uint32_t *want = conf_alloc(WORDS * 4), *got = conf_alloc(WORDS * 4);
  size_t reused = 0;
  for (uint64_t round = 0; round < 4; round++) {
    kiln_buffer *a, *b;
    check_ok(kiln_buffer_create(conf.ctx, WORDS * 4, KILN_BUFFER_ZERO, &a));
    const uint64_t a_address = address_of(a);
    kiln_launch_config c = kiln_launch_config_1d(WORDS, 128);
    if (c.grid.x > 256) c.grid.x = 256;
    const kiln_arg args[3] = {kiln_arg_buffer(a, 0), kiln_arg_u32(WORDS),
                              kiln_arg_u32(2000)};
    check_ok(kiln_launch(s, conf_kernel("conf_busy"), &c, args, 3));
    check_ok(kiln_buffer_destroy(a));
    check_ok(kiln_buffer_create(conf.ctx, WORDS * 4, KILN_BUFFER_ZERO, &b));
    if (address_of(b) == a_address) reused++;
    check_ok(kiln_buffer_read(s, b, 0, got, WORDS * 4));
    for (size_t i = 0; i < WORDS; i++)
      if (got[i] != 0)
        fail_msg(
            "word %zu of a new zeroed buffer is 0x%x: the kernel on "
            "the buffer destroyed before it still wrote there",
            i, got[i]);
    fill_pattern((unsigned char *)want, WORDS * 4, round, 0);
    check_ok(kiln_buffer_write(s, b, 0, want, WORDS * 4));
    check_ok(kiln_stream_synchronize(s));
    check_ok(kiln_buffer_read(NULL, b, 0, got, WORDS * 4));
    conf_check_bytes(got, want, WORDS * 4, "the new buffer's pattern");
    check_ok(kiln_buffer_destroy(b));
  }
  print_message(
      "the memory of the buffer destroyed was handed out again "
      "in %zu of 4 rounds\n",
      reused);
  free(want);
  free(got);
  check_ok(kiln_stream_destroy(s));
}

/* ---- Threads ------------------------------------------------------------- */

#define SUBALLOC_THREADS 4
#define SUBALLOC_LIVE 8

typedef struct suballoc_worker {
  unsigned index, iters;
  uint64_t seed;
  char failure[320];
} suballoc_worker;

#define SW_CHECK(w, call)                                             \
  do {                                                                \
    kiln_status st_ = (call);                                         \
    if (st_ != KILN_OK && !(w)->failure[0])                           \
      snprintf((w)->failure, sizeof(w)->failure, "%s: %s: %s", #call, \
               kiln_status_name(st_), kiln_last_error());             \
  } while (0)

/* A thread with a stream of its own: buffers of random sizes made,
 * written and read back on that stream, some kept alive a while, the
 * others destroyed at once. */
static void *suballoc_thread(void *arg) {
  suballoc_worker *w = arg;
  conf_rng r = {w->seed};
  kiln_stream *s = NULL;
  SW_CHECK(w, kiln_stream_create(conf.ctx, &s));
  live_buffer live[SUBALLOC_LIVE] = {{0}};
  enum { MOST = 256 << 10 };
  unsigned char *data = malloc(MOST), *got = malloc(MOST);
  if (!data || !got) snprintf(w->failure, sizeof w->failure, "out of memory");
  for (unsigned it = 0; it < w->iters && !w->failure[0]; it++) {
    live_buffer *l = &live[conf_below(&r, SUBALLOC_LIVE)];
    if (l->buf) {
      SW_CHECK(w, kiln_buffer_destroy(l->buf));
      l->buf = NULL;
      continue;
    }
    l->size = 1 + conf_below(&r, conf_below(&r, 4) ? 4096 : MOST);
    l->id = (uint64_t)w->index << 32 | it;
    SW_CHECK(w, kiln_buffer_create(conf.ctx, l->size, 0, &l->buf));
    if (w->failure[0]) break;
    fill_pattern(data, l->size, l->id, 0);
    SW_CHECK(w, kiln_buffer_write(s, l->buf, 0, data, l->size));
    SW_CHECK(w, kiln_buffer_read(s, l->buf, 0, got, l->size));
    if (!w->failure[0] && memcmp(got, data, l->size) != 0)
      snprintf(w->failure, sizeof w->failure,
               "thread %u: a %zu-byte buffer read back on its stream does "
               "not hold what was written",
               w->index, l->size);
  }
  /* The kept ones once more: no other thread's buffer took their place. */
  for (size_t i = 0; i < SUBALLOC_LIVE; i++) {
    if (!live[i].buf) continue;
    if (!w->failure[0]) {
      fill_pattern(data, live[i].size, live[i].id, 0);
      SW_CHECK(w, kiln_buffer_read(s, live[i].buf, 0, got, live[i].size));
      if (!w->failure[0] && memcmp(got, data, live[i].size) != 0)
        snprintf(w->failure, sizeof w->failure,
                 "thread %u: a %zu-byte buffer kept alive no longer holds "
                 "its pattern",
                 w->index, live[i].size);
    }
    SW_CHECK(w, kiln_buffer_destroy(live[i].buf));
  }
  if (s) SW_CHECK(w, kiln_stream_destroy(s));
  free(data);
  free(got);
  return NULL;
}

/* KILN_CONF_THREAD_ITERS, as test_threads.c reads it, scaled down: these
 * iterations each make and check a buffer. */
static unsigned suballoc_iters(void) {
  const char *v = getenv("KILN_CONF_THREAD_ITERS");
  unsigned long n = v && *v ? strtoul(v, NULL, 10) : 2000;
  return n / 5 ? (unsigned)(n / 5) : 1u;
}

static void threads_suballoc_own_streams(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  suballoc_worker w[SUBALLOC_THREADS];
  conf_thread *t[SUBALLOC_THREADS];
  for (unsigned i = 0; i < SUBALLOC_THREADS; i++) {
    w[i] = (suballoc_worker){
        .index = i, .iters = suballoc_iters(), .seed = conf_next(&r) | 1};
    t[i] = conf_thread_start(suballoc_thread, &w[i]);
  }
  for (unsigned i = 0; i < SUBALLOC_THREADS; i++) {
    char what[64];
    snprintf(what, sizeof what, "sub-allocating thread %u", i);
    conf_thread_join(t[i], what);
  }
  for (unsigned i = 0; i < SUBALLOC_THREADS; i++)
    if (w[i].failure[0]) fail_msg("thread %u: %s", i, w[i].failure);
}

int conf_run_suballoc_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(suballoc_many_small_buffers),
      CONF_TEST(suballoc_sizes_interleaved),
      CONF_TEST(suballoc_reuse_after_work),
      CONF_TEST(threads_suballoc_own_streams),
  };
  return cmocka_run_group_tests_name("suballoc", tests, NULL, NULL);
}
