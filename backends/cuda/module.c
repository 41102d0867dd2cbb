/* Modules from cubin, fatbin or PTX images (cuModuleLoadDataEx; the driver
 * JIT-compiles PTX for the device), and their kernels by name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda.h"

/* Room for the JIT's logs. The error log ends up in the message, which
 * holds 1 KiB, so a longer one would be cut there anyway. */
#define JIT_LOG_BYTES 2048

/* The order kiln tries images in when a module has several: machine code
 * first, which loads without compiling, PTX last. */
static const kiln_image_format preference[] = {
    KILN_IMAGE_CUBIN, KILN_IMAGE_FATBIN, KILN_IMAGE_PTX};

static void trim(char *text) {
  size_t n = strlen(text);
  while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' ')) text[--n] = '\0';
}

static uint64_t read_le(const unsigned char *p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = bytes; i-- > 0;) v = v << 8 | p[i];
  return v;
}

/* Why a cubin or fatbin image cannot be what it claims, or NULL. The driver
 * takes no size with an image and trusts the sizes inside it, so a
 * truncated or mislabelled one would be read past its end. */
static const char *image_problem(const kiln_module_image *image) {
  const unsigned char *p = image->data;
  const size_t n = image->size;
  if (image->format == KILN_IMAGE_CUBIN) {
    /* An ELF64 header: the program and section header tables it points
     * to must lie inside the image. */
    if (n < 64 || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2)
      return "not a 64-bit ELF file";
    uint64_t phoff = read_le(p + 32, 8), shoff = read_le(p + 40, 8);
    uint64_t phsize = read_le(p + 54, 2) * read_le(p + 56, 2);
    uint64_t shsize = read_le(p + 58, 2) * read_le(p + 60, 2);
    if (phoff > n || phsize > n - phoff || shoff > n || shsize > n - shoff)
      return "an ELF file cut short: its headers point past its end";
  } else if (image->format == KILN_IMAGE_FATBIN) {
    /* nvcc --fatbin's header: magic, version, header size, payload size. */
    if (n < 16 || read_le(p, 4) != 0xba55ed50u)
      return "not a fatbin (nvcc --fatbin output starts with 0xba55ed50)";
    uint64_t size = read_le(p + 6, 2) + read_le(p + 8, 8);
    if (size > n) return "a fatbin cut short: its header counts more bytes";
  }
  return NULL;
}

/* Loads one image into *out; *out_result is the driver's answer and
 * error_log the JIT's complaint, if any. Fails only for lack of host
 * memory. */
static kiln_status load_image(const kiln_module_image *image, CUmodule *out,
                              CUresult *out_result, char *error_log) {
  const void *data = image->data;
  char *copy = NULL;
  /* PTX is handed to the driver as a C string, without its size. */
  if (image->format == KILN_IMAGE_PTX &&
      ((const char *)image->data)[image->size - 1] != '\0') {
    copy = malloc(image->size + 1);
    if (!copy)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "kiln_module_create: out of host memory for a "
                            "copy of a %zu-byte PTX image", image->size);
    memcpy(copy, image->data, image->size);
    copy[image->size] = '\0';
    data = copy;
  }
  char info_log[JIT_LOG_BYTES];
  error_log[0] = info_log[0] = '\0';
  CUjit_option options[] = {
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  /* Sizes travel in the pointer-sized slots, as the driver reads them. */
  void *values[] = {error_log, (void *)(uintptr_t)JIT_LOG_BYTES, info_log,
                    (void *)(uintptr_t)JIT_LOG_BYTES};
  *out_result = kiln_cuda_api.cuModuleLoadDataEx(
      out, data, (unsigned)(sizeof options / sizeof options[0]), options,
      values);
  free(copy);
  error_log[JIT_LOG_BYTES - 1] = info_log[JIT_LOG_BYTES - 1] = '\0';
  trim(error_log);
  trim(info_log);
  if (info_log[0])
    kiln_log(KILN_LOG_DEBUG, "cuda: JIT of a %s image: %s",
             kiln_image_format_name(image->format), info_log);
  return KILN_OK;
}

/* Why each image of a module was rejected, for the message if none loads. */
typedef struct failures {
  char text[1024];
  size_t used;
} failures;

static void note_failure(failures *f, const kiln_module_image *image,
                         size_t index, const char *why, const char *log) {
  if (f->used >= sizeof f->text) return;
  int n = snprintf(f->text + f->used, sizeof f->text - f->used,
                   "%s%s image %zu: %s%s%s", f->used ? "; " : "",
                   kiln_image_format_name(image->format), index, why,
                   log[0] ? "; JIT log: " : "", log);
  if (n > 0) f->used += (size_t)n;
}

kiln_status kiln_cuda_module_init(kiln_module *base,
                                  const kiln_module_image *images,
                                  size_t count) {
  kiln_cuda_module *m = kiln_cuda_module_cast(base);
  const kiln_context *ctx = base->base.context;
  kiln_status st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  failures rejected = {"", 0};
  for (size_t p = 0; p < sizeof preference / sizeof preference[0]; p++) {
    for (size_t i = 0; i < count; i++) {
      if (images[i].format != preference[p]) continue;
      const char *problem = image_problem(&images[i]);
      if (problem) {
        note_failure(&rejected, &images[i], i, problem, "");
        continue;
      }
      char error_log[JIT_LOG_BYTES];
      CUresult r = CUDA_ERROR_UNKNOWN;
      st = load_image(&images[i], &m->handle, &r, error_log);
      if (st != KILN_OK) return st;
      if (r == CUDA_SUCCESS) return KILN_OK;
      /* A rejected image is worth trying the next one for; a lost
       * context, a full device or a broken driver would fail the same way
       * again. */
      st = kiln_cuda_status(r);
      if (st == KILN_ERROR_DEVICE_LOST ||
          st == KILN_ERROR_OUT_OF_DEVICE_MEMORY ||
          st == KILN_ERROR_INVALID_STATE || st == KILN_ERROR_UNAVAILABLE)
        return kiln_cuda_error(r, "cuModuleLoadDataEx of a %s image",
                               kiln_image_format_name(images[i].format));
      char why[384];
      kiln_cuda_describe(r, why, sizeof why);
      note_failure(&rejected, &images[i], i, why, error_log);
    }
  }
  return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                        "kiln_module_create: no image loads on %s (%s): %s",
                        ctx->properties.name, ctx->properties.architecture,
                        rejected.text);
}

void kiln_cuda_module_deinit(kiln_module *base) {
  kiln_cuda_make_current(base->base.context);
  kiln_cuda_api.cuModuleUnload(kiln_cuda_module_cast(base)->handle);
}

kiln_status kiln_cuda_kernel_init(kiln_kernel *base) {
  kiln_cuda_kernel *k = kiln_cuda_kernel_cast(base);
  kiln_status st = kiln_cuda_make_current(base->base.context);
  if (st != KILN_OK) return st;
  CUresult r = kiln_cuda_api.cuModuleGetFunction(
      &k->handle, kiln_cuda_module_cast(base->module)->handle, base->name);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "looking up kernel '%s' in the module (CUDA "
                              "keeps a kernel's name only when it is "
                              "declared extern \"C\")", base->name);
  atomic_init(&k->shared_limit, 0);
  /* arg_bytes stays unknown: CUDA 13 has no parameter count, and finding
   * the end by probing cuFuncGetParamInfo until it fails would put an API
   * error per kernel into every user's compute-sanitizer report. */
  return KILN_OK;
}

void kiln_cuda_kernel_deinit(kiln_kernel *k) {
  (void)k; /* a CUfunction lives and dies with its module */
}
