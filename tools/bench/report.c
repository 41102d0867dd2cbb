/* The report: figures kept for the ratios, JSON lines for scripts, table
 * cells for people, and the ratios that issue 5's goals name. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

int bench_kiln_error(const char *call, kiln_status status) {
  fprintf(stderr, "kiln-bench: %s failed: %s: %s\n", call,
          kiln_status_name(status), kiln_last_error());
  return -1;
}

/* Writes `s` as a JSON string. */
static void json_string(const char *s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

/* The start of every JSON line: what ran where. */
static void json_begin(const bench *b, const char *section) {
  printf("{\"section\":");
  json_string(section);
  printf(",\"backend\":");
  json_string(kiln_backend_name(b->props.backend));
  printf(",\"device\":");
  json_string(b->props.name);
}

int bench_record(bench *b, const bench_result *r) {
  if (b->result_count == b->result_capacity) {
    size_t capacity = b->result_capacity ? 2 * b->result_capacity : 64;
    bench_result *grown = realloc(b->results, capacity * sizeof *grown);
    if (grown == NULL) {
      fprintf(stderr, "kiln-bench: out of host memory\n");
      return -1;
    }
    b->results = grown;
    b->result_capacity = capacity;
  }
  b->results[b->result_count++] = *r;
  if (b->opt.json) {
    json_begin(b, r->section);
    printf(",\"name\":");
    json_string(r->name);
    printf(",\"impl\":");
    json_string(r->impl);
    printf(",\"size\":%zu,\"ms\":%.6g,\"value\":%.6g,\"unit\":", r->size,
           r->ms, r->value);
    json_string(r->unit);
    printf("}\n");
    fflush(stdout);
  }
  return 0;
}

const bench_result *bench_find(const bench *b, const char *section,
                               const char *name, const char *impl,
                               size_t size) {
  for (size_t i = 0; i < b->result_count; i++) {
    const bench_result *r = &b->results[i];
    if (strcmp(r->section, section) == 0 && strcmp(r->name, name) == 0 &&
        strcmp(r->impl, impl) == 0 && (size == 0 || r->size == size))
      return r;
  }
  return NULL;
}

bool bench_size_in_bytes(const char *section) {
  return strcmp(section, "transfer") == 0 || strcmp(section, "peer") == 0;
}

const char *bench_bytes_text(size_t bytes, char *buf, size_t buf_size) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  double value = (double)bytes;
  while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
    value /= 1024.0;
    unit++;
  }
  if (value == (double)(size_t)value)
    snprintf(buf, buf_size, "%zu %s", (size_t)value, units[unit]);
  else
    snprintf(buf, buf_size, "%.1f %s", value, units[unit]);
  return buf;
}

void bench_cell(FILE *out, int width, int decimals, double value) {
  if (value < 0.0)
    fprintf(out, " %*s", width, "-");
  else
    fprintf(out, " %*.*f", width, decimals, value);
}

void bench_json_info(const bench *b, const char *raw_status,
                     const char *blas_status) {
  if (!b->opt.json) return;
  json_begin(b, "info");
  printf(",\"kiln\":");
  json_string(kiln_version_string());
  printf(",\"architecture\":");
  json_string(b->props.architecture);
  printf(",\"driver\":");
  json_string(b->props.driver_version);
  printf(",\"repeat\":%u,\"quick\":%s,\"max_bytes\":%zu,\"cuda_raw\":",
         b->opt.repeat, b->opt.quick ? "true" : "false", b->opt.max_bytes);
  json_string(raw_status);
  printf(",\"cublas\":");
  json_string(blas_status);
  printf("}\n");
  fflush(stdout);
}

/* ---- ratios -------------------------------------------------------------- */

typedef struct ratio_spec {
  const char *label;
  const char *section, *name, *impl;             /* the kiln figure */
  const char *ref_section, *ref_name, *ref_impl; /* what it is compared to */
  size_t size; /* this size, or 0: the largest both have */
  bool time;   /* figures are times: lower is better, the goal is a most */
  double goal[KILN_BACKEND_COUNT]; /* per backend; 0: none */
} ratio_spec;

static const ratio_spec ratio_specs[] = {
    {"launch: host cost per launch, kiln / raw driver", "launch", "host",
     "kiln", "launch", "host", "cuda-raw", 0, true,
     {[KILN_BACKEND_CUDA] = 1.05}},
    {"launch: round trip, kiln / raw driver", "launch", "round-trip", "kiln",
     "launch", "round-trip", "cuda-raw", 0, true,
     {[KILN_BACKEND_CUDA] = 1.05}},
    {"launch: all launches to completion, kiln / raw CUDA", "launch",
     "batch", "kiln", "launch", "batch", "cuda-raw", 0, true,
     {[KILN_BACKEND_VULKAN] = 2.0}},
    {"stream: triad, kiln / raw-driver launch", "stream", "triad", "kiln",
     "stream", "triad", "cuda-raw", 0, false, {[KILN_BACKEND_CUDA] = 0.95}},
    {"stream: dot, kiln / raw-driver launch", "stream", "dot", "kiln",
     "stream", "dot", "cuda-raw", 0, false, {[KILN_BACKEND_CUDA] = 0.95}},
    {"stream: triad / cuMemcpyDtoD ceiling", "stream", "triad", "kiln",
     "stream", "ceiling", "cuMemcpyDtoD", 0, false,
     {[KILN_BACKEND_CUDA] = 0.90, [KILN_BACKEND_VULKAN] = 0.85}},
    {"stream: dot / cuMemcpyDtoD ceiling", "stream", "dot", "kiln", "stream",
     "ceiling", "cuMemcpyDtoD", 0, false,
     {[KILN_BACKEND_CUDA] = 0.90, [KILN_BACKEND_VULKAN] = 0.85}},
    {"reduce: sum / cuMemcpyDtoD ceiling", "reduce", "sum", "kiln", "stream",
     "ceiling", "cuMemcpyDtoD", 0, false,
     {[KILN_BACKEND_CUDA] = 0.85, [KILN_BACKEND_VULKAN] = 0.80}},
    {"transfer: pinned host to device, kiln / raw driver", "transfer",
     "h2d-pinned", "kiln", "transfer", "h2d-pinned", "cuda-raw", 0, false,
     {[KILN_BACKEND_CUDA] = 0.90, [KILN_BACKEND_VULKAN] = 0.90}},
    {"transfer: pinned device to host, kiln / raw driver", "transfer",
     "d2h-pinned", "kiln", "transfer", "d2h-pinned", "cuda-raw", 0, false,
     {[KILN_BACKEND_CUDA] = 0.90, [KILN_BACKEND_VULKAN] = 0.90}},
    {"transfer: device to device copy, kiln / raw driver", "transfer", "d2d",
     "kiln", "transfer", "d2d", "cuda-raw", 0, false, {0}},
    {"peer: copy between contexts, kiln / raw cuMemcpyPeerAsync", "peer",
     "copy", "kiln-peer", "peer", "copy", "cuda-raw-peer", 0, false,
     {[KILN_BACKEND_CUDA] = 0.90}},
    {"gemm: sgemm, kiln / cuBLAS", "gemm", "sgemm", "kiln", "gemm", "sgemm",
     "cublas", 4096, false,
     {[KILN_BACKEND_CUDA] = 0.70, [KILN_BACKEND_VULKAN] = 0.50}},
    {"hgemm: f16 in, f32 sums, kiln / cuBLAS GemmEx", "hgemm", "hgemm",
     "kiln", "hgemm", "hgemm", "cublas", 4096, false,
     {[KILN_BACKEND_CUDA] = 0.50, [KILN_BACKEND_VULKAN] = 0.30}},
    {"compile: cold, kiln / NVRTC + cuModuleLoadData", "compile", "cold",
     "kiln", "compile", "nvrtc-raw", "nvrtc-raw", 0, true,
     {[KILN_BACKEND_CUDA] = 1.15}},
    /* A speed-up: the cold time over the hit's, so higher is better. */
    {"compile: speed-up of a cache hit, cold / hit", "compile", "cold",
     "kiln", "compile", "cache-hit", "kiln", 0, false,
     {[KILN_BACKEND_CUDA] = 10.0, [KILN_BACKEND_HIP] = 10.0,
      [KILN_BACKEND_VULKAN] = 10.0}},
    {"compile: pipeline, first run / second run", "compile",
     "pipeline-first-run", "kiln", "compile", "pipeline-second-run", "kiln",
     0, false, {[KILN_BACKEND_VULKAN] = 2.0}},
};

/* The kiln figure and its reference at the spec's size, else at the
 * largest size both have; false when there is no such pair. */
static bool ratio_pair(const bench *b, const ratio_spec *s,
                       const bench_result **num, const bench_result **ref) {
  *num = *ref = NULL;
  if (s->size != 0) {
    *num = bench_find(b, s->section, s->name, s->impl, s->size);
    *ref = bench_find(b, s->ref_section, s->ref_name, s->ref_impl, s->size);
    if (*num != NULL && *ref != NULL) return true;
    *num = *ref = NULL;
  }
  for (size_t i = 0; i < b->result_count; i++) {
    const bench_result *r = &b->results[i];
    if (strcmp(r->section, s->section) != 0 || strcmp(r->name, s->name) != 0 ||
        strcmp(r->impl, s->impl) != 0 || (*num && r->size < (*num)->size))
      continue;
    const bench_result *other =
        bench_find(b, s->ref_section, s->ref_name, s->ref_impl, r->size);
    if (other != NULL) {
      *num = r;
      *ref = other;
    }
  }
  return *num != NULL;
}

void bench_ratios(bench *b) {
  kiln_backend backend = b->props.backend;
  bool header = false;
  for (size_t i = 0; i < sizeof ratio_specs / sizeof ratio_specs[0]; i++) {
    const ratio_spec *s = &ratio_specs[i];
    const bench_result *num, *ref;
    if (!ratio_pair(b, s, &num, &ref)) continue;
    if (!header) {
      fprintf(b->out, "\nratios (measured in this run; goals of issue 5 for "
                      "the %s backend)\n",
              kiln_backend_name(backend));
      header = true;
    }
    double ratio = ref->value > 0.0 ? num->value / ref->value : 0.0;
    double goal = s->goal[backend];
    bool met = s->time ? ratio <= goal : ratio >= goal;
    char at[48], bytes[32];
    if (strcmp(s->section, "launch") == 0)
      snprintf(at, sizeof at, "%zu launch%s", num->size,
               num->size == 1 ? "" : "es");
    else if (bench_size_in_bytes(s->section))
      snprintf(at, sizeof at, "%s",
               bench_bytes_text(num->size, bytes, sizeof bytes));
    else if (strcmp(s->section, "gemm") == 0 ||
             strcmp(s->section, "hgemm") == 0)
      snprintf(at, sizeof at, "n = %zu", num->size);
    else if (strcmp(s->section, "compile") == 0)
      snprintf(at, sizeof at, "%s",
               strncmp(s->name, "pipeline", 8) == 0 ? "kiln_sgemm_f32"
                                                    : "saxpy");
    else
      snprintf(at, sizeof at, "%zu floats", num->size);
    fprintf(b->out, "  %-52s %-16s %6.3f", s->label, at, ratio);
    if (goal > 0.0)
      fprintf(b->out, "   goal %s %.2f  %s", s->time ? "<=" : ">=", goal,
              met ? "met" : "MISSED");
    fprintf(b->out, "\n");
    if (b->opt.json) {
      json_begin(b, "ratio");
      printf(",\"name\":");
      json_string(s->label);
      printf(",\"size\":%zu,\"value\":%.6g", num->size, ratio);
      if (goal > 0.0)
        printf(",\"goal\":%.6g,\"goal_is\":\"%s\",\"met\":%s", goal,
               s->time ? "max" : "min", met ? "true" : "false");
      printf("}\n");
    }
  }
  if (!header)
    fprintf(b->out, "\nratios: none (the comparators did not run)\n");
  fflush(stdout);
}

void bench_goal_line(FILE *out, const char *what, double value,
                     const char *unit, double most) {
  fprintf(out, "  %-50s", what);
  if (value < 0.0)
    fprintf(out, " %9s %-2s   goal <= %.2f  (not measured)\n", "-",
            unit, most);
  else
    fprintf(out, " %9.3f %-2s   goal <= %.2f  %s\n", value, unit, most,
            value <= most ? "met" : "MISSED");
}
