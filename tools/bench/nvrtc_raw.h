/* kiln-bench's run-time compilation comparator, never part of the library:
 * NVRTC loaded and called directly, so that what kiln adds around it (the
 * cache key, the checks, the module's bookkeeping) shows as the difference.
 * Failures are printed, with NVRTC's error string and log, and return -1. */
#ifndef KILN_BENCH_NVRTC_RAW_H
#define KILN_BENCH_NVRTC_RAW_H

#include <stddef.h>

typedef struct nvrtc_raw nvrtc_raw;

/* Loads NVRTC: KILN_NVRTC_LIBRARY when set, else libnvrtc.so.13, .so.12,
 * then the same under /usr/local/cuda/lib64. NULL with the reason in `why`
 * when none loads. */
nvrtc_raw *nvrtc_raw_open(char *why, size_t why_size);
void nvrtc_raw_close(nvrtc_raw *n);

/* "NVRTC 13.0 (libnvrtc.so.13)"; owned by n. */
const char *nvrtc_raw_description(const nvrtc_raw *n);

/* Compiles the CUDA C++ `text`, named `name` in messages, with NVRTC's
 * `options` ("-arch=sm_90") and returns the CUBIN in *out_cubin, malloc'd,
 * for the caller to free. */
int nvrtc_raw_compile(nvrtc_raw *n, const char *text, const char *name,
                      const char *const *options, int option_count,
                      void **out_cubin, size_t *out_size);

#endif /* KILN_BENCH_NVRTC_RAW_H */
