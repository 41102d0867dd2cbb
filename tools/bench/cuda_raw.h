/* kiln-bench's comparators, never part of the library: the raw CUDA driver
 * API (libcuda.so.1 loaded here, the same kernels launched with
 * cuLaunchKernel from the same fatbin bytes kiln embeds, cuMemcpyDtoD as the
 * device's copy ceiling, pinned cuMemcpyHtoD/DtoH), and cuBLAS SGEMM.
 *
 * Every call but open/close runs between cuda_raw_enter and cuda_raw_leave,
 * which make the comparator's context current on the calling thread and
 * restore kiln's afterwards; timed loops stay inside one enter/leave so that
 * the raw figures carry no extra cost. Failures are printed, with the
 * driver's error name, and return -1. */
#ifndef KILN_BENCH_CUDA_RAW_H
#define KILN_BENCH_CUDA_RAW_H

#include <kiln/kiln.h>

#include <stddef.h>
#include <stdint.h>

#include "bench.h"

typedef uint64_t raw_ptr; /* a CUdeviceptr */

/* Opens the CUDA device that is kiln's device (same UUID; device 0 when
 * kiln's device has no UUID) and loads `images` (fatbins; count may be 0).
 * NULL with the reason in `why` when the driver or the device is missing. */
cuda_raw *cuda_raw_open(const kiln_device_properties *kiln_device,
                        const kiln_module_image *images, size_t count,
                        char *why, size_t why_size);
void cuda_raw_close(cuda_raw *r);

/* "driver 13.0, device 0: NVIDIA H100 80GB HBM3"; owned by r. */
const char *cuda_raw_description(const cuda_raw *r);

/* The device's L2 cache in bytes (0 where the driver says none). */
int cuda_raw_l2_bytes(cuda_raw *r, size_t *out);

int cuda_raw_enter(cuda_raw *r);
void cuda_raw_leave(cuda_raw *r);

/* The kernel `name` of the loaded images; -1, and nothing printed, when
 * none has it (kiln-bench built without nvcc, or no code for this GPU). */
int cuda_raw_function(cuda_raw *r, const char *name, void **out_function);

/* cuModuleLoadData of `image` (cubin, fatbin or PTX), its kernel `name`,
 * and cuModuleUnload, for modules made at run time (the compile section). */
int cuda_raw_module_load(cuda_raw *r, const void *image, void **out_module);
int cuda_raw_module_function(cuda_raw *r, void *module, const char *name,
                             void **out_function);
void cuda_raw_module_unload(cuda_raw *r, void *module);

/* Says that `section` runs no raw-driver launches, for want of `kernel`. */
void cuda_raw_no_kernel(const char *section, const char *kernel);

/* A stream of its own, for work beside the comparator's stream; and which
 * stream the calls here use: cuda_raw_use_stream makes them use `stream`
 * (NULL: the comparator's own) and returns the one used before (NULL for
 * the comparator's own). */
int cuda_raw_stream_create(cuda_raw *r, void **out);
void cuda_raw_stream_destroy(cuda_raw *r, void *stream);
void *cuda_raw_use_stream(cuda_raw *r, void *stream);

/* Events without timing: recorded on, and waited for by, the stream in
 * use. */
int cuda_raw_event_create(cuda_raw *r, void **out);
void cuda_raw_event_destroy(cuda_raw *r, void *event);
int cuda_raw_event_record(cuda_raw *r, void *event);
int cuda_raw_wait_event(cuda_raw *r, void *event);

/* cuLaunchKernel on the comparator's stream; params as cuLaunchKernel's. */
int cuda_raw_launch(cuda_raw *r, void *function, unsigned grid_x,
                    unsigned grid_y, unsigned block_x, void **params);

/* Captures `count` launches of `function` (as cuda_raw_launch's, one block)
 * on the comparator's stream into an executable graph, in `branches`
 * chains of count / branches launches (streams forked from the
 * comparator's through an event and joined back, as kiln-bench's kiln
 * graph with branches); launches it there; destroys it. */
int cuda_raw_graph_capture(cuda_raw *r, void *function, unsigned block_x,
                           unsigned branches,
                           void **params, unsigned count, void **out_exec);
int cuda_raw_graph_launch(cuda_raw *r, void *exec);
void cuda_raw_graph_destroy(cuda_raw *r, void *exec);

/* Retains the primary context of the CUDA device that is `other` (by
 * UUID) for copies between it and the comparator's device, and enables
 * peer access both ways where the driver allows it (as kiln does);
 * *out_direct says whether it did. Released by cuda_raw_close. */
int cuda_raw_peer_open(cuda_raw *r, const kiln_device_properties *other,
                       bool *out_direct);
/* Device memory on the peer device (cuda_raw_peer_open first). */
int cuda_raw_peer_alloc(cuda_raw *r, size_t bytes, raw_ptr *out);
void cuda_raw_peer_free(cuda_raw *r, raw_ptr p);
/* cuMemcpyPeerAsync on the comparator's stream: `to_peer`, from the
 * comparator's device to the peer's, else back. The caller has entered. */
int cuda_raw_peer_copy(cuda_raw *r, raw_ptr dst, raw_ptr src, size_t bytes,
                       bool to_peer);

int cuda_raw_alloc(cuda_raw *r, size_t bytes, raw_ptr *out);
void cuda_raw_free(cuda_raw *r, raw_ptr p);
/* cuMemFree with its error reported, for timed loops; cuda_raw_free, for
 * clean-up, ignores it. */
int cuda_raw_free_checked(cuda_raw *r, raw_ptr p);

/* cuMemAllocAsync and cuMemFreeAsync on the stream in use, from the
 * device's default memory pool. */
int cuda_raw_alloc_async(cuda_raw *r, size_t bytes, raw_ptr *out);
int cuda_raw_free_async(cuda_raw *r, raw_ptr p);
/* cuMemAllocFromPoolAsync from a pool of the comparator's own, made as
 * kiln's CUDA backend makes its pool (keeping all it is given back, no
 * reuse through dependencies the driver adds); cuda_raw_free_async
 * releases it. */
int cuda_raw_alloc_own_pool(cuda_raw *r, size_t bytes, raw_ptr *out);
/* Makes the comparator's context current unless it is (cuCtxGetCurrent,
 * and cuCtxSetCurrent where another is): the check kiln's CUDA backend
 * makes before its driver calls, so that code which switched contexts
 * in between does not send them to the wrong one. */
int cuda_raw_make_current(cuda_raw *r);
/* Sets the release threshold of the device's default pool (how many
 * released bytes it keeps at a synchronize; UINT64_MAX keeps all) and
 * stores the one before in *out_before, to be set back afterwards. */
int cuda_raw_pool_keep(cuda_raw *r, uint64_t bytes, uint64_t *out_before);
/* The default pool's bytes held by live allocations. */
int cuda_raw_pool_used(cuda_raw *r, uint64_t *out_used);
int cuda_raw_host_alloc(cuda_raw *r, size_t bytes, void **out);
void cuda_raw_host_free(cuda_raw *r, void *p);

/* Queued on the comparator's stream. */
int cuda_raw_fill32(cuda_raw *r, raw_ptr dst, uint32_t value, size_t count);
int cuda_raw_dtod(cuda_raw *r, raw_ptr dst, raw_ptr src, size_t bytes);
int cuda_raw_htod(cuda_raw *r, raw_ptr dst, const void *src, size_t bytes);
int cuda_raw_dtoh(cuda_raw *r, void *dst, raw_ptr src, size_t bytes);
int cuda_raw_sync(cuda_raw *r);

/* The comparator's stream as a CUstream, for cuBLAS. */
void *cuda_raw_stream(cuda_raw *r);

/* Calls queue(arg) `iters` times between two CUDA events on the stream and
 * stores the elapsed device time in *ms. */
int cuda_raw_time(cuda_raw *r, int (*queue)(void *arg), void *arg,
                  unsigned iters, double *ms);

/* bench_measure of `queue` on b->raw, each sample timed with CUDA events
 * by cuda_raw_time (timing.c). Between enter and leave. */
int bench_measure_raw(const bench *b, int (*queue)(void *arg), void *arg,
                      double *ms_per_op);

/* bench_measure_kiln of `op` and bench_measure_raw of `queue`, taking
 * turns (bench_measure_turns), so that both see the same clocks. Between
 * enter and leave. */
int bench_measure_kiln_raw(bench *b, bench_kiln_op op, void *arg,
                           int (*queue)(void *arg), void *raw_arg,
                           double *kiln_ms, double *raw_ms);

/* ---- cuBLAS (cublas.c) --------------------------------------------------- */

/* Loads cuBLAS (KILN_BENCH_CUBLAS names the library; else libcublas.so.13,
 * .so.12, libcublas.so, then the same under /usr/local/cuda/lib64) and
 * creates a handle on r's stream with CUBLAS_DEFAULT_MATH, which keeps
 * float32 SGEMM off TF32 tensor cores. NULL with the reason in `why`. */
cublas *cublas_open(cuda_raw *r, char *why, size_t why_size);
void cublas_close(cublas *c, cuda_raw *r);

/* "cuBLAS 13.0.2 (libcublas.so.13)"; owned by c. */
const char *cublas_description(const cublas *c);

/* Makes c's handle queue on `stream` (a CUstream; NULL: r's own). */
int cublas_set_stream(cublas *c, cuda_raw *r, void *stream);

/* Queues row-major C = A * B (m x k times k x n) on r's stream. */
int cublas_sgemm(cublas *c, unsigned m, unsigned n, unsigned k, raw_ptr a,
                 unsigned lda, raw_ptr b, unsigned ldb, raw_ptr cm,
                 unsigned ldc);

/* Whether this cuBLAS has cublasGemmEx, which cublas_hgemm needs. */
bool cublas_has_hgemm(const cublas *c);

/* Queues row-major C = A * B with A and B in binary16 and C in float32,
 * summed in float32 (cublasGemmEx, CUBLAS_COMPUTE_32F). */
int cublas_hgemm(cublas *c, unsigned m, unsigned n, unsigned k, raw_ptr a,
                 unsigned lda, raw_ptr b, unsigned ldb, raw_ptr cm,
                 unsigned ldc);

#endif /* KILN_BENCH_CUDA_RAW_H */
