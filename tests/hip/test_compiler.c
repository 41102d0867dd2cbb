/* The HIP backend's run-time compiler (backends/hip/compiler.c) on HIPRTC,
 * called through the backend's ops with no device: loading and its
 * failure, code objects from HIP and from CUDA text with defines and
 * in-memory headers, logs under the caller's names, options, targets,
 * several threads at once, and the rewriting of comgr's paths in logs.
 * Exits 77 when HIPRTC cannot be loaded. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backends/hip/hip.h"

/* What main() saw with KILN_HIPRTC_LIBRARY naming no file, then unset. */
static kiln_status missing_status;
/* As large as the core's buffer for it. */
static char missing_reason[512];
static char description[512];

static const char missing_path[] = "/nonexistent/libhiprtc.so.6";

static const char saxpy_text[] =
    "#include \"scale.h\"\n"
    "extern \"C\" __global__ void saxpy(float *y, const float *x, float a,\n"
    "                                  unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = SCALE(a) * x[i] + y[i] + OFFSET;\n"
    "}\n";
static const char scale_h[] = "#define SCALE(a) ((a) * 2.0f)\n";

/* The CUDA spellings HIPRTC compiles as they are (measured on HIP 5.2). */
static const char cuda_text[] =
    "extern \"C\" __global__ void reduce(float *out, const float *in,\n"
    "                                   unsigned n) {\n"
    "  __shared__ float part[256];\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  part[threadIdx.x] = i < n ? __ldg(in + i) : 0.0f;\n"
    "  __syncthreads();\n"
    "  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {\n"
    "    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (threadIdx.x == 0) atomicAdd(out, part[0] * gridDim.x / gridDim.x);\n"
    "}\n";

static kiln_compile_job job_for(kiln_source_language language,
                                const char *name, const char *text,
                                const char *target,
                                const kiln_compile_options *o) {
  return (kiln_compile_job){.language = language,
                            .name = name,
                            .text = text,
                            .entry_point = "saxpy",
                            .target = target,
                            .options = o};
}

static kiln_status compile(const kiln_compile_job *job, kiln_compiled *out) {
  memset(out, 0, sizeof *out);
  return kiln_hip_ops.compiler->compile(job, out);
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

/* A code object (ELF) or an offload bundle. */
static void assert_code_object(const kiln_compiled *out, const char *entry) {
  assert_int_equal(out->format, KILN_IMAGE_HIP_CODE_OBJECT);
  assert_true(out->image_size > 24);
  static const char bundle[] = "__CLANG_OFFLOAD_BUNDLE__";
  assert_true(memcmp(out->image, "\177ELF", 4) == 0 ||
              memcmp(out->image, bundle, sizeof bundle - 1) == 0);
  assert_true(contains(out->image, out->image_size, entry));
}

static void failure_is_reported_and_not_cached(void **state) {
  (void)state;
  assert_int_equal(missing_status, KILN_ERROR_UNAVAILABLE);
  assert_non_null(strstr(missing_reason, missing_path));
  assert_non_null(strstr(missing_reason, "libamdhip64"));
  assert_non_null(strstr(missing_reason, "KILN_HIPRTC_LIBRARY"));
}

static void description_names_version_and_file(void **state) {
  (void)state;
  assert_non_null(strstr(description, "HIPRTC"));
  assert_non_null(strstr(description, "(/"));
  char again[512];
  assert_int_equal(kiln_hip_ops.compiler->compiler_load(again, sizeof again),
                   KILN_OK);
  assert_string_equal(again, description);
}

static void hip_and_cuda_text(void **state) {
  (void)state;
  const char *defines[] = {"OFFSET=0.5f"};
  kiln_header headers[] = {{"scale.h", scale_h}};
  kiln_compile_options o = {.defines = defines,
                            .define_count = 1,
                            .headers = headers,
                            .header_count = 1};
  kiln_compile_job job =
      job_for(KILN_SOURCE_HIP, "saxpy.hip", saxpy_text, "gfx90a", &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_OK);
  assert_code_object(&out, "saxpy");
  free_compiled(&out);

  /* Optimisation levels, fast math, and a target with features. */
  job.target = "gfx90a:xnack-";
  for (int level = KILN_OPTIMIZE_NONE; level <= KILN_OPTIMIZE_SPEED;
       level++) {
    o.optimization = (kiln_optimization)level;
    o.flags = level == KILN_OPTIMIZE_SPEED ? KILN_COMPILE_FAST_MATH : 0;
    assert_int_equal(compile(&job, &out), KILN_OK);
    assert_code_object(&out, "saxpy");
    free_compiled(&out);
  }

  kiln_compile_options none = {0};
  kiln_compile_job cuda =
      job_for(KILN_SOURCE_CUDA, "reduce.cu", cuda_text, "gfx906", &none);
  assert_int_equal(compile(&cuda, &out), KILN_OK);
  assert_code_object(&out, "reduce");
  free_compiled(&out);

  /* What CUDA text may not use: the CUDA runtime's headers. */
  static const char runtime_text[] = "#include <cuda_runtime.h>\n"
                                     "extern \"C\" __global__ void k() {}\n";
  cuda.text = runtime_text;
  assert_int_equal(compile(&cuda, &out), KILN_ERROR_COMPILE);
  assert_non_null(strstr(out.log, "reduce.cu:1:"));
  assert_non_null(strstr(out.log, "cuda_runtime.h"));
  free_compiled(&out);
}

static void a_syntax_error_gives_file_and_line(void **state) {
  (void)state;
  static const char text[] = "extern \"C\" __global__ void saxpy(float *y) {\n"
                             "  unsigned i = threadIdx.x;\n"
                             "  y[i] = ;\n"
                             "}\n";
  kiln_compile_options o = {0};
  kiln_compile_job job = job_for(KILN_SOURCE_HIP, "saxpy.hip", text, "gfx90a",
                                 &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_ERROR_COMPILE);
  assert_null(out.image);
  assert_non_null(out.log);
  if (!strstr(out.log, "saxpy.hip:3:") || strstr(out.log, "comgr-"))
    fail_msg("the log should name saxpy.hip:3 and no comgr path:\n%s",
             out.log);
  assert_non_null(strstr(kiln_last_error(), "HIPRTC could not compile "
                                            "saxpy.hip for gfx90a: "));
  assert_non_null(strstr(kiln_last_error(), "saxpy.hip:3:"));
  free_compiled(&out);

  /* An error in an in-memory header names the header. */
  static const char includer[] = "#include \"bad.h\"\n"
                                 "extern \"C\" __global__ void k() {}\n";
  kiln_header headers[] = {{"bad.h", "#define X 1\nint x = ;\n"}};
  o.headers = headers;
  o.header_count = 1;
  job.text = includer;
  assert_int_equal(compile(&job, &out), KILN_ERROR_COMPILE);
  assert_non_null(strstr(out.log, "bad.h:2:"));
  assert_non_null(strstr(out.log, "saxpy.hip:1"));
  assert_null(strstr(out.log, "comgr-"));
  free_compiled(&out);
}

static void raw_options_and_targets(void **state) {
  (void)state;
  const char *defines[] = {"OFFSET=1.0f"};
  kiln_header headers[] = {{"scale.h", scale_h}};
  const char *raw[] = {"-fkiln-bogus"};
  kiln_compile_options o = {.defines = defines,
                            .define_count = 1,
                            .headers = headers,
                            .header_count = 1,
                            .hip_options = raw,
                            .hip_option_count = 1};
  kiln_compile_job job =
      job_for(KILN_SOURCE_HIP, "saxpy.hip", saxpy_text, "gfx90a", &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(kiln_last_error(), "\"-fkiln-bogus\""));
  assert_non_null(out.log);
  assert_null(out.image);
  free_compiled(&out);

  const char *valid[] = {"-std=c++17", "-Wall"};
  o.hip_options = valid;
  o.hip_option_count = 2;
  assert_int_equal(compile(&job, &out), KILN_OK);
  free_compiled(&out);

  /* Not gfx names at all; then one that no ROCm knows, which HIP 5.2's
   * HIPRTC would crash on. */
  static const char *const wrong[] = {"sm90", "gfx", "gfx90a:xnack",
                                      "gfx90a:", "spv1.5", "gfx9999"};
  /* The unknown gfx name is caught only where comgr could be asked. */
  size_t count = sizeof wrong / sizeof wrong[0] -
                 (strstr(description, "comgr ") ? 0 : 1);
  for (size_t i = 0; i < count; i++) {
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
  return kiln_hip_ops.compiler->compile_target(&ctx, target, 64);
}

static void targets_for_devices(void **state) {
  (void)state;
  char target[64];
  assert_int_equal(target_for("gfx90a", target), KILN_OK);
  assert_string_equal(target, "gfx90a");
  /* The HIP-on-CUDA test shim's devices, for its HIPRTC. */
  assert_int_equal(target_for("sm_90", target), KILN_OK);
  assert_string_equal(target, "sm_90");
  if (strstr(description, "comgr ")) {
    assert_int_equal(target_for("gfx9999", target), KILN_ERROR_UNSUPPORTED);
    assert_non_null(strstr(kiln_last_error(), "gfx9999"));
  }
  assert_int_equal(target_for("llvmpipe", target), KILN_ERROR_UNSUPPORTED);
}

/* Compiles on several threads at once; compiler.c serialises them. */
static void *compile_on_a_thread(void *arg) {
  const char *defines[] = {arg};
  kiln_header headers[] = {{"scale.h", scale_h}};
  kiln_compile_options o = {.defines = defines,
                            .define_count = 1,
                            .headers = headers,
                            .header_count = 1};
  kiln_compile_job job =
      job_for(KILN_SOURCE_HIP, "saxpy.hip", saxpy_text, "gfx90a", &o);
  kiln_compiled out;
  bool ok = compile(&job, &out) == KILN_OK && out.image_size > 24;
  free_compiled(&out);
  return ok ? arg : NULL;
}

static void several_threads(void **state) {
  (void)state;
  static char offsets[3][32];
  pthread_t threads[3];
  for (int t = 0; t < 3; t++) {
    snprintf(offsets[t], sizeof offsets[t], "OFFSET=%d.0f", t);
    assert_int_equal(pthread_create(&threads[t], NULL, compile_on_a_thread,
                                    offsets[t]),
                     0);
  }
  for (int t = 0; t < 3; t++) {
    void *result = NULL;
    assert_int_equal(pthread_join(threads[t], &result), 0);
    assert_ptr_equal(result, offsets[t]);
  }
}

static void comgr_paths_in_logs(void **state) {
  (void)state;
  static const char log[] =
      "In file included from /tmp/comgr-a1b2c3/input/CompileSource:1:\n"
      "/tmp/comgr-a1b2c3/include/common.h:2:9: error: expected expression\n"
      "warning: /tmp/comgr-a1b2c3/input/CompileSource: 'linker' input "
      "unused\n"
      "/home/me/inc/sub/b.h:1:9: error: x\n"
      "/odd/comgr-z/elsewhere: note\n";
  static const char want[] =
      "In file included from saxpy.hip:1:\n"
      "common.h:2:9: error: expected expression\n"
      "warning: saxpy.hip: 'linker' input unused\n"
      "/home/me/inc/sub/b.h:1:9: error: x\n"
      "/odd/comgr-z/elsewhere: note\n";
  char *named = kiln_hip_log_with_names(log, "saxpy.hip");
  assert_non_null(named);
  assert_string_equal(named, want);
  free(named);
  /* A name longer than the paths it replaces. */
  static const char longer[] = "a very long name for a kernel source.hip";
  named = kiln_hip_log_with_names("/t/comgr-1/input/CompileSource:3:1: e\n"
                                  "/t/comgr-1/input/CompileSource:4:1: e\n",
                                  longer);
  assert_non_null(named);
  assert_string_equal(named,
                      "a very long name for a kernel source.hip:3:1: e\n"
                      "a very long name for a kernel source.hip:4:1: e\n");
  free(named);
  /* Newer comgr keeps the source's own name in its input folder. */
  named = kiln_hip_log_with_names(
      "/tmp/comgr-9f0e1d/input/saxpy.hip:3:10: error: expected expression\n",
      "saxpy.hip");
  assert_non_null(named);
  assert_string_equal(named, "saxpy.hip:3:10: error: expected expression\n");
  free(named);
  named = kiln_hip_log_with_names("nothing to rename\n", "x.hip");
  assert_string_equal(named, "nothing to rename\n");
  free(named);
}

int main(void) {
  /* First with a library that is not there, then as the environment has
   * it: the failure must not stick. */
  const char *original = getenv("KILN_HIPRTC_LIBRARY");
  char *saved = original ? strdup(original) : NULL;
  setenv("KILN_HIPRTC_LIBRARY", missing_path, 1);
  missing_status = kiln_hip_ops.compiler->compiler_load(missing_reason,
                                                        sizeof missing_reason);
  if (saved)
    setenv("KILN_HIPRTC_LIBRARY", saved, 1);
  else
    unsetenv("KILN_HIPRTC_LIBRARY");
  free(saved);
  if (kiln_hip_ops.compiler->compiler_load(description, sizeof description) !=
      KILN_OK) {
    printf("skipped: HIPRTC cannot be loaded here: %s\n", description);
    return 77;
  }
  printf("compiler: %s\n", description);

  const struct CMUnitTest tests[] = {
      cmocka_unit_test(failure_is_reported_and_not_cached),
      cmocka_unit_test(description_names_version_and_file),
      cmocka_unit_test(hip_and_cuda_text),
      cmocka_unit_test(a_syntax_error_gives_file_and_line),
      cmocka_unit_test(raw_options_and_targets),
      cmocka_unit_test(targets_for_devices),
      cmocka_unit_test(several_threads),
      cmocka_unit_test(comgr_paths_in_logs),
  };
  return cmocka_run_group_tests_name("hip-compiler", tests, NULL, NULL);
}
