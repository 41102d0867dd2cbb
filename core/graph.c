/* Graphs: work captured from a stream and replayed as one submission.
 *
 * Capture is a state of a stream, held by the core alone: while it lasts,
 * every capturable call is checked in full as it would be when issued,
 * then recorded here instead of reaching the backend, and the calls that
 * cannot be captured fail before they reach it. So all three backends
 * accept and refuse the same things with the same words, and a failed call
 * leaves the capture as it was. Ending the capture hands the recorded work
 * to the backend once, through its ordinary ops on an internal stream that
 * builds the backend's own graph (see backend.h), so a graph runs the very
 * commands, barriers and helper kernels the stream would have run. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* ---- What a graph holds ------------------------------------------------------ */

static void hold(const void *o) {
  atomic_fetch_add(&((kiln_object *)(uintptr_t)o)->graph_refs, 1);
}

static void drop(const void *o) {
  kiln_object *obj = (kiln_object *)(uintptr_t)o;
  if (atomic_fetch_sub(&obj->graph_refs, 1) == 1 &&
      obj->type == KILN_OBJECT_BUFFER && ((kiln_buffer *)obj)->graph_owned)
    kiln_buffer_release((kiln_buffer *)obj);
}

static void hold_args(const kiln_arg *args, size_t count, bool take) {
  for (size_t i = 0; i < count; i++)
    if (args[i].type == KILN_ARG_BUFFER)
      (take ? hold : drop)(args[i].value.buffer.buffer);
}

/* Takes or gives back the graph's hold on what the command uses. */
static void hold_cmd(const kiln_graph_cmd *c, bool take) {
  void (*f)(const void *) = take ? hold : drop;
  switch (c->op) {
  case KILN_GRAPH_LAUNCH:
    f(c->kernel->module);
    hold_args(c->args, c->arg_count, take);
    break;
  case KILN_GRAPH_COPY:
    f(c->src);
    f(c->dst);
    break;
  case KILN_GRAPH_FILL: f(c->dst); break;
  case KILN_GRAPH_RECORD:
  case KILN_GRAPH_WAIT: f(c->event); break;
  }
}

void kiln_graph_release(kiln_graph *g) {
  kiln_context *ctx = g->base.context;
  ctx->ops->graph_deinit(g);
  for (size_t i = 0; i < g->cmd_count; i++) {
    hold_cmd(&g->cmds[i], false);
    free(g->cmds[i].args);
    free(g->cmds[i].packed);
  }
  free(g->cmds);
  pthread_mutex_destroy(&g->lock);
  kiln_object_free(g);
}

/* ---- Capturing --------------------------------------------------------------- */

kiln_status kiln_capture_refuse(kiln_stream *s, const char *fn) {
  if (!kiln_stream_capturing(s)) return KILN_OK;
  return kiln_set_error(KILN_ERROR_INVALID_STATE,
                        "%s: the stream is capturing a graph, and this call "
                        "cannot be captured (it needs the host); nothing "
                        "was done and the capture goes on",
                        fn);
}

/* Appends a command to s's capture, taking the graph's hold on what it
 * uses. Under the context lock: threads may issue to one stream at once. */
static kiln_status append(kiln_stream *s, const kiln_graph_cmd *c) {
  kiln_context *ctx = s->base.context;
  kiln_status st = KILN_OK;
  pthread_mutex_lock(&ctx->lock);
  kiln_graph *g = atomic_load(&s->capture);
  if (!g) {
    /* The capture ended between the caller's look and here. */
    st = kiln_set_error(KILN_ERROR_INVALID_STATE,
                        "the stream's capture ended while the call was "
                        "being captured; nothing was done");
  } else if (g->cmd_count == g->cmd_cap) {
    size_t cap = g->cmd_cap ? g->cmd_cap * 2 : 16;
    kiln_graph_cmd *cmds = realloc(g->cmds, cap * sizeof *cmds);
    if (!cmds)
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory capturing an operation");
    else {
      g->cmds = cmds;
      g->cmd_cap = cap;
    }
  }
  if (st == KILN_OK) {
    g->cmds[g->cmd_count++] = *c;
    hold_cmd(c, true);
    if (c->op == KILN_GRAPH_LAUNCH && c->numbered) g->launch_count++;
  }
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

kiln_status kiln_capture_launch(kiln_stream *s, kiln_kernel *kernel,
                                const kiln_launch_config *config,
                                const kiln_arg *args, size_t arg_count,
                                const kiln_packed_args *packed, bool numbered) {
  kiln_graph_cmd c = {.op = KILN_GRAPH_LAUNCH,
                      .kernel = kernel,
                      .config = *config,
                      .arg_count = arg_count,
                      .numbered = numbered};
  c.packed = malloc(sizeof *c.packed);
  c.args = malloc(arg_count ? arg_count * sizeof *args : 1);
  kiln_status st = KILN_OK;
  if (!c.packed || !c.args)
    st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                        "kiln_launch: out of host memory capturing it");
  if (st == KILN_OK) {
    *c.packed = *packed;
    if (arg_count) memcpy(c.args, args, arg_count * sizeof *args);
    st = append(s, &c);
  }
  if (st != KILN_OK) {
    free(c.packed);
    free(c.args);
  }
  return kiln_error_in("kiln_launch", st);
}

kiln_status kiln_capture_copy(kiln_stream *s, kiln_buffer *dst,
                              size_t dst_offset, const kiln_buffer *src,
                              size_t src_offset, size_t size) {
  kiln_graph_cmd c = {.op = KILN_GRAPH_COPY,
                      .dst = dst,
                      .src = src,
                      .dst_offset = dst_offset,
                      .src_offset = src_offset,
                      .size = size};
  return kiln_error_in("kiln_buffer_copy", append(s, &c));
}

kiln_status kiln_capture_fill(kiln_stream *s, kiln_buffer *dst, size_t offset,
                              size_t size, uint64_t pattern,
                              size_t pattern_size) {
  kiln_graph_cmd c = {.op = KILN_GRAPH_FILL,
                      .dst = dst,
                      .dst_offset = offset,
                      .size = size,
                      .pattern = pattern,
                      .pattern_size = pattern_size};
  return kiln_error_in("kiln_buffer_fill", append(s, &c));
}

kiln_status kiln_capture_event(kiln_stream *s, kiln_event *e,
                               kiln_graph_op op) {
  kiln_graph_cmd c = {.op = op, .event = e};
  return kiln_error_in(
      op == KILN_GRAPH_RECORD ? "kiln_event_record" : "kiln_stream_wait_event",
      append(s, &c));
}

bool kiln_capture_records(kiln_stream *s, const kiln_event *e) {
  kiln_context *ctx = s->base.context;
  bool found = false;
  pthread_mutex_lock(&ctx->lock);
  const kiln_graph *g = atomic_load(&s->capture);
  for (size_t i = 0; g && !found && i < g->cmd_count; i++)
    found = g->cmds[i].op == KILN_GRAPH_RECORD && g->cmds[i].event == e;
  pthread_mutex_unlock(&ctx->lock);
  return found;
}

static kiln_status check_stream(kiln_stream *s, const char *fn) {
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM, fn, "stream");
  if (st == KILN_OK) st = kiln_context_check_usable(s->base.context);
  return st;
}

kiln_status kiln_stream_begin_capture(kiln_stream *s) {
  static const char fn[] = "kiln_stream_begin_capture";
  kiln_status st = check_stream(s, fn);
  if (st != KILN_OK) return st;
  kiln_context *ctx = s->base.context;
  if (!ctx->ops->graph_begin)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "%s: the %s backend has no graphs", fn,
                          ctx->ops->name);
  /* Internal until it is handed out: a capture is no object of the
   * caller's, and context destroy releases it without counting it. */
  kiln_graph *g =
      kiln_object_alloc(ctx, KILN_OBJECT_GRAPH, ctx->ops->graph_size, true);
  if (!g) return kiln_error_in(fn, KILN_ERROR_OUT_OF_HOST_MEMORY);
  if (pthread_mutex_init(&g->lock, NULL) != 0) {
    kiln_object_free(g);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: pthread_mutex_init failed", fn);
  }
  kiln_graph *none = NULL;
  if (!atomic_compare_exchange_strong(&s->capture, &none, g)) {
    kiln_graph_release(g);
    return kiln_set_error(KILN_ERROR_INVALID_STATE,
                          "%s: the stream is already capturing a graph; end "
                          "that capture first (kiln_stream_end_capture), "
                          "which goes on",
                          fn);
  }
  return KILN_OK;
}

/* Issues command i of g on the building stream s through the backend's
 * ops, as the public calls would have. */
static kiln_status issue(kiln_graph *g, kiln_stream *s, size_t i) {
  const kiln_backend_ops *ops = s->base.context->ops;
  const kiln_graph_cmd *c = &g->cmds[i];
  switch (c->op) {
  case KILN_GRAPH_LAUNCH: {
    if (c->config.grid.x == 0 || c->config.grid.y == 0 || c->config.grid.z == 0)
      return KILN_OK;
    kiln_status st = ops->launch(s, c->kernel, &c->config, c->packed);
    if (st == KILN_OK && ops->graph_launched) st = ops->graph_launched(g, s, i);
    return st;
  }
  case KILN_GRAPH_COPY:
    return kiln_copy_native(s, c->dst, c->dst_offset, c->src, c->src_offset,
                            c->size);
  case KILN_GRAPH_FILL:
    return kiln_fill_native(s, c->dst, c->dst_offset, c->size, c->pattern,
                            c->pattern_size);
  case KILN_GRAPH_RECORD: return ops->event_record(c->event, s);
  case KILN_GRAPH_WAIT: return ops->stream_wait_event(s, c->event);
  }
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "a captured operation of unknown kind %d", (int)c->op);
}

/* Builds (or builds again) the backend's graph from g's commands. */
static kiln_status build(kiln_graph *g) {
  kiln_context *ctx = g->base.context;
  const kiln_backend_ops *ops = ctx->ops;
  kiln_stream *s =
      kiln_object_alloc(ctx, KILN_OBJECT_STREAM, ops->stream_size, true);
  if (!s) return KILN_ERROR_OUT_OF_HOST_MEMORY;
  kiln_status st = kiln_context_result(ctx, ops->stream_init(s));
  if (st != KILN_OK) {
    kiln_object_free(s);
    return st;
  }
  s->building = g;
  st = kiln_context_result(ctx, ops->graph_begin(g, s));
  if (st == KILN_OK) {
    for (size_t i = 0; st == KILN_OK && i < g->cmd_count; i++)
      st = kiln_context_result(ctx, issue(g, s, i));
    kiln_status end =
        kiln_context_result(ctx, ops->graph_end(g, s, st == KILN_OK));
    if (st == KILN_OK) st = end;
  }
  g->built = st == KILN_OK;
  s->building = NULL;
  kiln_stream_release(s);
  return st;
}

kiln_status kiln_stream_end_capture(kiln_stream *s, kiln_graph **out_graph) {
  static const char fn[] = "kiln_stream_end_capture";
  kiln_status st = check_stream(s, fn);
  if (st != KILN_OK) return st;
  if (!out_graph)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: out_graph is NULL; the capture goes on", fn);
  kiln_graph *g = atomic_exchange(&s->capture, NULL);
  if (!g)
    return kiln_set_error(KILN_ERROR_INVALID_STATE,
                          "%s: the stream is not capturing a graph "
                          "(kiln_stream_begin_capture)",
                          fn);
  /* Under the context lock: a thread's append may still hold it. */
  kiln_context *ctx = s->base.context;
  pthread_mutex_lock(&ctx->lock);
  pthread_mutex_unlock(&ctx->lock);
  if ((st = build(g)) != KILN_OK) {
    kiln_graph_release(g);
    return kiln_error_in(fn, st);
  }
  g->base.internal = false;
  *out_graph = g;
  return KILN_OK;
}

kiln_status kiln_stream_is_capturing(kiln_stream *s, bool *out_capturing) {
  static const char fn[] = "kiln_stream_is_capturing";
  kiln_status st = kiln_object_check(s, KILN_OBJECT_STREAM, fn, "stream");
  if (st != KILN_OK) return st;
  if (!out_capturing)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: out_capturing is NULL", fn);
  *out_capturing = kiln_stream_capturing(s);
  return KILN_OK;
}

/* ---- Replaying and updating ------------------------------------------------ */

kiln_status kiln_graph_launch(kiln_graph *g, kiln_stream *stream) {
  static const char fn[] = "kiln_graph_launch";
  kiln_status st = kiln_object_check(g, KILN_OBJECT_GRAPH, fn, "graph");
  if (st != KILN_OK) return st;
  kiln_context *ctx = g->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  kiln_stream *s;
  if ((st = kiln_stream_resolve(stream, ctx, fn, &s)) != KILN_OK) return st;
  if (kiln_stream_capturing(s))
    return kiln_set_error(KILN_ERROR_INVALID_STATE,
                          "%s: the stream is capturing a graph, and a graph's "
                          "replay cannot be captured; nothing was done and "
                          "the capture goes on",
                          fn);
  pthread_mutex_lock(&g->lock);
  st = g->built ? kiln_context_result(ctx, ctx->ops->graph_launch(g, s))
                : kiln_set_error(KILN_ERROR_INVALID_STATE,
                                 "%s: the graph could not be built again "
                                 "after an update failed; destroy it",
                                 fn);
  for (size_t i = 0; st == KILN_OK && i < g->cmd_count; i++) {
    const kiln_graph_cmd *c = &g->cmds[i];
    if (c->op == KILN_GRAPH_RECORD) {
      c->event->recorded = true;
      if (ctx->guard) kiln_guard_note_record(c->event, s);
    } else if (c->op == KILN_GRAPH_LAUNCH && ctx->guard) {
      kiln_guard_note_launch(s, c->args, c->arg_count);
    }
  }
  pthread_mutex_unlock(&g->lock);
  return kiln_error_in(fn, st);
}

kiln_status kiln_graph_launch_count(const kiln_graph *g, size_t *out_count) {
  static const char fn[] = "kiln_graph_launch_count";
  kiln_status st = kiln_object_check(g, KILN_OBJECT_GRAPH, fn, "graph");
  if (st != KILN_OK) return st;
  if (!out_count)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_count is NULL",
                          fn);
  *out_count = g->launch_count;
  return KILN_OK;
}

/* Puts `args` into launch command i, and the build in line with it. */
static kiln_status update(kiln_graph *g, size_t i, kiln_arg *args,
                          const kiln_packed_args *packed) {
  kiln_context *ctx = g->base.context;
  kiln_graph_cmd *c = &g->cmds[i];
  kiln_arg *old_args = c->args;
  kiln_packed_args old_packed = *c->packed;
  hold_args(args, c->arg_count, true);
  c->args = args;
  *c->packed = *packed;
  bool live = c->config.grid.x && c->config.grid.y && c->config.grid.z;
  kiln_status st = !live                    ? KILN_OK
                   : ctx->ops->graph_update ? ctx->ops->graph_update(g, i)
                                            : build(g);
  st = kiln_context_result(ctx, st);
  if (st == KILN_OK) {
    hold_args(old_args, c->arg_count, false);
    free(old_args);
    return KILN_OK;
  }
  hold_args(args, c->arg_count, false);
  free(args);
  c->args = old_args;
  *c->packed = old_packed;
  /* A failed rebuild left no graph: make the old one again. */
  if (!g->built) build(g);
  return st;
}

kiln_status kiln_graph_set_arguments(kiln_graph *g, size_t launch_index,
                                     const kiln_arg *args, size_t arg_count) {
  static const char fn[] = "kiln_graph_set_arguments";
  kiln_status st = kiln_object_check(g, KILN_OBJECT_GRAPH, fn, "graph");
  if (st != KILN_OK) return st;
  kiln_context *ctx = g->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  if (launch_index >= g->launch_count)
    return kiln_set_error(
        KILN_ERROR_OUT_OF_RANGE, "%s: launch %zu of a graph of %zu launch%s",
        fn, launch_index, g->launch_count, g->launch_count == 1 ? "" : "es");
  size_t i = 0;
  for (size_t n = 0;; i++)
    if (g->cmds[i].op == KILN_GRAPH_LAUNCH && g->cmds[i].numbered &&
        n++ == launch_index)
      break;
  kiln_graph_cmd *c = &g->cmds[i];
  kiln_packed_args packed;
  st = kiln_launch_pack(ctx, c->kernel, &c->config, args, arg_count, &packed);
  if (st != KILN_OK) return kiln_error_in(fn, st);
  if (arg_count != c->arg_count)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: launch %zu was captured with %zu argument%s, "
                          "the update gives %zu",
                          fn, launch_index, c->arg_count,
                          c->arg_count == 1 ? "" : "s", arg_count);
  kiln_arg *copy = malloc(arg_count ? arg_count * sizeof *args : 1);
  if (!copy)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory", fn);
  if (arg_count) memcpy(copy, args, arg_count * sizeof *args);
  pthread_mutex_lock(&g->lock);
  st = update(g, i, copy, &packed);
  pthread_mutex_unlock(&g->lock);
  return kiln_error_in(fn, st);
}

kiln_status kiln_graph_destroy(kiln_graph *g) {
  static const char fn[] = "kiln_graph_destroy";
  if (!g) return KILN_OK;
  kiln_status st = kiln_object_check(g, KILN_OBJECT_GRAPH, fn, "graph");
  if (st != KILN_OK) return st;
  kiln_context *ctx = g->base.context;
  if (kiln_waits_bounded(ctx) && !atomic_load(&ctx->lost) &&
      kiln_context_wait(ctx, fn,
                        "the graph was not destroyed: destroy it again once "
                        "its replays are done, or destroy the context") ==
          KILN_ERROR_TIMEOUT)
    return KILN_ERROR_TIMEOUT;
  kiln_graph_release(g);
  return KILN_OK;
}
