/*
 * The books of a sub-allocator: ranges of large blocks, handed out and
 * taken back in constant time, as a TLSF (two-level segregated fit)
 * allocator keeps them. It knows nothing of Vulkan: a block is a size and
 * the owner's memory handle and mapping; blocks.c creates and frees the
 * VkDeviceMemory behind them and holds the lock. So its bookkeeping is
 * tested alone, without a device (tests/vulkan/test_suballoc.c).
 *
 * Free ranges sit in lists by size class (a power of two, split in 16),
 * found through two levels of bitmaps; a range given back merges with
 * free neighbours in its block at once, so no two free ranges touch. A
 * range may also be given back for later: it stays taken until a
 * timeline (the owner's key) reaches a value, and is reclaimed when a
 * poll shows it has, which the allocator does itself when it would
 * otherwise find no room, and now and then as such frees pile up.
 */
#ifndef KILN_VULKAN_SUBALLOC_H
#define KILN_VULKAN_SUBALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/kiln.h"

/* Every range starts and ends on this many bytes: the alignment CUDA
 * gives every allocation, which kernels written for it (vector loads) and
 * kiln's copy kernel count on. */
#define KILN_VULKAN_SUBALLOC_GRANULE ((uint64_t)256)

/* Size classes: the first level is the power of two of a size in
 * granules (below 16 granules, one class per granule), the second splits
 * it in 16. 24 first-level classes reach blocks of 2^27 granules (32 GiB),
 * beyond any block blocks.c makes. */
#define KILN_VULKAN_SUBALLOC_FL 24
#define KILN_VULKAN_SUBALLOC_SL_LOG2 4
#define KILN_VULKAN_SUBALLOC_SL (1 << KILN_VULKAN_SUBALLOC_SL_LOG2)

typedef struct kiln_vulkan_suballoc_range kiln_vulkan_suballoc_range;

typedef struct kiln_vulkan_suballoc_block {
  uint64_t size;
  uint64_t used;      /* bytes taken or waiting for a timeline */
  uint64_t memory;    /* the owner's (a VkDeviceMemory) */
  unsigned char *map; /* the owner's mapping of the whole block, or NULL */
  uint32_t type;      /* the owner's (the memory type) */
  uint32_t flags;     /* the owner's, 0 when added (blocks.c's BLOCK_*) */
  uint64_t serial;    /* the owner's, 0 when added */
  /* One range for one resource, never shared (a dedicated allocation):
   * dropped as soon as it is given back. */
  bool whole;
  struct kiln_vulkan_suballoc_block *prev, *next; /* every block */
  /* The blocks with nothing taken, while `used` is 0. */
  struct kiln_vulkan_suballoc_block *empty_prev, *empty_next;
  kiln_vulkan_suballoc_range *first; /* its ranges, in address order */
} kiln_vulkan_suballoc_block;

/* A range's state. */
enum {
  KILN_VULKAN_SUBALLOC_FREE,
  KILN_VULKAN_SUBALLOC_TAKEN,
  /* Given back for later: out of use until its timeline reaches its
   * value. */
  KILN_VULKAN_SUBALLOC_WAITING,
};

/* A range of a block. */
struct kiln_vulkan_suballoc_range {
  kiln_vulkan_suballoc_block *block;
  uint64_t offset, size;
  /* Its neighbours in the block, in address order. */
  kiln_vulkan_suballoc_range *before, *after;
  /* The free list of its class while free, the list of waiting ranges
   * while waiting; a spare record's `next` links the spares. */
  kiln_vulkan_suballoc_range *prev, *next;
  /* While waiting: the owner's timeline, the value it must reach, and
   * what the owner frees with the range (its VkBuffer). */
  void *key;
  uint64_t value;
  uint64_t handle;
  uint8_t state;
};

/* What the allocator asks of its owner. */
typedef struct kiln_vulkan_suballoc_owner {
  /* The value timeline `key` has reached (0 when it cannot tell). */
  uint64_t (*reached)(void *arg, void *key);
  /* A waiting range whose timeline reached its value, before it is given
   * back: the owner frees its handle and lets go of its key. */
  void (*release)(void *arg, kiln_vulkan_suballoc_range *range);
  /* A block the allocator forgets (empty, or whole and given back): the
   * owner frees its memory. */
  void (*drop)(void *arg, kiln_vulkan_suballoc_block *block);
  void *arg;
} kiln_vulkan_suballoc_owner;

typedef struct kiln_vulkan_suballoc {
  uint32_t fl_bitmap;
  uint16_t sl_bitmap[KILN_VULKAN_SUBALLOC_FL];
  kiln_vulkan_suballoc_range
      *free[KILN_VULKAN_SUBALLOC_FL][KILN_VULKAN_SUBALLOC_SL];
  kiln_vulkan_suballoc_block *blocks, *empty;
  size_t block_count;
  uint64_t block_bytes, empty_bytes;
  /* Waiting ranges, oldest first, and how many there may be before the
   * next take looks at them without being short of room. */
  kiln_vulkan_suballoc_range *waiting, *waiting_last;
  size_t waiting_count, reclaim_at;
  /* Range records not in use, and the slabs they come from. */
  kiln_vulkan_suballoc_range *spare;
  void *slabs;
} kiln_vulkan_suballoc;

void kiln_vulkan_suballoc_init(kiln_vulkan_suballoc *a);
/* Releases every waiting range (the work is over), drops every block
 * and frees the books. */
void kiln_vulkan_suballoc_deinit(kiln_vulkan_suballoc *a,
                                 const kiln_vulkan_suballoc_owner *owner);

/* Adds a free block of `size` bytes (a multiple of the granule, below
 * 2^27 granules) over the owner's `memory` and `map`. */
kiln_status kiln_vulkan_suballoc_add_block(kiln_vulkan_suballoc *a,
                                           uint64_t size, uint64_t memory,
                                           unsigned char *map, uint32_t type,
                                           kiln_vulkan_suballoc_block **out);
/* Adds a whole block of `size` bytes (any size) over `memory` and `map`,
 * taken at once as one range, *out. */
kiln_status kiln_vulkan_suballoc_add_whole(kiln_vulkan_suballoc *a,
                                           uint64_t size, uint64_t memory,
                                           unsigned char *map, uint32_t type,
                                           kiln_vulkan_suballoc_range **out);
/* Drops empty blocks until at most `keep` bytes of them are left. */
void kiln_vulkan_suballoc_trim(kiln_vulkan_suballoc *a, uint64_t keep,
                               const kiln_vulkan_suballoc_owner *owner);

/* Takes `size` bytes (rounded up to the granule) at a multiple of `align`
 * (a power of two; the granule at least) into *out, or sets *out to NULL
 * when no block has room, after reclaiming the waiting ranges whose
 * timelines are done. KILN_ERROR_OUT_OF_HOST_MEMORY when the books cannot
 * grow. */
kiln_status kiln_vulkan_suballoc_take(kiln_vulkan_suballoc *a, uint64_t size,
                                      uint64_t align,
                                      const kiln_vulkan_suballoc_owner *owner,
                                      kiln_vulkan_suballoc_range **out);
/* Gives a taken range back at once: it merges with its free neighbours,
 * and a whole block is dropped. */
void kiln_vulkan_suballoc_give(kiln_vulkan_suballoc *a,
                               kiln_vulkan_suballoc_range *range,
                               const kiln_vulkan_suballoc_owner *owner);
/* Gives a taken range back once timeline `key` reaches `value`: until a
 * reclaim sees that it has, the range stays out of use. The owner holds
 * `key`, and `handle`, for it until `owner->release`. */
void kiln_vulkan_suballoc_give_after(kiln_vulkan_suballoc *a,
                                     kiln_vulkan_suballoc_range *range,
                                     void *key, uint64_t value,
                                     uint64_t handle);
/* Gives back every waiting range whose timeline has reached its value
 * (`all`: every one, the work being over); how many. */
size_t kiln_vulkan_suballoc_reclaim(kiln_vulkan_suballoc *a,
                                    const kiln_vulkan_suballoc_owner *owner,
                                    bool all);

/* Gives back every waiting range of timeline `key`, which the caller knows
 * has reached all their values (its stream is done and going). */
void kiln_vulkan_suballoc_reclaim_key(kiln_vulkan_suballoc *a,
                                      const kiln_vulkan_suballoc_owner *owner,
                                      void *key);

/* The bytes of every block, and of those the bytes taken (waiting ranges
 * not counted): a walk over the blocks and the waiting ranges. */
void kiln_vulkan_suballoc_usage(const kiln_vulkan_suballoc *a,
                                uint64_t *out_reserved, uint64_t *out_used);

#endif /* KILN_VULKAN_SUBALLOC_H */
