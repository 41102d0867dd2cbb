/* The door's capture hook (core/submit/submit.c calls it first): a command
 * on a capturing stream is kept in its graph or refused there, never
 * issued; a wait on an event that an open capture recorded last joins the
 * stream to that capture, as CUDA's stream capture does (kiln.h,
 * "Branches"). What a graph then does with its commands is
 * core/api/graph.c's. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static bool capturable(kiln_command_kind kind) {
  return kind <= KILN_COMMAND_WAIT;
}

kiln_status kiln_capture_refuse(kiln_stream *s, const char *fn) {
  if (!kiln_stream_capturing(s)) return KILN_OK;
  return kiln_set_error(KILN_ERROR_INVALID_STATE,
                        "%s: the stream is capturing a graph, and this call "
                        "cannot be captured (it needs the host); nothing "
                        "was done and the capture goes on",
                        fn);
}

void kiln_command_objects(const kiln_command *c, void (*f)(const void *o)) {
  switch (c->kind) {
  case KILN_COMMAND_LAUNCH:
    f(c->kernel->module);
    for (size_t i = 0; i < c->arg_count; i++)
      if (c->args[i].type == KILN_ARG_BUFFER) f(c->args[i].value.buffer.buffer);
    break;
  case KILN_COMMAND_COPY:
    f(c->src);
    f(c->dst);
    break;
  case KILN_COMMAND_FILL:
  case KILN_COMMAND_ALLOC:
  case KILN_COMMAND_FREE: f(c->dst); break;
  case KILN_COMMAND_RECORD:
  case KILN_COMMAND_WAIT: f(c->event); break;
  default: break;
  }
}

/* c as a graph keeps it: its launch arguments copied. */
static kiln_status keep(const kiln_command *c, kiln_command *out) {
  *out = *c;
  if (c->kind != KILN_COMMAND_LAUNCH) return KILN_OK;
  kiln_arg *args = malloc(c->arg_count ? c->arg_count * sizeof *args : 1);
  out->packed = malloc(sizeof *out->packed);
  if (!args || !out->packed) {
    free(args);
    free(out->packed);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_launch: out of host memory capturing it");
  }
  *out->packed = *c->packed;
  if (c->arg_count) memcpy(args, c->args, c->arg_count * sizeof *args);
  out->args = args;
  return KILN_OK;
}

/* Appends c to s's capture, taking the graph's hold on what it uses.
 * Under the context lock: threads may issue to one stream at once. */
static kiln_status capture(kiln_stream *s, const kiln_command *c) {
  kiln_command kept;
  kiln_status st = keep(c, &kept);
  if (st != KILN_OK) return st;
  kiln_context *ctx = s->base.context;
  pthread_mutex_lock(&ctx->lock);
  kiln_graph *g = atomic_load(&s->capture);
  if (!g) {
    /* The capture ended between the door's look and here. */
    st = kiln_set_error(KILN_ERROR_INVALID_STATE,
                        "the stream's capture ended while the call was "
                        "being captured; nothing was done");
  } else if (g->cmd_count == g->cmd_cap) {
    size_t cap = g->cmd_cap ? g->cmd_cap * 2 : 16;
    kiln_command *cmds = realloc(g->cmds, cap * sizeof *cmds);
    if (!cmds)
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory capturing an operation");
    else {
      g->cmds = cmds;
      g->cmd_cap = cap;
    }
  }
  if (st == KILN_OK) {
    kept.branch = s->capture_branch;
    kept.joins = 0;
    if (kept.kind == KILN_COMMAND_WAIT &&
        atomic_load(&kept.event->capture_record) == g)
      kept.joins = kept.event->capture_index + 1;
    if (kept.kind == KILN_COMMAND_RECORD) {
      kept.event->capture_index = g->cmd_count;
      atomic_store(&kept.event->capture_record, g);
    }
    g->cmds[g->cmd_count++] = kept;
    kiln_command_objects(&kept, kiln_graph_hold);
    if (kept.kind == KILN_COMMAND_LAUNCH && kept.numbered) g->launch_count++;
  }
  pthread_mutex_unlock(&ctx->lock);
  if (st != KILN_OK && kept.kind == KILN_COMMAND_LAUNCH) {
    free((void *)(uintptr_t)kept.args);
    free(kept.packed);
  }
  return kiln_error_in(c->fn, st);
}

/* A buffer made in a capture is the graph's: made now, once, by the
 * caller (core/api/pool.c), and held by the graph through this command;
 * every replay reuses it, and KILN_BUFFER_ZERO becomes a fill that each
 * replay runs first. */
static kiln_status capture_alloc(kiln_stream *s, const kiln_command *c) {
  kiln_status st = capture(s, c);
  if (st != KILN_OK || !(c->flags & KILN_BUFFER_ZERO)) return st;
  const kiln_command zero = {.kind = KILN_COMMAND_FILL,
                             .fn = c->fn,
                             .dst = c->dst,
                             .dst_offset = c->dst->guard,
                             .size = c->size,
                             .pattern_size = 1};
  return capture(s, &zero);
}

/* The command of s's capture that makes (ALLOC) or releases (FREE) buf,
 * if any. Under the context lock. */
static bool captured(const kiln_graph *g, kiln_command_kind kind,
                     const kiln_buffer *buf) {
  for (size_t i = 0; g && i < g->cmd_count; i++)
    if (g->cmds[i].kind == kind && g->cmds[i].dst == buf) return true;
  return false;
}

/* A capture releases only what it made, once: the release marks the end
 * of the buffer's use in the graph, whose memory it stays. */
static kiln_status capture_free(kiln_stream *s, const kiln_command *c) {
  kiln_context *ctx = s->base.context;
  pthread_mutex_lock(&ctx->lock);
  const kiln_graph *g = atomic_load(&s->capture);
  const bool made = captured(g, KILN_COMMAND_ALLOC, c->dst);
  const bool freed = captured(g, KILN_COMMAND_FREE, c->dst);
  pthread_mutex_unlock(&ctx->lock);
  if (!made)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "%s: a graph releases only the buffers made in its "
                          "own capture (each replay would free memory made "
                          "once, outside it); release this one after the "
                          "capture ends; nothing was done and the capture "
                          "goes on",
                          c->fn);
  if (freed)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: the capture released this buffer already; "
                          "nothing was done and the capture goes on",
                          c->fn);
  return capture(s, c);
}

/* The refusal of a wait on an event that another capture recorded last. */
static kiln_status other_capture(const kiln_command *c) {
  return kiln_set_error(KILN_ERROR_INVALID_STATE,
                        "%s: the event was last recorded in another stream's "
                        "capture; one capture cannot wait on another's work "
                        "(end that capture first, or record the event "
                        "outside it); nothing was done and the capture goes "
                        "on",
                        c->fn);
}

/* s waits on an event whose last record is in an open capture: s joins
 * that capture as its next branch, the wait the branch's first command (an
 * edge from the record), as CUDA's stream capture does. Until the capture
 * ends, s is capturing too. All under the context lock (recursive), so
 * that a join whose wait cannot be kept is undone, s its last branch. */
static kiln_status join(kiln_stream *s, const kiln_command *c) {
  kiln_context *ctx = s->base.context;
  kiln_status st = KILN_OK;
  pthread_mutex_lock(&ctx->lock);
  kiln_graph *g = atomic_load(&c->event->capture_record);
  kiln_graph *mine = atomic_load(&s->capture);
  bool joined = false;
  if (!g) {
    st = kiln_set_error(KILN_ERROR_INVALID_STATE,
                        "%s: the capture that recorded the event ended "
                        "while the call was being made; nothing was done",
                        c->fn);
  } else if (mine && mine != g) {
    st = other_capture(c); /* s began or joined one meanwhile */
  } else if (!mine) {
    if (g->branch_count == g->branch_cap) {
      size_t cap = g->branch_cap * 2;
      kiln_stream **more = realloc(g->branches, cap * sizeof *more);
      if (!more)
        st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "%s: out of host memory joining a capture",
                            c->fn);
      else {
        g->branches = more;
        g->branch_cap = cap;
      }
    }
    if (st == KILN_OK) {
      s->capture_branch = (uint32_t)g->branch_count;
      g->branches[g->branch_count++] = s;
      atomic_store(&s->capture, g);
      joined = true;
    }
  }
  if (st == KILN_OK && (st = capture(s, c)) != KILN_OK && joined) {
    g->branch_count--;
    atomic_store(&s->capture, NULL);
  }
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

void kiln_capture_forget_record(kiln_context *ctx, kiln_event *e) {
  if (!kiln_capture_records(e)) return;
  pthread_mutex_lock(&ctx->lock);
  atomic_store(&e->capture_record, NULL);
  pthread_mutex_unlock(&ctx->lock);
}

kiln_status kiln_capture_submit(kiln_stream *s, const kiln_command *c,
                                bool *kept) {
  /* A graph's build hands back its own waits: never a join. */
  if (c->kind == KILN_COMMAND_WAIT && !s->building &&
      kiln_capture_records(c->event)) {
    const kiln_graph *g = atomic_load(&s->capture);
    *kept = true;
    if (!g) return join(s, c);
    if (g != atomic_load(&c->event->capture_record)) return other_capture(c);
  }
  if (!kiln_stream_capturing(s) &&
      !(c->src_stream && kiln_stream_capturing(c->src_stream))) {
    *kept = false;
    return KILN_OK;
  }
  *kept = true;
  if (c->kind == KILN_COMMAND_REPLAY)
    return kiln_set_error(KILN_ERROR_INVALID_STATE,
                          "%s: the stream is capturing a graph, and a "
                          "graph's replay cannot be captured; nothing was "
                          "done and the capture goes on",
                          c->fn);
  if (c->kind == KILN_COMMAND_ALLOC) return capture_alloc(s, c);
  if (c->kind == KILN_COMMAND_FREE) return capture_free(s, c);
  if (!capturable(c->kind)) {
    kiln_status st = kiln_capture_refuse(s, c->fn);
    return st != KILN_OK ? st : kiln_capture_refuse(c->src_stream, c->fn);
  }
  return capture(s, c);
}
