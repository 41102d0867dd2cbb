/* Trace hooks. The door (core/submit/submit.c) brackets each command it
 * issues with kiln_trace_begin and kiln_trace_end, which tell the handler
 * in force and the context's KILN_TRACE sinks (the log here, profiler
 * ranges in trace_nvtx.c and, for nvtx, the backend's debug labels, by the
 * same name) and, for a handler that asked for completions,
 * time the command (trace_timing.c); the host waits then report the
 * completions they made known through kiln_trace_completed. */
#include <stdio.h>
#include <string.h>

#include "core/submit/trace.h"

atomic_uint kiln_trace_on;

/* The handler, its user data and its flags, set together under `lock`
 * and read together without it (the door reads them at each command):
 * a writer makes `handler_seq` odd while it changes them, and a reader that
 * saw it odd, or changed, reads again. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint handler_seq;
static _Atomic(kiln_trace_handler) handler;
static _Atomic(void *) handler_data;
static atomic_uint handler_flags;

/* The last id given to a timed command. */
static _Atomic uint64_t last_id;

static void set_handler(kiln_trace_handler h, uint32_t flags, void *data) {
  pthread_mutex_lock(&lock);
  const bool had = atomic_load_explicit(&handler, memory_order_relaxed);
  if (had != (h != NULL)) {
    if (h)
      atomic_fetch_add_explicit(&kiln_trace_on, 1, memory_order_relaxed);
    else
      atomic_fetch_sub_explicit(&kiln_trace_on, 1, memory_order_relaxed);
  }
  atomic_fetch_add_explicit(&handler_seq, 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&handler, h, memory_order_relaxed);
  atomic_store_explicit(&handler_data, data, memory_order_relaxed);
  atomic_store_explicit(&handler_flags, flags, memory_order_relaxed);
  atomic_fetch_add_explicit(&handler_seq, 1, memory_order_release);
  pthread_mutex_unlock(&lock);
}

/* The handler in force, its data and flags, as one set call left them. */
static void get_handler(kiln_trace_mark *m) {
  for (;;) {
    unsigned v = atomic_load_explicit(&handler_seq, memory_order_acquire);
    m->handler = atomic_load_explicit(&handler, memory_order_relaxed);
    m->user_data = atomic_load_explicit(&handler_data, memory_order_relaxed);
    m->flags = atomic_load_explicit(&handler_flags, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (!(v & 1) &&
        v == atomic_load_explicit(&handler_seq, memory_order_relaxed))
      return;
  }
}

void kiln_set_trace_handler(kiln_trace_handler h, void *user_data) {
  set_handler(h, 0, user_data);
}

kiln_status kiln_set_trace_handler_ex(kiln_trace_handler h, uint32_t flags,
                                      void *user_data) {
  const uint32_t known = KILN_TRACE_COMPLETIONS;
  if (flags & ~known)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_set_trace_handler_ex: flags 0x%x has bits "
                          "that are no kiln_trace_flags (0x%x); the handler "
                          "in force was kept",
                          (unsigned)flags, (unsigned)(flags & ~known));
  set_handler(h, flags, user_data);
  return KILN_OK;
}

static kiln_trace_kind public_kind(kiln_command_kind kind) {
  switch (kind) {
  case KILN_COMMAND_LAUNCH: return KILN_TRACE_LAUNCH;
  case KILN_COMMAND_COPY: return KILN_TRACE_COPY;
  case KILN_COMMAND_FILL:
  case KILN_COMMAND_FILL_HOST: return KILN_TRACE_FILL;
  case KILN_COMMAND_RECORD: return KILN_TRACE_RECORD;
  case KILN_COMMAND_WAIT: return KILN_TRACE_WAIT;
  case KILN_COMMAND_WRITE: return KILN_TRACE_WRITE;
  case KILN_COMMAND_READ: return KILN_TRACE_READ;
  case KILN_COMMAND_WRITE_ASYNC: return KILN_TRACE_WRITE_ASYNC;
  case KILN_COMMAND_READ_ASYNC: return KILN_TRACE_READ_ASYNC;
  case KILN_COMMAND_COPY_PEER: return KILN_TRACE_COPY_PEER;
  case KILN_COMMAND_WAIT_NATIVE: return KILN_TRACE_WAIT_NATIVE;
  case KILN_COMMAND_ALLOC: return KILN_TRACE_ALLOC;
  case KILN_COMMAND_FREE: return KILN_TRACE_FREE;
  case KILN_COMMAND_REPLAY: return KILN_TRACE_GRAPH_LAUNCH;
  }
  return KILN_TRACE_LAUNCH;
}

static void describe(kiln_stream *s, const kiln_command *c,
                     kiln_trace_command *t) {
  memset(t, 0, sizeof *t);
  t->size = sizeof *t;
  t->kind = public_kind(c->kind);
  t->stream = s;
  t->context = s->base.context;
  if (c->kind == KILN_COMMAND_LAUNCH) {
    t->kernel_name = c->kernel->name;
    t->grid = c->config.grid;
    t->block = c->config.block;
  } else if (kiln_command_moves_bytes(c->kind)) {
    t->bytes = c->size;
  }
}


/* ---- KILN_TRACE=log ------------------------------------------------------ */

static const char *const kind_names[] = {
    [KILN_TRACE_LAUNCH] = "launch",
    [KILN_TRACE_COPY] = "copy",
    [KILN_TRACE_FILL] = "fill",
    [KILN_TRACE_RECORD] = "event record",
    [KILN_TRACE_WAIT] = "event wait",
    [KILN_TRACE_WRITE] = "write",
    [KILN_TRACE_READ] = "read",
    [KILN_TRACE_WRITE_ASYNC] = "async write",
    [KILN_TRACE_READ_ASYNC] = "async read",
    [KILN_TRACE_COPY_PEER] = "peer copy",
    [KILN_TRACE_WAIT_NATIVE] = "native wait",
    [KILN_TRACE_ALLOC] = "allocation",
    [KILN_TRACE_FREE] = "release",
    [KILN_TRACE_GRAPH_LAUNCH] = "graph launch",
};

/* "trace: launch 'saxpy' grid 4x1x1 block 256x1x1 on stream 0x... of
 * context 0x..." or "trace: copy of 4096 bytes on stream ...". */
static void log_command(const kiln_trace_command *t) {
  char what[192];
  if (t->kind == KILN_TRACE_LAUNCH)
    snprintf(what, sizeof what, "launch '%.96s' grid %ux%ux%u block %ux%ux%u",
             t->kernel_name, t->grid.x, t->grid.y, t->grid.z, t->block.x,
             t->block.y, t->block.z);
  else if (t->bytes)
    snprintf(what, sizeof what, "%s of %zu byte%s", kind_names[t->kind],
             t->bytes, t->bytes == 1 ? "" : "s");
  else
    snprintf(what, sizeof what, "%s", kind_names[t->kind]);
  char line[320];
  snprintf(line, sizeof line, "trace: %s on stream %p of context %p", what,
           (void *)t->stream, (void *)t->context);
  kiln_log_always(KILN_LOG_INFO, line);
}

/* ---- The door's hooks ---------------------------------------------------- */

void kiln_trace_begin(kiln_stream *s, const kiln_command *c,
                      kiln_trace_mark *m) {
  get_handler(m);
  m->id = 0;
  m->start = NULL;
  if (m->handler && (m->flags & KILN_TRACE_COMPLETIONS)) {
    m->start = kiln_timing_start(s);
    if (m->start)
      m->id = atomic_fetch_add_explicit(&last_id, 1, memory_order_relaxed) + 1;
  }
  kiln_context *ctx = s->base.context;
  if (ctx->trace_sinks & KILN_TRACE_SINK_NVTX) {
    const char *name = kiln_range_name(c, m->name, sizeof m->name);
    kiln_ranges_push(c, name);
    if (ctx->ops->labels) ctx->ops->labels->stream_label_begin(s, name);
  }
}

void kiln_trace_end(kiln_stream *s, const kiln_command *c, kiln_trace_mark *m,
                    bool issued) {
  kiln_context *ctx = s->base.context;
  if (ctx->trace_sinks & KILN_TRACE_SINK_NVTX) {
    if (ctx->ops->labels) ctx->ops->labels->stream_label_end(s);
    kiln_ranges_pop();
  }
  if (!issued) {
    if (m->start) kiln_timing_drop(s, m->start);
    return;
  }
  kiln_trace_command t;
  describe(s, c, &t);
  t.id = m->id;
  /* A read is done when it returns, and so is what came before it. */
  if (c->kind == KILN_COMMAND_READ) kiln_trace_waited(ctx, s, NULL);
  if (m->start &&
      kiln_timing_end(s, m->start, &t,
                      c->kind == KILN_COMMAND_RECORD ? c->event : NULL))
    kiln_trace_completed(ctx, NULL, NULL);
  if (ctx->trace_sinks & KILN_TRACE_SINK_LOG) log_command(&t);
  if (m->handler) m->handler(&t, m->user_data);
}

void kiln_trace_waited(kiln_context *ctx, const kiln_stream *s,
                       const kiln_event *e) {
  if (atomic_load_explicit(&ctx->trace, memory_order_acquire))
    kiln_trace_completed(ctx, s, e);
}

void kiln_trace_completed(kiln_context *ctx, const kiln_stream *s,
                          const kiln_event *e) {
  kiln_trace_command *done;
  size_t n = kiln_timing_collect(ctx, s, e, &done);
  if (n == 0) return;
  kiln_trace_mark m;
  get_handler(&m);
  if (m.handler && (m.flags & KILN_TRACE_COMPLETIONS))
    for (size_t i = 0; i < n; i++) m.handler(&done[i], m.user_data);
  kiln_timing_free(done, n);
}

void kiln_trace_stream_release(kiln_stream *s) {
  kiln_context *ctx = s->base.context;
  if (!atomic_load_explicit(&ctx->trace, memory_order_acquire)) return;
  if (!atomic_load(&ctx->lost)) kiln_trace_completed(ctx, s, NULL);
  kiln_timing_forget_stream(s);
}

/* ---- KILN_TRACE and contexts ---------------------------------------------- */

static const struct {
  const char *name;
  unsigned bit;
} sinks[] = {{"log", KILN_TRACE_SINK_LOG}, {"nvtx", KILN_TRACE_SINK_NVTX}};
#define SINK_COUNT (sizeof sinks / sizeof sinks[0])

kiln_status kiln_trace_from_env(const kiln_backend_ops *ops,
                                unsigned *out_sinks) {
  const char *v = kiln_getenv("KILN_TRACE");
  unsigned on = 0;
  for (const char *p = v; p;) {
    size_t n = strcspn(p, ","), i = 0;
    while (i < SINK_COUNT && !(strlen(sinks[i].name) == n &&
                               strncmp(p, sinks[i].name, n) == 0))
      i++;
    if (i == SINK_COUNT)
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "KILN_TRACE=\"%.64s\" names \"%.*s\", which is "
                            "no trace sink; it takes a comma-separated list "
                            "of: log, nvtx (unset or empty: none)",
                            v, (int)(n < 64 ? n : 64), p);
    on |= sinks[i].bit;
    p = p[n] ? p + n + 1 : NULL;
  }
  if (on & KILN_TRACE_SINK_NVTX) {
    kiln_status st = kiln_ranges_open(!ops->labels);
    if (st != KILN_OK) return st;
  }
  *out_sinks = on;
  return KILN_OK;
}

void kiln_trace_context_open(kiln_context *ctx, unsigned on) {
  ctx->trace_sinks = on;
  if (on) atomic_fetch_add_explicit(&kiln_trace_on, 1, memory_order_relaxed);
}

void kiln_trace_context_close(kiln_context *ctx) {
  if (ctx->trace_sinks)
    atomic_fetch_sub_explicit(&kiln_trace_on, 1, memory_order_relaxed);
  ctx->trace_sinks = 0;
  kiln_timing_close(ctx);
}
