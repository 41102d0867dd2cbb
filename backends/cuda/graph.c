/* Graphs: stream capture of the core's building stream into a CUgraph,
 * instantiated once and replayed with cuGraphLaunch.
 *
 * The capture is relaxed (CU_STREAM_CAPTURE_MODE_RELAXED): it forbids no
 * call on any thread, so other threads' kiln calls, and this thread's
 * loading of the built-in kernels a fill may need, go on as usual; the
 * capture is on a stream of the core's own, which nothing else touches.
 * After each captured launch the stream's capture dependencies are exactly
 * the new kernel node (the stream is in order), which is kept for updates
 * through cuGraphExecKernelNodeSetParams. A capture's branches are built on
 * building streams of their own, which join the capture as CUDA's own
 * stream capture joins streams: through an event recorded in the capture
 * (a mark) and waited on, which makes an edge and no node. The entry
 * points are optional (symbols.h): a driver older than CUDA 12.0 runs
 * everything but graphs. */
#include <stdlib.h>

#include "backends/cuda/cuda.h"

static kiln_cuda_graph *graph_cast(kiln_graph *g) {
  return (kiln_cuda_graph *)g;
}

static CUstream stream_of(kiln_stream *s) {
  return kiln_cuda_stream_cast(s)->handle;
}

kiln_status kiln_cuda_graph_begin(kiln_graph *g, kiln_stream *s) {
#define KILN_CUDA_HAVE(name, version) &&kiln_cuda_api.name
  if (!(true KILN_CUDA_GRAPH_SYMBOLS(KILN_CUDA_HAVE)))
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "the CUDA driver (%d.%d) lacks the graph entry "
                          "points kiln needs (cuGraphExecKernelNodeSetParams "
                          "of CUDA 12.0, ...)",
                          kiln_cuda_api.driver_version / 1000,
                          kiln_cuda_api.driver_version % 1000 / 10);
#undef KILN_CUDA_HAVE
  kiln_cuda_graph *cg = graph_cast(g);
  kiln_status st = kiln_cuda_make_current(g->base.context);
  if (st != KILN_OK) return st;
  free(cg->nodes);
  cg->nodes = calloc(g->cmd_count ? g->cmd_count : 1, sizeof *cg->nodes);
  if (!cg->nodes)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory building a graph");
  CUresult r = kiln_cuda_api.cuStreamBeginCapture(
      stream_of(s), CU_STREAM_CAPTURE_MODE_RELAXED);
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuStreamBeginCapture");
  return KILN_OK;
}

kiln_status kiln_cuda_graph_launched(kiln_graph *g, kiln_stream *s,
                                     size_t index) {
  CUstreamCaptureStatus status;
  cuuint64_t id;
  CUgraph graph;
  const CUgraphNode *deps = NULL;
  size_t count = 0;
  CUresult r = kiln_cuda_api.cuStreamGetCaptureInfo(stream_of(s), &status, &id,
                                                    &graph, &deps, &count);
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuStreamGetCaptureInfo");
  if (status != CU_STREAM_CAPTURE_STATUS_ACTIVE || count != 1)
    return kiln_set_error(KILN_ERROR_BACKEND,
                          "cuStreamGetCaptureInfo: the capture of a graph "
                          "ended or branched unexpectedly (%zu nodes at its "
                          "end)",
                          count);
  graph_cast(g)->nodes[index] = deps[0];
  return KILN_OK;
}

kiln_status kiln_cuda_graph_mark(kiln_graph *g, kiln_stream *s, size_t mark) {
  kiln_cuda_graph *cg = graph_cast(g);
  if (mark >= cg->mark_count) {
    CUevent *more = realloc(cg->marks, (mark + 1) * sizeof *more);
    if (!more)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "out of host memory building a graph");
    for (size_t i = cg->mark_count; i <= mark; i++) more[i] = NULL;
    cg->marks = more;
    cg->mark_count = mark + 1;
  }
  CUresult r = CUDA_SUCCESS;
  if (!cg->marks[mark] &&
      (r = kiln_cuda_api.cuEventCreate(&cg->marks[mark],
                                       CU_EVENT_DISABLE_TIMING)) !=
          CUDA_SUCCESS) {
    cg->marks[mark] = NULL;
    return kiln_cuda_error(r, "cuEventCreate (a mark of a graph's build)");
  }
  r = kiln_cuda_api.cuEventRecord(cg->marks[mark], stream_of(s));
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuEventRecord (a mark of a graph's build)");
  return KILN_OK;
}

kiln_status kiln_cuda_graph_wait_mark(kiln_graph *g, kiln_stream *s,
                                      size_t mark) {
  kiln_cuda_graph *cg = graph_cast(g);
  if (mark >= cg->mark_count || !cg->marks[mark])
    return kiln_set_error(KILN_ERROR_BACKEND,
                          "a graph's build waits for mark %zu, never made",
                          mark);
  CUresult r = kiln_cuda_api.cuStreamWaitEvent(stream_of(s), cg->marks[mark],
                                               0);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuStreamWaitEvent (a mark of a graph's build)");
  return KILN_OK;
}

/* The marks serve one build: the capture's edges are in the graph. */
static void free_marks(kiln_cuda_graph *cg) {
  for (size_t i = 0; i < cg->mark_count; i++)
    if (cg->marks[i]) kiln_cuda_api.cuEventDestroy(cg->marks[i]);
  free(cg->marks);
  cg->marks = NULL;
  cg->mark_count = 0;
}

kiln_status kiln_cuda_graph_end(kiln_graph *g, kiln_stream *s, bool keep) {
  kiln_cuda_graph *cg = graph_cast(g);
  CUresult r = kiln_cuda_api.cuStreamEndCapture(stream_of(s), &cg->graph);
  free_marks(cg);
  if (r != CUDA_SUCCESS) {
    cg->graph = NULL;
    return kiln_cuda_error(r, "cuStreamEndCapture");
  }
  if (!keep) return KILN_OK;
  r = kiln_cuda_api.cuGraphInstantiateWithFlags(&cg->exec, cg->graph, 0);
  if (r != CUDA_SUCCESS) {
    cg->exec = NULL;
    return kiln_cuda_error(r, "cuGraphInstantiateWithFlags");
  }
  return KILN_OK;
}

kiln_status kiln_cuda_graph_launch(kiln_graph *g, kiln_stream *s) {
  kiln_status st = kiln_cuda_hold(s);
  if (st == KILN_OK) st = kiln_cuda_make_current(g->base.context);
  if (st != KILN_OK) return st;
  CUresult r = kiln_cuda_api.cuGraphLaunch(graph_cast(g)->exec, stream_of(s));
  if (r != CUDA_SUCCESS) return kiln_cuda_error(r, "cuGraphLaunch");
  return KILN_OK;
}

kiln_status kiln_cuda_graph_update(kiln_graph *g, size_t index) {
  kiln_cuda_graph *cg = graph_cast(g);
  kiln_status st = kiln_cuda_make_current(g->base.context);
  if (st != KILN_OK) return st;
  CUDA_KERNEL_NODE_PARAMS_v2 p;
  CUresult r = kiln_cuda_api.cuGraphKernelNodeGetParams(cg->nodes[index], &p);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuGraphKernelNodeGetParams");
  kiln_cuda_params kp;
  if ((st = kiln_cuda_params_of(kiln_cuda_kernel_cast(g->cmds[index].kernel),
                                g->cmds[index].packed, &kp)) != KILN_OK)
    return st;
  p.kernelParams = kp.params;
  p.extra = NULL;
  r = kiln_cuda_api.cuGraphExecKernelNodeSetParams(cg->exec, cg->nodes[index],
                                                   &p);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuGraphExecKernelNodeSetParams");
  return KILN_OK;
}

void kiln_cuda_graph_deinit(kiln_graph *g) {
  kiln_cuda_graph *cg = graph_cast(g);
  kiln_cuda_make_current(g->base.context);
  /* The driver keeps an executable graph until its launches complete. */
  if (cg->exec) kiln_cuda_api.cuGraphExecDestroy(cg->exec);
  if (cg->graph) kiln_cuda_api.cuGraphDestroy(cg->graph);
  free(cg->nodes);
  free_marks(cg);
}
