/* Graphs, on host clocks: GRAPH_KERNELS empty kernels issued one by one
 * through kiln, replayed from a kiln graph (waited for by the default
 * `auto` policy, and on a context of its own by `spin`, which is how
 * cuStreamSynchronize waits under CUDA's default scheduling on a machine
 * with more cores than GPUs), replayed from a raw CUDA graph of the same
 * launches (where the CUDA driver is), and on the Vulkan backend submitted
 * as one raw Vulkan command buffer of the same dispatches, with and
 * without kiln's barriers between them; then the same kernels in BRANCHES
 * chains, forked from the replaying stream and joined back (kiln.h,
 * "Branches"), from a kiln graph and from a raw CUDA graph of the same
 * shape. Each run ends with a synchronize, and the figure is the run's
 * time divided by the kernels in it. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"
#if KILN_BENCH_VULKAN_RAW
#include "vulkan_raw.h"
#endif

extern const kiln_module_image kiln_bench_images[];
extern const size_t kiln_bench_images_count;

#define GRAPH_KERNELS 1000u
#define QUICK_KERNELS 100u
#define BLOCK 32u
#define BRANCHES 8u
/* Issue 33's goal for independent branches on Vulkan, us per kernel. */
#define GOAL_VULKAN_BRANCHES_US 0.5

/* The figures, in the table's order. */
enum {
  ONE_BY_ONE,
  KILN_GRAPH,
  KILN_GRAPH_SPIN,
  CUDA_GRAPH,
  VULKAN_ORDERED,
  VULKAN_UNORDERED,
  KILN_BRANCHES,
  CUDA_BRANCHES,
  VULKAN_LEVELS,
  VULKAN_LEVELS_AS_KILN,
  VULKAN_CHAIN_AS_KILN,
  FIGURES
};

typedef struct graph_run {
  int (*run)(void *self, unsigned kernels);
  void *self;
  size_t figure; /* its place in the figures */
} graph_run;

typedef struct kiln_side {
  bench *b;
  kiln_stream *stream;
  kiln_kernel *kernel;
  kiln_launch_config config;
  kiln_arg args[2];
  kiln_graph *graph;
} kiln_side;

static int one_by_one(void *self, unsigned kernels) {
  kiln_side *k = self;
  for (unsigned i = 0; i < kernels; i++)
    BENCH_CHECK(kiln_launch(k->stream, k->kernel, &k->config, k->args, 2));
  BENCH_CHECK(kiln_stream_synchronize(k->stream));
  return 0;
}

static int kiln_replay(void *self, unsigned kernels) {
  kiln_side *k = self;
  (void)kernels;
  BENCH_CHECK(kiln_graph_launch(k->graph, k->stream));
  BENCH_CHECK(kiln_stream_synchronize(k->stream));
  return 0;
}

typedef struct raw_side {
  cuda_raw *raw;
  void *exec, *branches_exec;
} raw_side;

static int raw_replay(void *self, unsigned kernels) {
  raw_side *r = self;
  (void)kernels;
  if (cuda_raw_graph_launch(r->raw, r->exec) != 0) return -1;
  return cuda_raw_sync(r->raw);
}

static int raw_branches_replay(void *self, unsigned kernels) {
  raw_side *r = self;
  (void)kernels;
  if (cuda_raw_graph_launch(r->raw, r->branches_exec) != 0) return -1;
  return cuda_raw_sync(r->raw);
}

#if KILN_BENCH_VULKAN_RAW
static int vulkan_ordered(void *self, unsigned kernels) {
  (void)kernels;
  return vulkan_raw_run(self, VULKAN_RAW_ORDERED);
}

static int vulkan_unordered(void *self, unsigned kernels) {
  (void)kernels;
  return vulkan_raw_run(self, VULKAN_RAW_UNORDERED);
}

static int vulkan_levels(void *self, unsigned kernels) {
  (void)kernels;
  return vulkan_raw_run(self, VULKAN_RAW_LEVELS);
}

static int vulkan_levels_as_kiln(void *self, unsigned kernels) {
  (void)kernels;
  return vulkan_raw_run(self, VULKAN_RAW_LEVELS_AS_KILN);
}

/* The raw Vulkan command buffers of `kernels` dispatches like kiln's
 * launches (block BLOCK, buf, n = 0), in levels of `level`, on b->stream's
 * queue; NULL, with the reason printed, when there are none. */
static vulkan_raw *open_vulkan(bench *b, const kiln_buffer *buf,
                               unsigned kernels, unsigned level) {
  return vulkan_raw_open_empty(b, buf, BLOCK, kernels, level, "graph");
}
#endif

/* Microseconds per kernel for each run, in us[run.figure]: medians of
 * opt.repeat samples, the runs taking turns in alternating order after one
 * warm-up each. Every run ends with its work done, so that no two overlap:
 * the raw Vulkan runs, which submit to a queue of kiln's, rely on it. Each
 * sample follows an untimed run of its own: the runs use three contexts
 * (kiln's, the spin context, raw CUDA's), and the GPU's switch to another
 * context is not the cost of the run that happens to come next (an H200
 * finished kiln's branches 150 us later after the spin context's replay
 * than after a raw Vulkan run on kiln's device: 0.51 against 0.36 us a
 * kernel, while raw Vulkan's levels, always after a run on the same
 * device, read 0.35). */
static int measure(const bench *b, const graph_run *runs, size_t n,
                   unsigned kernels, double *us) {
  size_t repeat = b->opt.repeat;
  double *t = malloc(n * repeat * sizeof *t);
  if (t == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  int result = 0;
  for (size_t j = 0; j < n && result == 0; j++)
    result = runs[j].run(runs[j].self, kernels);
  for (size_t r = 0; r < repeat && result == 0; r++) {
    for (size_t turn = 0; turn < n && result == 0; turn++) {
      size_t j = r % 2 ? n - 1 - turn : turn;
      result = runs[j].run(runs[j].self, kernels);
      if (result != 0) break;
      double t0 = bench_now();
      result = runs[j].run(runs[j].self, kernels);
      t[j * repeat + r] = (bench_now() - t0) * 1e6 / kernels;
    }
  }
  for (size_t j = 0; j < n && result == 0; j++)
    us[runs[j].figure] = bench_median(t + j * repeat, repeat);
  free(t);
  return result;
}

/* The raw CUDA graphs' figures, measured with the other `n` runs so that
 * all take turns; us[CUDA_GRAPH] and us[CUDA_BRANCHES] stay negative
 * without them. */
static int measure_all(bench *b, const graph_run *runs, size_t n,
                       unsigned kernels, double us[FIGURES]) {
  raw_side r = {b->raw, NULL, NULL};
  void *function = NULL;
  raw_ptr out = 0;
  uint32_t zero = 0;
  void *params[2] = {&out, &zero};
  if (b->raw == NULL) return measure(b, runs, n, kernels, us);
  if (cuda_raw_enter(b->raw) != 0) return -1;
  int result;
  if (cuda_raw_function(b->raw, "kiln_bench_empty", &function) != 0) {
    cuda_raw_no_kernel("graph", "kiln_bench_empty");
    result = measure(b, runs, n, kernels, us);
  } else if ((result = cuda_raw_alloc(b->raw, BLOCK * 4, &out)) == 0 &&
             (result = cuda_raw_graph_capture(b->raw, function, BLOCK, 1,
                                              params, kernels, &r.exec)) ==
                 0 &&
             (result = cuda_raw_graph_capture(b->raw, function, BLOCK,
                                              BRANCHES, params, kernels,
                                              &r.branches_exec)) == 0) {
    graph_run all[FIGURES];
    memcpy(all, runs, n * sizeof *runs);
    all[n] = (graph_run){raw_replay, &r, CUDA_GRAPH};
    all[n + 1] = (graph_run){raw_branches_replay, &r, CUDA_BRANCHES};
    result = measure(b, all, n + 2, kernels, us);
  }
  cuda_raw_graph_destroy(b->raw, r.exec);
  cuda_raw_graph_destroy(b->raw, r.branches_exec);
  cuda_raw_free(b->raw, out);
  cuda_raw_leave(b->raw);
  return result;
}

static int report(bench *b, unsigned kernels, const double us[FIGURES]) {
  static const char *const names[FIGURES] = {
      "one-by-one",     "kiln-graph",       "kiln-graph-spin",
      "cuda-graph",     "vulkan-ordered",   "vulkan-unordered",
      "kiln-branches",  "cuda-branches",    "vulkan-levels",
      "vulkan-levels-as-kiln", "vulkan-ordered-as-kiln"};
  static const char *const impls[FIGURES] = {
      "kiln", "kiln", "kiln", "cuda-raw", "vulkan-raw", "vulkan-raw",
      "kiln", "cuda-raw", "vulkan-raw", "vulkan-raw", "vulkan-raw"};
  static const char *const headers[FIGURES] = {
      "one by one", "kiln graph",          "kiln, spin",
      "raw CUDA",   "raw Vulkan, ordered", "raw Vulkan, unordered"};
  static const int widths[VULKAN_UNORDERED + 1] = {12, 12, 12, 12, 21, 21};
  const int columns = b->props.backend == KILN_BACKEND_VULKAN
                          ? VULKAN_UNORDERED + 1
                          : VULKAN_ORDERED;
  for (int i = 0; i < FIGURES; i++) {
    if (us[i] < 0.0) continue;
    bench_result res = {
        "graph", names[i], impls[i], kernels, us[i] * kernels * 1e-3,
        us[i],   "us", 0};
    if (bench_record(b, &res) != 0) return -1;
  }
  fprintf(b->out,
          "\ngraph: %u empty kernels then a synchronize, per kernel (us); "
          "median of %u\n%-34s",
          kernels, b->opt.repeat, "");
  for (int i = 0; i < columns; i++)
    fprintf(b->out, " %*s", widths[i], headers[i]);
  fprintf(b->out, "\n%-34s", "us per kernel");
  for (int i = 0; i < columns; i++) bench_cell(b->out, widths[i], 3, us[i]);
  fprintf(b->out, "\n%-34s", "replay speed-up over one by one");
  bench_cell(b->out, 12, 2,
             us[KILN_GRAPH] > 0.0 ? us[ONE_BY_ONE] / us[KILN_GRAPH] : -1.0);
  fprintf(b->out, "\n%-34s", "kiln graph / raw CUDA graph");
  bench_cell(b->out, 12, 2,
             us[CUDA_GRAPH] > 0.0 ? us[KILN_GRAPH] / us[CUDA_GRAPH] : -1.0);
  /* Waited for as cuStreamSynchronize waits: the replay's own cost. */
  fprintf(b->out, "\n%-34s", "kiln graph, spin / raw CUDA graph");
  bench_cell(b->out, 12, 2,
             us[CUDA_GRAPH] > 0.0 && us[KILN_GRAPH_SPIN] > 0.0
                 ? us[KILN_GRAPH_SPIN] / us[CUDA_GRAPH]
                 : -1.0);
  if (columns > VULKAN_ORDERED) {
    /* kiln's replay keeps stream order with a barrier per dispatch: the
     * raw command buffer with the same barriers is its floor. */
    fprintf(b->out, "\n%-34s", "kiln graph / raw Vulkan, ordered");
    bench_cell(b->out, 12, 2,
               us[VULKAN_ORDERED] > 0.0 ? us[KILN_GRAPH] / us[VULKAN_ORDERED]
                                        : -1.0);
    /* The same buffer begun and ended as kiln records a graph (for
     * simultaneous use, a barrier first, one to the host last): what of
     * the difference is the recording's shape, and what kiln's replay. */
    fprintf(b->out, "\n%-34s", "raw Vulkan, ordered, as kiln's (us)");
    bench_cell(b->out, 12, 3, us[VULKAN_CHAIN_AS_KILN]);
    fprintf(b->out, "\n%-34s", "kiln graph / that");
    bench_cell(b->out, 12, 2,
               us[VULKAN_CHAIN_AS_KILN] > 0.0
                   ? us[KILN_GRAPH] / us[VULKAN_CHAIN_AS_KILN]
                   : -1.0);
  }
  fprintf(b->out, "\n\ngraph: the same kernels in %u branches of %u, forked "
                  "and joined, per kernel (us)\n%-34s %12s %12s",
          BRANCHES, kernels / BRANCHES, "", "kiln", "raw CUDA");
  if (columns > VULKAN_ORDERED)
    fprintf(b->out, " %21s %21s", "raw Vulkan, levels", "the same, as kiln's");
  fprintf(b->out, "\n%-34s", "us per kernel");
  bench_cell(b->out, 12, 3, us[KILN_BRANCHES]);
  bench_cell(b->out, 12, 3, us[CUDA_BRANCHES]);
  if (columns > VULKAN_ORDERED) {
    bench_cell(b->out, 21, 3, us[VULKAN_LEVELS]);
    bench_cell(b->out, 21, 3, us[VULKAN_LEVELS_AS_KILN]);
    /* A barrier between levels of BRANCHES dispatches, none within: the
     * raw floor of kiln's replay of the branches. */
    fprintf(b->out, "\n%-34s", "kiln / raw Vulkan, levels");
    bench_cell(b->out, 12, 2,
               us[VULKAN_LEVELS] > 0.0 && us[KILN_BRANCHES] > 0.0
                   ? us[KILN_BRANCHES] / us[VULKAN_LEVELS]
                   : -1.0);
  }
  fprintf(b->out, "\n%-34s", "kiln / raw CUDA, branches");
  bench_cell(b->out, 12, 2,
             us[CUDA_BRANCHES] > 0.0 && us[KILN_BRANCHES] > 0.0
                 ? us[KILN_BRANCHES] / us[CUDA_BRANCHES]
                 : -1.0);
  fprintf(b->out, "\n%-34s", "branches / one chain, kiln");
  bench_cell(b->out, 12, 2,
             us[KILN_BRANCHES] > 0.0 && us[KILN_GRAPH] > 0.0
                 ? us[KILN_BRANCHES] / us[KILN_GRAPH]
                 : -1.0);
  if (b->props.backend == KILN_BACKEND_VULKAN && us[KILN_BRANCHES] > 0.0)
    fprintf(b->out, "\n  issue 33: Vulkan branches %.3f us per kernel, goal "
                    "<= %.2f: %s",
            us[KILN_BRANCHES], GOAL_VULKAN_BRANCHES_US,
            us[KILN_BRANCHES] <= GOAL_VULKAN_BRANCHES_US ? "met" : "MISSED");
  fprintf(b->out, "\n");
  return 0;
}

/* k's kernel, arguments and graph of `kernels` launches on k->stream. */
static int capture(kiln_side *k, kiln_module *module, kiln_buffer *buf,
                   unsigned kernels) {
  BENCH_CHECK(kiln_module_get_kernel(module, "kiln_bench_empty", &k->kernel));
  k->config = kiln_launch_config_1d(BLOCK, BLOCK);
  k->args[0] = kiln_arg_buffer(buf, 0);
  k->args[1] = kiln_arg_u32(0);
  BENCH_CHECK(kiln_stream_begin_capture(k->stream));
  kiln_status st = KILN_OK;
  for (unsigned i = 0; i < kernels && st == KILN_OK; i++)
    st = kiln_launch(k->stream, k->kernel, &k->config, k->args, 2);
  kiln_status end = kiln_stream_end_capture(k->stream, &k->graph);
  if (st != KILN_OK) {
    kiln_graph_destroy(k->graph);
    k->graph = NULL;
    return bench_kiln_error("kiln_launch (capturing)", st);
  }
  if (end != KILN_OK) return bench_kiln_error("kiln_stream_end_capture", end);
  return 0;
}

/* A graph of k's kernel, `kernels` launches in BRANCHES chains: the first
 * on k->stream, the others on streams of their own, forked from it through
 * an event and joined back; into *out. The graph holds the events `e`,
 * which the caller destroys after it. */
static int capture_branches(const kiln_side *k, unsigned kernels,
                            kiln_event *e[BRANCHES], kiln_graph **out) {
  kiln_context *ctx = k->b->ctx;
  kiln_stream *s[BRANCHES] = {k->stream};
  kiln_status st = KILN_OK;
  for (unsigned i = 1; i < BRANCHES && st == KILN_OK; i++)
    st = kiln_stream_create(ctx, &s[i]);
  for (unsigned i = 0; i < BRANCHES && st == KILN_OK; i++)
    st = kiln_event_create_with_flags(ctx, KILN_EVENT_NO_TIMING, &e[i]);
  const bool began =
      st == KILN_OK &&
      (st = kiln_stream_begin_capture(k->stream)) == KILN_OK;
  if (st == KILN_OK) st = kiln_event_record(e[0], s[0]);
  for (unsigned i = 1; i < BRANCHES && st == KILN_OK; i++)
    st = kiln_stream_wait_event(s[i], e[0]);
  for (unsigned i = 0; i < kernels && st == KILN_OK; i++)
    st = kiln_launch(s[i * BRANCHES / kernels], k->kernel, &k->config,
                     k->args, 2);
  for (unsigned i = 1; i < BRANCHES && st == KILN_OK; i++)
    if ((st = kiln_event_record(e[i], s[i])) == KILN_OK)
      st = kiln_stream_wait_event(s[0], e[i]);
  const char *what = "capturing a graph with branches";
  if (began) {
    kiln_status end = kiln_stream_end_capture(k->stream, out);
    if (st == KILN_OK && end != KILN_OK) {
      st = end;
      what = "kiln_stream_end_capture (branches)";
    }
  }
  for (unsigned i = 1; i < BRANCHES; i++) kiln_stream_destroy(s[i]);
  return st == KILN_OK ? 0 : bench_kiln_error(what, st);
}

/* The same graph on a context of its own whose sync policy is `spin`, on
 * the bench's device (as the environment chose it). */
typedef struct spin_side {
  kiln_side k;
  kiln_context *ctx;
  kiln_module *module;
  kiln_buffer *buf;
} spin_side;

static int spin_open(bench *b, spin_side *sp, unsigned kernels) {
  kiln_context_options o = kiln_context_options_default();
  o.backend = b->props.backend;
  o.sync = KILN_SYNC_SPIN;
  sp->k.b = b;
  BENCH_CHECK(kiln_context_create(&o, &sp->ctx));
  BENCH_CHECK(kiln_module_create(sp->ctx, kiln_bench_images,
                                 kiln_bench_images_count, &sp->module));
  BENCH_CHECK(kiln_buffer_create(sp->ctx, BLOCK * 4, 0, &sp->buf));
  BENCH_CHECK(kiln_context_default_stream(sp->ctx, &sp->k.stream));
  return capture(&sp->k, sp->module, sp->buf, kernels);
}

static int spin_close(spin_side *sp) {
  kiln_status st;
  if ((st = kiln_graph_destroy(sp->k.graph)) != KILN_OK ||
      (st = kiln_buffer_destroy(sp->buf)) != KILN_OK ||
      (st = kiln_module_destroy(sp->module)) != KILN_OK ||
      (st = kiln_context_destroy(sp->ctx)) != KILN_OK)
    return bench_kiln_error("releasing the spin context's objects", st);
  return 0;
}

static int run(bench *b, kiln_module *module, kiln_buffer *buf) {
  unsigned kernels = b->opt.quick ? QUICK_KERNELS : GRAPH_KERNELS;
  kiln_side k = {.b = b, .stream = b->stream};
  if (capture(&k, module, buf, kernels) != 0) return -1;
  spin_side sp = {0};
  if (spin_open(b, &sp, kernels) != 0) {
    spin_close(&sp);
    kiln_graph_destroy(k.graph);
    return -1;
  }
  kiln_side kb = k;
  kb.graph = NULL;
  kiln_event *forks[BRANCHES] = {NULL};
  if (kernels < BRANCHES ||
      capture_branches(&k, kernels, forks, &kb.graph) != 0) {
    spin_close(&sp);
    kiln_graph_destroy(k.graph);
    for (unsigned i = 0; i < BRANCHES; i++) kiln_event_destroy(forks[i]);
    return -1;
  }
  graph_run runs[FIGURES] = {{one_by_one, &k, ONE_BY_ONE},
                             {kiln_replay, &k, KILN_GRAPH},
                             {kiln_replay, &sp.k, KILN_GRAPH_SPIN},
                             {kiln_replay, &kb, KILN_BRANCHES}};
  size_t n = 4;
#if KILN_BENCH_VULKAN_RAW
  vulkan_raw *vk = b->props.backend == KILN_BACKEND_VULKAN
                       ? open_vulkan(b, buf, kernels, BRANCHES)
                       : NULL;
  /* Levels of one dispatch: its buffer "as kiln's" is kiln's chain. */
  vulkan_raw *chain = vk != NULL ? open_vulkan(b, buf, kernels, 1) : NULL;
  if (vk != NULL) {
    runs[n++] = (graph_run){vulkan_ordered, vk, VULKAN_ORDERED};
    runs[n++] = (graph_run){vulkan_unordered, vk, VULKAN_UNORDERED};
    runs[n++] = (graph_run){vulkan_levels, vk, VULKAN_LEVELS};
    runs[n++] = (graph_run){vulkan_levels_as_kiln, vk, VULKAN_LEVELS_AS_KILN};
  }
  if (chain != NULL)
    runs[n++] =
        (graph_run){vulkan_levels_as_kiln, chain, VULKAN_CHAIN_AS_KILN};
#endif
  double us[FIGURES];
  for (size_t i = 0; i < FIGURES; i++) us[i] = -1.0;
  int result = measure_all(b, runs, n, kernels, us);
#if KILN_BENCH_VULKAN_RAW
  vulkan_raw_close(vk);
  vulkan_raw_close(chain);
#endif
  if (result == 0) result = report(b, kernels, us);
  if (spin_close(&sp) != 0) result = -1;
  kiln_status st = kiln_graph_destroy(k.graph);
  if (st == KILN_OK) st = kiln_graph_destroy(kb.graph);
  for (unsigned i = 0; i < BRANCHES && st == KILN_OK; i++)
    st = kiln_event_destroy(forks[i]);
  if (st != KILN_OK)
    result = bench_kiln_error("releasing the graphs and their events", st);
  return result;
}

int bench_graph(bench *b) {
  kiln_module *module = NULL;
  kiln_buffer *buf = NULL;
  BENCH_CHECK(kiln_module_create(b->ctx, kiln_bench_images,
                                 kiln_bench_images_count, &module));
  kiln_status st = kiln_buffer_create(b->ctx, BLOCK * 4, 0, &buf);
  int result = st == KILN_OK ? run(b, module, buf)
                             : bench_kiln_error("kiln_buffer_create", st);
  if ((st = kiln_buffer_destroy(buf)) != KILN_OK)
    result = bench_kiln_error("kiln_buffer_destroy", st);
  if ((st = kiln_module_destroy(module)) != KILN_OK)
    result = bench_kiln_error("kiln_module_destroy", st);
  return result;
}
