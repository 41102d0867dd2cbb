/* kiln-bench's raw Vulkan comparator, never part of the library: a kernel
 * dispatched through the Vulkan driver directly, on kiln's own VkDevice and
 * the queue of a kiln stream, so that what the driver itself costs per
 * dispatch shows beside what kiln's replay costs. The dispatches are
 * recorded once into four command buffers: "ordered", with the barrier
 * kiln records between two commands of a stream, "unordered", with none,
 * and "in levels", with that barrier only between levels of `level`
 * dispatches (as kiln replays a graph of that many branches), plainly and
 * as kiln records a graph (for simultaneous use, a barrier first and one
 * to the host at the end); and as a stream's batch, once or at each run
 * (vulkan_raw_batch_run).
 *
 * The queue is one kiln submits to too, and Vulkan wants a queue's
 * submissions externally synchronized: vulkan_raw_run must be called from
 * the one thread that drives kiln, while kiln has no work in flight on the
 * stream's context (after a synchronize). Built only with the Vulkan
 * backend (KILN_BENCH_VULKAN_RAW), whose build found the Vulkan headers. */
#ifndef KILN_BENCH_VULKAN_RAW_H
#define KILN_BENCH_VULKAN_RAW_H

#include <kiln/kiln.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct vulkan_raw vulkan_raw;

typedef enum vulkan_raw_order {
  VULKAN_RAW_UNORDERED,
  VULKAN_RAW_ORDERED,
  VULKAN_RAW_LEVELS,
  VULKAN_RAW_LEVELS_AS_KILN, /* begun and ended as kiln records a graph */
  VULKAN_RAW_ORDERS
} vulkan_raw_order;

/* Opens the comparator on the Vulkan context `ctx` and the queue of
 * `stream` (not capturing), and records `dispatches` dispatches of
 * `grid_x` blocks of `block_x` threads of the kernel `entry` of the first
 * SPIR-V image among `images[0..count)`, each given the push-constant bytes
 * `args` (`arg_bytes`, a multiple of 4, as kiln packs the kernel's
 * arguments), the levels `level` dispatches each. NULL with the reason in
 * `why` when that cannot be done. */
vulkan_raw *vulkan_raw_open(kiln_context *ctx, kiln_stream *stream,
                            const kiln_module_image *images, size_t count,
                            const char *entry, uint32_t grid_x,
                            uint32_t block_x, const void *args,
                            uint32_t arg_bytes,
                            unsigned dispatches, unsigned level, char *why,
                            size_t why_size);

/* vulkan_raw_open of kiln-bench's empty kernel (kiln_bench_empty, of
 * kiln_bench_images), its arguments as kiln's launches give them: `buf`'s
 * address and n = 0. NULL where that cannot be done, the reason printed
 * with `section`'s name. */
typedef struct bench bench;
vulkan_raw *vulkan_raw_open_empty(bench *b, const kiln_buffer *buf,
                                  uint32_t block_x, unsigned dispatches,
                                  unsigned level, const char *section);

/* Waits for what the comparator submitted and destroys what it made.
 * NULL is a no-op. */
void vulkan_raw_close(vulkan_raw *r);

/* Submits the command buffer of that order and waits until it is done,
 * the way kiln's synchronize waits under the context's sync policy. A
 * failure is printed, with the VkResult, and returns -1. */
int vulkan_raw_run(vulkan_raw *r, vulkan_raw_order order);

/* kiln's stream batch of the dispatches (the barrier first and the one to
 * the host at the end, as VULKAN_RAW_LEVELS_AS_KILN, begun as a stream's
 * batch is rather than for simultaneous use): recorded once at open, or
 * recorded again before each run into a buffer its begin resets, as kiln
 * records each launch. (A pool reset whole before each recording cost the
 * same on the H200's driver, 2026-11-29, and was taken out.) Or, recorded
 * once, the batch with no barrier before its first command and one at its
 * end that orders it before every later submission's commands as well as
 * the host: what the barrier first is worth. */
typedef enum vulkan_raw_batch {
  VULKAN_RAW_BATCH_ONCE,
  VULKAN_RAW_BATCH_AGAIN,
  VULKAN_RAW_BATCH_TAIL
} vulkan_raw_batch;

/* Submits that batch and waits as vulkan_raw_run does. */
int vulkan_raw_batch_run(vulkan_raw *r, vulkan_raw_batch how);

#endif /* KILN_BENCH_VULKAN_RAW_H */
