/* Graphs: stream capture of the core's building stream into a hipGraph_t,
 * instantiated once and replayed with hipGraphLaunch, as on CUDA (see
 * backends/cuda/graph.c for why the capture is relaxed, how launches find
 * their nodes and how branches join the capture). Needs ROCm 6's graph
 * entry points: without them the build of a graph answers
 * KILN_ERROR_UNSUPPORTED. */
#include <stdlib.h>

#include "backends/hip/hip.h"

static kiln_hip_graph *graph_cast(kiln_graph *g) { return (kiln_hip_graph *)g; }

kiln_status kiln_hip_graph_begin(kiln_graph *g, kiln_stream *s) {
#define KILN_HIP_HAVE(ret, name, params) &&kiln_hip_api.name
  if (!(true KILN_HIP_GRAPH_SYMBOLS(KILN_HIP_HAVE)))
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "the HIP runtime lacks the graph entry points "
                          "kiln needs (hipEventRecordWithFlags, "
                          "hipStreamGetCaptureInfo_v2, ...: ROCm 6 has them)");
#undef KILN_HIP_HAVE
  kiln_hip_graph *hg = graph_cast(g);
  free(hg->nodes);
  hg->nodes = calloc(g->cmd_count ? g->cmd_count : 1, sizeof *hg->nodes);
  if (!hg->nodes)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory building a graph");
  hipError_t err = kiln_hip_api.hipStreamBeginCapture(
      kiln_hip_stream_handle(s), hipStreamCaptureModeRelaxed);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipStreamBeginCapture");
  return KILN_OK;
}

kiln_status kiln_hip_graph_launched(kiln_graph *g, kiln_stream *s,
                                    size_t index) {
  hipStreamCaptureStatus status;
  unsigned long long id;
  hipGraph_t graph;
  const hipGraphNode_t *deps = NULL;
  size_t count = 0;
  hipError_t err = kiln_hip_api.hipStreamGetCaptureInfo_v2(
      kiln_hip_stream_handle(s), &status, &id, &graph, &deps, &count);
  if (err != hipSuccess)
    return kiln_hip_error(err,
                          "hipStreamGetCaptureInfo_v2");
  if (status != hipStreamCaptureStatusActive || count != 1)
    return kiln_set_error(KILN_ERROR_BACKEND,
                          "hipStreamGetCaptureInfo_v2: the capture of a "
                          "graph ended or branched unexpectedly (%zu nodes "
                          "at its end)",
                          count);
  graph_cast(g)->nodes[index] = deps[0];
  return KILN_OK;
}

kiln_status kiln_hip_graph_mark(kiln_graph *g, kiln_stream *s, size_t mark) {
  kiln_hip_graph *hg = graph_cast(g);
  if (mark >= hg->mark_count) {
    hipEvent_t *more = realloc(hg->marks, (mark + 1) * sizeof *more);
    if (!more)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "out of host memory building a graph");
    for (size_t i = hg->mark_count; i <= mark; i++) more[i] = NULL;
    hg->marks = more;
    hg->mark_count = mark + 1;
  }
  hipError_t err = hipSuccess;
  if (!hg->marks[mark]) {
    /* On the context's device, which the thread's own need not be. */
    kiln_hip_device_scope scope;
    kiln_status st = kiln_hip_device_enter(g->base.context, &scope);
    if (st != KILN_OK) return st;
    err = kiln_hip_api.hipEventCreateWithFlags(&hg->marks[mark],
                                               hipEventDisableTiming);
    kiln_hip_device_leave(&scope);
    if (err != hipSuccess) {
      hg->marks[mark] = NULL;
      return kiln_hip_error(
          err, "hipEventCreateWithFlags (a mark of a graph's build)");
    }
  }
  err = kiln_hip_api.hipEventRecord(hg->marks[mark], kiln_hip_stream_handle(s));
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipEventRecord (a mark of a graph's build)");
  return KILN_OK;
}

kiln_status kiln_hip_graph_wait_mark(kiln_graph *g, kiln_stream *s,
                                     size_t mark) {
  kiln_hip_graph *hg = graph_cast(g);
  if (mark >= hg->mark_count || !hg->marks[mark])
    return kiln_set_error(KILN_ERROR_BACKEND,
                          "a graph's build waits for mark %zu, never made",
                          mark);
  hipError_t err = kiln_hip_api.hipStreamWaitEvent(kiln_hip_stream_handle(s),
                                                   hg->marks[mark], 0);
  if (err != hipSuccess)
    return kiln_hip_error(err,
                          "hipStreamWaitEvent (a mark of a graph's build)");
  return KILN_OK;
}

/* The marks serve one build: the capture's edges are in the graph. */
static void free_marks(kiln_hip_graph *hg) {
  for (size_t i = 0; i < hg->mark_count; i++)
    if (hg->marks[i]) kiln_hip_api.hipEventDestroy(hg->marks[i]);
  free(hg->marks);
  hg->marks = NULL;
  hg->mark_count = 0;
}

kiln_status kiln_hip_graph_end(kiln_graph *g, kiln_stream *s, bool keep) {
  kiln_hip_graph *hg = graph_cast(g);
  hipError_t err =
      kiln_hip_api.hipStreamEndCapture(kiln_hip_stream_handle(s), &hg->graph);
  free_marks(hg);
  if (err != hipSuccess) {
    hg->graph = NULL;
    return kiln_hip_error(err, "hipStreamEndCapture");
  }
  if (!keep) return KILN_OK;
  err = kiln_hip_api.hipGraphInstantiateWithFlags(&hg->exec, hg->graph, 0);
  if (err != hipSuccess) {
    hg->exec = NULL;
    return kiln_hip_error(err,
                          "hipGraphInstantiateWithFlags");
  }
  return KILN_OK;
}

kiln_status kiln_hip_graph_launch(kiln_graph *g, kiln_stream *s) {
  kiln_status st = kiln_hip_hold(s);
  if (st != KILN_OK) return st;
  hipError_t err = kiln_hip_api.hipGraphLaunch(graph_cast(g)->exec,
                                               kiln_hip_stream_handle(s));
  if (err != hipSuccess)
    return kiln_hip_error_as(err, KILN_ERROR_LAUNCH_FAILED, "hipGraphLaunch");
  return KILN_OK;
}

kiln_status kiln_hip_graph_update(kiln_graph *g, size_t index) {
  kiln_hip_graph *hg = graph_cast(g);
  hipKernelNodeParams p;
  hipError_t err =
      kiln_hip_api.hipGraphKernelNodeGetParams(hg->nodes[index], &p);
  if (err != hipSuccess)
    return kiln_hip_error(err,
                          "hipGraphKernelNodeGetParams");
  const kiln_packed_args *args = g->cmds[index].packed;
  /* The runtime copies the values out before the call returns. */
  void *params[KILN_MAX_KERNEL_ARGS];
  kiln_hip_params_of(args, params);
  p.kernelParams = args->count ? params : NULL;
  p.extra = NULL;
  err = kiln_hip_api.hipGraphExecKernelNodeSetParams(hg->exec, hg->nodes[index],
                                                     &p);
  if (err != hipSuccess)
    return kiln_hip_error(err,
                          "hipGraphExecKernelNodeSetParams");
  return KILN_OK;
}

void kiln_hip_graph_deinit(kiln_graph *g) {
  kiln_hip_graph *hg = graph_cast(g);
  /* The runtime keeps an executable graph until its launches complete. */
  if (hg->exec) kiln_hip_api.hipGraphExecDestroy(hg->exec);
  if (hg->graph) kiln_hip_api.hipGraphDestroy(hg->graph);
  free(hg->nodes);
  free_marks(hg);
}
