/* Modules from cubin, fatbin or PTX images (cuModuleLoadDataEx; the driver
 * JIT-compiles PTX for the device), and their kernels by name.
 *
 * A module loads every image it is given, each into a CUmodule of its own,
 * so that kernels may come from several images (one per source file, or
 * machine code for some kernels and PTX for others). An image with no code
 * for this device is passed over; any other image that does not load fails
 * the module, as a module missing an image's kernels would fail later and
 * less clearly.
 *
 * Past 600 lines for a reason: loading the images and finding kernels by
 * name (listed, by C++ name, with their parameter tables) share the
 * module's handles and tables and the JIT's logs; split in two, each half
 * would reach into the other's state. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/common.h"
#include "backends/cuda/cuda.h"

/* Room for the JIT's logs. The error log ends up in the message, which
 * holds 1 KiB, so a longer one would be cut there anyway. */
#define JIT_LOG_BYTES 2048

/* The order kiln loads images in, and so the order a kernel's name is
 * looked up in: machine code first, which loads without compiling, PTX
 * last. */
static const kiln_image_format preference[] = {
    KILN_IMAGE_CUBIN, KILN_IMAGE_FATBIN, KILN_IMAGE_PTX};

static void trim(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ')) s[--n] = '\0';
}

/* Why a cubin or fatbin image cannot be what it claims, or NULL: see
 * kiln_image_elf_problem. PTX is text, which the JIT judges. */
static const char *image_problem(const kiln_module_image *image, char *why,
                                 size_t why_size) {
  if (image->format == KILN_IMAGE_CUBIN)
    return kiln_image_elf_problem(image->data, image->size, why, why_size);
  if (image->format == KILN_IMAGE_FATBIN)
    return kiln_image_fatbin_problem(image->data, image->size);
  return NULL;
}

/* ---- PTX for another GPU ------------------------------------------------- */

/* Whether a PTX image is for a GPU other than ctx's, with the reason in
 * `why`. The JIT answers PTX for a newer GPU with CUDA_ERROR_INVALID_PTX,
 * the same code as broken PTX, so kiln reads the .target itself: such an
 * image has no code for this device, like a cubin for another one, and is
 * passed over without the driver being asked. */
static bool ptx_for_other_gpu(const kiln_context *ctx,
                              const kiln_module_image *image, char *why,
                              size_t why_size, char *brief,
                              size_t brief_size) {
  unsigned target;
  char suffix;
  if (!kiln_ptx_target(image->data, image->size, &target, &suffix))
    return false;
  CUdevice device = kiln_cuda_context_cast_const(ctx)->device;
  int major = 0, minor = 0;
  if (kiln_cuda_api.cuDeviceGetAttribute(
          &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) !=
          CUDA_SUCCESS ||
      kiln_cuda_api.cuDeviceGetAttribute(
          &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) !=
          CUDA_SUCCESS)
    return false;
  unsigned have = (unsigned)(major * 10 + minor);
  /* Plain PTX compiles for its architecture and every later one; 'a'
   * (architecture-specific) PTX for its own only; 'f' (family) PTX for
   * the later minor versions of its major one. */
  bool runs = suffix == 'a'   ? have == target
              : suffix == 'f' ? have / 10 == target / 10 && have >= target
                              : have >= target;
  if (runs) return false;
  const char *tail = suffix == 'a' ? "a" : suffix == 'f' ? "f" : "";
  snprintf(brief, brief_size, ".target sm_%u%s", target, tail);
  snprintf(why, why_size, "its %s is for %s GPU than this sm_%u", brief,
           have < target ? "a newer" : "another", have);
  return true;
}

/* ---- Loading ------------------------------------------------------------- */

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

/* Whether the driver's answer to an image means it holds no code that this
 * device and driver can run, rather than that it is broken: machine code
 * for other GPUs only, or PTX that this driver cannot compile (a newer PTX
 * ISA than its JIT knows, or no JIT at all here). */
static bool no_code_here(CUresult r) {
  return r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
         r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
         r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND ||
         r == CUDA_ERROR_JIT_COMPILATION_DISABLED;
}

static void unload_all(kiln_cuda_module *m) {
  for (size_t i = 0; i < m->count; i++) {
    CUresult r = kiln_cuda_api.cuModuleUnload(m->handles[i]);
    if (r != CUDA_SUCCESS) kiln_cuda_warn(r, "cuModuleUnload");
  }
  for (size_t i = 0; m->params && i < m->count; i++)
    kiln_param_table_free(&m->params[i]);
  free(m->handles);
  free(m->skipped);
  free(m->params);
  m->handles = NULL;
  m->skipped = NULL;
  m->params = NULL;
  m->count = 0;
}

/* Notes an image passed over: in full for the message if none loads, in
 * brief for the module's own note. */
static void note_skipped(kiln_text *full, kiln_text *brief,
                         const kiln_module_image *image, size_t index,
                         const char *why, const char *brief_why,
                         const char *log) {
  const char *format = kiln_image_format_name(image->format);
  kiln_text_add(full, "%s%s image %zu: %s%s%s", full->used ? "; " : "", format,
                index, why, log[0] ? "; JIT log: " : "", log);
  kiln_text_add(brief, "%s%s image %zu (%s)", brief->used ? ", " : "", format,
                index, brief_why);
  kiln_log(KILN_LOG_DEBUG, "cuda: passing over %s image %zu, which has no "
           "code for this device: %s", format, index, why);
}

/* Loads images[i] into the module, or passes it over (noted in the two
 * texts) when it has no code for this device. Any other failure is the
 * module's. */
static kiln_status load_one(kiln_cuda_module *m,
                            const kiln_module_image *images, size_t i,
                            size_t count, kiln_text *skipped,
                            kiln_text *brief) {
  const kiln_context *ctx = m->base.base.context;
  const char *format = kiln_image_format_name(images[i].format);
  char why[384], target[32];
  if (images[i].format == KILN_IMAGE_PTX &&
      ptx_for_other_gpu(ctx, &images[i], why, sizeof why, target,
                        sizeof target)) {
    note_skipped(skipped, brief, &images[i], i, why, target, "");
    return KILN_OK;
  }
  char error_log[JIT_LOG_BYTES];
  CUresult r = CUDA_ERROR_UNKNOWN;
  CUmodule handle = NULL;
  kiln_status st = load_image(&images[i], &handle, &r, error_log);
  if (st != KILN_OK) return st;
  if (r == CUDA_SUCCESS) {
    kiln_param_table *t = &m->params[m->count];
    m->handles[m->count++] = handle;
    st = kiln_params_read_cuda(images[i].format, images[i].data,
                               images[i].size, t);
    m->base.prints |= t->may_printf;
    return st;
  }
  /* A lost context, a full device or a broken driver are no fault of the
   * image, and would fail the next one the same way. */
  st = kiln_cuda_status(r, KILN_ERROR_INVALID_IMAGE);
  if (st == KILN_ERROR_DEVICE_LOST || st == KILN_ERROR_OUT_OF_DEVICE_MEMORY ||
      st == KILN_ERROR_INVALID_STATE || st == KILN_ERROR_UNAVAILABLE)
    return kiln_cuda_error(r, "cuModuleLoadDataEx of %s image %zu of %zu",
                           format, i, count);
  kiln_cuda_describe(r, why, sizeof why);
  if (no_code_here(r)) {
    const char *name = NULL;
    if (kiln_cuda_api.cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
      name = "no code for this device";
    note_skipped(skipped, brief, &images[i], i, why, name, error_log);
    return KILN_OK;
  }
  return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                        "kiln_module_create: %s image %zu of %zu does not "
                        "load on %s (%s): %s%s%s",
                        format, i, count, ctx->properties.name,
                        ctx->properties.architecture, why,
                        error_log[0] ? "; JIT log: " : "", error_log);
}

/* Loads every image that has code for ctx's device into m, the better
 * formats first (ctx current, its gates kept open). */
static kiln_status load_all(kiln_cuda_module *m,
                            const kiln_module_image *images, size_t count) {
  const kiln_context *ctx = m->base.base.context;
  kiln_status st = KILN_OK;
  m->handles = calloc(count, sizeof *m->handles);
  m->params = calloc(count, sizeof *m->params);
  if (!m->handles || !m->params) {
    unload_all(m);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_module_create: out of host memory");
  }
  kiln_text skipped = {"", 0}, brief = {"", 0};
  for (size_t p = 0; p < sizeof preference / sizeof preference[0]; p++) {
    for (size_t i = 0; i < count; i++) {
      if (images[i].format != preference[p]) continue;
      st = load_one(m, images, i, count, &skipped, &brief);
      if (st != KILN_OK) {
        unload_all(m);
        return st;
      }
    }
  }
  if (m->count == 0) {
    unload_all(m);
    return kiln_set_error(KILN_ERROR_NO_IMAGE,
                          "kiln_module_create: no image loads on %s (%s): %s",
                          ctx->properties.name, ctx->properties.architecture,
                          skipped.buf);
  }
  if (brief.used && !(m->skipped = strdup(brief.buf))) {
    unload_all(m);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_module_create: out of host memory");
  }
  return KILN_OK;
}

kiln_status kiln_cuda_module_init(kiln_module *base,
                                  const kiln_module_image *images,
                                  size_t count) {
  kiln_cuda_module *m = kiln_cuda_module_cast(base);
  const kiln_context *ctx = base->base.context;
  /* Checked before any image loads, so that a broken one costs no JIT. */
  for (size_t i = 0; i < count; i++) {
    char why[160];
    const char *problem = image_problem(&images[i], why, sizeof why);
    if (problem)
      return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                            "kiln_module_create: %s image %zu of %zu is "
                            "malformed: %s",
                            kiln_image_format_name(images[i].format), i,
                            count, problem);
  }
  kiln_status st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  /* Loading a module waits inside the driver for the context's queued
   * work, held gates and all (an H200 under KILN_DEBUG=reorder hung in
   * cuModuleLoadDataEx): they stay open while it loads. */
  kiln_cuda_gates_stay_open(ctx, true);
  st = load_all(m, images, count);
  kiln_cuda_gates_stay_open(ctx, false);
  return st;
}

void kiln_cuda_module_deinit(kiln_module *base) {
  kiln_cuda_make_current_for_deinit(base->base.context, "unloading a module");
  /* An unload may wait for queued work too. */
  kiln_cuda_gates_stay_open(base->base.context, true);
  unload_all(kiln_cuda_module_cast(base));
  kiln_cuda_gates_stay_open(base->base.context, false);
}

/* ---- Kernels by name ----------------------------------------------------- */

/* Whether the driver lists a module's kernels (CUDA 12.4 and later). */
static bool can_list(void) {
  return kiln_cuda_api.cuModuleGetFunctionCount &&
         kiln_cuda_api.cuModuleEnumerateFunctions &&
         kiln_cuda_api.cuFuncGetName;
}

/* The names of mod's kernels, which the driver owns while mod is loaded,
 * in a malloc'd array (NULL when there are none). *r is the driver's
 * answer; the status fails only for lack of host memory. */
static kiln_status list_names(CUmodule mod, const char ***out_names,
                              unsigned *out_count, CUresult *r) {
  *out_names = NULL;
  *out_count = 0;
  unsigned count = 0;
  *r = kiln_cuda_api.cuModuleGetFunctionCount(&count, mod);
  if (*r != CUDA_SUCCESS || count == 0) return KILN_OK;
  CUfunction *functions = malloc(count * sizeof *functions);
  const char **names = malloc(count * sizeof *names);
  if (!functions || !names) {
    free(functions);
    free(names);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_module_get_kernel: out of host memory");
  }
  *r = kiln_cuda_api.cuModuleEnumerateFunctions(functions, count, mod);
  /* A function's name is there whether or not lazy loading has loaded
   * the function yet. */
  for (unsigned i = 0; *r == CUDA_SUCCESS && i < count; i++)
    *r = kiln_cuda_api.cuFuncGetName(&names[i], functions[i]);
  free(functions);
  if (*r != CUDA_SUCCESS) {
    free(names);
    return KILN_OK;
  }
  *out_names = names;
  *out_count = count;
  return KILN_OK;
}

/* Whether `listed` is the Itanium C++ mangling (nvcc's and NVRTC's) of a
 * function named `name`: "_Z", then the name after its length, as in
 * _Z3fooPf or _ZN2ns3fooEv for foo. */
static bool mangles(const char *listed, const char *name) {
  if (strncmp(listed, "_Z", 2) != 0) return false;
  char length[24];
  int digits = snprintf(length, sizeof length, "%zu", strlen(name));
  for (const char *p = listed + 2; (p = strstr(p, length)) != NULL; p++)
    if (!isdigit((unsigned char)p[-1]) &&
        strncmp(p + digits, name, strlen(name)) == 0)
      return true;
  return false;
}

#define MANGLED_HINT " (declared without extern \"C\"? C++ mangles the name)"
#define SKIPPED_NOTE "; passed over for having no code for this device: "

/* Sets KILN_ERROR_NOT_FOUND for `name`, listing the kernels the module
 * does have (lists[i] the names in handles[i]), with the C++ hint next to
 * any that is a mangled form of `name`. */
static kiln_status not_found_listing(const kiln_cuda_module *m,
                                     const char *name, const char ***lists,
                                     const unsigned *counts) {
  kiln_text t = {"", 0};
  kiln_text_add(&t, "the module has no kernel named '%s'", name);
  /* Room kept for the tail: the count of names left out, and the start of
   * the note on images passed over (which may be cut). */
  size_t reserve = 32;
  if (m->skipped) reserve += sizeof SKIPPED_NOTE + 96;
  size_t listed = 0, left_out = 0;
  /* Mangled forms of the name first, so that the hint is never cut. */
  for (int mangled = 1; mangled >= 0; mangled--) {
    for (size_t i = 0; i < m->count; i++) {
      for (unsigned j = 0; j < counts[i]; j++) {
        const char *n = lists[i][j];
        if (mangles(n, name) != (mangled == 1)) continue;
        bool seen = false;
        for (size_t a = 0; a <= i && !seen; a++)
          for (unsigned b = 0; b < (a == i ? j : counts[a]) && !seen; b++)
            seen = strcmp(lists[a][b], n) == 0;
        if (seen) continue;
        size_t need = strlen(n) + 24 + (mangled ? sizeof MANGLED_HINT : 0);
        if (t.used + need + reserve >= sizeof t.buf) {
          left_out++;
          continue;
        }
        kiln_text_add(&t, "%s%s%s", listed++ ? ", " : "; its kernels are: ", n,
                      mangled ? MANGLED_HINT : "");
      }
    }
  }
  if (listed == 0 && left_out == 0) kiln_text_add(&t, "; it has no kernels");
  if (left_out) kiln_text_add(&t, " and %zu more", left_out);
  if (m->skipped) kiln_text_add(&t, SKIPPED_NOTE "%s", m->skipped);
  return kiln_set_error(KILN_ERROR_NOT_FOUND, "%s", t.buf);
}

/* Finds which of m's CUmodules has `name` from the lists of their kernels:
 * KILN_OK with *found its index, or with *found = m->count when the
 * driver could not list them (the caller then asks each);
 * KILN_ERROR_NOT_FOUND, with the kernels listed, when none has it. */
static kiln_status find_listed(const kiln_cuda_module *m, const char *name,
                               size_t *found) {
  *found = m->count;
  const char ***lists = calloc(m->count, sizeof *lists);
  unsigned *counts = calloc(m->count, sizeof *counts);
  kiln_status st = KILN_OK;
  CUresult r = CUDA_SUCCESS;
  if (!lists || !counts)
    st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                        "kiln_module_get_kernel: out of host memory");
  for (size_t i = 0; st == KILN_OK && r == CUDA_SUCCESS && i < m->count;
       i++) {
    st = list_names(m->handles[i], &lists[i], &counts[i], &r);
    for (unsigned j = 0; j < counts[i] && *found == m->count; j++)
      if (strcmp(lists[i][j], name) == 0) *found = i;
    if (*found < m->count) break;
  }
  if (st == KILN_OK && r != CUDA_SUCCESS) {
    if (kiln_cuda_status(r, KILN_ERROR_BACKEND) == KILN_ERROR_DEVICE_LOST) {
      st = kiln_cuda_error(r, "listing the kernels of a module");
    } else {
      char why[384];
      kiln_cuda_describe(r, why, sizeof why);
      kiln_log(KILN_LOG_DEBUG, "cuda: listing a module's kernels failed "
               "(%s); asking each image for '%s' instead", why, name);
    }
  } else if (st == KILN_OK && *found == m->count) {
    st = not_found_listing(m, name, lists, counts);
  }
  for (size_t i = 0; lists && i < m->count; i++) free(lists[i]);
  free(lists);
  free(counts);
  return st;
}

/* ---- Parameters ---------------------------------------------------------- */

/* f's parameters as the driver gives them, offsets and sizes (CUDA 13.2
 * and later): *out_count is KILN_PARAMS_UNKNOWN where it cannot say. With
 * the count known, each index asked for exists: no API error. */
static kiln_status driver_params(CUfunction f, const char *name,
                                 kiln_param_info **out, size_t *out_count) {
  *out = NULL;
  *out_count = KILN_PARAMS_UNKNOWN;
  if (!kiln_cuda_api.cuFuncGetParamCount || !kiln_cuda_api.cuFuncGetParamInfo)
    return KILN_OK;
  size_t n = 0;
  CUresult r = kiln_cuda_api.cuFuncGetParamCount(f, &n);
  kiln_param_info *list = NULL;
  if (r == CUDA_SUCCESS && n > 0) {
    if (!(list = malloc(n * sizeof *list)))
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "kiln_module_get_kernel: out of host memory");
    for (size_t i = 0; i < n && r == CUDA_SUCCESS; i++) {
      size_t offset = 0, size = 0;
      r = kiln_cuda_api.cuFuncGetParamInfo(f, i, &offset, &size);
      list[i].offset = (uint32_t)offset;
      list[i].size = (uint32_t)size;
      list[i].kind = KILN_PARAM_BITS;
    }
  }
  if (r != CUDA_SUCCESS) {
    free(list);
    if (kiln_cuda_status(r, KILN_ERROR_BACKEND) == KILN_ERROR_DEVICE_LOST)
      return kiln_cuda_error(r, "reading the parameters of kernel '%s'",
                             name);
    char why[384];
    kiln_cuda_describe(r, why, sizeof why);
    kiln_log(KILN_LOG_DEBUG, "cuda: the driver does not tell the parameters "
             "of kernel '%s' (%s)", name, why);
    return KILN_OK;
  }
  *out = list;
  *out_count = n;
  return KILN_OK;
}

/* Sets the kernel's parameters for the core's checks: the driver's offsets
 * and sizes where it gives them, with the kinds of the image's list (PTX
 * tells them) when that agrees; else the image's list; else none. */
static kiln_status set_params(kiln_kernel *k, CUfunction f,
                              const kiln_param_table *table) {
  const kiln_kernel_params *image = kiln_param_table_find(table, k->name);
  kiln_param_info *driver;
  size_t n;
  kiln_status st = driver_params(f, k->name, &driver, &n);
  if (st != KILN_OK) return st;
  if (n != KILN_PARAMS_UNKNOWN) {
    bool agree = image && image->count == n;
    for (size_t i = 0; agree && i < n; i++)
      agree = image->params[i].offset == driver[i].offset &&
              image->params[i].size == driver[i].size;
    if (!agree) {
      if (image)
        kiln_log(KILN_LOG_DEBUG, "cuda: kernel '%s': the image's parameter "
                 "list differs from the driver's, which kiln takes", k->name);
      k->params = driver;
      k->param_count = n;
      return KILN_OK;
    }
    free(driver);
  }
  if (image && !kiln_kernel_params_apply(image, k))
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_module_get_kernel: out of host memory");
  return KILN_OK;
}

/* The built-in kernels whose first act is to wait for the kernel before
 * them on the stream (kiln_follow_previous_kernel, shaders/cuda/reduce.cu),
 * so that launch.c may start them while it drains. The wait is compiled in
 * for sm_90 and later only, so only code built for those is so launched. */
static const char *const following_kernels[] = {"kiln_reduce_sum_f32",
                                                "kiln_dot_f32"};

/* Whether `name` is one of the `count` names of `list`. */
static bool listed(const char *name, const char *const *list, size_t count) {
  for (size_t i = 0; i < count; i++)
    if (strcmp(name, list[i]) == 0) return true;
  return false;
}

static bool follows_previous(const kiln_kernel *base, CUfunction f) {
  if (!kiln_cuda_api.cuLaunchKernelEx ||
      base->module != base->base.context->builtin_module)
    return false;
  int ptx = 0;
  return listed(base->name, following_kernels,
                sizeof following_kernels / sizeof *following_kernels) &&
         kiln_cuda_api.cuFuncGetAttribute(&ptx, CU_FUNC_ATTRIBUTE_PTX_VERSION,
                                          f) == CUDA_SUCCESS &&
         ptx >= 90;
}

/* The built-in kernels that read A and B through tensor maps appended to
 * the GEMM's eleven arguments (launch.c's kiln_cuda_params_of,
 * shaders/cuda/hgemm_wgmma.cu). */
static const char *const mapping_kernels[] = {"kiln_hgemm_f16_wgmma"};

/* Marks a kernel of mapping_kernels in the matrix module, and describes to
 * the core only the arguments its callers give: the maps are the
 * backend's to make. */
static kiln_status take_maps(kiln_kernel *base, kiln_cuda_kernel *k) {
  k->maps = false;
  if (!listed(base->name, mapping_kernels,
              sizeof mapping_kernels / sizeof *mapping_kernels) ||
      base->module != base->base.context->builtin_matrix_module)
    return KILN_OK;
  if (!kiln_cuda_api.cuTensorMapEncodeTiled)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "kernel '%s' reads through tensor maps, which the "
                          "CUDA driver (%d.%d) cannot make "
                          "(cuTensorMapEncodeTiled, CUDA 12.0)",
                          base->name, kiln_cuda_api.driver_version / 1000,
                          kiln_cuda_api.driver_version % 1000 / 10);
  if (base->param_count != KILN_PARAMS_UNKNOWN) {
    if (base->param_count != KILN_CUDA_GEMM_ARGS + 2)
      return kiln_set_error(KILN_ERROR_BACKEND,
                            "kernel '%s' has %zu parameters; kiln built it "
                            "with %d",
                            base->name, base->param_count, KILN_CUDA_GEMM_ARGS + 2);
    base->param_count = KILN_CUDA_GEMM_ARGS;
  }
  k->maps = true;
  return KILN_OK;
}

kiln_status kiln_cuda_kernel_init(kiln_kernel *base) {
  kiln_cuda_kernel *k = kiln_cuda_kernel_cast(base);
  const kiln_cuda_module *m = kiln_cuda_module_cast(base->module);
  const char *name = base->name;
  kiln_status st = kiln_cuda_make_current(base->base.context);
  if (st != KILN_OK) return st;
  /* Asking a module for a name it lacks fails with CUDA_ERROR_NOT_FOUND,
   * an API error in every compute-sanitizer report, so where the driver
   * lists kernels kiln asks only the module that has the name. */
  size_t first = 0, last = m->count;
  if (can_list()) {
    size_t found;
    if ((st = find_listed(m, name, &found)) != KILN_OK) return st;
    if (found < m->count) {
      first = found;
      last = found + 1;
    }
  }
  for (size_t i = first; i < last; i++) {
    CUresult r =
        kiln_cuda_api.cuModuleGetFunction(&k->handle, m->handles[i], name);
    if (r == CUDA_SUCCESS && kiln_cuda_api.cuFuncLoad) {
      /* Loaded now, not at its first launch as CUDA's lazy loading (the
       * default since 12.2) would: that load waits in the driver for work
       * already queued, which a kernel spinning on a flag may hold for
       * good (an H200 run waited out a conformance gate so). Loading now
       * waits too: held gates stay open across it. */
      kiln_cuda_gates_stay_open(base->base.context, true);
      r = kiln_cuda_api.cuFuncLoad(k->handle);
      kiln_cuda_gates_stay_open(base->base.context, false);
      if (r != CUDA_SUCCESS)
        return kiln_cuda_error(r, "loading kernel '%s' (cuFuncLoad)", name);
    }
    if (r == CUDA_SUCCESS) {
      atomic_init(&k->shared_limit, 0);
      k->follows = follows_previous(base, k->handle);
      st = set_params(base, k->handle, &m->params[i]);
      return st == KILN_OK ? take_maps(base, k) : st;
    }
    if (r != CUDA_ERROR_NOT_FOUND)
      return kiln_cuda_error(r, "looking up kernel '%s' in the module "
                                "(cuModuleGetFunction)", name);
  }
  /* Without a list of names, kiln cannot tell a missing kernel from one
   * whose name C++ mangled. */
  return kiln_set_error(KILN_ERROR_NOT_FOUND,
                        "the module has no kernel named '%s' (a C++ kernel "
                        "keeps this name only when declared extern \"C\")%s%s",
                        name, m->skipped ? SKIPPED_NOTE : "",
                        m->skipped ? m->skipped : "");
}

void kiln_cuda_kernel_deinit(kiln_kernel *k) {
  (void)k; /* a CUfunction lives and dies with its module */
}

/* ---- Global variables by name -------------------------------------------- */

/* The driver cannot list a module's variables, so each CUmodule is asked in
 * turn; those that lack the name answer CUDA_ERROR_NOT_FOUND, which
 * compute-sanitizer counts as an API error (only with several images, or
 * for a name that is nowhere). */
kiln_status kiln_cuda_module_global(kiln_module *base, const char *name,
                                    uint64_t *out_address, size_t *out_size) {
  const kiln_cuda_module *m = kiln_cuda_module_cast(base);
  kiln_status st = kiln_cuda_make_current(base->base.context);
  if (st != KILN_OK) return st;
  for (size_t i = 0; i < m->count; i++) {
    CUdeviceptr address = 0;
    size_t size = 0;
    CUresult r =
        kiln_cuda_api.cuModuleGetGlobal(&address, &size, m->handles[i], name);
    if (r == CUDA_SUCCESS) {
      *out_address = (uint64_t)address;
      *out_size = size;
      return KILN_OK;
    }
    if (r != CUDA_ERROR_NOT_FOUND)
      return kiln_cuda_error(r, "kiln_module_get_global: looking up '%.96s' "
                                "in the module (cuModuleGetGlobal)",
                             name);
  }
  return kiln_set_error(KILN_ERROR_NOT_FOUND,
                        "kiln_module_get_global: the module has no "
                        "__device__ or __constant__ variable named '%.96s' "
                        "(C++ mangles the name of one declared in a "
                        "namespace)%s%s",
                        name, m->skipped ? SKIPPED_NOTE : "",
                        m->skipped ? m->skipped : "");
}
