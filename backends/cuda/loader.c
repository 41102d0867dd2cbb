/* Finds the CUDA driver at run time: dlopen of libcuda.so.1 (or
 * KILN_CUDA_LIBRARY), then every entry point through cuGetProcAddress with
 * the CUDA version whose ABI kiln calls (see symbols.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "backends/common/common.h"
#include "backends/cuda/cuda.h"

/* cuGetProcAddress_v2, with the symbol-status argument, came with 12.0;
 * every entry point kiln requires is older. */
#define KILN_CUDA_MIN_DRIVER 12000
/* cuEventElapsedTime_v2 (12.8) has v1's signature; cuda.h routes the name
 * to it from 12.8 on, so kiln takes it wherever the driver has it. */
#define KILN_CUDA_ELAPSED_TIME_V2 12080

kiln_cuda_api_table kiln_cuda_api;

/* The driver library the last successful load kept open. */
static void *kept;

static void version_text(int version, char *buf, size_t size) {
  snprintf(buf, size, "%d.%d", version / 1000, version % 1000 / 10);
}

/* Resolves `name` at ABI `version` into *out_fn; the reason in words when
 * the driver lacks it. */
static bool resolve(PFN_cuGetProcAddress_v12000 get_proc, const char *name,
                    int version, void *out_fn, size_t fn_size, char *why,
                    size_t why_size) {
  void *fn = NULL;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = get_proc(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT,
                        &found);
  if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && fn) {
    memcpy(out_fn, &fn, fn_size);
    return true;
  }
  char v[16];
  version_text(version, v, sizeof v);
  if (r != CUDA_SUCCESS)
    snprintf(why, why_size, "cuGetProcAddress(\"%s\", CUDA %s) failed with "
             "CUresult %d", name, v, (int)r);
  else if (found == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
    snprintf(why, why_size, "it has no %s with the CUDA %s signature kiln "
             "calls", name, v);
  else
    snprintf(why, why_size, "it lacks %s (CUDA %s)", name, v);
  return false;
}

static kiln_status resolve_all(PFN_cuGetProcAddress_v12000 get_proc,
                               const char *library, char *reason,
                               size_t reason_size) {
  char why[256];
  char have[16];
  version_text(kiln_cuda_api.driver_version, have, sizeof have);
#define KILN_CUDA_REQUIRED(name, version)                                    \
  if (!resolve(get_proc, #name, version, &kiln_cuda_api.name,                \
               sizeof kiln_cuda_api.name, why, sizeof why)) {                \
    snprintf(reason, reason_size, "the CUDA %s driver in %s cannot be "      \
             "used: %s", have, library, why);                                \
    return KILN_ERROR_UNAVAILABLE;                                           \
  }
  KILN_CUDA_SYMBOLS(KILN_CUDA_REQUIRED)
#undef KILN_CUDA_REQUIRED
  /* Asked for only from drivers new enough to have them. */
#define KILN_CUDA_OPTIONAL(name, version)                                    \
  if (kiln_cuda_api.driver_version >= version &&                             \
      !resolve(get_proc, #name, version, &kiln_cuda_api.name,                \
               sizeof kiln_cuda_api.name, why, sizeof why))                  \
    kiln_log(KILN_LOG_DEBUG, "cuda: doing without %s: %s", #name, why);
  KILN_CUDA_OPTIONAL_SYMBOLS(KILN_CUDA_OPTIONAL)
#undef KILN_CUDA_OPTIONAL
  if (kiln_cuda_api.driver_version >= KILN_CUDA_ELAPSED_TIME_V2 &&
      !resolve(get_proc, "cuEventElapsedTime", KILN_CUDA_ELAPSED_TIME_V2,
               &kiln_cuda_api.cuEventElapsedTime,
               sizeof kiln_cuda_api.cuEventElapsedTime, why, sizeof why))
    kiln_log(KILN_LOG_DEBUG, "cuda: keeping cuEventElapsedTime v1: %s", why);
  return KILN_OK;
}

kiln_status kiln_cuda_load(char *reason, size_t reason_size) {
  const char *library = kiln_getenv("KILN_CUDA_LIBRARY");
  if (!library) library = "libcuda.so.1";
  char why[512] = "";
  void *handle = kiln_library_open(library, 0, why, sizeof why);
  if (!handle) {
    snprintf(reason, reason_size,
             "%s could not be loaded (%s); the NVIDIA driver does not seem "
             "to be installed",
             library, why[0] ? why : "no reason given");
    return KILN_ERROR_UNAVAILABLE;
  }

  PFN_cuDriverGetVersion_v2020 get_version;
  PFN_cuGetProcAddress_v12000 get_proc;
  int version = 0;
  char have[16];
  CUresult r;
  if (!kiln_library_symbol(handle, "cuDriverGetVersion", &get_version,
                           sizeof get_version)) {
    snprintf(reason, reason_size, "%s is not a CUDA driver library: it has "
             "no cuDriverGetVersion", library);
    goto fail;
  }
  r = get_version(&version);
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    snprintf(reason, reason_size, "%s is the CUDA toolkit's stub library "
             "(CUDA_ERROR_STUB_LIBRARY), not a driver: install the NVIDIA "
             "driver, or point KILN_CUDA_LIBRARY at its libcuda.so.1",
             library);
    goto fail;
  }
  if (r != CUDA_SUCCESS) {
    snprintf(reason, reason_size, "cuDriverGetVersion in %s failed with "
             "CUresult %d", library, (int)r);
    goto fail;
  }
  version_text(version, have, sizeof have);
  if (version < KILN_CUDA_MIN_DRIVER) {
    snprintf(reason, reason_size, "the CUDA driver in %s is too old: it "
             "implements CUDA %s, and kiln needs CUDA 12.0 or newer (update "
             "the NVIDIA driver)", library, have);
    goto fail;
  }
  if (!kiln_library_symbol(handle, "cuGetProcAddress_v2", &get_proc,
                           sizeof get_proc)) {
    snprintf(reason, reason_size, "the CUDA %s driver in %s has no "
             "cuGetProcAddress_v2", have, library);
    goto fail;
  }

  memset(&kiln_cuda_api, 0, sizeof kiln_cuda_api);
  kiln_cuda_api.driver_version = version;
  if (resolve_all(get_proc, library, reason, reason_size) != KILN_OK) {
    memset(&kiln_cuda_api, 0, sizeof kiln_cuda_api);
    goto fail;
  }
  kiln_log(KILN_LOG_DEBUG, "cuda: loaded %s, CUDA %s driver", library, have);
  /* The library stays loaded for the life of the process: contexts, and
   * other CUDA code in it, may use the driver until exit. A probe after a
   * failed one (cuInit failed, then KILN_CUDA_LIBRARY changed) may open the
   * same library again: one reference is enough. */
  if (handle == kept) dlclose(handle);
  kept = handle;
  return KILN_OK;

fail:
  dlclose(handle);
  return KILN_ERROR_UNAVAILABLE;
}
