/*
 * kiln-bench: how fast kiln is on this machine, and how close to the
 * hardware and the vendor libraries.
 *
 * Written against kiln's public API alone, it runs on the backend the
 * environment picks (KILN_BACKEND, KILN_DEVICE) and measures launch cost,
 * streaming bandwidth (BabelStream's kernels), reduction, transfers, SGEMM,
 * run-time compilation and buffers made and released in stream order.
 * Beside it, never in the library, run the comparators that isolate kiln's
 * own cost: the same kernels through the raw CUDA driver API, the device's
 * copy ceiling (cuMemcpyDtoD), cuMemAllocAsync, cuBLAS, and NVRTC called
 * directly; each is skipped, with the reason, where its
 * library or device is missing. Every result is checked against the CPU,
 * and a wrong one makes the exit status 1: the CI smoke test (--quick on
 * lavapipe) relies on it.
 *
 * Exit status: 0 when every check passed, 1 on a wrong result or a failed
 * call, 2 for a bad option, 77 when the chosen backend cannot run here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"

/* Written by tools/kiln-embed at build time: kiln's own CUDA fatbin and
 * kiln-bench's, the very bytes the library embeds, for the raw driver. */
#if KILN_BENCH_CUDA_IMAGES
extern const kiln_module_image kiln_bench_cuda_images[];
extern const size_t kiln_bench_cuda_images_count;
#endif

enum { EXIT_BAD_ARGUMENT = 2, EXIT_UNAVAILABLE = 77 };

#define DEFAULT_MAX_BYTES ((size_t)1 << 30)
#define DEFAULT_REPEAT 7u
#define QUICK_REPEAT 3u
#define MAX_REPEAT 1000u

static const struct {
  const char *name;
  unsigned bit;
  int (*run)(bench *b);
} sections[] = {
    {"launch", BENCH_LAUNCH, bench_launch},
    {"graph", BENCH_GRAPH, bench_graph},
    {"stream", BENCH_STREAM, bench_stream},
    {"reduce", BENCH_REDUCE, bench_reduce},
    {"transfer", BENCH_TRANSFER, bench_transfer},
    {"peer", BENCH_PEER, bench_peer},
    {"gemm", BENCH_GEMM, bench_gemm},
    {"hgemm", BENCH_HGEMM, bench_hgemm},
    {"compile", BENCH_COMPILE, bench_compile},
    {"overlap", BENCH_OVERLAP, bench_overlap},
    {"alloc", BENCH_ALLOC, bench_alloc},
};
#define SECTION_COUNT (sizeof sections / sizeof sections[0])

static void usage(FILE *to) {
  fprintf(to,
          "usage: kiln-bench [--json] [--quick] [--only=LIST] "
          "[--max-size=BYTES] [--repeat=N]\n"
          "Measures kiln on the backend KILN_BACKEND (cuda, hip, vulkan, "
          "auto) and device\nKILN_DEVICE choose, beside the raw CUDA driver "
          "and cuBLAS where they are here.\n"
          "  --json          JSON lines on stdout (the table goes to "
          "stderr)\n"
          "  --quick         small sizes and counts: a smoke test that checks "
          "every kernel\n"
          "  --only=LIST     some of launch,graph,stream,reduce,transfer,"
          "peer,overlap,gemm,\n"
          "                  hgemm,compile,alloc\n"
          "                  (default: all)\n"
          "  --max-size=N    the largest array, transfer or matrix in bytes; "
          "K, M, G\n"
          "                  suffixes (default 1G)\n"
          "  --repeat=N      timed samples per figure, the median is "
          "reported (default %u,\n"
          "                  %u with --quick)\n"
          "KILN_BENCH_CUBLAS names the cuBLAS library; KILN_CUDA_LIBRARY the "
          "CUDA driver;\nKILN_NVRTC_LIBRARY NVRTC.\n"
          "Exit status: 0 pass, 1 wrong result or failure, 2 bad option, 77 "
          "backend not\navailable here.\n",
          DEFAULT_REPEAT, QUICK_REPEAT);
}

static int parse_size(const char *text, size_t *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') return -1;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift != 0) end++;
  if (*end != '\0' || value == 0 || value > (SIZE_MAX >> shift)) return -1;
  *out = (size_t)value << shift;
  return 0;
}

static int parse_only(const char *text, unsigned *out) {
  unsigned bits = 0;
  while (*text != '\0') {
    size_t length = strcspn(text, ",");
    size_t i = 0;
    while (i < SECTION_COUNT && (strlen(sections[i].name) != length ||
                                 strncmp(sections[i].name, text, length)))
      i++;
    if (i == SECTION_COUNT) return -1;
    bits |= sections[i].bit;
    text += length;
    if (*text == ',') text++;
  }
  *out = bits;
  return bits != 0 ? 0 : -1;
}

/* Takes `--name=value` or `--name value`; NULL when argv[*i] is not it. */
static const char *option_value(int argc, char **argv, int *i,
                                const char *name) {
  size_t length = strlen(name);
  if (strncmp(argv[*i], name, length) != 0) return NULL;
  if (argv[*i][length] == '=') return argv[*i] + length + 1;
  if (argv[*i][length] == '\0' && *i + 1 < argc) return argv[++*i];
  return NULL;
}

static int parse_options(int argc, char **argv, bench_options *o) {
  bool repeat_given = false;
  o->sections = BENCH_ALL;
  o->max_bytes = DEFAULT_MAX_BYTES;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (strcmp(argv[i], "--json") == 0) {
      o->json = true;
    } else if (strcmp(argv[i], "--quick") == 0) {
      o->quick = true;
    } else if ((v = option_value(argc, argv, &i, "--only")) != NULL) {
      if (parse_only(v, &o->sections) != 0) {
        fprintf(stderr, "kiln-bench: --only takes a list of launch, graph, "
                        "stream, reduce, transfer, peer, overlap, gemm, "
                        "hgemm, compile, alloc, not '%s'\n", v);
        return -1;
      }
    } else if ((v = option_value(argc, argv, &i, "--max-size")) != NULL) {
      if (parse_size(v, &o->max_bytes) != 0 || o->max_bytes < 4096) {
        fprintf(stderr, "kiln-bench: --max-size takes a size of at least "
                        "4096 bytes (K, M, G suffixes), not '%s'\n", v);
        return -1;
      }
    } else if ((v = option_value(argc, argv, &i, "--repeat")) != NULL) {
      char *end = NULL;
      unsigned long n = strtoul(v, &end, 10);
      if (end == v || *end != '\0' || v[0] == '-' || n == 0 ||
          n > MAX_REPEAT) {
        fprintf(stderr, "kiln-bench: --repeat takes a count from 1 to %u, "
                        "not '%s'\n", MAX_REPEAT, v);
        return -1;
      }
      o->repeat = (unsigned)n;
      repeat_given = true;
    } else {
      fprintf(stderr, "kiln-bench: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return -1;
    }
  }
  if (!repeat_given) o->repeat = o->quick ? QUICK_REPEAT : DEFAULT_REPEAT;
  return 0;
}

/* The comparators, each with a line saying what it is or why it is not. */
static void open_comparators(bench *b, char *raw_status, char *blas_status,
                             size_t size) {
  const kiln_module_image *images = NULL;
  size_t count = 0;
#if KILN_BENCH_CUDA_IMAGES
  images = kiln_bench_cuda_images;
  count = kiln_bench_cuda_images_count;
#endif
  char why[512];
  b->raw = cuda_raw_open(&b->props, images, count, why, sizeof why);
  if (b->raw == NULL) {
    snprintf(raw_status, size, "skipped: %s", why);
    snprintf(blas_status, size, "skipped: no raw CUDA comparator");
  } else {
    snprintf(raw_status, size, "%s%s", cuda_raw_description(b->raw),
             count == 0 ? " (no kernels: built without nvcc)" : "");
    b->blas = cublas_open(b->raw, why, sizeof why);
    if (b->blas != NULL)
      snprintf(blas_status, size, "%s", cublas_description(b->blas));
    else
      snprintf(blas_status, size, "skipped: %s", why);
  }
  fprintf(b->out, "raw CUDA driver: %s\ncuBLAS: %s\n", raw_status,
          blas_status);
}

static int run(bench *b) {
  BENCH_CHECK(kiln_context_get_properties(b->ctx, &b->props));
  fprintf(b->out, "kiln-bench: kiln %s, backend %s, device %s (%s, %s)\n",
          kiln_version_string(), kiln_backend_name(b->props.backend),
          b->props.name, b->props.architecture,
          kiln_device_type_name(b->props.type));
  BENCH_CHECK(kiln_stream_create(b->ctx, &b->stream));
  BENCH_CHECK(kiln_context_builtin_module(b->ctx, &b->builtins));
  BENCH_CHECK(kiln_event_create(b->ctx, &b->start));
  BENCH_CHECK(kiln_event_create(b->ctx, &b->end));
  char raw_status[600], blas_status[600];
  /* A CUDA context of the comparator's beside a Vulkan or HIP one makes
   * the GPU time-slice between them (docs/performance.md): on those
   * backends the launch section, whose round trips suffer most, runs
   * first with no CUDA context in the process. On CUDA, kiln and the
   * comparator share the primary context, so nothing is switched. */
  bool apart = b->props.backend != KILN_BACKEND_CUDA;
  size_t first = 0;
  if (apart && (b->opt.sections & BENCH_LAUNCH)) {
    fprintf(b->out,
            "raw CUDA driver: opened after the launch section, "
            "which measures kiln alone\n");
    fflush(b->out);
    if (bench_launch(b) != 0) {
      fprintf(stderr, "kiln-bench: the launch section failed\n");
      return -1;
    }
    first = 1;
  }
  open_comparators(b, raw_status, blas_status, sizeof raw_status);
  bench_json_info(b, raw_status, blas_status);
  if (first == 1 && bench_launch_beside_raw(b) != 0) {
    fprintf(stderr, "kiln-bench: the launch section's comparisons failed\n");
    return -1;
  }

  for (size_t i = first; i < SECTION_COUNT; i++) {
    if (!(b->opt.sections & sections[i].bit)) continue;
    fflush(b->out);
    if (sections[i].run(b) != 0) {
      fprintf(stderr, "kiln-bench: the %s section failed\n",
              sections[i].name);
      return -1;
    }
  }
  bench_check_ceilings(b);
  bench_ratios(b);
  return 0;
}

int main(int argc, char **argv) {
  /* The compile section runs kiln-bench again as its own child process. */
  if (argc == 2 && strcmp(argv[1], BENCH_PIPELINE_PROBE) == 0)
    return bench_pipeline_probe();
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return EXIT_SUCCESS;
    }
  }
  bench b;
  memset(&b, 0, sizeof b);
  if (parse_options(argc, argv, &b.opt) != 0) return EXIT_BAD_ARGUMENT;
  b.out = b.opt.json ? stderr : stdout;

  kiln_status st = kiln_context_create(NULL, &b.ctx);
  if (st != KILN_OK) {
    bench_kiln_error("kiln_context_create", st);
    return st == KILN_ERROR_UNAVAILABLE ? EXIT_UNAVAILABLE : EXIT_FAILURE;
  }
  int result = run(&b) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;

  cublas_close(b.blas, b.raw);
  cuda_raw_close(b.raw);
  /* One at a time, the context last; every one is tried. */
  kiln_status released[4];
  released[0] = kiln_event_destroy(b.end);
  released[1] = kiln_event_destroy(b.start);
  released[2] = kiln_stream_destroy(b.stream);
  released[3] = kiln_context_destroy(b.ctx);
  for (size_t i = 0; i < 4; i++) {
    if (released[i] != KILN_OK) {
      bench_kiln_error("releasing kiln-bench's objects", released[i]);
      result = EXIT_FAILURE;
    }
  }
  free(b.results);
  if (b.wrong != 0) {
    fprintf(stderr, "kiln-bench: FAIL: %u check%s found wrong results\n",
            b.wrong, b.wrong == 1 ? "" : "s");
    result = EXIT_FAILURE;
  } else if (result == EXIT_SUCCESS) {
    fprintf(b.out, "\nkiln-bench: PASS: every result matched the CPU\n");
  }
  return result;
}
