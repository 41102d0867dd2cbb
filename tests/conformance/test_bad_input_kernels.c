/* The bad-input suite's cases for modules, compiling from source and
 * files, launches and the built-in kernels (see bad_input.h;
 * test_bad_input.c runs them).
 *
 * Over 600 lines: a few lines per bad input of each function, and a
 * function's cases kept together. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bad_input.h"

/* ---- Images and files ---------------------------------------------------- */

static bool ready;
static kiln_module_image own;    /* the backend's test image (not PTX) */
static unsigned char *broken[5]; /* copies of it, mutated in images_init */
static char dir[32];             /* the files of the file cases */

static const uint32_t spirv_head[5] = {0x07230203u, 0x00010500u, 0, 8, 0};
static const char ptx_header[] =
    ".version 7.0\n.target sm_52\n.address_size 64\n";
static const char ptx_future[] =
    ".version 7.0\n.target sm_999\n.address_size 64\n";
static const char not_ptx[] = "this is not PTX";
static const char unterminated_ptx[4] = {'.', 'v', 'e', 'r'};
static const unsigned char zeros[64];
/* An ELF64 header for CUDA whose section headers lie past its end
 * (images_init). */
static unsigned char elf_cut[64];

static const char *const file_names[] = {"empty.comp",  "notes.txt",
                                         "cut.spv",     "garbage.spv",
                                         "broken.comp", "broken.cu"};

static void write_file(const char *name, const void *data, size_t size) {
  char path[96];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  assert_true(size == 0 || write(fd, data, size) == (ssize_t)size);
  close(fd);
}

/* The backend's own test image and broken copies of it: 0 to 3 with
 * SPIR-V's id bound, version, an instruction of 0 words and one running
 * past the end changed (0 is a fatbin's payload size, for CUDA); 4 all
 * zero bytes. */
static void images_init(void) {
  size_t n;
  const kiln_module_image *images = conf_images(&n);
  for (size_t i = 0; i < n && !own.data; i++)
    if (bad_own_format(images[i].format) && images[i].format != KILN_IMAGE_PTX)
      own = images[i];
  assert_non_null(own.data);
  assert_true(own.size >= 64);
  for (size_t i = 0; i < 5; i++) {
    broken[i] = conf_alloc(own.size);
    memcpy(broken[i], own.data, own.size);
  }
  ((uint32_t *)(void *)broken[0])[3] = 0xffffffffu;
  ((uint32_t *)(void *)broken[1])[1] = 0x00ff0000u;
  ((uint32_t *)(void *)broken[2])[5] &= 0xffffu;
  ((uint32_t *)(void *)broken[3])[5] |= 0xffff0000u;
  memset(broken[4], 0, own.size);
  memcpy(elf_cut, "\177ELF\2\1\1", 7); /* 64-bit, little-endian */
  elf_cut[18] = 190;                   /* EM_CUDA */
  elf_cut[41] = 0x10;                  /* section headers at byte 4096, */
  elf_cut[58] = 64;                    /* 64 bytes each, */
  elf_cut[60] = 10;                    /* 10 of them */
}

static void kernel_fixture_init(void) {
  bad_fixture_init();
  if (ready) return;
  images_init();
  snprintf(dir, sizeof dir, "/tmp/kiln-bad-XXXXXX");
  assert_non_null(mkdtemp(dir));
  write_file("empty.comp", "", 0);
  write_file("notes.txt", "not a kernel\n", 13);
  write_file("cut.spv", spirv_head, sizeof spirv_head);
  write_file("garbage.spv", "0123456789abcdef", 16);
  write_file("broken.comp", "#version 450\nnot glsl\n", 22);
  write_file("broken.cu", "not cuda\n", 9);
  ready = true;
}

void bad_kernel_fixture_release(void) {
  if (!ready) return;
  for (size_t i = 0; i < 5; i++) free(broken[i]);
  char path[96];
  for (size_t i = 0; i < sizeof file_names / sizeof file_names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, file_names[i]);
    unlink(path);
  }
  rmdir(dir);
  memset(&own, 0, sizeof own);
  ready = false;
}

/* ---- Modules ------------------------------------------------------------- */

static kiln_status create(kiln_image_format format, const void *data,
                          size_t size) {
  const kiln_module_image image = {format, data, size};
  return kiln_module_create(fx.ctx, &image, 1, &out.mod);
}

#define IMAGE(expected, what, format, data, size)                       \
  do {                                                                  \
    snprintf(bad_detail, sizeof bad_detail, "%s, %s", what,             \
             kiln_image_format_name(format));                           \
    BAD_AS("kiln_module_create", expected, create(format, data, size)); \
  } while (0)

void bad_module_calls(void **state) {
  (void)state;
  kernel_fixture_init();
  int before = bad_failures();
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_module_create(NULL, &own, 1, &out.mod));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_create(fx.dead_ctx, &own, 1, &out.mod));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_create(AS(kiln_context, fx.mod), &own, 1, &out.mod));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_create(fx.ctx, NULL, 1, &out.mod));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_create(fx.ctx, &own, 0, &out.mod));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_module_create(fx.ctx, &own, 1, NULL));
  const kiln_module_image with_empty[2] = {own, {own.format, NULL, 16}};
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_create(fx.ctx, with_empty, 2, &out.mod));
  const kiln_module_image with_broken[2] = {own, {own.format, zeros, 64}};
  BAD(KILN_ERROR_INVALID_IMAGE,
      kiln_module_create(fx.ctx, with_broken, 2, &out.mod));
  IMAGE(KILN_ERROR_INVALID_ARGUMENT, "format 0", (kiln_image_format)0, own.data,
        own.size);
  IMAGE(KILN_ERROR_INVALID_ARGUMENT, "format 99", (kiln_image_format)99,
        own.data, own.size);
  IMAGE(KILN_ERROR_INVALID_ARGUMENT, "NULL data", own.format, NULL, 64);
  IMAGE(KILN_ERROR_INVALID_ARGUMENT, "0 bytes", own.format, own.data, 0);
  /* Images of every other backend: none fits. */
  static const kiln_image_format formats[] = {
      KILN_IMAGE_SPIRV, KILN_IMAGE_PTX, KILN_IMAGE_CUBIN, KILN_IMAGE_FATBIN,
      KILN_IMAGE_HIP_CODE_OBJECT};
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
    /* HIP on NVIDIA may load CUDA's formats. */
    if (bad_own_format(formats[i]) ||
        (conf.backend == KILN_BACKEND_HIP && formats[i] != KILN_IMAGE_SPIRV))
      continue;
    IMAGE(KILN_ERROR_NO_IMAGE, "another backend's image", formats[i],
          formats[i] == KILN_IMAGE_PTX ? (const void *)ptx_header : spirv_head,
          formats[i] == KILN_IMAGE_PTX ? sizeof ptx_header : sizeof spirv_head);
  }
  /* Images of the backend's format that are broken. */
  IMAGE(KILN_ERROR_INVALID_IMAGE, "garbage", own.format, "0123456789abcdef",
        16);
  IMAGE(KILN_ERROR_INVALID_IMAGE, "zero bytes", own.format, broken[4],
        own.size);
  IMAGE(KILN_ERROR_INVALID_IMAGE, "its first 16 bytes", own.format, own.data,
        16);
  IMAGE(KILN_ERROR_INVALID_IMAGE, "its first half", own.format, own.data,
        own.size / 2 & ~(size_t)3);
  IMAGE(KILN_ERROR_INVALID_IMAGE, "one word short", own.format, own.data,
        own.size - 4);
  if (conf.backend == KILN_BACKEND_VULKAN) {
    IMAGE(KILN_ERROR_INVALID_IMAGE, "one byte short", own.format, own.data,
          own.size - 1);
    IMAGE(KILN_ERROR_INVALID_IMAGE, "the header only", own.format, spirv_head,
          sizeof spirv_head);
    IMAGE(KILN_ERROR_INVALID_IMAGE, "an id bound of 2^32-1", own.format,
          broken[0], own.size);
    IMAGE(KILN_ERROR_INVALID_IMAGE, "version 255.0", own.format, broken[1],
          own.size);
    IMAGE(KILN_ERROR_INVALID_IMAGE, "an instruction of 0 words", own.format,
          broken[2], own.size);
    IMAGE(KILN_ERROR_INVALID_IMAGE, "an instruction past the end", own.format,
          broken[3], own.size);
  }
  if (conf.backend == KILN_BACKEND_CUDA) {
    IMAGE(KILN_ERROR_INVALID_IMAGE, "a huge payload size", own.format,
          broken[0], own.size);
    IMAGE(KILN_ERROR_INVALID_IMAGE, "not PTX", KILN_IMAGE_PTX, not_ptx,
          sizeof not_ptx);
    IMAGE(KILN_ERROR_INVALID_IMAGE, "PTX with no NUL", KILN_IMAGE_PTX,
          unterminated_ptx, sizeof unterminated_ptx);
    IMAGE(KILN_ERROR_INVALID_IMAGE, "an ELF cut short", KILN_IMAGE_CUBIN,
          elf_cut, sizeof elf_cut);
    IMAGE(KILN_ERROR_INVALID_IMAGE, "SPIR-V called a fatbin", KILN_IMAGE_FATBIN,
          spirv_head, sizeof spirv_head);
    IMAGE(KILN_ERROR_NO_IMAGE, "PTX for sm_999 only", KILN_IMAGE_PTX,
          ptx_future, sizeof ptx_future);
  }
  if (conf.backend == KILN_BACKEND_HIP)
    IMAGE(KILN_ERROR_INVALID_IMAGE, "SPIR-V called a HIP code object",
          KILN_IMAGE_HIP_CODE_OBJECT, spirv_head, sizeof spirv_head);

  BAD(KILN_OK, kiln_module_destroy(NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_module_destroy(fx.builtin));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_module_destroy(fx.dead_mod));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_module_destroy(AS(kiln_module, fx.buf)));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_get_kernel(NULL, "conf_add_u32", &out.kernel));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_get_kernel(fx.dead_mod, "conf_add_u32", &out.kernel));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_get_kernel(AS(kiln_module, fx.stream), "conf_add_u32",
                             &out.kernel));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_get_kernel(fx.mod, NULL, &out.kernel));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_get_kernel(fx.mod, "", &out.kernel));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_get_kernel(fx.mod, "conf_add_u32", NULL));
  char long_name[300];
  memset(long_name, 'k', sizeof long_name - 1);
  long_name[sizeof long_name - 1] = '\0';
  static const char *const unknown[] = {"conf_no_such_kernel", "CONF_ADD_U32",
                                        "conf_add_u32 ", "kiln_fill"};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
    BAD(KILN_ERROR_NOT_FOUND,
        kiln_module_get_kernel(fx.mod, unknown[i], &out.kernel));
  BAD(KILN_ERROR_NOT_FOUND,
      kiln_module_get_kernel(fx.mod, long_name, &out.kernel));
  BAD(KILN_ERROR_NOT_FOUND,
      kiln_module_get_kernel(fx.builtin, "conf_add_u32", &out.kernel));
  BAD(KILN_ERROR_INVALID_HANDLE, EMPTY_OR(kiln_kernel_name(NULL)));
  BAD(KILN_ERROR_INVALID_HANDLE, EMPTY_OR(kiln_kernel_name(fx.dead_kernel)));
  BAD(KILN_ERROR_INVALID_HANDLE,
      EMPTY_OR(kiln_kernel_name(AS(kiln_kernel, fx.mod))));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_kernel_get_attributes(NULL, &out.attrs));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_kernel_get_attributes(fx.dead_kernel, &out.attrs));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_kernel_get_attributes(AS(kiln_kernel, fx.mod), &out.attrs));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_kernel_get_attributes(fx.add, NULL));
  BAD_AS("kiln_kernel_get_attributes", KILN_ERROR_INVALID_ARGUMENT,
         kiln_kernel_get_attributes_sized(fx.add, 4, &out.attrs));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_kernel_suggest_block_size(NULL, 0, &out.block, &out.grid));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_kernel_suggest_block_size(fx.dead_kernel, 0, &out.block,
                                     &out.grid));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_kernel_suggest_block_size(fx.add, 0, NULL, &out.grid));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_kernel_suggest_block_size(
          fx.add, conf.props.max_shared_memory_per_block_optin + 1,
          &out.block, &out.grid));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_kernel_suggest_block_size(fx.add, SIZE_MAX, &out.block,
                                     &out.grid));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_get_global(NULL, "conf_value", &out.buf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_get_global(fx.dead_mod, "conf_value", &out.buf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_get_global(AS(kiln_module, fx.ev), "conf_value", &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_get_global(fx.mod, NULL, &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_get_global(fx.mod, "", &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_get_global(fx.mod, "conf_value", NULL));
  BAD(conf.backend == KILN_BACKEND_VULKAN ? KILN_ERROR_UNSUPPORTED
                                          : KILN_ERROR_NOT_FOUND,
      kiln_module_get_global(fx.mod, "conf_no_such_variable", &out.buf));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_module_get_build_info(NULL, &out.info));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_get_build_info(fx.dead_mod, &out.info));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_get_build_info(AS(kiln_module, fx.hb), &out.info));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_module_get_build_info(fx.mod, NULL));
  bad_finish(before);
}

/* ---- Compiling from source and files --------------------------------------- */

static const kiln_source glsl_good = {
    KILN_SOURCE_GLSL,
    "#version 450\nlayout(local_size_x = 1) in;\n"
    "void main() {}\n",
    "good.comp", NULL};
static const kiln_source cuda_good = {
    KILN_SOURCE_CUDA, "extern \"C\" __global__ void good() {}\n", "good.cu",
    NULL};
static const kiln_source glsl_bad = {
    KILN_SOURCE_GLSL, "#version 450\nnot glsl\n", "bad.comp", NULL};
static const kiln_source cuda_bad = {KILN_SOURCE_CUDA, "not cuda\n", "bad.cu",
                                     NULL};

/* A compile the backend's compiler must refuse for an option it checks
 * itself (once loaded: else its absence is the answer). */
static kiln_status compiler_refuses(void) {
  kiln_status st = bad_compile_error();
  return st == KILN_ERROR_COMPILE ? KILN_ERROR_INVALID_ARGUMENT : st;
}

/* The backend's source that compiles, with options `o`. */
static kiln_status good_with(const kiln_compile_options *o) {
  const kiln_source *s =
      conf.backend == KILN_BACKEND_VULKAN ? &glsl_good : &cuda_good;
  return kiln_module_create_from_source(fx.ctx, s, 1, o, &out.mod);
}

#define OPTIONS(expected, ...)                       \
  BAD_AS("kiln_module_create_from_source", expected, \
         good_with(&(kiln_compile_options){__VA_ARGS__}))

static const char *const one_null[1] = {NULL};
static const char *const one_empty[1] = {""};
static const char *const no_name[1] = {"=1"};
static const char *const unknown_option[1] = {"--kiln-no-such-option"};

static char paths[8][96];

static const char *path_of(size_t i, const char *name) {
  snprintf(paths[i], sizeof paths[i], "%s/%s", dir, name);
  return paths[i];
}

#define FILES(expected, ...)                                              \
  BAD_AS("kiln_module_create_from_files", expected,                       \
         kiln_module_create_from_files(                                   \
             fx.ctx, (const char *const[]){__VA_ARGS__},                  \
             sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *), \
             NULL, &out.mod))

void bad_compile_calls(void **state) {
  (void)state;
  kernel_fixture_init();
  int before = bad_failures();
  const bool vulkan = conf.backend == KILN_BACKEND_VULKAN;
  const kiln_source *good = vulkan ? &glsl_good : &cuda_good;
  const kiln_source *mine_bad = vulkan ? &glsl_bad : &cuda_bad;
  const kiln_source *foreign = vulkan ? &cuda_bad : &glsl_bad;
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_create_from_source(NULL, good, 1, NULL, &out.mod));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_create_from_source(fx.dead_ctx, good, 1, NULL, &out.mod));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_create_from_source(AS(kiln_context, fx.ev), good, 1, NULL,
                                     &out.mod));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_create_from_source(fx.ctx, NULL, 1, NULL, &out.mod));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_create_from_source(fx.ctx, good, 0, NULL, &out.mod));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_create_from_source(fx.ctx, good, 1, NULL, NULL));
  const kiln_source sources[] = {
      {(kiln_source_language)0, good->text, NULL, NULL},
      {(kiln_source_language)99, good->text, NULL, NULL},
      {good->language, NULL, NULL, NULL},
      {good->language, good->text, "", NULL},
      {good->language, good->text, NULL, ""},
  };
  for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
    const kiln_source two[2] = {*good, sources[i]};
    snprintf(bad_detail, sizeof bad_detail, "source %zu of the table", i);
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_module_create_from_source(fx.ctx, &sources[i], 1, NULL, &out.mod));
    snprintf(bad_detail, sizeof bad_detail, "source %zu of the table", i);
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_module_create_from_source(fx.ctx, two, 2, NULL, &out.mod));
  }
  BAD(KILN_ERROR_NO_IMAGE,
      kiln_module_create_from_source(fx.ctx, foreign, 1, NULL, &out.mod));
  BAD(bad_compile_error(),
      kiln_module_create_from_source(fx.ctx, mine_bad, 1, NULL, &out.mod));
  if (vulkan)
    BAD(bad_compile_error(),
        kiln_module_create_from_source(
            fx.ctx, &(kiln_source){KILN_SOURCE_GLSL, "", "empty.comp", NULL}, 1,
            NULL, &out.mod));
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .define_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .defines = one_null, .define_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .defines = one_empty, .define_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .defines = no_name, .define_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .include_dir_count = 2);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .include_dirs = one_empty,
          .include_dir_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .header_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT,
          .headers = &(kiln_header){NULL, "int x;\n"}, .header_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .headers = &(kiln_header){"", "x"},
          .header_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .headers = &(kiln_header){"h.h", NULL},
          .header_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .optimization = (kiln_optimization)99);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .optimization = (kiln_optimization)-1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .flags = 1u << 7);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .target = "");
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .cuda_option_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .hip_options = one_null,
          .hip_option_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .glsl_options = one_empty,
          .glsl_option_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .name_expression_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .name_expressions = one_empty,
          .name_expression_count = 1);
  OPTIONS(KILN_ERROR_INVALID_ARGUMENT, .name_expressions = one_null,
          .name_expression_count = 1);
  OPTIONS(compiler_refuses(), .target = "not-a-target");
  OPTIONS(compiler_refuses(), .glsl_options = unknown_option,
          .glsl_option_count = vulkan, .cuda_options = unknown_option,
          .cuda_option_count = conf.backend == KILN_BACKEND_CUDA,
          .hip_options = unknown_option,
          .hip_option_count = conf.backend == KILN_BACKEND_HIP);

  const char *const one_path[1] = {path_of(0, "broken.comp")};
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_create_from_files(NULL, one_path, 1, NULL, &out.mod));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_create_from_files(fx.dead_ctx, one_path, 1, NULL, &out.mod));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_module_create_from_files(AS(kiln_context, fx.buf), one_path, 1, NULL,
                                    &out.mod));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_create_from_files(fx.ctx, NULL, 1, NULL, &out.mod));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_create_from_files(fx.ctx, one_path, 0, NULL, &out.mod));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_create_from_files(fx.ctx, one_path, 1, NULL, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_module_create_from_files(fx.ctx, one_path, 1,
                                    &(kiln_compile_options){.define_count = 1},
                                    &out.mod));
  FILES(KILN_ERROR_INVALID_ARGUMENT, NULL);
  FILES(KILN_ERROR_INVALID_ARGUMENT, "");
  FILES(KILN_ERROR_INVALID_ARGUMENT, one_path[0], NULL);
  FILES(KILN_ERROR_NOT_FOUND, "/nonexistent/kiln/missing.comp");
  FILES(KILN_ERROR_NOT_FOUND, one_path[0], "/nonexistent/kiln/missing.spv");
  FILES(KILN_ERROR_INVALID_ARGUMENT, "/");
  FILES(KILN_ERROR_INVALID_ARGUMENT, "/dev/null");
  FILES(KILN_ERROR_INVALID_ARGUMENT, "/proc/self/exe");
  FILES(KILN_ERROR_INVALID_ARGUMENT, path_of(1, "empty.comp"));
  FILES(KILN_ERROR_INVALID_ARGUMENT, path_of(2, "notes.txt"));
  const kiln_status spirv = bad_own_format(KILN_IMAGE_SPIRV)
                                ? KILN_ERROR_INVALID_IMAGE
                                : KILN_ERROR_NO_IMAGE;
  FILES(spirv, path_of(3, "cut.spv"));
  FILES(spirv, path_of(4, "garbage.spv"));
  FILES(vulkan ? bad_compile_error() : KILN_ERROR_NO_IMAGE, one_path[0]);
  FILES(vulkan ? KILN_ERROR_NO_IMAGE : bad_compile_error(),
        path_of(5, "broken.cu"));
  bad_finish(before);
}

/* ---- Launches ------------------------------------------------------------ */

/* Whether kiln knows kernel k's parameter list (kiln.h: always on Vulkan;
 * on CUDA and HIP from the driver or the image loaded). */
static bool list_known(const kiln_kernel *k) {
  return conf.backend == KILN_BACKEND_VULKAN ||
         k->param_count != KILN_PARAMS_UNKNOWN ||
         k->arg_bytes != KILN_ARG_BYTES_UNKNOWN;
}

/* An argument list that does not match kernel k: rejected wherever kiln
 * knows the list. Such cases launch a zero grid: nothing runs either way. */
static kiln_status mismatch(const kiln_kernel *k) {
  if (list_known(k)) return KILN_ERROR_INVALID_ARGUMENT;
  printf(
      "  bad-input: kiln cannot tell the parameters of %s on %s here: "
      "a launch that does not match them is accepted\n",
      kiln_kernel_name(k), kiln_backend_name(conf.backend));
  return KILN_OK;
}

/* conf_scalars(u64 *out, i32 a, const u32 *src, u32 b, f32 c, i64 d, u64 e,
 * f64 f, u32 *dst) as its GLSL declares it. */
static const kiln_param_kind scalars_glsl[9] = {
    KILN_PARAM_POINTER, KILN_PARAM_SINT,  KILN_PARAM_POINTER,
    KILN_PARAM_UINT,    KILN_PARAM_FLOAT, KILN_PARAM_SINT,
    KILN_PARAM_UINT,    KILN_PARAM_FLOAT, KILN_PARAM_POINTER};

/* What kiln.h promises for an argument of type t, of the right size, as
 * parameter i of conf_scalars: rejected unless of the parameter's class as
 * far as kiln can tell it (Vulkan: the push-constant block; CUDA and HIP:
 * the list kiln read, where a cubin tells sizes only). */
static kiln_status kind_expect(size_t i, kiln_arg_type t) {
  const kiln_kernel *k = fx.scalars;
  kiln_param_kind kind = scalars_glsl[i];
  if (conf.backend != KILN_BACKEND_VULKAN) {
    if (k->param_count == KILN_PARAMS_UNKNOWN || i >= k->param_count)
      return KILN_OK;
    kind = k->params[i].kind;
  }
  const bool is_float = t == KILN_ARG_F32 || t == KILN_ARG_F64;
  bool fits = true;
  switch (kind) {
  case KILN_PARAM_POINTER: fits = t == KILN_ARG_BUFFER; break;
  case KILN_PARAM_FLOAT: fits = is_float; break;
  case KILN_PARAM_SINT: fits = !is_float && t != KILN_ARG_BUFFER; break;
  case KILN_PARAM_INT:
  case KILN_PARAM_UINT: fits = !is_float; break;
  case KILN_PARAM_BITS: break;
  }
  return fits ? KILN_OK : KILN_ERROR_INVALID_ARGUMENT;
}

static const kiln_launch_config nothing = {{0, 1, 1}, {1, 1, 1}, 0};

/* conf_scalars on a zero grid with argument i replaced by a. */
static kiln_status scalars_with(size_t i, kiln_arg a) {
  kiln_arg args[9] = {kiln_arg_buffer(fx.buf, 0),
                      kiln_arg_i32(1),
                      kiln_arg_buffer(fx.buf, 64),
                      kiln_arg_u32(2),
                      kiln_arg_f32(3),
                      kiln_arg_i64(4),
                      kiln_arg_u64(5),
                      kiln_arg_f64(6.0),
                      kiln_arg_buffer(fx.buf, 128)};
  args[i] = a;
  return kiln_launch(NULL, fx.scalars, &nothing, args, 9);
}

/* A case of kiln_launch through a helper. */
#define LAUNCH(expected, ...) BAD_AS("kiln_launch", expected, __VA_ARGS__)

#define SCALAR(i, arg)                                    \
  do {                                                    \
    const kiln_arg a_ = arg;                              \
    LAUNCH(kind_expect(i, a_.type), scalars_with(i, a_)); \
  } while (0)

/* conf_add_u32 with n = 0 (it writes nothing even if run) and config c. */
static kiln_status add_with(kiln_launch_config c) {
  const kiln_arg args[3] = {kiln_arg_buffer(fx.buf, 0), kiln_arg_u32(0),
                            kiln_arg_u32(0)};
  return kiln_launch(NULL, fx.add, &c, args, 3);
}

#define CONFIG(expected, what, ...)                                         \
  do {                                                                      \
    kiln_launch_config c_ = {{1, 1, 1}, {1, 1, 1}, 0};                      \
    __VA_ARGS__;                                                            \
    snprintf(bad_detail, sizeof bad_detail,                                 \
             "%s: grid %ux%ux%u, block "                                    \
             "%ux%ux%u, %zu bytes of shared memory",                        \
             what, c_.grid.x, c_.grid.y, c_.grid.z, c_.block.x, c_.block.y, \
             c_.block.z, c_.shared_memory_bytes);                           \
    LAUNCH(expected, add_with(c_));                                         \
  } while (0)

void bad_launch_calls(void **state) {
  (void)state;
  kernel_fixture_init();
  int before = bad_failures();
  const kiln_launch_config one = {{1, 1, 1}, {1, 1, 1}, 0};
  const kiln_arg good[3] = {kiln_arg_buffer(fx.buf, 0), kiln_arg_u32(0),
                            kiln_arg_u32(0)};
  kiln_arg many[KILN_MAX_KERNEL_ARGS + 1];
  for (size_t i = 0; i < KILN_MAX_KERNEL_ARGS + 1; i++)
    many[i] = kiln_arg_u32(0);
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_launch(NULL, NULL, &one, good, 3));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_launch(NULL, fx.dead_kernel, &one, good, 3));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_launch(NULL, AS(kiln_kernel, fx.mod), &one, good, 3));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_launch(fx.other_stream, fx.add, &one, good, 3));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_launch(fx.dead_stream, fx.add, &one, good, 3));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_launch(AS(kiln_stream, fx.buf), fx.add, &one, good, 3));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_launch(NULL, fx.other_kernel, &one, good, 3));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_launch(NULL, fx.add, NULL, good, 3));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_launch(NULL, fx.add, &one, NULL, 3));
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_launch(NULL, fx.add, &one, many, KILN_MAX_KERNEL_ARGS + 1));
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_launch(NULL, fx.add, &one, good, SIZE_MAX));

  /* Argument lists: each argument checked, on a grid that runs nothing. */
  BAD(mismatch(fx.add), kiln_launch(NULL, fx.add, &nothing, NULL, 0));
  BAD(mismatch(fx.add), kiln_launch(NULL, fx.add, &nothing, good, 2));
  BAD(mismatch(fx.add),
      kiln_launch(NULL, fx.add, &nothing,
                  (kiln_arg[]){kiln_arg_buffer(fx.buf, 0), kiln_arg_u32(0),
                               kiln_arg_u32(0), kiln_arg_u32(0)},
                  4));
  BAD(mismatch(fx.add),
      kiln_launch(NULL, fx.add, &nothing,
                  (kiln_arg[]){kiln_arg_buffer(fx.buf, 0), kiln_arg_u64(0)},
                  2));
  BAD(mismatch(fx.add),
      kiln_launch(NULL, fx.add, &nothing,
                  (kiln_arg[]){kiln_arg_buffer(fx.buf, 0), kiln_arg_u64(0),
                               kiln_arg_u32(0)},
                  3));
  BAD(mismatch(fx.add),
      kiln_launch(
          NULL, fx.add, &nothing,
          (kiln_arg[]){kiln_arg_u32(0), kiln_arg_u32(0), kiln_arg_u32(0)}, 3));
  LAUNCH(mismatch(fx.scalars), scalars_with(1, kiln_arg_i64(1)));
  LAUNCH(mismatch(fx.scalars), scalars_with(7, kiln_arg_f32(1)));
  SCALAR(3, kiln_arg_f32(2));
  SCALAR(4, kiln_arg_u32(3));
  SCALAR(7, kiln_arg_u64(6));
  SCALAR(5, kiln_arg_f64(4.0));
  SCALAR(2, kiln_arg_u64(64));
  SCALAR(0, kiln_arg_f64(0.0));
  SCALAR(1, kiln_arg_f32(1));
  SCALAR(6, kiln_arg_f64(5.0));
  SCALAR(3, kiln_arg_i32(2));
  SCALAR(1, kiln_arg_u32(1));
  SCALAR(6, kiln_arg_buffer(fx.buf, 0));
  kiln_arg unknown_type = kiln_arg_u32(0);
  unknown_type.type = (kiln_arg_type)0;
  LAUNCH(KILN_ERROR_INVALID_ARGUMENT, scalars_with(3, unknown_type));
  unknown_type.type = (kiln_arg_type)99;
  LAUNCH(KILN_ERROR_INVALID_ARGUMENT, scalars_with(3, unknown_type));
  LAUNCH(KILN_ERROR_INVALID_HANDLE, scalars_with(0, kiln_arg_buffer(NULL, 0)));
  LAUNCH(KILN_ERROR_INVALID_HANDLE,
         scalars_with(2, kiln_arg_buffer(fx.dead_buf, 0)));
  LAUNCH(KILN_ERROR_INVALID_HANDLE,
         scalars_with(8, kiln_arg_buffer(AS(kiln_buffer, fx.hb), 0)));
  LAUNCH(KILN_ERROR_WRONG_CONTEXT,
         scalars_with(0, kiln_arg_buffer(fx.other_buf, 0)));
  LAUNCH(KILN_ERROR_OUT_OF_RANGE,
         scalars_with(2, kiln_arg_buffer(fx.buf, 1025)));
  LAUNCH(KILN_ERROR_OUT_OF_RANGE,
         scalars_with(8, kiln_arg_buffer(fx.buf, SIZE_MAX)));

  /* Shapes: each beyond one of the device's limits. */
  const kiln_device_properties *p = &conf.props;
  CONFIG(KILN_OK, "a zero grid", c_.grid.x = 0);
  CONFIG(KILN_OK, "a zero grid", c_.grid.y = 0);
  CONFIG(KILN_OK, "a zero grid", c_.grid.z = 0);
  CONFIG(KILN_ERROR_INVALID_ARGUMENT, "a zero block", c_.block.x = 0);
  CONFIG(KILN_ERROR_INVALID_ARGUMENT, "a zero block", c_.block.y = 0);
  CONFIG(KILN_ERROR_INVALID_ARGUMENT, "a zero block", c_.block.z = 0);
  CONFIG(KILN_ERROR_INVALID_ARGUMENT, "a zero block on a zero grid",
         c_.block.x = 0, c_.grid.x = 0);
  const uint32_t *most = p->max_block_size, *grid = p->max_grid_size;
  if (most[0] < UINT32_MAX)
    CONFIG(KILN_ERROR_OUT_OF_RANGE, "block.x", c_.block.x = most[0] + 1);
  if (most[1] < UINT32_MAX)
    CONFIG(KILN_ERROR_OUT_OF_RANGE, "block.y", c_.block.y = most[1] + 1);
  if (most[2] < UINT32_MAX)
    CONFIG(KILN_ERROR_OUT_OF_RANGE, "block.z", c_.block.z = most[2] + 1);
  CONFIG(KILN_ERROR_OUT_OF_RANGE, "block.x", c_.block.x = UINT32_MAX);
  CONFIG(KILN_ERROR_OUT_OF_RANGE, "threads per block", c_.block.x = most[0],
         c_.block.y = most[1], c_.block.z = most[2]);
  CONFIG(KILN_ERROR_OUT_OF_RANGE, "threads per block", c_.block.x = most[0],
         c_.block.y = p->max_threads_per_block / most[0] + 1);
  if (grid[0] < UINT32_MAX)
    CONFIG(KILN_ERROR_OUT_OF_RANGE, "grid.x", c_.grid.x = grid[0] + 1);
  if (grid[1] < UINT32_MAX)
    CONFIG(KILN_ERROR_OUT_OF_RANGE, "grid.y", c_.grid.y = grid[1] + 1);
  if (grid[2] < UINT32_MAX)
    CONFIG(KILN_ERROR_OUT_OF_RANGE, "grid.z", c_.grid.z = grid[2] + 1);
  size_t shared = p->max_shared_memory_per_block_optin;
  if (shared < p->max_shared_memory_per_block)
    shared = p->max_shared_memory_per_block;
  CONFIG(KILN_ERROR_OUT_OF_RANGE, "shared memory",
         c_.shared_memory_bytes = shared + 1);
  CONFIG(KILN_ERROR_OUT_OF_RANGE, "shared memory",
         c_.shared_memory_bytes = SIZE_MAX);
  const kiln_launch_config huge_1d = kiln_launch_config_1d(SIZE_MAX, 0);
  VALUE("kiln_launch_config_1d",
        huge_1d.grid.x == 0x7fffffffu && huge_1d.block.x == 256 &&
            huge_1d.grid.y == 1 && huge_1d.block.z == 1);
  const kiln_launch_config none_1d = kiln_launch_config_1d(0, 0);
  VALUE("kiln_launch_config_1d", none_1d.grid.x == 0 && none_1d.block.x == 256);
  const kiln_launch_config widest_1d =
      kiln_launch_config_1d(SIZE_MAX, UINT32_MAX);
  VALUE("kiln_launch_config_1d",
        widest_1d.grid.x == 0x7fffffffu && widest_1d.block.x == UINT32_MAX);
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_launch(NULL, fx.add, &widest_1d, good, 3));
  if (conf.backend == KILN_BACKEND_VULKAN) {
    /* Dynamic shared memory sizes the array of a kernel that declares one
     * by constant 3, and nothing else (kiln.h, kiln_launch_config). */
    CONFIG(KILN_ERROR_INVALID_ARGUMENT, "a kernel without shared memory",
           c_.shared_memory_bytes = 64);
    const kiln_launch_config no_shared = {{1, 1, 1}, {1, 1, 1}, 0};
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_launch(NULL, fx.rotate, &no_shared,
                    (kiln_arg[]){kiln_arg_buffer(fx.buf, 0),
                                 kiln_arg_buffer(fx.buf, 512), kiln_arg_u32(1)},
                    3));
  }
  bad_finish(before);
}

/* ---- Built-in kernels ---------------------------------------------------- */

void bad_builtin_calls(void **state) {
  (void)state;
  kernel_fixture_init();
  int before = bad_failures();
  kiln_buffer *b = fx.buf, *hb = AS(kiln_buffer, fx.hb);
  const size_t wide = (size_t)UINT32_MAX + 1, end = SIZE_MAX - 3;
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_context_builtin_module(NULL, &out.mod));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_builtin_module(fx.dead_ctx, &out.mod));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_builtin_module(AS(kiln_context, fx.hb), &out.mod));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_context_builtin_module(fx.ctx, NULL));

  BAD(KILN_ERROR_INVALID_HANDLE, kiln_axpy_f32(NULL, 4, 1, NULL, 0, b, 16));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_axpy_f32(NULL, 4, 1, b, 0, NULL, 16));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_axpy_f32(NULL, 4, 1, fx.dead_buf, 0, b, 16));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_axpy_f32(NULL, 4, 1, b, 0, hb, 16));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_axpy_f32(NULL, 4, 1, fx.other_buf, 0, b, 16));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_axpy_f32(NULL, 4, 1, b, 0, fx.other_buf, 0));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_axpy_f32(fx.other_stream, 4, 1, b, 0, b, 16));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_axpy_f32(fx.dead_stream, 4, 1, b, 0, b, 16));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_axpy_f32(NULL, 4, 1, b, 2, b, 16));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_axpy_f32(NULL, 4, 1, b, 0, b, 18));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_axpy_f32(NULL, 0, 1, b, 2, b, 16));
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_axpy_f32(NULL, 0, 1, b, 2048, b, 16));
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_axpy_f32(NULL, 257, 1, b, 0, fx.buf2, 0));
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_axpy_f32(NULL, wide, 1, b, 0, fx.buf2, 0));
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_axpy_f32(NULL, SIZE_MAX, 1, b, 0, b, 0));
  BAD(KILN_ERROR_OVERFLOW, kiln_axpy_f32(NULL, 2, 1, b, 0, fx.buf2, end));
  BAD(KILN_ERROR_OVERFLOW, kiln_axpy_f32(NULL, 2, 1, b, end, fx.buf2, 0));

  BAD(KILN_ERROR_INVALID_HANDLE, kiln_reduce_sum_f32(NULL, 4, b, 0, NULL, 0));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_reduce_sum_f32(NULL, 4, NULL, 0, b, 64));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_reduce_sum_f32(NULL, 4, b, 0, hb, 0));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_reduce_sum_f32(NULL, 4, fx.dead_buf, 0, b, 64));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_reduce_sum_f32(NULL, 4, fx.other_buf, 0, b, 64));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_reduce_sum_f32(fx.other_stream, 4, b, 0, b, 64));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_reduce_sum_f32(NULL, 4, b, 0, b, 66));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_reduce_sum_f32(NULL, 4, b, 6, b, 64));
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_reduce_sum_f32(NULL, 4, b, 0, b, 1024));
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_reduce_sum_f32(NULL, 257, b, 0, fx.buf2, 0));
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_reduce_sum_f32(NULL, wide, b, 0, fx.buf2, 0));
  BAD(KILN_ERROR_OVERFLOW, kiln_reduce_sum_f32(NULL, 2, b, end, fx.buf2, 0));
  BAD(KILN_ERROR_OVERFLOW, kiln_reduce_sum_f32(NULL, 1, b, 0, fx.buf2, end));

  BAD(KILN_ERROR_INVALID_HANDLE, kiln_dot_f32(NULL, 4, NULL, 0, b, 0, b, 64));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_dot_f32(NULL, 4, b, 0, NULL, 0, b, 64));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_dot_f32(NULL, 4, b, 0, b, 0, NULL, 64));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_dot_f32(NULL, 4, b, 0, fx.dead_buf, 0, b, 64));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_dot_f32(NULL, 4, b, 0, fx.other_buf, 0, b, 64));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_dot_f32(fx.other_stream, 4, b, 0, b, 0, b, 64));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_dot_f32(NULL, 4, b, 0, b, 2, b, 64));
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_dot_f32(NULL, 4, b, 0, b, 1012, b, 64));
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_dot_f32(NULL, wide, b, 0, b, 0, b, 64));
  BAD(KILN_ERROR_OVERFLOW, kiln_dot_f32(NULL, 2, b, 0, b, end, fx.buf2, 0));

  /* A, B and C are 4 x 4 at bytes 0, 64 and 128 of b unless a case says. */
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_sgemm_f32(NULL, 4, 4, 4, 1, b, 0, 4, b, 64, 4, 0, NULL, 128, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_sgemm_f32(NULL, 4, 4, 4, 1, NULL, 0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_sgemm_f32(NULL, 4, 4, 4, 1, b, 0, 4, NULL, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_sgemm_f32(NULL, 4, 4, 4, 1, fx.dead_buf,
                                                0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_sgemm_f32(NULL, 4, 4, 4, 1, b, 0, 4, b, 64, 4, 0, hb, 128, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT, kiln_sgemm_f32(NULL, 4, 4, 4, 1, fx.other_buf,
                                               0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT, kiln_sgemm_f32(fx.other_stream, 4, 4, 4, 1, b,
                                               0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_sgemm_f32(NULL, 4, 4, 0, 1, b, 0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_sgemm_f32(NULL, 4, 4, 4, 1, b, 0, 3, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_sgemm_f32(NULL, 4, 4, 4, 1, b, 0, 4, b, 64, 3, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_sgemm_f32(NULL, 4, 4, 4, 1, b, 0, 4, b, 64, 4, 0, b, 128, 3));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_sgemm_f32(NULL, 4, 4, 4, 1, b, 2, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_sgemm_f32(NULL, wide, 4, 4, 1, b, 0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_sgemm_f32(NULL, 4, 4, 4, 1, b, 0, wide, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_sgemm_f32(NULL, 16, 16, 4, 1, b, 0, 4, b, 64, 16, 0, b, 128, 16));
  BAD(KILN_ERROR_OVERFLOW,
      kiln_sgemm_f32(NULL, 0, 1, UINT32_MAX, 1, b, 0, UINT32_MAX, b, 0,
                     UINT32_MAX, 0, b, 0, 1));

  /* kiln_hgemm_f16: A and B are 4 x 4 halves at bytes 0 and 64, C 4 x 4
   * floats at 128, unless a case says. */
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_hgemm_f16(NULL, 4, 4, 4, 1, b, 0, 4, b, 64, 4, 0, NULL, 128, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_hgemm_f16(NULL, 4, 4, 4, 1, NULL, 0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_hgemm_f16(NULL, 4, 4, 4, 1, b, 0, 4, fx.dead_buf, 64, 4, 0, b, 128,
                     4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_hgemm_f16(NULL, 4, 4, 4, 1, b, 0, 4, b, 64, 4, 0, hb, 128, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT, kiln_hgemm_f16(NULL, 4, 4, 4, 1, fx.other_buf,
                                               0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT, kiln_hgemm_f16(fx.other_stream, 4, 4, 4, 1, b,
                                               0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_hgemm_f16(NULL, 4, 4, 0, 1, b, 0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_hgemm_f16(NULL, 4, 4, 4, 1, b, 0, 3, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_hgemm_f16(NULL, 4, 4, 4, 1, b, 1, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_hgemm_f16(NULL, 4, 4, 4, 1, b, 0, 4, b, 64, 4, 0, b, 130, 4));
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_hgemm_f16(NULL, wide, 4, 4, 1, b, 0, 4, b, 64, 4, 0, b, 128, 4));
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_hgemm_f16(NULL, 32, 32, 4, 1, b, 0, 4, b, 64, 32, 0, b, 128, 32));
  BAD(KILN_ERROR_OVERFLOW,
      kiln_hgemm_f16(NULL, 0, 1, UINT32_MAX, 1, b, 0, UINT32_MAX, b, 0,
                     UINT32_MAX, 0, b, 0, 1));
  bad_finish(before);
}
