/* The fake backend's graphs: a build keeps what the ops are handed on the
 * building stream as nodes (fake_graph_add), a replay issues the nodes
 * through the fake's own ops on the replaying stream, which then do the
 * work, and an update changes a launch node's arguments in place, so the
 * core's update path is seen to work only if it reached the node. */
#include <stdint.h>
#include <stdlib.h>

#include "fake_objects.h"

typedef struct fake_node_list {
  fake_node *nodes;
  size_t count, cap;
} fake_node_list;

typedef struct fake_graph {
  kiln_graph base;
  fake_node_list built;    /* what replays issue */
  fake_node_list building; /* between graph_begin and graph_end */
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
  fake_node_list *l = &((fake_graph *)s->building)->building;
  if (l->count == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    fake_node *nodes = realloc(l->nodes, cap * sizeof *nodes);
    if (!nodes)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "fake: no memory for a graph node");
    l->nodes = nodes;
    l->cap = cap;
  }
  l->nodes[l->count++] = *n;
  return KILN_OK;
}

static kiln_status graph_begin(kiln_graph *g, kiln_stream *s) {
  (void)s;
  list_free(&((fake_graph *)g)->building);
  return fake_enter(fake_of_graph(g), FAKE_OP_GRAPH_BEGIN);
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

static kiln_status graph_launch(kiln_graph *g, kiln_stream *s) {
  fake_backend *fb = fake_of_graph(g);
  const kiln_backend_ops *o = &fb->ops;
  const fake_node_list *l = &((fake_graph *)g)->built;
  kiln_status st = fake_enter(fb, FAKE_OP_GRAPH_LAUNCH);
  for (size_t i = 0; st == KILN_OK && i < l->count; i++) {
    const fake_node *n = &l->nodes[i];
    switch (n->op) {
    case KILN_GRAPH_LAUNCH:
      st = o->launch(s, n->kernel, &n->config, &n->packed);
      break;
    case KILN_GRAPH_COPY:
      st = o->buffer_copy(s, n->dst, n->dst_offset, n->src, n->src_offset,
                          n->size);
      break;
    case KILN_GRAPH_FILL:
      st = o->fills->buffer_fill(s, n->dst, n->dst_offset, n->size, n->pattern,
                                 n->pattern_size);
      break;
    case KILN_GRAPH_RECORD: st = o->event_record(n->event, s); break;
    case KILN_GRAPH_WAIT:
      st = o->event_waits->stream_wait_event(s, n->event);
      break;
    }
  }
  return st;
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

static const kiln_graph_update_ops graph_updates = {
    .graph_launched = graph_launched,
    .graph_update = graph_update,
};

void fake_graph_ops(kiln_backend_ops *o) {
  o->graphs = &graphs;
  o->graph_updates = &graph_updates;
}
