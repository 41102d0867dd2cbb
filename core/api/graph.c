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

/* Ends g's capture for every stream in it, and for the events it recorded
 * last. Under the context lock. */
static void close_capture(kiln_graph *g) {
  for (size_t b = 0; b < g->branch_count; b++)
    atomic_store(&g->branches[b]->capture, NULL);
  for (size_t i = 0; i < g->cmd_count; i++) {
    kiln_graph *expected = g;
    if (g->cmds[i].kind == KILN_COMMAND_RECORD)
      atomic_compare_exchange_strong(&g->cmds[i].event->capture_record,
                                     &expected, NULL);
  }
  g->capturing = false;
}

void kiln_graph_release(kiln_graph *g) {
  kiln_context *ctx = g->base.context;
  if (g->capturing) {
    /* An open capture released with its context. */
    pthread_mutex_lock(&ctx->lock);
    close_capture(g);
    pthread_mutex_unlock(&ctx->lock);
  }
  ctx->ops->graphs->graph_deinit(g);
  for (size_t i = 0; i < g->cmd_count; i++) {
    kiln_command_objects(&g->cmds[i], drop);
    free_launch(&g->cmds[i]);
  }
  free(g->cmds);
  free(g->branches);
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
  g->branches = malloc(4 * sizeof *g->branches);
  if (!g->branches || pthread_mutex_init(&g->lock, NULL) != 0) {
    free(g->branches);
    kiln_object_free(g);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory", fn);
  }
  g->branches[0] = s;
  g->branch_count = 1;
  g->branch_cap = 4;
  /* Under the context lock, where streams join captures. */
  pthread_mutex_lock(&ctx->lock);
  const bool free_to_capture = !atomic_load(&s->capture);
  if (free_to_capture) {
    g->capturing = true;
    s->capture_branch = 0;
    atomic_store(&s->capture, g);
  }
  pthread_mutex_unlock(&ctx->lock);
  if (!free_to_capture) {
    kiln_graph_release(g);
    return kiln_set_error(KILN_ERROR_INVALID_STATE,
                          "%s: the stream is already capturing a graph; end "
                          "that capture first (kiln_stream_end_capture), "
                          "which goes on",
                          fn);
  }
  return KILN_OK;
}

/* ---- The shape of a graph with branches ----------------------------------- */

/* For each command, the one before it on its branch (SIZE_MAX for none):
 * with `joins`, the edges of the graph. NULL when out of memory. */
static size_t *previous_on_branch(const kiln_graph *g) {
  size_t *prev = malloc((g->cmd_count ? g->cmd_count : 1) * sizeof *prev);
  size_t *last = malloc(g->branch_count * sizeof *last);
  if (prev && last) {
    for (size_t b = 0; b < g->branch_count; b++) last[b] = SIZE_MAX;
    for (size_t i = 0; i < g->cmd_count; i++) {
      prev[i] = last[g->cmds[i].branch];
      last[g->cmds[i].branch] = i;
    }
  } else {
    free(prev);
    prev = NULL;
  }
  free(last);
  return prev;
}

/* The commands that the last one of the capture's own stream does not come
 * after: a branch's work that stream never waited for, which the replay
 * of one stream could not be said to include (CUDA refuses such a capture
 * as unjoined). *out_branch: the branch of the first of them. */
static kiln_status unjoined(const kiln_graph *g, const size_t *prev,
                            size_t *out_count, uint32_t *out_branch) {
  *out_count = 0;
  bool *after = calloc(g->cmd_count ? g->cmd_count : 1, sizeof *after);
  if (!after)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory checking a capture");
  size_t last = SIZE_MAX;
  for (size_t i = 0; i < g->cmd_count; i++)
    if (g->cmds[i].branch == 0) last = i;
  if (last != SIZE_MAX) after[last] = true;
  /* Every edge points to an earlier command: one pass back suffices. */
  for (size_t i = last == SIZE_MAX ? 0 : last + 1; i-- > 0;) {
    if (!after[i]) continue;
    if (prev[i] != SIZE_MAX) after[prev[i]] = true;
    if (g->cmds[i].joins) after[g->cmds[i].joins - 1] = true;
  }
  for (size_t i = g->cmd_count; i-- > 0;)
    if (!after[i]) {
      (*out_count)++;
      *out_branch = g->cmds[i].branch;
    }
  free(after);
  return KILN_OK;
}

/* Whether the command makes the device do anything in a build: records,
 * waits and a graph's own memory take no time of their own. */
static bool works(const kiln_command *c) {
  return c->kind == KILN_COMMAND_LAUNCH || c->kind == KILN_COMMAND_COPY ||
         c->kind == KILN_COMMAND_FILL;
}

/* ---- Building ------------------------------------------------------------------ */

/* Issues command i of g on the building stream s through the door, as the
 * public calls did, telling the backend which command a launch was. A
 * wait on a record of the same capture is an edge, which the caller
 * builds. */
static kiln_status issue(kiln_graph *g, kiln_stream *s, size_t i) {
  const kiln_backend_ops *ops = s->base.context->ops;
  const kiln_command *c = &g->cmds[i];
  if (c->joins) return KILN_OK;
  kiln_status st = kiln_submit(s, c);
  if (st == KILN_OK && c->kind == KILN_COMMAND_LAUNCH && launches(c) &&
      ops->graph_updates)
    st = ops->graph_updates->graph_launched(g, s, i);
  return st;
}

/* graph_level's way: the commands by level, a command's level the highest
 * among the commands it comes after, one more past those that work, so
 * that a level's commands never depend on each other. */
static kiln_status issue_in_levels(kiln_graph *g, kiln_stream *s,
                                   const size_t *prev) {
  const size_t n = g->cmd_count;
  size_t *level = malloc((n ? n : 1) * sizeof *level);
  size_t *order = malloc((n ? n : 1) * sizeof *order);
  kiln_status st = KILN_OK;
  if (!level || !order) {
    st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                        "out of host memory building a graph");
  } else {
    size_t levels = 0;
    for (size_t i = 0; i < n; i++) {
      level[i] = 0;
      const size_t from[2] = {prev[i], g->cmds[i].joins - 1};
      for (int k = 0; k < 2; k++) {
        if (from[k] >= i) continue; /* none (SIZE_MAX) */
        size_t l = level[from[k]] + works(&g->cmds[from[k]]);
        if (l > level[i]) level[i] = l;
      }
      if (level[i] + 1 > levels) levels = level[i] + 1;
    }
    /* A counting sort, keeping the capture's order within a level. */
    size_t *start = calloc(levels + 1, sizeof *start);
    if (!start) {
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory building a graph");
    } else {
      for (size_t i = 0; i < n; i++) start[level[i] + 1]++;
      for (size_t l = 0; l < levels; l++) start[l + 1] += start[l];
      for (size_t i = 0; i < n; i++) order[start[level[i]]++] = i;
      free(start);
    }
    for (size_t k = 0; st == KILN_OK && k < n; k++) {
      if (k > 0 && level[order[k]] != level[order[k - 1]])
        st = s->base.context->ops->graphs->graph_level(g, s);
      if (st == KILN_OK) st = issue(g, s, order[k]);
    }
  }
  free(level);
  free(order);
  return st;
}

/* graph_mark's way: each branch on its stream, the capture's order kept,
 * every wait on a record of the capture an edge from a mark there. */
static kiln_status issue_in_branches(kiln_graph *g, kiln_stream **streams) {
  const kiln_graph_ops *go = g->base.context->ops->graphs;
  const size_t n = g->cmd_count;
  size_t *mark = malloc((n ? n : 1) * sizeof *mark);
  if (!mark)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory building a graph");
  for (size_t i = 0; i < n; i++) mark[i] = SIZE_MAX;
  size_t marks = 0;
  for (size_t i = 0; i < n; i++)
    if (g->cmds[i].joins && mark[g->cmds[i].joins - 1] == SIZE_MAX)
      mark[g->cmds[i].joins - 1] = marks++;
  kiln_status st = KILN_OK;
  for (size_t i = 0; st == KILN_OK && i < n; i++) {
    const kiln_command *c = &g->cmds[i];
    kiln_stream *s = streams[c->branch];
    if (c->joins) {
      st = go->graph_wait_mark(g, s, mark[c->joins - 1]);
      continue;
    }
    st = issue(g, s, i);
    if (st == KILN_OK && mark[i] != SIZE_MAX)
      st = go->graph_mark(g, s, mark[i]);
  }
  free(mark);
  return st;
}

/* A building stream of g's context (s->building is g). */
static kiln_status building_stream(kiln_graph *g, kiln_stream **out) {
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
  *out = s;
  return KILN_OK;
}

/* Builds (or builds again) the backend's graph from g's commands. */
static kiln_status build(kiln_graph *g) {
  kiln_context *ctx = g->base.context;
  const kiln_graph_ops *go = ctx->ops->graphs;
  const bool levels = go->graph_level != NULL;
  const size_t count = !levels && go->graph_mark ? g->branch_count : 1;
  kiln_stream **streams = calloc(count, sizeof *streams);
  size_t *prev = previous_on_branch(g);
  kiln_status st = streams && prev
                       ? KILN_OK
                       : kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                                        "out of host memory building a "
                                        "graph");
  size_t made = 0;
  for (; st == KILN_OK && made < count; made++)
    st = building_stream(g, &streams[made]);
  if (st != KILN_OK && made > 0) made--; /* the one that failed */
  g->guard_arg_count = 0;
  if (st == KILN_OK)
    st = kiln_context_result(ctx, go->graph_begin(g, streams[0]));
  if (st == KILN_OK) {
    if (levels)
      st = issue_in_levels(g, streams[0], prev);
    else if (count > 1)
      st = issue_in_branches(g, streams);
    else
      for (size_t i = 0; st == KILN_OK && i < g->cmd_count; i++)
        st = issue(g, streams[0], i);
    st = kiln_context_result(ctx, st);
    kiln_status end =
        kiln_context_result(ctx, go->graph_end(g, streams[0], st == KILN_OK));
    if (st == KILN_OK) st = end;
  }
  g->built = st == KILN_OK;
  for (size_t i = 0; i < made; i++) {
    streams[i]->building = NULL;
    kiln_stream_release(streams[i]);
  }
  free(streams);
  free(prev);
  return st;
}

kiln_status kiln_stream_end_capture(kiln_stream *s, kiln_graph **out_graph) {
  static const char fn[] = "kiln_stream_end_capture";
  kiln_status st = check_stream(s, fn);
  if (st != KILN_OK) return st;
  if (!out_graph)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: out_graph is NULL; the capture goes on", fn);
  /* Under the context lock, which every append and join holds. */
  kiln_context *ctx = s->base.context;
  pthread_mutex_lock(&ctx->lock);
  kiln_graph *g = atomic_load(&s->capture);
  if (!g || s->capture_branch != 0) {
    pthread_mutex_unlock(&ctx->lock);
    if (g)
      return kiln_set_error(KILN_ERROR_INVALID_STATE,
                            "%s: the stream joined a capture that another "
                            "stream began (it waited on an event recorded "
                            "there); end the capture on that stream; the "
                            "capture goes on",
                            fn);
    return kiln_set_error(KILN_ERROR_INVALID_STATE,
                          "%s: the stream is not capturing a graph "
                          "(kiln_stream_begin_capture)",
                          fn);
  }
  close_capture(g);
  pthread_mutex_unlock(&ctx->lock);
  size_t *prev = previous_on_branch(g), loose = 0;
  uint32_t branch = 0;
  st = prev ? unjoined(g, prev, &loose, &branch)
            : kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                             "out of host memory checking a capture");
  free(prev);
  if (st == KILN_OK && loose)
    st = kiln_set_error(KILN_ERROR_INVALID_STATE,
                        "%s: %zu captured operation%s of the stream that "
                        "joined the capture as its branch %u (and maybe of "
                        "others) %s never waited for by this stream (record "
                        "an event after them and wait on it here before "
                        "ending the capture); the capture was discarded and "
                        "its streams capture no more",
                        fn, loose, loose == 1 ? "" : "s", (unsigned)branch,
                        loose == 1 ? "was" : "were");
  if (st != KILN_OK || (st = build(g)) != KILN_OK) {
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
