/* Copies between two contexts (kiln_buffer_copy_peer): on the next device
 * where the backend has several (GPU to GPU), else two contexts on the
 * bench's device (as a program with one context per GPU copies on a
 * one-GPU machine); both ways, beside the copy within one context
 * (kiln_buffer_copy) and raw cuMemcpyPeerAsync between the same two CUDA
 * devices, 4 KiB to 1 GiB. GB/s count the bytes read and written, 2 x the
 * size, on the host clock up to completion: a Vulkan copy between
 * contexts does part of its work on the host, where events would not see
 * it. Each size's last copy each way is checked. */
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"

#define FIRST ((size_t)4 << 10)
#define LAST ((size_t)1 << 30)
#define QUICK_LAST ((size_t)256 << 10)
#define SEED_LOCAL 5u
#define SEED_PEER 6u

enum way { ONE_CONTEXT, IN, OUT, RAW_IN, RAW_OUT, WAYS };

static const char *const impls[WAYS] = {
    "kiln-one-context", "kiln-peer", "kiln-peer-out", "cuda-raw-peer",
    "cuda-raw-peer-out"};

typedef struct peer_state {
  bench *b;
  kiln_context *other;
  kiln_stream *other_stream;
  /* dst and local_src in the bench's context, peer_src and peer_dst in
   * the other; raw_here on the comparator's device, raw_there on the
   * other's. */
  kiln_buffer *dst, *local_src, *peer_src, *peer_dst;
  raw_ptr raw_here, raw_there;
  size_t size;
  enum way way;
  /* The other context is on the bench's device: every copy then moves
   * that device's memory, and is held to its ceilings (plausible.c). */
  bool one_device;
} peer_state;

static int copy_batch(void *self, unsigned iters, double *ms) {
  peer_state *p = self;
  bench *b = p->b;
  double t0 = bench_now();
  for (unsigned i = 0; i < iters; i++) {
    if (p->way == IN)
      BENCH_CHECK(kiln_buffer_copy_peer(b->stream, p->dst, 0, p->other_stream,
                                        p->peer_src, 0, p->size));
    else if (p->way == OUT)
      BENCH_CHECK(kiln_buffer_copy_peer(p->other_stream, p->peer_dst, 0,
                                        b->stream, p->local_src, 0, p->size));
    else
      BENCH_CHECK(kiln_buffer_copy(b->stream, p->dst, 0, p->local_src, 0,
                                   p->size));
  }
  BENCH_CHECK(kiln_stream_synchronize(b->stream));
  BENCH_CHECK(kiln_stream_synchronize(p->other_stream));
  *ms = (bench_now() - t0) * 1e3;
  return 0;
}

static int raw_batch(void *self, unsigned iters, double *ms) {
  peer_state *p = self;
  cuda_raw *r = p->b->raw;
  if (cuda_raw_enter(r) != 0) return -1;
  int result = 0;
  double t0 = bench_now();
  for (unsigned i = 0; i < iters && result == 0; i++)
    result = p->way == RAW_IN
                 ? cuda_raw_peer_copy(r, p->raw_here, p->raw_there, p->size,
                                      false)
                 : cuda_raw_peer_copy(r, p->raw_there, p->raw_here, p->size,
                                      true);
  if (result == 0) result = cuda_raw_sync(r);
  *ms = (bench_now() - t0) * 1e3;
  cuda_raw_leave(r);
  return result;
}

static double expect_peer(const void *arg, size_t i, double *magnitude) {
  (void)arg;
  *magnitude = 0.0;
  return bench_value(SEED_PEER, i);
}

static int measure(peer_state *p, enum way way, double *gbps) {
  double ms;
  p->way = way;
  if (bench_measure(p->b, way >= RAW_IN ? raw_batch : copy_batch, p, &ms) !=
      0)
    return -1;
  *gbps = 2.0 * (double)p->size / (ms * 1e6);
  const size_t footprint =
      way == ONE_CONTEXT || p->one_device ? 2 * p->size : 0;
  bench_result r = {"peer", "copy", impls[way], p->size, ms, *gbps, "GB/s",
                    footprint};
  return bench_record(p->b, &r);
}

/* The last copy out, read back on the host from the other context. */
static int check_out(peer_state *p, float *host) {
  BENCH_CHECK(kiln_buffer_read(p->other_stream, p->peer_dst, 0, host,
                               p->size));
  for (size_t i = 0; i < p->size / 4; i++)
    if (host[i] != bench_value(SEED_LOCAL, i)) {
      bench_wrong(p->b, "a copy to the other context: float %zu of %zu "
                  "bytes is %g, not %g",
                  i, p->size, (double)host[i],
                  (double)bench_value(SEED_LOCAL, i));
      break;
    }
  return 0;
}

static int run(peer_state *p, size_t largest, float *host) {
  bench *b = p->b;
  size_t count = 0;
  BENCH_CHECK(kiln_device_count(b->props.backend, &count));
  kiln_context_options o = kiln_context_options_default();
  o.backend = b->props.backend;
  size_t own = 0;
  p->one_device = true;
  if (count > 1 && bench_device_index(b, b->props.backend, &own) == 0) {
    o.device_index = (own + 1) % count;
    p->one_device = false;
  }
  BENCH_CHECK(kiln_context_create(&o, &p->other));
  BENCH_CHECK(kiln_context_default_stream(p->other, &p->other_stream));
  kiln_device_properties other;
  BENCH_CHECK(kiln_context_get_properties(p->other, &other));
  BENCH_CHECK(kiln_buffer_create(b->ctx, largest, 0, &p->dst));
  BENCH_CHECK(kiln_buffer_create(b->ctx, largest, 0, &p->local_src));
  BENCH_CHECK(kiln_buffer_create(p->other, largest, 0, &p->peer_src));
  BENCH_CHECK(kiln_buffer_create(p->other, largest, 0, &p->peer_dst));
  if (bench_upload(b, p->local_src, 0, largest / 4, SEED_LOCAL) != 0)
    return -1;
  for (size_t i = 0; i < largest / 4; i++) host[i] = bench_value(SEED_PEER, i);
  BENCH_CHECK(kiln_buffer_write(p->other_stream, p->peer_src, 0, host,
                                largest));
  bool direct = false, raw_direct = false;
  BENCH_CHECK(kiln_context_can_copy_peer(b->ctx, p->other, &direct));
  bool raw = b->raw != NULL &&
             cuda_raw_peer_open(b->raw, &other, &raw_direct) == 0 &&
             cuda_raw_peer_alloc(b->raw, largest, &p->raw_there) == 0 &&
             cuda_raw_enter(b->raw) == 0;
  if (raw) {
    int result = cuda_raw_alloc(b->raw, largest, &p->raw_here);
    cuda_raw_leave(b->raw);
    if (result != 0) return -1;
  }
  const bool two = memcmp(other.uuid, b->props.uuid, sizeof other.uuid) != 0;
  fprintf(b->out,
          "\npeer: GB/s read+write, median of %u, host clock to completion; "
          "%s%s%s (%s)%s\n%9s %12s %10s %10s %10s %10s %7s\n",
          b->opt.repeat, two ? "from " : "two contexts on one device",
          two ? other.name : "", two ? " and back" : "",
          direct ? "device to device" : "staged through the host",
          raw ? (raw_direct ? "; raw: cuMemcpyPeerAsync, peer access on"
                            : "; raw: cuMemcpyPeerAsync, no peer access")
              : "",
          "size", "one context", "in", "out", "raw in", "raw out", "in/raw");
  for (p->size = FIRST; p->size <= largest; p->size *= 4) {
    double gbps[WAYS] = {-1, -1, -1, -1, -1};
    if (measure(p, ONE_CONTEXT, &gbps[ONE_CONTEXT]) != 0 ||
        measure(p, IN, &gbps[IN]) != 0 ||
        bench_verify(b, "a copy between contexts", p->dst, 0, p->size / 4,
                     expect_peer, NULL) != 0 ||
        measure(p, OUT, &gbps[OUT]) != 0 || check_out(p, host) != 0)
      return -1;
    if (raw && (measure(p, RAW_IN, &gbps[RAW_IN]) != 0 ||
                measure(p, RAW_OUT, &gbps[RAW_OUT]) != 0))
      return -1;
    char size[32];
    fprintf(b->out, "%9s", bench_bytes_text(p->size, size, sizeof size));
    bench_cell(b->out, 12, 1, gbps[ONE_CONTEXT]);
    for (int w = IN; w < WAYS; w++) bench_cell(b->out, 10, 1, gbps[w]);
    bench_cell(b->out, 7, 2, raw ? gbps[IN] / gbps[RAW_IN] : -1.0);
    fprintf(b->out, "\n");
  }
  return 0;
}

int bench_peer(bench *b) {
  peer_state p = {.b = b};
  size_t largest = b->opt.quick ? QUICK_LAST : LAST;
  while (largest > b->opt.max_bytes && largest > FIRST) largest /= 4;
  float *host = malloc(largest);
  if (host == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  int result = run(&p, largest, host);
  free(host);
  if (b->raw != NULL) {
    cuda_raw_peer_free(b->raw, p.raw_there);
    if (cuda_raw_enter(b->raw) == 0) {
      cuda_raw_free(b->raw, p.raw_here);
      cuda_raw_leave(b->raw);
    }
  }
  kiln_status st;
  if ((st = kiln_buffer_destroy(p.peer_dst)) != KILN_OK ||
      (st = kiln_buffer_destroy(p.peer_src)) != KILN_OK ||
      (st = kiln_buffer_destroy(p.local_src)) != KILN_OK ||
      (st = kiln_buffer_destroy(p.dst)) != KILN_OK ||
      (st = kiln_context_destroy(p.other)) != KILN_OK)
    result = bench_kiln_error("releasing the peer section's objects", st);
  return result;
}
