/* Copies between buffers of two contexts. Two contexts are two VkDevices,
 * which share no memory unless one exports it and the other imports it.
 * On one GPU (one physical device and driver, VK_KHR_external_memory_fd),
 * a copy out of a buffer of an exporting context (imports.c) is one copy
 * on the destination's device, from the source's own block imported
 * there. Other copies go through slots of memory that both devices see,
 * kept per pair of contexts until either is destroyed, the source filling
 * a slot while the destination empties one filled before: device memory
 * one exports and the other imports, on one GPU; else, for copies over
 * PIPELINE_MIN, host memory both import (VK_EXT_external_memory_host),
 * which the DMA engines fill and empty with no copy on the host.
 * Otherwise the bytes go through each stream's staging ring and a host
 * buffer. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/suballoc.h"
#include "backends/vulkan/vulkan.h"

/* Copies at most this large between two GPUs go the simple way: the
 * pipeline's waits cost more than they save. */
#define PIPELINE_MIN ((size_t)1 << 20)
/* HOST_SLOTS slots of about HOST_SLOT bytes of host memory (a chunk each),
 * HOST_READ_AHEAD chunks filled ahead of the one being emptied: the two
 * devices' DMA engines run at once. */
#define HOST_SLOTS 4
#define HOST_SLOT ((size_t)8 << 20)
#define HOST_READ_AHEAD 2
#define MAX_SLOTS HOST_SLOTS
/* One slot of device memory, as large as can be spared: on one GPU the
 * two VkDevices' kernels take turns, and NVIDIA's driver takes about
 * 200 us to hand the compute engine from one to the other (H100, driver
 * 580), so a copy costs two such turns per chunk and moves most when its
 * chunks are fewest (1 GiB: 0.65 TB/s in chunks of 256 MiB, 0.31 in four
 * slots of 32 MiB filled two ahead; docs/multi-device.md). */
#define DEVICE_SLOT ((size_t)256 << 20)
/* Chunks smaller than this go by the DMA queue, whose engine changes hands
 * between the devices in microseconds, though it copies device memory at
 * 0.18 TB/s against the kernel's 2.9. */
#define KERNEL_MIN ((size_t)16 << 20)
/* The simple way's chunk. */
#define HOST_CHUNK ((size_t)16 << 20)

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* Memory that the devices of two contexts both see: host memory both
 * import (host), or device memory ctx[0] exported and ctx[1] imported
 * (host NULL). One copy at a time uses it (busy). */
typedef struct shared_slots {
  kiln_vulkan_context *ctx[2];
  kiln_vulkan_allocation alloc[2]; /* the memory as ctx[i]'s device sees it */
  void *host;
  size_t slot;
  unsigned slots, read_ahead;
  bool busy;
  struct shared_slots *next;
} shared_slots;

/* Every pair's slots, for reuse and for kiln_vulkan_peer_forget. Slots
 * taken off the list are freed outside the lock (freeing them takes a
 * memory pool's lock, which comes first), counted in `slots_freeing`
 * meanwhile: a context's destruction waits for those frees, which may be
 * into its device. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_freed = PTHREAD_COND_INITIALIZER;
static shared_slots *cache;
static unsigned slots_freeing;

static bool host_importers(const kiln_vulkan_context *a,
                           const kiln_vulkan_context *b) {
  return a->memory.vkGetMemoryHostPointerPropertiesEXT &&
         b->memory.vkGetMemoryHostPointerPropertiesEXT;
}

static void slots_free(shared_slots *ss) {
  kiln_vulkan_free(ss->ctx[1], &ss->alloc[1]);
  kiln_vulkan_free(ss->ctx[0], &ss->alloc[0]);
  free(ss->host);
  ss->host = NULL;
}

/* Host memory that ss's contexts both import. */
static kiln_status host_slots(shared_slots *ss) {
  size_t align = 4096;
  for (int i = 0; i < 2; i++)
    if (ss->ctx[i]->phys->host_import_align > align)
      align = ss->ctx[i]->phys->host_import_align;
  ss->slot = (HOST_SLOT + align - 1) / align * align;
  ss->slots = HOST_SLOTS;
  ss->read_ahead = HOST_READ_AHEAD;
  ss->host = aligned_alloc(align, HOST_SLOTS * ss->slot);
  if (!ss->host)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "no %zu bytes of host memory to carry copies "
                          "between contexts",
                          HOST_SLOTS * ss->slot);
  kiln_status s = KILN_OK;
  for (int i = 0; i < 2 && s == KILN_OK; i++)
    s = kiln_vulkan_import_host(ss->ctx[i], ss->host, HOST_SLOTS * ss->slot,
                                &ss->alloc[i]);
  return s;
}

/* Device memory where a and b can share it, else (or where the device has
 * no room for it) host memory where both import it. */
static kiln_status slots_create(kiln_vulkan_context *a, kiln_vulkan_context *b,
                                shared_slots **out) {
  shared_slots *ss = calloc(1, sizeof *ss);
  if (!ss)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory for a copy between contexts");
  ss->ctx[0] = a;
  ss->ctx[1] = b;
  kiln_status s = KILN_ERROR_UNSUPPORTED;
  if (kiln_vulkan_can_share_memory(a, b)) {
    ss->slot = DEVICE_SLOT;
    ss->slots = 1;
    s = kiln_vulkan_share_memory(a, b, ss->slot, &ss->alloc[0], &ss->alloc[1]);
    if (s != KILN_OK && host_importers(a, b))
      kiln_log(KILN_LOG_INFO,
               "vulkan: copies between two contexts go through host memory: "
               "%s",
               kiln_last_error());
  }
  if (s != KILN_OK && host_importers(a, b)) {
    slots_free(ss);
    s = host_slots(ss);
  }
  if (s != KILN_OK) {
    slots_free(ss);
    free(ss);
    return s;
  }
  kiln_log(KILN_LOG_DEBUG,
           "vulkan: copies between two contexts go through %zu MiB of %s "
           "memory both see",
           ss->slots * ss->slot >> 20, ss->host ? "host" : "device");
  ss->busy = true;
  *out = ss;
  return KILN_OK;
}

/* The pair's idle slots, made if there are none. Give them back with
 * slots_release. */
static kiln_status slots_take(kiln_vulkan_context *a, kiln_vulkan_context *b,
                              shared_slots **out) {
  pthread_mutex_lock(&cache_lock);
  for (shared_slots *ss = cache; ss; ss = ss->next)
    if (!ss->busy && ((ss->ctx[0] == a && ss->ctx[1] == b) ||
                      (ss->ctx[0] == b && ss->ctx[1] == a))) {
      ss->busy = true;
      pthread_mutex_unlock(&cache_lock);
      *out = ss;
      return KILN_OK;
    }
  pthread_mutex_unlock(&cache_lock);
  kiln_status s = slots_create(a, b, out);
  if (s != KILN_OK) return s;
  pthread_mutex_lock(&cache_lock);
  (*out)->next = cache;
  cache = *out;
  pthread_mutex_unlock(&cache_lock);
  return KILN_OK;
}

static void slots_release(shared_slots *ss) {
  pthread_mutex_lock(&cache_lock);
  ss->busy = false;
  pthread_mutex_unlock(&cache_lock);
}

void kiln_vulkan_peer_forget(kiln_vulkan_context *vc) {
  kiln_vulkan_imports_forget(vc);
  shared_slots *gone = NULL;
  unsigned count = 0;
  pthread_mutex_lock(&cache_lock);
  for (shared_slots **at = &cache; *at;) {
    shared_slots *ss = *at;
    if (ss->ctx[0] == vc || ss->ctx[1] == vc) {
      *at = ss->next;
      ss->next = gone;
      gone = ss;
      count++;
    } else {
      at = &ss->next;
    }
  }
  slots_freeing += count;
  pthread_mutex_unlock(&cache_lock);
  while (gone) {
    shared_slots *next = gone->next;
    slots_free(gone);
    free(gone);
    gone = next;
  }
  pthread_mutex_lock(&cache_lock);
  slots_freeing -= count;
  pthread_cond_broadcast(&slots_freed);
  /* The other context of a pair may be freeing their slots now: its
   * thread took them off the list before this one looked. */
  while (slots_freeing) pthread_cond_wait(&slots_freed, &cache_lock);
  pthread_mutex_unlock(&cache_lock);
}

/* One side of a copy between contexts: its stream; its context's copy
 * kernel (NULL: none), taken for pieces of `kernel_min` bytes or more;
 * and whether smaller ones go by the DMA queue, as the slots' chunks do
 * (the two devices hand that engine over in microseconds, and the compute
 * engine in about 200 us), or by the compute queue, as a copy within a
 * context does, where only the destination's device copies. */
typedef struct peer_side {
  kiln_vulkan_stream *st;
  kiln_kernel *copy;
  size_t kernel_min;
  bool dma;
} peer_side;

/* One copy through the slots. */
typedef struct peer_pipe {
  peer_side src, dst;
  const kiln_vulkan_buffer *from;
  kiln_vulkan_buffer *to;
  const kiln_vulkan_allocation *on_src, *on_dst;
  size_t slot;
  uint64_t filled[MAX_SLOTS];  /* src's value once the slot holds its chunk */
  uint64_t emptied[MAX_SLOTS]; /* dst's value once the slot is copied out */
} peer_pipe;

/* Records a copy of n bytes (at most a slot or a piece) on side's stream:
 * through the copy kernel where it has one, the chunk is large enough and
 * of whole words at word-aligned addresses, else with vkCmdCopyBuffer, on
 * the DMA queue where the side asks for it and the stream has one (as if
 * one end were host memory, which it is for host slots). */
static kiln_status record(const peer_side *side,
                          const kiln_vulkan_allocation *to, size_t to_off,
                          const kiln_vulkan_allocation *from, size_t from_off,
                          size_t n) {
  kiln_vulkan_stream *st = side->st;
  const uint64_t dst = to->address + to_off, src = from->address + from_off;
  if (side->copy && n >= side->kernel_min && to->address && from->address &&
      ((dst | src | n) & 3) == 0) {
    const uint32_t words = (uint32_t)(n / 4);
    kiln_packed_args args = {.size = 20, .count = 3, .offsets = {0, 8, 16}};
    memcpy(args.data, &dst, sizeof dst);
    memcpy(args.data + 8, &src, sizeof src);
    memcpy(args.data + 16, &words, sizeof words);
    const kiln_launch_config c = kiln_copy_kernel_config(n);
    return kiln_vulkan_launch(&st->base, side->copy, &c, &args);
  }
  kiln_vulkan_stream_lock(st);
  const kiln_vulkan_lane lane = kiln_vulkan_copy_lane(st, to, from, side->dma);
  kiln_status s = kiln_vulkan_record_copy(st, lane, to->buffer, to_off,
                                          from->buffer, from_off, n);
  kiln_vulkan_stream_unlock(st);
  return s;
}

/* Queues a copy of n bytes on side's stream once `after` has reached
 * `value` (the host orders the two devices); *done gets the value at which
 * the stream has made it. */
static kiln_status copy_after(kiln_vulkan_stream *after, uint64_t value,
                              const peer_side *side,
                              const kiln_vulkan_allocation *to, size_t to_off,
                              const kiln_vulkan_allocation *from,
                              size_t from_off, size_t n, uint64_t *done) {
  kiln_vulkan_stream_lock(after);
  kiln_status s = kiln_vulkan_stream_wait(after, value);
  kiln_vulkan_stream_unlock(after);
  if (s == KILN_OK) s = record(side, to, to_off, from, from_off, n);
  kiln_vulkan_stream *st = side->st;
  kiln_vulkan_stream_lock(st);
  if (s == KILN_OK) s = kiln_vulkan_stream_flush(st);
  *done = st->submitted;
  kiln_vulkan_stream_unlock(st);
  return s;
}

/* Waits, without limit, until neither device touches the slots: the next
 * copy may reuse them, and what the destination got must be seen by every
 * stream's later work, as a host write would be. */
static kiln_status drain(peer_pipe *p) {
  kiln_status s = KILN_OK;
  kiln_vulkan_stream *both[2] = {p->src.st, p->dst.st};
  for (int i = 0; i < 2; i++) {
    kiln_vulkan_stream_lock(both[i]);
    kiln_status w = kiln_vulkan_stream_wait_for(both[i], both[i]->submitted,
                                                KILN_WAIT_FOREVER);
    kiln_vulkan_stream_unlock(both[i]);
    if (s == KILN_OK) s = w;
  }
  return s;
}

/* The copy through ss, which it releases. */
static kiln_status pipelined(peer_pipe *p, shared_slots *ss, size_t dst_off,
                             size_t src_off, size_t size) {
  kiln_vulkan_context *sc = p->src.st->ctx, *dc = p->dst.st->ctx;
  kiln_status s = KILN_OK;
  const int s_at = ss->ctx[0] == sc ? 0 : 1;
  p->on_src = &ss->alloc[s_at];
  p->on_dst = &ss->alloc[1 - s_at];
  p->slot = ss->slot;
  p->src.kernel_min = p->dst.kernel_min = KERNEL_MIN;
  p->src.dma = p->dst.dma = true;
  /* Without the built-in kernels (a build without them) vkCmdCopyBuffer
   * still copies. Taken before any stream lock: loading takes the
   * context's. */
  if (!ss->host && size >= KERNEL_MIN &&
      (kiln_builtin_kernel(&sc->base, "kiln_copy_f32", &p->src.copy) !=
           KILN_OK ||
       kiln_builtin_kernel(&dc->base, "kiln_copy_f32", &p->dst.copy) !=
           KILN_OK))
    p->src.copy = p->dst.copy = NULL;
  const size_t chunks = (size + p->slot - 1) / p->slot;
  const size_t slots = ss->slots, ahead = ss->read_ahead;
  /* Chunk i goes into slot i % slots once the destination has copied that
   * slot's last chunk out, and out of it `ahead` chunks later, once the
   * source has filled it. */
  for (size_t i = 0; s == KILN_OK && i < chunks + ahead; i++) {
    if (i < chunks) {
      const size_t slot = i % slots;
      s = copy_after(p->dst.st, p->emptied[slot], &p->src, p->on_src,
                     slot * p->slot, &p->from->alloc,
                     p->from->offset + src_off + i * p->slot,
                     min_size(p->slot, size - i * p->slot), &p->filled[slot]);
    }
    if (s == KILN_OK && i >= ahead) {
      const size_t k = i - ahead, slot = k % slots;
      s = copy_after(p->src.st, p->filled[slot], &p->dst, &p->to->alloc,
                     p->to->offset + dst_off + k * p->slot, p->on_dst,
                     slot * p->slot, min_size(p->slot, size - k * p->slot),
                     &p->emptied[slot]);
    }
  }
  kiln_status drained = drain(p);
  if (s == KILN_OK) s = drained;
  slots_release(ss);
  return s;
}

/* The copy kernel counts 32-bit words: a direct copy goes in pieces of at
 * most this many bytes (a slot's 256 MiB: each a dispatch of 2^26 words
 * that takes the GPU for about 0.1 ms, so no cost worth one, and a size a
 * test on lavapipe's 2 GiB copies in two pieces). */
#define DIRECT_PIECE ((size_t)256 << 20)

/* The copy out of the source's own block, imported into the destination
 * (`from`): after the source stream's work so far, copies on the
 * destination stream, waited for, as the slots' copies are (drain). Only
 * the destination's device copies, so the copy goes as one within its
 * context would: the kernel from the context's size for it, else
 * vkCmdCopyBuffer on the lane such a copy takes (the compute queue unless
 * KILN_VULKAN_TRANSFER sends device copies elsewhere; the DMA queue took
 * 41 us for 4 KiB and 96 us for 4 MiB on an H200, against a 15 us round
 * trip). */
static kiln_status direct(peer_pipe *p, const kiln_vulkan_allocation *from,
                          size_t dst_off, size_t src_off, size_t size) {
  kiln_vulkan_context *dc = p->dst.st->ctx;
  const size_t kernel_bytes = dc->base.ops->copy_kernel_bytes;
  p->dst.kernel_min = kernel_bytes ? kernel_bytes : SIZE_MAX;
  p->dst.dma = false;
  /* Taken before any stream lock: loading takes the context's. */
  if (size >= p->dst.kernel_min &&
      kiln_builtin_kernel(&dc->base, "kiln_copy_f32", &p->dst.copy) != KILN_OK)
    p->dst.copy = NULL;
  kiln_vulkan_stream *src = p->src.st;
  kiln_vulkan_stream_lock(src);
  kiln_status s = kiln_vulkan_stream_flush(src);
  const uint64_t queued = src->submitted;
  kiln_vulkan_stream_unlock(src);
  const size_t at = p->from->alloc.memory_offset + p->from->offset + src_off;
  for (size_t done = 0; s == KILN_OK && done < size; done += DIRECT_PIECE) {
    uint64_t copied = 0;
    s = copy_after(src, queued, &p->dst, &p->to->alloc,
                   p->to->offset + dst_off + done, from, at + done,
                   min_size(DIRECT_PIECE, size - done), &copied);
  }
  kiln_status drained = drain(p);
  return s == KILN_OK ? drained : s;
}

/* The simple way: a chunk at a time out of src through src_s's staging
 * ring (after src_s's earlier work, and done before this returns, so
 * src_s's later work cannot disturb it) and into dst through dst_s's ring,
 * in dst_s's order. A write returns once its bytes are in the ring, so
 * dst's device copies one chunk in while the host reads the next out. */
static kiln_status through_host(kiln_stream *dst_s, kiln_buffer *dst,
                                size_t dst_off, kiln_stream *src_s,
                                const kiln_buffer *src, size_t src_off,
                                size_t size) {
  size_t chunk = min_size(size, HOST_CHUNK);
  unsigned char *host = malloc(chunk);
  if (!host)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "no %zu bytes of host memory to stage a copy "
                          "between contexts",
                          chunk);
  kiln_status status = KILN_OK;
  for (size_t done = 0; status == KILN_OK && done < size; done += chunk) {
    size_t n = min_size(chunk, size - done);
    status = kiln_vulkan_buffer_read(src_s, src, src_off + done, host, n);
    if (status == KILN_OK)
      status = kiln_vulkan_buffer_write(dst_s, dst, dst_off + done, host, n);
  }
  free(host);
  return status;
}

kiln_status kiln_vulkan_buffer_copy_peer(kiln_stream *dst_s, kiln_buffer *dst,
                                         size_t dst_off, kiln_stream *src_s,
                                         const kiln_buffer *src, size_t src_off,
                                         size_t size) {
  peer_pipe p = {
      .src = {.st = kiln_vulkan_stream_cast(src_s)},
      .dst = {.st = kiln_vulkan_stream_cast(dst_s)},
      .from = kiln_vulkan_buffer_cast_const(src),
      .to = kiln_vulkan_buffer_cast(dst),
  };
  kiln_vulkan_context *sc = p.src.st->ctx, *dc = p.dst.st->ctx;
  /* The source's own block, where it is exportable, spares the slots'
   * second copy and the turns the two devices take on the GPU. */
  const kiln_vulkan_allocation *in = &p.from->alloc;
  if (sc != dc && in->range &&
      (in->range->block->flags & KILN_VULKAN_BLOCK_EXPORTED) &&
      p.to->alloc.any_queue && kiln_vulkan_can_import(sc, dc)) {
    kiln_vulkan_import *imp = NULL;
    if (kiln_vulkan_import_take(sc, in, dc, &imp) == KILN_OK) {
      kiln_status s = direct(&p, kiln_vulkan_import_allocation(imp), dst_off,
                             src_off, size);
      kiln_vulkan_import_give(imp);
      return s;
    }
    kiln_log(KILN_LOG_INFO,
             "vulkan: a copy between two contexts goes through shared "
             "slots: the source's memory could not be imported: %s",
             kiln_last_error());
  }
  /* Device memory both share carries any copy faster than the staging
   * rings, whose reads wait on the host. Slots that cannot be had (no
   * memory for them) leave the rings, which need none. */
  shared_slots *ss = NULL;
  if (sc != dc && p.from->alloc.any_queue && p.to->alloc.any_queue &&
      (kiln_vulkan_can_share_memory(sc, dc) ||
       (size > PIPELINE_MIN && host_importers(sc, dc)))) {
    if (slots_take(sc, dc, &ss) == KILN_OK)
      return pipelined(&p, ss, dst_off, src_off, size);
    kiln_log(KILN_LOG_INFO,
             "vulkan: a copy between two contexts goes through the staging "
             "rings: %s",
             kiln_last_error());
  }
  return through_host(dst_s, dst, dst_off, src_s, src, src_off, size);
}

kiln_status kiln_vulkan_peer_direct(const kiln_context *a,
                                    const kiln_context *b, bool *out_direct) {
  /* Device memory both share carries the copy device to device; without
   * it the bytes go through host memory. */
  *out_direct = kiln_vulkan_can_share_memory(kiln_vulkan_context_cast_const(a),
                                             kiln_vulkan_context_cast_const(b));
  return KILN_OK;
}
