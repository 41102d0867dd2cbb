/* The sub-allocator's books (suballoc.h says how they are kept). Past 600
 * lines for a reason: the free ranges, kept both by size and by address,
 * and the blocks' counts are one structure whose every operation keeps
 * the two orders in step; split, those invariants would span files. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/suballoc.h"
#include "core/backend.h"

#define G KILN_VULKAN_SUBALLOC_GRANULE
#define FL KILN_VULKAN_SUBALLOC_FL
#define SL KILN_VULKAN_SUBALLOC_SL
#define SL_LOG2 KILN_VULKAN_SUBALLOC_SL_LOG2

#define FREE KILN_VULKAN_SUBALLOC_FREE
#define TAKEN KILN_VULKAN_SUBALLOC_TAKEN
#define WAITING KILN_VULKAN_SUBALLOC_WAITING

/* Range records come in slabs: one malloc per 256 ranges, not per range. */
#define SLAB_RANGES 256

typedef struct slab {
  struct slab *next;
  kiln_vulkan_suballoc_range ranges[SLAB_RANGES];
} slab;

static unsigned floor_log2(uint64_t v) {
#if defined(__GNUC__)
  return 63u - (unsigned)__builtin_clzll(v);
#else
  unsigned n = 0;
  while (v >>= 1) n++;
  return n;
#endif
}

static unsigned lowest_bit(uint32_t v) {
#if defined(__GNUC__)
  return (unsigned)__builtin_ctz(v);
#else
  unsigned n = 0;
  while (!(v & 1)) v >>= 1, n++;
  return n;
#endif
}

/* The class of a range of g > 0 granules. *fl may come out as FL for a
 * size no class holds. */
static void class_of(uint64_t g, unsigned *fl, unsigned *sl) {
  if (g < SL) {
    *fl = 0;
    *sl = (unsigned)g;
    return;
  }
  const unsigned f = floor_log2(g);
  *fl = f - SL_LOG2 + 1;
  *sl = (unsigned)(g >> (f - SL_LOG2)) - SL;
}

/* The first class whose every range holds g granules. */
static void class_above(uint64_t g, unsigned *fl, unsigned *sl) {
  if (g >= SL) g += ((uint64_t)1 << (floor_log2(g) - SL_LOG2)) - 1;
  class_of(g, fl, sl);
}

static void insert_free(kiln_vulkan_suballoc *a,
                        kiln_vulkan_suballoc_range *r) {
  unsigned fl, sl;
  class_of(r->size / G, &fl, &sl);
  r->state = FREE;
  r->prev = NULL;
  r->next = a->free[fl][sl];
  if (r->next) r->next->prev = r;
  a->free[fl][sl] = r;
  a->sl_bitmap[fl] |= (uint16_t)(1u << sl);
  a->fl_bitmap |= 1u << fl;
}

static void remove_free(kiln_vulkan_suballoc *a,
                        kiln_vulkan_suballoc_range *r) {
  unsigned fl, sl;
  class_of(r->size / G, &fl, &sl);
  if (r->prev)
    r->prev->next = r->next;
  else
    a->free[fl][sl] = r->next;
  if (r->next) r->next->prev = r->prev;
  if (!a->free[fl][sl]) {
    a->sl_bitmap[fl] &= (uint16_t) ~(1u << sl);
    if (!a->sl_bitmap[fl]) a->fl_bitmap &= ~(1u << fl);
  }
}

/* At least `n` spare records, so that a take cannot fail half-way. */
static bool reserve(kiln_vulkan_suballoc *a, unsigned n) {
  unsigned have = 0;
  for (kiln_vulkan_suballoc_range *r = a->spare; r && have < n; r = r->next)
    have++;
  if (have >= n) return true;
  slab *s = malloc(sizeof *s);
  if (!s) return false;
  s->next = a->slabs;
  a->slabs = s;
  for (size_t i = 0; i < SLAB_RANGES; i++) {
    s->ranges[i].next = a->spare;
    a->spare = &s->ranges[i];
  }
  return true;
}

static kiln_vulkan_suballoc_range *new_range(kiln_vulkan_suballoc *a) {
  kiln_vulkan_suballoc_range *r = a->spare;
  a->spare = r->next;
  memset(r, 0, sizeof *r);
  return r;
}

static void free_range(kiln_vulkan_suballoc *a, kiln_vulkan_suballoc_range *r) {
  r->next = a->spare;
  a->spare = r;
}

static void empty_insert(kiln_vulkan_suballoc *a,
                         kiln_vulkan_suballoc_block *b) {
  b->empty_prev = NULL;
  b->empty_next = a->empty;
  if (a->empty) a->empty->empty_prev = b;
  a->empty = b;
  a->empty_bytes += b->size;
}

static void empty_remove(kiln_vulkan_suballoc *a,
                         kiln_vulkan_suballoc_block *b) {
  if (b->empty_prev)
    b->empty_prev->empty_next = b->empty_next;
  else
    a->empty = b->empty_next;
  if (b->empty_next) b->empty_next->empty_prev = b->empty_prev;
  a->empty_bytes -= b->size;
}

void kiln_vulkan_suballoc_init(kiln_vulkan_suballoc *a) {
  memset(a, 0, sizeof *a);
  a->reclaim_at = 64;
}

static kiln_status new_block(kiln_vulkan_suballoc *a, uint64_t size,
                             uint64_t memory, unsigned char *map, uint32_t type,
                             bool whole, kiln_vulkan_suballoc_block **out) {
  kiln_vulkan_suballoc_block *b = calloc(1, sizeof *b);
  if (!b || !reserve(a, 1)) {
    free(b);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory keeping the books of a Vulkan "
                          "memory block");
  }
  b->size = size;
  b->memory = memory;
  b->map = map;
  b->type = type;
  b->whole = whole;
  b->next = a->blocks;
  if (b->next) b->next->prev = b;
  a->blocks = b;
  a->block_count++;
  a->block_bytes += size;
  kiln_vulkan_suballoc_range *r = new_range(a);
  r->block = b;
  r->size = size;
  b->first = r;
  *out = b;
  return KILN_OK;
}

kiln_status kiln_vulkan_suballoc_add_block(kiln_vulkan_suballoc *a,
                                           uint64_t size, uint64_t memory,
                                           unsigned char *map, uint32_t type,
                                           kiln_vulkan_suballoc_block **out) {
  kiln_vulkan_suballoc_block *b;
  kiln_status st = new_block(a, size, memory, map, type, false, &b);
  if (st != KILN_OK) return st;
  insert_free(a, b->first);
  empty_insert(a, b);
  if (out) *out = b;
  return KILN_OK;
}

kiln_status kiln_vulkan_suballoc_add_whole(kiln_vulkan_suballoc *a,
                                           uint64_t size, uint64_t memory,
                                           unsigned char *map, uint32_t type,
                                           kiln_vulkan_suballoc_range **out) {
  kiln_vulkan_suballoc_block *b;
  kiln_status st = new_block(a, size, memory, map, type, true, &b);
  if (st != KILN_OK) return st;
  b->first->state = TAKEN;
  b->used = size;
  *out = b->first;
  return KILN_OK;
}

/* Forgets block b, whose ranges are all free (one, merged) or which is
 * whole, and hands it to the owner to free. */
static void drop_block(kiln_vulkan_suballoc *a, kiln_vulkan_suballoc_block *b,
                       const kiln_vulkan_suballoc_owner *owner) {
  if (!b->whole) {
    remove_free(a, b->first);
    empty_remove(a, b);
  }
  free_range(a, b->first);
  if (b->prev)
    b->prev->next = b->next;
  else
    a->blocks = b->next;
  if (b->next) b->next->prev = b->prev;
  a->block_count--;
  a->block_bytes -= b->size;
  owner->drop(owner->arg, b);
  free(b);
}

void kiln_vulkan_suballoc_trim(kiln_vulkan_suballoc *a, uint64_t keep,
                               const kiln_vulkan_suballoc_owner *owner) {
  while (a->empty_bytes > keep) drop_block(a, a->empty, owner);
}

/* Whether range r holds `size` bytes at a multiple of `align`. */
static bool fits(const kiln_vulkan_suballoc_range *r, uint64_t size,
                 uint64_t align) {
  const uint64_t at = (r->offset + align - 1) & ~(align - 1);
  return at - r->offset <= r->size && r->size - (at - r->offset) >= size;
}

/* A free range that holds the request, or NULL. */
static kiln_vulkan_suballoc_range *search(const kiln_vulkan_suballoc *a,
                                          uint64_t size, uint64_t align) {
  /* Any range of a class above the worst case fits without a look. */
  const uint64_t worst = size + (align - G);
  unsigned fl, sl;
  class_above(worst / G, &fl, &sl);
  if (fl < FL) {
    uint32_t sl_map = a->sl_bitmap[fl] & (~0u << sl);
    if (!sl_map) {
      const uint32_t fl_map =
          fl + 1 < 32 ? a->fl_bitmap & (~0u << (fl + 1)) : 0;
      if (fl_map) {
        fl = lowest_bit(fl_map);
        sl_map = a->sl_bitmap[fl];
      }
    }
    if (sl_map) return a->free[fl][lowest_bit(sl_map)];
  }
  /* The request's own class may still hold a range large enough: look,
   * rather than have a block made for want of it. */
  class_of(size / G, &fl, &sl);
  if (fl >= FL) return NULL;
  for (kiln_vulkan_suballoc_range *r = a->free[fl][sl]; r; r = r->next)
    if (fits(r, size, align)) return r;
  return NULL;
}

/* Takes `size` bytes of free range r at a multiple of `align`, leaving
 * what is before and after free; two spare records are reserved. */
static void carve(kiln_vulkan_suballoc *a, kiln_vulkan_suballoc_range *r,
                  uint64_t size, uint64_t align) {
  remove_free(a, r);
  kiln_vulkan_suballoc_block *b = r->block;
  const uint64_t at = (r->offset + align - 1) & ~(align - 1);
  if (at > r->offset) {
    /* What comes before r is taken or waiting (free ranges never touch),
     * so the padding is a free range of its own. */
    kiln_vulkan_suballoc_range *pad = new_range(a);
    pad->block = b;
    pad->offset = r->offset;
    pad->size = at - r->offset;
    pad->before = r->before;
    pad->after = r;
    if (r->before)
      r->before->after = pad;
    else
      b->first = pad;
    r->before = pad;
    r->offset = at;
    r->size -= pad->size;
    insert_free(a, pad);
  }
  if (r->size > size) {
    kiln_vulkan_suballoc_range *tail = new_range(a);
    tail->block = b;
    tail->offset = r->offset + size;
    tail->size = r->size - size;
    tail->before = r;
    tail->after = r->after;
    if (r->after) r->after->before = tail;
    r->after = tail;
    r->size = size;
    insert_free(a, tail);
  }
  r->state = TAKEN;
  r->prev = r->next = NULL;
  if (b->used == 0) empty_remove(a, b);
  b->used += size;
}

kiln_status kiln_vulkan_suballoc_take(kiln_vulkan_suballoc *a, uint64_t size,
                                      uint64_t align,
                                      const kiln_vulkan_suballoc_owner *owner,
                                      kiln_vulkan_suballoc_range **out) {
  *out = NULL;
  size = size ? (size + G - 1) & ~(G - 1) : G;
  if (align < G) align = G;
  if (!reserve(a, 2))
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory keeping the books of Vulkan "
                          "memory blocks");
  /* Looking now and then keeps the list short, and returns the room to
   * use before blocks grow in number. */
  if (a->waiting_count >= a->reclaim_at)
    kiln_vulkan_suballoc_reclaim(a, owner, false);
  kiln_vulkan_suballoc_range *r = search(a, size, align);
  if (!r && a->waiting_count > 0 &&
      kiln_vulkan_suballoc_reclaim(a, owner, false) > 0)
    r = search(a, size, align);
  if (r) {
    carve(a, r, size, align);
    *out = r;
  }
  return KILN_OK;
}

void kiln_vulkan_suballoc_give(kiln_vulkan_suballoc *a,
                               kiln_vulkan_suballoc_range *r,
                               const kiln_vulkan_suballoc_owner *owner) {
  kiln_vulkan_suballoc_block *b = r->block;
  b->used -= r->size;
  if (b->whole) {
    drop_block(a, b, owner);
    return;
  }
  kiln_vulkan_suballoc_range *before = r->before, *after = r->after;
  if (before && before->state == FREE) {
    remove_free(a, before);
    before->size += r->size;
    before->after = after;
    if (after) after->before = before;
    free_range(a, r);
    r = before;
  }
  if (after && after->state == FREE) {
    remove_free(a, after);
    r->size += after->size;
    r->after = after->after;
    if (after->after) after->after->before = r;
    free_range(a, after);
  }
  insert_free(a, r);
  if (b->used == 0) empty_insert(a, b);
}

void kiln_vulkan_suballoc_give_after(kiln_vulkan_suballoc *a,
                                     kiln_vulkan_suballoc_range *r, void *key,
                                     uint64_t value, uint64_t handle) {
  r->state = WAITING;
  r->key = key;
  r->value = value;
  r->handle = handle;
  r->next = NULL;
  r->prev = a->waiting_last;
  if (a->waiting_last)
    a->waiting_last->next = r;
  else
    a->waiting = r;
  a->waiting_last = r;
  a->waiting_count++;
}

/* Timelines polled during one reclaim: the frees of one stream come in a
 * row, and each poll is a driver call. */
#define POLLED 8

static void unlink_waiting(kiln_vulkan_suballoc *a,
                           kiln_vulkan_suballoc_range *r) {
  if (r->prev)
    r->prev->next = r->next;
  else
    a->waiting = r->next;
  if (r->next)
    r->next->prev = r->prev;
  else
    a->waiting_last = r->prev;
  a->waiting_count--;
}

/* Gives back waiting range r, its timeline reached. */
static void give_waiting(kiln_vulkan_suballoc *a, kiln_vulkan_suballoc_range *r,
                         const kiln_vulkan_suballoc_owner *owner) {
  unlink_waiting(a, r);
  owner->release(owner->arg, r);
  r->key = NULL;
  r->handle = 0;
  kiln_vulkan_suballoc_give(a, r, owner);
}

void kiln_vulkan_suballoc_reclaim_key(kiln_vulkan_suballoc *a,
                                      const kiln_vulkan_suballoc_owner *owner,
                                      void *key) {
  kiln_vulkan_suballoc_range *next;
  for (kiln_vulkan_suballoc_range *r = a->waiting; r; r = next) {
    next = r->next;
    if (r->key == key) give_waiting(a, r, owner);
  }
}

size_t kiln_vulkan_suballoc_reclaim(kiln_vulkan_suballoc *a,
                                    const kiln_vulkan_suballoc_owner *owner,
                                    bool all) {
  struct {
    void *key;
    uint64_t value;
  } polled[POLLED];
  size_t polled_count = 0, next_slot = 0, reclaimed = 0;
  kiln_vulkan_suballoc_range *next;
  for (kiln_vulkan_suballoc_range *r = a->waiting; r; r = next) {
    next = r->next;
    bool done = all;
    if (!done) {
      size_t i = 0;
      while (i < polled_count && polled[i].key != r->key) i++;
      if (i == polled_count) {
        i = polled_count < POLLED ? polled_count++ : next_slot++ % POLLED;
        polled[i].key = r->key;
        polled[i].value = owner->reached(owner->arg, r->key);
      }
      done = polled[i].value >= r->value;
    }
    if (!done) continue;
    give_waiting(a, r, owner);
    reclaimed++;
  }
  a->reclaim_at = a->waiting_count * 2 > 64 ? a->waiting_count * 2 : 64;
  return reclaimed;
}

void kiln_vulkan_suballoc_deinit(kiln_vulkan_suballoc *a,
                                 const kiln_vulkan_suballoc_owner *owner) {
  kiln_vulkan_suballoc_reclaim(a, owner, true);
  /* Blocks with ranges still taken are the owner's to free all the
   * same: their resources went with the context. */
  while (a->blocks) {
    kiln_vulkan_suballoc_block *b = a->blocks;
    a->blocks = b->next;
    owner->drop(owner->arg, b);
    free(b);
  }
  while (a->slabs) {
    slab *s = a->slabs;
    a->slabs = s->next;
    free(s);
  }
  memset(a, 0, sizeof *a);
}

void kiln_vulkan_suballoc_usage(const kiln_vulkan_suballoc *a,
                                uint64_t *out_reserved, uint64_t *out_used) {
  uint64_t used = 0;
  for (const kiln_vulkan_suballoc_block *b = a->blocks; b; b = b->next)
    used += b->used;
  for (const kiln_vulkan_suballoc_range *r = a->waiting; r; r = r->next)
    used -= r->size;
  *out_reserved = a->block_bytes;
  *out_used = used;
}
