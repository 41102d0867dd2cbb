/* The Vulkan backend's run-time compiler (backends/vulkan/compiler.c) on
 * shaderc, called through the backend's ops with no device: loading and
 * its failure, SPIR-V with the asked entry point, defines, headers and
 * include directories, logs, options, targets, several threads at once,
 * and the SPIR-V entry-point renaming on hand-made modules. Exits 77 when
 * shaderc cannot be loaded. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backends/vulkan/vulkan.h"

/* What main() saw with KILN_SHADERC_LIBRARY naming no file, then unset. */
static kiln_status missing_status;
/* As large as the core's buffer for it. */
static char missing_reason[512];
static char description[512];

static const char missing_path[] = "/nonexistent/libshaderc.so.1";

/* A compute shader whose block size comes from a define and whose
 * arguments come from an in-memory header. */
static const char saxpy_text[] =
    "#version 450\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "#include \"args.glsl\"\n"
    "layout(local_size_x = BLOCK) in;\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < args.n) args.y.v[i] += args.a * args.x.v[i];\n"
    "}\n";
static const char args_glsl[] =
    "layout(buffer_reference, std430) buffer F32 { float v[]; };\n"
    "layout(push_constant, std430) uniform Args {\n"
    "  F32 y; F32 x; float a; uint n;\n"
    "} args;\n";

static kiln_compile_job job_for(const char *name, const char *text,
                                const char *entry,
                                const kiln_compile_options *o) {
  return (kiln_compile_job){.language = KILN_SOURCE_GLSL,
                            .name = name,
                            .text = text,
                            .entry_point = entry,
                            .target = "spv1.5",
                            .options = o};
}

static void free_compiled(kiln_compiled *c) {
  free(c->image);
  free(c->log);
  memset(c, 0, sizeof *c);
}

static kiln_status compile(const kiln_compile_job *job, kiln_compiled *out) {
  memset(out, 0, sizeof *out);
  return kiln_vulkan_ops.compiler->compile(job, out);
}

static void failure_is_reported_and_not_cached(void **state) {
  (void)state;
  assert_int_equal(missing_status, KILN_ERROR_UNAVAILABLE);
  assert_non_null(strstr(missing_reason, missing_path));
  assert_non_null(strstr(missing_reason, "libshaderc1"));
  assert_non_null(strstr(missing_reason, "KILN_SHADERC_LIBRARY"));
}

static void description_names_version_and_file(void **state) {
  (void)state;
  assert_non_null(strstr(description, "shaderc, SPIR-V 1."));
  assert_non_null(strstr(description, "libshaderc"));
  assert_non_null(strstr(description, " bytes, "));
  char again[512];
  assert_int_equal(kiln_vulkan_ops.compiler->compiler_load(again, sizeof again),
                   KILN_OK);
  assert_string_equal(again, description);
}

static void defines_headers_and_the_entry_point(void **state) {
  (void)state;
  const char *defines[] = {"BLOCK=64"};
  kiln_header headers[] = {{"args.glsl", args_glsl}};
  kiln_compile_options o = {.defines = defines,
                            .define_count = 1,
                            .headers = headers,
                            .header_count = 1};
  kiln_compile_job job = job_for("saxpy.comp", saxpy_text, "saxpy", &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_OK);
  assert_int_equal(out.format, KILN_IMAGE_SPIRV);
  assert_true(out.image_size >= 20 && out.image_size % 4 == 0);
  const uint32_t *words = out.image;
  assert_int_equal(words[0], 0x07230203u);
  assert_int_equal(words[1], 0x00010500u);
  kiln_vulkan_spirv_info info;
  assert_int_equal(kiln_vulkan_spirv_reflect(out.image, out.image_size, 0,
                                             &info),
                   KILN_OK);
  assert_int_equal(info.entry_point_count, 1);
  assert_string_equal(info.entry_points[0].name, "saxpy");
  assert_int_equal(info.entry_points[0].local_size[0], 64);
  assert_int_equal(info.entry_points[0].push_constant_bytes, 24);
  kiln_vulkan_spirv_free(&info);
  free_compiled(&out);

  /* "main" is left as it is, and a define without a value is 1. */
  const char *one[] = {"BLOCK"};
  o.defines = one;
  job.entry_point = "main";
  assert_int_equal(compile(&job, &out), KILN_OK);
  assert_int_equal(kiln_vulkan_spirv_reflect(out.image, out.image_size, 0,
                                             &info),
                   KILN_OK);
  assert_string_equal(info.entry_points[0].name, "main");
  assert_int_equal(info.entry_points[0].local_size[0], 1);
  kiln_vulkan_spirv_free(&info);
  free_compiled(&out);
}

static void targets_and_optimisation(void **state) {
  (void)state;
  const char *defines[] = {"BLOCK=32"};
  kiln_header headers[] = {{"args.glsl", args_glsl}};
  kiln_compile_options o = {.defines = defines,
                            .define_count = 1,
                            .headers = headers,
                            .header_count = 1};
  kiln_compile_job job = job_for("saxpy.comp", saxpy_text, "saxpy", &o);
  kiln_compiled out;
  static const char *const targets[] = {"spv1.3", "spv1.4", "spv1.5"};
  static const uint32_t words1[] = {0x00010300u, 0x00010400u, 0x00010500u};
  for (size_t t = 0; t < 3; t++) {
    job.target = targets[t];
    for (int level = KILN_OPTIMIZE_DEFAULT; level <= KILN_OPTIMIZE_SPEED;
         level++) {
      o.optimization = (kiln_optimization)level;
      o.flags = level == KILN_OPTIMIZE_SPEED ? KILN_COMPILE_FAST_MATH : 0;
      assert_int_equal(compile(&job, &out), KILN_OK);
      assert_int_equal(((const uint32_t *)out.image)[1], words1[t]);
      free_compiled(&out);
    }
  }
  static const char *const wrong[] = {"spv1.9", "spv2.0", "vulkan1.2",
                                      "spv1.", "spv1.55"};
  for (size_t t = 0; t < sizeof wrong / sizeof wrong[0]; t++) {
    job.target = wrong[t];
    assert_int_equal(compile(&job, &out), KILN_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(kiln_last_error(), wrong[t]));
    assert_null(out.image);
  }
}

static void a_syntax_error_gives_file_and_line(void **state) {
  (void)state;
  kiln_compile_options o = {0};
  static const char text[] = "#version 450\n"
                             "layout(local_size_x = 1) in;\n"
                             "void main() {\n"
                             "  float x = ;\n"
                             "}\n";
  kiln_compile_job job = job_for("broken.comp", text, "broken", &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_ERROR_COMPILE);
  assert_null(out.image);
  assert_non_null(out.log);
  assert_non_null(strstr(out.log, "broken.comp:4:"));
  const char *message = kiln_last_error();
  assert_non_null(strstr(message, "shaderc could not compile broken.comp "
                                  "for spv1.5: broken.comp:4:"));
  free_compiled(&out);
}

static void glsl_options(void **state) {
  (void)state;
  /* An unknown extension is a warning, which -Werror makes an error and
   * -w silences. */
  static const char text[] = "#version 450\n"
                             "#extension GL_KILN_no_such_thing : enable\n"
                             "layout(local_size_x = 1) in;\n"
                             "void main() {}\n";
  kiln_compile_options o = {0};
  kiln_compile_job job = job_for("warn.comp", text, "warn", &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_OK);
  assert_non_null(out.log);
  assert_non_null(strstr(out.log, "warn.comp:2: warning"));
  free_compiled(&out);

  const char *werror[] = {"-Werror"};
  o.glsl_options = werror;
  o.glsl_option_count = 1;
  assert_int_equal(compile(&job, &out), KILN_ERROR_COMPILE);
  free_compiled(&out);

  const char *quiet[] = {"-g", "-w"};
  o.glsl_options = quiet;
  o.glsl_option_count = 2;
  assert_int_equal(compile(&job, &out), KILN_OK);
  assert_null(out.log);
  free_compiled(&out);

  const char *unknown[] = {"-g", "-O"};
  o.glsl_options = unknown;
  assert_int_equal(compile(&job, &out), KILN_ERROR_INVALID_ARGUMENT);
  const char *message = kiln_last_error();
  assert_non_null(strstr(message, "\"-O\""));
  assert_non_null(strstr(message, "-g"));
  assert_non_null(strstr(message, "-w"));
  assert_non_null(strstr(message, "-Werror"));
  assert_null(out.image);
  assert_null(out.log);
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  assert_int_equal(fputs(text, f) >= 0, 1);
  assert_int_equal(fclose(f), 0);
}

/* An include directory holding sub/outer.glsl, which includes inner.glsl
 * beside it; then a missing include. */
static void include_directories(void **state) {
  (void)state;
  char dir[] = "/tmp/kiln-vk-compiler-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char sub[64], outer[96], inner[96];
  snprintf(sub, sizeof sub, "%s/sub", dir);
  snprintf(outer, sizeof outer, "%s/outer.glsl", sub);
  snprintf(inner, sizeof inner, "%s/inner.glsl", sub);
  assert_int_equal(mkdir(sub, 0700), 0);
  write_text(outer, "#include \"inner.glsl\"\n");
  write_text(inner, "#define BLOCK 128\n");

  static const char text[] = "#version 450\n"
                             "#include \"sub/outer.glsl\"\n"
                             "layout(local_size_x = BLOCK) in;\n"
                             "void main() {}\n";
  const char *dirs[] = {"/nonexistent-kiln-include", dir};
  kiln_compile_options o = {.include_dirs = dirs, .include_dir_count = 2};
  kiln_compile_job job = job_for("inc.comp", text, "inc", &o);
  kiln_compiled out;
  assert_int_equal(compile(&job, &out), KILN_OK);
  kiln_vulkan_spirv_info info;
  assert_int_equal(kiln_vulkan_spirv_reflect(out.image, out.image_size, 0,
                                             &info),
                   KILN_OK);
  assert_int_equal(info.entry_points[0].local_size[0], 128);
  kiln_vulkan_spirv_free(&info);
  free_compiled(&out);

  /* An in-memory header wins over a file of the same name. */
  kiln_header headers[] = {{"sub/outer.glsl", "#define BLOCK 8\n"}};
  o.headers = headers;
  o.header_count = 1;
  assert_int_equal(compile(&job, &out), KILN_OK);
  assert_int_equal(kiln_vulkan_spirv_reflect(out.image, out.image_size, 0,
                                             &info),
                   KILN_OK);
  assert_int_equal(info.entry_points[0].local_size[0], 8);
  kiln_vulkan_spirv_free(&info);
  free_compiled(&out);

  /* The source's own directory is not searched, nor anything once the
   * directories are gone. */
  o.header_count = 0;
  o.include_dir_count = 1;
  assert_int_equal(compile(&job, &out), KILN_ERROR_COMPILE);
  assert_non_null(out.log);
  assert_non_null(strstr(out.log, "inc.comp:2:"));
  assert_non_null(strstr(out.log, "cannot find sub/outer.glsl"));
  assert_non_null(strstr(kiln_last_error(), "cannot find sub/outer.glsl"));
  free_compiled(&out);

  assert_int_equal(unlink(inner), 0);
  assert_int_equal(unlink(outer), 0);
  assert_int_equal(rmdir(sub), 0);
  assert_int_equal(rmdir(dir), 0);
}

static void targets_for_devices(void **state) {
  (void)state;
  static kiln_vulkan_physical phys;
  static kiln_vulkan_context ctx;
  ctx.phys = &phys;
  char target[64];
  /* kiln's instance asks for Vulkan 1.2, which caps a 1.3 device. */
  static const uint32_t apis[] = {VK_API_VERSION_1_3, VK_API_VERSION_1_2,
                                  VK_API_VERSION_1_1, VK_API_VERSION_1_0};
  static const char *const want[] = {"spv1.5", "spv1.5", "spv1.3",
                                     "spv1.0"};
  for (size_t i = 0; i < 4; i++) {
    phys.api_version = apis[i];
    assert_int_equal(kiln_vulkan_ops.compiler->compile_target(&ctx.base, target,
                                                              sizeof target),
                     KILN_OK);
    assert_string_equal(target, want[i]);
  }
}

/* Compiles on several threads at once through the one shared compiler. */
static void *compile_on_a_thread(void *arg) {
  const char *defines[] = {arg};
  kiln_header headers[] = {{"args.glsl", args_glsl}};
  kiln_compile_options o = {.defines = defines,
                            .define_count = 1,
                            .headers = headers,
                            .header_count = 1};
  kiln_compile_job job = job_for("saxpy.comp", saxpy_text, "saxpy", &o);
  kiln_compiled out;
  bool ok = true;
  for (int i = 0; i < 8 && ok; i++) {
    ok = compile(&job, &out) == KILN_OK && out.image_size > 20;
    free_compiled(&out);
  }
  return ok ? arg : NULL;
}

static void threads_share_the_compiler(void **state) {
  (void)state;
  static char blocks[4][16];
  pthread_t threads[4];
  for (int t = 0; t < 4; t++) {
    snprintf(blocks[t], sizeof blocks[t], "BLOCK=%d", 16 << t);
    assert_int_equal(pthread_create(&threads[t], NULL, compile_on_a_thread,
                                    blocks[t]),
                     0);
  }
  for (int t = 0; t < 4; t++) {
    void *result = NULL;
    assert_int_equal(pthread_join(threads[t], &result), 0);
    assert_ptr_equal(result, blocks[t]);
  }
}

/* A module by hand: the header, OpEntryPoint GLCompute %4 "main" %9 %10,
 * OpEntryPoint GLCompute %5 "other", and an OpNop. Strings are UTF-8 in
 * little-endian words, NUL-terminated and zero-padded. */
static const uint32_t hand_made[] = {
    0x07230203u, 0x00010500u, 0, 11, 0,
    (7u << 16) | 15, 5, 4, 0x6e69616du /* "main" */, 0, 9, 10,
    (5u << 16) | 15, 5, 5, 0x6568746fu /* "othe" */, 0x72u /* "r" */,
    (1u << 16) | 0,
};
#define HAND_MADE_WORDS (sizeof hand_made / sizeof hand_made[0])

static void renaming_entry_points(void **state) {
  (void)state;
  size_t count = HAND_MADE_WORDS;
  uint32_t *out = NULL;
  size_t out_count = 0;
  /* Longer: "saxpy_f32_kernel" takes five words with its NUL. */
  assert_int_equal(kiln_vulkan_spirv_rename_entry_point(
                       hand_made, count, "main", "saxpy_f32_kernel", &out,
                       &out_count),
                   KILN_OK);
  assert_int_equal(out_count, count + 3);
  assert_memory_equal(out, hand_made, 5 * sizeof *out);
  assert_int_equal(out[5], (10u << 16) | 15);
  assert_int_equal(out[6], 5);
  assert_int_equal(out[7], 4);
  assert_string_equal((const char *)(out + 8), "saxpy_f32_kernel");
  assert_int_equal(out[12] >> 24, 0); /* the NUL's word is padded */
  assert_int_equal(out[13], 9);
  assert_int_equal(out[14], 10);
  assert_memory_equal(out + 15, hand_made + 12, 6 * sizeof *out);
  free(out);

  /* Shorter, and the other entry point alone. */
  assert_int_equal(kiln_vulkan_spirv_rename_entry_point(
                       hand_made, count, "other", "k", &out, &out_count),
                   KILN_OK);
  assert_int_equal(out_count, count - 1);
  assert_memory_equal(out, hand_made, 12 * sizeof *out);
  assert_int_equal(out[12], (4u << 16) | 15);
  assert_int_equal(out[13], 5);
  assert_int_equal(out[14], 5);
  assert_int_equal(out[15], 0x6bu); /* "k" */
  assert_int_equal(out[16], (1u << 16) | 0);
  free(out);

  assert_int_equal(kiln_vulkan_spirv_rename_entry_point(
                       hand_made, count, "absent", "x", &out, &out_count),
                   KILN_ERROR_NOT_FOUND);
  uint32_t broken[HAND_MADE_WORDS];
  memcpy(broken, hand_made, sizeof broken);
  broken[0] = 0x03022307u;
  assert_int_equal(kiln_vulkan_spirv_rename_entry_point(
                       broken, count, "main", "x", &out, &out_count),
                   KILN_ERROR_INVALID_IMAGE);
  memcpy(broken, hand_made, sizeof broken);
  broken[5] = (60u << 16) | 15; /* runs past the end */
  assert_int_equal(kiln_vulkan_spirv_rename_entry_point(
                       broken, count, "main", "x", &out, &out_count),
                   KILN_ERROR_INVALID_IMAGE);
}

int main(void) {
  /* First with a library that is not there, then as the environment has
   * it: the failure must not stick. */
  const char *original = getenv("KILN_SHADERC_LIBRARY");
  char *saved = original ? strdup(original) : NULL;
  setenv("KILN_SHADERC_LIBRARY", missing_path, 1);
  missing_status = kiln_vulkan_ops.compiler->compiler_load(
      missing_reason, sizeof missing_reason);
  if (saved)
    setenv("KILN_SHADERC_LIBRARY", saved, 1);
  else
    unsetenv("KILN_SHADERC_LIBRARY");
  free(saved);
  if (kiln_vulkan_ops.compiler->compiler_load(description,
                                              sizeof description) != KILN_OK) {
    printf("skipped: shaderc cannot be loaded here: %s\n", description);
    return 77;
  }
  printf("compiler: %s\n", description);

  const struct CMUnitTest tests[] = {
      cmocka_unit_test(failure_is_reported_and_not_cached),
      cmocka_unit_test(description_names_version_and_file),
      cmocka_unit_test(defines_headers_and_the_entry_point),
      cmocka_unit_test(targets_and_optimisation),
      cmocka_unit_test(a_syntax_error_gives_file_and_line),
      cmocka_unit_test(glsl_options),
      cmocka_unit_test(include_directories),
      cmocka_unit_test(targets_for_devices),
      cmocka_unit_test(threads_share_the_compiler),
      cmocka_unit_test(renaming_entry_points),
  };
  return cmocka_run_group_tests_name("vulkan-compiler", tests, NULL, NULL);
}
