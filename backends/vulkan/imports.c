/* Which contexts export their blocks, and other contexts' imports of
 * them. A context exports while another live kiln context shares its GPU
 * and can import its memory (kiln_vulkan_can_share_memory, and not
 * KILN_VULKAN_PEER=slots): its new device buffers then go to exportable
 * blocks (blocks.c). peer.c imports a source buffer's whole block into
 * the destination's device and copies out of it; an import is kept for
 * that block and destination until the block is freed or either context
 * destroyed. Blocks are known by a serial number blocks.c gives each
 * exportable block, never twice in a process, not by address: a block
 * made where a freed one was must never find the freed one's import.
 *
 * Imports are freed outside the lock, on the destination's device; a
 * context's destruction waits for every such free in progress, so that no
 * thread frees into a device another has destroyed (two contexts may be
 * destroyed at once on two threads). */
#include <pthread.h>
#include <stdlib.h>

#include "backends/vulkan/suballoc.h"
#include "backends/vulkan/vulkan.h"

struct kiln_vulkan_import {
  kiln_vulkan_context *from, *to;
  uint64_t serial; /* the source block's */
  kiln_vulkan_allocation alloc; /* on `to` */
  /* Copies reading it now; one that is `dead` (off the list: its block or
   * a context went) is freed by the last. */
  unsigned users;
  bool dead;
  struct kiln_vulkan_import *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Signalled whenever `freeing` drops. */
static pthread_cond_t freed = PTHREAD_COND_INITIALIZER;
static kiln_vulkan_import *imports;
static kiln_vulkan_context **live;
static size_t live_count, live_cap;
/* Frees of unlisted imports in progress, outside the lock. */
static unsigned freeing;

/* ---- Which contexts export -------------------------------------------- */

bool kiln_vulkan_can_import(const kiln_vulkan_context *a,
                            const kiln_vulkan_context *b) {
  return a != b && a->memory.export_blocks &&
         kiln_vulkan_can_share_memory(a, b);
}

/* Sets each live context's `exporting`; lock held. */
static void decide_exporting(void) {
  for (size_t i = 0; i < live_count; i++) {
    bool any = false;
    for (size_t j = 0; j < live_count && !any; j++)
      any = kiln_vulkan_can_import(live[i], live[j]);
    atomic_store(&live[i]->exporting, any);
  }
}

void kiln_vulkan_imports_join(kiln_vulkan_context *vc) {
  pthread_mutex_lock(&lock);
  if (live_count == live_cap) {
    size_t cap = live_cap ? 2 * live_cap : 8;
    kiln_vulkan_context **grown = realloc(live, cap * sizeof *grown);
    if (!grown) {
      /* Without a place in the list it never exports: its copies take
       * the slots, as buffers made before a second context do. */
      pthread_mutex_unlock(&lock);
      return;
    }
    live = grown;
    live_cap = cap;
  }
  live[live_count++] = vc;
  decide_exporting();
  pthread_mutex_unlock(&lock);
}

/* ---- Imports ------------------------------------------------------------ */

/* Takes off the list the imports `drop` names: those no copy reads go to
 * *out (and count in `freeing` until free_unlisted), the others are
 * marked dead for their last reader. Lock held. */
static void unlist(bool (*drop)(const kiln_vulkan_import *, const void *),
                   const void *arg, kiln_vulkan_import **out) {
  for (kiln_vulkan_import **at = &imports; *at;) {
    kiln_vulkan_import *imp = *at;
    if (!drop(imp, arg)) {
      at = &imp->next;
      continue;
    }
    *at = imp->next;
    if (imp->users) {
      imp->dead = true;
    } else {
      imp->next = *out;
      *out = imp;
      freeing++;
    }
  }
}

/* Frees what unlist gave, the lock not held, and says so to the waiters. */
static void free_unlisted(kiln_vulkan_import *list) {
  unsigned count = 0;
  while (list) {
    kiln_vulkan_import *next = list->next;
    kiln_log(KILN_LOG_DEBUG,
             "vulkan: the import of block %llu into another context "
             "released",
             (unsigned long long)list->serial);
    kiln_vulkan_free(list->to, &list->alloc);
    free(list);
    list = next;
    count++;
  }
  if (!count) return;
  pthread_mutex_lock(&lock);
  freeing -= count;
  pthread_cond_broadcast(&freed);
  pthread_mutex_unlock(&lock);
}

static bool of_block(const kiln_vulkan_import *imp, const void *serial) {
  return imp->serial == *(const uint64_t *)serial;
}

void kiln_vulkan_imports_forget_block(
    kiln_vulkan_context *vc, const struct kiln_vulkan_suballoc_block *block) {
  (void)vc;
  kiln_vulkan_import *gone = NULL;
  pthread_mutex_lock(&lock);
  unlist(of_block, &block->serial, &gone);
  pthread_mutex_unlock(&lock);
  free_unlisted(gone);
}

static bool of_context(const kiln_vulkan_import *imp, const void *vc) {
  return imp->from == vc || imp->to == vc;
}

void kiln_vulkan_imports_forget(kiln_vulkan_context *vc) {
  kiln_vulkan_import *gone = NULL;
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < live_count; i++)
    if (live[i] == vc) {
      live[i] = live[--live_count];
      break;
    }
  decide_exporting();
  unlist(of_context, vc, &gone);
  if (live_count == 0) {
    free(live);
    live = NULL;
    live_cap = 0;
  }
  pthread_mutex_unlock(&lock);
  free_unlisted(gone);
  /* Another thread may be freeing an import into this context, unlisted
   * before this one looked (its source block went). */
  pthread_mutex_lock(&lock);
  while (freeing) pthread_cond_wait(&freed, &lock);
  pthread_mutex_unlock(&lock);
}

kiln_status kiln_vulkan_import_take(kiln_vulkan_context *from,
                                    const kiln_vulkan_allocation *in,
                                    kiln_vulkan_context *to,
                                    kiln_vulkan_import **out) {
  const uint64_t serial = in->range->block->serial;
  pthread_mutex_lock(&lock);
  for (kiln_vulkan_import *imp = imports; imp; imp = imp->next)
    if (imp->serial == serial && imp->to == to) {
      imp->users++;
      pthread_mutex_unlock(&lock);
      *out = imp;
      return KILN_OK;
    }
  pthread_mutex_unlock(&lock);
  /* Made outside the lock (a device call); two threads missing at once
   * make two, both listed, both valid. */
  kiln_vulkan_import *imp = calloc(1, sizeof *imp);
  if (!imp)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory for a copy between contexts");
  kiln_status s = kiln_vulkan_import_block(from, in, to, &imp->alloc);
  if (s != KILN_OK) {
    free(imp);
    return s;
  }
  imp->from = from;
  imp->to = to;
  imp->serial = serial;
  imp->users = 1;
  kiln_log(KILN_LOG_DEBUG,
           "vulkan: block %llu (%llu bytes) imported into another context "
           "for copies out of it",
           (unsigned long long)serial,
           (unsigned long long)in->range->block->size);
  pthread_mutex_lock(&lock);
  imp->next = imports;
  imports = imp;
  pthread_mutex_unlock(&lock);
  *out = imp;
  return KILN_OK;
}

const kiln_vulkan_allocation *
kiln_vulkan_import_allocation(const kiln_vulkan_import *imp) {
  return &imp->alloc;
}

void kiln_vulkan_import_give(kiln_vulkan_import *imp) {
  pthread_mutex_lock(&lock);
  const bool last = --imp->users == 0 && imp->dead;
  if (last) freeing++;
  pthread_mutex_unlock(&lock);
  if (last) {
    imp->next = NULL;
    free_unlisted(imp);
  }
}
