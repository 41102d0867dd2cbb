/* Graphs: work captured from a stream and replayed as one submission.
 *
 * Capture is a state of a stream, held by the core alone: while it lasts,
 * every capturable call is checked in full as it would be when issued,
 * then its command is kept in the graph by the door (core/submit/submit.c)
 * instead of reaching the backend, and the calls that cannot be captured
 * fail there before they reach it. So all three backends
 * accept and refuse the same things with the same words, and a failed call
 * leaves the capture as it was. Ending the capture hands the kept commands
 * to the backend once, through the door again, on an internal stream that
 * builds the backend's own graph (see backend.h), so a graph runs the very
 * commands, barriers and helper kernels the stream would have run. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* ---- What a graph holds ------------------------------------------------------ */

/* Whether a launch command runs anything: an empty grid is kept, numbered,
 * but never reaches the backend (the door skips it). */
static bool launches(const kiln_command *c) {
  return c->config.grid.x && c->config.grid.y && c->config.grid.z;
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
      (take ? kiln_graph_hold : drop)(args[i].value.buffer.buffer);
}

/* A captured launch's own copies of its arguments. */
static void free_launch(const kiln_command *c) {
  free((void *)(uintptr_t)c->args);
  free(c->packed);
}

void kiln_graph_release(kiln_graph *g) {
  kiln_context *ctx = g->base.context;
  ctx->ops->graphs->graph_deinit(g);
  for (size_t i = 0; i < g->cmd_count; i++) {
    kiln_command_objects(&g->cmds[i], drop);
    free_launch(&g->cmds[i]);
  }
  free(g->cmds);
  free(g->guard_args);
  pthread_mutex_destroy(&g->lock);
  kiln_object_free(g);
}

/* ---- Capturing --------------------------------------------------------------- */

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
  if (!ctx->ops->graphs) return kiln_unsupported(ctx->ops, fn, "graphs", NULL);
  /* Internal until it is handed out: a capture is no object of the
   * caller's, and context destroy releases it without counting it. */
  kiln_graph *g = kiln_object_alloc(ctx, KILN_OBJECT_GRAPH,
                                    ctx->ops->graphs->graph_size, true);
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

/* Issues command i of g on the building stream s through the door, as the
 * public calls did, telling the backend which command a launch was. */
static kiln_status issue(kiln_graph *g, kiln_stream *s, size_t i) {
  const kiln_backend_ops *ops = s->base.context->ops;
  const kiln_command *c = &g->cmds[i];
  kiln_status st = kiln_submit(s, c);
  if (st == KILN_OK && c->kind == KILN_COMMAND_LAUNCH && launches(c) &&
      ops->graph_updates)
    st = ops->graph_updates->graph_launched(g, s, i);
  return st;
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
  g->guard_arg_count = 0;
  st = kiln_context_result(ctx, ops->graphs->graph_begin(g, s));
  if (st == KILN_OK) {
    for (size_t i = 0; st == KILN_OK && i < g->cmd_count; i++)
      st = kiln_context_result(ctx, issue(g, s, i));
    kiln_status end =
        kiln_context_result(ctx, ops->graphs->graph_end(g, s, st == KILN_OK));
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
  const kiln_command c = {.kind = KILN_COMMAND_REPLAY, .fn = fn, .graph = g};
  return kiln_error_in(fn, kiln_submit(s, &c));
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
  kiln_command *c = &g->cmds[i];
  kiln_arg *old_args = (kiln_arg *)(uintptr_t)c->args; /* the graph's */
  kiln_packed_args old_packed = *c->packed;
  hold_args(args, c->arg_count, true);
  c->args = args;
  *c->packed = *packed;
  const kiln_graph_update_ops *updates = ctx->ops->graph_updates;
  kiln_status st = !launches(c) ? KILN_OK
                   : updates    ? updates->graph_update(g, i)
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
    if (g->cmds[i].kind == KILN_COMMAND_LAUNCH && g->cmds[i].numbered &&
        n++ == launch_index)
      break;
  kiln_command *c = &g->cmds[i];
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
