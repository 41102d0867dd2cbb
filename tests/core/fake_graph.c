/* The fake backend's graphs: a build only counts (the fake's ops do no work
 * on a building stream), and a replay issues the graph's commands through
 * the fake's own ops on the replaying stream, which then do the work. */
#include "fake_backend.h"

static fake_backend *fake_of_graph(const kiln_graph *g) {
  /* ops is the fake's first member. */
  return (fake_backend *)g->base.context->ops;
}

static kiln_status graph_begin(kiln_graph *g, kiln_stream *s) {
  (void)s;
  return fake_enter(fake_of_graph(g), FAKE_OP_GRAPH_BEGIN);
}

static kiln_status graph_end(kiln_graph *g, kiln_stream *s, bool keep) {
  (void)g;
  (void)s;
  (void)keep;
  return KILN_OK;
}

static kiln_status graph_launch(kiln_graph *g, kiln_stream *s) {
  fake_backend *fb = fake_of_graph(g);
  const kiln_backend_ops *o = &fb->ops;
  kiln_status st = fake_enter(fb, FAKE_OP_GRAPH_LAUNCH);
  for (size_t i = 0; st == KILN_OK && i < g->cmd_count; i++) {
    const kiln_graph_cmd *c = &g->cmds[i];
    switch (c->op) {
    case KILN_GRAPH_LAUNCH:
      st = o->launch(s, c->kernel, &c->config, c->packed);
      break;
    case KILN_GRAPH_COPY:
      st = o->buffer_copy(s, c->dst, c->dst_offset, c->src, c->src_offset,
                          c->size);
      break;
    case KILN_GRAPH_FILL:
      st = o->buffer_fill(s, c->dst, c->dst_offset, c->size, c->pattern,
                          c->pattern_size);
      break;
    case KILN_GRAPH_RECORD: st = o->event_record(c->event, s); break;
    case KILN_GRAPH_WAIT: st = o->stream_wait_event(s, c->event); break;
    }
  }
  return st;
}

static void graph_deinit(kiln_graph *g) { (void)g; }

void fake_graph_ops(kiln_backend_ops *o) {
  o->graph_size = sizeof(kiln_graph);
  o->graph_begin = graph_begin;
  o->graph_end = graph_end;
  o->graph_launch = graph_launch;
  o->graph_deinit = graph_deinit;
}
