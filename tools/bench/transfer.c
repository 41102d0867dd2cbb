/* Transfers, 4 KiB to 1 GiB, host to device and device to host:
 *  - pageable: malloc'd memory through kiln_buffer_write/read, timed on the
 *    host clock up to completion, since kiln may stage the bytes itself;
 *  - pinned: kiln host buffers through the async forms, timed with kiln
 *    events;
 *  - raw: cuMemcpyHtoDAsync/DtoHAsync from cuMemAllocHost memory, timed with
 *    CUDA events;
 *  - d2d: kiln_buffer_copy between two device buffers against
 *    cuMemcpyDtoDAsync, counting bytes read and written (2 x size), which
 *    shows what a device copy costs on the queue kiln runs it on (Vulkan:
 *    KILN_VULKAN_TRANSFER).
 * Every kind moves a different slice of its buffers at each operation,
 * rotating over up to ROTATE_BYTES: a size that fits the device's cache
 * (50 MB of L2 on an H200) copied from one place again and again was
 * served from it, and read 306 GB/s "over" a link of 55. Each figure of a
 * transfer between host and device is then held to the PCIe link's
 * ceiling by the run's check (plausible.c): one above it is a wrong
 * measurement, and fails the run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"

#define FIRST ((size_t)4 << 10)
#define LAST ((size_t)1 << 30)
#define QUICK_LAST ((size_t)256 << 10)
#define SEED_PAGEABLE 3u
#define SEED_PINNED 4u
/* Past the last-level cache of any GPU kiln runs on (the largest, AMD's
 * Infinity Cache, is 256 MiB). */
#define ROTATE_BYTES ((size_t)512 << 20)

enum kind { H2D_PAGEABLE, H2D_PINNED, D2H_PAGEABLE, D2H_PINNED, D2D, KINDS };

static const char *const names[KINDS] = {
    "h2d-pageable", "h2d-pinned", "d2h-pageable", "d2h-pinned", "d2d"};

typedef struct transfer_state {
  bench *b;
  kiln_buffer *dev, *dev2;
  kiln_host_buffer *pinned_src, *pinned_dst;
  float *pageable_src, *pageable_dst;
  raw_ptr rdev, rdev2;
  void *rhost;
  size_t size; /* of the transfer being timed */
  enum kind kind;
  /* The slices of `size` bytes the operations rotate over, and the next
   * one's number. */
  size_t slots;
  size_t next;
  size_t largest; /* the buffers' size */
} transfer_state;

/* The offset of the next operation's slice. */
static size_t slice(transfer_state *t) {
  return (t->next++ % t->slots) * t->size;
}

/* Pageable transfers on the host clock: a write is done once the stream
 * is synchronized, a read when it returns. */
static int pageable_batch(void *self, unsigned iters, double *ms) {
  transfer_state *t = self;
  bench *b = t->b;
  double t0 = bench_now();
  for (unsigned i = 0; i < iters; i++) {
    const size_t at = slice(t);
    if (t->kind == H2D_PAGEABLE)
      BENCH_CHECK(kiln_buffer_write(b->stream, t->dev, at,
                                    (const char *)t->pageable_src + at,
                                    t->size));
    else
      BENCH_CHECK(kiln_buffer_read(b->stream, t->dev, at,
                                   (char *)t->pageable_dst + at, t->size));
  }
  BENCH_CHECK(kiln_stream_synchronize(b->stream));
  *ms = (bench_now() - t0) * 1e3;
  return 0;
}

static kiln_status pinned_op(bench *b, void *arg) {
  transfer_state *t = arg;
  const size_t at = slice(t);
  if (t->kind == D2D)
    return kiln_buffer_copy(b->stream, t->dev2, at, t->dev, at, t->size);
  if (t->kind == H2D_PINNED)
    return kiln_buffer_write_async(b->stream, t->dev, at, t->pinned_src, at,
                                   t->size);
  return kiln_buffer_read_async(b->stream, t->dev, at, t->pinned_dst, at,
                                t->size);
}

static int raw_op(void *arg) {
  transfer_state *t = arg;
  const size_t at = slice(t);
  if (t->kind == D2D)
    return cuda_raw_dtod(t->b->raw, t->rdev2 + at, t->rdev + at, t->size);
  if (t->kind == H2D_PINNED)
    return cuda_raw_htod(t->b->raw, t->rdev + at, (char *)t->rhost + at,
                         t->size);
  return cuda_raw_dtoh(t->b->raw, (char *)t->rhost + at, t->rdev + at,
                       t->size);
}

/* A copy on the device runs over its slices of both buffers; the
 * transfers between host and device are held to the link instead. */
static size_t device_footprint(const transfer_state *t) {
  return t->kind == D2D ? 2 * t->slots * t->size : 0;
}

static int measure(transfer_state *t, enum kind kind, double *gbps) {
  double ms;
  t->kind = kind;
  t->next = 0;
  int result = kind == H2D_PAGEABLE || kind == D2H_PAGEABLE
                   ? bench_measure(t->b, pageable_batch, t, &ms)
                   : bench_measure_kiln(t->b, pinned_op, t, &ms);
  if (result != 0) return -1;
  *gbps = (double)t->size * (kind == D2D ? 2 : 1) / (ms * 1e6);
  bench_result r = {"transfer", names[kind], "kiln", t->size, ms, *gbps,
                    "GB/s", device_footprint(t)};
  return bench_record(t->b, &r);
}

static int measure_raw(transfer_state *t, enum kind kind, double *gbps) {
  double ms;
  t->kind = kind;
  t->next = 0;
  if (cuda_raw_enter(t->b->raw) != 0) return -1;
  int result = bench_measure_raw(t->b, raw_op, t, &ms);
  cuda_raw_leave(t->b->raw);
  if (result != 0) return -1;
  *gbps = (double)t->size * (kind == D2D ? 2 : 1) / (ms * 1e6);
  bench_result r = {"transfer", names[kind], "cuda-raw", t->size, ms, *gbps,
                    "GB/s", device_footprint(t)};
  return bench_record(t->b, &r);
}

/* Whether what went to the device came back. */
static void compare(transfer_state *t, const void *got, const void *sent,
                    const char *path) {
  if (memcmp(got, sent, t->size) != 0)
    bench_wrong(t->b, "%zu bytes sent %s did not come back unchanged",
                t->size, path);
}

static int run_size(transfer_state *t) {
  bench *b = t->b;
  t->slots = (t->largest < ROTATE_BYTES ? t->largest : ROTATE_BYTES) / t->size;
  if (t->slots == 0) t->slots = 1;
  double gbps[KINDS], raw_h2d = -1.0, raw_d2h = -1.0, raw_d2d = -1.0;
  const uint32_t zero = 0;
  void *pinned_dst = kiln_host_buffer_data(t->pinned_dst);
  /* Each destination is cleared first, so that an earlier size's bytes
   * cannot pass for this size's. */
  BENCH_CHECK(kiln_buffer_fill(b->stream, t->dev, 0, t->size, &zero, 4));
  memset(pinned_dst, 0, t->size);
  if (measure(t, H2D_PAGEABLE, &gbps[H2D_PAGEABLE]) != 0 ||
      measure(t, D2H_PINNED, &gbps[D2H_PINNED]) != 0)
    return -1;
  compare(t, pinned_dst, t->pageable_src, "pageable, read back pinned");

  BENCH_CHECK(kiln_buffer_fill(b->stream, t->dev, 0, t->size, &zero, 4));
  memset(t->pageable_dst, 0, t->size);
  if (measure(t, H2D_PINNED, &gbps[H2D_PINNED]) != 0 ||
      measure(t, D2H_PAGEABLE, &gbps[D2H_PAGEABLE]) != 0)
    return -1;
  compare(t, t->pageable_dst, kiln_host_buffer_data(t->pinned_src),
          "pinned, read back pageable");

  /* The copy's bytes are checked through a pinned read of its
   * destination. */
  BENCH_CHECK(kiln_buffer_fill(b->stream, t->dev2, 0, t->size, &zero, 4));
  if (measure(t, D2D, &gbps[D2D]) != 0) return -1;
  BENCH_CHECK(kiln_buffer_read_async(b->stream, t->dev2, 0, t->pinned_dst, 0,
                                     t->size));
  BENCH_CHECK(kiln_stream_synchronize(b->stream));
  compare(t, pinned_dst, kiln_host_buffer_data(t->pinned_src),
          "pinned, copied on the device and read back pinned");

  if (b->raw != NULL && (measure_raw(t, H2D_PINNED, &raw_h2d) != 0 ||
                         measure_raw(t, D2H_PINNED, &raw_d2h) != 0 ||
                         measure_raw(t, D2D, &raw_d2d) != 0))
    return -1;

  char size[32];
  fprintf(b->out, "%9s", bench_bytes_text(t->size, size, sizeof size));
  bench_cell(b->out, 13, 2, gbps[H2D_PAGEABLE]);
  bench_cell(b->out, 11, 2, gbps[H2D_PINNED]);
  bench_cell(b->out, 10, 2, raw_h2d);
  bench_cell(b->out, 13, 2, gbps[D2H_PAGEABLE]);
  bench_cell(b->out, 11, 2, gbps[D2H_PINNED]);
  bench_cell(b->out, 10, 2, raw_d2h);
  bench_cell(b->out, 9, 1, gbps[D2D]);
  bench_cell(b->out, 9, 1, raw_d2d);
  fprintf(b->out, "\n");
  return 0;
}

static void fill(float *dst, size_t bytes, uint32_t seed) {
  for (size_t i = 0; i < bytes / sizeof(float); i++)
    dst[i] = bench_value(seed, i);
}

static int run(transfer_state *t, size_t largest) {
  bench *b = t->b;
  BENCH_CHECK(kiln_buffer_create(b->ctx, largest, 0, &t->dev));
  BENCH_CHECK(kiln_buffer_create(b->ctx, largest, 0, &t->dev2));
  BENCH_CHECK(kiln_host_buffer_create(b->ctx, largest, 0, &t->pinned_src));
  BENCH_CHECK(kiln_host_buffer_create(b->ctx, largest, 0, &t->pinned_dst));
  t->pageable_src = malloc(largest);
  t->pageable_dst = malloc(largest);
  if (t->pageable_src == NULL || t->pageable_dst == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  fill(t->pageable_src, largest, SEED_PAGEABLE);
  fill(kiln_host_buffer_data(t->pinned_src), largest, SEED_PINNED);
  if (b->raw != NULL) {
    if (cuda_raw_enter(b->raw) != 0) return -1;
    int result = cuda_raw_alloc(b->raw, largest, &t->rdev);
    if (result == 0) result = cuda_raw_alloc(b->raw, largest, &t->rdev2);
    if (result == 0) result = cuda_raw_host_alloc(b->raw, largest, &t->rhost);
    cuda_raw_leave(b->raw);
    if (result != 0) return -1;
    fill(t->rhost, largest, SEED_PINNED);
  }

  fprintf(b->out,
          "\ntransfer: GB/s, median of %u (pageable: host clock to "
          "completion; pinned: kiln events; raw: CUDA events; d2d: bytes "
          "read and written)\n%9s %13s %11s %10s %13s %11s %10s %9s %9s\n",
          b->opt.repeat, "size", "h2d pageable", "h2d pinned", "h2d raw",
          "d2h pageable", "d2h pinned", "d2h raw", "d2d", "d2d raw");
  t->largest = largest;
  for (t->size = FIRST; t->size <= largest; t->size *= 4)
    if (run_size(t) != 0) return -1;
  return 0;
}

int bench_transfer(bench *b) {
  transfer_state t;
  memset(&t, 0, sizeof t);
  t.b = b;
  size_t largest = b->opt.quick ? QUICK_LAST : LAST;
  while (largest > b->opt.max_bytes && largest > FIRST) largest /= 4;
  int result = run(&t, largest);
  if (b->raw != NULL && cuda_raw_enter(b->raw) == 0) {
    cuda_raw_host_free(b->raw, t.rhost);
    cuda_raw_free(b->raw, t.rdev2);
    cuda_raw_free(b->raw, t.rdev);
    cuda_raw_leave(b->raw);
  }
  free(t.pageable_dst);
  free(t.pageable_src);
  kiln_status st;
  if ((st = kiln_host_buffer_destroy(t.pinned_dst)) != KILN_OK ||
      (st = kiln_host_buffer_destroy(t.pinned_src)) != KILN_OK ||
      (st = kiln_buffer_destroy(t.dev2)) != KILN_OK ||
      (st = kiln_buffer_destroy(t.dev)) != KILN_OK)
    result = bench_kiln_error("destroying the transfer buffers", st);
  return result;
}
