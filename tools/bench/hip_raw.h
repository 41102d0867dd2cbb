/* kiln-bench's raw HIP comparator for the alloc section, never part of the
 * library: stream-ordered allocation through the very HIP runtime kiln
 * loaded (libamdhip64, or whatever KILN_HIP_LIBRARY names, such as the
 * HIP-on-CUDA test shim), on kiln's own stream, from a pool made as kiln's
 * HIP backend makes its own. kiln's HIP pair is held to this, not to the
 * CUDA driver: through the shim, the shim's own translation is then on
 * both sides. */
#ifndef KILN_BENCH_HIP_RAW_H
#define KILN_BENCH_HIP_RAW_H

#include <kiln/kiln.h>

#include <stddef.h>

typedef struct hip_raw hip_raw;

/* Opens the comparator on the HIP context `ctx` and the stream `stream`.
 * NULL with the reason in `why` when that cannot be done (not HIP, the
 * runtime not loaded, an entry point or the pool missing). */
hip_raw *hip_raw_open(kiln_context *ctx, kiln_stream *stream, char *why,
                      size_t why_size);

/* Waits for the stream, destroys the pool and frees `r`. NULL is a no-op. */
void hip_raw_close(hip_raw *r);

/* `pairs` times hipMallocFromPoolAsync of `size` bytes then hipFreeAsync,
 * on kiln's stream; then, after *loop_s (the host's loop alone, seconds)
 * is taken, hipStreamSynchronize. A failure is printed and returns -1. */
int hip_raw_pairs(hip_raw *r, size_t size, unsigned pairs, double *loop_s);

#endif /* KILN_BENCH_HIP_RAW_H */
