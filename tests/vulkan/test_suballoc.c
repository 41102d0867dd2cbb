/* The Vulkan sub-allocator's books alone, without a device (ranges,
 * alignment, merging, size classes, ranges given back for later, blocks
 * dropped), each step checked against the books' invariants. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/vulkan/suballoc.h"
#include "tests/core/kiln_check.h"

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

int main(void) {
  const struct CMUnitTest books[] = {
      cmocka_unit_test(books_take_and_give),
      cmocka_unit_test(books_alignment),
      cmocka_unit_test(books_exact_fit),
      cmocka_unit_test(books_random),
      cmocka_unit_test(books_given_back_for_later),
      cmocka_unit_test(books_reclaim_now_and_then),
      cmocka_unit_test(books_whole_blocks_and_trim),
  };
  return cmocka_run_group_tests_name("vulkan-suballoc-books", books, NULL,
                                     NULL);
}
