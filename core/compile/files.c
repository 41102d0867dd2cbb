/*
 * Modules from files: each file read whole and told apart — a binary image
 * by its first bytes, a source by its extension — then built as
 * kiln_module_create_from_source and kiln_module_create would build them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/images/params.h"
#include "core/internal.h"

#define SPIRV_MAGIC 0x07230203u

typedef struct loaded_file {
  const char *path;
  unsigned char *data; /* NUL-terminated, size + 1 bytes */
  size_t size;
  bool is_source;
  kiln_source_language language;
  kiln_image_format format;
} loaded_file;

static bool has_extension(const char *path, const char *const *list) {
  const char *slash = strrchr(path, '/');
  const char *dot = strrchr(slash ? slash : path, '.');
  if (!dot) return false;
  for (; *list; list++)
    if (strcmp(dot + 1, *list) == 0) return true;
  return false;
}

static const char *const cuda_ext[] = {"cu", "cuh", NULL};
static const char *const hip_ext[] = {"hip", NULL};
static const char *const glsl_ext[] = {"comp", "glsl", NULL};
static const char *const ptx_ext[] = {"ptx", NULL};
static const char *const spirv_ext[] = {"spv", NULL};
static const char *const cubin_ext[] = {"cubin", NULL};
static const char *const fatbin_ext[] = {"fatbin", NULL};
static const char *const hip_image_ext[] = {"co", "hsaco", "hipfb", NULL};

static kiln_status read_file(const char *fn, const char *path,
                             loaded_file *out) {
  int fd = open(path, O_RDONLY);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0) {
    int err = errno;
    if (fd >= 0) close(fd);
    return kiln_set_error(KILN_ERROR_NOT_FOUND, "%s: cannot read %s: %s", fn,
                          path, strerror(err));
  }
  if (!S_ISREG(sb.st_mode) || sb.st_size == 0) {
    close(fd);
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: %s is %s", fn, path,
                          S_ISDIR(sb.st_mode)   ? "a directory"
                          : S_ISREG(sb.st_mode) ? "empty"
                                                : "not a regular file");
  }
  size_t size = (size_t)sb.st_size;
  unsigned char *data = malloc(size + 1);
  if (!data) {
    close(fd);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory reading %zu bytes of %s", fn,
                          size, path);
  }
  size_t got = 0;
  while (got < size) {
    ssize_t n = read(fd, data + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  int err = errno;
  close(fd);
  if (got != size) {
    free(data);
    return kiln_set_error(KILN_ERROR_NOT_FOUND,
                          "%s: reading %s stopped after %zu of %zu bytes%s%s",
                          fn, path, got, size, got < size ? ": " : "",
                          got < size ? strerror(err) : "");
  }
  data[size] = '\0';
  out->path = path;
  out->data = data;
  out->size = size;
  return KILN_OK;
}

/* Decides what a file is: by its first bytes where they are an image's
 * magic (a fatbin named as a HIP image is HIP on NVIDIA), else by its
 * extension, else PTX by its directives. */
static kiln_status classify(const char *fn, loaded_file *f) {
  const unsigned char *p = f->data;
  const size_t n = f->size;
  f->is_source = false;
  if (n >= 4 && kiln_read_le(p, 4) == SPIRV_MAGIC) {
    f->format = KILN_IMAGE_SPIRV;
    return KILN_OK;
  }
  if (n >= 20 && memcmp(p, "\177ELF", 4) == 0) {
    unsigned machine = (unsigned)kiln_read_le(p + 18, 2);
    if (machine == KILN_EM_CUDA || machine == KILN_EM_AMDGPU) {
      f->format = machine == KILN_EM_CUDA ? KILN_IMAGE_CUBIN
                                          : KILN_IMAGE_HIP_CODE_OBJECT;
      return KILN_OK;
    }
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: %s is an ELF file for machine %u, neither a "
                          "CUDA cubin (%d) nor an AMD GPU code object (%d)",
                          fn, f->path, machine, KILN_EM_CUDA, KILN_EM_AMDGPU);
  }
  if (n >= 4 && kiln_read_le(p, 4) == KILN_FATBIN_MAGIC) {
    f->format = has_extension(f->path, hip_image_ext)
                    ? KILN_IMAGE_HIP_CODE_OBJECT
                    : KILN_IMAGE_FATBIN;
    return KILN_OK;
  }
  if (n >= KILN_BUNDLE_MAGIC_SIZE &&
      memcmp(p, KILN_BUNDLE_MAGIC, KILN_BUNDLE_MAGIC_SIZE) == 0) {
    f->format = KILN_IMAGE_HIP_CODE_OBJECT;
    return KILN_OK;
  }
  const struct {
    const char *const *ext;
    kiln_source_language language;
  } sources[] = {{cuda_ext, KILN_SOURCE_CUDA},
                 {hip_ext, KILN_SOURCE_HIP},
                 {glsl_ext, KILN_SOURCE_GLSL}};
  for (size_t i = 0; i < sizeof sources / sizeof sources[0]; i++) {
    if (has_extension(f->path, sources[i].ext)) {
      f->is_source = true;
      f->language = sources[i].language;
      return KILN_OK;
    }
  }
  const struct {
    const char *const *ext;
    kiln_image_format format;
  } images[] = {{spirv_ext, KILN_IMAGE_SPIRV},
                {cubin_ext, KILN_IMAGE_CUBIN},
                {fatbin_ext, KILN_IMAGE_FATBIN},
                {hip_image_ext, KILN_IMAGE_HIP_CODE_OBJECT},
                {ptx_ext, KILN_IMAGE_PTX}};
  for (size_t i = 0; i < sizeof images / sizeof images[0]; i++) {
    if (has_extension(f->path, images[i].ext)) {
      f->format = images[i].format;
      return KILN_OK;
    }
  }
  const char *text = (const char *)p;
  if (strlen(text) == n && strstr(text, ".version") &&
      strstr(text, ".target")) {
    f->format = KILN_IMAGE_PTX;
    return KILN_OK;
  }
  return kiln_set_error(
      KILN_ERROR_INVALID_ARGUMENT,
      "%s: cannot tell what %s is: it is no SPIR-V, cubin, fatbin, HIP code "
      "object or PTX, and its name ends in none of .cu .cuh .hip .comp .glsl "
      ".spv .ptx .cubin .fatbin .co .hsaco .hipfb",
      fn, f->path);
}

/* The directory part of `path` ("." for a bare name), malloc'd. */
static char *directory_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  size_t len = slash == path ? 1 : (size_t)(slash - path);
  char *dir = malloc(len + 1);
  if (dir) {
    memcpy(dir, path, len);
    dir[len] = '\0';
  }
  return dir;
}

kiln_status kiln_module_create_from_files_sized(
    kiln_context *ctx, const char *const *paths, size_t path_count,
    const kiln_compile_options *caller_options, size_t options_size,
    kiln_module **out_module) {
  static const char fn[] = "kiln_module_create_from_files";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!out_module)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_module is NULL",
                          fn);
  if (!paths || path_count == 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: no files given (paths is %s, path_count is "
                          "%zu)",
                          fn, paths ? "set" : "NULL", path_count);
  for (size_t i = 0; i < path_count; i++)
    if (!paths[i] || !paths[i][0])
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: paths[%zu] is %s",
                            fn, i, paths[i] ? "empty" : "NULL");
  kiln_compile_options given;
  if ((st = kiln_struct_in(fn, "options", &given, sizeof given,
                           KILN_COMPILE_OPTIONS_0_1, caller_options,
                           options_size)) != KILN_OK)
    return st;
  const kiln_compile_options *options = &given;
  if ((st = kiln_compile_options_check(fn, options)) != KILN_OK ||
      (st = kiln_context_check_usable(ctx)) != KILN_OK)
    return st;

  loaded_file *files = calloc(path_count, sizeof *files);
  kiln_source *sources = calloc(path_count, sizeof *sources);
  kiln_module_image *images = calloc(path_count, sizeof *images);
  /* A source finds the headers beside it, after the caller's directories. */
  const char **dirs =
      calloc(options->include_dir_count + path_count, sizeof *dirs);
  char **owned_dirs = calloc(path_count, sizeof *owned_dirs);
  size_t source_count = 0, image_count = 0, dir_count = 0, owned = 0;
  if (!files || !sources || !images || !dirs || !owned_dirs)
    st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY, "%s: out of host memory",
                        fn);
  for (size_t i = 0; st == KILN_OK && i < options->include_dir_count; i++)
    dirs[dir_count++] = options->include_dirs[i];
  for (size_t i = 0; st == KILN_OK && i < path_count; i++) {
    if ((st = read_file(fn, paths[i], &files[i])) != KILN_OK ||
        (st = classify(fn, &files[i])) != KILN_OK)
      break;
    if (!files[i].is_source) {
      images[image_count++] = (kiln_module_image){
          files[i].format, files[i].data,
          /* PTX goes to the driver as text, with its NUL. */
          files[i].size + (files[i].format == KILN_IMAGE_PTX)};
      continue;
    }
    sources[source_count++] = (kiln_source){
        .language = files[i].language,
        .text = (const char *)files[i].data,
        .name = paths[i],
    };
    char *dir = directory_of(paths[i]);
    if (!dir) {
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory", fn);
      break;
    }
    bool seen = false;
    for (size_t d = 0; d < dir_count && !seen; d++)
      seen = strcmp(dirs[d], dir) == 0;
    if (seen) {
      free(dir);
    } else {
      owned_dirs[owned++] = dir;
      dirs[dir_count++] = dir;
    }
  }
  if (st == KILN_OK) {
    kiln_compile_options with_dirs = *options;
    with_dirs.include_dirs = dirs;
    with_dirs.include_dir_count = dir_count;
    st = kiln_module_build(ctx, fn, sources, source_count, images, image_count,
                           &with_dirs, out_module);
  }
  for (size_t i = 0; files && i < path_count; i++) free(files[i].data);
  for (size_t i = 0; i < owned; i++) free(owned_dirs[i]);
  free(owned_dirs);
  free(dirs);
  free(images);
  free(sources);
  free(files);
  return st;
}
