/* Overlap: whether a copy on one stream runs while a kernel runs on
 * another. A batch of SGEMMs of about T ms on one stream and a pinned host
 * to device copy of about T ms on a second, each alone and then issued
 * together: the figure is (kernel alone + copy alone) / (both together),
 * 2.0 for perfect overlap, 1.0 for none. Then the classic double-buffered
 * pipeline: chunk i + 1 is copied in while chunk i is computed on (the
 * same SGEMMs, a share each, and a kernel that reads the chunk), end to end
 * in GB/s of data copied in. Host clocks: the figure is about the two
 * streams together. The raw CUDA comparator runs the same work, with the
 * same kernels from the same fatbin, on two streams of its own: the SGEMM
 * kernel and launch shape kiln_sgemm_f32 chose for the size, learnt from a
 * trace of one call; on another backend, from a call in a CUDA context of
 * kiln's own on the same device (the comparator once launched the 128 x
 * 256 kernel at every size: 32 blocks for 1024^2 on an H200's 132 SMs, and
 * lost to kiln 2.5 times in the pipeline; on Vulkan it still did until
 * the context was added). */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"

#define TARGET_MS 20.0
#define QUICK_TARGET_MS 2.0
#define GEMM_N 1024u
#define QUICK_GEMM_N 128u
#define CHUNKS 8u
#define SCALE 2.0f
/* The CUDA kernel kiln_sgemm_f32's launch shape (docs/kernels.md), for the
 * raw-CUDA comparator where no trace tells kiln's choice: 256 threads, a
 * 128 x 256 tile. */
#define GEMM_BLOCK 256u
#define GEMM_TILE_M 128u
#define GEMM_TILE_N 256u

typedef struct overlap {
  bench *b;
  kiln_stream *copy_stream;
  kiln_kernel *scale;
  kiln_buffer *ma, *mb, *mc; /* the SGEMMs' matrices */
  kiln_buffer *dev[2], *out[2];
  kiln_host_buffer *host;
  uint32_t gemm_n;
  unsigned gemms;   /* SGEMMs in the kernel batch */
  size_t bytes;     /* the copy's size, a multiple of 4 * CHUNKS */
} overlap;

/* The overlap's SGEMM, c = a b of n x n, on s: the batch's, and the one
 * traced to learn kiln's choice of kernel. */
static kiln_status sgemm(uint32_t n, kiln_stream *s, kiln_buffer *a,
                         kiln_buffer *b, kiln_buffer *c) {
  return kiln_sgemm_f32(s, n, n, n, 1.0f, a, 0, n, b, 0, n, 0.0f, c, 0, n);
}

static kiln_status gemms(overlap *o, kiln_stream *s, unsigned count) {
  for (unsigned i = 0; i < count; i++) {
    kiln_status st = sgemm(o->gemm_n, s, o->ma, o->mb, o->mc);
    if (st != KILN_OK) return st;
  }
  return KILN_OK;
}

static kiln_status copy_in(overlap *o, kiln_stream *s, kiln_buffer *dst,
                           size_t from, size_t size) {
  return kiln_buffer_write_async(s, dst, 0, o->host, from, size);
}

/* Milliseconds of: the kernel batch (which & 1), the copy (which & 2). */
static int timed(overlap *o, unsigned which, double *ms) {
  bench *b = o->b;
  const double t0 = bench_now();
  if (which & 1) BENCH_CHECK(gemms(o, b->stream, o->gemms));
  if (which & 2)
    BENCH_CHECK(copy_in(o, o->copy_stream, o->dev[0], 0, o->bytes));
  if (which & 1) BENCH_CHECK(kiln_stream_synchronize(b->stream));
  if (which & 2) BENCH_CHECK(kiln_stream_synchronize(o->copy_stream));
  *ms = (bench_now() - t0) * 1e3;
  return 0;
}

static int median_of(overlap *o, unsigned which, double *ms) {
  double v[64];
  unsigned n = o->b->opt.repeat < 64 ? o->b->opt.repeat : 64;
  if (timed(o, which, &v[0]) != 0) return -1; /* warm-up */
  for (unsigned i = 0; i < n; i++)
    if (timed(o, which, &v[i]) != 0) return -1;
  *ms = bench_median(v, n);
  return 0;
}

/* The pipeline once: chunk i copied into dev[i % 2] on the copy stream,
 * then, on the compute stream, a share of the SGEMMs and out = SCALE * the
 * chunk; a slot is refilled only once its compute is done. */
static int pipeline(overlap *o, double *ms) {
  bench *b = o->b;
  kiln_event *copied[2], *computed[2];
  for (int i = 0; i < 2; i++) {
    /* Without timing, as the raw comparator's (cuEventCreate with
     * CU_EVENT_DISABLE_TIMING): they only order the two streams. */
    BENCH_CHECK(kiln_event_create_with_flags(b->ctx, KILN_EVENT_NO_TIMING,
                                             &copied[i]));
    BENCH_CHECK(kiln_event_create_with_flags(b->ctx, KILN_EVENT_NO_TIMING,
                                             &computed[i]));
  }
  const size_t chunk = o->bytes / CHUNKS;
  const uint32_t floats = (uint32_t)(chunk / 4);
  const kiln_launch_config c = kiln_launch_config_1d(floats, 256);
  const unsigned share = (o->gemms + CHUNKS - 1) / CHUNKS;
  const double t0 = bench_now();
  for (unsigned i = 0; i < CHUNKS; i++) {
    const unsigned slot = i % 2;
    if (i >= 2)
      BENCH_CHECK(kiln_stream_wait_event(o->copy_stream, computed[slot]));
    BENCH_CHECK(copy_in(o, o->copy_stream, o->dev[slot], i * chunk, chunk));
    BENCH_CHECK(kiln_event_record(copied[slot], o->copy_stream));
    BENCH_CHECK(kiln_stream_wait_event(b->stream, copied[slot]));
    BENCH_CHECK(gemms(o, b->stream, share));
    const kiln_arg args[4] = {kiln_arg_buffer(o->out[slot], 0),
                              kiln_arg_buffer(o->dev[slot], 0),
                              kiln_arg_f32(SCALE), kiln_arg_u32(floats)};
    BENCH_CHECK(kiln_launch(b->stream, o->scale, &c, args, 4));
    BENCH_CHECK(kiln_event_record(computed[slot], b->stream));
  }
  BENCH_CHECK(kiln_stream_synchronize(b->stream));
  BENCH_CHECK(kiln_stream_synchronize(o->copy_stream));
  *ms = (bench_now() - t0) * 1e3;
  for (int i = 0; i < 2; i++) {
    BENCH_CHECK(kiln_event_destroy(copied[i]));
    BENCH_CHECK(kiln_event_destroy(computed[i]));
  }
  /* The last chunk, scaled, is in out[(CHUNKS - 1) % 2]. */
  float *got = malloc(chunk);
  if (!got) return bench_kiln_error("malloc", KILN_ERROR_OUT_OF_HOST_MEMORY);
  int result = 0;
  kiln_status st = kiln_buffer_read(b->stream, o->out[(CHUNKS - 1) % 2], 0,
                                    got, chunk);
  if (st != KILN_OK) {
    result = bench_kiln_error("kiln_buffer_read", st);
  } else {
    const float *in =
        (const float *)kiln_host_buffer_data(o->host) + (CHUNKS - 1) * floats;
    for (uint32_t i = 0; i < floats; i++)
      if (got[i] != SCALE * in[i]) {
        bench_wrong(b, "overlap pipeline: element %u of the last chunk is "
                       "%.9g, expected %.9g",
                    i, (double)got[i], (double)(SCALE * in[i]));
        break;
      }
  }
  free(got);
  return result;
}

/* ---- The raw CUDA driver, the same work ---------------------------------- */

typedef struct raw_overlap {
  overlap *o;
  cuda_raw *raw;
  void *sgemm, *scale, *copy_stream;
  /* The SGEMM launch kiln_sgemm_f32 made for the size. */
  unsigned across, down, threads;
  raw_ptr ma, mb, mc, dev[2], out[2];
  void *host;
} raw_overlap;

/* The one launch of a traced kiln_sgemm_f32 call. */
typedef struct gemm_choice {
  char kernel[64];
  kiln_dim3 grid, block;
  unsigned launches;
} gemm_choice;

static void on_gemm_launch(const kiln_trace_command *c, void *user) {
  gemm_choice *g = user;
  if (c->kind != KILN_TRACE_LAUNCH || !c->kernel_name) return;
  g->launches++;
  snprintf(g->kernel, sizeof g->kernel, "%s", c->kernel_name);
  g->grid = c->grid;
  g->block = c->block;
}

/* One kiln_sgemm_f32 of the overlap's size on s, its launches traced. */
static kiln_status traced_gemm(uint32_t n, kiln_stream *s, kiln_buffer *a,
                               kiln_buffer *bm, kiln_buffer *c,
                               gemm_choice *g) {
  kiln_set_trace_handler(on_gemm_launch, g);
  kiln_status st = sgemm(n, s, a, bm, c);
  kiln_set_trace_handler(NULL, NULL);
  if (st == KILN_OK) st = kiln_stream_synchronize(s);
  return st;
}

/* On another backend, what kiln's CUDA backend launches for the size, in
 * a CUDA context of kiln's own on the same device: the comparator runs
 * CUDA kernels, and the bench's backend chooses among its own. Without
 * that context the choice stays unknown (g->launches 0). */
static int trace_gemm_on_cuda(overlap *o, gemm_choice *g) {
  kiln_context_options opt = kiln_context_options_default();
  opt.backend = KILN_BACKEND_CUDA;
  if (bench_device_index(o->b, KILN_BACKEND_CUDA, &opt.device_index) != 0)
    return 0;
  kiln_context *ctx = NULL;
  kiln_status st = kiln_context_create(&opt, &ctx);
  if (st != KILN_OK) {
    fprintf(o->b->out, "  (no CUDA context of kiln's to learn its SGEMM "
            "choice from: %s)\n", kiln_last_error());
    return 0;
  }
  const size_t bytes = (size_t)o->gemm_n * o->gemm_n * 4;
  kiln_buffer *m[3] = {NULL, NULL, NULL};
  kiln_stream *s = NULL;
  st = kiln_stream_create(ctx, &s);
  for (int i = 0; i < 3 && st == KILN_OK; i++)
    st = kiln_buffer_create(ctx, bytes, KILN_BUFFER_ZERO, &m[i]);
  if (st == KILN_OK) st = traced_gemm(o->gemm_n, s, m[0], m[1], m[2], g);
  /* Every one is tried; the first failure is reported. */
  kiln_status released = KILN_OK, r;
  for (int i = 0; i < 3; i++)
    if (m[i] && (r = kiln_buffer_destroy(m[i])) != KILN_OK &&
        released == KILN_OK)
      released = r;
  if (s && (r = kiln_stream_destroy(s)) != KILN_OK && released == KILN_OK)
    released = r;
  if ((r = kiln_context_destroy(ctx)) != KILN_OK && released == KILN_OK)
    released = r;
  if (st != KILN_OK) return bench_kiln_error("kiln_sgemm_f32 on CUDA", st);
  if (released != KILN_OK)
    return bench_kiln_error("releasing the CUDA context of the trace",
                            released);
  return 0;
}

/* What kiln_sgemm_f32 launches for the overlap's size on CUDA, whose
 * kernels the comparator runs. */
static int trace_gemm(overlap *o, gemm_choice *g) {
  memset(g, 0, sizeof *g);
  if (o->b->props.backend != KILN_BACKEND_CUDA)
    return trace_gemm_on_cuda(o, g);
  kiln_status st =
      traced_gemm(o->gemm_n, o->b->stream, o->ma, o->mb, o->mc, g);
  if (st != KILN_OK) return bench_kiln_error("kiln_sgemm_f32", st);
  return 0;
}

/* The kernel and shape of the traced call, when it is one launch of a
 * kernel with kiln_sgemm_f32's parameters (not the split kernel, which
 * sums through a workspace); else the large kernel's fixed shape. */
static int choose_gemm(overlap *o, const gemm_choice *choice, raw_overlap *r) {
  const gemm_choice g = *choice;
  const bool same_params = strcmp(g.kernel, "kiln_sgemm_f32") == 0 ||
                           strcmp(g.kernel, "kiln_sgemm_f32_mid") == 0 ||
                           strcmp(g.kernel, "kiln_sgemm_f32_small") == 0;
  if (g.launches == 1 && same_params && g.grid.z == 1 && g.block.y == 1 &&
      cuda_raw_function(r->raw, g.kernel, &r->sgemm) == 0) {
    r->across = g.grid.x;
    r->down = g.grid.y;
    r->threads = g.block.x;
    return 0;
  }
  if (g.launches)
    fprintf(o->b->out,
            "  (raw SGEMMs: kiln launched %s %u time(s); the comparator "
            "uses kiln_sgemm_f32's own shape)\n",
            g.kernel, g.launches);
  if (cuda_raw_function(r->raw, "kiln_sgemm_f32", &r->sgemm) != 0) return -1;
  r->across = (o->gemm_n + GEMM_TILE_N - 1) / GEMM_TILE_N;
  r->down = (o->gemm_n + GEMM_TILE_M - 1) / GEMM_TILE_M;
  r->threads = GEMM_BLOCK;
  return 0;
}

static int raw_gemms(raw_overlap *r, unsigned count) {
  uint32_t n = r->o->gemm_n;
  float alpha = 1.0f, beta = 0.0f;
  void *params[11] = {&r->mc, &r->ma, &r->mb, &n, &n, &n,
                      &n,     &n,     &n,     &alpha, &beta};
  for (unsigned i = 0; i < count; i++)
    if (cuda_raw_launch(r->raw, r->sgemm, r->across, r->down, r->threads,
                        params))
      return -1;
  return 0;
}

/* As timed(): the kernel batch on the comparator's stream (which & 1), the
 * copy on the second (which & 2). */
static int raw_timed(raw_overlap *r, unsigned which, double *ms) {
  cuda_raw *raw = r->raw;
  const double t0 = bench_now();
  if ((which & 1) && raw_gemms(r, r->o->gemms) != 0) return -1;
  if (which & 2) {
    cuda_raw_use_stream(raw, r->copy_stream);
    int failed = cuda_raw_htod(raw, r->dev[0], r->host, r->o->bytes);
    cuda_raw_use_stream(raw, NULL);
    if (failed) return -1;
  }
  if ((which & 1) && cuda_raw_sync(raw) != 0) return -1;
  if (which & 2) {
    cuda_raw_use_stream(raw, r->copy_stream);
    int failed = cuda_raw_sync(raw);
    cuda_raw_use_stream(raw, NULL);
    if (failed) return -1;
  }
  *ms = (bench_now() - t0) * 1e3;
  return 0;
}

/* As pipeline(), on the two raw streams. */
static int raw_pipeline(raw_overlap *r, void **copied, void **computed,
                        double *ms) {
  cuda_raw *raw = r->raw;
  const size_t chunk = r->o->bytes / CHUNKS;
  uint32_t floats = (uint32_t)(chunk / 4);
  float scale = SCALE;
  const unsigned share = (r->o->gemms + CHUNKS - 1) / CHUNKS;
  const double t0 = bench_now();
  for (unsigned i = 0; i < CHUNKS; i++) {
    const unsigned slot = i % 2;
    cuda_raw_use_stream(raw, r->copy_stream);
    int failed = (i >= 2 && cuda_raw_wait_event(raw, computed[slot])) ||
                 cuda_raw_htod(raw, r->dev[slot],
                               (const char *)r->host + i * chunk, chunk) ||
                 cuda_raw_event_record(raw, copied[slot]);
    cuda_raw_use_stream(raw, NULL);
    void *params[4] = {&r->out[slot], &r->dev[slot], &scale, &floats};
    if (failed || cuda_raw_wait_event(raw, copied[slot]) ||
        raw_gemms(r, share) ||
        cuda_raw_launch(raw, r->scale, (floats + 255) / 256, 1, 256, params) ||
        cuda_raw_event_record(raw, computed[slot]))
      return -1;
  }
  if (cuda_raw_sync(raw) != 0) return -1;
  cuda_raw_use_stream(raw, r->copy_stream);
  int failed = cuda_raw_sync(raw);
  cuda_raw_use_stream(raw, NULL);
  if (failed) return -1;
  *ms = (bench_now() - t0) * 1e3;
  return 0;
}

static int raw_median(raw_overlap *r, unsigned which, double *ms) {
  double v[64];
  unsigned n = r->o->b->opt.repeat < 64 ? r->o->b->opt.repeat : 64;
  if (raw_timed(r, which, &v[0]) != 0) return -1;
  for (unsigned i = 0; i < n; i++)
    if (raw_timed(r, which, &v[i]) != 0) return -1;
  *ms = bench_median(v, n);
  return 0;
}

/* The raw figures beside kiln's: *figure and *gbps, or -1 when the
 * comparator cannot run them. */
static int run_raw(overlap *o, double *figure, double *gbps) {
  *figure = *gbps = -1.0;
  bench *b = o->b;
  raw_overlap r;
  memset(&r, 0, sizeof r);
  r.o = o;
  r.raw = b->raw;
  if (r.raw == NULL) return 0;
  gemm_choice choice;
  if (trace_gemm(o, &choice) != 0) return -1;
  if (cuda_raw_enter(r.raw) != 0) return -1;
  if (choose_gemm(o, &choice, &r) != 0 ||
      cuda_raw_function(r.raw, "kiln_scale_f32", &r.scale) != 0) {
    cuda_raw_leave(r.raw);
    cuda_raw_no_kernel("overlap", "kiln_sgemm_f32 or kiln_scale_f32");
    return 0;
  }
  fprintf(b->out, "  raw SGEMMs: %u x %u blocks of %u threads%s\n", r.across,
          r.down, r.threads,
          choice.launches == 1 ? ", kiln's choice for the size" : "");
  const size_t matrix = (size_t)o->gemm_n * o->gemm_n;
  void *copied[2] = {NULL, NULL}, *computed[2] = {NULL, NULL};
  int result = -1;
  if (cuda_raw_stream_create(r.raw, &r.copy_stream) == 0 &&
      cuda_raw_alloc(r.raw, matrix * 4, &r.ma) == 0 &&
      cuda_raw_alloc(r.raw, matrix * 4, &r.mb) == 0 &&
      cuda_raw_alloc(r.raw, matrix * 4, &r.mc) == 0 &&
      cuda_raw_alloc(r.raw, o->bytes, &r.dev[0]) == 0 &&
      cuda_raw_alloc(r.raw, o->bytes, &r.dev[1]) == 0 &&
      cuda_raw_alloc(r.raw, o->bytes / CHUNKS, &r.out[0]) == 0 &&
      cuda_raw_alloc(r.raw, o->bytes / CHUNKS, &r.out[1]) == 0 &&
      cuda_raw_host_alloc(r.raw, o->bytes, &r.host) == 0 &&
      cuda_raw_event_create(r.raw, &copied[0]) == 0 &&
      cuda_raw_event_create(r.raw, &copied[1]) == 0 &&
      cuda_raw_event_create(r.raw, &computed[0]) == 0 &&
      cuda_raw_event_create(r.raw, &computed[1]) == 0 &&
      bench_upload_raw(b, r.ma, matrix, BENCH_SEED_A) == 0 &&
      bench_upload_raw(b, r.mb, matrix, BENCH_SEED_B) == 0 &&
      cuda_raw_sync(r.raw) == 0) {
    memcpy(r.host, kiln_host_buffer_data(o->host), o->bytes);
    double k_ms, c_ms, both_ms, v[64];
    unsigned n = b->opt.repeat < 64 ? b->opt.repeat : 64;
    if (raw_median(&r, 1, &k_ms) == 0 && raw_median(&r, 2, &c_ms) == 0 &&
        raw_median(&r, 3, &both_ms) == 0 &&
        raw_pipeline(&r, copied, computed, &v[0]) == 0) {
      result = 0;
      for (unsigned i = 0; i < n && result == 0; i++)
        result = raw_pipeline(&r, copied, computed, &v[i]);
      if (result == 0) {
        *figure = (k_ms + c_ms) / both_ms;
        *gbps = (double)o->bytes / (bench_median(v, n) * 1e6);
      }
    }
  }
  for (int i = 0; i < 2; i++) {
    cuda_raw_event_destroy(r.raw, copied[i]);
    cuda_raw_event_destroy(r.raw, computed[i]);
    cuda_raw_free(r.raw, r.dev[i]);
    cuda_raw_free(r.raw, r.out[i]);
  }
  cuda_raw_free(r.raw, r.ma);
  cuda_raw_free(r.raw, r.mb);
  cuda_raw_free(r.raw, r.mc);
  cuda_raw_host_free(r.raw, r.host);
  cuda_raw_stream_destroy(r.raw, r.copy_stream);
  cuda_raw_leave(r.raw);
  return result;
}

/* ---- Both, and the figures ----------------------------------------------- */

static int run(overlap *o) {
  bench *b = o->b;
  const double target = b->opt.quick ? QUICK_TARGET_MS : TARGET_MS;
  /* Sizes from one of each alone: SGEMMs for about the target, and a copy
   * for about as long. */
  /* A batch times one SGEMM: alone, its launch and wait would count. */
  enum { PROBE_GEMMS = 8 };
  double ms, one_gemm_ms;
  o->gemms = PROBE_GEMMS;
  if (timed(o, 1, &ms) != 0 || timed(o, 1, &one_gemm_ms) != 0) return -1;
  one_gemm_ms /= PROBE_GEMMS;
  const size_t probe = o->bytes;
  if (timed(o, 2, &ms) != 0 || timed(o, 2, &ms) != 0) return -1;
  size_t bytes = ms > 0.0 ? (size_t)((double)probe * target / ms) : probe;
  const size_t unit = 4 * CHUNKS;
  if (bytes > probe) bytes = probe;
  o->bytes = bytes < unit ? unit : bytes / unit * unit;
  /* The SGEMMs for as long as the copy takes, which its buffer may hold
   * below the target (the H100 copied 256 MiB in 5 ms against 13 ms of
   * SGEMMs): with the two about equal, 2.0 is the most the figure can be. */
  if (timed(o, 2, &ms) != 0) return -1;
  o->gemms = one_gemm_ms > 0.0 ? (unsigned)(ms / one_gemm_ms + 0.5) : 1;
  if (o->gemms < 1) o->gemms = 1;
  if (o->gemms > 10000) o->gemms = 10000;

  double kernel_ms, copy_ms, both_ms, pipe_ms;
  if (median_of(o, 1, &kernel_ms) != 0 || median_of(o, 2, &copy_ms) != 0 ||
      median_of(o, 3, &both_ms) != 0)
    return -1;
  double v[64];
  unsigned n = b->opt.repeat < 64 ? b->opt.repeat : 64;
  if (pipeline(o, &v[0]) != 0) return -1;
  for (unsigned i = 0; i < n; i++)
    if (pipeline(o, &v[i]) != 0) return -1;
  pipe_ms = bench_median(v, n);

  const double figure = (kernel_ms + copy_ms) / both_ms;
  const double gbps = (double)o->bytes / (pipe_ms * 1e6);
  bench_result r1 = {"overlap", "kernel-and-copy", "kiln", o->bytes,
                     both_ms, figure, "x", 0};
  bench_result r2 = {"overlap", "pipeline", "kiln", o->bytes, pipe_ms, gbps,
                     "GB/s", 0};
  if (bench_record(b, &r1) != 0 || bench_record(b, &r2) != 0) return -1;
  double raw_figure, raw_gbps;
  if (run_raw(o, &raw_figure, &raw_gbps) != 0) return -1;
  if (raw_figure > 0.0) {
    bench_result r3 = {"overlap", "kernel-and-copy", "cuda-raw", o->bytes,
                       0.0, raw_figure, "x", 0};
    bench_result r4 = {"overlap", "pipeline", "cuda-raw", o->bytes, 0.0,
                       raw_gbps, "GB/s", 0};
    if (bench_record(b, &r3) != 0 || bench_record(b, &r4) != 0) return -1;
  }
  char size[32];
  fprintf(b->out,
          "\noverlap: %u SGEMMs of %u on one stream, a pinned %s copy in "
          "on another; median of %u (host clock)\n"
          "  kernels alone %.2f ms, copy alone %.2f ms, together %.2f ms: "
          "overlap %.2f (2.0 is perfect)\n"
          "  double-buffered pipeline, %u chunks: %.2f ms, %.1f GB/s\n",
          o->gemms, o->gemm_n,
          bench_bytes_text(o->bytes, size, sizeof size), n, kernel_ms, copy_ms,
          both_ms, figure, CHUNKS, pipe_ms, gbps);
  if (raw_figure > 0.0)
    fprintf(b->out,
            "  raw CUDA, the same work on two streams: overlap %.2f, "
            "pipeline %.1f GB/s (kiln / raw: %.3f)\n",
            raw_figure, raw_gbps, gbps / raw_gbps);
  return 0;
}

int bench_overlap(bench *b) {
  overlap o;
  memset(&o, 0, sizeof o);
  o.b = b;
  o.gemm_n = b->opt.quick ? QUICK_GEMM_N : GEMM_N;
  const size_t matrix = (size_t)o.gemm_n * o.gemm_n * 4;
  /* The probe copy, the most the section copies. */
  o.bytes = b->opt.quick ? ((size_t)1 << 20) : ((size_t)256 << 20);
  if (o.bytes > b->opt.max_bytes) o.bytes = b->opt.max_bytes / (4 * CHUNKS) *
                                            (4 * CHUNKS);
  BENCH_CHECK(kiln_module_get_kernel(b->builtins, "kiln_scale_f32", &o.scale));
  BENCH_CHECK(kiln_stream_create(b->ctx, &o.copy_stream));
  BENCH_CHECK(kiln_buffer_create(b->ctx, matrix, 0, &o.ma));
  BENCH_CHECK(kiln_buffer_create(b->ctx, matrix, 0, &o.mb));
  BENCH_CHECK(kiln_buffer_create(b->ctx, matrix, 0, &o.mc));
  BENCH_CHECK(kiln_host_buffer_create(b->ctx, o.bytes, 0, &o.host));
  for (int i = 0; i < 2; i++) {
    BENCH_CHECK(kiln_buffer_create(b->ctx, o.bytes, 0, &o.dev[i]));
    BENCH_CHECK(kiln_buffer_create(b->ctx, o.bytes / CHUNKS, 0, &o.out[i]));
  }
  float *h = kiln_host_buffer_data(o.host);
  for (size_t i = 0; i < o.bytes / 4; i++) h[i] = bench_value(BENCH_SEED_A, i);
  if (bench_upload(b, o.ma, 0, (size_t)o.gemm_n * o.gemm_n, BENCH_SEED_A) ||
      bench_upload(b, o.mb, 0, (size_t)o.gemm_n * o.gemm_n, BENCH_SEED_B))
    return -1;
  int result = run(&o);
  BENCH_CHECK(kiln_stream_synchronize(b->stream));
  BENCH_CHECK(kiln_stream_destroy(o.copy_stream));
  kiln_buffer *buffers[] = {o.ma, o.mb, o.mc, o.dev[0], o.dev[1], o.out[0],
                            o.out[1]};
  for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; i++)
    BENCH_CHECK(kiln_buffer_destroy(buffers[i]));
  BENCH_CHECK(kiln_host_buffer_destroy(o.host));
  return result;
}
