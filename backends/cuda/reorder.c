/*
 * KILN_DEBUG=reorder on CUDA: each stream's work is held behind a gate and
 * released out of queue order, so that only the program's events, waits and
 * synchronizes order its streams.
 *
 * A gate is a cuStreamWaitValue32 (CU_STREAM_WAIT_VALUE_GEQ) on the
 * stream's own 32-bit word of pinned, device-mapped host memory, queued
 * before the first command on the stream since its last gate opened; the
 * stream goes on a process-wide list of held streams, newest first. Every
 * host wait kiln does for the program (context, stream and event
 * synchronize, event query, blocking read and write, and the waits of the
 * destroys, which come through these) first opens the held gates, newest
 * first: it writes the word, then polls the stream until its work is done
 * or 20 ms have passed. So work on a stream that did not wait for an older
 * stream runs to completion before that stream starts, and the program
 * sees the result a missing wait gives. Work that waits, as it should, for
 * an older stream's still-closed gate cannot finish; the poll gives up
 * after its bound and the next gate opens, so a correct program only runs
 * slower: every gate opens at the first host wait after it was queued,
 * or sooner, once GATE_MAX_HELD commands wait behind the gates.
 *
 * Why gates in the device's queue rather than holding commands on the host
 * and submitting them later, as the fake backend does: the driver copies a
 * launch's arguments and a write's pageable source when the call is made,
 * and kiln's promises (a write's source reusable on return, an event
 * recorded in stream order) hold as they are; only the start of each
 * stream's work moves. The list is process-wide, not per context, because a
 * peer copy makes one context's stream wait for another's: a wait on the
 * one context must open the other's gates too.
 *
 * Not gated: the core's stream that builds a graph (stream capture would
 * record the gate into the graph, and every replay would wait on it), and
 * streams whose native handle other code holds (imported, or handed out by
 * kiln_stream_get_native, and every stream of a context handed out by
 * kiln_context_get_native or made from a native one): that code may wait on
 * them natively, which a closed gate would hang. Code outside kiln that
 * waits for the whole context (cuCtxSynchronize) waits for held work until
 * a wait of kiln's opens it. The words come from pinned pages each context
 * allocates as streams need them and frees only with the context, since a
 * free of pinned memory may wait for the whole device, held gates and all.
 * One lock, taken only in this mode, guards the list and the pages; off,
 * the mode costs each op one predictable branch (kiln_cuda_hold).
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "backends/cuda/cuda.h"

/* How long a host wait lets an opened stream run before it opens the next
 * gate: longer than most test kernels take, short enough that the waits of
 * a correct program (each bounded so) stay quick. */
#define GATE_POLL_NS 20000000u

/* Words per page of gates: one 4 KiB page. */
#define GATE_WORDS 1024u

struct kiln_cuda_gate_page {
  struct kiln_cuda_gate_page *next;
  _Atomic uint32_t *host;
  CUdeviceptr device;
  uint32_t used;
};

/* Commands queued behind closed gates before the gates open as at a host
 * wait. The device's queue has room for a bounded number of commands (on
 * an H200, driver 580, a stream filled with fills and graph launches
 * stopped taking more within a thousand), and a call that finds it full
 * blocks in the driver until it drains, which a closed gate never lets
 * happen: a program that queues more between two host waits would hang. */
#define GATE_MAX_HELD 64u

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;

/* Commands queued on held streams since the gates last opened; under
 * gate_lock. */
static unsigned held_commands;

/* Opens every held gate, newest first, each stream given a bounded time
 * to finish before the next opens. */
static void release(void);

/* Streams with a closed gate, the newest first; under gate_lock. */
static kiln_cuda_stream *held;

kiln_status kiln_cuda_reorder_check(const kiln_context *ctx) {
  if (!(ctx->debug & KILN_DEBUG_REORDER)) return KILN_OK;
  if (!kiln_cuda_api.cuStreamWaitValue32 ||
      !kiln_cuda_api.cuMemHostGetDevicePointer)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "KILN_DEBUG=reorder needs cuStreamWaitValue32 of "
                          "CUDA 11.7, which the CUDA driver (%d.%d) lacks",
                          kiln_cuda_api.driver_version / 1000,
                          kiln_cuda_api.driver_version % 1000 / 10);
  return KILN_OK;
}

/* Takes s's word from its context's pages, making a page where none has
 * room; the context is current. */
static kiln_status take_word(kiln_cuda_stream *s) {
  kiln_cuda_context *ctx = kiln_cuda_context_cast(s->base.base.context);
  struct kiln_cuda_gate_page *page = ctx->gate_pages;
  if (!page || page->used == GATE_WORDS) {
    page = calloc(1, sizeof *page);
    if (!page)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "KILN_DEBUG=reorder: out of host memory");
    void *host = NULL;
    CUresult r = kiln_cuda_api.cuMemHostAlloc(
        &host, GATE_WORDS * sizeof(uint32_t),
        CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_SUCCESS)
      r = kiln_cuda_api.cuMemHostGetDevicePointer(&page->device, host, 0);
    if (r != CUDA_SUCCESS) {
      if (host) kiln_cuda_api.cuMemFreeHost(host);
      free(page);
      return kiln_cuda_error(r,
                             "KILN_DEBUG=reorder: cuMemHostAlloc of a "
                             "page of mapped gate words");
    }
    page->host = host;
    for (uint32_t i = 0; i < GATE_WORDS; i++) atomic_init(&page->host[i], 0);
    page->next = ctx->gate_pages;
    ctx->gate_pages = page;
  }
  s->gate = &page->host[page->used];
  s->gate_device = page->device + page->used * sizeof(uint32_t);
  s->gate_value = 0;
  page->used++;
  return KILN_OK;
}

kiln_status kiln_cuda_reorder_stream_init(kiln_stream *base) {
  if (!(base->base.context->debug & KILN_DEBUG_REORDER) || base->borrowed)
    return KILN_OK;
  pthread_mutex_lock(&gate_lock);
  kiln_status st = take_word(kiln_cuda_stream_cast(base));
  pthread_mutex_unlock(&gate_lock);
  return st;
}

/* Takes s off the held list and opens its gate; under gate_lock. */
static void open_gate(kiln_cuda_stream *s) {
  kiln_cuda_stream **p = &held;
  while (*p != s) p = &(*p)->next_held;
  *p = s->next_held;
  s->next_held = NULL;
  s->gated = false;
  atomic_store(s->gate, s->gate_value);
}

void kiln_cuda_reorder_stream_deinit(kiln_stream *base) {
  kiln_cuda_stream *s = kiln_cuda_stream_cast(base);
  if (!s->gate) return;
  pthread_mutex_lock(&gate_lock);
  if (s->gated) open_gate(s);
  s->gate = NULL;
  pthread_mutex_unlock(&gate_lock);
}

void kiln_cuda_reorder_expose(kiln_context *ctx, kiln_stream *s) {
  if (!(ctx->debug & KILN_DEBUG_REORDER)) return;
  pthread_mutex_lock(&gate_lock);
  if (s)
    kiln_cuda_stream_cast(s)->exposed = true;
  else
    kiln_cuda_context_cast(ctx)->exposed = true;
  pthread_mutex_unlock(&gate_lock);
  release();
}

static kiln_status gate(kiln_stream *base) {
  kiln_cuda_stream *s = kiln_cuda_stream_cast(base);
  kiln_context *ctx = base->base.context;
  kiln_status st = KILN_OK;
  bool full = false;
  pthread_mutex_lock(&gate_lock);
  if (s->gated) {
    full = ++held_commands >= GATE_MAX_HELD;
  } else if (s->gate && !s->exposed && !base->building &&
      !kiln_cuda_context_cast(ctx)->exposed &&
      (st = kiln_cuda_make_current(ctx)) == KILN_OK) {
    CUresult r = kiln_cuda_api.cuStreamWaitValue32(
        s->handle, s->gate_device, s->gate_value + 1, CU_STREAM_WAIT_VALUE_GEQ);
    if (r != CUDA_SUCCESS) {
      st = kiln_cuda_error(r,
                           "KILN_DEBUG=reorder: cuStreamWaitValue32 "
                           "(a stream's gate)");
    } else {
      s->gate_value++;
      s->gated = true;
      s->next_held = held;
      held = s;
    }
  }
  pthread_mutex_unlock(&gate_lock);
  if (full) {
    release();
    return gate(base);
  }
  return st;
}

/* Opens every held gate (gate_lock held). */
static void release_locked(void) {
  held_commands = 0;
  CUcontext before = NULL;
  kiln_cuda_api.cuCtxGetCurrent(&before);
  bool switched = false;
  while (held) {
    kiln_cuda_stream *s = held;
    open_gate(s);
    /* The query needs the stream's context current. A failure is left
     * for the wait that follows to find and report. */
    switched = true;
    if (kiln_cuda_set_current(s->base.base.context) != CUDA_SUCCESS) continue;
    const uint64_t start = kiln_now_ns();
    while (kiln_cuda_api.cuStreamQuery(s->handle) == CUDA_ERROR_NOT_READY &&
           kiln_now_ns() - start < GATE_POLL_NS)
      sched_yield();
  }
  if (switched) kiln_cuda_api.cuCtxSetCurrent(before);
}

static void release(void) {
  pthread_mutex_lock(&gate_lock);
  release_locked();
  pthread_mutex_unlock(&gate_lock);
}

void kiln_cuda_reorder_deinit(kiln_context *base) {
  kiln_cuda_context *ctx = kiln_cuda_context_cast(base);
  struct kiln_cuda_gate_page *page = ctx->gate_pages;
  ctx->gate_pages = NULL;
  /* A free of pinned memory may wait for the device, other contexts'
   * held work included. */
  kiln_cuda_gates_stay_open(base, true);
  while (page) {
    struct kiln_cuda_gate_page *next = page->next;
    /* Work still running may wait on a word: keep the page. */
    if (!base->abandoned) {
      CUresult r = kiln_cuda_api.cuMemFreeHost((void *)page->host);
      if (r != CUDA_SUCCESS)
        kiln_cuda_warn(r, "cuMemFreeHost (KILN_DEBUG=reorder's gate words)");
    }
    free(page);
    page = next;
  }
  kiln_cuda_gates_stay_open(base, false);
}

kiln_status kiln_cuda_hold(kiln_stream *s) {
  if (!(s->base.context->debug & KILN_DEBUG_REORDER)) return KILN_OK;
  return gate(s);
}

void kiln_cuda_open_gates(const kiln_context *ctx) {
  if (ctx->debug & KILN_DEBUG_REORDER) release();
}

void kiln_cuda_gates_stay_open(const kiln_context *ctx, bool open) {
  if (!(ctx->debug & KILN_DEBUG_REORDER)) return;
  if (open) {
    pthread_mutex_lock(&gate_lock);
    release_locked();
  } else {
    pthread_mutex_unlock(&gate_lock);
  }
}
