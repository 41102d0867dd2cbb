/* Overlap: whether a copy on one stream runs while a kernel runs on
 * another. A batch of SGEMMs of about T ms on one stream and a pinned host
 * to device copy of about T ms on a second, each alone and then issued
 * together: the figure is (kernel alone + copy alone) / (both together),
 * 2.0 for perfect overlap, 1.0 for none. Then the classic double-buffered
 * pipeline: chunk i + 1 is copied in while chunk i is computed on (the
 * same SGEMMs, a share each, and a kernel that reads the chunk), end to end
 * in GB/s of data copied in. Host clocks: the figure is about the two
 * streams together. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define TARGET_MS 20.0
#define QUICK_TARGET_MS 2.0
#define GEMM_N 1024u
#define QUICK_GEMM_N 128u
#define CHUNKS 8u
#define SCALE 2.0f

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

static kiln_status gemms(overlap *o, kiln_stream *s, unsigned count) {
  const uint32_t n = o->gemm_n;
  for (unsigned i = 0; i < count; i++) {
    kiln_status st = kiln_sgemm_f32(s, n, n, n, 1.0f, o->ma, 0, n, o->mb, 0, n,
                                    0.0f, o->mc, 0, n);
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
  if (which & 2) BENCH_CHECK(copy_in(o, o->copy_stream, o->dev[0], 0, o->bytes));
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
    BENCH_CHECK(kiln_event_create(b->ctx, &copied[i]));
    BENCH_CHECK(kiln_event_create(b->ctx, &computed[i]));
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

static int run(overlap *o) {
  bench *b = o->b;
  const double target = b->opt.quick ? QUICK_TARGET_MS : TARGET_MS;
  /* Sizes from one of each alone: SGEMMs for about the target, and a copy
   * for about as long. */
  double ms;
  o->gemms = 1;
  if (timed(o, 1, &ms) != 0 || timed(o, 1, &ms) != 0) return -1;
  o->gemms = ms > 0.0 ? (unsigned)(target / ms) + 1 : 1;
  if (o->gemms > 10000) o->gemms = 10000;
  const size_t probe = o->bytes;
  if (timed(o, 2, &ms) != 0 || timed(o, 2, &ms) != 0) return -1;
  size_t bytes = ms > 0.0 ? (size_t)((double)probe * target / ms) : probe;
  const size_t unit = 4 * CHUNKS;
  if (bytes > probe) bytes = probe;
  o->bytes = bytes < unit ? unit : bytes / unit * unit;

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
                     both_ms, figure, "x"};
  bench_result r2 = {"overlap", "pipeline", "kiln", o->bytes, pipe_ms, gbps,
                     "GB/s"};
  if (bench_record(b, &r1) != 0 || bench_record(b, &r2) != 0) return -1;
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
