/* The shim's HIPRTC (shim_rtc.c), called as kiln's HIP backend calls it:
 * the shim library named by the first argument is opened and its HIPRTC
 * entry points compile HIP text through NVRTC. Needs NVRTC and no GPU
 * (exits 77 without NVRTC); the explicit sm_90 target needs no device to
 * map a gfx name onto. Further arguments are .hip files that must compile
 * as they are. `--missing` expects NVRTC not to load
 * (KILN_SHIM_NVRTC_LIBRARY naming no library) and the reason in words. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define KILN_HIP_API_ONLY
#include "backends/hip/hip.h"
#include "tests/hip/shim/shim_rtc.h"

static struct {
#define TEST_X(ret, name, params) ret(*name) params;
  SHIM_HIPRTC_SYMBOLS(TEST_X)
#undef TEST_X
  hipError_t (*hipGetDeviceCount)(int *count);
} rtc;

static const char *shim_path;
/* The repository's HIP kernels, given after the shim. */
static const char *sources[8];
static size_t source_count;

static void open_shim(void) {
  void *lib = dlopen(shim_path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "cannot open the shim %s: %s\n", shim_path, dlerror());
    exit(1);
  }
  void *fn;
#define TEST_X(ret, name, params)                          \
  fn = dlsym(lib, #name);                                  \
  if (!fn) {                                               \
    fprintf(stderr, "the shim lacks %s\n", #name);         \
    exit(1);                                               \
  }                                                        \
  memcpy(&rtc.name, &fn, sizeof rtc.name);
  SHIM_HIPRTC_SYMBOLS(TEST_X)
  TEST_X(hipError_t, hipGetDeviceCount, (int *count))
#undef TEST_X
}

#define check_rtc(call, expected)                                     \
  do {                                                                \
    hiprtcResult got_ = (call);                                       \
    if (got_ != (expected))                                           \
      fail_msg("%s gave %s, expected %s", #call,                      \
               rtc.hiprtcGetErrorString(got_),                        \
               rtc.hiprtcGetErrorString(expected));                   \
  } while (0)

/* Creates and compiles one program; the result of the compile. */
static hiprtcResult compile(hiprtcProgram *prog, const char *name,
                            const char *src, int header_count,
                            const char **headers, const char **names,
                            int option_count, const char **options) {
  *prog = NULL;
  check_rtc(rtc.hiprtcCreateProgram(prog, src, name, header_count, headers,
                                    names),
            HIPRTC_SUCCESS);
  assert_non_null(*prog);
  return rtc.hiprtcCompileProgram(*prog, option_count, options);
}

/* The program's log, malloc'd; printed for the test's own log. */
static char *get_log(hiprtcProgram prog) {
  size_t size = 0;
  check_rtc(rtc.hiprtcGetProgramLogSize(prog, &size), HIPRTC_SUCCESS);
  assert_true(size >= 1);
  char *log = malloc(size);
  assert_non_null(log);
  check_rtc(rtc.hiprtcGetProgramLog(prog, log), HIPRTC_SUCCESS);
  assert_int_equal(strlen(log) + 1, size);
  if (log[0]) printf("log:\n%s", log);
  return log;
}

/* The program's code, malloc'd, its size in *size. */
static unsigned char *get_code(hiprtcProgram prog, size_t *size) {
  *size = 0;
  check_rtc(rtc.hiprtcGetCodeSize(prog, size), HIPRTC_SUCCESS);
  assert_true(*size > 16);
  unsigned char *code = malloc(*size);
  assert_non_null(code);
  check_rtc(rtc.hiprtcGetCode(prog, (char *)code), HIPRTC_SUCCESS);
  return code;
}

static bool is_elf(const unsigned char *code, size_t size) {
  return size > 4 && memcmp(code, "\177ELF", 4) == 0;
}

static bool contains(const unsigned char *code, size_t size,
                     const char *text) {
  size_t n = strlen(text);
  for (size_t i = 0; i + n <= size; i++)
    if (memcmp(code + i, text, n) == 0) return true;
  return false;
}

static void check_cubin(hiprtcProgram prog, const char *kernel) {
  size_t size;
  unsigned char *code = get_code(prog, &size);
  if (!is_elf(code, size)) fail_msg("the code is not an ELF CUBIN");
  if (!contains(code, size, kernel))
    fail_msg("the CUBIN has no kernel named %s", kernel);
  free(code);
}

/* HIP text: HIP's names from <hip/hip_runtime.h>, a header in memory and a
 * macro from the options. */
static const char scaled_src[] =
    "#include <hip/hip_runtime.h>\n"
    "#include \"factor.h\"\n"
    "extern \"C\" __global__ void scaled(float *y, unsigned n) {\n"
    "  __shared__ float s[64];\n"
    "  unsigned i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;\n"
    "  s[threadIdx.x % 64] = i < n ? y[i] : 0.0f;\n"
    "  __syncthreads();\n"
    "  if (i < n) y[i] = s[threadIdx.x % 64] * SCALE * kiln_factor();\n"
    "}\n";
static const char *factor_header[] = {
    "__device__ inline float kiln_factor() { return 2.0f; }\n"};
static const char *factor_name[] = {"factor.h"};

static void test_version(void **state) {
  (void)state;
  int major = -1, minor = -1;
  check_rtc(rtc.hiprtcVersion(&major, &minor), HIPRTC_SUCCESS);
  printf("hiprtcVersion (NVRTC's): %d.%d\n", major, minor);
  assert_true(major >= 11 && minor >= 0);
  check_rtc(rtc.hiprtcVersion(NULL, &minor), HIPRTC_ERROR_INVALID_INPUT);
}

static void test_compile(void **state) {
  (void)state;
  const char *options[] = {"--offload-arch=sm_90", "-DSCALE=3.0f", "-O3",
                           "-ffast-math", "-std=c++17"};
  hiprtcProgram prog;
  check_rtc(compile(&prog, "scaled.hip", scaled_src, 1, factor_header,
                    factor_name, 5, options),
            HIPRTC_SUCCESS);
  free(get_log(prog));
  check_cubin(prog, "scaled");
  check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
  assert_null(prog);

  /* The macro did reach the compiler: without it SCALE is undefined. */
  check_rtc(compile(&prog, "scaled.hip", scaled_src, 1, factor_header,
                    factor_name, 1, options),
            HIPRTC_ERROR_COMPILATION);
  char *log = get_log(prog);
  assert_non_null(strstr(log, "SCALE"));
  free(log);
  check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
}

/* Name expressions, as kiln's HIP backend gives them: added before the
 * compile, their lowered names read after it; before it there are none. */
static void test_name_expressions(void **state) {
  (void)state;
  static const char src[] =
      "#include <hip/hip_runtime.h>\n"
      "template <typename T> __global__ void twice(T *p) { p[0] *= 2; }\n";
  const char *options[] = {"--offload-arch=sm_90"};
  hiprtcProgram prog = NULL;
  check_rtc(rtc.hiprtcCreateProgram(&prog, src, "twice.hip", 0, NULL, NULL),
            HIPRTC_SUCCESS);
  check_rtc(rtc.hiprtcAddNameExpression(prog, "twice<int>"), HIPRTC_SUCCESS);
  const char *lowered = NULL;
  check_rtc(rtc.hiprtcGetLoweredName(prog, "twice<int>", &lowered),
            HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION);
  check_rtc(rtc.hiprtcCompileProgram(prog, 1, options), HIPRTC_SUCCESS);
  check_rtc(rtc.hiprtcGetLoweredName(prog, "twice<int>", &lowered),
            HIPRTC_SUCCESS);
  assert_string_equal(lowered, "_Z5twiceIiEvPT_");
  check_cubin(prog, lowered);
  check_rtc(rtc.hiprtcAddNameExpression(NULL, "x"),
            HIPRTC_ERROR_INVALID_PROGRAM);
  check_rtc(rtc.hiprtcGetLoweredName(prog, NULL, &lowered),
            HIPRTC_ERROR_INVALID_INPUT);
  check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
}

/* Every spelling of the target, -O0 and an architecture given by its
 * compute capability; a virtual one gives PTX. */
static void test_targets(void **state) {
  (void)state;
  static const char *const targets[] = {"--gpu-architecture=sm_90",
                                        "-arch=sm_90", "--offload-arch=sm_80"};
  for (size_t t = 0; t < 3; t++) {
    const char *options[] = {targets[t], "-DSCALE=1", "-O0"};
    hiprtcProgram prog;
    check_rtc(compile(&prog, "scaled.hip", scaled_src, 1, factor_header,
                      factor_name, 3, options),
              HIPRTC_SUCCESS);
    check_cubin(prog, "scaled");
    check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
  }

  const char *options[] = {"--offload-arch=compute_90", "-DSCALE=1"};
  hiprtcProgram prog;
  check_rtc(compile(&prog, "scaled.hip", scaled_src, 1, factor_header,
                    factor_name, 2, options),
            HIPRTC_SUCCESS);
  size_t size;
  unsigned char *code = get_code(prog, &size);
  assert_false(is_elf(code, size));
  assert_int_equal(code[size - 1], '\0');
  assert_non_null(strstr((const char *)code, ".entry scaled"));
  free(code);
  check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
}

/* The caller's own hip/hip_runtime.h is the one included. */
static void test_own_runtime_header(void **state) {
  (void)state;
  const char *headers[] = {"#define KILN_OWN 1\n", factor_header[0]};
  const char *names[] = {"hip/hip_runtime.h", "factor.h"};
  const char *src =
      "#include <hip/hip_runtime.h>\n"
      "#ifdef hipThreadIdx_x\n"
      "#error the shim's header was included\n"
      "#endif\n"
      "extern \"C\" __global__ void own(int *y) { y[0] = KILN_OWN; }\n";
  const char *options[] = {"-arch=sm_90"};
  hiprtcProgram prog;
  check_rtc(compile(&prog, "own.hip", src, 2, headers, names, 1, options),
            HIPRTC_SUCCESS);
  check_cubin(prog, "own");
  check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
}

static void test_syntax_error(void **state) {
  (void)state;
  const char *src = "extern \"C\" __global__ void broken(float *y) {\n"
                    "  float a = 1.0f;\n"
                    "  y[0] = a +;\n"
                    "}\n";
  const char *options[] = {"--offload-arch=sm_90"};
  hiprtcProgram prog;
  check_rtc(compile(&prog, "broken.hip", src, 0, NULL, NULL, 1, options),
            HIPRTC_ERROR_COMPILATION);
  char *log = get_log(prog);
  if (!strstr(log, "broken.hip(3)"))
    fail_msg("the log does not point at broken.hip line 3: %s", log);
  free(log);
  size_t size = 0;
  check_rtc(rtc.hiprtcGetCodeSize(prog, &size), HIPRTC_ERROR_INVALID_PROGRAM);
  check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
  assert_string_equal(rtc.hiprtcGetErrorString(HIPRTC_ERROR_COMPILATION),
                      "HIPRTC_ERROR_COMPILATION");
}

static void test_bad_options(void **state) {
  (void)state;
  const char *bogus[] = {"--offload-arch=sm_90", "--no-such-option"};
  hiprtcProgram prog;
  check_rtc(compile(&prog, "scaled.hip", scaled_src, 1, factor_header,
                    factor_name, 2, bogus),
            HIPRTC_ERROR_INVALID_OPTION);
  char *log = get_log(prog);
  assert_non_null(strstr(log, "--no-such-option"));
  free(log);

  /* The same program compiles again with good options. */
  const char *good[] = {"--offload-arch=sm_90", "-DSCALE=2"};
  check_rtc(rtc.hiprtcCompileProgram(prog, 2, good), HIPRTC_SUCCESS);
  check_cubin(prog, "scaled");

  const char *two[] = {"--offload-arch=sm_90", "--offload-arch=sm_80"};
  check_rtc(rtc.hiprtcCompileProgram(prog, 2, two),
            HIPRTC_ERROR_INVALID_OPTION);
  log = get_log(prog);
  assert_non_null(strstr(log, "sm_80"));
  free(log);
  check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
}

/* A gfx name is compiled for the current CUDA device; with none, it is an
 * invalid option and the log says why. */
static void test_gfx_target(void **state) {
  (void)state;
  int devices = 0;
  if (rtc.hipGetDeviceCount(&devices) != hipSuccess) devices = 0;
  const char *options[] = {"--offload-arch=gfx90a:sramecc+:xnack-",
                           "-DSCALE=1"};
  hiprtcProgram prog;
  hiprtcResult r = compile(&prog, "scaled.hip", scaled_src, 1, factor_header,
                           factor_name, 2, options);
  char *log = get_log(prog);
  assert_non_null(strstr(log, "gfx90a"));
  if (devices > 0) {
    check_rtc(r, HIPRTC_SUCCESS);
    check_cubin(prog, "scaled");
  } else {
    check_rtc(r, HIPRTC_ERROR_INVALID_OPTION);
    assert_non_null(strstr(log, "no CUDA device"));
  }
  free(log);
  check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
}

static void test_invalid_input(void **state) {
  (void)state;
  hiprtcProgram prog = NULL;
  check_rtc(rtc.hiprtcCreateProgram(NULL, "", "x.hip", 0, NULL, NULL),
            HIPRTC_ERROR_INVALID_PROGRAM);
  check_rtc(rtc.hiprtcCreateProgram(&prog, NULL, "x.hip", 0, NULL, NULL),
            HIPRTC_ERROR_INVALID_INPUT);
  check_rtc(rtc.hiprtcCreateProgram(&prog, "", "x.hip", 1, NULL, NULL),
            HIPRTC_ERROR_INVALID_INPUT);
  assert_null(prog);
  check_rtc(rtc.hiprtcDestroyProgram(NULL), HIPRTC_ERROR_INVALID_PROGRAM);
  check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_ERROR_INVALID_PROGRAM);
  check_rtc(rtc.hiprtcCompileProgram(NULL, 0, NULL),
            HIPRTC_ERROR_INVALID_PROGRAM);

  check_rtc(rtc.hiprtcCreateProgram(&prog, "", "x.hip", 0, NULL, NULL),
            HIPRTC_SUCCESS);
  size_t size = 0;
  check_rtc(rtc.hiprtcGetCodeSize(prog, &size), HIPRTC_ERROR_INVALID_PROGRAM);
  check_rtc(rtc.hiprtcGetProgramLogSize(prog, &size), HIPRTC_SUCCESS);
  assert_int_equal(size, 1);
  check_rtc(rtc.hiprtcCompileProgram(prog, 1, NULL),
            HIPRTC_ERROR_INVALID_INPUT);
  check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
  assert_string_equal(rtc.hiprtcGetErrorString((hiprtcResult)77),
                      "Invalid HIPRTC error code");
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s", path);
  char *text = NULL;
  size_t size = 0;
  for (;;) {
    char *grown = realloc(text, size + 4097);
    assert_non_null(grown);
    text = grown;
    size_t n = fread(text + size, 1, 4096, f);
    size += n;
    if (n < 4096) break;
  }
  fclose(f);
  text[size] = '\0';
  return text;
}

/* kiln's own .hip files as HIPRTC text, their siblings found through -I,
 * and at -O0 too. */
static void test_repo_kernels(void **state) {
  (void)state;
  for (size_t i = 0; i < source_count; i++) {
    char *text = read_file(sources[i]);
    const char *slash = strrchr(sources[i], '/');
    char include[1024];
    snprintf(include, sizeof include, "-I%.*s",
             slash ? (int)(slash - sources[i]) : 1,
             slash ? sources[i] : ".");
    const char *options[] = {"--offload-arch=sm_90", include, "-O0"};
    for (int optimised = 0; optimised < 2; optimised++) {
      hiprtcProgram prog;
      hiprtcResult r = compile(&prog, slash ? slash + 1 : sources[i], text, 0,
                               NULL, NULL, optimised ? 2 : 3, options);
      char *log = get_log(prog);
      if (r != HIPRTC_SUCCESS)
        fail_msg("%s gave %s: %s", sources[i], rtc.hiprtcGetErrorString(r),
                 log);
      free(log);
      size_t size;
      unsigned char *code = get_code(prog, &size);
      if (!is_elf(code, size)) fail_msg("%s gave no CUBIN", sources[i]);
      printf("%s%s: a %zu-byte CUBIN\n", sources[i], optimised ? "" : " -O0",
             size);
      free(code);
      check_rtc(rtc.hiprtcDestroyProgram(&prog), HIPRTC_SUCCESS);
    }
    free(text);
  }
}

static void test_missing(void **state) {
  (void)state;
  int major, minor;
  check_rtc(rtc.hiprtcVersion(&major, &minor), HIPRTC_ERROR_INTERNAL_ERROR);
  hiprtcProgram prog = NULL;
  check_rtc(rtc.hiprtcCreateProgram(&prog, "", "x.hip", 0, NULL, NULL),
            HIPRTC_ERROR_INTERNAL_ERROR);
  assert_null(prog);
  const char *text = rtc.hiprtcGetErrorString(HIPRTC_ERROR_INTERNAL_ERROR);
  printf("%s\n", text);
  assert_non_null(strstr(text, "NVRTC could not be loaded"));
  assert_non_null(strstr(text, getenv("KILN_SHIM_NVRTC_LIBRARY")));
}

int main(int argc, char **argv) {
  bool missing = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--missing") == 0)
      missing = true;
    else if (!shim_path)
      shim_path = argv[i];
    else if (source_count < sizeof sources / sizeof *sources)
      sources[source_count++] = argv[i];
  }
  if (!shim_path) {
    fprintf(stderr, "usage: %s SHIM-LIBRARY [KERNEL.hip...] [--missing]\n",
            argv[0]);
    return 1;
  }
  open_shim();
  if (missing) {
    const char *chosen = getenv("KILN_SHIM_NVRTC_LIBRARY");
    if (!chosen || !chosen[0]) {
      fprintf(stderr, "--missing needs KILN_SHIM_NVRTC_LIBRARY\n");
      return 1;
    }
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_missing)};
    return cmocka_run_group_tests_name("hip shim: no NVRTC", tests, NULL,
                                       NULL);
  }
  int major, minor;
  hiprtcResult r = rtc.hiprtcVersion(&major, &minor);
  if (r != HIPRTC_SUCCESS) {
    printf("skipped: %s\n", rtc.hiprtcGetErrorString(r));
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_version),
      cmocka_unit_test(test_compile),
      cmocka_unit_test(test_name_expressions),
      cmocka_unit_test(test_targets),
      cmocka_unit_test(test_own_runtime_header),
      cmocka_unit_test(test_syntax_error),
      cmocka_unit_test(test_bad_options),
      cmocka_unit_test(test_gfx_target),
      cmocka_unit_test(test_invalid_input),
      cmocka_unit_test(test_repo_kernels),
  };
  return cmocka_run_group_tests_name("hip shim: HIPRTC on NVRTC", tests, NULL,
                                     NULL);
}
