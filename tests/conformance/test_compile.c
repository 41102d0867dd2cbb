/* Kernels from source at run time on the suite's backend: one list of
 * sources for every backend, a #define and an in-memory header, compile
 * errors with their line, the disk cache (miss, hit, a corrupt entry, two
 * processes at once), a missing compiler, and modules from files. Each run
 * uses a cache directory of its own. */
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance.h"
#include "timing.h"

/* y[i] = TWICE(a * x[i]) + OFFSET: TWICE comes from the header, OFFSET
 * from a define, so the result proves both were used. */
static const char header_text[] = "#define TWICE(v) ((v) + (v))\n";

#define CUDA_TEXT                                                            \
  "#include \"conf_twice.h\"\n"                                              \
  "extern \"C\" __global__ void conf_scale_add(float *y, const float *x,\n"  \
  "                                            float a, unsigned n) {\n"     \
  "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"                  \
  "  if (i < n) y[i] = TWICE(a * x[i]) + OFFSET;\n"                          \
  "}\n"

static const char glsl_text[] =
    "#version 460\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "#extension GL_GOOGLE_include_directive : require\n"
    "#include \"conf_twice.h\"\n"
    "layout(local_size_x_id = 0) in;\n"
    "layout(buffer_reference, std430) buffer F32 { float v[]; };\n"
    "layout(push_constant, std430) uniform Args {\n"
    "  F32 y; F32 x; float a; uint n;\n"
    "} args;\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < args.n) args.y.v[i] = TWICE(args.a * args.x.v[i]) + OFFSET;\n"
    "}\n";

static const kiln_source sources[] = {
    {KILN_SOURCE_CUDA, CUDA_TEXT, "conf_scale_add.cu", NULL},
    {KILN_SOURCE_HIP, CUDA_TEXT, "conf_scale_add.hip", NULL},
    {KILN_SOURCE_GLSL, glsl_text, "conf_scale_add.comp", NULL},
};
#define SOURCE_COUNT (sizeof sources / sizeof sources[0])

static const kiln_header header = {"conf_twice.h", header_text};
static const char *const defines[] = {"OFFSET=3.0f"};

static kiln_compile_options options(void) {
  return (kiln_compile_options){.defines = defines,
                                .define_count = 1,
                                .headers = &header,
                                .header_count = 1};
}

/* Each backend's language and the variable that names its compiler. */
static kiln_source_language language(void) {
  switch (conf.backend) {
  case KILN_BACKEND_CUDA: return KILN_SOURCE_CUDA;
  case KILN_BACKEND_HIP: return KILN_SOURCE_HIP;
  default: return KILN_SOURCE_GLSL;
  }
}

static const char *compiler_variable(kiln_backend backend) {
  switch (backend) {
  case KILN_BACKEND_CUDA: return "KILN_NVRTC_LIBRARY";
  case KILN_BACKEND_HIP: return "KILN_HIPRTC_LIBRARY";
  default: return "KILN_SHADERC_LIBRARY";
  }
}

static char cache_dir[64];

static int make_cache_dir(void **state) {
  (void)state;
  snprintf(cache_dir, sizeof cache_dir, "/tmp/kiln-conf-cache-XXXXXX");
  if (!mkdtemp(cache_dir)) return -1;
  setenv("KILN_CACHE_DIR", cache_dir, 1);
  unsetenv("KILN_CACHE");
  return 0;
}

static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    char path[512];
    struct stat sb;
    if ((e->d_name[0] == '.' && (!e->d_name[1] || e->d_name[1] == '.')) ||
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
      continue;
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
      remove_dir(path);
    else
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static int drop_cache_dir(void **state) {
  remove_dir(cache_dir);
  unsetenv("KILN_CACHE_DIR");
  return conf_check_validation(state);
}

static int count_entries(const char *prefix) {
  DIR *d = opendir(cache_dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
  closedir(d);
  return n;
}

/* Runs conf_scale_add from `m` on n random floats; true if every element
 * matches the CPU within float rounding. */
static bool runs_correctly(kiln_context *ctx, kiln_module *m) {
  enum { n = 1000 };
  kiln_kernel *k;
  if (kiln_module_get_kernel(m, "conf_scale_add", &k) != KILN_OK) return false;
  conf_rng r = conf_rng_for("conf_scale_add");
  float *x = conf_alloc(n * sizeof *x), *y = conf_alloc(n * sizeof *y);
  for (size_t i = 0; i < n; i++) x[i] = conf_uniform(&r, -4.0f, 4.0f);
  const float a = 1.75f;
  kiln_buffer *bx = NULL, *by = NULL;
  bool ok = kiln_buffer_create(ctx, sizeof(float) * n, 0, &bx) == KILN_OK &&
            kiln_buffer_create(ctx, sizeof(float) * n, 0, &by) == KILN_OK &&
            kiln_buffer_write(NULL, bx, 0, x, sizeof(float) * n) == KILN_OK;
  kiln_launch_config cfg = kiln_launch_config_1d(n, 128);
  kiln_arg args[] = {kiln_arg_buffer(by, 0), kiln_arg_buffer(bx, 0),
                     kiln_arg_f32(a), kiln_arg_u32(n)};
  ok = ok && kiln_launch(NULL, k, &cfg, args, 4) == KILN_OK &&
       kiln_buffer_read(NULL, by, 0, y, sizeof(float) * n) == KILN_OK;
  for (size_t i = 0; ok && i < n; i++) {
    float want = 2.0f * (a * x[i]) + 3.0f;
    float tol = 1e-6f * (fabsf(want) + 1.0f) * 4.0f;
    if (fabsf(y[i] - want) > tol) {
      printf("  conf_scale_add: element %zu is %.9g, expected %.9g\n", i,
             (double)y[i], (double)want);
      ok = false;
    }
  }
  kiln_buffer_destroy(bx);
  kiln_buffer_destroy(by);
  free(x);
  free(y);
  return ok;
}

static kiln_module *compile_all(const kiln_compile_options *o,
                                kiln_module_build_info *info) {
  kiln_module *m = NULL;
  check_ok(kiln_module_create_from_source(conf.ctx, sources, SOURCE_COUNT, o,
                                          &m));
  if (info) check_ok(kiln_module_get_build_info(m, info));
  return m;
}

static void compiles_and_runs_from_source(void **state) {
  (void)state;
  const char *description = NULL;
  check_ok(kiln_compiler_available(conf.backend, &description));
  printf("  compiler: %s\n", description);
  kiln_compile_options o = options();
  kiln_module_build_info info;
  kiln_module *m = compile_all(&o, &info);
  printf("  compiled in %.1f ms\n", info.compile_ms);
  assert_int_equal(info.source_count, 1);
  assert_int_equal(info.cache_hits, 0);
  assert_true(runs_correctly(conf.ctx, m));
  check_ok(kiln_module_destroy(m));

  /* Optimisation levels and fast math give working code too. */
  const kiln_optimization levels[] = {KILN_OPTIMIZE_NONE, KILN_OPTIMIZE_SIZE,
                                      KILN_OPTIMIZE_SPEED};
  for (size_t i = 0; i < 3; i++) {
    o.optimization = levels[i];
    o.flags = i == 2 ? KILN_COMPILE_FAST_MATH : 0;
    m = compile_all(&o, NULL);
    assert_true(runs_correctly(conf.ctx, m));
    check_ok(kiln_module_destroy(m));
  }
}

static void the_second_compile_comes_from_the_cache(void **state) {
  (void)state;
  kiln_compile_options o = options();
  kiln_module_build_info info;
  kiln_module *m = compile_all(&o, &info);
  assert_int_equal(info.cache_hits, 0);
  assert_int_equal(count_entries("image-"), 1);
  double cold = info.compile_ms;
  check_ok(kiln_module_destroy(m));
  m = compile_all(&o, &info);
  assert_int_equal(info.cache_hits, 1);
  printf("  cold %.2f ms, from the cache %.2f ms\n", cold, info.compile_ms);
  assert_true(runs_correctly(conf.ctx, m));
  check_ok(kiln_module_destroy(m));

  /* A corrupted entry is compiled again, and the result is right. */
  DIR *d = opendir(cache_dir);
  assert_non_null(d);
  char path[384] = "";
  for (struct dirent *e; (e = readdir(d));)
    if (strncmp(e->d_name, "image-", 6) == 0)
      snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
  closedir(d);
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, size / 2, SEEK_SET);
  int byte = fgetc(f);
  fseek(f, size / 2, SEEK_SET);
  fputc(byte ^ 0xff, f);
  fclose(f);
  m = compile_all(&o, &info);
  assert_int_equal(info.cache_hits, 0);
  assert_true(runs_correctly(conf.ctx, m));
  check_ok(kiln_module_destroy(m));
}

/* A template kernel instantiated and found by its C++ name, and a kernel in
 * a namespace, compiled from source and run; the second compile comes from
 * the cache with the names. GLSL has no C++ names. */
static void kernels_by_their_cpp_names(void **state) {
  (void)state;
  if (language() == KILN_SOURCE_GLSL)
    kiln_skip("GLSL has no C++ names (name expressions are CUDA's and HIP's)");
  static const char text[] =
      "template <typename T>\n"
      "__global__ void axpy_t(T *y, const T *x, T a, unsigned n) {\n"
      "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = a * x[i] + y[i];\n"
      "}\n"
      "namespace ops {\n"
      "__global__ void twice(unsigned *p, unsigned n) {\n"
      "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) p[i] *= 2;\n"
      "}\n"
      "}\n";
  const char *names[] = {"axpy_t<float>", "ops::twice"};
  kiln_compile_options o = {.name_expressions = names,
                            .name_expression_count = 2};
  kiln_source src = {language(), text,
                     language() == KILN_SOURCE_HIP ? "names.hip" : "names.cu",
                     NULL};
  enum { N = 1000 };
  float *x = conf_alloc(N * sizeof *x), *y = conf_alloc(N * sizeof *y);
  float *got = conf_alloc(N * sizeof *got);
  for (int i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = (float)(N - i);
  }
  kiln_buffer *bx, *by;
  check_ok(kiln_buffer_create(conf.ctx, N * sizeof *x, 0, &bx));
  check_ok(kiln_buffer_create(conf.ctx, N * sizeof *y, 0, &by));
  for (int round = 0; round < 2; round++) {
    kiln_module *m;
    check_ok(kiln_module_create_from_source(conf.ctx, &src, 1, &o, &m));
    kiln_module_build_info info;
    check_ok(kiln_module_get_build_info(m, &info));
    assert_int_equal(info.cache_hits, (size_t)round);
    kiln_kernel *axpy, *twice;
    check_ok(kiln_module_get_kernel(m, "axpy_t<float>", &axpy));
    check_ok(kiln_module_get_kernel(m, "ops::twice", &twice));
    printf("  axpy_t<float> is %s, ops::twice is %s\n",
           kiln_kernel_name(axpy), kiln_kernel_name(twice));
    check_ok(kiln_buffer_write(NULL, bx, 0, x, N * sizeof *x));
    check_ok(kiln_buffer_write(NULL, by, 0, y, N * sizeof *y));
    kiln_launch_config c = kiln_launch_config_1d(N, 128);
    kiln_arg args[4] = {kiln_arg_buffer(by, 0), kiln_arg_buffer(bx, 0),
                        kiln_arg_f32(2.0f), kiln_arg_u32(N)};
    check_ok(kiln_launch(NULL, axpy, &c, args, 4));
    kiln_arg targs[2] = {kiln_arg_buffer(bx, 0), kiln_arg_u32(N)};
    check_ok(kiln_launch(NULL, twice, &c, targs, 2));
    check_ok(kiln_buffer_read(NULL, by, 0, got, N * sizeof *got));
    for (int i = 0; i < N; i++)
      if (got[i] != 2.0f * x[i] + y[i])
        fail_msg("axpy_t<float>: y[%d] is %g, not %g", i, (double)got[i],
                 (double)(2.0f * x[i] + y[i]));
    check_ok(kiln_buffer_read(NULL, bx, 0, got, N * sizeof *got));
    const uint32_t *words = (const uint32_t *)(const void *)got;
    const uint32_t *before = (const uint32_t *)(const void *)x;
    for (int i = 0; i < N; i++)
      if (words[i] != 2u * before[i])
        fail_msg("ops::twice: word %d is 0x%08x, not 0x%08x", i,
                 (unsigned)words[i], (unsigned)(2u * before[i]));
    kiln_kernel *k;
    check_fails(kiln_module_get_kernel(m, "axpy_t<double>", &k),
                KILN_ERROR_NOT_FOUND);
    check_message_has("axpy_t<float>");
    check_ok(kiln_module_destroy(m));
  }
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_buffer_destroy(by));
}

static void compile_errors_name_the_line(void **state) {
  (void)state;
  const char *name = language() == KILN_SOURCE_GLSL ? "conf_broken.comp"
                     : language() == KILN_SOURCE_HIP ? "conf_broken.hip"
                                                     : "conf_broken.cu";
  const char *text = language() == KILN_SOURCE_GLSL
                         ? "#version 460\nlayout(local_size_x = 1) in;\n"
                           "void main() { undeclared_thing = 1; }\n"
                         : "extern \"C\" __global__ void conf_broken(int *p) "
                           "{\n  int ok = 1;\n  undeclared_thing = ok;\n}\n";
  kiln_source src = {language(), text, name, NULL};
  kiln_module *m = NULL;
  check_fails(kiln_module_create_from_source(conf.ctx, &src, 1, NULL, &m),
              KILN_ERROR_COMPILE);
  assert_null(m);
  check_message_has(name);
  check_message_has("undeclared_thing");
  const char *log = kiln_last_compile_log();
  printf("  log: %.200s\n", log);
  assert_non_null(strstr(log, name));
  /* The line number, in the compiler's own form. */
  assert_true(strstr(log, "(3)") || strstr(log, ":3:"));
  assert_int_equal(count_entries("image-"), 0);
}

static int quiet_logged;

static void quiet_log(kiln_log_level level, const char *message, void *user) {
  (void)level;
  (void)message;
  (void)user;
  quiet_logged++;
}

/* Sources a compiler refuses print nothing on the program's standard
 * output or error: what they say goes into the log and the message. GLSL
 * without a #version (or with one that has no compute shaders) made
 * glslang print its whole built-in table to stdout. */
static void failed_compiles_print_nothing(void **state) {
  (void)state;
  static const char *const glsl[] = {
      "", "layout(local_size_x = 1) in;\nvoid main() {}\n",
      "#version 100\nvoid main() {}\n",
      "#version 300 es\nlayout(local_size_x = 1) in;\nvoid main() {}\n",
      "/* lead */ #version 450\nvoid main() { nope(); }\n"};
  static const char *const cuda[] = {
      "extern \"C\" __global__ void k() { nope(); }\n", "#error refused\n"};
  const bool is_glsl = language() == KILN_SOURCE_GLSL;
  const char *const *texts = is_glsl ? glsl : cuda;
  const size_t count = is_glsl ? sizeof glsl / sizeof glsl[0]
                               : sizeof cuda / sizeof cuda[0];
  char path[160];
  snprintf(path, sizeof path, "%s/printed.txt", cache_dir);
  fflush(stdout);
  fflush(stderr);
  const int saved_out = dup(1), saved_err = dup(2);
  const int sink = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved_out >= 0 && saved_err >= 0 && sink >= 0);
  dup2(sink, 1);
  dup2(sink, 2);
  /* kiln's own messages go to the program's log handler, which is the
   * program's to print: only what the compilers print themselves counts. */
  kiln_set_log_handler(quiet_log, NULL);
  kiln_status got[8];
  char logs[8][96];
  for (size_t i = 0; i < count; i++) {
    kiln_source src = {language(), texts[i],
                       is_glsl ? "quiet.comp" : "quiet.cu", NULL};
    kiln_module *m = NULL;
    got[i] = kiln_module_create_from_source(conf.ctx, &src, 1, NULL, &m);
    snprintf(logs[i], sizeof logs[i], "%s", kiln_last_compile_log());
    if (m) kiln_module_destroy(m);
  }
  conf_install_log_handler();
  fflush(stdout);
  fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(saved_out);
  close(saved_err);
  close(sink);
  for (size_t i = 0; i < count; i++) {
    if (got[i] != KILN_ERROR_COMPILE)
      fail_msg("source %zu (\"%.40s\") gave %s, not KILN_ERROR_COMPILE", i,
               texts[i], kiln_status_name(got[i]));
    if (!logs[i][0])
      fail_msg("source %zu (\"%.40s\") failed with an empty compile log", i,
               texts[i]);
  }
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  if (st.st_size > 0) {
    char head[200] = {0};
    FILE *f = fopen(path, "r");
    if (f) {
      size_t n = fread(head, 1, sizeof head - 1, f);
      head[n] = '\0';
      fclose(f);
    }
    fail_msg("failed compiles printed %lld bytes to stdout or stderr, "
             "beginning: %s",
             (long long)st.st_size, head);
  }
  printf("  %zu refused sources, nothing printed (%d messages to the log "
         "handler); the first log: %.80s\n",
         count, quiet_logged, logs[0]);
}

static void modules_from_source_files(void **state) {
  (void)state;
  char paths[SOURCE_COUNT][128], hdr[128];
  const char *list[SOURCE_COUNT];
  for (size_t i = 0; i < SOURCE_COUNT; i++) {
    snprintf(paths[i], sizeof paths[i], "%s/%s", cache_dir, sources[i].name);
    FILE *f = fopen(paths[i], "w");
    assert_non_null(f);
    fputs(sources[i].text, f);
    fclose(f);
    list[i] = paths[i];
  }
  /* The header lies beside the sources, where kiln looks first. */
  snprintf(hdr, sizeof hdr, "%s/conf_twice.h", cache_dir);
  FILE *f = fopen(hdr, "w");
  assert_non_null(f);
  fputs(header_text, f);
  fclose(f);
  kiln_compile_options o = {.defines = defines, .define_count = 1};
  kiln_module *m = NULL;
  check_ok(kiln_module_create_from_files(conf.ctx, list, SOURCE_COUNT, &o, &m));
  assert_true(runs_correctly(conf.ctx, m));
  check_ok(kiln_module_destroy(m));
}

/* The child's exit code, or -1 if a signal ended it; a child still running
 * at conf_wait_child's deadline fails the test, its stacks written. */
static int child_status(pid_t pid, const char *what) {
  const int status = conf_wait_child(pid, what);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void two_processes_compile_at_once(void **state) {
  (void)state;
  pid_t a = conf_spawn_child("compile", NULL, NULL);
  pid_t b = conf_spawn_child("compile", NULL, NULL);
  assert_int_equal(child_status(a, "the first compiling child"), 0);
  assert_int_equal(child_status(b, "the second compiling child"), 0);
  assert_int_equal(count_entries("image-"), 1);
  assert_int_equal(count_entries(".tmp-"), 0);
  kiln_module_build_info info;
  kiln_compile_options o = options();
  kiln_module *m = compile_all(&o, &info);
  assert_int_equal(info.cache_hits, 1);
  check_ok(kiln_module_destroy(m));
}

static void a_missing_compiler_says_so(void **state) {
  (void)state;
  pid_t pid = conf_spawn_child("missing", compiler_variable(conf.backend),
                          "/nonexistent/libkiln-no-compiler.so");
  assert_int_equal(child_status(pid, "the child without a compiler"), 0);
}

int conf_compile_child(const char *mode) {
  if (strcmp(mode, "missing") == 0) {
    const char *why = NULL;
    kiln_status st = kiln_compiler_available(conf.backend, &why);
    printf("kiln-conformance (child): %s: %s\n", kiln_status_name(st), why);
    if (st != KILN_ERROR_UNAVAILABLE ||
        !strstr(why, "/nonexistent/libkiln-no-compiler.so"))
      return 1;
    kiln_module *m = NULL;
    kiln_compile_options o = options();
    o.flags = KILN_COMPILE_NO_CACHE;
    st = kiln_module_create_from_source(conf.ctx, sources, SOURCE_COUNT, &o,
                                        &m);
    printf("kiln-conformance (child): %s: %s\n", kiln_status_name(st),
           kiln_last_error());
    return st == KILN_ERROR_UNAVAILABLE && kiln_last_error()[0] ? 0 : 1;
  }
  kiln_compile_options o = options();
  kiln_module *m = NULL;
  kiln_status st = kiln_module_create_from_source(conf.ctx, sources,
                                                  SOURCE_COUNT, &o, &m);
  if (st != KILN_OK) {
    printf("kiln-conformance (child): %s: %s\n", kiln_status_name(st),
           kiln_last_error());
    return 1;
  }
  bool ok = runs_correctly(conf.ctx, m);
  kiln_module_destroy(m);
  return ok ? 0 : 1;
}

#define COMPILE_TEST(fn)                                                     \
  cmocka_unit_test_setup_teardown(fn, make_cache_dir, drop_cache_dir)

int conf_run_compile_tests(void) {
  const struct CMUnitTest tests[] = {
      COMPILE_TEST(a_missing_compiler_says_so),
      COMPILE_TEST(compiles_and_runs_from_source),
      COMPILE_TEST(the_second_compile_comes_from_the_cache),
      COMPILE_TEST(compile_errors_name_the_line),
      COMPILE_TEST(kernels_by_their_cpp_names),
      COMPILE_TEST(failed_compiles_print_nothing),
      COMPILE_TEST(modules_from_source_files),
      COMPILE_TEST(two_processes_compile_at_once),
  };
  return cmocka_run_group_tests_name("compile", tests, NULL, NULL);
}
