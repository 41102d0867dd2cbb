/*
 * rawkernel: a program that carries its kernel only as source text and runs
 * it on whichever GPU kiln finds — CUDA, HIP or Vulkan — from one binary,
 * the way CuPy's RawKernel does. No kernel compiler is needed to build it:
 * kiln compiles the text at run time (NVRTC, HIPRTC or shaderc) and keeps
 * the result in its disk cache, so the second run does not compile.
 *
 * The kernel is a box filter whose radius is a compile-time constant, given
 * as a #define: y[i] is the mean of x[i - R .. i + R], clamped at the ends.
 *
 *     rawkernel [N] [R]   N elements (default 1048576), radius R (default 4)
 *
 * Exit status: 0 when every element matches the CPU, 1 on any failure, 2 for
 * a bad argument, 77 when the chosen backend cannot run on this machine.
 */
#include <kiln/kiln.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { EXIT_BAD_ARGUMENT = 2, EXIT_UNAVAILABLE = 77 };

/* CUDA C++, which HIP compiles as it is (HIPRTC takes CUDA-style kernels). */
static const char cuda_text[] =
    "extern \"C\" __global__ void box_filter(float *y, const float *x,\n"
    "                                        unsigned n) {\n"
    "  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "       i += gridDim.x * blockDim.x) {\n"
    "    float sum = 0.0f;\n"
    "    for (int d = -RADIUS; d <= RADIUS; d++) {\n"
    "      long j = (long)i + d;\n"
    "      j = j < 0 ? 0 : j >= (long)n ? (long)n - 1 : j;\n"
    "      sum += x[j];\n"
    "    }\n"
    "    y[i] = sum / (2 * RADIUS + 1);\n"
    "  }\n"
    "}\n";

/* GLSL: buffers are buffer_reference addresses in the push constants, in
 * the same order as the CUDA parameters (kiln's one argument ABI). */
static const char glsl_text[] =
    "#version 460\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "layout(local_size_x_id = 0) in;\n"
    "layout(buffer_reference, std430) buffer F32 { float v[]; };\n"
    "layout(push_constant, std430) uniform Args { F32 y; F32 x; uint n; } a;\n"
    "void main() {\n"
    "  uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;\n"
    "  for (uint i = gl_GlobalInvocationID.x; i < a.n; i += stride) {\n"
    "    float sum = 0.0;\n"
    "    for (int d = -RADIUS; d <= RADIUS; d++) {\n"
    "      int j = clamp(int(i) + d, 0, int(a.n) - 1);\n"
    "      sum += a.x.v[j];\n"
    "    }\n"
    "    a.y.v[i] = sum / float(2 * RADIUS + 1);\n"
    "  }\n"
    "}\n";

/* Findings kiln cannot return as a status (the Vulkan validation layer's,
 * under KILN_VULKAN_VALIDATION=1) arrive as error-level log messages: each
 * one fails the run. */
static unsigned logged_errors;

static void on_log(kiln_log_level level, const char *message, void *data) {
  (void)data;
  if (level == KILN_LOG_ERROR) logged_errors++;
  fprintf(stderr, "kiln: %s\n", message);
}

static void report(const char *call, kiln_status status) {
  fprintf(stderr, "rawkernel: %s failed: %s: %s\n", call,
          kiln_status_name(status), kiln_last_error());
}

#define CHECK(call)               \
  do {                            \
    kiln_status status_ = (call); \
    if (status_ != KILN_OK) {     \
      report(#call, status_);     \
      goto out;                   \
    }                             \
  } while (0)

static int parse(const char *text, unsigned long long max,
                 unsigned long long *out) {
  char *end = NULL;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 0);
  if (errno || end == text || *end || text[0] == '-' || v > max) return -1;
  *out = v;
  return 0;
}

int main(int argc, char **argv) {
  unsigned long long n = 1u << 20, radius = 4;
  if (argc > 3 || (argc > 1 && (parse(argv[1], 1u << 30, &n) || n == 0)) ||
      (argc > 2 && parse(argv[2], 64, &radius))) {
    fprintf(stderr, "usage: rawkernel [N (1 to 2^30)] [RADIUS (0 to 64)]\n");
    return EXIT_BAD_ARGUMENT;
  }
  kiln_set_log_handler(on_log, NULL);
  if (kiln_get_log_level() < KILN_LOG_ERROR) kiln_set_log_level(KILN_LOG_ERROR);
  int result = EXIT_FAILURE;
  kiln_context *ctx = NULL;
  kiln_module *module = NULL;
  kiln_buffer *x = NULL, *y = NULL;
  float *host_x = malloc(n * sizeof *host_x);
  float *host_y = malloc(n * sizeof *host_y);
  if (!host_x || !host_y) {
    fprintf(stderr, "rawkernel: out of host memory\n");
    goto out;
  }
  for (size_t i = 0; i < n; i++)
    host_x[i] = (float)((i * 7919u) % 1000u) / 1000.0f;

  kiln_status st = kiln_context_create(NULL, &ctx);
  if (st == KILN_ERROR_UNAVAILABLE || st == KILN_ERROR_NOT_FOUND) {
    fprintf(stderr, "rawkernel: %s\n", kiln_last_error());
    result = EXIT_UNAVAILABLE;
    goto out;
  }
  CHECK(st);
  kiln_device_properties props;
  CHECK(kiln_context_get_properties(ctx, &props));
  const char *compiler = "";
  st = kiln_compiler_available(kiln_context_backend(ctx), &compiler);
  if (st != KILN_OK) {
    fprintf(stderr, "rawkernel: no kernel compiler for %s: %s\n",
            kiln_backend_name(kiln_context_backend(ctx)), compiler);
    result = EXIT_UNAVAILABLE;
    goto out;
  }
  printf("rawkernel: kiln %s, backend %s, device %s, compiler %s\n",
         kiln_version_string(), kiln_backend_name(kiln_context_backend(ctx)),
         props.name, compiler);

  /* One list for every backend: kiln compiles the one its backend takes. */
  const kiln_source sources[] = {
      {KILN_SOURCE_CUDA, cuda_text, "box_filter.cu", NULL},
      {KILN_SOURCE_GLSL, glsl_text, "box_filter.comp", NULL},
  };
  char define[32];
  snprintf(define, sizeof define, "RADIUS=%llu", radius);
  const char *defines[] = {define};
  kiln_compile_options options = {.defines = defines, .define_count = 1};
  st = kiln_module_create_from_source(ctx, sources, 2, &options, &module);
  if (st == KILN_ERROR_COMPILE)
    fprintf(stderr, "rawkernel: the compiler said:\n%s\n",
            kiln_last_compile_log());
  CHECK(st);
  kiln_module_build_info info;
  CHECK(kiln_module_get_build_info(module, &info));
  printf("rawkernel: built in %.2f ms (%s)\n", info.compile_ms,
         info.cache_hits ? "from kiln's disk cache" : "compiled");

  kiln_kernel *kernel;
  CHECK(kiln_module_get_kernel(module, "box_filter", &kernel));
  CHECK(kiln_buffer_create(ctx, n * sizeof(float), 0, &x));
  CHECK(kiln_buffer_create(ctx, n * sizeof(float), 0, &y));
  CHECK(kiln_buffer_write(NULL, x, 0, host_x, n * sizeof(float)));
  kiln_launch_config cfg = kiln_launch_config_1d(n, 256);
  if (cfg.grid.x > 65535) cfg.grid.x = 65535;
  kiln_arg args[] = {kiln_arg_buffer(y, 0), kiln_arg_buffer(x, 0),
                     kiln_arg_u32((uint32_t)n)};
  CHECK(kiln_launch(NULL, kernel, &cfg, args, 3));
  CHECK(kiln_buffer_read(NULL, y, 0, host_y, n * sizeof(float)));

  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    float sum = 0.0f;
    for (long d = -(long)radius; d <= (long)radius; d++) {
      long j = (long)i + d;
      j = j < 0 ? 0 : j >= (long)n ? (long)n - 1 : j;
      sum += host_x[j];
    }
    float want = sum / (float)(2 * radius + 1);
    if (fabsf(host_y[i] - want) > 1e-5f * (1.0f + fabsf(want)) && bad++ < 3)
      fprintf(stderr, "rawkernel: y[%zu] = %g, expected %g\n", i,
              (double)host_y[i], (double)want);
  }
  if (bad) {
    fprintf(stderr, "rawkernel: FAIL: %zu of %llu elements differ\n", bad, n);
    goto out;
  }
  printf("rawkernel: PASS: %llu elements, radius %llu, match the CPU\n", n,
         radius);
  result = EXIT_SUCCESS;

out:
  kiln_buffer_destroy(y);
  kiln_buffer_destroy(x);
  kiln_module_destroy(module);
  if (kiln_context_destroy(ctx) != KILN_OK) result = EXIT_FAILURE;
  if (logged_errors && result != EXIT_UNAVAILABLE) {
    fprintf(stderr, "rawkernel: FAIL: kiln logged %u error(s)\n",
            logged_errors);
    result = EXIT_FAILURE;
  }
  free(host_x);
  free(host_y);
  return result;
}
