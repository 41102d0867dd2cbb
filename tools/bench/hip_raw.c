/* The raw HIP comparator (hip_raw.h). HIP's types come from kiln's own
 * declaration of the HIP API (backends/hip/hip.h, its API part only, as
 * the test shim takes it): ROCm's headers are absent from most machines
 * kiln-bench is built on, and tests/hip/api_check.c proves kiln's equal to
 * them where they exist. */
#include "hip_raw.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KILN_HIP_API_ONLY
#include "backends/hip/hip.h"

#include "bench.h"

/* The entry points used, X(name, parameters). */
#define HIP_RAW_ENTRY_POINTS(X)                                              \
  X(hipGetDevice, (int *device))                                             \
  X(hipSetDevice, (int device))                                              \
  X(hipMemPoolCreate, (hipMemPool_t * pool, const hipMemPoolProps *props))   \
  X(hipMemPoolDestroy, (hipMemPool_t pool))                                  \
  X(hipMemPoolSetAttribute,                                                  \
    (hipMemPool_t pool, hipMemPoolAttr attr, void *value))                   \
  X(hipMallocFromPoolAsync,                                                  \
    (void **ptr, size_t size, hipMemPool_t pool, hipStream_t stream))        \
  X(hipFreeAsync, (void *ptr, hipStream_t stream))                           \
  X(hipStreamSynchronize, (hipStream_t stream))

struct hip_raw {
#define HIP_RAW_SLOT(name, params) hipError_t(*name) params;
  HIP_RAW_ENTRY_POINTS(HIP_RAW_SLOT)
#undef HIP_RAW_SLOT
  int device;
  hipStream_t stream;
  hipMemPool_t pool;
};

/* The runtime kiln loaded, looked for under the names backends/hip/
 * loader.c tries, and only if already loaded: another copy would be
 * another runtime. */
static void *loaded_runtime(void) {
  const char *named = getenv("KILN_HIP_LIBRARY");
  if (named && *named) return dlopen(named, RTLD_NOW | RTLD_NOLOAD);
  static const char *const names[] = {KILN_HIP_RUNTIME_NAMES};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
    if (lib) return lib;
  }
  return NULL;
}

hip_raw *hip_raw_open(kiln_context *ctx, kiln_stream *stream, char *why,
                      size_t why_size) {
  kiln_native_context nc;
  kiln_native_stream ns;
  if (kiln_context_get_native(ctx, &nc) != KILN_OK ||
      kiln_stream_get_native(stream, &ns) != KILN_OK) {
    snprintf(why, why_size, "kiln's native handles: %s", kiln_last_error());
    return NULL;
  }
  if (nc.backend != KILN_BACKEND_HIP) {
    snprintf(why, why_size, "the context is not HIP's");
    return NULL;
  }
  void *lib = loaded_runtime();
  if (!lib) {
    snprintf(why, why_size, "the HIP runtime kiln uses is not loaded");
    return NULL;
  }
  hip_raw *r = calloc(1, sizeof *r);
  if (!r) {
    dlclose(lib);
    snprintf(why, why_size, "out of host memory");
    return NULL;
  }
  const char *missing = NULL;
  /* Copied, not cast: ISO C has no conversion from void * to a function
   * pointer. */
#define HIP_RAW_LOAD(name, params)                                   \
  if (!missing) {                                                    \
    void *symbol = dlsym(lib, #name);                                \
    if (symbol) memcpy(&r->name, &symbol, sizeof symbol);            \
    else missing = #name;                                            \
  }
  HIP_RAW_ENTRY_POINTS(HIP_RAW_LOAD)
#undef HIP_RAW_LOAD
  /* kiln holds the runtime loaded until the process ends. */
  dlclose(lib);
  if (missing) {
    snprintf(why, why_size, "the HIP runtime has no %s", missing);
    free(r);
    return NULL;
  }
  r->device = nc.hip_device;
  r->stream = (hipStream_t)ns.stream;
  hipMemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = hipMemAllocationTypePinned;
  props.handleTypes = hipMemHandleTypeNone;
  props.location.type = hipMemLocationTypeDevice;
  props.location.id = r->device;
  uint64_t keep = UINT64_MAX;
  int no = 0;
  /* The pool is made on kiln's device, as kiln makes its own inside its
   * device scope. */
  int was = 0;
  hipError_t err = r->hipGetDevice(&was);
  const char *failed = "hipGetDevice";
  if (err == hipSuccess) {
    failed = "hipSetDevice";
    err = r->hipSetDevice(r->device);
  }
  if (err == hipSuccess) {
    failed = "hipMemPoolCreate";
    err = r->hipMemPoolCreate(&r->pool, &props);
  }
  /* Kept and never shared between streams by the runtime, as kiln's
   * (backends/hip/pool.c). */
  if (err == hipSuccess) {
    failed = "hipMemPoolSetAttribute";
    err = r->hipMemPoolSetAttribute(r->pool, hipMemPoolAttrReleaseThreshold,
                                    &keep);
  }
  if (err == hipSuccess)
    err = r->hipMemPoolSetAttribute(
        r->pool, hipMemPoolReuseAllowInternalDependencies, &no);
  if (was != r->device) r->hipSetDevice(was);
  if (err != hipSuccess) {
    snprintf(why, why_size, "%s failed: hipError_t %d", failed, (int)err);
    hip_raw_close(r);
    return NULL;
  }
  return r;
}

void hip_raw_close(hip_raw *r) {
  if (!r) return;
  hipError_t err = hipSuccess;
  const char *failed = NULL;
  if (r->pool) {
    failed = "hipStreamSynchronize";
    err = r->hipStreamSynchronize(r->stream);
    if (err == hipSuccess) {
      failed = "hipMemPoolDestroy";
      err = r->hipMemPoolDestroy(r->pool);
    }
  }
  if (err != hipSuccess)
    fprintf(stderr,
            "kiln-bench: raw HIP: %s failed: hipError_t %d (the "
            "comparator's pool may be left behind)\n",
            failed, (int)err);
  free(r);
}

int hip_raw_pairs(hip_raw *r, size_t size, unsigned pairs, double *loop_s) {
  /* No device is selected around the pairs: kiln's stream-ordered pair
   * selects none either, the stream and the pool naming the device. */
  const double t0 = bench_now();
  hipError_t err = hipSuccess;
  const char *failed = NULL;
  for (unsigned i = 0; i < pairs && err == hipSuccess; i++) {
    void *p = NULL;
    err = r->hipMallocFromPoolAsync(&p, size, r->pool, r->stream);
    failed = "hipMallocFromPoolAsync";
    if (err == hipSuccess) {
      err = r->hipFreeAsync(p, r->stream);
      failed = "hipFreeAsync";
    }
  }
  *loop_s = bench_now() - t0;
  if (err == hipSuccess) {
    err = r->hipStreamSynchronize(r->stream);
    failed = "hipStreamSynchronize";
  }
  if (err == hipSuccess) return 0;
  fprintf(stderr, "kiln-bench: raw HIP: %s failed: hipError_t %d\n", failed,
          (int)err);
  return -1;
}
