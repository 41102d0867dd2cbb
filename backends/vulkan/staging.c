/* Each stream's staging ring: host-visible memory through which transfers
 * to and from memory the host cannot map go, in chunks, each range kept
 * until the submission that copies through it completes. The ring only
 * keeps the books; the transfers that wait for it to free up are
 * buffer.c's, so that the streams' submission code (which retires ranges)
 * and the ring do not call each other. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

#define STAGING_ALIGN 16

void kiln_vulkan_staging_retire(kiln_vulkan_stream *st) {
  kiln_vulkan_staging *r = &st->staging;
  while (r->count > 0 && r->spans[r->first].value <= st->completed) {
    r->first = (r->first + 1) % r->cap;
    r->count--;
  }
}

void kiln_vulkan_staging_release(kiln_vulkan_stream *st) {
  kiln_vulkan_free(st->ctx, &st->staging.alloc);
  free(st->staging.spans);
  memset(&st->staging, 0, sizeof st->staging);
}

static bool spans_reserve(kiln_vulkan_staging *r) {
  if (r->count < r->cap) return true;
  size_t old = r->cap, cap = old ? old * 2 : 16;
  kiln_vulkan_staging_span *p = realloc(r->spans, cap * sizeof *p);
  if (!p) return false;
  /* Full: [first, old) then [0, first); keep the FIFO in order. */
  memcpy(&p[old], p, r->first * sizeof *p);
  r->spans = p;
  r->cap = cap;
  return true;
}

/* Takes n bytes at the ring's head if they are free, for work that ends
 * at `value`. */
static bool ring_try(kiln_vulkan_staging *r, size_t n, uint64_t value,
                     size_t *out) {
  size_t at;
  if (r->count == 0) {
    at = 0;
  } else {
    size_t tail = r->spans[r->first].begin;
    if (r->head > tail) {
      if (KILN_VULKAN_STAGING_BYTES - r->head >= n)
        at = r->head;
      else if (tail >= n)
        at = 0;
      else
        return false;
    } else if (r->head < tail && tail - r->head >= n) {
      at = r->head;
    } else {
      return false;
    }
  }
  kiln_vulkan_staging_span *last =
      r->count ? &r->spans[(r->first + r->count - 1) % r->cap] : NULL;
  if (last && value != KILN_VULKAN_HELD && last->value == value &&
      last->end == at) {
    last->end = at + n;
  } else {
    if (!spans_reserve(r)) return false;
    kiln_vulkan_staging_span *s = &r->spans[(r->first + r->count) % r->cap];
    s->begin = at;
    s->end = at + n;
    s->value = value;
    r->count++;
  }
  r->head = at + n;
  *out = at;
  return true;
}

kiln_status kiln_vulkan_staging_ready(kiln_vulkan_stream *st) {
  if (st->staging.alloc.buffer) return KILN_OK;
  return kiln_vulkan_allocate(st->ctx, KILN_VULKAN_STAGING_BYTES,
                              KILN_VULKAN_MEMORY_HOST, false,
                              &st->staging.alloc);
}

kiln_status kiln_vulkan_staging_try(kiln_vulkan_stream *st, size_t n,
                                    bool hold, size_t *out,
                                    uint64_t *out_until) {
  kiln_vulkan_staging *r = &st->staging;
  n = (n + STAGING_ALIGN - 1) & ~(size_t)(STAGING_ALIGN - 1);
  kiln_vulkan_staging_retire(st);
  if (r->count == 0) r->head = 0;
  if (ring_try(r, n, hold ? KILN_VULKAN_HELD : st->submitted + 1, out)) {
    *out_until = 0;
    return KILN_OK;
  }
  if (r->count == 0)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory for staging");
  /* Retired above, the oldest range waits for a value past `completed`,
   * so never for 0. */
  *out_until = r->spans[r->first].value;
  return KILN_OK;
}

void kiln_vulkan_staging_unhold(kiln_vulkan_stream *st, size_t at) {
  kiln_vulkan_staging *r = &st->staging;
  for (size_t i = 0; i < r->count; i++) {
    kiln_vulkan_staging_span *s = &r->spans[(r->first + i) % r->cap];
    if (s->begin == at && s->value == KILN_VULKAN_HELD) {
      s->value = 0;
      break;
    }
  }
  kiln_vulkan_staging_retire(st);
}
