/* Threads, as kiln.h's paragraph on them promises: threads sharing one
 * context with a stream each; threads sharing one stream, the default one;
 * threads with contexts of their own; objects created and destroyed in one
 * context while other threads launch in it. Every result is checked, on
 * every backend, against the CPU.
 *
 * KILN_CONF_THREAD_ITERS sets the work: the iterations of each thread of
 * the first test (default 2000); the others scale from it. Runs under
 * ThreadSanitizer (scripts/test.sh) set 500. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "conformance.h"
#include "timing.h"

#define THREADS 8
#define DEFAULT_ITERS 2000u

/* One thread's part: what it needs, and the first thing that went wrong
 * (empty while all is well). cmocka's checks may only fail the test on the
 * main thread, so workers write here and the test fails after joining. */
typedef struct worker {
  unsigned index, iters;
  uint64_t seed;
  kiln_kernel *add;
  const kiln_module_image *images;
  size_t image_count;
  atomic_bool *stop; /* the churn test's launchers run until it is set */
  unsigned done;     /* iterations completed */
  char failure[320];
} worker;

static void failed(worker *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void failed(worker *w, const char *fmt, ...) {
  if (w->failure[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->failure, sizeof w->failure, fmt, ap);
  va_end(ap);
}

/* Records the first failed call, with kiln's message, and goes on: every
 * later step is skipped once w->failure is set. */
#define W_CHECK(w, call)                                                       \
  do {                                                                         \
    kiln_status st_ = (call);                                                  \
    if (st_ != KILN_OK)                                                        \
      failed((w), "%s: %s: %s", #call, kiln_status_name(st_),                  \
             kiln_last_error());                                               \
  } while (0)

static unsigned thread_iters(void) {
  const char *v = getenv("KILN_CONF_THREAD_ITERS");
  if (!v || !*v) return DEFAULT_ITERS;
  char *end = NULL;
  unsigned long n = strtoul(v, &end, 10);
  if (*end != '\0' || n == 0 || n > 1000000u)
    fail_msg("KILN_CONF_THREAD_ITERS=\"%s\" is not a count from 1 to 10^6", v);
  return (unsigned)n;
}

/* n / d, at least 1. */
static unsigned scaled(unsigned n, unsigned d) { return n / d ? n / d : 1u; }

/* ---- The tests' threads -------------------------------------------------- */

static void run_threads(worker *w, unsigned count, void *(*fn)(void *)) {
  conf_thread *t[THREADS];
  for (unsigned i = 0; i < count; i++) t[i] = conf_thread_start(fn, &w[i]);
  for (unsigned i = 0; i < count; i++) {
    char what[64];
    snprintf(what, sizeof what, "worker thread %u", i);
    conf_thread_join(t[i], what);
  }
  for (unsigned i = 0; i < count; i++)
    if (w[i].failure[0]) fail_msg("thread %u: %s", i, w[i].failure);
}

/* The images the threads load modules from: on Vulkan only the SPIR-V
 * image with conf_add_u32. kiln creates a module's pipelines when it loads
 * it, and under the validation layer the whole conformance set, loaded by
 * four threads a dozen times each, took the H100 minutes. */
static const kiln_module_image *add_images(size_t *out_count) {
  return conf_images_with(conf.ctx, "conf_add_u32", out_count);
}

static void setup_workers(worker *w, unsigned count, const char *test,
                          unsigned iters) {
  conf_rng r = conf_rng_for(test);
  kiln_kernel *add = conf_kernel("conf_add_u32");
  size_t image_count = 0;
  const kiln_module_image *images = add_images(&image_count);
  for (unsigned i = 0; i < count; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].index = i;
    w[i].iters = iters;
    w[i].seed = conf_next(&r);
    w[i].add = add;
    w[i].images = images;
    w[i].image_count = image_count;
  }
}

static kiln_status launch_add(kiln_stream *s, kiln_kernel *add, kiln_buffer *b,
                              uint32_t n, uint32_t value) {
  kiln_launch_config c = kiln_launch_config_1d(n, 64);
  const kiln_arg args[3] = {kiln_arg_buffer(b, 0), kiln_arg_u32(n),
                            kiln_arg_u32(value)};
  return kiln_launch(s, add, &c, args, 3);
}

/* Fails the worker unless got[i] == want[i] + add for every i < n. */
static void check_added(worker *w, const uint32_t *got, const uint32_t *want,
                        uint32_t n, uint32_t add, const char *what,
                        unsigned iter) {
  for (uint32_t j = 0; j < n && !w->failure[0]; j++)
    if (got[j] != want[j] + add)
      failed(w, "iteration %u: %s: word %u of %u is 0x%08x, expected 0x%08x",
             iter, what, j, n, got[j], want[j] + add);
}

/* ---- Threads with a stream each, one context ----------------------------- */

#define OWN_MAX_WORDS 4096u

/* alloc -> write -> launch -> read -> verify -> free, in mixed sizes. */
static void *own_stream_worker(void *arg) {
  worker *w = arg;
  conf_rng r = {w->seed};
  uint32_t *data = malloc(OWN_MAX_WORDS * 4), *got = malloc(OWN_MAX_WORDS * 4);
  kiln_stream *s = NULL;
  if (!data || !got) failed(w, "out of host memory");
  if (!w->failure[0]) W_CHECK(w, kiln_stream_create(conf.ctx, &s));
  for (unsigned i = 0; i < w->iters && !w->failure[0]; i++) {
    const uint32_t n = 1 + (uint32_t)conf_below(&r, OWN_MAX_WORDS);
    kiln_buffer *b = NULL;
    W_CHECK(w, kiln_buffer_create(conf.ctx, (size_t)n * 4, 0, &b));
    if (w->failure[0]) break;
    conf_random_bytes(&r, data, (size_t)n * 4);
    W_CHECK(w, kiln_buffer_write(s, b, 0, data, (size_t)n * 4));
    if (!w->failure[0]) W_CHECK(w, launch_add(s, w->add, b, n, i));
    if (!w->failure[0])
      W_CHECK(w, kiln_buffer_read(s, b, 0, got, (size_t)n * 4));
    if (!w->failure[0]) check_added(w, got, data, n, i, "the buffer", i);
    W_CHECK(w, kiln_buffer_destroy(b));
    w->done++;
  }
  if (s) W_CHECK(w, kiln_stream_destroy(s));
  free(data);
  free(got);
  return NULL;
}

static void threads_with_own_streams(void **state) {
  (void)state;
  const unsigned iters = thread_iters();
  worker w[THREADS];
  setup_workers(w, THREADS, __func__, iters);
  printf("threads_with_own_streams: %d threads x %u iterations\n", THREADS,
         iters);
  run_threads(w, THREADS, own_stream_worker);
}

/* ---- Threads sharing the default stream ---------------------------------- */

/* Each thread queues its own work on the default stream (NULL), some of it
 * the built-in reductions that go through the stream's scratch buffer,
 * synchronizes the stream and checks its own results. */
static void *shared_stream_worker(void *arg) {
  worker *w = arg;
  conf_rng r = {w->seed};
  /* 300 to 3299 elements: reductions of one and of two blocks, each
   * through the default stream's one workspace of slots. */
  const uint32_t n = 300 + (uint32_t)conf_below(&r, 3000);
  uint32_t *data = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
  float *x = malloc((size_t)n * 4), *y = malloc((size_t)n * 4);
  kiln_buffer *bu = NULL, *bx = NULL, *by = NULL, *sums = NULL;
  kiln_stream *s = NULL;
  if (!data || !got || !x || !y) failed(w, "out of host memory");
  if (!w->failure[0]) W_CHECK(w, kiln_context_default_stream(conf.ctx, &s));
  if (!w->failure[0])
    W_CHECK(w, kiln_buffer_create(conf.ctx, (size_t)n * 4, 0, &bu));
  if (!w->failure[0])
    W_CHECK(w, kiln_buffer_create(conf.ctx, (size_t)n * 4, 0, &bx));
  if (!w->failure[0])
    W_CHECK(w, kiln_buffer_create(conf.ctx, (size_t)n * 4, 0, &by));
  if (!w->failure[0]) W_CHECK(w, kiln_buffer_create(conf.ctx, 16, 0, &sums));
  for (uint32_t j = 0; j < n && !w->failure[0]; j++)
    y[j] = (float)conf_below(&r, 4);
  if (!w->failure[0]) W_CHECK(w, kiln_buffer_write(NULL, by, 0, y, n * 4));
  for (unsigned i = 0; i < w->iters && !w->failure[0]; i++) {
    /* Small whole numbers: every sum is exact in float32, whatever the
     * order of the additions. */
    uint32_t sum = 0, dot = 0;
    for (uint32_t j = 0; j < n; j++) {
      uint32_t v = (uint32_t)conf_below(&r, 8);
      x[j] = (float)v;
      sum += v;
      dot += v * (uint32_t)y[j];
    }
    conf_random_bytes(&r, data, (size_t)n * 4);
    const uint32_t mark = w->index << 24 | i;
    W_CHECK(w, kiln_buffer_write(NULL, bu, 0, data, (size_t)n * 4));
    if (!w->failure[0]) W_CHECK(w, launch_add(NULL, w->add, bu, n, i));
    if (!w->failure[0])
      W_CHECK(w, kiln_buffer_write(NULL, bx, 0, x, (size_t)n * 4));
    if (!w->failure[0]) W_CHECK(w, kiln_reduce_sum_f32(NULL, n, bx, 0, sums, 0));
    if (!w->failure[0])
      W_CHECK(w, kiln_dot_f32(NULL, n, bx, 0, by, 0, sums, 4));
    if (!w->failure[0])
      W_CHECK(w, kiln_buffer_fill(NULL, sums, 8, 8, &mark, 4));
    if (!w->failure[0]) W_CHECK(w, kiln_stream_synchronize(s));
    float result[4] = {0};
    if (!w->failure[0])
      W_CHECK(w, kiln_buffer_read(NULL, bu, 0, got, (size_t)n * 4));
    if (!w->failure[0]) W_CHECK(w, kiln_buffer_read(NULL, sums, 0, result, 16));
    if (w->failure[0]) break;
    check_added(w, got, data, n, i, "the launch's buffer", i);
    uint32_t marks[2];
    memcpy(marks, &result[2], sizeof marks);
    if (result[0] != (float)sum || result[1] != (float)dot)
      failed(w,
             "iteration %u: kiln_reduce_sum_f32 gave %.1f (expected %u) and "
             "kiln_dot_f32 %.1f (expected %u) over %u elements",
             i, (double)result[0], sum, (double)result[1], dot, n);
    else if (marks[0] != mark || marks[1] != mark)
      failed(w, "iteration %u: the fill left 0x%08x 0x%08x, expected 0x%08x",
             i, marks[0], marks[1], mark);
    w->done++;
  }
  W_CHECK(w, kiln_buffer_destroy(sums));
  W_CHECK(w, kiln_buffer_destroy(by));
  W_CHECK(w, kiln_buffer_destroy(bx));
  W_CHECK(w, kiln_buffer_destroy(bu));
  free(data);
  free(got);
  free(x);
  free(y);
  return NULL;
}

static void threads_share_the_default_stream(void **state) {
  (void)state;
  const unsigned iters = scaled(thread_iters(), 4);
  worker w[THREADS];
  setup_workers(w, THREADS, __func__, iters);
  printf("threads_share_the_default_stream: %d threads x %u iterations\n",
         THREADS, iters);
  run_threads(w, THREADS, shared_stream_worker);
}

/* ---- Threads with contexts of their own ---------------------------------- */

/* One context's life: every kind of object in it, a launch, a built-in
 * reduction and an event, checked, then all of it destroyed. */
static void one_context(worker *w, conf_rng *r, unsigned round) {
  enum { WORDS = 1000 };
  kiln_context_options o = kiln_context_options_default();
  o.backend = conf.backend;
  kiln_context *ctx = NULL;
  kiln_stream *s = NULL;
  kiln_module *m = NULL;
  kiln_kernel *add = NULL;
  kiln_buffer *b = NULL, *sum = NULL;
  kiln_event *e = NULL;
  uint32_t data[WORDS], got[WORDS];
  W_CHECK(w, kiln_context_create(&o, &ctx));
  if (w->failure[0]) return;
  W_CHECK(w, kiln_stream_create(ctx, &s));
  if (!w->failure[0])
    W_CHECK(w, kiln_module_create(ctx, w->images, w->image_count, &m));
  if (!w->failure[0]) W_CHECK(w, kiln_module_get_kernel(m, "conf_add_u32", &add));
  if (!w->failure[0]) W_CHECK(w, kiln_buffer_create(ctx, WORDS * 4, 0, &b));
  if (!w->failure[0]) W_CHECK(w, kiln_buffer_create(ctx, 4, 0, &sum));
  if (!w->failure[0]) W_CHECK(w, kiln_event_create(ctx, &e));
  conf_random_bytes(r, data, sizeof data);
  if (!w->failure[0]) W_CHECK(w, kiln_buffer_write(s, b, 0, data, sizeof data));
  if (!w->failure[0]) W_CHECK(w, launch_add(s, add, b, WORDS, round));
  /* The built-in module, loaded by this context on first use. */
  const float ones[4] = {1, 1, 1, 1};
  float total = 0;
  if (!w->failure[0]) W_CHECK(w, kiln_buffer_write(s, sum, 0, ones, 4));
  if (!w->failure[0]) W_CHECK(w, kiln_reduce_sum_f32(s, 1, sum, 0, sum, 0));
  if (!w->failure[0]) W_CHECK(w, kiln_event_record(e, s));
  if (!w->failure[0]) W_CHECK(w, kiln_event_synchronize(e));
  if (!w->failure[0]) W_CHECK(w, kiln_buffer_read(s, b, 0, got, sizeof got));
  if (!w->failure[0]) W_CHECK(w, kiln_buffer_read(s, sum, 0, &total, 4));
  if (!w->failure[0]) {
    check_added(w, got, data, WORDS, round, "a context's own buffer", round);
    if (total != 1.0f)
      failed(w, "context %u: kiln_reduce_sum_f32 of one 1.0 gave %f", round,
             (double)total);
  }
  W_CHECK(w, kiln_event_destroy(e));
  W_CHECK(w, kiln_buffer_destroy(sum));
  W_CHECK(w, kiln_buffer_destroy(b));
  W_CHECK(w, kiln_module_destroy(m));
  W_CHECK(w, kiln_stream_destroy(s));
  /* Everything was destroyed: KILN_OK, not OBJECTS_ALIVE. */
  W_CHECK(w, kiln_context_destroy(ctx));
}

static void *own_context_worker(void *arg) {
  worker *w = arg;
  conf_rng r = {w->seed};
  for (unsigned i = 0; i < w->iters && !w->failure[0]; i++) {
    one_context(w, &r, w->index * 1000u + i);
    w->done++;
  }
  return NULL;
}

static void threads_with_own_contexts(void **state) {
  (void)state;
  const unsigned iters = scaled(thread_iters(), 400);
  worker w[THREADS];
  setup_workers(w, THREADS, __func__, iters);
  printf("threads_with_own_contexts: %d threads x %u contexts\n", THREADS,
         iters);
  run_threads(w, THREADS, own_context_worker);
}

/* ---- Threads raising one kernel's shared memory at once ------------------ */

/* Launches w->add (conf_shared_rotate here) with w->iters words of dynamic
 * shared memory per block, and checks the rotation. */
static void *shared_memory_worker(void *arg) {
  worker *w = arg;
  conf_rng r = {w->seed};
  enum { GRID = 2 };
  const uint32_t words = w->iters;
  const size_t n = (size_t)words * GRID;
  uint32_t *in = malloc(n * 4), *got = malloc(n * 4);
  kiln_stream *s = NULL;
  kiln_buffer *bin = NULL, *bout = NULL;
  if (!in || !got) failed(w, "out of host memory");
  if (!w->failure[0]) W_CHECK(w, kiln_stream_create(conf.ctx, &s));
  if (!w->failure[0]) W_CHECK(w, kiln_buffer_create(conf.ctx, n * 4, 0, &bin));
  if (!w->failure[0])
    W_CHECK(w, kiln_buffer_create(conf.ctx, n * 4, 0, &bout));
  if (!w->failure[0]) {
    conf_random_bytes(&r, in, n * 4);
    W_CHECK(w, kiln_buffer_write(s, bin, 0, in, n * 4));
  }
  const kiln_launch_config c = {{GRID, 1, 1}, {256, 1, 1}, (size_t)words * 4};
  const kiln_arg args[3] = {kiln_arg_buffer(bout, 0), kiln_arg_buffer(bin, 0),
                            kiln_arg_u32(words)};
  if (!w->failure[0]) W_CHECK(w, kiln_launch(s, w->add, &c, args, 3));
  if (!w->failure[0]) W_CHECK(w, kiln_buffer_read(s, bout, 0, got, n * 4));
  for (size_t b = 0; b < GRID && !w->failure[0]; b++)
    for (size_t i = 0; i < words && !w->failure[0]; i++)
      if (got[b * words + i] != in[b * words + (i + 1) % words])
        failed(w, "conf_shared_rotate with %u words of shared memory: word "
                  "%zu of block %zu is wrong",
               words, i, b);
  W_CHECK(w, kiln_buffer_destroy(bout));
  W_CHECK(w, kiln_buffer_destroy(bin));
  if (s) W_CHECK(w, kiln_stream_destroy(s));
  free(in);
  free(got);
  return NULL;
}

/* Every thread launches a new kernel at once with its own amount of
 * dynamic shared memory: beyond the default where the device lets kernels
 * opt in to more (each launch may raise the kernel's limit while the others
 * do), within it elsewhere (each amount its own Vulkan pipeline). */
static void threads_raise_shared_memory(void **state) {
  (void)state;
  const unsigned rounds = scaled(thread_iters(), 400);
  const size_t limit = conf.props.max_shared_memory_per_block;
  const size_t optin = conf.props.max_shared_memory_per_block_optin;
  size_t image_count = 0;
  const kiln_module_image *images = conf_images(&image_count);
  printf("threads_raise_shared_memory: %d threads x %u new kernels, up to "
         "%zu bytes of shared memory per block (default %zu)\n",
         THREADS, rounds, optin > limit ? optin : limit, limit);
  for (unsigned round = 0; round < rounds; round++) {
    kiln_module *m;
    kiln_kernel *k;
    check_ok(kiln_module_create(conf.ctx, images, image_count, &m));
    check_ok(kiln_module_get_kernel(m, "conf_shared_rotate", &k));
    worker w[THREADS];
    setup_workers(w, THREADS, __func__, 0);
    for (unsigned t = 0; t < THREADS; t++) {
      w[t].add = k;
      w[t].seed ^= round;
      /* Words of shared memory, all different, the largest at the limit. */
      size_t words = optin > limit
                         ? (limit + (optin - limit) * (t + 1) / THREADS) / 4
                         : limit * (t + 1) / THREADS / 4;
      w[t].iters = (unsigned)(words - round % 2);
    }
    run_threads(w, THREADS, shared_memory_worker);
    check_ok(kiln_module_destroy(m));
  }
}

/* ---- Objects created and destroyed while other threads launch ------------ */

#define LAUNCH_WORDS 2048u

/* Launches on its own stream and buffer, checking every result, until the
 * churners are done. */
static void *launcher(void *arg) {
  worker *w = arg;
  conf_rng r = {w->seed};
  uint32_t *data = malloc(LAUNCH_WORDS * 4), *got = malloc(LAUNCH_WORDS * 4);
  kiln_stream *s = NULL;
  kiln_buffer *b = NULL;
  if (!data || !got) failed(w, "out of host memory");
  if (!w->failure[0]) W_CHECK(w, kiln_stream_create(conf.ctx, &s));
  if (!w->failure[0])
    W_CHECK(w, kiln_buffer_create(conf.ctx, LAUNCH_WORDS * 4, 0, &b));
  for (unsigned i = 0; !w->failure[0] && !atomic_load(w->stop); i++) {
    conf_random_bytes(&r, data, LAUNCH_WORDS * 4);
    W_CHECK(w, kiln_buffer_write(s, b, 0, data, LAUNCH_WORDS * 4));
    for (uint32_t k = 1; k <= 3 && !w->failure[0]; k++)
      W_CHECK(w, launch_add(s, w->add, b, LAUNCH_WORDS, k));
    if (!w->failure[0])
      W_CHECK(w, kiln_buffer_read(s, b, 0, got, LAUNCH_WORDS * 4));
    if (!w->failure[0])
      check_added(w, got, data, LAUNCH_WORDS, 6, "a launcher's buffer", i);
    w->done++;
  }
  W_CHECK(w, kiln_buffer_destroy(b));
  if (s) W_CHECK(w, kiln_stream_destroy(s));
  free(data);
  free(got);
  return NULL;
}

/* Creates one of each kind of object in the shared context, uses them
 * together, and destroys them in an order that changes every round. */
static void *churner(void *arg) {
  worker *w = arg;
  conf_rng r = {w->seed};
  for (unsigned i = 0; i < w->iters && !w->failure[0]; i++) {
    const uint32_t n = 1 + (uint32_t)conf_below(&r, 1024);
    kiln_stream *s = NULL;
    kiln_buffer *b = NULL;
    kiln_host_buffer *h = NULL;
    kiln_event *e = NULL;
    kiln_module *m = NULL;
    kiln_kernel *add = w->add;
    W_CHECK(w, kiln_stream_create(conf.ctx, &s));
    if (!w->failure[0])
      W_CHECK(w, kiln_buffer_create(conf.ctx, (size_t)n * 4, KILN_BUFFER_ZERO,
                                    &b));
    if (!w->failure[0])
      W_CHECK(w, kiln_host_buffer_create(conf.ctx, (size_t)n * 4, 0, &h));
    if (!w->failure[0]) W_CHECK(w, kiln_event_create(conf.ctx, &e));
    /* A module of its own every eighth round: loading one (and its first
     * pipeline on Vulkan) costs far more than the other objects. */
    if (!w->failure[0] && i % 8 == 0) {
      W_CHECK(w, kiln_module_create(conf.ctx, w->images, w->image_count, &m));
      if (!w->failure[0])
        W_CHECK(w, kiln_module_get_kernel(m, "conf_add_u32", &add));
    }
    if (!w->failure[0]) W_CHECK(w, launch_add(s, add, b, n, i + 1));
    if (!w->failure[0])
      W_CHECK(w, kiln_buffer_read_async(s, b, 0, h, 0, (size_t)n * 4));
    if (!w->failure[0]) W_CHECK(w, kiln_event_record(e, s));
    if (!w->failure[0]) W_CHECK(w, kiln_event_synchronize(e));
    if (!w->failure[0]) {
      /* The buffer started zeroed, so it now holds i + 1 everywhere. */
      const uint32_t *got = kiln_host_buffer_data(h);
      for (uint32_t j = 0; j < n && !w->failure[0]; j++)
        if (got[j] != i + 1)
          failed(w, "round %u: word %u of a new zeroed buffer after one "
                    "launch is 0x%08x, expected 0x%08x",
                 i, j, got[j], i + 1);
    }
    switch (i % 3) {
    case 0:
      W_CHECK(w, kiln_module_destroy(m));
      W_CHECK(w, kiln_event_destroy(e));
      W_CHECK(w, kiln_host_buffer_destroy(h));
      W_CHECK(w, kiln_buffer_destroy(b));
      W_CHECK(w, kiln_stream_destroy(s));
      break;
    case 1:
      W_CHECK(w, kiln_stream_destroy(s));
      W_CHECK(w, kiln_buffer_destroy(b));
      W_CHECK(w, kiln_module_destroy(m));
      W_CHECK(w, kiln_host_buffer_destroy(h));
      W_CHECK(w, kiln_event_destroy(e));
      break;
    default:
      W_CHECK(w, kiln_buffer_destroy(b));
      W_CHECK(w, kiln_event_destroy(e));
      W_CHECK(w, kiln_stream_destroy(s));
      W_CHECK(w, kiln_host_buffer_destroy(h));
      W_CHECK(w, kiln_module_destroy(m));
    }
    w->done++;
  }
  return NULL;
}

static void *churn_or_launch(void *arg) {
  worker *w = arg;
  return w->index < THREADS / 2 ? launcher(w) : churner(w);
}

static void threads_create_and_destroy_while_others_launch(void **state) {
  (void)state;
  const unsigned rounds = scaled(thread_iters(), 20);
  atomic_bool stop;
  atomic_init(&stop, false);
  worker w[THREADS];
  setup_workers(w, THREADS, __func__, rounds);
  for (unsigned i = 0; i < THREADS; i++) w[i].stop = &stop;
  printf("threads_create_and_destroy_while_others_launch: %d threads launching "
         "while %d create and destroy, %u rounds each\n",
         THREADS / 2, THREADS / 2, rounds);
  conf_thread *t[THREADS];
  for (unsigned i = 0; i < THREADS; i++)
    t[i] = conf_thread_start(churn_or_launch, &w[i]);
  char what[64];
  for (unsigned i = THREADS / 2; i < THREADS; i++) {
    snprintf(what, sizeof what, "churning thread %u", i);
    conf_thread_join(t[i], what);
  }
  atomic_store(&stop, true);
  for (unsigned i = 0; i < THREADS / 2; i++) {
    snprintf(what, sizeof what, "launching thread %u", i);
    conf_thread_join(t[i], what);
  }
  for (unsigned i = 0; i < THREADS; i++)
    if (w[i].failure[0]) fail_msg("thread %u: %s", i, w[i].failure);
  for (unsigned i = 0; i < THREADS / 2; i++)
    if (w[i].done == 0)
      fail_msg("launcher %u finished no round while the others churned", i);
}

int conf_run_thread_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(threads_with_own_streams),
      CONF_TEST(threads_share_the_default_stream),
      CONF_TEST(threads_with_own_contexts),
      CONF_TEST(threads_raise_shared_memory),
      CONF_TEST(threads_create_and_destroy_while_others_launch),
  };
  return cmocka_run_group_tests_name("threads", tests, NULL, NULL);
}
