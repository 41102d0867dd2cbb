/* The CUDA backend's run-time compiler (backends/cuda/compiler.c) on NVRTC,
 * called through the backend's ops with no device or driver: loading and
 * its failure, cubin and PTX with defines and in-memory headers, logs,
 * options, and the choice of target for a device. Exits 77 when NVRTC
 * cannot be loaded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "backends/cuda/cuda.h"

/* What main() saw with KILN_NVRTC_LIBRARY naming no file, then unset. */
static kiln_status missing_status;
/* As large as the core's buffer for it. */
static char missing_reason[512];
static char description[1024];

static const char missing_path[] = "/nonexistent/libnvrtc.so.13";

static const char saxpy_text[] =
    "#include \"scale.h\"\n"
    "extern \"C\" __global__ void saxpy(float *y, const float *x, float a,\n"
    "                                  unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = SCALE(a) * x[i] + y[i] + OFFSET;\n"
    "}\n";
static const char scale_h[] = "#define SCALE(a) ((a) * 2.0f)\n";

static kiln_compile_job job_for(const char *text, const char *target,
                                const kiln_compile_options *o) {
  return (kiln_compile_job){.language = KILN_SOURCE_CUDA,
                            .name = "saxpy.cu",
                            .text = text,
                            .entry_point = "saxpy",
                            .target = target,
                            .options = o};
}

static kiln_status compile(const kiln_compile_job *job, kiln_compiled *out) {
  memset(out, 0, sizeof *out);
  return kiln_cuda_ops.compiler->compile(job, out);
}

static void free_compiled(kiln_compiled *c) {
  free(c->image);
  free(c->log);
  memset(c, 0, sizeof *c);
}

static bool contains(const void *data, size_t size, const char *text) {
  size_t n = strlen(text);
  for (size_t i = 0; i + n <= size; i++)
    if (memcmp((const char *)data + i, text, n) == 0) return true;
  return false;
}

static void failure_is_reported_and_not_cached(void **state) {
  (void)state;
  assert_int_equal(missing_status, KILN_ERROR_UNAVAILABLE);
  assert_non_null(strstr(missing_reason, missing_path));
  assert_non_null(strstr(missing_reason, "CUDA toolkit"));
  assert_non_null(strstr(missing_reason, "cuda-nvrtc"));
  assert_non_null(strstr(missing_reason, "KILN_NVRTC_LIBRARY"));
}

static void description_names_version_and_file(void **state) {
  (void)state;
  assert_non_null(strstr(description, "NVRTC "));
  assert_non_null(strstr(description, "(/"));
  assert_non_null(strstr(description, "libnvrtc"));
  char again[1024];
  assert_int_equal(kiln_cuda_ops.compiler->compiler_load(again, sizeof again),
                   KILN_OK);
  assert_string_equal(again, description);
}

/* Real CUDA code includes the toolkit's headers: half precision,
 * cooperative groups, CCCL's libcu++ and CUB. kiln passes the toolkit's
 * include directories (its cccl too) unless asked not to, and the
 * description (part of the cache key) names them. */
static const char toolkit_text[] =
    "#include <cuda_fp16.h>\n"
    "#include <cooperative_groups.h>\n"
    "#include <cuda/std/cstdint>\n"
    "#include <cub/block/block_reduce.cuh>\n"
    "namespace cg = cooperative_groups;\n"
    "extern \"C\" __global__ void saxpy(__half *y, const __half *x, float a,\n"
    "                                  float *sum, unsigned n) {\n"
    "  cg::thread_block b = cg::this_thread_block();\n"
    "  cuda::std::uint32_t i = b.group_index().x * b.size() + "
    "b.thread_rank();\n"
    "  float v = 0.0f;\n"
    "  if (i < n) {\n"
    "    y[i] = __hadd(__hmul(__float2half(a), x[i]), y[i]);\n"
    "    v = __half2float(y[i]);\n"
    "  }\n"
    "  typedef cub::BlockReduce<float, 128> reduce;\n"
    "  __shared__ typename reduce::TempStorage tmp;\n"
    "  float total = reduce(tmp).Sum(v);\n"
    "  if (b.thread_rank() == 0) atomicAdd(sum, total);\n"
    "}\n";

static void toolkit_headers_are_found(void **state) {
  (void)state;
  assert_non_null(strstr(description, "; headers /"));
  kiln_compile_options o = {0};
  kiln_compile_job job = job_for(toolkit_text, "sm_90", &o);
  kiln_compiled out;
  kiln_status st = compile(&job, &out);
  if (st != KILN_OK) print_message("log: %s\n", out.log ? out.log : "");
  assert_int_equal(st, KILN_OK);
  assert_true(contains(out.image, out.image_size, "saxpy"));
  free_compiled(&out);
  o.flags = KILN_COMPILE_NO_TOOLKIT_HEADERS;
  assert_int_equal(compile(&job, &out), KILN_ERROR_COMPILE);
  assert_non_null(out.log);
  assert_non_null(strstr(out.log, "cuda_fp16.h"));
  free_compiled(&out);
}

/* A quoted #include is not looked for beside the source's name (the
 * working directory for "cwd.cu"), which no cache key can see; the log
 * names the source as the caller did. */
static void the_working_directory_is_not_searched(void **state) {
  (void)state;
  char dir[] = "/tmp/kiln-nvrtc-cwd-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char here[64], before[4096];
  snprintf(here, sizeof here, "%s/here.h", dir);
  FILE *f = fopen(here, "w");
  assert_non_null(f);
  fputs("#define FROM_HERE 1\n", f);
  fclose(f);
  assert_non_null(getcwd(before, sizeof before));
  assert_int_equal(chdir(dir), 0);
  kiln_compile_options o = {0};
  kiln_compile_job job =
      job_for("#include \"here.h\"\nextern \"C\" __global__ void "
              "saxpy(int *p) { *p = FROM_HERE; }\n",
              "sm_90", &o);
  job.name = "cwd.cu";
  kiln_compiled out;
  kiln_status st = compile(&job, &out);
  assert_int_equal(chdir(before), 0);
  remove(here);
  rmdir(dir);
  assert_int_equal(st, KILN_ERROR_COMPILE);
  assert_non_null(out.log);
  assert_non_null(strstr(out.log, "cwd.cu(1)"));
  assert_null(strstr(out.log, "/proc/"));
  free_compiled(&out);
}

/* C++ names: a template instantiated by its name expression and a kernel
 * in a namespace come back with NVRTC's lowered names, which the cubin
 * holds; an expression that names no kernel fails in words. */
static void name_expressions_give_lowered_names(void **state) {
  (void)state;
  static const char text[] =
      "template <typename T>\n"
      "__global__ void axpy_t(T *y, const T *x, T a, unsigned n) {\n"
      "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = a * x[i] + y[i];\n"
      "}\n"
      "namespace ops {\n"
      "__global__ void scale(float *y, float a) { y[threadIdx.x] *= a; }\n"
      "}\n";
  const char *names[] = {"axpy_t<float>", "axpy_t<double>", "ops::scale"};
  kiln_compile_options o = {.name_expressions = names,
                            .name_expression_count = 3};
  kiln_compile_job job = job_for(text, "sm_90", &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_OK);
  assert_int_equal(out.name_count, 3);
  for (size_t i = 0; i < 3; i++) {
    print_message("  %s -> %s\n", out.names[i].expression,
                  out.names[i].lowered);
    assert_string_equal(out.names[i].expression, names[i]);
    assert_true(strncmp(out.names[i].lowered, "_Z", 2) == 0);
    assert_true(contains(out.image, out.image_size, out.names[i].lowered));
  }
  assert_string_equal(out.names[0].lowered, "_Z6axpy_tIfEvPT_PKS0_S0_j");
  assert_string_not_equal(out.names[0].lowered, out.names[1].lowered);
  kiln_name_pairs_free(out.names, out.name_count);
  out.names = NULL;
  free_compiled(&out);

  const char *wrong[] = {"axpy_t<float"};
  o.name_expressions = wrong;
  o.name_expression_count = 1;
  kiln_status st = compile(&job, &out);
  assert_int_not_equal(st, KILN_OK);
  kiln_name_pairs_free(out.names, out.name_count);
  out.names = NULL;
  free_compiled(&out);
}

static void cubin_and_ptx(void **state) {
  (void)state;
  const char *defines[] = {"OFFSET=0.5f"};
  kiln_header headers[] = {{"scale.h", scale_h}};
  kiln_compile_options o = {.defines = defines,
                            .define_count = 1,
                            .headers = headers,
                            .header_count = 1};
  kiln_compile_job job = job_for(saxpy_text, "sm_90", &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_OK);
  assert_int_equal(out.format, KILN_IMAGE_CUBIN);
  assert_true(out.image_size > 4);
  assert_memory_equal(out.image, "\177ELF", 4);
  assert_true(contains(out.image, out.image_size, "saxpy"));
  free_compiled(&out);

  job.target = "compute_90";
  assert_int_equal(compile(&job, &out), KILN_OK);
  assert_int_equal(out.format, KILN_IMAGE_PTX);
  const char *ptx = out.image;
  assert_int_equal(ptx[out.image_size - 1], '\0');
  assert_int_equal(strlen(ptx), out.image_size - 1);
  assert_non_null(strstr(ptx, ".entry saxpy"));
  assert_non_null(strstr(ptx, ".target sm_90"));
  /* OFFSET's 0.5f, as PTX writes it. */
  assert_non_null(strstr(ptx, "0f3F000000"));
  free_compiled(&out);
}

static void optimisation_and_fast_math(void **state) {
  (void)state;
  const char *defines[] = {"OFFSET=1.0f"};
  kiln_header headers[] = {{"scale.h", scale_h}};
  kiln_compile_options o = {.defines = defines,
                            .define_count = 1,
                            .headers = headers,
                            .header_count = 1};
  kiln_compile_job job = job_for(saxpy_text, "sm_80", &o);
  kiln_compiled out;
  for (int level = KILN_OPTIMIZE_DEFAULT; level <= KILN_OPTIMIZE_SPEED;
       level++) {
    o.optimization = (kiln_optimization)level;
    o.flags = level == KILN_OPTIMIZE_SPEED ? KILN_COMPILE_FAST_MATH : 0;
    assert_int_equal(compile(&job, &out), KILN_OK);
    assert_int_equal(out.format, KILN_IMAGE_CUBIN);
    free_compiled(&out);
  }
}

static void a_syntax_error_gives_file_and_line(void **state) {
  (void)state;
  static const char text[] = "extern \"C\" __global__ void saxpy(float *y) {\n"
                             "  unsigned i = threadIdx.x;\n"
                             "  y[i] = ;\n"
                             "}\n";
  kiln_compile_options o = {0};
  kiln_compile_job job = job_for(text, "sm_90", &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_ERROR_COMPILE);
  assert_null(out.image);
  assert_non_null(out.log);
  assert_non_null(strstr(out.log, "saxpy.cu(3): error"));
  assert_non_null(strstr(kiln_last_error(), "NVRTC could not compile "
                                            "saxpy.cu for sm_90: saxpy.cu(3)"));
  free_compiled(&out);

  /* The working directory is not searched, only headers and dirs. */
  static const char includes[] = "#include \"no_such_kiln_header.h\"\n";
  job.text = includes;
  assert_int_equal(compile(&job, &out), KILN_ERROR_COMPILE);
  assert_non_null(strstr(out.log, "no_such_kiln_header.h"));
  free_compiled(&out);
}

static void raw_options_and_targets(void **state) {
  (void)state;
  const char *defines[] = {"OFFSET=1.0f"};
  kiln_header headers[] = {{"scale.h", scale_h}};
  const char *raw[] = {"--bogus-kiln-option"};
  kiln_compile_options o = {.defines = defines,
                            .define_count = 1,
                            .headers = headers,
                            .header_count = 1,
                            .cuda_options = raw,
                            .cuda_option_count = 1};
  kiln_compile_job job = job_for(saxpy_text, "sm_90", &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(kiln_last_error(), "--bogus-kiln-option"));
  assert_null(out.image);
  free_compiled(&out);

  /* Valid raw options pass through. */
  const char *valid[] = {"-lineinfo", "--std=c++17"};
  o.cuda_options = valid;
  o.cuda_option_count = 2;
  assert_int_equal(compile(&job, &out), KILN_OK);
  free_compiled(&out);

  static const char *const wrong[] = {"sm90", "gfx90a", "sm_", "compute_x",
                                      "sm_90b", "spv1.5"};
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    job.target = wrong[i];
    assert_int_equal(compile(&job, &out), KILN_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(kiln_last_error(), wrong[i]));
    assert_null(out.image);
  }
}

static kiln_status target_for(const char *arch, char *target) {
  kiln_context ctx;
  memset(&ctx, 0, sizeof ctx);
  snprintf(ctx.properties.architecture, sizeof ctx.properties.architecture,
           "%s", arch);
  return kiln_cuda_ops.compiler->compile_target(&ctx, target, 64);
}

/* NVRTC 13.0 compiles for sm_75 to sm_121; the expectations below follow
 * from that list and hold for any NVRTC that has sm_80 and sm_90. */
static void targets_for_devices(void **state) {
  (void)state;
  char target[64];
  assert_int_equal(target_for("sm_90", target), KILN_OK);
  assert_string_equal(target, "sm_90");
  assert_int_equal(target_for("sm_80", target), KILN_OK);
  assert_string_equal(target, "sm_80");
  /* A device between two known ones, or past all, gets PTX of the newest
   * below it. */
  assert_int_equal(target_for("sm_91", target), KILN_OK);
  assert_string_equal(target, "compute_90");
  assert_int_equal(target_for("sm_999", target), KILN_OK);
  assert_int_equal(strncmp(target, "compute_", 8), 0);
  assert_true(atoi(target + 8) >= 90);
  /* Older than anything NVRTC knows. */
  assert_int_equal(target_for("sm_20", target), KILN_ERROR_UNSUPPORTED);
  assert_non_null(strstr(kiln_last_error(), "sm_20"));
  assert_int_equal(target_for("gfx90a", target), KILN_ERROR_BACKEND);

  /* A driver of an older major version than NVRTC's loads none of its
   * code; one as new takes it. */
  int major = atoi(strstr(description, "NVRTC ") + 6);
  kiln_cuda_api.driver_version = (major - 1) * 1000 + 80;
  assert_int_equal(target_for("sm_90", target), KILN_ERROR_UNSUPPORTED);
  assert_non_null(strstr(kiln_last_error(), "driver"));
  kiln_cuda_api.driver_version = major * 1000;
  assert_int_equal(target_for("sm_90", target), KILN_OK);
  kiln_cuda_api.driver_version = 0;
}

int main(void) {
  /* First with a library that is not there, then as the environment has
   * it: the failure must not stick. */
  const char *original = getenv("KILN_NVRTC_LIBRARY");
  char *saved = original ? strdup(original) : NULL;
  setenv("KILN_NVRTC_LIBRARY", missing_path, 1);
  missing_status = kiln_cuda_ops.compiler->compiler_load(missing_reason,
                                                         sizeof missing_reason);
  if (saved)
    setenv("KILN_NVRTC_LIBRARY", saved, 1);
  else
    unsetenv("KILN_NVRTC_LIBRARY");
  free(saved);
  if (kiln_cuda_ops.compiler->compiler_load(description, sizeof description) !=
      KILN_OK) {
    printf("skipped: NVRTC cannot be loaded here: %s\n", description);
    return 77;
  }
  printf("compiler: %s\n", description);

  const struct CMUnitTest tests[] = {
      cmocka_unit_test(failure_is_reported_and_not_cached),
      cmocka_unit_test(description_names_version_and_file),
      cmocka_unit_test(cubin_and_ptx),
      cmocka_unit_test(toolkit_headers_are_found),
      cmocka_unit_test(the_working_directory_is_not_searched),
      cmocka_unit_test(name_expressions_give_lowered_names),
      cmocka_unit_test(optimisation_and_fast_math),
      cmocka_unit_test(a_syntax_error_gives_file_and_line),
      cmocka_unit_test(raw_options_and_targets),
      cmocka_unit_test(targets_for_devices),
  };
  return cmocka_run_group_tests_name("cuda-compiler", tests, NULL, NULL);
}
