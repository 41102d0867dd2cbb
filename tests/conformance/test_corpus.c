/* The kernel corpus (tests/corpus/corpus.h): CUDA sources written as real
 * CUDA code is, each compiled from its file with kiln_module_create_from_
 * source and run, its result checked against the CPU, on CUDA and on HIP
 * (the HIP shim: HIPRTC as NVRTC), where a source that includes the CUDA
 * toolkit's headers is skipped saying so; and the compile error, with its
 * file and line in the message. Vulkan runs the GLSL counterparts
 * (tests/corpus/glsl/) with the same arguments and checks, where GLSL has
 * one; each other case says why not (templates, namespaces, CUB, module
 * globals). Values are small whole numbers, exact in every type used, so
 * every result is compared bit for bit. */
#include <stdio.h>
#include <stdlib.h>

#include "conformance.h"
#include "tests/corpus/corpus.h"

/* The file's text, malloc'd. */
static char *corpus_text(const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", CONF_CORPUS_DIR, file);
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open the corpus file %s", path);
  fseek(f, 0, SEEK_END);
  const long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = conf_alloc((size_t)size + 1);
  const size_t got = fread(text, 1, (size_t)size, f);
  fclose(f);
  text[got] = '\0';
  return text;
}

/* kiln_skip (tests/core/kiln_check.h) naming `test`, the test that
 * called the helper, rather than the helper. */
#define corpus_skip(test, ...)                                                 \
  do {                                                                         \
    print_message("kiln-skip: %s: ", test);                                    \
    print_message(__VA_ARGS__);                                                \
    print_message("\n");                                                       \
    skip();                                                                    \
  } while (0)

/* The kernel the corpus list names for `file`, which a GLSL counterpart's
 * main() becomes. */
static const char *corpus_kernel(const char *file) {
#define KERNEL_OF(f, kernel, toolkit) \
  if (strcmp(file, f) == 0) return kernel;
  KILN_CORPUS(KERNEL_OF)
#undef KERNEL_OF
  return NULL;
}

/* The kiln_device_feature bits the GLSL counterpart of `file` needs. */
static uint32_t glsl_needs(const char *file) {
  static const struct {
    const char *file;
    uint32_t needs;
  } needs[] = {
      {"fp16_axpy.cu", KILN_FEATURE_FLOAT16},
      {"fp16_dot.cu", KILN_FEATURE_FLOAT16 | KILN_FEATURE_FLOAT32_ATOMIC_ADD},
      {"double_bins.cu",
       KILN_FEATURE_FLOAT64 | KILN_FEATURE_FLOAT64_ATOMIC_ADD},
  };
  for (size_t i = 0; i < sizeof needs / sizeof needs[0]; i++)
    if (strcmp(needs[i].file, file) == 0) return needs[i].needs;
  return 0;
}

/* Skips where the corpus cannot run, saying why; else `file` compiled for
 * the suite's backend with the name expressions given: on Vulkan its GLSL
 * counterpart, glsl/<stem>.comp, or a skip with `no_glsl`, the reason it
 * has none. */
#define corpus_module(...) corpus_module_for(__func__, __VA_ARGS__)
static kiln_module *corpus_module_for(const char *test, const char *file,
                                      bool needs_toolkit,
                                      const char *const *names, size_t count,
                                      const char *no_glsl) {
  const bool glsl = conf.backend == KILN_BACKEND_VULKAN;
  if (glsl && no_glsl) corpus_skip(test, "no GLSL counterpart: %s", no_glsl);
  if (needs_toolkit && conf.backend == KILN_BACKEND_HIP)
    corpus_skip(test,
                "%s includes the CUDA toolkit's headers, which a HIP source "
                "spells otherwise (hip_fp16.h, hipCUB)",
                file);
  const char *description = NULL;
  if (kiln_compiler_available(conf.backend, &description) != KILN_OK)
    corpus_skip(test, "no %s compiler here: %s",
                kiln_backend_name(conf.backend), kiln_last_error());
  char path[256], name[64];
  snprintf(name, sizeof name, "%.*s%s", (int)(strlen(file) - 3), file,
           glsl ? ".comp" : ".cu");
  snprintf(path, sizeof path, "%s%s", glsl ? "glsl/" : "", name);
  char *text = corpus_text(path);
  const kiln_source src = {glsl                                ? KILN_SOURCE_GLSL
                           : conf.backend == KILN_BACKEND_HIP ? KILN_SOURCE_HIP
                                                               : KILN_SOURCE_CUDA,
                           text, name, glsl ? corpus_kernel(file) : NULL};
  kiln_compile_options o;
  memset(&o, 0, sizeof o);
  o.name_expressions = names;
  o.name_expression_count = count;
  kiln_module *m = NULL;
  const kiln_status st =
      kiln_module_create_from_source(conf.ctx, &src, 1, &o, &m);
  free(text);
  /* A GLSL kernel may need a feature this device lacks (lavapipe has no
   * double atomics): kiln refuses it naming the feature, which the
   * device's features must then lack too; a refusal of what they list is
   * a failure. */
  if (glsl && st == KILN_ERROR_UNSUPPORTED &&
      (conf.props.features & glsl_needs(file)) != glsl_needs(file))
    corpus_skip(test, "%s: %s", path, kiln_last_error());
  if (st != KILN_OK)
    fail_msg("compiling %s: %s: %s\nlog:\n%s", path, kiln_status_name(st),
             kiln_last_error(), kiln_last_compile_log());
  return m;
}

static kiln_kernel *kernel_of(kiln_module *m, const char *name) {
  kiln_kernel *k = NULL;
  check_ok(kiln_module_get_kernel(m, name, &k));
  return k;
}

/* A buffer holding `bytes` of `data` (NULL: zeroes). */
static kiln_buffer *buffer_with(const void *data, size_t bytes) {
  kiln_buffer *b = NULL;
  check_ok(kiln_buffer_create(conf.ctx, bytes, data ? 0 : KILN_BUFFER_ZERO,
                              &b));
  if (data) check_ok(kiln_buffer_write(NULL, b, 0, data, bytes));
  return b;
}

/* Reads `bytes` of b, compares them with `want` and frees b. */
static void expect_buffer(kiln_buffer *b, const void *want, size_t bytes,
                          const char *what) {
  void *got = conf_alloc(bytes);
  check_ok(kiln_buffer_read(NULL, b, 0, got, bytes));
  conf_check_bytes(got, want, bytes, what);
  free(got);
  check_ok(kiln_buffer_destroy(b));
}

/* The bits of a half that holds f exactly (a normal half, or zero). */
static uint16_t half_of(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  const uint32_t sign = (b >> 16) & 0x8000u;
  if ((b & 0x7fffffffu) == 0) return (uint16_t)sign;
  const uint32_t exponent = ((b >> 23) & 0xffu) - 127u + 15u;
  return (uint16_t)(sign | exponent << 10 | (b & 0x7fffffu) >> 13);
}

static kiln_launch_config grid_of(uint32_t n, uint32_t block) {
  return kiln_launch_config_1d(n, block);
}

static void fp16_axpy(void **state) {
  (void)state;
  kiln_module *m = corpus_module("fp16_axpy.cu", true, NULL, 0, NULL);
  enum { PAIRS = 1000 };
  uint16_t x[2 * PAIRS], y[2 * PAIRS], want[2 * PAIRS];
  for (unsigned i = 0; i < 2 * PAIRS; i++) {
    x[i] = half_of((float)(i % 16));
    y[i] = half_of(1.0f);
    want[i] = half_of(3.0f * (float)(i % 16) + 1.0f);
  }
  kiln_buffer *bx = buffer_with(x, sizeof x), *by = buffer_with(y, sizeof y);
  const kiln_launch_config c = grid_of(PAIRS, 128);
  const kiln_arg args[4] = {kiln_arg_buffer(by, 0), kiln_arg_buffer(bx, 0),
                            kiln_arg_f16(half_of(3.0f)), kiln_arg_u32(PAIRS)};
  check_ok(kiln_launch(NULL, kernel_of(m, "fp16_axpy"), &c, args, 4));
  expect_buffer(by, want, sizeof want, "fp16_axpy: y = 3 x + 1 in halves");
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_module_destroy(m));
}

static void fp16_dot(void **state) {
  (void)state;
  kiln_module *m = corpus_module("fp16_dot.cu", true, NULL, 0, NULL);
  enum { PAIRS = 4096 };
  uint16_t *x = conf_alloc(4 * PAIRS), *y = conf_alloc(4 * PAIRS);
  float want = 0.0f;
  for (unsigned i = 0; i < 2 * PAIRS; i++) {
    x[i] = half_of((float)(i % 4));
    y[i] = half_of((float)(i % 3));
    want += (float)(i % 4) * (float)(i % 3);
  }
  kiln_buffer *bx = buffer_with(x, 4 * PAIRS), *by = buffer_with(y, 4 * PAIRS);
  kiln_buffer *out = buffer_with(NULL, 4);
  const kiln_launch_config c = grid_of(PAIRS, 256);
  const kiln_arg args[4] = {kiln_arg_buffer(bx, 0), kiln_arg_buffer(by, 0),
                            kiln_arg_buffer(out, 0), kiln_arg_u32(PAIRS)};
  check_ok(kiln_launch(NULL, kernel_of(m, "fp16_dot"), &c, args, 4));
  expect_buffer(out, &want, 4, "fp16_dot: the dot product");
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_buffer_destroy(by));
  free(x);
  free(y);
  check_ok(kiln_module_destroy(m));
}

static void cg_reduce(void **state) {
  (void)state;
  kiln_module *m = corpus_module("cg_reduce.cu", true, NULL, 0, NULL);
  enum { N = 100003 };
  int32_t *x = conf_alloc(sizeof(int32_t) * N);
  int32_t want = 0;
  for (int i = 0; i < N; i++) want += x[i] = i % 7 - 3;
  kiln_buffer *bx = buffer_with(x, sizeof(int32_t) * N);
  kiln_buffer *out = buffer_with(NULL, 4);
  const kiln_launch_config c = {{64, 1, 1}, {256, 1, 1}, 0};
  const kiln_arg args[3] = {kiln_arg_buffer(bx, 0), kiln_arg_buffer(out, 0),
                            kiln_arg_u32(N)};
  check_ok(kiln_launch(NULL, kernel_of(m, "cg_sum"), &c, args, 3));
  expect_buffer(out, &want, 4, "cg_sum: the sum");
  check_ok(kiln_buffer_destroy(bx));
  free(x);
  check_ok(kiln_module_destroy(m));
}

static void warp_sums(void **state) {
  (void)state;
  kiln_module *m = corpus_module("warp_sums.cu", false, NULL, 0, NULL);
  enum { N = 128 * 64, WARPS = N / 32 };
  uint32_t *x = conf_alloc(4 * N), want[WARPS] = {0};
  for (unsigned i = 0; i < N; i++) want[i / 32] += x[i] = i % 11;
  kiln_buffer *bx = buffer_with(x, 4 * N), *out = buffer_with(NULL, 4 * WARPS);
  const kiln_launch_config c = grid_of(N, 128);
  const kiln_arg args[2] = {kiln_arg_buffer(bx, 0), kiln_arg_buffer(out, 0)};
  check_ok(kiln_launch(NULL, kernel_of(m, "warp_sums"), &c, args, 2));
  expect_buffer(out, want, sizeof want, "warp_sums: each warp's sum");
  check_ok(kiln_buffer_destroy(bx));
  free(x);
  check_ok(kiln_module_destroy(m));
}

static void templates(void **state) {
  (void)state;
  const char *names[] = {KILN_CORPUS_TEMPLATE_NAMES};
  kiln_module *m = corpus_module("templates.cu", false, names, 2,
                                  "GLSL has no templates");
  enum { N = 5000 };
  int32_t xi[N], yi[N], wi[N];
  double *xd = conf_alloc(8 * N), *yd = conf_alloc(8 * N),
         *wd = conf_alloc(8 * N);
  for (int i = 0; i < N; i++) {
    xi[i] = i % 5;
    yi[i] = i;
    wi[i] = 3 * xi[i] + yi[i];
    xd[i] = (double)(i % 9) - 4.0;
    yd[i] = 0.5 * i;
    wd[i] = 2.0 * xd[i] + yd[i];
  }
  kiln_buffer *bxi = buffer_with(xi, sizeof xi), *byi = buffer_with(yi, sizeof yi);
  kiln_buffer *bxd = buffer_with(xd, 8 * N), *byd = buffer_with(yd, 8 * N);
  const kiln_launch_config c = grid_of(N, 128);
  const kiln_arg ai[3] = {kiln_arg_buffer(byi, 0), kiln_arg_buffer(bxi, 0),
                          kiln_arg_u32(N)};
  const kiln_arg ad[3] = {kiln_arg_buffer(byd, 0), kiln_arg_buffer(bxd, 0),
                          kiln_arg_u32(N)};
  check_ok(kiln_launch(NULL, kernel_of(m, names[0]), &c, ai, 3));
  check_ok(kiln_launch(NULL, kernel_of(m, names[1]), &c, ad, 3));
  expect_buffer(byi, wi, sizeof wi, "scale_add<int, 3>");
  expect_buffer(byd, wd, 8 * N, "scale_add<double, 2>");
  check_ok(kiln_buffer_destroy(bxi));
  check_ok(kiln_buffer_destroy(bxd));
  free(xd);
  free(yd);
  free(wd);
  check_ok(kiln_module_destroy(m));
}

static void constant_poly(void **state) {
  (void)state;
  kiln_module *m = corpus_module(
      "constant_poly.cu", false, NULL, 0,
      "Vulkan modules have no globals for the host to write "
      "(kiln_module_get_global)");
  enum { N = 3000 };
  const float coeffs[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  kiln_buffer *cb = NULL;
  check_ok(kiln_module_get_global(m, "coeffs", &cb));
  check_ok(kiln_buffer_write(NULL, cb, 0, coeffs, sizeof coeffs));
  float x[N], want[N];
  for (int i = 0; i < N; i++) {
    const float v = (float)(i % 8);
    x[i] = v;
    want[i] = ((4.0f * v + 3.0f) * v + 2.0f) * v + 1.0f;
  }
  kiln_buffer *bx = buffer_with(x, sizeof x), *by = buffer_with(NULL, sizeof x);
  const kiln_launch_config c = grid_of(N, 128);
  const kiln_arg args[3] = {kiln_arg_buffer(bx, 0), kiln_arg_buffer(by, 0),
                            kiln_arg_u32(N)};
  check_ok(kiln_launch(NULL, kernel_of(m, "poly"), &c, args, 3));
  expect_buffer(by, want, sizeof want, "poly with __constant__ coefficients");
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_module_destroy(m));
}

static void reverse_blocks(void **state) {
  (void)state;
  kiln_module *m = corpus_module("reverse_blocks.cu", false, NULL, 0, NULL);
  enum { BLOCK = 128, GRID = 40, N = BLOCK * GRID };
  uint32_t in[N], want[N];
  for (unsigned i = 0; i < N; i++) in[i] = i * 2654435761u;
  for (unsigned b = 0; b < GRID; b++)
    for (unsigned t = 0; t < BLOCK; t++)
      want[b * BLOCK + t] = in[b * BLOCK + BLOCK - 1 - t];
  kiln_buffer *bin = buffer_with(in, sizeof in), *out = buffer_with(NULL, sizeof in);
  const kiln_launch_config c = {{GRID, 1, 1}, {BLOCK, 1, 1}, BLOCK * 4};
  const kiln_arg args[2] = {kiln_arg_buffer(bin, 0), kiln_arg_buffer(out, 0)};
  check_ok(kiln_launch(NULL, kernel_of(m, "reverse_blocks"), &c, args, 2));
  expect_buffer(out, want, sizeof want, "reverse_blocks through dynamic shared");
  check_ok(kiln_buffer_destroy(bin));
  check_ok(kiln_module_destroy(m));
}

static void cub_scan(void **state) {
  (void)state;
  kiln_module *m = corpus_module("cub_scan.cu", true, NULL, 0,
                                  "CUB is CUDA C++");
  enum { BLOCK = 128, GRID = 50, N = BLOCK * GRID };
  int32_t in[N], want[N];
  for (int i = 0; i < N; i++) {
    in[i] = i % 9 - 4;
    want[i] = in[i] + (i % BLOCK ? want[i - 1] : 0);
  }
  kiln_buffer *bin = buffer_with(in, sizeof in), *out = buffer_with(NULL, sizeof in);
  const kiln_launch_config c = {{GRID, 1, 1}, {BLOCK, 1, 1}, 0};
  const kiln_arg args[2] = {kiln_arg_buffer(bin, 0), kiln_arg_buffer(out, 0)};
  check_ok(kiln_launch(NULL, kernel_of(m, "block_prefix_sums"), &c, args, 2));
  expect_buffer(out, want, sizeof want, "cub::BlockScan's inclusive sums");
  check_ok(kiln_buffer_destroy(bin));
  check_ok(kiln_module_destroy(m));
}

static void double_bins(void **state) {
  (void)state;
  kiln_module *m = corpus_module("double_bins.cu", false, NULL, 0, NULL);
  enum { N = 10007 };
  double *x = conf_alloc(8 * N), want[8] = {0};
  for (unsigned i = 0; i < N; i++) want[i % 8] += x[i] = 0.5 * (i % 10);
  kiln_buffer *bx = buffer_with(x, 8 * N), *bins = buffer_with(NULL, sizeof want);
  const kiln_launch_config c = grid_of(N, 256);
  const kiln_arg args[3] = {kiln_arg_buffer(bx, 0), kiln_arg_buffer(bins, 0),
                            kiln_arg_u32(N)};
  check_ok(kiln_launch(NULL, kernel_of(m, "double_bins"), &c, args, 3));
  expect_buffer(bins, want, sizeof want, "atomicAdd on doubles into 8 bins");
  check_ok(kiln_buffer_destroy(bx));
  free(x);
  check_ok(kiln_module_destroy(m));
}

static void namespaced(void **state) {
  (void)state;
  const char *names[] = {KILN_CORPUS_NAMESPACED_NAMES};
  kiln_module *m = corpus_module("namespaced.cu", false, names, 1,
                                  "GLSL has no namespaces");
  enum { N = 2049 };
  float x[N], y[N], want[N];
  for (int i = 0; i < N; i++) {
    x[i] = (float)(i % 7);
    y[i] = 1.0f;
    want[i] = 3.0f * x[i] + 1.0f;
  }
  kiln_buffer *bx = buffer_with(x, sizeof x), *by = buffer_with(y, sizeof y);
  const kiln_launch_config c = grid_of(N, 128);
  const kiln_arg args[4] = {kiln_arg_buffer(by, 0), kiln_arg_buffer(bx, 0),
                            kiln_arg_f32(1.5f), kiln_arg_u32(N)};
  check_ok(kiln_launch(NULL, kernel_of(m, names[0]), &c, args, 4));
  expect_buffer(by, want, sizeof want, "corpus::saxpy");
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_module_destroy(m));
}

static void mix64(void **state) {
  (void)state;
  kiln_module *m = corpus_module("mix64.cu", true, NULL, 0, NULL);
  enum { N = 1000 };
  uint64_t v[N], want[N];
  for (unsigned i = 0; i < N; i++) {
    v[i] = (uint64_t)i * 0x12345u;
    uint64_t z = v[i] + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    want[i] = z ^ (z >> 31);
  }
  kiln_buffer *bv = buffer_with(v, sizeof v);
  const kiln_launch_config c = grid_of(N, 128);
  const kiln_arg args[2] = {kiln_arg_buffer(bv, 0), kiln_arg_u32(N)};
  check_ok(kiln_launch(NULL, kernel_of(m, "mix64"), &c, args, 2));
  expect_buffer(bv, want, sizeof want, "splitmix64 on cuda::std::uint64_t");
  check_ok(kiln_module_destroy(m));
}

static void transpose(void **state) {
  (void)state;
  kiln_module *m = corpus_module("transpose.cu", false, NULL, 0, NULL);
  enum { W = 100, H = 70 };
  float *in = conf_alloc(4 * W * H), *want = conf_alloc(4 * W * H);
  for (unsigned y = 0; y < H; y++)
    for (unsigned x = 0; x < W; x++) {
      in[y * W + x] = (float)(y * W + x);
      want[x * H + y] = in[y * W + x];
    }
  kiln_buffer *bin = buffer_with(in, 4 * W * H);
  kiln_buffer *out = buffer_with(NULL, 4 * W * H);
  const kiln_launch_config c = {{(W + 31) / 32, (H + 31) / 32, 1},
                                {32, 8, 1}, 0};
  const kiln_arg args[4] = {kiln_arg_buffer(out, 0), kiln_arg_buffer(bin, 0),
                            kiln_arg_u32(W), kiln_arg_u32(H)};
  check_ok(kiln_launch(NULL, kernel_of(m, "transpose"), &c, args, 4));
  expect_buffer(out, want, 4 * W * H, "the tiled transpose");
  check_ok(kiln_buffer_destroy(bin));
  free(in);
  free(want);
  check_ok(kiln_module_destroy(m));
}

/* The error names the file and the line, in the status's message and in
 * the compile log (glsl/broken.comp's on Vulkan). */
static void compile_error_with_its_line(void **state) {
  (void)state;
  const char *description = NULL;
  if (kiln_compiler_available(conf.backend, &description) != KILN_OK)
    kiln_skip("no %s compiler here: %s", kiln_backend_name(conf.backend),
              kiln_last_error());
  const bool glsl = conf.backend == KILN_BACKEND_VULKAN;
  const char *at = glsl ? KILN_CORPUS_GLSL_BROKEN_AT : KILN_CORPUS_BROKEN_AT;
  char *text = corpus_text(glsl ? "glsl/broken.comp" : "broken.cu");
  const kiln_source src = {glsl                                ? KILN_SOURCE_GLSL
                           : conf.backend == KILN_BACKEND_HIP ? KILN_SOURCE_HIP
                                                               : KILN_SOURCE_CUDA,
                           text, glsl ? "broken.comp" : "broken.cu", NULL};
  kiln_module *m = NULL;
  check_fails(kiln_module_create_from_source(conf.ctx, &src, 1, NULL, &m),
              KILN_ERROR_COMPILE);
  check_message_has(at);
  if (!strstr(kiln_last_compile_log(), at))
    fail_msg("the compile log does not name %s: %s", at,
             kiln_last_compile_log());
  assert_null(m);
  free(text);
}

int conf_run_corpus_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(fp16_axpy),      CONF_TEST(fp16_dot),
      CONF_TEST(cg_reduce),      CONF_TEST(warp_sums),
      CONF_TEST(templates),      CONF_TEST(constant_poly),
      CONF_TEST(reverse_blocks), CONF_TEST(cub_scan),
      CONF_TEST(double_bins),    CONF_TEST(namespaced),
      CONF_TEST(mix64),          CONF_TEST(transpose),
      CONF_TEST(compile_error_with_its_line),
  };
  return cmocka_run_group_tests_name("corpus", tests, NULL, NULL);
}
