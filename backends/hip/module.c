/* Modules from HIP code objects (hipcc --genco output: a clang offload
 * bundle with one code object per gfx target, or a bare code object), one
 * hipModule_t per image, and kernels looked up in them by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/common/common.h"
#include "backends/hip/hip.h"

/*
 * hipModuleLoadData takes no size: the runtime trusts the sizes written in
 * the image itself. kiln is told the real size, so it checks that what the
 * image claims lies within it before the runtime reads past a truncated
 * one: an offload bundle, an ELF code object, or (HIP on NVIDIA) a CUDA
 * fatbin. Other formats (a compressed bundle, PTX text) are left to the
 * runtime to judge. Returns why the image is malformed, or NULL.
 */
static const char *image_problem(const unsigned char *p, size_t size, char *why,
                                 size_t why_size) {
  /* Smaller than any header the runtime starts by reading. */
  if (size < 32) {
    snprintf(why, why_size, "%zu bytes are too few for a code object", size);
    return why;
  }
  if (memcmp(p, KILN_BUNDLE_MAGIC, KILN_BUNDLE_MAGIC_SIZE) == 0)
    return kiln_image_bundle_problem(p, size, why, why_size);
  if (memcmp(p, "\177ELF", 4) == 0)
    return kiln_image_elf_problem(p, size, why, why_size);
  if (kiln_read_le(p, 4) == KILN_FATBIN_MAGIC)
    return kiln_image_fatbin_problem(p, size);
  return NULL;
}

/* Whether a failure to load an image is no fault of the image: the device
 * is lost or full, or the runtime unusable, and the next image would fail
 * the same way. */
static bool runtime_failure(hipError_t err) {
  if (err == hipErrorNotInitialized || err == hipErrorDeinitialized ||
      err == hipErrorInvalidContext || err == hipErrorInvalidDevice)
    return true;
  kiln_status st = kiln_hip_status(err, KILN_ERROR_INVALID_IMAGE);
  return st == KILN_ERROR_DEVICE_LOST ||
         st == KILN_ERROR_OUT_OF_DEVICE_MEMORY ||
         st == KILN_ERROR_UNAVAILABLE;
}

/* Frees kiln's copies of hm's images, what they tell of their kernels'
 * parameters, and the arrays. */
static void free_images(kiln_hip_module *hm) {
  for (size_t i = 0; i < hm->count; i++) {
    free(hm->images[i]);
    if (hm->params) kiln_param_table_free(&hm->params[i]);
  }
  free(hm->handles);
  free(hm->images);
  free(hm->skipped);
  free(hm->params);
  hm->handles = NULL;
  hm->images = NULL;
  hm->skipped = NULL;
  hm->params = NULL;
  hm->count = 0;
}

/* Unloads hm's modules (with its device current) and frees kiln's copies
 * of their images. */
static void unload_all(kiln_hip_module *hm) {
  for (size_t i = 0; i < hm->count; i++) {
    hipError_t err = kiln_hip_api.hipModuleUnload(hm->handles[i]);
    if (err != hipSuccess) kiln_hip_warn(err, "hipModuleUnload");
  }
  free_images(hm);
}

/* Loads images[i] into hm, or passes it over (noted in the two texts)
 * when it has no code for this device. Any other failure is the
 * module's. */
static kiln_status load_one(kiln_hip_module *hm,
                            const kiln_module_image *images, size_t i,
                            size_t count, kiln_text *skipped,
                            kiln_text *brief) {
  /* With a NUL after it, so that text (PTX under HIP on NVIDIA) is never
   * read past its end. */
  unsigned char *copy = malloc(images[i].size + 1);
  if (!copy)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_module_create: out of host memory for a "
                          "copy of a %zu-byte HIP image",
                          images[i].size);
  memcpy(copy, images[i].data, images[i].size);
  copy[images[i].size] = 0;
  hipModule_t handle = NULL;
  hipError_t err = kiln_hip_api.hipModuleLoadData(&handle, copy);
  if (err == hipSuccess) {
    hm->handles[hm->count] = handle;
    hm->images[hm->count] = copy;
    kiln_param_table *t = &hm->params[hm->count++];
    kiln_status st = kiln_params_read_hip(
        copy, images[i].size, hm->base.base.context->properties.architecture,
        t);
    hm->base.prints |= t->may_printf;
    return st;
  }
  free(copy);
  char description[256];
  kiln_hip_describe(err, description, sizeof description);
  if (err == hipErrorNoBinaryForGpu) {
    kiln_text_add(skipped, "%sHIP image %zu: %s", skipped->used ? "; " : "", i,
                  description);
    kiln_text_add(brief, "%sHIP image %zu (hipErrorNoBinaryForGpu)",
                  brief->used ? ", " : "", i);
    kiln_log(KILN_LOG_DEBUG, "hip: passing over HIP image %zu, which has "
             "no code for this device: %s", i, description);
    return KILN_OK;
  }
  if (runtime_failure(err))
    return kiln_hip_error_as(err, KILN_ERROR_INVALID_STATE,
                             "hipModuleLoadData of HIP image %zu of %zu", i,
                             count);
  const kiln_context *ctx = hm->base.base.context;
  return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                        "kiln_module_create: HIP image %zu of %zu does not "
                        "load on %s (%s): %s",
                        i, count, ctx->properties.name,
                        ctx->properties.architecture, description);
}

/*
 * Every image loads into a module of its own, so that kernels may come
 * from several (one per source file, say). An image with no code for this
 * device (hipErrorNoBinaryForGpu) is passed over; any other that does not
 * load fails the module, as a module missing that image's kernels would
 * fail later and less clearly.
 */
kiln_status kiln_hip_module_init(kiln_module *m,
                                 const kiln_module_image *images,
                                 size_t count) {
  kiln_hip_module *hm = kiln_hip_module_cast(m);
  const kiln_context *ctx = m->base.context;
  for (size_t i = 0; i < count; i++) {
    char why[160];
    const char *problem =
        image_problem(images[i].data, images[i].size, why, sizeof why);
    if (problem)
      return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                            "kiln_module_create: HIP image %zu of %zu is "
                            "malformed: %s",
                            i, count, problem);
  }
  hm->handles = calloc(count, sizeof *hm->handles);
  hm->images = calloc(count, sizeof *hm->images);
  hm->params = calloc(count, sizeof *hm->params);
  if (!hm->handles || !hm->images || !hm->params) {
    unload_all(hm);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_module_create: out of host memory");
  }
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(ctx, &scope);
  if (st != KILN_OK) {
    unload_all(hm);
    return st;
  }
  /* Loading a module may wait inside the runtime for the device's queued
   * work, held gates and all (CUDA's twin hung so under
   * KILN_DEBUG=reorder): they stay open while it loads. */
  kiln_hip_gates_stay_open(ctx, true);
  kiln_text skipped = {"", 0}, brief = {"", 0};
  for (size_t i = 0; i < count && st == KILN_OK; i++)
    st = load_one(hm, images, i, count, &skipped, &brief);
  kiln_hip_gates_stay_open(ctx, false);
  if (st == KILN_OK && hm->count == 0)
    st = kiln_set_error(KILN_ERROR_NO_IMAGE,
                        "kiln_module_create: no image loads on %s (%s): %s",
                        ctx->properties.name, ctx->properties.architecture,
                        skipped.buf);
  if (st == KILN_OK && brief.used && !(hm->skipped = strdup(brief.buf)))
    st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                        "kiln_module_create: out of host memory");
  if (st != KILN_OK) unload_all(hm);
  kiln_hip_device_leave(&scope);
  return st;
}

void kiln_hip_module_deinit(kiln_module *m) {
  kiln_hip_module *hm = kiln_hip_module_cast(m);
  kiln_hip_device_scope scope;
  if (kiln_hip_device_enter_for_deinit(m->base.context, &scope,
                                       "unloading a module")) {
    /* An unload may wait for queued work too. */
    kiln_hip_gates_stay_open(m->base.context, true);
    unload_all(hm);
    kiln_hip_gates_stay_open(m->base.context, false);
    kiln_hip_device_leave(&scope);
  } else {
    free_images(hm);
  }
}

kiln_status kiln_hip_kernel_init(kiln_kernel *k) {
  kiln_hip_kernel *hk = kiln_hip_kernel_cast(k);
  const kiln_hip_module *hm = kiln_hip_module_cast(k->module);
  const kiln_context *ctx = k->base.context;
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(ctx, &scope);
  if (st != KILN_OK) return st;
  /* The first module that has the name wins; hipErrorNotFound from one
   * that lacks it is expected. HIP 5 cannot list a module's kernels, so
   * each is asked in turn. The lookup may load the kernel and wait inside
   * the runtime for work already queued (HIP on NVIDIA: cuFuncLoad, as
   * CUDA's lazy loading would at the first launch; an H200 run under
   * KILN_DEBUG=reorder hung so for good): held gates stay open across it, as
   * backends/cuda/module.c does. */
  kiln_hip_gates_stay_open(ctx, true);
  hipError_t err = hipErrorNotFound;
  size_t found = 0;
  for (; found < hm->count && err == hipErrorNotFound; found++)
    err = kiln_hip_api.hipModuleGetFunction(&hk->function,
                                            hm->handles[found], k->name);
  kiln_hip_gates_stay_open(ctx, false);
  kiln_hip_device_leave(&scope);
  if (err == hipErrorNotFound)
    return kiln_set_error(KILN_ERROR_NOT_FOUND,
                          "the module has no kernel named '%.96s' (a C++ "
                          "kernel keeps this name only when declared extern "
                          "\"C\")%s%s",
                          k->name,
                          hm->skipped ? "; passed over for having no code "
                                        "for this device: "
                                      : "",
                          hm->skipped ? hm->skipped : "");
  if (err != hipSuccess) {
    return kiln_hip_error_as(err, KILN_ERROR_NOT_FOUND,
                             "looking up kernel '%.96s' in the module "
                             "(hipModuleGetFunction)",
                             k->name);
  }
  atomic_init(&hk->shared_limit, ctx->properties.max_shared_memory_per_block);
  /* The loop went one past the module that has it. */
  const kiln_kernel_params *kp =
      kiln_param_table_find(&hm->params[found - 1], k->name);
  if (kp && !kiln_kernel_params_apply(kp, k))
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_module_get_kernel: out of host memory");
  return KILN_OK;
}

void kiln_hip_kernel_deinit(kiln_kernel *k) {
  /* The function belongs to its module and goes with it. */
  (void)k;
}

/* A global variable: the first module that has the name gives it, as for
 * kernels. Runtimes answer a missing name with hipErrorNotFound (the
 * documented code) or, in some releases, hipErrorInvalidSymbol. */
kiln_status kiln_hip_module_global(kiln_module *m, const char *name,
                                   uint64_t *out_address, size_t *out_size) {
  const kiln_hip_module *hm = kiln_hip_module_cast(m);
  if (!kiln_hip_api.hipModuleGetGlobal)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "kiln_module_get_global: this HIP runtime has no "
                          "hipModuleGetGlobal");
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(m->base.context, &scope);
  if (st != KILN_OK) return st;
  hipError_t err = hipErrorNotFound;
  hipDeviceptr_t address = NULL;
  size_t size = 0;
  for (size_t i = 0; i < hm->count &&
                     (err == hipErrorNotFound || err == hipErrorInvalidSymbol);
       i++)
    err = kiln_hip_api.hipModuleGetGlobal(&address, &size, hm->handles[i],
                                          name);
  kiln_hip_device_leave(&scope);
  if (err == hipErrorNotFound || err == hipErrorInvalidSymbol)
    return kiln_set_error(KILN_ERROR_NOT_FOUND,
                          "kiln_module_get_global: the module has no "
                          "__device__ or __constant__ variable named "
                          "'%.96s' (C++ mangles the name of one declared in "
                          "a namespace)%s%s",
                          name,
                          hm->skipped ? "; passed over for having no code "
                                        "for this device: "
                                      : "",
                          hm->skipped ? hm->skipped : "");
  if (err != hipSuccess) {
    return kiln_hip_error(err,
                          "kiln_module_get_global: looking up '%.96s' in the "
                          "module (hipModuleGetGlobal)",
                          name);
  }
  *out_address = (uint64_t)(uintptr_t)address;
  *out_size = size;
  return KILN_OK;
}
