/* Modules from HIP code objects (hipcc --genco output: a clang offload
 * bundle with one code object per gfx target, or a bare code object), and
 * kernels looked up in them by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/hip/hip.h"

static uint64_t read_le(const unsigned char *p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = bytes; i-- > 0;) v = v << 8 | p[i];
  return v;
}

/* Whether [offset, offset + count * each) lies within size bytes. */
static bool within(uint64_t offset, uint64_t count, uint64_t each,
                   size_t size) {
  if (each != 0 && count > (UINT64_MAX - offset) / each) return false;
  return offset + count * each <= size;
}

#define BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"

/*
 * hipModuleLoadData takes no size: the runtime trusts the sizes written in
 * the image itself. kiln is told the real size, so it checks that what the
 * image claims lies within it before the runtime reads past a truncated
 * one: an offload bundle, an ELF code object, or (HIP on NVIDIA) a CUDA
 * fatbin. Other formats (a compressed bundle, PTX text) are left to the
 * runtime to judge.
 */
static bool image_fits(const unsigned char *p, size_t size, char *why,
                       size_t why_size) {
  /* Smaller than any header the runtime starts by reading. */
  if (size < 32) {
    snprintf(why, why_size, "%zu bytes are too few for a code object", size);
    return false;
  }
  size_t magic = sizeof BUNDLE_MAGIC - 1;
  if (memcmp(p, BUNDLE_MAGIC, magic) == 0) {
    uint64_t entries = read_le(p + magic, 8);
    uint64_t at = magic + 8;
    for (uint64_t e = 0; e < entries; e++) {
      if (!within(at, 3, 8, size)) {
        snprintf(why, why_size, "the offload bundle's entry %llu is cut short",
                 (unsigned long long)e);
        return false;
      }
      uint64_t offset = read_le(p + at, 8), bytes = read_le(p + at + 8, 8);
      uint64_t id_bytes = read_le(p + at + 16, 8);
      at += 24;
      if (!within(at, id_bytes, 1, size) || !within(offset, bytes, 1, size)) {
        snprintf(why, why_size,
                 "the offload bundle's entry %llu lies past the image's "
                 "%zu bytes",
                 (unsigned long long)e, size);
        return false;
      }
      at += id_bytes;
    }
    return true;
  }
  if (memcmp(p, "\177ELF", 4) == 0) {
    /* 64-bit little-endian ELF: the program and section header tables,
     * and the contents of every section that has some in the file. */
    if (size < 64 || p[4] != 2 || p[5] != 1) {
      snprintf(why, why_size, "not a 64-bit little-endian ELF code object");
      return false;
    }
    uint64_t sections = read_le(p + 0x28, 8);
    uint64_t section_bytes = read_le(p + 0x3a, 2);
    uint64_t section_count = read_le(p + 0x3c, 2);
    bool fits = within(read_le(p + 0x20, 8), read_le(p + 0x38, 2),
                       read_le(p + 0x36, 2), size) &&
                within(sections, section_count, section_bytes, size) &&
                (section_count == 0 || section_bytes >= 0x28);
    for (uint64_t i = 0; fits && i < section_count; i++) {
      const unsigned char *h = p + sections + i * section_bytes;
      const uint32_t nobits = 8;
      if (read_le(h + 4, 4) != nobits)
        fits = within(read_le(h + 0x18, 8), read_le(h + 0x20, 8), 1, size);
    }
    if (!fits) {
      snprintf(why, why_size,
               "the code object's headers or sections lie past the image's "
               "%zu bytes",
               size);
      return false;
    }
  }
  /* A fatbin: magic, version, header size (16 bits each but the first),
   * then the size of what follows the header. */
  if (read_le(p, 4) == 0xba55ed50u) {
    if (!within(read_le(p + 6, 2), read_le(p + 8, 8), 1, size)) {
      snprintf(why, why_size, "the fatbin is cut short of its %zu bytes",
               size);
      return false;
    }
  }
  return true;
}

kiln_status kiln_hip_module_init(kiln_module *m,
                                 const kiln_module_image *images,
                                 size_t count) {
  kiln_hip_module *hm = kiln_hip_module_cast(m);
  const kiln_context *ctx = m->base.context;
  for (size_t i = 0; i < count; i++) {
    char why[160];
    if (!image_fits(images[i].data, images[i].size, why, sizeof why))
      return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                            "HIP image %zu (%zu bytes) is malformed: %s",
                            i, images[i].size, why);
  }
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(ctx, &scope);
  if (st != KILN_OK) return st;
  /* The images are alternatives (say, bundles for different ROCm
   * releases): the first one the runtime loads for this device wins. A
   * failure other than "no code for this device" is the one reported. */
  hipError_t reported = hipSuccess;
  size_t reported_index = 0;
  for (size_t i = 0; i < count; i++) {
    /* With a NUL after it, so that text (PTX under HIP on NVIDIA) is never
     * read past its end. */
    unsigned char *copy = malloc(images[i].size + 1);
    if (!copy) {
      kiln_hip_device_leave(&scope);
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "hip: no memory for a %zu-byte code object",
                            images[i].size);
    }
    memcpy(copy, images[i].data, images[i].size);
    copy[images[i].size] = 0;
    hipError_t err = kiln_hip_api.hipModuleLoadData(&hm->handle, copy);
    if (err == hipSuccess) {
      kiln_hip_device_leave(&scope);
      hm->image = copy;
      return KILN_OK;
    }
    free(copy);
    if (reported == hipSuccess || reported == hipErrorNoBinaryForGpu) {
      reported = err;
      reported_index = i;
    }
    if (kiln_hip_status(err, KILN_ERROR_INVALID_IMAGE) ==
        KILN_ERROR_DEVICE_LOST)
      break;
  }
  kiln_hip_device_leave(&scope);
  char description[256];
  kiln_hip_describe(reported, description, sizeof description);
  if (reported == hipErrorNoBinaryForGpu)
    return kiln_set_error(KILN_ERROR_NO_IMAGE,
                          "none of the %zu HIP code objects has code for "
                          "this device (%s): %s",
                          count, ctx->properties.architecture, description);
  char what[96];
  snprintf(what, sizeof what,
           "loading HIP image %zu of the %zu given (hipModuleLoadData)",
           reported_index, count);
  return kiln_hip_error(reported, KILN_ERROR_INVALID_IMAGE, what);
}

void kiln_hip_module_deinit(kiln_module *m) {
  kiln_hip_module *hm = kiln_hip_module_cast(m);
  kiln_hip_device_scope scope;
  if (kiln_hip_device_enter(m->base.context, &scope) == KILN_OK) {
    hipError_t err = kiln_hip_api.hipModuleUnload(hm->handle);
    kiln_hip_device_leave(&scope);
    if (err != hipSuccess) kiln_hip_warn(err, "hipModuleUnload");
  } else {
    kiln_log(KILN_LOG_WARN, "hip: unloading a module: %s", kiln_last_error());
  }
  free(hm->image);
}

kiln_status kiln_hip_kernel_init(kiln_kernel *k) {
  kiln_hip_kernel *hk = kiln_hip_kernel_cast(k);
  const kiln_context *ctx = k->base.context;
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(ctx, &scope);
  if (st != KILN_OK) return st;
  hipError_t err = kiln_hip_api.hipModuleGetFunction(
      &hk->function, kiln_hip_module_cast(k->module)->handle, k->name);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess) {
    char what[160];
    snprintf(what, sizeof what,
             "the module has no kernel named '%.96s' (hipModuleGetFunction)",
             k->name);
    return kiln_hip_error(err, KILN_ERROR_NOT_FOUND, what);
  }
  atomic_init(&hk->shared_limit, ctx->properties.max_shared_memory_per_block);
  return KILN_OK;
}

void kiln_hip_kernel_deinit(kiln_kernel *k) {
  /* The function belongs to its module and goes with it. */
  (void)k;
}
