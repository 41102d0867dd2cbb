/* Where device memory comes from: the memory type that serves a use best
 * within the heaps' budgets, and in it a range of a large block that
 * many buffers share, or, for a buffer that should not share, memory of
 * its own. Drivers cap the number of live allocations (4096 on several)
 * and each one is slow (321 µs for a create and destroy on NVIDIA's);
 * a range of a block is neither. suballoc.c keeps the books of each
 * memory type's blocks, behind that type's pool lock. Each type has two
 * pools: one of ordinary blocks, and one of blocks allocated exportable,
 * for the buffers of a context that shares its GPU with another (peer.c
 * imports them there); a buffer bound to exported memory must have been
 * made for it, so the two never mix. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/suballoc.h"
#include "backends/vulkan/vulkan.h"

#if VK_USE_64_BIT_PTR_DEFINES == 1
#define TO_U64(h) ((uint64_t)(uintptr_t)(h))
#define FROM_U64(type, v) ((type)(uintptr_t)(v))
#else
#define TO_U64(h) ((uint64_t)(h))
#define FROM_U64(type, v) ((type)(v))
#endif

#define G KILN_VULKAN_SUBALLOC_GRANULE

/* A block where the heap is large; a heap of less than 512 MiB (a
 * discrete GPU's host-visible window) gets blocks of an eighth of it. */
#define BLOCK_BYTES ((VkDeviceSize)64 << 20)
/* The largest block made for one large request, at least twice its size
 * so that others share it; a larger request gets memory of its own. */
#define BLOCK_MAX ((VkDeviceSize)256 << 20)

struct kiln_vulkan_pool {
  pthread_mutex_t lock; /* guards books and keep */
  kiln_vulkan_suballoc books;
  VkDeviceSize block_bytes; /* a new block's size */
  uint64_t keep;            /* empty blocks kept: block_bytes unless set */
  /* Bytes of the books' ranges taken for host use (staging, host
   * buffers): not buffers in use, for kiln_context_pool_usage. */
  uint64_t host_used;
};

static const VkMemoryPropertyFlags mappable =
    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;

/* ---- The owner of the books: timelines and VkDeviceMemory --------------- */

static uint64_t timeline_reached(void *arg, void *key) {
  kiln_vulkan_context *vc = arg;
  const kiln_vulkan_timeline *tl = key;
  uint64_t value = 0;
  /* A failed poll (a lost device) reclaims nothing: the memory stays out
   * of use rather than handed to new work while old work may run. */
  if (vc->vk.vkGetSemaphoreCounterValue(vc->device, tl->semaphore, &value) !=
      VK_SUCCESS)
    return 0;
  return value;
}

static void range_release(void *arg, kiln_vulkan_suballoc_range *range) {
  kiln_vulkan_context *vc = arg;
  if (range->handle)
    vc->vk.vkDestroyBuffer(vc->device, FROM_U64(VkBuffer, range->handle), NULL);
  kiln_vulkan_timeline_release(vc, range->key);
}

static void block_drop(void *arg, kiln_vulkan_suballoc_block *block) {
  kiln_vulkan_context *vc = arg;
  /* Other contexts' imports of it go first: a later block may get the
   * same handle. */
  if ((block->flags & KILN_VULKAN_BLOCK_EXPORTED) &&
      vc->memory.exported_block_gone)
    vc->memory.exported_block_gone(vc, block);
  /* Freeing mapped memory unmaps it. */
  vc->vk.vkFreeMemory(vc->device, FROM_U64(VkDeviceMemory, block->memory),
                      NULL);
}

static kiln_vulkan_suballoc_owner owner_of(kiln_vulkan_context *vc) {
  return (kiln_vulkan_suballoc_owner){timeline_reached, range_release,
                                      block_drop, vc};
}

/* Both pools of every memory type. */
static uint32_t pool_count(const kiln_vulkan_context *vc) {
  return 2 * vc->phys->memory.memoryTypeCount;
}

static struct kiln_vulkan_pool *pool_for(kiln_vulkan_context *vc,
                                         uint32_t type, bool exported) {
  return &vc->memory.pools[type + (exported ? pool_count(vc) / 2 : 0)];
}

static struct kiln_vulkan_pool *
pool_of(kiln_vulkan_context *vc, const kiln_vulkan_suballoc_block *b) {
  return pool_for(vc, b->type, b->flags & KILN_VULKAN_BLOCK_EXPORTED);
}

/* ---- Pools ---------------------------------------------------------------- */

kiln_status kiln_vulkan_memory_init(kiln_vulkan_context *vc) {
  const VkPhysicalDeviceMemoryProperties *mem = &vc->phys->memory;
  vc->memory.pools = calloc(mem->memoryTypeCount ? pool_count(vc) : 1,
                            sizeof *vc->memory.pools);
  if (!vc->memory.pools)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory creating a Vulkan context");
  for (uint32_t i = 0; i < pool_count(vc); i++) {
    struct kiln_vulkan_pool *pool = &vc->memory.pools[i];
    if (pthread_mutex_init(&pool->lock, NULL) != 0) {
      while (i-- > 0) pthread_mutex_destroy(&vc->memory.pools[i].lock);
      free(vc->memory.pools);
      vc->memory.pools = NULL;
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "pthread_mutex_init failed for a Vulkan memory "
                            "pool");
    }
    kiln_vulkan_suballoc_init(&pool->books);
    const uint32_t type = i % mem->memoryTypeCount;
    const VkDeviceSize heap =
        mem->memoryHeaps[mem->memoryTypes[type].heapIndex].size;
    VkDeviceSize block = BLOCK_BYTES;
    while (block > 16 * G && block > heap / 8) block /= 2;
    if (block > vc->phys->max_allocation_bytes)
      block = vc->phys->max_allocation_bytes & ~(G - 1);
    pool->block_bytes = block;
    pool->keep = block;
  }
  return KILN_OK;
}

void kiln_vulkan_memory_deinit(kiln_vulkan_context *vc) {
  if (!vc->memory.pools) return;
  const kiln_vulkan_suballoc_owner owner = owner_of(vc);
  for (uint32_t i = 0; i < pool_count(vc); i++) {
    kiln_vulkan_suballoc_deinit(&vc->memory.pools[i].books, &owner);
    pthread_mutex_destroy(&vc->memory.pools[i].lock);
  }
  free(vc->memory.pools);
  vc->memory.pools = NULL;
}

/* Gives back to the driver every empty block kept and the ranges whose
 * work is done, waiting for none: before a failed allocation is tried
 * again. */
static void give_back_cached(kiln_vulkan_context *vc) {
  const kiln_vulkan_suballoc_owner owner = owner_of(vc);
  for (uint32_t i = 0; i < pool_count(vc); i++) {
    struct kiln_vulkan_pool *pool = &vc->memory.pools[i];
    pthread_mutex_lock(&pool->lock);
    kiln_vulkan_suballoc_reclaim(&pool->books, &owner, false);
    kiln_vulkan_suballoc_trim(&pool->books, 0, &owner);
    pthread_mutex_unlock(&pool->lock);
  }
}

void kiln_vulkan_memory_put(kiln_vulkan_context *vc,
                            kiln_vulkan_allocation *alloc) {
  struct kiln_vulkan_pool *pool = pool_of(vc, alloc->range->block);
  const kiln_vulkan_suballoc_owner owner = owner_of(vc);
  pthread_mutex_lock(&pool->lock);
  if (alloc->host_use) pool->host_used -= alloc->range->size;
  kiln_vulkan_suballoc_give(&pool->books, alloc->range, &owner);
  kiln_vulkan_suballoc_trim(&pool->books, pool->keep, &owner);
  pthread_mutex_unlock(&pool->lock);
  alloc->range = NULL;
}

void kiln_vulkan_memory_put_after(kiln_vulkan_context *vc,
                                  kiln_vulkan_allocation *alloc,
                                  kiln_vulkan_timeline *timeline,
                                  uint64_t value) {
  struct kiln_vulkan_pool *pool = pool_of(vc, alloc->range->block);
  atomic_fetch_add(&timeline->refs, 1);
  pthread_mutex_lock(&pool->lock);
  if (alloc->host_use) pool->host_used -= alloc->range->size;
  kiln_vulkan_suballoc_give_after(&pool->books, alloc->range, timeline, value,
                                  TO_U64(alloc->buffer));
  pthread_mutex_unlock(&pool->lock);
  alloc->range = NULL;
  alloc->buffer = VK_NULL_HANDLE;
}

size_t kiln_vulkan_counted_bytes(const kiln_vulkan_allocation *a,
                                 size_t size) {
  return a->range ? (size_t)a->range->size : size;
}

void kiln_vulkan_memory_usage(kiln_vulkan_context *vc, size_t *out_reserved,
                              size_t *out_used) {
  uint64_t reserved = 0, used = 0;
  for (uint32_t i = 0; i < pool_count(vc); i++) {
    struct kiln_vulkan_pool *pool = &vc->memory.pools[i];
    uint64_t r, u;
    pthread_mutex_lock(&pool->lock);
    kiln_vulkan_suballoc_usage(&pool->books, &r, &u);
    u -= pool->host_used;
    pthread_mutex_unlock(&pool->lock);
    reserved += r;
    used += u;
  }
  *out_reserved = reserved > SIZE_MAX ? SIZE_MAX : (size_t)reserved;
  *out_used = used > SIZE_MAX ? SIZE_MAX : (size_t)used;
}

void kiln_vulkan_memory_set_keep(kiln_vulkan_context *vc, uint64_t bytes) {
  const kiln_vulkan_suballoc_owner owner = owner_of(vc);
  for (uint32_t i = 0; i < pool_count(vc); i++) {
    struct kiln_vulkan_pool *pool = &vc->memory.pools[i];
    pthread_mutex_lock(&pool->lock);
    pool->keep = bytes;
    kiln_vulkan_suballoc_trim(&pool->books, pool->keep, &owner);
    pthread_mutex_unlock(&pool->lock);
  }
}

void kiln_vulkan_memory_forget_timeline(kiln_vulkan_context *vc,
                                       kiln_vulkan_timeline *timeline) {
  if (!vc->memory.pools) return;
  const kiln_vulkan_suballoc_owner owner = owner_of(vc);
  for (uint32_t i = 0; i < pool_count(vc); i++) {
    struct kiln_vulkan_pool *pool = &vc->memory.pools[i];
    pthread_mutex_lock(&pool->lock);
    kiln_vulkan_suballoc_reclaim_key(&pool->books, &owner, timeline);
    pthread_mutex_unlock(&pool->lock);
  }
}

void kiln_vulkan_memory_trim(kiln_vulkan_context *vc, uint64_t keep) {
  const kiln_vulkan_suballoc_owner owner = owner_of(vc);
  for (uint32_t i = 0; i < pool_count(vc); i++) {
    struct kiln_vulkan_pool *pool = &vc->memory.pools[i];
    pthread_mutex_lock(&pool->lock);
    kiln_vulkan_suballoc_reclaim(&pool->books, &owner, false);
    kiln_vulkan_suballoc_trim(&pool->books, keep, &owner);
    pthread_mutex_unlock(&pool->lock);
  }
}

/* ---- Choosing a memory type ------------------------------------------------ */

/* Lower is better; -1 when the type cannot serve `use`. */
static int memory_rank(const kiln_vulkan_physical *p,
                       VkMemoryPropertyFlags flags,
                       kiln_vulkan_memory_use use) {
  const VkMemoryPropertyFlags unusable =
      VK_MEMORY_PROPERTY_PROTECTED_BIT |
      VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT |
      VK_MEMORY_PROPERTY_DEVICE_COHERENT_BIT_AMD |
      VK_MEMORY_PROPERTY_DEVICE_UNCACHED_BIT_AMD |
      VK_MEMORY_PROPERTY_RDMA_CAPABLE_BIT_NV;
  if (flags & unusable) return -1;
  bool local = flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  bool host = (flags & mappable) == mappable;
  bool cached = flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
  bool discrete = p->type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
  if (use == KILN_VULKAN_MEMORY_DEVICE) {
    if (!local) return 4;
    /* A discrete GPU's host-visible window (BAR) is scarce and slow to
     * read from the host; on shared memory a mapping is free and lets
     * transfers skip the queue. */
    if (discrete) return host ? 1 : 0;
    return host ? 0 : 1;
  }
  if (!host) return -1;
  /* Cached memory is fast for the host to read back; video memory is
   * better left to buffers. */
  return (cached ? 0 : 1) + (discrete && local ? 2 : 0);
}

/* The heaps' budgets and what this process uses of them, or false where
 * the device does not say. */
static bool memory_budget(kiln_vulkan_context *vc,
                          VkPhysicalDeviceMemoryBudgetPropertiesEXT *out) {
  if (!vc->memory.budget) return false;
  *out = (VkPhysicalDeviceMemoryBudgetPropertiesEXT){
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
  VkPhysicalDeviceMemoryProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
      .pNext = out};
  kiln_vulkan_lib.vkGetPhysicalDeviceMemoryProperties2(vc->phys->handle,
                                                       &props);
  return true;
}

/* One request's way through the memory types, and what stood in its way
 * for the message when nothing had room. */
typedef struct request {
  const VkMemoryRequirements *req;
  kiln_vulkan_memory_use use;
  bool own;
  const void *next;
  bool exported; /* its block from the exportable pool */
  bool budget_read, budgeted; /* read when memory is first allocated */
  VkPhysicalDeviceMemoryBudgetPropertiesEXT budget;
  bool tried;         /* some vkAllocateMemory was made or refused */
  VkResult last;      /* the last refusal */
  uint32_t last_type; /* the type and size it was for */
  VkDeviceSize last_bytes;
  int full_heap; /* a heap whose budget left no room, or -1 */
  VkDeviceSize full_bytes;
} request;

/* vkAllocateMemory of `bytes` of type `type`, within the heap's budget
 * and the test's limit, mapped where the type is mappable: VK_SUCCESS,
 * or the refusal (VK_ERROR_OUT_OF_*_MEMORY: no room) or failure. */
static VkResult allocate(kiln_vulkan_context *vc, request *rq,
                         struct kiln_vulkan_pool *pool, uint32_t type,
                         VkDeviceSize bytes, const void *next,
                         VkDeviceMemory *out, unsigned char **out_map) {
  const VkMemoryType *t = &vc->phys->memory.memoryTypes[type];
  const uint32_t heap = t->heapIndex;
  if (!rq->budget_read) {
    rq->budgeted = memory_budget(vc, &rq->budget);
    rq->budget_read = true;
  }
  if (rq->budgeted &&
      (rq->budget.heapUsage[heap] > rq->budget.heapBudget[heap] ||
       bytes > rq->budget.heapBudget[heap] - rq->budget.heapUsage[heap])) {
    rq->full_heap = (int)heap;
    rq->full_bytes = bytes;
    return VK_ERROR_OUT_OF_DEVICE_MEMORY;
  }
  rq->tried = true;
  rq->last_type = type;
  rq->last_bytes = bytes;
  if (vc->memory.test_limit &&
      (type != vc->memory.test_type || bytes > vc->memory.test_limit ||
       pool->books.block_bytes > vc->memory.test_limit - bytes))
    return rq->last = VK_ERROR_OUT_OF_DEVICE_MEMORY;
  VkExportMemoryAllocateInfo export = {
      .sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
      .pNext = next,
      .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
  };
  /* Every block may hold buffers with device addresses. */
  VkMemoryAllocateFlagsInfo flags = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO,
      .pNext = rq->exported ? (const void *)&export : next,
      .flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT,
  };
  VkMemoryAllocateInfo info = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
      .pNext = &flags,
      .allocationSize = bytes,
      .memoryTypeIndex = type,
  };
  VkResult r = vc->vk.vkAllocateMemory(vc->device, &info, NULL, out);
  if (r != VK_SUCCESS) return rq->last = r;
  *out_map = NULL;
  if ((t->propertyFlags & mappable) == mappable) {
    void *map = NULL;
    r = vc->vk.vkMapMemory(vc->device, *out, 0, VK_WHOLE_SIZE, 0, &map);
    if (r != VK_SUCCESS) {
      vc->vk.vkFreeMemory(vc->device, *out, NULL);
      return rq->last = r;
    }
    *out_map = map;
  }
  return VK_SUCCESS;
}

/* The size of a new block for `need` bytes, or 0 when they get memory of
 * their own. */
static VkDeviceSize block_for(const kiln_vulkan_context *vc,
                              const struct kiln_vulkan_pool *pool,
                              VkDeviceSize need) {
  if (need <= pool->block_bytes / 2) return pool->block_bytes;
  VkDeviceSize block = pool->block_bytes;
  while (block < 2 * need && block <= BLOCK_MAX / 2) block *= 2;
  return block >= 2 * need && block <= vc->phys->max_allocation_bytes ? block
                                                                      : 0;
}

typedef enum outcome { PLACED, NO_ROOM, FAILED } outcome;

/* Notes an exportable block, with a number no other block of the
 * process gets: imports are kept by it, and a block made where a freed
 * one was must not find the freed one's. */
static void mark_exported(kiln_vulkan_suballoc_block *b) {
  static atomic_uint_fast64_t serials;
  b->flags = KILN_VULKAN_BLOCK_EXPORTED;
  b->serial = atomic_fetch_add(&serials, 1) + 1;
}

static outcome no_room(VkResult r) {
  return r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
             ? NO_ROOM
             : FAILED;
}

/* Places the request in memory type `type`, locked: a range of a block,
 * a new block first where none has room, or memory of its own. */
static outcome place_in(kiln_vulkan_context *vc, request *rq, uint32_t type,
                        struct kiln_vulkan_pool *pool,
                        kiln_vulkan_allocation *out, kiln_status *st) {
  const kiln_vulkan_suballoc_owner owner = owner_of(vc);
  const VkDeviceSize size = (rq->req->size + G - 1) & ~(G - 1);
  const VkDeviceSize align = rq->req->alignment > G ? rq->req->alignment : G;
  const VkDeviceSize block =
      rq->own ? 0 : block_for(vc, pool, size + align - G);
  VkDeviceMemory memory;
  unsigned char *map;
  if (block == 0) {
    VkResult r =
        allocate(vc, rq, pool, type, rq->req->size, rq->next, &memory, &map);
    if (r != VK_SUCCESS) return no_room(r);
    *st = kiln_vulkan_suballoc_add_whole(
        &pool->books, rq->req->size, TO_U64(memory), map, type, &out->range);
    if (*st != KILN_OK) {
      vc->vk.vkFreeMemory(vc->device, memory, NULL);
      return FAILED;
    }
    if (rq->exported) mark_exported(out->range->block);
    return PLACED;
  }
  *st =
      kiln_vulkan_suballoc_take(&pool->books, size, align, &owner, &out->range);
  if (*st != KILN_OK) return FAILED;
  if (out->range) return PLACED;
  /* Smaller blocks where a full one does not fit, down to the request:
   * a device nearly full still takes what it has room for. */
  VkDeviceSize bytes = block;
  VkResult r;
  for (;;) {
    r = allocate(vc, rq, pool, type, bytes, NULL, &memory, &map);
    const VkDeviceSize half = (bytes / 2) & ~(G - 1);
    if (r == VK_SUCCESS || no_room(r) == FAILED || half < size + align - G)
      break;
    bytes = half;
  }
  if (r != VK_SUCCESS) return no_room(r);
  kiln_vulkan_suballoc_block *added = NULL;
  *st = kiln_vulkan_suballoc_add_block(&pool->books, bytes, TO_U64(memory), map,
                                       type, &added);
  if (*st != KILN_OK) {
    vc->vk.vkFreeMemory(vc->device, memory, NULL);
    return FAILED;
  }
  if (rq->exported) mark_exported(added);
  *st =
      kiln_vulkan_suballoc_take(&pool->books, size, align, &owner, &out->range);
  if (*st == KILN_OK && !out->range)
    *st = kiln_set_error(KILN_ERROR_BACKEND,
                         "a new Vulkan memory block of %llu bytes did not "
                         "hold %llu bytes aligned to %llu",
                         (unsigned long long)bytes, (unsigned long long)size,
                         (unsigned long long)align);
  return *st == KILN_OK ? PLACED : FAILED;
}

/* One pass over the memory types, best first. */
static outcome place(kiln_vulkan_context *vc, request *rq,
                     kiln_vulkan_allocation *out, uint32_t *out_type,
                     kiln_status *st) {
  const VkPhysicalDeviceMemoryProperties *mem = &vc->phys->memory;
  rq->budget_read = false;
  for (int rank = 0; rank <= 4; rank++) {
    /* Device memory that did not fit in video memory is refused rather
     * than placed in system memory behind the caller's back. */
    if (rank == 4 && (rq->tried || rq->full_heap >= 0)) break;
    for (uint32_t i = 0; i < mem->memoryTypeCount; i++) {
      const VkMemoryType *type = &mem->memoryTypes[i];
      if (!(rq->req->memoryTypeBits & (1u << i)) ||
          memory_rank(vc->phys, type->propertyFlags, rq->use) != rank ||
          mem->memoryHeaps[type->heapIndex].size < rq->req->size)
        continue;
      struct kiln_vulkan_pool *pool = pool_for(vc, i, rq->exported);
      pthread_mutex_lock(&pool->lock);
      outcome o = place_in(vc, rq, i, pool, out, st);
      if (o == PLACED && rq->use != KILN_VULKAN_MEMORY_DEVICE)
        pool->host_used += out->range->size;
      pthread_mutex_unlock(&pool->lock);
      if (o == FAILED && *st == KILN_OK)
        *st = kiln_vulkan_error(rq->last,
                                "vkAllocateMemory of %llu bytes "
                                "of memory type %u",
                                (unsigned long long)rq->last_bytes, i);
      if (o == PLACED) *out_type = i;
      /* Another type, in another heap, may still have room. */
      if (o != NO_ROOM) return o;
    }
  }
  return NO_ROOM;
}

kiln_status kiln_vulkan_memory_get(kiln_vulkan_context *vc,
                                   const VkMemoryRequirements *req,
                                   kiln_vulkan_memory_use use, bool own,
                                   const void *next, bool exported,
                                   kiln_vulkan_allocation *out,
                                   uint32_t *out_type) {
  request rq = {.req = req,
                .use = use,
                .own = own,
                .next = next,
                .exported = exported,
                .full_heap = -1};
  kiln_status st = KILN_OK;
  outcome o = place(vc, &rq, out, out_type, &st);
  if (o == NO_ROOM && (rq.tried || rq.full_heap >= 0)) {
    give_back_cached(vc);
    rq.tried = false;
    rq.full_heap = -1;
    o = place(vc, &rq, out, out_type, &st);
  }
  if (o == PLACED) {
    const kiln_vulkan_suballoc_block *b = out->range->block;
    const VkMemoryPropertyFlags flags =
        vc->phys->memory.memoryTypes[b->type].propertyFlags;
    out->memory = FROM_U64(VkDeviceMemory, b->memory);
    out->memory_offset = out->range->offset;
    out->map = b->map ? b->map + out->range->offset : NULL;
    out->cached = flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    out->host_use = use != KILN_VULKAN_MEMORY_DEVICE;
    return KILN_OK;
  }
  if (o == FAILED) return st;
  const kiln_status full = use == KILN_VULKAN_MEMORY_DEVICE
                               ? KILN_ERROR_OUT_OF_DEVICE_MEMORY
                               : KILN_ERROR_OUT_OF_HOST_MEMORY;
  if (!rq.tried && rq.full_heap >= 0)
    return kiln_set_error(
        full,
        "%llu bytes (in an allocation of %llu) do not fit in the budget of "
        "the Vulkan device's memory heap %d: %llu of its %llu bytes are in "
        "use (VK_EXT_memory_budget)",
        (unsigned long long)req->size, (unsigned long long)rq.full_bytes,
        rq.full_heap, (unsigned long long)rq.budget.heapUsage[rq.full_heap],
        (unsigned long long)rq.budget.heapBudget[rq.full_heap]);
  if (!rq.tried)
    return kiln_set_error(
        use == KILN_VULKAN_MEMORY_DEVICE ? full : KILN_ERROR_UNSUPPORTED,
        "no Vulkan memory type can hold %llu bytes of %s memory",
        (unsigned long long)req->size,
        use == KILN_VULKAN_MEMORY_DEVICE ? "device" : "host-visible");
  const uint32_t heap = vc->phys->memory.memoryTypes[rq.last_type].heapIndex;
  return kiln_vulkan_error_as(
      rq.last, full,
      "vkAllocateMemory of %llu bytes for %llu bytes of %s memory, in "
      "memory type %u (heap %u, of %llu bytes), tried again once the "
      "memory pools gave back their empty blocks and finished frees,",
      (unsigned long long)rq.last_bytes, (unsigned long long)req->size,
      use == KILN_VULKAN_MEMORY_DEVICE ? "device" : "host-visible",
      rq.last_type, heap,
      (unsigned long long)vc->phys->memory.memoryHeaps[heap].size);
}
