/* The Vulkan sub-allocator: its books alone, without a device (ranges,
 * alignment, merging, size classes, ranges given back for later, blocks
 * dropped), each step checked against the books' invariants; then, on a
 * device where there is one, the pools under a context: a range given
 * back for later stays out of use until the stream's timeline passes its
 * value, and a pool that has no room gives back what it holds, tries
 * again, then fails in words and stays usable. The device part runs with
 * the validation layer on (meson.build) and fails on its messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/vulkan/suballoc.h"
#include "backends/vulkan/vulkan.h"
#include "tests/core/kiln_check.h"
#include "validation_log.h"

#define G KILN_VULKAN_SUBALLOC_GRANULE
#define MIB ((uint64_t)1 << 20)

/* ---- A fake owner: timelines are counters, memory is a number ------------ */

typedef struct fake_owner {
  uint64_t timeline[4]; /* what each key (&timeline[i]) has reached */
  unsigned polls, releases, drops;
  uint64_t released_handles; /* the sum of the handles released */
  uint64_t dropped_bytes;
} fake_owner;

static uint64_t fake_reached(void *arg, void *key) {
  fake_owner *f = arg;
  f->polls++;
  return *(uint64_t *)key;
}

static void fake_release(void *arg, kiln_vulkan_suballoc_range *r) {
  fake_owner *f = arg;
  f->releases++;
  f->released_handles += r->handle;
}

static void fake_drop(void *arg, kiln_vulkan_suballoc_block *b) {
  fake_owner *f = arg;
  f->drops++;
  f->dropped_bytes += b->size;
}

static kiln_vulkan_suballoc_owner owner_for(fake_owner *f) {
  return (kiln_vulkan_suballoc_owner){fake_reached, fake_release, fake_drop, f};
}

/* The books' invariants: each block's ranges tile it in address order,
 * no two free ranges touch, `used` is what is not free, every free range
 * is in the list of its class and every list's bit is set; the empty
 * list and its bytes agree with the blocks. */
static void check_books(const kiln_vulkan_suballoc *a) {
  size_t blocks = 0, free_ranges = 0, listed = 0;
  uint64_t bytes = 0, empty = 0;
  for (const kiln_vulkan_suballoc_block *b = a->blocks; b; b = b->next) {
    blocks++;
    bytes += b->size;
    uint64_t at = 0, used = 0;
    const kiln_vulkan_suballoc_range *prev = NULL;
    for (const kiln_vulkan_suballoc_range *r = b->first; r; r = r->after) {
      assert_ptr_equal(r->block, b);
      assert_ptr_equal(r->before, prev);
      assert_int_equal(r->offset, at);
      assert_int_not_equal(r->size, 0);
      if (!b->whole) {
        assert_int_equal(r->offset % G, 0);
        assert_int_equal(r->size % G, 0);
      }
      if (r->state == KILN_VULKAN_SUBALLOC_FREE) {
        free_ranges++;
        assert_false(prev && prev->state == KILN_VULKAN_SUBALLOC_FREE);
      } else {
        used += r->size;
      }
      at += r->size;
      prev = r;
    }
    assert_int_equal(at, b->size);
    assert_int_equal(used, b->used);
    if (b->used == 0 && !b->whole) empty += b->size;
  }
  assert_int_equal(blocks, a->block_count);
  assert_int_equal(bytes, a->block_bytes);
  assert_int_equal(empty, a->empty_bytes);
  uint64_t empty_listed = 0;
  for (const kiln_vulkan_suballoc_block *b = a->empty; b; b = b->empty_next) {
    assert_int_equal(b->used, 0);
    empty_listed += b->size;
  }
  assert_int_equal(empty_listed, a->empty_bytes);
  for (unsigned fl = 0; fl < KILN_VULKAN_SUBALLOC_FL; fl++)
    for (unsigned sl = 0; sl < KILN_VULKAN_SUBALLOC_SL; sl++) {
      const bool bit = (a->sl_bitmap[fl] >> sl) & 1;
      assert_int_equal(bit, a->free[fl][sl] != NULL);
      if (bit) assert_true((a->fl_bitmap >> fl) & 1);
      for (const kiln_vulkan_suballoc_range *r = a->free[fl][sl]; r;
           r = r->next) {
        assert_int_equal(r->state, KILN_VULKAN_SUBALLOC_FREE);
        listed++;
      }
    }
  assert_int_equal(listed, free_ranges);
  size_t waiting = 0;
  for (const kiln_vulkan_suballoc_range *r = a->waiting; r; r = r->next)
    waiting++;
  assert_int_equal(waiting, a->waiting_count);
}

static kiln_vulkan_suballoc_range *take(kiln_vulkan_suballoc *a,
                                        const kiln_vulkan_suballoc_owner *o,
                                        uint64_t size, uint64_t align) {
  kiln_vulkan_suballoc_range *r;
  check_ok(kiln_vulkan_suballoc_take(a, size, align, o, &r));
  return r;
}

/* Ranges are handed out without overlap, rounded to the granule, and all
 * given back leave one free range: the block is empty again. */
static void books_take_and_give(void **state) {
  (void)state;
  fake_owner f = {0};
  const kiln_vulkan_suballoc_owner o = owner_for(&f);
  kiln_vulkan_suballoc a;
  kiln_vulkan_suballoc_init(&a);
  assert_null(take(&a, &o, 1, 1));
  kiln_vulkan_suballoc_block *b;
  check_ok(kiln_vulkan_suballoc_add_block(&a, MIB, 7, NULL, 3, &b));
  enum { N = MIB / G };
  kiln_vulkan_suballoc_range *r[N];
  for (size_t i = 0; i < N; i++) {
    r[i] = take(&a, &o, i % 2 ? G : 1, 1);
    assert_non_null(r[i]);
    assert_int_equal(r[i]->size, G);
  }
  check_books(&a);
  assert_null(take(&a, &o, 1, 1)); /* full */
  assert_int_equal(b->used, MIB);
  assert_int_equal(a.empty_bytes, 0);
  /* Every other one, then the rest: each merges with both neighbours. */
  for (size_t i = 0; i < N; i += 2) kiln_vulkan_suballoc_give(&a, r[i], &o);
  check_books(&a);
  for (size_t i = 1; i < N; i += 2) kiln_vulkan_suballoc_give(&a, r[i], &o);
  check_books(&a);
  assert_int_equal(b->first->size, MIB);
  assert_null(b->first->after);
  assert_int_equal(a.empty_bytes, MIB);
  assert_int_equal(f.drops, 0);
  kiln_vulkan_suballoc_deinit(&a, &o);
  assert_int_equal(f.drops, 1);
  assert_int_equal(f.dropped_bytes, MIB);
}

/* An alignment beyond the granule is honoured, and the padding before the
 * range stays free for smaller requests. */
static void books_alignment(void **state) {
  (void)state;
  fake_owner f = {0};
  const kiln_vulkan_suballoc_owner o = owner_for(&f);
  kiln_vulkan_suballoc a;
  kiln_vulkan_suballoc_init(&a);
  check_ok(kiln_vulkan_suballoc_add_block(&a, 4 * MIB, 1, NULL, 0, NULL));
  kiln_vulkan_suballoc_range *first = take(&a, &o, 300, 1);
  kiln_vulkan_suballoc_range *aligned = take(&a, &o, 5000, 65536);
  assert_non_null(aligned);
  assert_int_equal(aligned->offset % 65536, 0);
  assert_int_equal(aligned->size, 5120);
  check_books(&a);
  /* The padding between them holds a small range. */
  kiln_vulkan_suballoc_range *small = take(&a, &o, G, 1);
  assert_true(small->offset > first->offset && small->offset < aligned->offset);
  for (uint64_t align = G; align <= MIB; align *= 2) {
    kiln_vulkan_suballoc_range *r = take(&a, &o, align / 2 + 1, align);
    assert_non_null(r);
    assert_int_equal(r->offset % align, 0);
  }
  check_books(&a);
  kiln_vulkan_suballoc_deinit(&a, &o);
}

/* A free range the exact size of the request is found, though its class
 * also holds sizes that would not fit: no new block for want of a look. */
static void books_exact_fit(void **state) {
  (void)state;
  fake_owner f = {0};
  const kiln_vulkan_suballoc_owner o = owner_for(&f);
  kiln_vulkan_suballoc a;
  kiln_vulkan_suballoc_init(&a);
  /* 35 granules: its class, of sizes 34 and 35, is below the first
   * class that surely holds 35. */
  check_ok(kiln_vulkan_suballoc_add_block(&a, 35 * G, 1, NULL, 0, NULL));
  kiln_vulkan_suballoc_range *r = take(&a, &o, 35 * G, 1);
  assert_non_null(r);
  assert_int_equal(r->offset, 0);
  assert_null(take(&a, &o, 1, 1));
  kiln_vulkan_suballoc_give(&a, r, &o);
  /* An alignment the range's start already has asks nothing more. */
  r = take(&a, &o, 35 * G, 4096);
  assert_non_null(r);
  check_books(&a);
  kiln_vulkan_suballoc_deinit(&a, &o);
}

static uint64_t next_random(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Random sizes and alignments taken and given back in random order over
 * several blocks: the invariants hold after every step, taken ranges
 * never overlap, and at the end every block is one free range again. */
static void books_random(void **state) {
  (void)state;
  fake_owner f = {0};
  const kiln_vulkan_suballoc_owner o = owner_for(&f);
  kiln_vulkan_suballoc a;
  kiln_vulkan_suballoc_init(&a);
  for (int i = 0; i < 3; i++)
    check_ok(kiln_vulkan_suballoc_add_block(&a, 8 * MIB, (uint64_t)i, NULL, 0,
                                            NULL));
  enum { LIVE = 400, STEPS = 6000 };
  kiln_vulkan_suballoc_range *live[LIVE] = {0};
  uint64_t want[LIVE] = {0}, seed = 0x9e3779b97f4a7c15ull;
  size_t taken = 0, refused = 0;
  for (int step = 0; step < STEPS; step++) {
    size_t i = next_random(&seed) % LIVE;
    if (live[i]) {
      kiln_vulkan_suballoc_give(&a, live[i], &o);
      live[i] = NULL;
    } else {
      const uint64_t r = next_random(&seed);
      uint64_t size = r % 4 == 0 ? 1 + r % (512 << 10) : 1 + r % 8192;
      uint64_t align = (uint64_t)1 << ((r >> 20) % 17);
      live[i] = take(&a, &o, size, align);
      if (!live[i]) {
        refused++;
        continue;
      }
      taken++;
      assert_true(live[i]->size >= size);
      assert_int_equal(live[i]->offset % (align > G ? align : G), 0);
      want[i] = (size + G - 1) & ~(G - 1);
      assert_int_equal(live[i]->size, want[i]);
    }
    if (step % 64 == 0) check_books(&a);
  }
  check_books(&a);
  assert_true(taken > STEPS / 4);
  for (size_t i = 0; i < LIVE; i++)
    for (size_t j = i + 1; live[i] && j < LIVE; j++)
      if (live[j] && live[j]->block == live[i]->block)
        assert_true(live[i]->offset + live[i]->size <= live[j]->offset ||
                    live[j]->offset + live[j]->size <= live[i]->offset);
  for (size_t i = 0; i < LIVE; i++)
    if (live[i]) kiln_vulkan_suballoc_give(&a, live[i], &o);
  check_books(&a);
  assert_int_equal(a.empty_bytes, 3 * 8 * MIB);
  for (kiln_vulkan_suballoc_block *b = a.blocks; b; b = b->next)
    assert_null(b->first->after);
  print_message("%zu ranges taken, %zu requests found no room\n", taken,
                refused);
  kiln_vulkan_suballoc_deinit(&a, &o);
}

/* A range given back for later stays out of use until its timeline
 * reaches the value; a take short of room reclaims it then, polling each
 * timeline once, and the owner frees its handle and key. */
static void books_given_back_for_later(void **state) {
  (void)state;
  fake_owner f = {0};
  const kiln_vulkan_suballoc_owner o = owner_for(&f);
  kiln_vulkan_suballoc a;
  kiln_vulkan_suballoc_init(&a);
  check_ok(kiln_vulkan_suballoc_add_block(&a, 8 * G, 1, NULL, 0, NULL));
  kiln_vulkan_suballoc_range *r[8];
  for (int i = 0; i < 8; i++) r[i] = take(&a, &o, G, 1);
  /* Four on timeline 0 at values 1..4, four on timeline 1 at 10. */
  for (int i = 0; i < 4; i++)
    kiln_vulkan_suballoc_give_after(&a, r[i], &f.timeline[0], (uint64_t)i + 1,
                                    100 + (uint64_t)i);
  for (int i = 4; i < 8; i++)
    kiln_vulkan_suballoc_give_after(&a, r[i], &f.timeline[1], 10, 1);
  check_books(&a);
  assert_null(take(&a, &o, G, 1));
  assert_int_equal(f.polls, 2); /* one poll per timeline */
  assert_int_equal(f.releases, 0);
  f.timeline[0] = 2;
  kiln_vulkan_suballoc_range *again = take(&a, &o, 2 * G, 1);
  assert_non_null(again);
  assert_int_equal(f.releases, 2);
  assert_int_equal(f.released_handles, 100 + 101);
  assert_int_equal(again->offset, 0); /* where r[0] and r[1] were */
  assert_int_equal(a.waiting_count, 6);
  check_books(&a);
  assert_null(take(&a, &o, G, 1));
  f.timeline[1] = 10;
  assert_int_equal(kiln_vulkan_suballoc_reclaim(&a, &o, false), 4);
  assert_int_equal(a.waiting_count, 2);
  check_books(&a);
  /* The rest go at deinit, as if the work were over. */
  kiln_vulkan_suballoc_deinit(&a, &o);
  assert_int_equal(f.releases, 8);
}

/* Frees for later that pile up are looked at without a shortage of
 * room, so the list stays short and the room comes back. */
static void books_reclaim_now_and_then(void **state) {
  (void)state;
  fake_owner f = {0};
  const kiln_vulkan_suballoc_owner o = owner_for(&f);
  kiln_vulkan_suballoc a;
  kiln_vulkan_suballoc_init(&a);
  check_ok(kiln_vulkan_suballoc_add_block(&a, 64 * MIB, 1, NULL, 0, NULL));
  f.timeline[0] = 1000;
  size_t most = 0;
  for (int i = 0; i < 1000; i++) {
    kiln_vulkan_suballoc_range *r = take(&a, &o, 4096, 1);
    assert_non_null(r);
    kiln_vulkan_suballoc_give_after(&a, r, &f.timeline[0], 1, 0);
    if (a.waiting_count > most) most = a.waiting_count;
  }
  assert_true(most <= 64);
  assert_true(f.releases >= 1000 - 64);
  check_books(&a);
  kiln_vulkan_suballoc_deinit(&a, &o);
}

/* A whole block is one range for one resource: dropped when given back,
 * also for later; empty blocks beyond what is kept are dropped. */
static void books_whole_blocks_and_trim(void **state) {
  (void)state;
  fake_owner f = {0};
  const kiln_vulkan_suballoc_owner o = owner_for(&f);
  kiln_vulkan_suballoc a;
  kiln_vulkan_suballoc_init(&a);
  kiln_vulkan_suballoc_range *whole, *later;
  check_ok(kiln_vulkan_suballoc_add_whole(&a, 1000, 1, NULL, 0, &whole));
  check_ok(kiln_vulkan_suballoc_add_whole(&a, 3 * MIB + 3, 2, NULL, 0, &later));
  assert_int_equal(whole->size, 1000);
  assert_int_equal(a.empty_bytes, 0);
  /* Never handed out to others. */
  assert_null(take(&a, &o, 1, 1));
  kiln_vulkan_suballoc_give(&a, whole, &o);
  assert_int_equal(f.drops, 1);
  assert_int_equal(a.block_count, 1);
  kiln_vulkan_suballoc_give_after(&a, later, &f.timeline[2], 5, 9);
  f.timeline[2] = 5;
  assert_int_equal(kiln_vulkan_suballoc_reclaim(&a, &o, false), 1);
  assert_int_equal(f.drops, 2);
  assert_int_equal(a.block_count, 0);
  for (int i = 0; i < 3; i++)
    check_ok(kiln_vulkan_suballoc_add_block(&a, MIB, 1, NULL, 0, NULL));
  kiln_vulkan_suballoc_trim(&a, MIB, &o);
  assert_int_equal(a.block_count, 1);
  assert_int_equal(a.empty_bytes, MIB);
  kiln_vulkan_suballoc_trim(&a, 0, &o);
  assert_int_equal(a.block_count, 0);
  assert_int_equal(f.drops, 5);
  check_books(&a);
  kiln_vulkan_suballoc_deinit(&a, &o);
}

/* ---- The pools under a context ------------------------------------------ */

static kiln_context *ctx;
static int device_setup(void **state) {
  (void)state;
  const char *reason;
  if (kiln_backend_available(KILN_BACKEND_VULKAN, &reason) != KILN_OK)
    return 0; /* each test says it is skipped, and why */
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_VULKAN;
  return kiln_context_create(&o, &ctx) == KILN_OK ? 0 : -1;
}

static int device_teardown(void **state) {
  (void)state;
  kiln_context *c = ctx;
  ctx = NULL;
  if (c && kiln_context_destroy(c) != KILN_OK) return -1;
  return vk_test_validation_messages == 0 ? 0 : -1;
}

static kiln_vulkan_context *vulkan_context(void) {
  if (!ctx) kiln_skip("Vulkan is unavailable here");
  return kiln_vulkan_context_cast(ctx);
}

static void allocate(kiln_vulkan_context *vc, VkDeviceSize size,
                     kiln_vulkan_allocation *out) {
  check_ok(
      kiln_vulkan_allocate(vc, size, KILN_VULKAN_MEMORY_DEVICE, true, out));
  assert_non_null(out->range);
}

/* Makes the stream's timeline pass everything submitted so far and one
 * submission more. */
static void stream_passes_next(kiln_stream *s, kiln_buffer *b) {
  const uint32_t zero = 0;
  check_ok(kiln_buffer_fill(s, b, 0, 4, &zero, 4));
  check_ok(kiln_stream_synchronize(s));
}

/* Fills what is left of `block` after its used bytes with `n` ranges of
 * equal size (the last takes the rest), into pieces[0 .. n); true when
 * every one went to that block. A driver may give large buffers memory of
 * their own (prefersDedicatedAllocation: NVIDIA's did for half a 64 MiB
 * block), so the caller tries smaller pieces until they share it; false
 * leaves nothing allocated. */
static bool fill_block(kiln_vulkan_context *vc,
                       const kiln_vulkan_suballoc_block *block, size_t n,
                       kiln_vulkan_allocation *pieces) {
  const uint64_t left = block->size - block->used;
  const uint64_t each = left / n / G * G;
  if (each == 0) return false;
  size_t made = 0;
  bool shared = true;
  for (; made < n && shared; made++) {
    const uint64_t size = made + 1 < n ? each : left - each * (n - 1);
    allocate(vc, size, &pieces[made]);
    shared = pieces[made].range->block == block;
  }
  if (!shared)
    while (made > 0) kiln_vulkan_free(vc, &pieces[--made]);
  return shared;
}

#define MOST_PIECES 16

/* Memory given back for later is not handed out before the stream's
 * timeline reaches the value (the pool would rather fail), and is once it
 * has; the pool then fails in words when it has no room, gives back what
 * it holds and tries again, and stays usable. */
static void pool_given_back_for_later(void **state) {
  (void)state;
  kiln_vulkan_context *vc = vulkan_context();
  kiln_stream *s;
  kiln_buffer *small;
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_buffer_create(ctx, 4, 0, &small));
  kiln_vulkan_stream *vs = kiln_vulkan_stream_cast(s);
  /* The small buffer's block, filled to the last granule: pieces[0] (a)
   * and the rest. */
  const kiln_vulkan_suballoc_block *block =
      kiln_vulkan_buffer_cast(small)->alloc.range->block;
  kiln_vulkan_allocation pieces[MOST_PIECES], c, d;
  size_t n = 2;
  while (n <= MOST_PIECES && !fill_block(vc, block, n, pieces)) n *= 2;
  if (n > MOST_PIECES)
    fail_msg("the small buffer's block of %llu bytes (%llu used) could not "
             "be filled with up to %d ranges of its own",
             (unsigned long long)block->size,
             (unsigned long long)block->used, MOST_PIECES);
  print_message("the block of %llu bytes filled with %zu ranges of %llu\n",
                (unsigned long long)block->size, n,
                (unsigned long long)pieces[0].range->size);
  assert_int_equal(block->used, block->size);
  kiln_vulkan_allocation *a = &pieces[0];
  const uint64_t a_size = a->range->size;
  const VkDeviceMemory a_memory = a->memory;
  const VkDeviceSize a_offset = a->memory_offset;
  /* No new memory from now on, in the block's type or any other. */
  vc->memory.test_type = block->type;
  vc->memory.test_limit = 1;
  kiln_vulkan_stream_lock(vs);
  const uint64_t until = vs->submitted + 1;
  kiln_vulkan_stream_unlock(vs);
  kiln_vulkan_free_after(vc, a, vs->timeline, until);
  assert_null(a->range);
  kiln_clear_error();
  assert_int_equal(
      kiln_vulkan_allocate(vc, a_size, KILN_VULKAN_MEMORY_DEVICE, true, &c),
      KILN_ERROR_OUT_OF_DEVICE_MEMORY);
  check_message_has("vkAllocateMemory");
  check_message_has("memory type");
  check_message_has("heap");
  check_message_has("VK_ERROR_OUT_OF_DEVICE_MEMORY");
  print_message("no room: %s\n", kiln_last_error());
  assert_null(c.buffer);
  stream_passes_next(s, small);
  allocate(vc, a_size, &c);
  assert_ptr_equal(c.memory, a_memory);
  assert_int_equal(c.memory_offset, a_offset);
  /* Given back at once, the room is there for the next: only there, as
   * c found none elsewhere. */
  kiln_vulkan_free(vc, &c);
  allocate(vc, a_size, &d);
  assert_ptr_equal(d.memory, a_memory);
  vc->memory.test_limit = 0;
  kiln_vulkan_free(vc, &d);
  /* The rest left waiting on a stream that goes first: the pool keeps the
   * stream's timeline alive, and frees them at the context's end. */
  kiln_vulkan_stream_lock(vs);
  const uint64_t later = vs->submitted + 100;
  kiln_vulkan_stream_unlock(vs);
  for (size_t i = 1; i < n; i++)
    kiln_vulkan_free_after(vc, &pieces[i], vs->timeline, later);
  check_ok(kiln_buffer_destroy(small));
  check_ok(kiln_stream_destroy(s));
}

/* An empty block kept is given back to the driver when a request finds
 * no room for a block of its own: the try after that succeeds. */
static void pool_gives_back_empty_blocks(void **state) {
  (void)state;
  kiln_vulkan_context *vc = vulkan_context();
  /* A 64 MiB block, which then stays, empty. */
  kiln_vulkan_allocation small, large;
  allocate(vc, MIB, &small);
  vc->memory.test_type = small.range->block->type;
  kiln_vulkan_free(vc, &small);
  /* 100 MiB are given a block of 256 MiB, or of 128 where that does not
   * fit; beside the 64 kept, neither fits under 160. */
  vc->memory.test_limit = 160 * MIB;
  allocate(vc, 100 * MIB, &large);
  /* Only the block just made is left: with the one kept, 64 MiB would
   * fit in it. */
  kiln_vulkan_allocation again;
  vc->memory.test_limit = 128 * MIB;
  kiln_clear_error();
  assert_int_equal(kiln_vulkan_allocate(vc, 64 * MIB, KILN_VULKAN_MEMORY_DEVICE,
                                        true, &again),
                   KILN_ERROR_OUT_OF_DEVICE_MEMORY);
  vc->memory.test_limit = 0;
  kiln_vulkan_free(vc, &large);
}

int main(void) {
  kiln_set_log_handler(vk_test_on_log, NULL);
  if (kiln_get_log_level() < KILN_LOG_ERROR) kiln_set_log_level(KILN_LOG_ERROR);
  const struct CMUnitTest books[] = {
      cmocka_unit_test(books_take_and_give),
      cmocka_unit_test(books_alignment),
      cmocka_unit_test(books_exact_fit),
      cmocka_unit_test(books_random),
      cmocka_unit_test(books_given_back_for_later),
      cmocka_unit_test(books_reclaim_now_and_then),
      cmocka_unit_test(books_whole_blocks_and_trim),
  };
  /* Each on a context of its own, whose pools hold nothing of another
   * test's (on the H200 the second found the first's blocks, and its
   * ranges went to them), and where a limit left by a test that failed
   * half-way goes with its context. The second leaves memory waiting
   * until the context's end. */
  const struct CMUnitTest pools[] = {
      cmocka_unit_test_setup_teardown(pool_gives_back_empty_blocks,
                                      device_setup, device_teardown),
      cmocka_unit_test_setup_teardown(pool_given_back_for_later, device_setup,
                                      device_teardown),
  };
  int failed =
      cmocka_run_group_tests_name("vulkan-suballoc-books", books, NULL, NULL);
  failed +=
      cmocka_run_group_tests_name("vulkan-suballoc-pools", pools, NULL, NULL);
  if (vk_test_validation_messages)
    fprintf(stderr, "%d Vulkan validation messages\n", vk_test_validation_messages);
  return failed || vk_test_validation_messages ? 1 : 0;
}
