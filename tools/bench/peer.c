/* Copies between two contexts on the bench's device (kiln_buffer_copy_peer,
 * as a program with one context per GPU would copy on a one-GPU machine)
 * beside the copy within one context (kiln_buffer_copy: cuMemcpyDtoDAsync
 * on CUDA), 4 KiB to 1 GiB. GB/s count the bytes read and written, 2 x the
 * size, on the host clock up to completion: a Vulkan copy between contexts
 * does part of its work on the host, where events would not see it. Each
 * size's last copy is checked. */
#include <stdlib.h>

#include "bench.h"

#define FIRST ((size_t)4 << 10)
#define LAST ((size_t)1 << 30)
#define QUICK_LAST ((size_t)256 << 10)
#define SEED_LOCAL 5u
#define SEED_PEER 6u

typedef struct peer_state {
  bench *b;
  kiln_context *other;
  kiln_buffer *dst, *local_src, *peer_src;
  size_t size;
  bool peer;
} peer_state;

static int copy_batch(void *self, unsigned iters, double *ms) {
  peer_state *p = self;
  bench *b = p->b;
  double t0 = bench_now();
  for (unsigned i = 0; i < iters; i++) {
    if (p->peer)
      BENCH_CHECK(kiln_buffer_copy_peer(b->stream, p->dst, 0, NULL,
                                        p->peer_src, 0, p->size));
    else
      BENCH_CHECK(kiln_buffer_copy(b->stream, p->dst, 0, p->local_src, 0,
                                   p->size));
  }
  BENCH_CHECK(kiln_stream_synchronize(b->stream));
  *ms = (bench_now() - t0) * 1e3;
  return 0;
}

static double expect_peer(const void *arg, size_t i, double *magnitude) {
  (void)arg;
  *magnitude = 0.0;
  return bench_value(SEED_PEER, i);
}

static int measure(peer_state *p, bool peer, double *gbps) {
  double ms;
  p->peer = peer;
  if (bench_measure(p->b, copy_batch, p, &ms) != 0) return -1;
  *gbps = 2.0 * (double)p->size / (ms * 1e6);
  bench_result r = {"peer", "copy", peer ? "kiln-peer" : "kiln-one-context",
                    p->size, ms, *gbps, "GB/s"};
  return bench_record(p->b, &r);
}

static int run(peer_state *p, size_t largest) {
  bench *b = p->b;
  kiln_context_options o = kiln_context_options_default();
  o.backend = b->props.backend;
  BENCH_CHECK(kiln_context_create(&o, &p->other));
  BENCH_CHECK(kiln_buffer_create(b->ctx, largest, 0, &p->dst));
  BENCH_CHECK(kiln_buffer_create(b->ctx, largest, 0, &p->local_src));
  BENCH_CHECK(kiln_buffer_create(p->other, largest, 0, &p->peer_src));
  if (bench_upload(b, p->local_src, 0, largest / 4, SEED_LOCAL) != 0)
    return -1;
  float *host = malloc(largest);
  if (host == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
    return -1;
  }
  for (size_t i = 0; i < largest / 4; i++) host[i] = bench_value(SEED_PEER, i);
  kiln_status st = kiln_buffer_write(NULL, p->peer_src, 0, host, largest);
  free(host);
  BENCH_CHECK(st);
  bool direct = false;
  BENCH_CHECK(kiln_context_can_copy_peer(b->ctx, p->other, &direct));
  fprintf(b->out,
          "\npeer: GB/s read+write, median of %u, host clock to completion; "
          "two contexts on one device (%s)\n%9s %12s %12s %7s\n",
          b->opt.repeat, direct ? "device to device" : "staged through the host",
          "size", "one context", "two contexts", "ratio");
  for (p->size = FIRST; p->size <= largest; p->size *= 4) {
    double local, peer;
    if (measure(p, false, &local) != 0 || measure(p, true, &peer) != 0 ||
        bench_verify(b, "a copy between contexts", p->dst, 0, p->size / 4,
                     expect_peer, NULL) != 0)
      return -1;
    char size[32];
    fprintf(b->out, "%9s", bench_bytes_text(p->size, size, sizeof size));
    bench_cell(b->out, 13, 1, local);
    bench_cell(b->out, 13, 1, peer);
    bench_cell(b->out, 8, 2, peer / local);
    fprintf(b->out, "\n");
  }
  return 0;
}

int bench_peer(bench *b) {
  peer_state p = {.b = b};
  size_t largest = b->opt.quick ? QUICK_LAST : LAST;
  while (largest > b->opt.max_bytes && largest > FIRST) largest /= 4;
  int result = run(&p, largest);
  kiln_status st;
  if ((st = kiln_buffer_destroy(p.peer_src)) != KILN_OK ||
      (st = kiln_buffer_destroy(p.local_src)) != KILN_OK ||
      (st = kiln_buffer_destroy(p.dst)) != KILN_OK ||
      (st = kiln_context_destroy(p.other)) != KILN_OK)
    result = bench_kiln_error("releasing the peer section's objects", st);
  return result;
}
