/* The fake backend's graphs: a build keeps what the ops are handed on the
 * building streams as nodes (fake_graph_add), a replay issues the nodes
 * through the fake's own ops on the replaying stream, which then do the
 * work, and an update changes a launch node's arguments in place, so the
 * core's update path is seen to work only if it reached the node.
 *
 * FAKE_GRAPH_MODE picks how a capture's branches are built (core/backend.h):
 * "levels" (graph_level, as Vulkan), "marks" (graph_mark and
 * graph_wait_mark, as CUDA and HIP), else neither. A replay then runs
 * the nodes in the worst order their edges allow, so that an edge the core
 * failed to make shows in the results: each level backwards, or, with
 * marks, always the ready node of the latest building stream first. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_objects.h"

#define MAX_LANES 64

typedef struct fake_node_list {
  fake_node *nodes;
  size_t count, cap;
} fake_node_list;

typedef struct fake_graph {
  kiln_graph base;
  fake_node_list built;    /* what replays issue */
  fake_node_list building; /* between graph_begin and graph_end */
  const kiln_stream *lanes[MAX_LANES]; /* the building streams seen */
  size_t lane_count;
} fake_graph;

static fake_backend *fake_of_graph(const kiln_graph *g) {
  /* ops is the fake's first member. */
  return (fake_backend *)g->base.context->ops;
}

static void list_free(fake_node_list *l) {
  free(l->nodes);
  l->nodes = NULL;
  l->count = l->cap = 0;
}

kiln_status fake_graph_add(kiln_stream *s, const fake_node *n) {
  fake_graph *fg = (fake_graph *)s->building;
  fake_node_list *l = &fg->building;
  size_t lane = 0;
  while (lane < fg->lane_count && fg->lanes[lane] != s) lane++;
  if (lane == fg->lane_count) {
    if (lane == MAX_LANES)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "fake: a graph of more than %d branches",
                            MAX_LANES);
    fg->lanes[fg->lane_count++] = s;
  }
  if (l->count == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    fake_node *nodes = realloc(l->nodes, cap * sizeof *nodes);
    if (!nodes)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "fake: no memory for a graph node");
    l->nodes = nodes;
    l->cap = cap;
  }
  l->nodes[l->count] = *n;
  l->nodes[l->count++].lane = lane;
  return KILN_OK;
}

static kiln_status graph_begin(kiln_graph *g, kiln_stream *s) {
  fake_graph *fg = (fake_graph *)g;
  list_free(&fg->building);
  fg->lanes[0] = s;
  fg->lane_count = 1;
  return fake_enter(fake_of_graph(g), FAKE_OP_GRAPH_BEGIN);
}

static kiln_status graph_level(kiln_graph *g, kiln_stream *s) {
  (void)g;
  const fake_node n = {.op = FAKE_GRAPH_LEVEL, .cmd = SIZE_MAX};
  return fake_graph_add(s, &n);
}

static kiln_status graph_mark(kiln_graph *g, kiln_stream *s, size_t mark) {
  (void)g;
  const fake_node n = {.op = FAKE_GRAPH_MARK, .cmd = SIZE_MAX, .mark = mark};
  return fake_graph_add(s, &n);
}

static kiln_status graph_wait_mark(kiln_graph *g, kiln_stream *s,
                                   size_t mark) {
  (void)g;
  const fake_node n = {
      .op = FAKE_GRAPH_WAIT_MARK, .cmd = SIZE_MAX, .mark = mark};
  return fake_graph_add(s, &n);
}

/* The node just added is the launch of g->cmds[index]. */
static kiln_status graph_launched(kiln_graph *g, kiln_stream *s, size_t index) {
  (void)s;
  fake_node_list *l = &((fake_graph *)g)->building;
  if (l->count == 0 || l->nodes[l->count - 1].op != KILN_GRAPH_LAUNCH)
    return kiln_set_error(KILN_ERROR_INVALID_STATE,
                          "fake: graph_launched(%zu) follows no launch", index);
  l->nodes[l->count - 1].cmd = index;
  return KILN_OK;
}

static kiln_status graph_end(kiln_graph *g, kiln_stream *s, bool keep) {
  (void)s;
  fake_graph *fg = (fake_graph *)g;
  if (keep) {
    /* Replays held under KILN_DEBUG=reorder copied what they issue, so
     * the old nodes can go at once. */
    list_free(&fg->built);
    fg->built = fg->building;
    fg->building = (fake_node_list){NULL, 0, 0};
  } else {
    list_free(&fg->building);
  }
  return KILN_OK;
}

static kiln_status run_node(kiln_stream *s, const fake_node *n) {
  const kiln_backend_ops *o = &fake_owner(s)->ops;
  switch (n->op) {
  case KILN_GRAPH_LAUNCH:
    return o->launch(s, n->kernel, &n->config, &n->packed);
  case KILN_GRAPH_COPY:
    return o->buffer_copy(s, n->dst, n->dst_offset, n->src, n->src_offset,
                          n->size);
  case KILN_GRAPH_FILL:
    return o->fills->buffer_fill(s, n->dst, n->dst_offset, n->size,
                                 n->pattern, n->pattern_size);
  case KILN_GRAPH_RECORD: return o->event_record(n->event, s);
  case KILN_GRAPH_WAIT: return o->event_waits->stream_wait_event(s, n->event);
  case FAKE_GRAPH_LEVEL:
  case FAKE_GRAPH_MARK:
  case FAKE_GRAPH_WAIT_MARK: return KILN_OK;
  }
  return KILN_ERROR_BACKEND;
}

/* Levels: each run from its last node to its first. */
static kiln_status run_levels(kiln_stream *s, const fake_node_list *l) {
  kiln_status st = KILN_OK;
  for (size_t end = 0, start = 0; st == KILN_OK && start < l->count;
       start = end + 1) {
    end = start;
    while (end < l->count && l->nodes[end].op != FAKE_GRAPH_LEVEL) end++;
    for (size_t i = end; st == KILN_OK && i-- > start;)
      st = run_node(s, &l->nodes[i]);
  }
  return st;
}

/* Marks: whichever node may run next (its lane's earlier nodes done, its
 * mark made) on the latest lane first. */
static kiln_status run_lanes(kiln_stream *s, const fake_node_list *l) {
  bool *done = calloc(l->count ? l->count : 1, sizeof *done);
  size_t *next = calloc(MAX_LANES, sizeof *next); /* first not done */
  if (!done || !next) {
    free(done);
    free(next);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY, "fake: no memory");
  }
  for (size_t lane = 0; lane < MAX_LANES; lane++) {
    next[lane] = 0;
    while (next[lane] < l->count && l->nodes[next[lane]].lane != lane)
      next[lane]++;
  }
  kiln_status st = KILN_OK;
  for (size_t left = l->count; st == KILN_OK && left > 0; left--) {
    size_t pick = SIZE_MAX;
    for (size_t lane = MAX_LANES; pick == SIZE_MAX && lane-- > 0;) {
      size_t i = next[lane];
      if (i >= l->count) continue;
      if (l->nodes[i].op == FAKE_GRAPH_WAIT_MARK) {
        bool made = false;
        for (size_t j = 0; j < l->count && !made; j++)
          made = done[j] && l->nodes[j].op == FAKE_GRAPH_MARK &&
                 l->nodes[j].mark == l->nodes[i].mark;
        if (!made) continue;
      }
      pick = i;
    }
    if (pick == SIZE_MAX) {
      st = kiln_set_error(KILN_ERROR_BACKEND,
                          "fake: a graph's replay waits for a mark that no "
                          "node makes");
      break;
    }
    st = run_node(s, &l->nodes[pick]);
    done[pick] = true;
    size_t lane = l->nodes[pick].lane;
    do next[lane]++;
    while (next[lane] < l->count && l->nodes[next[lane]].lane != lane);
  }
  free(done);
  free(next);
  return st;
}

static kiln_status graph_launch(kiln_graph *g, kiln_stream *s) {
  const fake_node_list *l = &((fake_graph *)g)->built;
  kiln_status st = fake_enter(fake_of_graph(g), FAKE_OP_GRAPH_LAUNCH);
  if (st != KILN_OK) return st;
  bool levels = false;
  for (size_t i = 0; i < l->count; i++)
    levels = levels || l->nodes[i].op == FAKE_GRAPH_LEVEL;
  return levels ? run_levels(s, l) : run_lanes(s, l);
}

static kiln_status graph_update(kiln_graph *g, size_t index) {
  kiln_status st = fake_enter(fake_of_graph(g), FAKE_OP_GRAPH_UPDATE);
  if (st != KILN_OK) return st;
  fake_node_list *l = &((fake_graph *)g)->built;
  for (size_t i = 0; i < l->count; i++)
    if (l->nodes[i].cmd == index) {
      l->nodes[i].packed = *g->cmds[index].packed;
      return KILN_OK;
    }
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "fake: command %zu of the graph is no launch node",
                        index);
}

static void graph_deinit(kiln_graph *g) {
  fake_graph *fg = (fake_graph *)g;
  list_free(&fg->built);
  list_free(&fg->building);
}

static const kiln_graph_ops graphs = {
    .graph_size = sizeof(fake_graph),
    .graph_begin = graph_begin,
    .graph_end = graph_end,
    .graph_launch = graph_launch,
    .graph_deinit = graph_deinit,
};

static const kiln_graph_ops graphs_in_levels = {
    .graph_size = sizeof(fake_graph),
    .graph_begin = graph_begin,
    .graph_end = graph_end,
    .graph_launch = graph_launch,
    .graph_deinit = graph_deinit,
    .graph_level = graph_level,
};

static const kiln_graph_ops graphs_with_marks = {
    .graph_size = sizeof(fake_graph),
    .graph_begin = graph_begin,
    .graph_end = graph_end,
    .graph_launch = graph_launch,
    .graph_deinit = graph_deinit,
    .graph_mark = graph_mark,
    .graph_wait_mark = graph_wait_mark,
};

static const kiln_graph_update_ops graph_updates = {
    .graph_launched = graph_launched,
    .graph_update = graph_update,
};

void fake_graph_ops(kiln_backend_ops *o) {
  const char *mode = getenv("FAKE_GRAPH_MODE");
  o->graphs = !mode                        ? &graphs
              : strcmp(mode, "levels") == 0 ? &graphs_in_levels
              : strcmp(mode, "marks") == 0  ? &graphs_with_marks
                                            : &graphs;
  o->graph_updates = &graph_updates;
}
