/* kiln-bench's shared declarations: the options, the state every section
 * works on, timing, data and result checks, and the report. */
#ifndef KILN_BENCH_BENCH_H
#define KILN_BENCH_BENCH_H

#include <kiln/kiln.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The sections, as --only names them. */
enum {
  BENCH_LAUNCH = 1u << 0,
  BENCH_STREAM = 1u << 1,
  BENCH_REDUCE = 1u << 2,
  BENCH_TRANSFER = 1u << 3,
  BENCH_GEMM = 1u << 4,
  BENCH_COMPILE = 1u << 5,
  BENCH_GRAPH = 1u << 6,
  BENCH_PEER = 1u << 7,
  BENCH_OVERLAP = 1u << 8,
  BENCH_HGEMM = 1u << 9,
  BENCH_ALLOC = 1u << 10,
  BENCH_ALL = (1u << 11) - 1u,
};

/* The hidden option that makes kiln-bench the compile section's child
 * process, which times the first pipeline creation of a fresh context. */
#define BENCH_PIPELINE_PROBE "--pipeline-probe"

typedef struct bench_options {
  bool json;          /* JSON lines on stdout, the table on stderr */
  bool quick;         /* small sizes and counts: the CI smoke test */
  unsigned sections;  /* BENCH_* bits */
  size_t max_bytes;   /* the largest array, transfer or matrix */
  unsigned repeat;    /* timed samples per figure; the median is reported */
} bench_options;

typedef struct cuda_raw cuda_raw;
typedef struct cublas cublas;

/* One measured figure. Strings are static. */
typedef struct bench_result {
  const char *section; /* "launch", "stream", "reduce", "transfer", "gemm",
                          "compile", "graph", "peer", "overlap",
                          "alloc" */
  const char *name;    /* "triad", "h2d-pinned", "sgemm", ... */
  const char *impl;    /* "kiln", "cuda-raw", "cuMemcpyDtoD", "cublas",
                          "nvrtc-raw", "vulkan-raw", "kiln-async", ... */
  size_t size; /* elements, bytes, matrix order, launches or compiles */
  double ms;           /* median time of one operation */
  double value;        /* in `unit` */
  const char *unit;    /* "GB/s", "GFLOP/s", "us", "ms", "x" */
  /* The device memory a figure's batch runs over, in bytes: for a figure
   * of device bandwidth, what decides whether its bytes can come from the
   * cache (ceilings.c). 0 for every other figure. */
  size_t footprint;
} bench_result;

typedef struct bench {
  bench_options opt;
  FILE *out; /* where the table goes */
  kiln_context *ctx;
  kiln_stream *stream; /* every kiln operation is queued here */
  kiln_device_properties props;
  kiln_module *builtins;
  kiln_event *start, *end;
  cuda_raw *raw; /* the raw CUDA driver comparator, NULL when absent */
  cublas *blas;  /* cuBLAS, NULL when absent */
  bench_result *results;
  size_t result_count, result_capacity;
  unsigned wrong; /* checks that failed; any makes the exit status 1 */
} bench;

/* The index of the bench's device (the environment chose it) among
 * `backend`'s devices, its own backend's or another's that drives the
 * same GPU: the one with its UUID, or its name where the device has no
 * UUID. -1 when none matches. */
int bench_device_index(const bench *b, kiln_backend backend, size_t *out);

/* ---- sections (each returns 0, or -1 after reporting an error) ----------- */

int bench_launch(bench *b);
/* The launch section's comparisons for a backend other than CUDA, once the
 * comparator is open: see launch.c. */
int bench_launch_beside_raw(bench *b);
int bench_stream(bench *b);
int bench_reduce(bench *b);
int bench_transfer(bench *b);
int bench_gemm(bench *b);
int bench_hgemm(bench *b);
int bench_compile(bench *b);
int bench_graph(bench *b);
int bench_peer(bench *b);
int bench_overlap(bench *b);
int bench_alloc(bench *b);

/* The child process of the compile section (BENCH_PIPELINE_PROBE): opens a
 * context as the environment says, times the first kiln_sgemm_f32 and a
 * second identical call, prints both on stdout, and returns the exit
 * status. */
int bench_pipeline_probe(void);

/* The copy ceiling (cuMemcpyDtoD) at n floats, measured once per n and
 * shared by the stream and reduce sections; 0 when there is no comparator. */
int bench_ceiling(bench *b, size_t n, double *gbps);

/* ---- errors -------------------------------------------------------------- */

/* Reports a failed kiln call with kiln's message; returns -1. */
int bench_kiln_error(const char *call, kiln_status status);

#define BENCH_CHECK(call)                                          \
  do {                                                             \
    kiln_status bench_status_ = (call);                            \
    if (bench_status_ != KILN_OK)                                  \
      return bench_kiln_error(#call, bench_status_);               \
  } while (0)

/* ---- timing (timing.c) --------------------------------------------------- */

/* Seconds on a monotonic host clock. */
double bench_now(void);

/* The median of v[0..n), n > 0; reorders v. */
double bench_median(double *v, size_t n);

/* The float32 array sizes the stream and reduce sections sweep: powers of
 * two from 2^16 to 2^28 elements (2^10 to 2^16 in steps of 4x with --quick),
 * up to the largest that fits --max-size, and the odd size of their
 * correctness checks, so that the kernels' tails run. */
typedef struct bench_sweep {
  unsigned first_log2, last_log2, step;
  size_t largest; /* elements */
  size_t check_n; /* elements */
} bench_sweep;

bench_sweep bench_array_sweep(const bench *b);

/* Runs `iters` operations and stores their total time in *ms; 0 or -1. */
typedef int (*bench_batch_fn)(void *self, unsigned iters, double *ms);

/* The median time of one operation: one warm-up batch, a batch count
 * chosen so that a sample lasts about the target time, then opt.repeat
 * samples. */
int bench_measure(const bench *b, bench_batch_fn batch, void *self,
                  double *ms_per_op);

/* One operation of bench_measure_turns. */
typedef struct bench_turn {
  bench_batch_fn batch;
  void *self;
} bench_turn;
#define BENCH_MAX_TURNS 8

/* bench_measure of n operations side by side: each warmed up and its batch
 * sized, then opt.repeat rounds in which each takes a sample in turn;
 * ms_per_op[i] is operation i's median. */
int bench_measure_turns(const bench *b, const bench_turn *turns, size_t n,
                        double *ms_per_op);

/* Queues one kiln operation on b->stream. */
typedef kiln_status (*bench_kiln_op)(bench *b, void *arg);

/* bench_measure of `op`, each sample timed with kiln events around the
 * batch on b->stream. */
int bench_measure_kiln(bench *b, bench_kiln_op op, void *arg,
                       double *ms_per_op);

/* ---- data and checks (check.c) ------------------------------------------- */

/* The seeds of the input arrays every section uses. */
#define BENCH_SEED_A 1u
#define BENCH_SEED_B 2u

/* Element i of the test array `seed`: a fixed value in [0.5, 1.5) with 23
 * random bits, the same on every run. */
float bench_value(uint32_t seed, size_t i);

/* Writes bench_value(seed, i) for i < n to `buf` from byte `offset`. */
int bench_upload(bench *b, kiln_buffer *buf, size_t offset, size_t n,
                 uint32_t seed);
/* The same to the raw CUDA allocation `dst` (a raw_ptr, cuda_raw.h), so
 * that a comparator works on the very inputs kiln does. */
int bench_upload_raw(bench *b, uint64_t dst, size_t n, uint32_t seed);

/* The expected element i, and the magnitude that bounds its rounding
 * error (0 for exact results). */
typedef double (*bench_expect_fn)(const void *arg, size_t i,
                                  double *magnitude);

/* Reads floats [0, n) of `buf` from byte `offset` (all of them up to 2^20,
 * else evenly spread samples and the end) and compares each with
 * `expect`, allowing a few ulps of its magnitude. A mismatch is reported
 * and counted in b->wrong. */
int bench_verify(bench *b, const char *what, const kiln_buffer *buf,
                 size_t offset, size_t n, bench_expect_fn expect,
                 const void *arg);

/* Float64 sums over [0, n) of a[i] and of a[i] * b[i] for the test arrays
 * of seeds BENCH_SEED_A and BENCH_SEED_B, extended as n grows. Every term
 * is positive, so each sum is also the magnitude of its rounding error. */
typedef struct bench_sums {
  size_t n;
  double sum, dot;
} bench_sums;
void bench_sums_extend(bench_sums *s, size_t n);

/* The blocks of 256 threads core/builtins/builtin.c launches for a reduction of n
 * elements, which the raw comparators launch too. */
uint32_t bench_reduce_blocks(size_t n);

/* How many float32 roundings a sum of n terms by kiln_reduce_sum_f32 or
 * kiln_dot_f32 may accumulate: the terms each thread adds in a row (over
 * bench_reduce_blocks(n) blocks of 256 threads), then two trees. */
double bench_sum_roundings(size_t n);

/* Whether `got` is within `roundings` float32 roundings of `expected`,
 * whose terms add up to `magnitude` in absolute value. NaN never is. */
bool bench_close(double got, double expected, double magnitude,
                 double roundings);

/* Counts a failed check, printing `fmt` first. */
void bench_wrong(bench *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- report (report.c) --------------------------------------------------- */

/* Records a figure and, with --json, prints it as a JSON line. */
int bench_record(bench *b, const bench_result *r);

/* The recorded figure, or NULL. size 0 matches any size. */
const bench_result *bench_find(const bench *b, const char *section,
                               const char *name, const char *impl,
                               size_t size);

/* Whether `section` records a result's size in bytes (transfers, copies
 * between contexts) rather than in floats, as the others do. */
bool bench_size_in_bytes(const char *section);

/* "4 KiB", "256 MiB", "1 GiB", ... for a size in bytes. */
const char *bench_bytes_text(size_t bytes, char *buf, size_t buf_size);

/* A table cell: the value with `decimals`, or "-" when value < 0. */
void bench_cell(FILE *out, int width, int decimals, double value);

/* One line of a section's goals: `what`, its value in `unit` (negative:
 * not measured) and whether it is at most `most`. */
void bench_goal_line(FILE *out, const char *what, double value,
                     const char *unit, double most);

/* Prints the ratios the goals of issue 5 name, and their JSON lines. */
void bench_ratios(bench *b);

/* ---- ceilings (ceilings.c) ----------------------------------------------- */

/* What a figure of device bandwidth is held to. A batch whose footprint
 * is past BENCH_PAST_CACHE times the L2 cannot be served from the cache,
 * so it cannot outrun a copy (the copy ceiling, measured past the cache)
 * by more than BENCH_DRAM_SLACK, or BENCH_READ_SLACK for a kernel that
 * only reads (dot, the sum): a copy's writes cost the memory bus
 * turnarounds that reads alone do not. On the H200 every dot of 512 MiB
 * and 1 GiB (kiln's, raw CUDA's, raw Vulkan's) read 1.11-1.13 times a
 * 4058 GB/s copy, whose memory's nominal 4.8 TB/s is 1.18 times it; a
 * batch served from the cache read 1.29-1.37 times the copy. One
 * within the cache is held to the fastest the raw CUDA comparator's
 * kernels reached within it (the cache's effect, as measured), with
 * BENCH_CACHE_SLACK. */
typedef struct bench_ceilings {
  size_t l2;    /* bytes; 0: unknown, nothing is held */
  double dram;  /* GB/s; <= 0: unknown, no figure past the cache is held */
  double cache; /* GB/s; <= 0: unknown, no figure within it is held */
} bench_ceilings;

#define BENCH_PAST_CACHE 4u
#define BENCH_DRAM_SLACK 1.10
#define BENCH_READ_SLACK 1.20
#define BENCH_CACHE_SLACK 1.25

/* The fastest raw CUDA kernel within the cache among `results`, or the
 * DRAM ceiling where that is faster: the cache ceiling. 0 where no raw
 * kernel ran within the cache. */
double bench_cache_ceiling(const bench_result *results, size_t count,
                           size_t l2, double dram);

/* The first of results[from..count) above its ceiling, its limit in
 * *out_limit; count when there is none. The raw kernels within the cache
 * are not held to the ceiling they define. */
size_t bench_above_ceiling(const bench_result *results, size_t count,
                           size_t from, const bench_ceilings *c,
                           double *out_limit);

/* A figure between host and device may pass the link's nominal rate by
 * this much (clock and rounding) before it is called impossible. */
#define BENCH_LINK_SLACK 1.05

/* Whether r is a figure of bytes over the host link: a transfer between
 * host and device, or the overlap's pipeline (its copy in). */
bool bench_host_link_figure(const bench_result *r);

/* The fastest such figure among `results`; count when there is none. */
size_t bench_fastest_on_link(const bench_result *results, size_t count);

/* The first such figure of results[from..count) above `link` GB/s (with
 * BENCH_LINK_SLACK); count when there is none, or the link is unknown
 * (<= 0). */
size_t bench_above_link(const bench_result *results, size_t count,
                        size_t from, double link);

/* Measures the ceilings (the host link from sysfs; the L2 and a copy past
 * it through the raw CUDA comparator) and holds every figure of bandwidth
 * to them: one above fails the run, named (plausible.c). Says what it
 * could not check and why. */
void bench_check_ceilings(bench *b);

/* Prints the run's set-up as a JSON line (with --json). */
void bench_json_info(const bench *b, const char *raw_status,
                     const char *blas_status);

#endif /* KILN_BENCH_BENCH_H */
