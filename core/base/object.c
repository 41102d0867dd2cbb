/* The object header every handle starts with: the registry of live
 * handles, checks, allocation, the context's list of live objects. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Under AddressSanitizer a block in quarantine is poisoned: a read of a
 * destroyed object (kiln's own, since callers' handles are checked first)
 * is reported where it happens, rather than reading what the object held
 * or, once its block serves another object, that object. */
#if defined(__SANITIZE_ADDRESS__)
#define KILN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_ASAN 1
#endif
#endif
#if defined(KILN_ASAN)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/*
 * The registry holds the address and type of every live object, so that a
 * handle is checked before anything behind it is read: a destroyed handle
 * points at freed memory, which even reading is undefined behaviour.
 *
 * An open-addressing hash table with linear probing. A slot is one word:
 * the object's address with its type in the low bits (objects come from
 * malloc, so their addresses are multiples of 8), EMPTY, or GONE where an
 * object was removed. Lookups take no lock, which keeps the check on every
 * launch to a few loads: inserts and removals (under `lock`) write one slot
 * in place and never move another object's entry, and no slot between an
 * entry's home and the entry itself becomes EMPTY while it lives, so a
 * lookup of a live handle always finds it. Only a rebuild (growing the
 * table, or clearing GONE slots once they crowd it) moves entries: it runs
 * between two increments of `seq`, and a lookup that saw `seq` change (or
 * odd) looks again. A table that was outgrown is kept, not freed, as a
 * lookup may still be reading it; together the kept ones are smaller than
 * the current one.
 *
 * Freed blocks also wait in a quarantine of the last QUARANTINE destroyed
 * objects before going back to malloc, so that a handle used shortly after
 * its destroy is not, by chance, a new object of the same type at the same
 * address (which no pointer-sized handle could tell from the old one). The
 * oldest block, due to leave at the next destroy, may instead serve the
 * next object of its size, zeroed: a program that makes and destroys
 * objects in turn (buffers in stream order) then pays no malloc and free
 * a pair, and each block still waits out QUARANTINE - 1 destroys.
 */

#define TYPE_BITS 4u
#define TYPE_MASK ((uintptr_t)((1u << TYPE_BITS) - 1))
#define EMPTY ((uintptr_t)0)
#define GONE ((uintptr_t)1)
#define MIN_SLOTS 256
#define QUARANTINE 64

_Static_assert(KILN_OBJECT_GRAPH <= TYPE_MASK,
               "every object type fits in the slot's low bits");
_Static_assert(_Alignof(max_align_t) > TYPE_MASK,
               "malloc'd addresses leave the type bits free");

typedef struct table {
  size_t mask;     /* slots - 1, slots a power of two */
  unsigned shift;  /* 64 - log2(slots), for the hash */
  struct table *outgrown; /* the one this replaced, kept */
  atomic_uintptr_t slot[];
} table;

static struct {
  pthread_mutex_t lock; /* writers */
  atomic_uint seq;      /* odd while a rebuild moves entries */
  _Atomic(table *) current;
  size_t live, used;    /* entries; entries + GONE slots */
  void *quarantine[QUARANTINE];
  /* Each block's size, kept apart from the block, which is poisoned
   * under AddressSanitizer; 0 where the size is not known. */
  uint32_t quarantine_bytes[QUARANTINE];
  size_t next_out;      /* the oldest block in quarantine */
} reg = {.lock = PTHREAD_MUTEX_INITIALIZER};

static size_t home(const table *t, uintptr_t addr) {
  /* Fibonacci hashing: the multiply spreads the aligned addresses. */
  return (size_t)(((uint64_t)addr * UINT64_C(0x9e3779b97f4a7c15)) >>
                  t->shift);
}

/* The slot word for `addr`, or EMPTY when no live object is there. */
static uintptr_t lookup(uintptr_t addr) {
  for (;;) {
    unsigned seq = atomic_load_explicit(&reg.seq, memory_order_acquire);
    if (seq & 1) {
      sched_yield();
      continue;
    }
    const table *t = atomic_load_explicit(&reg.current, memory_order_acquire);
    uintptr_t found = EMPTY;
    if (t) {
      size_t i = home(t, addr);
      for (size_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
        uintptr_t v = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
        if (v == EMPTY) break;
        if ((v & ~TYPE_MASK) == addr) {
          found = v;
          break;
        }
      }
    }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&reg.seq, memory_order_relaxed) == seq)
      return found;
  }
}

/* Puts an entry into the first free slot from its home (lock held). */
static void place(table *t, uintptr_t entry) {
  size_t i = home(t, entry & ~TYPE_MASK);
  for (;;) {
    uintptr_t v = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
    if (v == EMPTY || v == GONE) {
      if (v == EMPTY) reg.used++;
      atomic_store_explicit(&t->slot[i], entry, memory_order_release);
      return;
    }
    i = (i + 1) & t->mask;
  }
}

static table *new_table(size_t slots) {
  table *t = calloc(1, sizeof *t + slots * sizeof t->slot[0]);
  if (!t) return NULL;
  t->mask = slots - 1;
  unsigned bits = 0;
  while (((size_t)1 << bits) < slots) bits++;
  t->shift = 64 - bits;
  return t;
}

/* Makes room for one more entry: a table at most 3/4 used afterwards, and
 * at most 1/4 live, so that a lookup soon meets an EMPTY slot (lock held).
 * False when out of memory. */
static bool make_room(void) {
  table *t = atomic_load_explicit(&reg.current, memory_order_relaxed);
  if (t && (reg.used + 1) * 4 <= (t->mask + 1) * 3) return true;
  size_t slots = MIN_SLOTS;
  while (slots < (reg.live + 1) * 4) slots *= 2;
  size_t n = 0;
  uintptr_t *entries = NULL;
  if (t) {
    entries = malloc((reg.live + 1) * sizeof *entries);
    if (!entries) return false;
    for (size_t i = 0; i <= t->mask; i++) {
      uintptr_t v = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
      if (v != EMPTY && v != GONE) entries[n++] = v;
    }
  }
  table *target = t && t->mask + 1 >= slots ? t : new_table(slots);
  if (!target) {
    free(entries);
    return false;
  }
  unsigned seq = atomic_load_explicit(&reg.seq, memory_order_relaxed);
  atomic_store_explicit(&reg.seq, seq + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  if (target == t) {
    for (size_t i = 0; i <= t->mask; i++)
      atomic_store_explicit(&t->slot[i], EMPTY, memory_order_relaxed);
  } else {
    target->outgrown = t;
    atomic_store_explicit(&reg.current, target, memory_order_release);
  }
  reg.used = 0;
  for (size_t i = 0; i < n; i++) place(target, entries[i]);
  atomic_store_explicit(&reg.seq, seq + 2, memory_order_release);
  free(entries);
  return true;
}

/* The oldest block in quarantine, zeroed and taken out, when it is of
 * `size` bytes; else NULL (lock held). Its slot stays empty until the next
 * destroy, which would have freed it, writes there. */
static kiln_object *reuse_locked(size_t size) {
  kiln_object *o = reg.quarantine[reg.next_out];
  if (!o || reg.quarantine_bytes[reg.next_out] != size) return NULL;
  reg.quarantine[reg.next_out] = NULL;
  UNPOISON(o, size);
  memset(o, 0, size);
  return o;
}

static void link_last(kiln_object *head, kiln_object *o) {
  o->prev = head->prev;
  o->next = head;
  head->prev->next = o;
  head->prev = o;
}

static void unlink_one(kiln_object *o) {
  o->prev->next = o->next;
  o->next->prev = o->prev;
}

/* A zeroed block of `size` bytes, of type `type`, of `ctx`, entered in the
 * registry and, where `list` is not NULL, on that list of ctx's (both
 * under the registry's lock): the quarantine's oldest block where it
 * fits, else a new one; NULL when out of host memory. */
static kiln_object *registry_new(kiln_context *ctx, kiln_object_type type,
                                 size_t size, bool internal,
                                 kiln_object *list) {
  pthread_mutex_lock(&reg.lock);
  kiln_object *o = reuse_locked(size);
  if (!o) {
    pthread_mutex_unlock(&reg.lock);
    if (!(o = calloc(1, size))) return NULL;
    pthread_mutex_lock(&reg.lock);
  }
  o->type = type;
  o->context = ctx;
  o->internal = internal;
  o->block_bytes = size <= UINT32_MAX ? (uint32_t)size : 0;
  const bool ok = make_room();
  if (ok) {
    place(atomic_load_explicit(&reg.current, memory_order_relaxed),
          (uintptr_t)o | (uintptr_t)type);
    reg.live++;
    if (list) link_last(list, o);
  }
  pthread_mutex_unlock(&reg.lock);
  if (ok) return o;
  free(o);
  return NULL;
}

/* Removes the object's entry (lock held); false if it had none. */
static bool registry_remove_locked(const kiln_object *o) {
  table *t = atomic_load_explicit(&reg.current, memory_order_relaxed);
  if (!t) return false;
  uintptr_t addr = (uintptr_t)o;
  size_t i = home(t, addr);
  for (size_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
    uintptr_t v = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
    if (v == EMPTY) return false;
    if ((v & ~TYPE_MASK) == addr) {
      atomic_store_explicit(&t->slot[i], GONE, memory_order_release);
      reg.live--;
      return true;
    }
  }
  return false;
}

static const char *type_name(kiln_object_type type) {
  switch (type) {
  case KILN_OBJECT_CONTEXT: return "context";
  case KILN_OBJECT_BUFFER: return "buffer";
  case KILN_OBJECT_HOST_BUFFER: return "host buffer";
  case KILN_OBJECT_MODULE: return "module";
  case KILN_OBJECT_KERNEL: return "kernel";
  case KILN_OBJECT_STREAM: return "stream";
  case KILN_OBJECT_EVENT: return "event";
  case KILN_OBJECT_GRAPH: return "graph";
  }
  return "object";
}

kiln_status kiln_object_check(const void *obj, kiln_object_type type,
                              const char *fn, const char *what) {
  if (!obj)
    return kiln_set_error(KILN_ERROR_INVALID_HANDLE, "%s: %s is NULL", fn,
                          what);
  uintptr_t v = lookup((uintptr_t)obj);
  if (v != EMPTY && (v & TYPE_MASK) == (uintptr_t)type) return KILN_OK;
  if (v != EMPTY)
    return kiln_set_error(KILN_ERROR_INVALID_HANDLE,
                          "%s: %s is not a live kiln %s (it is a kiln %s)", fn,
                          what, type_name(type),
                          type_name((kiln_object_type)(v & TYPE_MASK)));
  return kiln_set_error(KILN_ERROR_INVALID_HANDLE,
                        "%s: %s is not a live kiln %s (it was destroyed, "
                        "released with its context, or never created by "
                        "kiln)",
                        fn, what, type_name(type));
}

kiln_status kiln_object_check_in(const void *obj, kiln_object_type type,
                                 const kiln_context *ctx, const char *fn,
                                 const char *what) {
  kiln_status st = kiln_object_check(obj, type, fn, what);
  if (st != KILN_OK) return st;
  const kiln_object *o = obj;
  if (o->context != ctx)
    return kiln_set_error(KILN_ERROR_WRONG_CONTEXT,
                          "%s: %s belongs to another context (%s device "
                          "%zu) than the operation's (%s device %zu)",
                          fn, what, o->context->ops->name,
                          o->context->device_index, ctx->ops->name,
                          ctx->device_index);
  return KILN_OK;
}

kiln_status kiln_context_check_usable(kiln_context *ctx) {
  if (!atomic_load_explicit(&ctx->lost, memory_order_acquire))
    return KILN_OK;
  return kiln_set_error(KILN_ERROR_DEVICE_LOST,
                        "the context is unusable after an earlier device "
                        "fault (%s); destroy it and create a new one",
                        ctx->lost_message);
}

void kiln_context_mark_lost(kiln_context *ctx, const char *why) {
  bool expected = false;
  pthread_mutex_lock(&ctx->lock);
  if (!atomic_load(&ctx->lost)) {
    kiln_strlcpy(ctx->lost_message, why, sizeof ctx->lost_message);
    atomic_compare_exchange_strong(&ctx->lost, &expected, true);
  }
  pthread_mutex_unlock(&ctx->lock);
}

kiln_status kiln_context_result(kiln_context *ctx, kiln_status status) {
  if (status == KILN_ERROR_DEVICE_LOST)
    kiln_context_mark_lost(ctx, kiln_last_error());
  return status;
}

/* The list of ctx's that an object of `type` is on (docs in backend.h):
 * contexts are on none, kernels on their module's. */
static kiln_object *list_of(kiln_context *ctx, kiln_object_type type) {
  switch (type) {
  case KILN_OBJECT_CONTEXT:
  case KILN_OBJECT_KERNEL: return NULL;
  case KILN_OBJECT_STREAM: return &ctx->streams;
  default: return &ctx->objects;
  }
}

void *kiln_object_alloc(kiln_context *ctx, kiln_object_type type, size_t size,
                        bool internal) {
  kiln_object *list = ctx ? list_of(ctx, type) : NULL;
  const bool stream = type == KILN_OBJECT_STREAM;
  kiln_object *o =
      registry_new(ctx, type, size, internal, stream ? NULL : list);
  if (!o) {
    kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                   "out of host memory allocating a %zu-byte %s object",
                   size, type_name(type));
    return NULL;
  }
  if (stream) {
    pthread_mutex_lock(&ctx->lock);
    link_last(list, o);
    pthread_mutex_unlock(&ctx->lock);
  }
  return o;
}

void kiln_object_forget(void *obj) {
  pthread_mutex_lock(&reg.lock);
  registry_remove_locked(obj);
  pthread_mutex_unlock(&reg.lock);
}

void kiln_object_free(void *obj) {
  kiln_object *o = obj;
  /* Decided by type: o->prev may be rewritten by a neighbour's unlink. */
  kiln_object *list = list_of(o->context, o->type);
  if (o->type == KILN_OBJECT_STREAM) {
    pthread_mutex_lock(&o->context->lock);
    unlink_one(o);
    pthread_mutex_unlock(&o->context->lock);
  }
  const uint32_t bytes = o->block_bytes;
  pthread_mutex_lock(&reg.lock);
  if (list && o->type != KILN_OBJECT_STREAM) unlink_one(o);
  registry_remove_locked(o);
  void *out = reg.quarantine[reg.next_out];
  const uint32_t out_bytes = reg.quarantine_bytes[reg.next_out];
  reg.quarantine[reg.next_out] = o;
  reg.quarantine_bytes[reg.next_out] = bytes;
  reg.next_out = (reg.next_out + 1) % QUARANTINE;
  POISON(o, bytes);
  pthread_mutex_unlock(&reg.lock);
  if (out) UNPOISON(out, out_bytes);
  free(out);
}

kiln_status kiln_stream_resolve(kiln_stream *stream, kiln_context *ctx,
                                const char *fn, kiln_stream **out) {
  if (!stream) {
    *out = ctx->default_stream;
    return KILN_OK;
  }
  kiln_status st =
      kiln_object_check_in(stream, KILN_OBJECT_STREAM, ctx, fn, "stream");
  if (st == KILN_OK) *out = stream;
  return st;
}

kiln_status kiln_check_range(size_t offset, size_t size, size_t total,
                             const char *fn, const char *what) {
  if (size > SIZE_MAX - offset)
    return kiln_set_error(KILN_ERROR_OVERFLOW,
                          "%s: offset %zu + size %zu overflows size_t", fn,
                          offset, size);
  if (offset > total || size > total - offset)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: bytes [%zu, %zu) are outside %s of %zu bytes",
                          fn, offset, offset + size, what, total);
  return KILN_OK;
}

kiln_status kiln_check_not_held(const void *o, const char *fn,
                                const char *what) {
  unsigned n = atomic_load(&((const kiln_object *)o)->graph_refs);
  if (n == 0) return KILN_OK;
  return kiln_set_error(KILN_ERROR_INVALID_STATE,
                        "%s: the %s is used by %u captured operation%s of a "
                        "graph; destroy the graph (kiln_graph_destroy) "
                        "first",
                        fn, what, n, n == 1 ? "" : "s");
}

kiln_status kiln_event_internal(kiln_context *ctx, uint32_t flags,
                                kiln_event **out) {
  kiln_event *e =
      kiln_object_alloc(ctx, KILN_OBJECT_EVENT, ctx->ops->event_size, true);
  if (!e) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  e->flags = flags;
  kiln_status st = kiln_context_result(ctx, ctx->ops->event_init(e));
  if (st != KILN_OK) {
    kiln_object_free(e);
    return st;
  }
  *out = e;
  return KILN_OK;
}

void kiln_event_release(kiln_event *e) {
  e->base.context->ops->event_deinit(e);
  kiln_object_free(e);
}
