/*
 * KILN_DEBUG=reorder on HIP, the twin of backends/cuda/reorder.c: each
 * stream's work is held behind a gate and released out of queue order, so
 * that only the program's events, waits and synchronizes order its streams.
 *
 * A gate is a hipStreamWaitValue32 (hipStreamWaitValueGte) on the stream's
 * own 32-bit word of pinned, device-mapped host memory, queued before the
 * first command on the stream since its last gate opened; the stream goes
 * on a process-wide list of held streams, newest first. Every host wait
 * kiln does for the program (context, stream and event synchronize, event
 * query, blocking read and write, and the frees, which hipFree and
 * hipHostFree make waits for the whole device) first opens the held gates,
 * newest first: it writes the word, then polls the stream until its work
 * is done or 20 ms have passed. So work on a stream that did not wait for
 * an older stream runs to completion before that stream starts, and the
 * program sees the result a missing wait gives. Work that waits, as it
 * should, for an older stream's still-closed gate cannot finish; the poll
 * gives up after its bound and the next gate opens, so a correct program
 * only runs slower: every gate opens at the first host wait after it was
 * queued, or sooner, once GATE_MAX_HELD commands wait behind the gates.
 *
 * Why gates in the device's queue rather than holding commands on the host
 * and submitting them later, as the fake backend does: the runtime copies a
 * launch's arguments when the call is made, and kiln's promises (a write's
 * source reusable on return, an event recorded in stream order) hold as
 * they are; only the start of each
 * stream's work moves. The list is process-wide, not per context, because a
 * peer copy makes one context's stream wait for another's: a wait on the
 * one context must open the other's gates too. A blocking write waits for
 * its stream on HIP (buffer.c), so it opens the gates as a read does.
 *
 * Not gated: the core's stream that builds a graph (stream capture would
 * record the gate into the graph, and every replay would wait on it), and
 * streams whose native handle other code holds (imported, or handed out by
 * kiln_stream_get_native, and every stream of a context handed out by
 * kiln_context_get_native or made from a native one): that code may wait on
 * them natively, which a closed gate would hang. Code outside kiln that
 * waits for the whole device (hipDeviceSynchronize) waits for held work
 * until a wait of kiln's opens it. The words come from pinned pages each
 * context allocates as streams need them and frees only with the context,
 * since hipHostFree waits for the whole device, held gates and all.
 * One lock, taken only in this mode, guards the list and the pages; off,
 * the mode costs each op one predictable branch (kiln_hip_hold).
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "backends/hip/hip.h"

/* How long a host wait lets an opened stream run before it opens the next
 * gate: longer than most test kernels take, short enough that the waits of
 * a correct program (each bounded so) stay quick. */
#define GATE_POLL_NS 20000000u

/* Words per page of gates: one 4 KiB page. */
#define GATE_WORDS 1024u

struct kiln_hip_gate_page {
  struct kiln_hip_gate_page *next;
  _Atomic uint32_t *host;
  void *device;
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
static kiln_hip_stream *held;

kiln_status kiln_hip_reorder_check(const kiln_context *ctx) {
  if (!(ctx->debug & KILN_DEBUG_REORDER)) return KILN_OK;
  if (!kiln_hip_api.hipStreamWaitValue32 ||
      !kiln_hip_api.hipHostGetDevicePointer)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "KILN_DEBUG=reorder needs hipStreamWaitValue32 and "
                          "hipHostGetDevicePointer, which the HIP runtime "
                          "lacks");
  return KILN_OK;
}

/* Takes s's word from its context's pages, making a page where none has
 * room. */
static kiln_status take_word(kiln_hip_stream *s) {
  kiln_context *base = s->base.base.context;
  kiln_hip_context *ctx = kiln_hip_context_cast(base);
  struct kiln_hip_gate_page *page = ctx->gate_pages;
  if (!page || page->used == GATE_WORDS) {
    page = calloc(1, sizeof *page);
    if (!page)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "KILN_DEBUG=reorder: out of host memory");
    kiln_hip_device_scope scope;
    kiln_status st = kiln_hip_device_enter(base, &scope);
    if (st != KILN_OK) {
      free(page);
      return st;
    }
    void *host = NULL;
    hipError_t err =
        kiln_hip_api.hipHostMalloc(&host, GATE_WORDS * sizeof(uint32_t),
                                   hipHostMallocMapped | hipHostMallocPortable);
    if (err == hipSuccess)
      err = kiln_hip_api.hipHostGetDevicePointer(&page->device, host, 0);
    if (err != hipSuccess && host) kiln_hip_api.hipHostFree(host);
    kiln_hip_device_leave(&scope);
    if (err != hipSuccess) {
      free(page);
      return kiln_hip_error(err,
                            "KILN_DEBUG=reorder: hipHostMalloc of a "
                            "page of mapped gate words");
    }
    page->host = host;
    for (uint32_t i = 0; i < GATE_WORDS; i++) atomic_init(&page->host[i], 0);
    page->next = ctx->gate_pages;
    ctx->gate_pages = page;
  }
  s->gate = &page->host[page->used];
  s->gate_device = (char *)page->device + page->used * sizeof(uint32_t);
  s->gate_value = 0;
  page->used++;
  return KILN_OK;
}

kiln_status kiln_hip_reorder_stream_init(kiln_stream *base) {
  if (!(base->base.context->debug & KILN_DEBUG_REORDER) || base->borrowed)
    return KILN_OK;
  pthread_mutex_lock(&gate_lock);
  kiln_status st = take_word(kiln_hip_stream_cast(base));
  pthread_mutex_unlock(&gate_lock);
  return st;
}

/* Takes s off the held list and opens its gate; under gate_lock. */
static void open_gate(kiln_hip_stream *s) {
  kiln_hip_stream **p = &held;
  while (*p != s) p = &(*p)->next_held;
  *p = s->next_held;
  s->next_held = NULL;
  s->gated = false;
  atomic_store(s->gate, s->gate_value);
}

void kiln_hip_reorder_stream_deinit(kiln_stream *base) {
  kiln_hip_stream *s = kiln_hip_stream_cast(base);
  if (!s->gate) return;
  pthread_mutex_lock(&gate_lock);
  if (s->gated) open_gate(s);
  s->gate = NULL;
  pthread_mutex_unlock(&gate_lock);
}

void kiln_hip_reorder_expose(kiln_context *ctx, kiln_stream *s) {
  if (!(ctx->debug & KILN_DEBUG_REORDER)) return;
  pthread_mutex_lock(&gate_lock);
  if (s)
    kiln_hip_stream_cast(s)->exposed = true;
  else
    kiln_hip_context_cast(ctx)->exposed = true;
  pthread_mutex_unlock(&gate_lock);
  release();
}

static kiln_status gate(kiln_stream *base) {
  kiln_hip_stream *s = kiln_hip_stream_cast(base);
  kiln_status st = KILN_OK;
  bool full = false;
  pthread_mutex_lock(&gate_lock);
  if (s->gated) {
    full = ++held_commands >= GATE_MAX_HELD;
  } else if (s->gate && !s->exposed && !base->building &&
      !kiln_hip_context_cast(base->base.context)->exposed) {
    hipError_t err = kiln_hip_api.hipStreamWaitValue32(
        s->handle, s->gate_device, s->gate_value + 1, hipStreamWaitValueGte,
        0xffffffffu);
    if (err != hipSuccess) {
      st = kiln_hip_error(err,
                          "KILN_DEBUG=reorder: hipStreamWaitValue32 "
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
  while (held) {
    kiln_hip_stream *s = held;
    open_gate(s);
    /* A failure is left for the wait that follows to find and report. */
    const uint64_t start = kiln_now_ns();
    while (kiln_hip_api.hipStreamQuery(s->handle) == hipErrorNotReady &&
           kiln_now_ns() - start < GATE_POLL_NS)
      sched_yield();
  }
}

static void release(void) {
  pthread_mutex_lock(&gate_lock);
  release_locked();
  pthread_mutex_unlock(&gate_lock);
}

void kiln_hip_reorder_deinit(kiln_context *base) {
  kiln_hip_context *ctx = kiln_hip_context_cast(base);
  struct kiln_hip_gate_page *page = ctx->gate_pages;
  ctx->gate_pages = NULL;
  /* A free of pinned memory may wait for the device, other contexts'
   * held work included. */
  kiln_hip_gates_stay_open(base, true);
  while (page) {
    struct kiln_hip_gate_page *next = page->next;
    /* Work still running may wait on a word: keep the page. */
    if (!base->abandoned) {
      hipError_t err = kiln_hip_api.hipHostFree((void *)page->host);
      if (err != hipSuccess)
        kiln_hip_warn(err, "hipHostFree (KILN_DEBUG=reorder's gate words)");
    }
    free(page);
    page = next;
  }
  kiln_hip_gates_stay_open(base, false);
}

kiln_status kiln_hip_hold(kiln_stream *s) {
  if (!(s->base.context->debug & KILN_DEBUG_REORDER)) return KILN_OK;
  return gate(s);
}

void kiln_hip_open_gates(const kiln_context *ctx) {
  if (ctx->debug & KILN_DEBUG_REORDER) release();
}

void kiln_hip_gates_stay_open(const kiln_context *ctx, bool open) {
  if (!(ctx->debug & KILN_DEBUG_REORDER)) return;
  if (open) {
    pthread_mutex_lock(&gate_lock);
    release_locked();
  } else {
    pthread_mutex_unlock(&gate_lock);
  }
}
