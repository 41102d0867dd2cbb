/*
 * kiln-endurance: whether kiln gives back all it takes, over long use.
 *
 * Runs kiln's life cycles many times on one backend and device — buffers
 * of mixed sizes allocated and freed, kernel launches, modules loaded and
 * unloaded, whole contexts created and destroyed — and samples the
 * process's resident memory (/proc/self/statm) and open file descriptors
 * (/proc/self/fd) at the start, after a warm-up, in the middle and at the
 * end. The warm-up lets every cache, pool and allocator reach its steady
 * size; after it, the middle and the end follow the same amount of work,
 * and neither figure may grow by more than 1 % from the warm-up to the end.
 * Every launch's result is checked, so a cycle that leaks by failing
 * cannot pass.
 *
 * Resident memory is judged after malloc_trim(0) (glibc), which hands the
 * pages that malloc keeps free for reuse back to the system: untrimmed, two
 * identical runs on lavapipe, whose device memory is malloc'd too, ended
 * 4 % apart, by how the freed blocks happened to lie. Trimmed, the figure
 * follows what is still allocated, which is what a leak grows; the
 * untrimmed one is shown beside it.
 *
 * Full run: 10^5 buffer allocations and frees, 10^6 buffers made and
 * released in stream order (kiln_buffer_create_async, destroy_async),
 * 10^5 launches, 10^3 module loads and unloads, 300 contexts (and a
 * twentieth of each as warm-up). The context's pool (its device memory,
 * kiln_context_pool_usage) is sampled beside the process's figures, once
 * the device is synchronized, and judged the same way: device memory that
 * the pairs pile up is a leak as much as host memory is.
 * --quick runs a hundredth of that as a smoke test, and reports the figures
 * without judging them: too little work to tell a leak from the noise of
 * the allocators.
 *
 * Exit status: 0 when all passed, 1 on a failed call, a wrong result or
 * (not with --quick) growth past the goal, 2 for a bad option, 77 when the
 * chosen backend cannot run here.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <kiln/kiln.h>

/* Written by tools/kiln-embed at build time: kiln_endurance_add for every
 * backend this build has a kernel compiler for. */
extern const kiln_module_image kiln_endurance_images[];
extern const size_t kiln_endurance_images_count;

enum { EXIT_BAD_ARGUMENT = 2, EXIT_UNAVAILABLE = 77 };

#define KERNEL "kiln_endurance_add"
#define GOAL_PERCENT 1.0

/* The work of a full run, done in two halves (the middle sample lies
 * between them); the warm-up does WARMUP_DIVISOR-th of it, --quick a
 * QUICK_DIVISOR-th of everything. */
#define FULL_ALLOCS 100000u
#define FULL_PAIRS 1000000u
#define FULL_LAUNCHES 100000u
#define FULL_MODULES 1000u
#define FULL_CONTEXTS 300u
#define WARMUP_DIVISOR 20u
#define QUICK_DIVISOR 100u

/* Buffers of 4 bytes to 1 MiB, this many alive at once. */
#define MIN_SIZE_LOG2 2u
#define MAX_SIZE_LOG2 20u
#define LIVE_BUFFERS 8u
/* Launches between synchronizations, and the words each one adds to. */
#define LAUNCH_BATCH 1000u
#define LAUNCH_WORDS 4096u

typedef struct options {
  bool quick;
  kiln_context_options context;
} options;

typedef struct work {
  unsigned allocs, pairs, launches, modules, contexts;
} work;

typedef struct sample {
  const char *name;
  work done; /* since the previous sample */
  double seconds;
  size_t untrimmed_kib, resident_kib, fds;
  size_t pool_kib; /* the context's pool, reserved */
} sample;

typedef struct endurance {
  options opt;
  kiln_context *ctx;
  kiln_stream *stream;
  kiln_module *module;
  kiln_kernel *add;
  uint64_t rng;
} endurance;

static void kiln_failed(const char *call, kiln_status st) {
  fprintf(stderr, "kiln-endurance: %s failed with %s: %s\n", call,
          kiln_status_name(st), kiln_last_error());
}

/* Returns -1 from the calling function after reporting a failed call. */
#define CHECK(call)                                                            \
  do {                                                                         \
    kiln_status check_st_ = (call);                                            \
    if (check_st_ != KILN_OK) {                                                \
      kiln_failed(#call, check_st_);                                           \
      return -1;                                                               \
    }                                                                          \
  } while (0)

static uint64_t next_random(endurance *e) {
  /* xorshift64*: plenty for picking sizes. */
  e->rng ^= e->rng >> 12;
  e->rng ^= e->rng << 25;
  e->rng ^= e->rng >> 27;
  return e->rng * UINT64_C(2685821657736338717);
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- What the process holds ---------------------------------------------- */

static size_t statm_resident_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (!f) return 0;
  if (fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
  fclose(f);
  return (size_t)resident * ((size_t)sysconf(_SC_PAGESIZE) / 1024);
}

static size_t open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 0;
  size_t n = 0;
  for (struct dirent *entry; (entry = readdir(d)) != NULL;)
    if (entry->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the directory's own */
}

/* Fills the sample's figures (see the top of the file on the trim). */
static void measure(sample *s) {
  s->untrimmed_kib = statm_resident_kib();
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
  s->resident_kib = statm_resident_kib();
  s->fds = open_fds();
}

/* ---- The work ------------------------------------------------------------ */

/* Launches kiln_endurance_add(b, n, 1) on `stream`. */
static kiln_status add_one(kiln_stream *stream, kiln_kernel *add,
                           kiln_buffer *b, uint32_t n) {
  kiln_launch_config c = kiln_launch_config_1d(n, 256);
  const kiln_arg args[3] = {kiln_arg_buffer(b, 0), kiln_arg_u32(n),
                            kiln_arg_u32(1)};
  return kiln_launch(stream, add, &c, args, 3);
}

/* Fails unless the first n words of b all hold `want`. */
static int expect_words(kiln_stream *stream, kiln_buffer *b, uint32_t n,
                        uint32_t want, const char *what) {
  uint32_t *got = malloc((size_t)n * 4);
  if (!got) {
    fprintf(stderr, "kiln-endurance: out of host memory\n");
    return -1;
  }
  kiln_status st = kiln_buffer_read(stream, b, 0, got, (size_t)n * 4);
  int result = 0;
  if (st != KILN_OK) {
    kiln_failed("kiln_buffer_read", st);
    result = -1;
  }
  for (uint32_t i = 0; i < n && result == 0; i++) {
    if (got[i] != want) {
      fprintf(stderr,
              "kiln-endurance: WRONG: %s: word %u is %u, expected %u\n", what,
              i, got[i], want);
      result = -1;
    }
  }
  free(got);
  return result;
}

/* Allocates and frees buffers of mixed sizes, LIVE_BUFFERS alive at once
 * (so the allocators see holes of every size), some zeroed, some written
 * and read back. None is left when it returns. */
static int allocs(endurance *e, unsigned count) {
  kiln_buffer *live[LIVE_BUFFERS] = {NULL};
  int result = 0;
  for (unsigned i = 0; i < count && result == 0; i++) {
    kiln_buffer **slot = &live[i % LIVE_BUFFERS];
    kiln_status st = kiln_buffer_destroy(*slot);
    *slot = NULL;
    const unsigned log2 =
        MIN_SIZE_LOG2 +
        (unsigned)(next_random(e) % (MAX_SIZE_LOG2 - MIN_SIZE_LOG2 + 1));
    const size_t size = ((size_t)1 << log2) +
                        (size_t)(next_random(e) % ((size_t)1 << log2));
    const uint32_t flags = i % 4 == 0 ? KILN_BUFFER_ZERO : 0;
    if (st == KILN_OK) st = kiln_buffer_create(e->ctx, size, flags, slot);
    if (st != KILN_OK) {
      kiln_failed("kiln_buffer_destroy/create", st);
      result = -1;
    } else if (i % 64 == 0) {
      /* A used buffer, not only an allocated one. */
      const uint32_t word = 0x5eed0000u + i;
      const size_t bytes = size < 64 ? size & ~(size_t)3 : 64;
      uint32_t words[16];
      for (size_t w = 0; w < bytes / 4; w++) words[w] = word;
      if (bytes > 0 &&
          (st = kiln_buffer_write(e->stream, *slot, 0, words, bytes)) !=
              KILN_OK) {
        kiln_failed("kiln_buffer_write", st);
        result = -1;
      } else if (bytes > 0) {
        result = expect_words(e->stream, *slot, (uint32_t)(bytes / 4), word,
                              "a buffer written and read back");
      }
    }
  }
  for (unsigned i = 0; i < LIVE_BUFFERS; i++) {
    kiln_status st = kiln_buffer_destroy(live[i]);
    if (st != KILN_OK && result == 0) {
      kiln_failed("kiln_buffer_destroy", st);
      result = -1;
    }
  }
  return result;
}

/* Buffers made and released in stream order, LIVE_BUFFERS alive at once,
 * of four sizes (so that the pool can reuse what comes back), some zeroed
 * and checked; none left when it returns, the stream synchronized. */
static int pairs(endurance *e, unsigned count) {
  static const size_t sizes[] = {256, 12345, 65536, 1048576};
  kiln_buffer *live[LIVE_BUFFERS] = {NULL};
  int result = 0;
  for (unsigned i = 0; i < count && result == 0; i++) {
    kiln_buffer **slot = &live[i % LIVE_BUFFERS];
    kiln_status st = kiln_buffer_destroy_async(e->stream, *slot);
    *slot = NULL;
    const size_t size = sizes[next_random(e) % 4];
    const bool check = i % 1024 == 0;
    if (st == KILN_OK)
      st = kiln_buffer_create_async(e->stream, size,
                                    check ? KILN_BUFFER_ZERO : 0, slot);
    if (st != KILN_OK) {
      kiln_failed("kiln_buffer_destroy_async/create_async", st);
      result = -1;
    } else if (check) {
      /* Reused memory, zeroed in stream order. */
      result = expect_words(e->stream, *slot, 16, 0,
                            "a stream-ordered KILN_BUFFER_ZERO buffer");
    } else if (i % 16 == 0) {
      /* Something for a later KILN_BUFFER_ZERO to clear. */
      const uint32_t ones = 0xffffffffu;
      if ((st = kiln_buffer_fill(e->stream, *slot, 0, 64, &ones, 4)) !=
          KILN_OK) {
        kiln_failed("kiln_buffer_fill", st);
        result = -1;
      }
    }
  }
  for (unsigned i = 0; i < LIVE_BUFFERS; i++) {
    kiln_status st = kiln_buffer_destroy_async(e->stream, live[i]);
    if (st != KILN_OK && result == 0) {
      kiln_failed("kiln_buffer_destroy_async", st);
      result = -1;
    }
  }
  kiln_status st = kiln_stream_synchronize(e->stream);
  if (st != KILN_OK && result == 0) {
    kiln_failed("kiln_stream_synchronize", st);
    result = -1;
  }
  return result;
}

/* `count` launches on one buffer, synchronizing every LAUNCH_BATCH; every
 * word must then have been added to `count` times. */
static int launches(endurance *e, unsigned count) {
  kiln_buffer *b;
  CHECK(kiln_buffer_create(e->ctx, LAUNCH_WORDS * 4, KILN_BUFFER_ZERO, &b));
  kiln_status st = KILN_OK;
  for (unsigned i = 0; i < count && st == KILN_OK; i++) {
    st = add_one(e->stream, e->add, b, LAUNCH_WORDS);
    if (st != KILN_OK)
      kiln_failed("kiln_launch", st);
    else if ((i + 1) % LAUNCH_BATCH == 0 &&
             (st = kiln_stream_synchronize(e->stream)) != KILN_OK)
      kiln_failed("kiln_stream_synchronize", st);
  }
  int result = st == KILN_OK ? expect_words(e->stream, b, LAUNCH_WORDS, count,
                                            "the launches' buffer")
                             : -1;
  st = kiln_buffer_destroy(b);
  if (st != KILN_OK) {
    kiln_failed("kiln_buffer_destroy", st);
    result = -1;
  }
  return result;
}

/* Loads a module, launches its kernel once (on Vulkan this also makes its
 * pipeline), and unloads it, `count` times. */
static int modules(endurance *e, unsigned count) {
  enum { WORDS = 64 };
  kiln_buffer *b;
  CHECK(kiln_buffer_create(e->ctx, WORDS * 4, KILN_BUFFER_ZERO, &b));
  kiln_status st = KILN_OK;
  for (unsigned i = 0; i < count && st == KILN_OK; i++) {
    kiln_module *m = NULL;
    kiln_kernel *k = NULL;
    st = kiln_module_create(e->ctx, kiln_endurance_images,
                            kiln_endurance_images_count, &m);
    if (st == KILN_OK) st = kiln_module_get_kernel(m, KERNEL, &k);
    if (st == KILN_OK) st = add_one(e->stream, k, b, WORDS);
    if (st != KILN_OK) kiln_failed("loading and launching a module", st);
    kiln_status destroyed = kiln_module_destroy(m);
    if (st == KILN_OK && destroyed != KILN_OK) {
      kiln_failed("kiln_module_destroy", destroyed);
      st = destroyed;
    }
  }
  int result = st == KILN_OK
                   ? expect_words(e->stream, b, WORDS, count,
                                  "the buffer of the modules' launches")
                   : -1;
  st = kiln_buffer_destroy(b);
  if (st != KILN_OK) {
    kiln_failed("kiln_buffer_destroy", st);
    result = -1;
  }
  return result;
}

/* One context's life: a buffer, a module, a launch checked, all destroyed. */
static int one_context(endurance *e) {
  enum { WORDS = 256 };
  kiln_context *ctx;
  CHECK(kiln_context_create(&e->opt.context, &ctx));
  kiln_buffer *b = NULL;
  kiln_module *m = NULL;
  kiln_kernel *k = NULL;
  kiln_status st = kiln_buffer_create(ctx, WORDS * 4, KILN_BUFFER_ZERO, &b);
  if (st == KILN_OK)
    st = kiln_module_create(ctx, kiln_endurance_images,
                            kiln_endurance_images_count, &m);
  if (st == KILN_OK) st = kiln_module_get_kernel(m, KERNEL, &k);
  if (st == KILN_OK) st = add_one(NULL, k, b, WORDS);
  int result = 0;
  if (st != KILN_OK) {
    kiln_failed("using a new context", st);
    result = -1;
  } else {
    result = expect_words(NULL, b, WORDS, 1, "a new context's buffer");
  }
  if ((st = kiln_module_destroy(m)) != KILN_OK ||
      (st = kiln_buffer_destroy(b)) != KILN_OK) {
    kiln_failed("destroying a context's objects", st);
    result = -1;
  }
  /* Everything in it was destroyed: KILN_OK, not OBJECTS_ALIVE. */
  if ((st = kiln_context_destroy(ctx)) != KILN_OK) {
    kiln_failed("kiln_context_destroy", st);
    result = -1;
  }
  return result;
}

static int contexts(endurance *e, unsigned count) {
  for (unsigned i = 0; i < count; i++)
    if (one_context(e) != 0) return -1;
  return 0;
}

/* Each kind of work in turn, then a sample. */
static int run_round(endurance *e, const work *w, sample *s) {
  const double start = now_seconds();
  if (allocs(e, w->allocs) != 0 || pairs(e, w->pairs) != 0 ||
      launches(e, w->launches) != 0 || modules(e, w->modules) != 0 ||
      contexts(e, w->contexts) != 0)
    return -1;
  s->done = *w;
  s->seconds = now_seconds() - start;
  measure(s);
  size_t reserved = 0;
  CHECK(kiln_context_synchronize(e->ctx));
  CHECK(kiln_context_pool_usage(e->ctx, &reserved, NULL));
  s->pool_kib = reserved / 1024;
  return 0;
}

static double growth_percent(size_t from, size_t to) {
  return from ? 100.0 * ((double)to - (double)from) / (double)from : 0.0;
}

static void report(const endurance *e, const sample *samples, size_t count) {
  printf("\n%-14s %7s %8s %8s %7s %8s %7s %13s %13s %8s %9s\n", "",
         "allocs", "pairs", "launches", "modules", "contexts", "seconds",
         "resident KiB", "(untrimmed)", "open fds", "pool KiB");
  for (size_t i = 0; i < count; i++) {
    const sample *s = &samples[i];
    if (i == 0)
      printf("%-14s %7s %8s %8s %7s %8s %7s", s->name, "", "", "", "", "",
             "");
    else
      printf("%-14s %7u %8u %8u %7u %8u %7.1f", s->name, s->done.allocs,
             s->done.pairs, s->done.launches, s->done.modules,
             s->done.contexts, s->seconds);
    printf(" %13zu %13zu %8zu", s->resident_kib, s->untrimmed_kib, s->fds);
    if (i == 0)
      printf(" %9s\n", "");
    else
      printf(" %9zu\n", s->pool_kib);
  }
  const sample *warm = &samples[1], *end = &samples[count - 1];
  printf("\ngrowth after warm-up: resident %+.2f %% (%+lld KiB), open fds "
         "%+.2f %% (%+lld), pool %+.2f %% (%+lld KiB); goal: at most "
         "+%.0f %% each%s\n",
         growth_percent(warm->resident_kib, end->resident_kib),
         (long long)end->resident_kib - (long long)warm->resident_kib,
         growth_percent(warm->fds, end->fds),
         (long long)end->fds - (long long)warm->fds,
         growth_percent(warm->pool_kib, end->pool_kib),
         (long long)end->pool_kib - (long long)warm->pool_kib, GOAL_PERCENT,
         e->opt.quick ? " (not judged with --quick)" : "");
}

/* The warm-up and the two halves, each followed by a sample, then the
 * report and the verdict. */
static int rounds(endurance *e, sample *samples) {
  const unsigned d = e->opt.quick ? QUICK_DIVISOR : 1u;
  const work half = {FULL_ALLOCS / 2 / d, FULL_PAIRS / 2 / d,
                     FULL_LAUNCHES / 2 / d, FULL_MODULES / 2 / d,
                     FULL_CONTEXTS / 2 / d};
  const unsigned w = WARMUP_DIVISOR * d;
  work warmup = {FULL_ALLOCS / w, FULL_PAIRS / w, FULL_LAUNCHES / w,
                 FULL_MODULES / w, FULL_CONTEXTS / w};
  if (warmup.modules == 0) warmup.modules = 1;
  if (warmup.contexts == 0) warmup.contexts = 1;
  if (run_round(e, &warmup, &samples[1]) != 0 ||
      run_round(e, &half, &samples[2]) != 0 ||
      run_round(e, &half, &samples[3]) != 0)
    return EXIT_FAILURE;
  report(e, samples, 4);
  const double rss =
      growth_percent(samples[1].resident_kib, samples[3].resident_kib);
  const double fds = growth_percent(samples[1].fds, samples[3].fds);
  const double pool =
      growth_percent(samples[1].pool_kib, samples[3].pool_kib);
  if (!e->opt.quick &&
      (rss > GOAL_PERCENT || fds > GOAL_PERCENT || pool > GOAL_PERCENT)) {
    fprintf(stderr, "kiln-endurance: FAIL: growth past the goal of %.0f %%\n",
            GOAL_PERCENT);
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}

static int run(endurance *e) {
  sample samples[4] = {{.name = "start"},
                       {.name = "after warm-up"},
                       {.name = "middle"},
                       {.name = "end"}};
  measure(&samples[0]);

  kiln_status st = kiln_context_create(&e->opt.context, &e->ctx);
  if (st != KILN_OK) {
    kiln_failed("kiln_context_create", st);
    return st == KILN_ERROR_UNAVAILABLE ? EXIT_UNAVAILABLE : EXIT_FAILURE;
  }
  kiln_device_properties p;
  int result = EXIT_FAILURE;
  if ((st = kiln_context_get_properties(e->ctx, &p)) != KILN_OK ||
      (st = kiln_stream_create(e->ctx, &e->stream)) != KILN_OK ||
      (st = kiln_module_create(e->ctx, kiln_endurance_images,
                               kiln_endurance_images_count, &e->module)) !=
          KILN_OK ||
      (st = kiln_module_get_kernel(e->module, KERNEL, &e->add)) != KILN_OK) {
    kiln_failed("setting up the context", st);
  } else {
    printf("kiln-endurance: kiln %s, backend %s, device %s (%s)%s\n",
           kiln_version_string(), kiln_backend_name(p.backend), p.name,
           kiln_device_type_name(p.type), e->opt.quick ? ", --quick" : "");
    fflush(stdout);
    result = rounds(e, samples);
  }
  if ((st = kiln_module_destroy(e->module)) != KILN_OK ||
      (st = kiln_stream_destroy(e->stream)) != KILN_OK ||
      (st = kiln_context_destroy(e->ctx)) != KILN_OK) {
    kiln_failed("releasing kiln-endurance's objects", st);
    result = EXIT_FAILURE;
  }
  return result;
}

/* ---- Options ------------------------------------------------------------- */

static void usage(FILE *to) {
  fprintf(to,
          "usage: kiln-endurance [--quick] [--backend=NAME] [--device=N]\n"
          "Repeats kiln's life cycles (10^5 buffer allocations, 10^6 "
          "stream-ordered pairs,\n10^5 launches, 10^3 module loads, 300 "
          "contexts) and reports the process's\nresident memory, open file "
          "descriptors and the context's pool; any growing by\nmore than "
          "%.0f %% after the warm-up fails the run.\n"
          "  --quick          a hundredth of the work, figures reported but "
          "not judged\n"
          "  --backend=NAME   cuda, hip, vulkan or auto (default: "
          "KILN_BACKEND, else auto)\n"
          "  --device=N       the device index within the backend (default: "
          "KILN_DEVICE)\n"
          "Exit status: 0 pass, 1 failure or growth past the goal, 2 bad "
          "option, 77 backend\nnot available here.\n",
          GOAL_PERCENT);
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

static int parse_options(int argc, char **argv, options *o) {
  o->context = kiln_context_options_default();
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (strcmp(argv[i], "--quick") == 0) {
      o->quick = true;
    } else if ((v = option_value(argc, argv, &i, "--backend")) != NULL) {
      if (kiln_backend_from_name(v, &o->context.backend) != KILN_OK) {
        fprintf(stderr, "kiln-endurance: --backend takes cuda, hip, vulkan "
                        "or auto, not '%s'\n", v);
        return -1;
      }
    } else if ((v = option_value(argc, argv, &i, "--device")) != NULL) {
      char *end = NULL;
      errno = 0;
      unsigned long n = strtoul(v, &end, 10);
      if (errno != 0 || end == v || *end != '\0' || v[0] == '-' ||
          n >= 1024) {
        fprintf(stderr, "kiln-endurance: --device takes a device index, "
                        "not '%s'\n", v);
        return -1;
      }
      o->context.device_index = (size_t)n;
    } else {
      fprintf(stderr, "kiln-endurance: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return -1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return EXIT_SUCCESS;
    }
  }
  endurance e;
  memset(&e, 0, sizeof e);
  if (parse_options(argc, argv, &e.opt) != 0) return EXIT_BAD_ARGUMENT;
  e.rng = UINT64_C(0x9e3779b97f4a7c15);
  int result = run(&e);
  if (result == EXIT_SUCCESS)
    printf("\nkiln-endurance: PASS\n");
  return result;
}
