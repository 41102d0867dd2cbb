/* Run-time compilation, on host clocks: a saxpy kernel compiled from source
 * with the disk cache off ("cold"), the same call served by the disk cache
 * ("cache-hit"), on CUDA NVRTC called directly plus cuModuleLoadData of its
 * CUBIN ("nvrtc-raw"), and on Vulkan the first pipeline creation of a new
 * process without and with the pipeline cache a previous process left on
 * disk ("pipeline-first-run", "pipeline-second-run"). Every saxpy module
 * made is launched once and its result checked. On CUDA the cold compile
 * and the cache hit again for a kernel that includes cuda_fp16.h, raw NVRTC
 * given the same include directories (issue 30), its modules checked by
 * their build info and lookup. Over 600 lines because its three
 * measurements share one child-process harness (a cold process per
 * sample) that splitting would have to export. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "cuda_raw.h"
#include "nvrtc_raw.h"

extern char **environ;

/* The saxpy check: odd, so that no block size divides it. */
#define SAXPY_N 1027u
#define SAXPY_BLOCK 64u
#define SAXPY_A 2.5f
/* The probe's matrices: one 128 x 128 tile of kiln_sgemm_f32. */
#define PROBE_ORDER 128u
#define EXIT_UNAVAILABLE 77

/* examples/saxpy/saxpy.cu and saxpy.comp, the kernel a user writes first. */
static const char saxpy_cuda[] =
    "extern \"C\" __global__ void saxpy(float *y, const float *x, float a,\n"
    "                                 unsigned n) {\n"
    "  unsigned stride = gridDim.x * blockDim.x;\n"
    "  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += stride) {\n"
    "    y[i] = a * x[i] + y[i];\n"
    "  }\n"
    "}\n";

static const char saxpy_glsl[] =
    "#version 460\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "layout(local_size_x_id = 0) in;\n"
    "layout(buffer_reference, std430) buffer F32 { float v[]; };\n"
    "layout(push_constant, std430) uniform Args {\n"
    "  F32 y;\n"
    "  F32 x;\n"
    "  float a;\n"
    "  uint n;\n"
    "} args;\n"
    "void main() {\n"
    "  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
    "  for (uint i = gl_GlobalInvocationID.x; i < args.n; i += stride) {\n"
    "    args.y.v[i] = args.a * args.x.v[i] + args.y.v[i];\n"
    "  }\n"
    "}\n";

/* One list for every backend: kiln compiles the one in its language (HIP
 * takes the CUDA text). */
static const kiln_source saxpy_sources[] = {
    {KILN_SOURCE_CUDA, saxpy_cuda, "saxpy.cu", NULL},
    {KILN_SOURCE_GLSL, saxpy_glsl, "saxpy.comp", NULL},
};
#define SAXPY_SOURCES (sizeof saxpy_sources / sizeof saxpy_sources[0])

/* The same kernel on halves, through the toolkit's cuda_fp16.h, which
 * kiln finds by itself and raw NVRTC is given the same directories for:
 * issue 30 holds its cold compile to 1.15 x raw NVRTC and its cache hit to
 * 0.1 ms. CUDA only; its modules are checked by their build info and the
 * kernel's lookup (tests/corpus runs such kernels against the CPU). */
static const char hsaxpy_cuda[] =
    "#include <cuda_fp16.h>\n"
    "extern \"C\" __global__ void hsaxpy(__half *y, const __half *x, __half "
    "a,\n"
    "                                  unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = __hfma(a, x[i], y[i]);\n"
    "}\n";
static const kiln_source hsaxpy_sources[] = {
    {KILN_SOURCE_CUDA, hsaxpy_cuda, "hsaxpy.cu", NULL},
};

/* What one measurement compiles: the sources kiln gets, the CUDA text raw
 * NVRTC gets, the kernel to look up, and whether to launch it (saxpy). */
typedef struct variant {
  const kiln_source *sources;
  size_t count;
  const char *text, *file, *kernel;
  bool launch;
} variant;

static const variant saxpy_variant = {saxpy_sources, SAXPY_SOURCES,
                                      saxpy_cuda,    "saxpy.cu",
                                      "saxpy",       true};
static const variant toolkit_variant = {hsaxpy_sources, 1,        hsaxpy_cuda,
                                        "hsaxpy.cu",    "hsaxpy", false};

typedef struct compile_state {
  bench *b;
  kiln_buffer *x, *y;
} compile_state;

/* ---- the environment and temporary cache directories --------------------- */

typedef struct saved_env {
  const char *name;
  char *value; /* NULL when it was unset */
} saved_env;

/* Sets `name` for this process, keeping what it was in *saved. */
static int env_set(saved_env *saved, const char *name, const char *value) {
  const char *old = getenv(name);
  saved->name = name;
  saved->value = old != NULL ? strdup(old) : NULL;
  if ((old != NULL && saved->value == NULL) || setenv(name, value, 1) != 0) {
    fprintf(stderr, "kiln-bench: cannot set %s: %s\n", name,
            strerror(errno));
    free(saved->value);
    saved->value = NULL;
    saved->name = NULL;
    return -1;
  }
  return 0;
}

static void env_restore(saved_env *saved) {
  if (saved->name == NULL) return;
  if (saved->value != NULL)
    setenv(saved->name, saved->value, 1);
  else
    unsetenv(saved->name);
  free(saved->value);
  saved->name = NULL;
  saved->value = NULL;
}

/* A new empty directory under /tmp, its path in dir[size]. */
static int make_temp_dir(char *dir, size_t size) {
  snprintf(dir, size, "/tmp/kiln-bench-cache-XXXXXX");
  if (mkdtemp(dir) == NULL) {
    fprintf(stderr, "kiln-bench: cannot create a directory %s: %s\n", dir,
            strerror(errno));
    return -1;
  }
  return 0;
}

/* Removes a cache directory and its files (kiln's cache is flat). A
 * failure is reported and otherwise ignored: it costs disk, no result. */
static void remove_temp_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (d != NULL) {
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (unlink(path) != 0)
        fprintf(stderr, "kiln-bench: cannot remove %s: %s\n", path,
                strerror(errno));
    }
    closedir(d);
  }
  if (rmdir(dir) != 0)
    fprintf(stderr, "kiln-bench: cannot remove %s: %s\n", dir,
            strerror(errno));
}

/* ---- checks -------------------------------------------------------------- */

static double saxpy_expect(const void *arg, size_t i, double *magnitude) {
  (void)arg;
  double ax = (double)SAXPY_A * bench_value(BENCH_SEED_B, i);
  double y = bench_value(BENCH_SEED_A, i);
  *magnitude = fabs(ax) + fabs(y);
  return ax + y;
}

/* Checks the module's build info (one source, `hits` of it from the
 * cache) and finds its kernel; saxpy is then run once and every element
 * checked. */
static int check_module(compile_state *s, const variant *v, kiln_module *m,
                        const char *what, size_t hits) {
  bench *b = s->b;
  kiln_module_build_info info;
  BENCH_CHECK(kiln_module_get_build_info(m, &info));
  if (info.source_count != 1 || info.cache_hits != hits)
    bench_wrong(b,
                "compile: %s: the module counts %zu source%s, %zu from the "
                "cache; expected 1 source, %zu from the cache",
                what, info.source_count, info.source_count == 1 ? "" : "s",
                info.cache_hits, hits);
  kiln_kernel *kernel;
  BENCH_CHECK(kiln_module_get_kernel(m, v->kernel, &kernel));
  if (!v->launch) return 0;
  if (bench_upload(b, s->y, 0, SAXPY_N, BENCH_SEED_A) != 0) return -1;
  kiln_launch_config config = kiln_launch_config_1d(SAXPY_N, SAXPY_BLOCK);
  kiln_arg args[4] = {kiln_arg_buffer(s->y, 0), kiln_arg_buffer(s->x, 0),
                      kiln_arg_f32(SAXPY_A), kiln_arg_u32(SAXPY_N)};
  BENCH_CHECK(kiln_launch(b->stream, kernel, &config, args, 4));
  char label[64];
  snprintf(label, sizeof label, "saxpy after a %s", what);
  return bench_verify(b, label, s->y, 0, SAXPY_N, saxpy_expect, NULL);
}

/* ---- samples ------------------------------------------------------------- */

/* One timed operation of one implementation; 0 or -1. */
typedef struct sampler {
  int (*sample)(void *self, double *ms);
  void *self;
} sampler;

/* Medians over opt.repeat samples of each of the `n` samplers. They take
 * turns within every repeat, in alternating order, as the launch section
 * does: two identical processes can differ by 10%, and drift within one
 * falls on all of them alike. The caller has warmed each up. */
static int take_turns(const bench *b, const sampler *s, size_t n,
                      double *medians) {
  size_t repeat = b->opt.repeat;
  double *v = malloc(n * repeat * sizeof *v);
  if (v == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  int result = 0;
  for (size_t r = 0; r < repeat && result == 0; r++) {
    for (size_t turn = 0; turn < n && result == 0; turn++) {
      size_t j = r % 2 ? n - 1 - turn : turn;
      result = s[j].sample(s[j].self, &v[j * repeat + r]);
    }
  }
  for (size_t j = 0; j < n && result == 0; j++)
    medians[j] = bench_median(v + j * repeat, repeat);
  free(v);
  return result;
}

/* kiln_module_create_from_source of saxpy; the module is checked and
 * destroyed after the clock stops. */
typedef struct kiln_compiler {
  compile_state *s;
  const variant *v;
  uint32_t flags;  /* kiln_compile_flags */
  size_t hits;     /* the cache hits every module must count */
  const char *what;
} kiln_compiler;

/* The call alone, timed; its status is the caller's to judge. */
static kiln_status kiln_compile_timed(kiln_compiler *k, kiln_module **out,
                                      double *ms) {
  kiln_compile_options options;
  memset(&options, 0, sizeof options);
  options.flags = k->flags;
  double t0 = bench_now();
  kiln_status st = kiln_module_create_from_source(
      k->s->b->ctx, k->v->sources, k->v->count, &options, out);
  *ms = (bench_now() - t0) * 1e3;
  return st;
}

static int kiln_check_destroy(kiln_compiler *k, kiln_module *m) {
  int result = check_module(k->s, k->v, m, k->what, k->hits);
  kiln_status st = kiln_module_destroy(m);
  if (st != KILN_OK) result = bench_kiln_error("kiln_module_destroy", st);
  return result;
}

static int kiln_sample(void *self, double *ms) {
  kiln_compiler *k = self;
  kiln_module *m = NULL;
  kiln_status st = kiln_compile_timed(k, &m, ms);
  if (st != KILN_OK)
    return bench_kiln_error("kiln_module_create_from_source", st);
  return kiln_check_destroy(k, m);
}

/* NVRTC to a CUBIN, then cuModuleLoadData of it: what kiln's cold compile
 * does on CUDA, without kiln. Between cuda_raw_enter and leave. */
typedef struct raw_compiler {
  bench *b;
  const variant *v;
  nvrtc_raw *nvrtc;
  char arch[80];
  char includes[2][600]; /* -I of the toolkit's directories, if given */
  const char *options[3];
  size_t option_count;
} raw_compiler;

static int raw_sample(void *self, double *ms) {
  raw_compiler *r = self;
  void *cubin = NULL, *module = NULL, *function = NULL;
  size_t size = 0;
  double t0 = bench_now();
  if (nvrtc_raw_compile(r->nvrtc, r->v->text, r->v->file, r->options,
                        r->option_count, &cubin, &size) != 0)
    return -1;
  int loaded = cuda_raw_module_load(r->b->raw, cubin, &module);
  *ms = (bench_now() - t0) * 1e3;
  free(cubin);
  if (loaded != 0) return -1;
  int found =
      cuda_raw_module_function(r->b->raw, module, r->v->kernel, &function);
  cuda_raw_module_unload(r->b->raw, module);
  return found;
}

/* ---- cold, raw and cache hit --------------------------------------------- */

typedef struct compile_figures {
  double cold, raw, hit; /* ms; negative where not measured */
  /* The same with cuda_fp16.h (CUDA). */
  double cold_toolkit, raw_toolkit, hit_toolkit;
  double first_run, second_run;
  char compiler[600];    /* kiln's compiler, or why there is none */
  char raw_status[600];  /* the NVRTC comparator, or why it did not run */
  char raw_toolkit_status[600]; /* the same for the cuda_fp16.h kernel */
  char pipeline_status[320]; /* why the pipelines were not measured */
  long long pipeline_bytes;  /* the pipeline cache files the first run left */
} compile_figures;

/* The toolkit's include directory that kiln names in its compiler's
 * description ("...; headers DIR and its cccl (..."), into dir; false
 * where it names none. */
static bool toolkit_dir(const char *description, char *dir, size_t size) {
  const char *at = strstr(description, "; headers ");
  if (!at) return false;
  at += strlen("; headers ");
  const char *end = strstr(at, " and its cccl");
  if (!end) end = strstr(at, " (");
  if (!end || (size_t)(end - at) >= size) return false;
  memcpy(dir, at, (size_t)(end - at));
  dir[end - at] = '\0';
  return true;
}

/* Opens the NVRTC comparator for variant v and warms it up; false, with
 * the reason in status, where it cannot run. The toolkit variant's
 * comparator gets the include directories kiln's compiler, described by
 * `compiler`, passes. */
static bool open_raw(bench *b, const variant *v, const char *compiler,
                     raw_compiler *r, char *status, size_t status_size) {
  if (b->props.backend != KILN_BACKEND_CUDA) return false;
  if (b->raw == NULL) {
    snprintf(status, status_size,
             "skipped: no raw CUDA comparator");
    return false;
  }
  char why[512];
  r->b = b;
  r->v = v;
  r->nvrtc = nvrtc_raw_open(why, sizeof why);
  if (r->nvrtc == NULL) {
    snprintf(status, status_size, "skipped: %s", why);
    return false;
  }
  /* The option kiln's CUDA backend gives NVRTC for a device that NVRTC
   * knows (backends/cuda/compiler.c); kiln also names the toolkit's include
   * directories, which a kernel that includes nothing never reads. */
  snprintf(r->arch, sizeof r->arch, "-arch=%s", b->props.architecture);
  r->options[0] = r->arch;
  r->option_count = 1;
  char dir[512];
  if (v == &toolkit_variant) {
    if (!toolkit_dir(compiler, dir, sizeof dir)) {
      snprintf(status, status_size,
               "skipped: kiln's compiler names no toolkit include directory");
      nvrtc_raw_close(r->nvrtc);
      r->nvrtc = NULL;
      return false;
    }
    snprintf(r->includes[0], sizeof r->includes[0], "-I%s", dir);
    snprintf(r->includes[1], sizeof r->includes[1], "-I%s/cccl", dir);
    r->options[1] = r->includes[0];
    r->options[2] = r->includes[1];
    r->option_count = 3;
  }
  double ms;
  if (raw_sample(r, &ms) != 0) {
    snprintf(status, status_size,
             "skipped: %s could not compile and load %s with %s (above)",
             nvrtc_raw_description(r->nvrtc), v->file, r->arch);
    nvrtc_raw_close(r->nvrtc);
    r->nvrtc = NULL;
    return false;
  }
  snprintf(status, status_size, "%s, %s",
           nvrtc_raw_description(r->nvrtc), r->options[0]);
  return true;
}

/* The cold compile of v, interleaved with the NVRTC comparator on CUDA,
 * into *cold and *raw, and what the comparator was (or why it did not run)
 * into raw_status; leaves *cold negative, with the reason in f->compiler,
 * when kiln cannot compile the backend's language here. */
static int measure_cold(compile_state *s, const variant *v,
                        compile_figures *f, double *cold_ms, double *raw_ms,
                        char *raw_status, size_t raw_status_size) {
  bench *b = s->b;
  kiln_compiler cold = {s, v, KILN_COMPILE_NO_CACHE, 0, "cold compile"};
  /* The first compile loads the compiler: a warm-up, and the test of
   * whether there is one. */
  kiln_module *m = NULL;
  double ms;
  kiln_status st = kiln_compile_timed(&cold, &m, &ms);
  if (st == KILN_ERROR_NO_IMAGE || st == KILN_ERROR_UNAVAILABLE) {
    snprintf(f->compiler, sizeof f->compiler, "skipped: %s",
             kiln_last_error());
    return 0;
  }
  if (st != KILN_OK)
    return bench_kiln_error("kiln_module_create_from_source", st);
  if (kiln_check_destroy(&cold, m) != 0) return -1;

  /* kiln and the comparator share the device's primary context, so making
   * it current for the raw calls leaves kiln's calls as they were. */
  bool entered = b->props.backend == KILN_BACKEND_CUDA && b->raw != NULL;
  if (entered && cuda_raw_enter(b->raw) != 0) return -1;
  raw_compiler raw;
  memset(&raw, 0, sizeof raw);
  sampler both[2] = {{kiln_sample, &cold}, {raw_sample, &raw}};
  double medians[2] = {-1.0, -1.0};
  size_t n =
      open_raw(b, v, f->compiler, &raw, raw_status, raw_status_size) ? 2 : 1;
  int result = take_turns(b, both, n, medians);
  *cold_ms = medians[0];
  if (n == 2) *raw_ms = medians[1];
  if (entered) cuda_raw_leave(b->raw);
  nvrtc_raw_close(raw.nvrtc);
  return result;
}

/* Cache hits of v in a private cache directory, filled by one compile
 * first, into *hit_ms. */
static int measure_hit(compile_state *s, const variant *v, double *hit_ms) {
  char dir[64];
  if (make_temp_dir(dir, sizeof dir) != 0) return -1;
  saved_env saved_dir = {NULL, NULL}, saved_switch = {NULL, NULL};
  int result = env_set(&saved_dir, "KILN_CACHE_DIR", dir);
  if (result == 0) result = env_set(&saved_switch, "KILN_CACHE", "on");
  kiln_compiler fill = {s, v, KILN_COMPILE_DEFAULT, 0, "cache fill"};
  kiln_compiler hit = {s, v, KILN_COMPILE_DEFAULT, 1, "cache hit"};
  double ms;
  if (result == 0) result = kiln_sample(&fill, &ms);
  if (result == 0) result = kiln_sample(&hit, &ms); /* the warm-up */
  sampler one = {kiln_sample, &hit};
  if (result == 0) result = take_turns(s->b, &one, 1, hit_ms);
  env_restore(&saved_switch);
  env_restore(&saved_dir);
  remove_temp_dir(dir);
  return result;
}

/* ---- Vulkan pipelines: the child process ---------------------------------- */

typedef struct probe_objects {
  kiln_stream *stream;
  kiln_buffer *m[3]; /* A, B, C */
} probe_objects;

/* Times the first kiln_sgemm_f32 of the context and a second identical
 * one, each to completion: the first creates the pipeline inside the
 * launch (and a driver may finish compiling it at the first dispatch). */
static int probe_run(kiln_context *ctx, probe_objects *o, double ms[2]) {
  static float host[PROBE_ORDER * PROBE_ORDER];
  const size_t n = PROBE_ORDER, bytes = sizeof host;
  kiln_module *builtins;
  BENCH_CHECK(kiln_stream_create(ctx, &o->stream));
  BENCH_CHECK(kiln_context_builtin_module(ctx, &builtins));
  for (size_t i = 0; i < 3; i++)
    BENCH_CHECK(kiln_buffer_create(ctx, bytes, 0, &o->m[i]));
  /* Ones, so that every element of C is exactly n. The writes also make
   * the stream's first submission before the clock starts. */
  for (size_t i = 0; i < n * n; i++) host[i] = 1.0f;
  BENCH_CHECK(kiln_buffer_write(o->stream, o->m[0], 0, host, bytes));
  BENCH_CHECK(kiln_buffer_write(o->stream, o->m[1], 0, host, bytes));
  BENCH_CHECK(kiln_stream_synchronize(o->stream));
  for (size_t i = 0; i < 2; i++) {
    double t0 = bench_now();
    BENCH_CHECK(kiln_sgemm_f32(o->stream, n, n, n, 1.0f, o->m[0], 0, n,
                               o->m[1], 0, n, 0.0f, o->m[2], 0, n));
    BENCH_CHECK(kiln_stream_synchronize(o->stream));
    ms[i] = (bench_now() - t0) * 1e3;
  }
  BENCH_CHECK(kiln_buffer_read(o->stream, o->m[2], 0, host, bytes));
  for (size_t i = 0; i < n * n; i++) {
    if (host[i] != (float)n) {
      fprintf(stderr,
              "kiln-bench: WRONG: pipeline probe: kiln_sgemm_f32 of ones: "
              "element %zu is %.9g, expected %zu\n",
              i, (double)host[i], n);
      return -1;
    }
  }
  return 0;
}

int bench_pipeline_probe(void) {
  kiln_context *ctx = NULL;
  kiln_status st = kiln_context_create(NULL, &ctx);
  if (st != KILN_OK) {
    bench_kiln_error("kiln_context_create", st);
    return st == KILN_ERROR_UNAVAILABLE ? EXIT_UNAVAILABLE : EXIT_FAILURE;
  }
  probe_objects o;
  memset(&o, 0, sizeof o);
  double ms[2];
  int result = probe_run(ctx, &o, ms);
  for (size_t i = 0; i < 3; i++)
    if ((st = kiln_buffer_destroy(o.m[i])) != KILN_OK)
      result = bench_kiln_error("kiln_buffer_destroy", st);
  if ((st = kiln_stream_destroy(o.stream)) != KILN_OK)
    result = bench_kiln_error("kiln_stream_destroy", st);
  /* Writes the pipeline cache to the disk cache. */
  if ((st = kiln_context_destroy(ctx)) != KILN_OK)
    result = bench_kiln_error("kiln_context_destroy", st);
  if (result != 0) return EXIT_FAILURE;
  printf("%s %.6f %.6f\n", BENCH_PIPELINE_PROBE, ms[0], ms[1]);
  return EXIT_SUCCESS;
}

/* ---- Vulkan pipelines: the parent ----------------------------------------- */

/* The variables the probe's environment sets; the parent's values of them
 * are left out. */
static const char *const probe_variables[] = {
    "KILN_BACKEND",   "KILN_DEVICE",
    "KILN_CACHE",     "KILN_CACHE_DIR",
    /* The drivers' own disk caches, which would hide the difference:
     * NVIDIA's, and Mesa's. */
    "__GL_SHADER_DISK_CACHE", "MESA_SHADER_CACHE_DISABLE",
};
#define PROBE_VARIABLES (sizeof probe_variables / sizeof probe_variables[0])

typedef struct probe_env {
  char **vars;
  char device[48];
  char cache_dir[96];
} probe_env;

static bool overridden(const char *var) {
  for (size_t i = 0; i < PROBE_VARIABLES; i++) {
    size_t length = strlen(probe_variables[i]);
    if (strncmp(var, probe_variables[i], length) == 0 && var[length] == '=')
      return true;
  }
  return false;
}

/* This process's environment with the probe's variables: the Vulkan
 * device `device`, the disk cache on in `cache_dir`, the drivers' caches
 * off. */
static int probe_env_make(probe_env *e, size_t device, const char *cache_dir) {
  static char backend[] = "KILN_BACKEND=vulkan";
  static char cache[] = "KILN_CACHE=on";
  static char nvidia_cache[] = "__GL_SHADER_DISK_CACHE=0";
  static char mesa_cache[] = "MESA_SHADER_CACHE_DISABLE=true";
  size_t count = 0;
  while (environ[count] != NULL) count++;
  e->vars = malloc((count + PROBE_VARIABLES + 1) * sizeof *e->vars);
  if (e->vars == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  size_t n = 0;
  for (size_t i = 0; i < count; i++)
    if (!overridden(environ[i])) e->vars[n++] = environ[i];
  snprintf(e->device, sizeof e->device, "KILN_DEVICE=%zu", device);
  snprintf(e->cache_dir, sizeof e->cache_dir, "KILN_CACHE_DIR=%s", cache_dir);
  e->vars[n++] = backend;
  e->vars[n++] = e->device;
  e->vars[n++] = cache;
  e->vars[n++] = e->cache_dir;
  e->vars[n++] = nvidia_cache;
  e->vars[n++] = mesa_cache;
  e->vars[n] = NULL;
  return 0;
}

/* Runs this program as the probe in environment `env` and parses the two
 * times it prints. Its errors go to stderr as they are. */
static int run_probe(char **env, double ms[2]) {
  int fds[2];
  if (pipe(fds) != 0) {
    fprintf(stderr, "kiln-bench: pipe: %s\n", strerror(errno));
    return -1;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  posix_spawn_file_actions_addclose(&actions, fds[1]);
  char arg0[] = "kiln-bench", arg1[] = BENCH_PIPELINE_PROBE;
  char *argv[] = {arg0, arg1, NULL};
  pid_t pid;
  int err = posix_spawn(&pid, "/proc/self/exe", &actions, NULL, argv, env);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (err != 0) {
    close(fds[0]);
    fprintf(stderr, "kiln-bench: cannot run /proc/self/exe %s: %s\n",
            BENCH_PIPELINE_PROBE, strerror(err));
    return -1;
  }
  char out[256];
  size_t have = 0;
  for (;;) {
    char chunk[256];
    ssize_t got = read(fds[0], chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    size_t keep = sizeof out - 1 - have;
    if ((size_t)got < keep) keep = (size_t)got;
    memcpy(out + have, chunk, keep);
    have += keep;
  }
  out[have] = '\0';
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      fprintf(stderr, "kiln-bench: waitpid: %s\n", strerror(errno));
      return -1;
    }
  }
  char format[48];
  snprintf(format, sizeof format, "%s %%lf %%lf", BENCH_PIPELINE_PROBE);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
      sscanf(out, format, &ms[0], &ms[1]) != 2) {
    fprintf(stderr,
            "kiln-bench: the pipeline probe (kiln-bench %s) failed: %s %d, "
            "output '%s'\n",
            BENCH_PIPELINE_PROBE,
            WIFEXITED(status) ? "exit status" : "signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), out);
    return -1;
  }
  return 0;
}

/* The bytes of the pipeline cache entries in cache directory `dir`
 * (pipeline-*.kc, as docs/kernels.md names them, with kiln's header). */
static long long pipeline_cache_bytes(const char *dir) {
  long long total = 0;
  DIR *d = opendir(dir);
  if (d == NULL) return 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t length = strlen(e->d_name);
    if (strncmp(e->d_name, "pipeline-", 9) != 0 || length < 3 ||
        strcmp(e->d_name + length - 3, ".kc") != 0)
      continue;
    char path[4096];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &sb) == 0) total += (long long)sb.st_size;
  }
  closedir(d);
  return total;
}

/* opt.repeat pairs of probes, each pair in a new cache directory: the
 * first of a pair starts with no pipeline cache on disk and leaves one,
 * the second starts with it. A probe's figure is its first call less its
 * second, the pipeline's share of the first. */
static int measure_pipelines(compile_state *s, compile_figures *f) {
  bench *b = s->b;
  size_t device;
  if (bench_device_index(b, b->props.backend, &device) != 0) {
    snprintf(f->pipeline_status, sizeof f->pipeline_status,
             "skipped: no Vulkan device index has this device's UUID");
    return 0;
  }
  size_t repeat = b->opt.repeat;
  double *v = malloc(2 * repeat * sizeof *v);
  if (v == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  int result = 0;
  for (size_t r = 0; r < repeat && result == 0; r++) {
    char dir[64];
    probe_env env = {NULL, "", ""};
    if ((result = make_temp_dir(dir, sizeof dir)) != 0) break;
    result = probe_env_make(&env, device, dir);
    for (size_t run = 0; run < 2 && result == 0; run++) {
      double ms[2];
      if ((result = run_probe(env.vars, ms)) == 0)
        v[run * repeat + r] = ms[0] - ms[1];
      if (result == 0 && run == 0)
        f->pipeline_bytes = pipeline_cache_bytes(dir);
    }
    free(env.vars);
    remove_temp_dir(dir);
  }
  if (result == 0) {
    f->first_run = bench_median(v, repeat);
    f->second_run = bench_median(v + repeat, repeat);
  }
  free(v);
  return result;
}

/* ---- the report ---------------------------------------------------------- */

static int record(bench *b, const char *name, const char *impl, double ms) {
  if (ms < 0.0) return 0;
  bench_result r = {"compile", name, impl, 1, ms, ms, "ms", 0};
  return bench_record(b, &r);
}

/* A label and the kiln figure, and on CUDA the raw one. */
static void print_row(bench *b, const char *label, double kiln, double raw) {
  fprintf(b->out, "%-44s", label);
  bench_cell(b->out, 12, 3, kiln);
  if (b->props.backend == KILN_BACKEND_CUDA) bench_cell(b->out, 12, 3, raw);
  fprintf(b->out, "\n");
}

static int report(bench *b, const compile_figures *f) {
  bool cuda = b->props.backend == KILN_BACKEND_CUDA;
  if (record(b, "cold", "kiln", f->cold) != 0 ||
      record(b, "nvrtc-raw", "nvrtc-raw", f->raw) != 0 ||
      record(b, "cache-hit", "kiln", f->hit) != 0 ||
      record(b, "cold-toolkit", "kiln", f->cold_toolkit) != 0 ||
      record(b, "nvrtc-raw-toolkit", "nvrtc-raw", f->raw_toolkit) != 0 ||
      record(b, "cache-hit-toolkit", "kiln", f->hit_toolkit) != 0 ||
      record(b, "pipeline-first-run", "kiln", f->first_run) != 0 ||
      record(b, "pipeline-second-run", "kiln", f->second_run) != 0)
    return -1;
  fprintf(b->out,
          "\ncompile: saxpy from source, kiln_module_create_from_source "
          "with its module load;\n"
          "median of %u (host clock%s)\n"
          "compiler: %s\n",
          b->opt.repeat, cuda ? "; kiln and raw NVRTC take turns" : "",
          f->compiler);
  if (cuda)
    fprintf(b->out, "raw NVRTC + cuModuleLoadData: %s\n", f->raw_status);
  if (f->cold >= 0.0) {
    fprintf(b->out, "%-44s %12s", "", "kiln");
    if (cuda) fprintf(b->out, " %12s", "raw NVRTC");
    fprintf(b->out, "\n");
    print_row(b, "cold, cache off (ms)", f->cold, f->raw);
    print_row(b, "cache hit (ms)", f->hit, -1.0);
    /* The one goal that is not a ratio. */
    if (cuda)
      fprintf(b->out, "  cache hit, goal on CUDA <= 1 ms: %s\n",
              f->hit <= 1.0 ? "met" : "MISSED");
  }
  if (cuda && f->cold_toolkit >= 0.0) {
    if (f->raw_toolkit < 0.0)
      fprintf(b->out, "raw NVRTC with cuda_fp16.h: %s\n",
              f->raw_toolkit_status);
    print_row(b, "with cuda_fp16.h: cold (ms)", f->cold_toolkit,
              f->raw_toolkit);
    print_row(b, "with cuda_fp16.h: cache hit (ms)", f->hit_toolkit, -1.0);
    bench_goal_line(b->out, "cold with cuda_fp16.h, kiln / raw NVRTC",
                    f->raw_toolkit > 0.0 ? f->cold_toolkit / f->raw_toolkit
                                         : -1.0,
                    "x", 1.15);
    bench_goal_line(b->out, "cache hit with cuda_fp16.h (issue 30)",
                    f->hit_toolkit, "ms", 0.1);
  }
  if (b->props.backend != KILN_BACKEND_VULKAN) return 0;
  if (f->first_run < 0.0) {
    fprintf(b->out, "pipelines: %s\n", f->pipeline_status);
    return 0;
  }
  fprintf(b->out,
          "pipeline of kiln_sgemm_f32 at a new process's first launch (the "
          "first call less\nthe second, each to completion), median of %u "
          "pairs of processes\n",
          b->opt.repeat);
  print_row(b, "first run, no pipeline cache on disk (ms)", f->first_run,
            -1.0);
  print_row(b, "second run, the first run's cache (ms)", f->second_run,
            -1.0);
  /* A driver whose pipeline cache keeps nothing (lavapipe's holds just
   * its header) cannot make the second run faster. */
  fprintf(b->out, "  pipeline cache the first run left on disk: %lld bytes\n",
          f->pipeline_bytes);
  return 0;
}

int bench_compile(bench *b) {
  compile_state s = {b, NULL, NULL};
  compile_figures f;
  memset(&f, 0, sizeof f);
  f.cold = f.raw = f.hit = f.first_run = f.second_run = -1.0;
  f.cold_toolkit = f.raw_toolkit = f.hit_toolkit = -1.0;
  const char *description = NULL;
  kiln_status st = kiln_compiler_available(b->props.backend, &description);
  snprintf(f.compiler, sizeof f.compiler, "%s%s",
           st == KILN_OK ? "" : "skipped: ", description);
  if (b->props.backend == KILN_BACKEND_CUDA)
    snprintf(f.raw_status, sizeof f.raw_status, "skipped: kiln cannot "
                                                "compile here");

  int result = 0;
  if (st == KILN_OK) {
    size_t bytes = SAXPY_N * sizeof(float);
    if ((st = kiln_buffer_create(b->ctx, bytes, 0, &s.x)) != KILN_OK ||
        (st = kiln_buffer_create(b->ctx, bytes, 0, &s.y)) != KILN_OK)
      result = bench_kiln_error("kiln_buffer_create", st);
    if (result == 0)
      result = bench_upload(b, s.x, 0, SAXPY_N, BENCH_SEED_B);
    if (result == 0)
      result = measure_cold(&s, &saxpy_variant, &f, &f.cold, &f.raw,
                            f.raw_status, sizeof f.raw_status);
    if (result == 0 && f.cold >= 0.0)
      result = measure_hit(&s, &saxpy_variant, &f.hit);
    if (result == 0 && f.cold >= 0.0 &&
        b->props.backend == KILN_BACKEND_CUDA) {
      result = measure_cold(&s, &toolkit_variant, &f, &f.cold_toolkit,
                            &f.raw_toolkit, f.raw_toolkit_status,
                            sizeof f.raw_toolkit_status);
      if (result == 0 && f.cold_toolkit >= 0.0)
        result = measure_hit(&s, &toolkit_variant, &f.hit_toolkit);
    }
  }
  if (result == 0 && b->props.backend == KILN_BACKEND_VULKAN)
    result = measure_pipelines(&s, &f);
  if (result == 0) result = report(b, &f);
  if ((st = kiln_buffer_destroy(s.y)) != KILN_OK)
    result = bench_kiln_error("kiln_buffer_destroy", st);
  if ((st = kiln_buffer_destroy(s.x)) != KILN_OK)
    result = bench_kiln_error("kiln_buffer_destroy", st);
  return result;
}
