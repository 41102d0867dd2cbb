/* Figures of bandwidth held to what the hardware can give (issue 31): a
 * figure between host and device to the host link, one of device memory
 * to the memory system. A batch that runs over more than a few times the
 * L2 has its bytes come from DRAM, and no kernel moves those faster than a
 * copy does; one that fits is served by the cache, whose speed the raw
 * CUDA comparator's own kernels measure. A figure past its ceiling is a
 * measurement gone wrong (bytes counted that were not moved, a batch
 * timed short), as the 306 GB/s "over" a 55 GB/s link was. Kept apart
 * from the sections so that tests/bench/test_ceilings.c can hold the
 * rules to made-up figures without a device. */
#include <string.h>

#include "bench.h"

static bool device_bandwidth(const bench_result *r) {
  return r->footprint != 0 && strcmp(r->unit, "GB/s") == 0;
}

static bool past_cache(const bench_result *r, size_t l2) {
  return r->footprint / BENCH_PAST_CACHE >= l2;
}

/* A kernel that reads its bytes and writes none (the dot product, the
 * sum): held to the copy with BENCH_READ_SLACK. */
static bool read_only(const bench_result *r) {
  return (strcmp(r->section, "stream") == 0 && strcmp(r->name, "dot") == 0) ||
         strcmp(r->section, "reduce") == 0;
}

/* The comparator's own kernels, which define the cache ceiling: they are
 * launched with the driver's call and timed with its events, apart from
 * every path of kiln's. */
static bool raw_kernel(const bench_result *r) {
  return strcmp(r->impl, "cuda-raw") == 0 &&
         (strcmp(r->section, "stream") == 0 ||
          strcmp(r->section, "reduce") == 0);
}

double bench_cache_ceiling(const bench_result *results, size_t count,
                           size_t l2, double dram) {
  double best = 0.0;
  for (size_t i = 0; i < count; i++) {
    const bench_result *r = &results[i];
    if (device_bandwidth(r) && raw_kernel(r) && !past_cache(r, l2) &&
        r->value > best)
      best = r->value;
  }
  /* Without a raw kernel within the cache its effect is unmeasured: the
   * copy past it says nothing of what the cache gives. */
  return best > 0.0 && dram > best ? dram : best;
}

size_t bench_above_ceiling(const bench_result *results, size_t count,
                           size_t from, const bench_ceilings *c,
                           double *out_limit) {
  if (c->l2 == 0) return count;
  for (size_t i = from; i < count; i++) {
    const bench_result *r = &results[i];
    if (!device_bandwidth(r)) continue;
    double limit;
    if (past_cache(r, c->l2)) {
      if (c->dram <= 0.0) continue;
      limit = c->dram * (read_only(r) ? BENCH_READ_SLACK : BENCH_DRAM_SLACK);
    } else {
      if (c->cache <= 0.0 || raw_kernel(r)) continue;
      limit = c->cache * BENCH_CACHE_SLACK;
    }
    if (r->value > limit) {
      *out_limit = limit;
      return i;
    }
  }
  return count;
}

bool bench_host_link_figure(const bench_result *r) {
  if (strcmp(r->unit, "GB/s") != 0) return false;
  if (strcmp(r->section, "overlap") == 0)
    return strcmp(r->name, "pipeline") == 0;
  return strcmp(r->section, "transfer") == 0 &&
         (strncmp(r->name, "h2d", 3) == 0 || strncmp(r->name, "d2h", 3) == 0);
}

size_t bench_fastest_on_link(const bench_result *results, size_t count) {
  size_t best = count;
  for (size_t i = 0; i < count; i++)
    if (bench_host_link_figure(&results[i]) &&
        (best == count || results[i].value > results[best].value))
      best = i;
  return best;
}

size_t bench_above_link(const bench_result *results, size_t count,
                        size_t from, double link) {
  if (link <= 0.0) return count;
  for (size_t i = from; i < count; i++)
    if (bench_host_link_figure(&results[i]) &&
        results[i].value > link * BENCH_LINK_SLACK)
      return i;
  return count;
}
