/* kiln-bench's ceilings (tools/bench/ceilings.c) against made-up figures
 * on a device with a 50 MiB L2 and a 63 GB/s host link: each rule must
 * flag the figure it exists for, and pass the figures real devices give
 * (those of the H100's and H200's runs in docs/performance.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bench.h"

#define MIB ((size_t)1 << 20)
#define L2 (50 * MIB)

/* A stream figure of n floats; footprint as the stream section counts
 * it (bytes read and written per element times n). */
static bench_result stream(const char *name, const char *impl, size_t n,
                           unsigned bytes_per_element, double gbps) {
  bench_result r = {"stream", name, impl, n, 1.0, gbps, "GB/s",
                    n * bytes_per_element};
  return r;
}

static size_t first_above(const bench_result *rs, size_t count,
                          const bench_ceilings *c, double *limit) {
  return bench_above_ceiling(rs, count, 0, c, limit);
}

/* The H100's figures (docs/performance.md, first run): every one passes. */
static void real_figures_pass(void **state) {
  (void)state;
  const size_t mi = MIB / 4; /* floats in a MiB */
  const bench_result rs[] = {
      stream("triad", "kiln", 2 * mi, 12, 4802.5),
      stream("triad", "cuda-raw", 2 * mi, 12, 4618.4),
      stream("add", "cuda-raw", 2 * mi, 12, 4619.7),
      stream("dot", "kiln", mi, 8, 1241.0),
      stream("triad", "kiln", 256 * mi, 12, 3059.2),
      stream("dot", "kiln", 256 * mi, 8, 3029.3),
      stream("ceiling", "cuMemcpyDtoD", 256 * mi, 8, 3006.2),
      {"reduce", "sum", "kiln", 8 * mi, 1.0, 3375.2, "GB/s", 32 * MIB},
      {"transfer", "d2d", "kiln", 64 * MIB, 1.0, 2900.0, "GB/s", 1024 * MIB},
      /* Not figures of device bandwidth: never held. */
      {"transfer", "h2d-pinned", "kiln", 4 * MIB, 1.0, 52.0, "GB/s", 0},
      {"gemm", "sgemm", "kiln", 4096, 1.0, 50000.0, "GFLOP/s", 0},
  };
  const size_t count = sizeof rs / sizeof rs[0];
  bench_ceilings c = {L2, 3006.2, 0.0};
  c.cache = bench_cache_ceiling(rs, count, L2, c.dram);
  assert_true(c.cache == 4619.7);
  double limit = 0.0;
  assert_int_equal(first_above(rs, count, &c, &limit), count);
}

/* The 306 GB/s kind of figure: a device copy rotating over 1 GiB that
 * reads faster than DRAM can give. */
static void past_the_cache_above_the_copy_fails(void **state) {
  (void)state;
  const bench_result rs[] = {
      stream("ceiling", "cuMemcpyDtoD", 64 * MIB, 8, 3000.0),
      {"transfer", "d2d", "kiln", 4 * MIB, 1.0, 3400.0, "GB/s", 1024 * MIB},
  };
  bench_ceilings c = {L2, 3000.0, 3000.0};
  double limit = 0.0;
  assert_int_equal(first_above(rs, 2, &c, &limit), 1);
  assert_true(limit == 3000.0 * BENCH_DRAM_SLACK);
  /* Within the slack, it passes. */
  bench_result ok = rs[1];
  ok.value = 3000.0 * BENCH_DRAM_SLACK;
  assert_int_equal(first_above(&ok, 1, &c, &limit), 1);
}

/* A kernel that only reads may pass the copy by more than one that writes:
 * the H200's dots of 1 GiB (4535 GB/s, kiln's; 4569, raw CUDA's) against
 * its 4058 GB/s copy pass, and a sum as fast; a triad as fast does not,
 * and a dot as fast as the cache does not either. */
static void reads_alone_outrun_the_copy(void **state) {
  (void)state;
  const size_t gi = 256 * MIB; /* floats in a GiB */
  const bench_result rs[] = {
      stream("dot", "kiln", gi, 8, 4535.1),
      stream("dot", "cuda-raw", gi, 8, 4568.8),
      {"reduce", "sum", "kiln", gi, 1.0, 4569.0, "GB/s", 1024 * MIB},
      stream("triad", "kiln", gi, 12, 4535.1),
      stream("dot", "kiln", gi, 8, 4058.0 * 1.3),
  };
  bench_ceilings c = {L2, 4058.0, 5500.0};
  double limit = 0.0;
  assert_int_equal(first_above(rs, 5, &c, &limit), 3);
  assert_true(limit == 4058.0 * BENCH_DRAM_SLACK);
  assert_int_equal(bench_above_ceiling(rs, 5, 4, &c, &limit), 4);
  assert_true(limit == 4058.0 * BENCH_READ_SLACK);
}

/* The footprint, not the size of one operation, decides: the same 4 MiB
 * copy over 8 MiB of slices is held to the cache's ceiling. */
static void the_footprint_decides(void **state) {
  (void)state;
  bench_result r = {"transfer", "d2d", "kiln", 4 * MIB, 1.0, 3400.0, "GB/s",
                    8 * MIB};
  bench_ceilings c = {L2, 3000.0, 4600.0};
  double limit = 0.0;
  assert_int_equal(first_above(&r, 1, &c, &limit), 1);
  /* Just under four times the L2 is still within it. */
  r.footprint = BENCH_PAST_CACHE * L2 - 1;
  assert_int_equal(first_above(&r, 1, &c, &limit), 1);
  r.footprint = BENCH_PAST_CACHE * L2;
  assert_int_equal(first_above(&r, 1, &c, &limit), 0);
}

/* Within the cache a kiln figure may not beat the fastest raw kernel
 * there by more than the slack; the raw kernels are not held to the
 * ceiling they make, but past the cache they are held to the copy. */
static void within_the_cache_held_to_the_raw_kernels(void **state) {
  (void)state;
  const size_t mi = MIB / 4;
  bench_result rs[] = {
      stream("triad", "cuda-raw", 2 * mi, 12, 4600.0),
      stream("triad", "kiln", 2 * mi, 12, 4600.0 * BENCH_CACHE_SLACK + 1.0),
      stream("triad", "cuda-raw", 256 * mi, 12, 9000.0),
  };
  bench_ceilings c = {L2, 3000.0, 0.0};
  c.cache = bench_cache_ceiling(rs, 3, L2, c.dram);
  assert_true(c.cache == 4600.0);
  double limit = 0.0;
  assert_int_equal(first_above(rs, 3, &c, &limit), 1);
  assert_true(limit == 4600.0 * BENCH_CACHE_SLACK);
  assert_int_equal(bench_above_ceiling(rs, 3, 2, &c, &limit), 2);
  assert_true(limit == 3000.0 * BENCH_DRAM_SLACK);
}

/* Where a ceiling is unknown, the figures it would hold are not judged;
 * an unknown L2 judges nothing. */
static void unknown_ceilings_judge_nothing(void **state) {
  (void)state;
  const size_t mi = MIB / 4;
  const bench_result rs[] = {
      stream("triad", "kiln", 2 * mi, 12, 1e9),
      stream("triad", "kiln", 256 * mi, 12, 1e9),
  };
  double limit = 0.0;
  bench_ceilings none = {0, 3000.0, 4000.0};
  assert_int_equal(first_above(rs, 2, &none, &limit), 2);
  bench_ceilings no_dram = {L2, 0.0, 4000.0};
  assert_int_equal(first_above(rs, 2, &no_dram, &limit), 0);
  assert_int_equal(bench_above_ceiling(rs, 2, 1, &no_dram, &limit), 2);
  bench_ceilings no_cache = {L2, 3000.0, 0.0};
  assert_int_equal(first_above(rs, 2, &no_cache, &limit), 1);
  /* Only kiln's figures within the cache: its effect is unmeasured. */
  assert_true(bench_cache_ceiling(rs, 1, L2, 3000.0) == 0.0);
}

/* A figure of 4 MiB in `section` (not of device memory: no footprint). */
static bench_result on_link(const char *section, const char *name,
                            const char *impl, double gbps) {
  bench_result r = {section, name, impl, 4 * MIB, 1.0, gbps, "GB/s", 0};
  return r;
}

#define LINK 63.0

/* The H200's transfer and overlap figures pass the link; the Vulkan
 * transfers issue 31 found, served from the L2, fail it, each named; a
 * copy on the device and a figure that is no bandwidth are not its. */
static void the_link_holds_transfers_and_the_pipeline(void **state) {
  (void)state;
  const bench_result real[] = {
      on_link("transfer", "h2d-pinned", "kiln", 55.42),
      on_link("transfer", "d2h-pinned", "cuda-raw", 55.38),
      on_link("transfer", "h2d-pageable", "kiln", 7.9),
      on_link("overlap", "pipeline", "kiln", 40.5),
      on_link("overlap", "pipeline", "cuda-raw", 42.7),
      on_link("transfer", "d2d", "kiln", 3019.4),
      on_link("peer", "copy", "kiln-peer", 3865.8),
  };
  const size_t n = sizeof real / sizeof real[0];
  assert_int_equal(bench_above_link(real, n, 0, LINK), n);
  assert_int_equal(bench_fastest_on_link(real, n), 0);
  const bench_result old[] = {
      on_link("transfer", "h2d-pinned", "kiln", 306.0),
      on_link("transfer", "h2d-pinned", "kiln", 50.9),
      on_link("transfer", "d2h-pinned", "kiln", 318.0),
      on_link("overlap", "pipeline", "kiln", LINK * BENCH_LINK_SLACK + 0.1),
  };
  assert_int_equal(bench_above_link(old, 4, 0, LINK), 0);
  assert_int_equal(bench_above_link(old, 4, 1, LINK), 2);
  assert_int_equal(bench_above_link(old, 4, 3, LINK), 3);
  assert_int_equal(bench_fastest_on_link(old, 4), 2);
  /* Unknown link: nothing judged. */
  assert_int_equal(bench_above_link(old, 4, 0, 0.0), 4);
  bench_result overlap_x = on_link("overlap", "kernel-and-copy", "kiln", 1e6);
  overlap_x.unit = "x";
  assert_false(bench_host_link_figure(&overlap_x));
  assert_int_equal(bench_fastest_on_link(&overlap_x, 1), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(real_figures_pass),
      cmocka_unit_test(past_the_cache_above_the_copy_fails),
      cmocka_unit_test(reads_alone_outrun_the_copy),
      cmocka_unit_test(the_footprint_decides),
      cmocka_unit_test(within_the_cache_held_to_the_raw_kernels),
      cmocka_unit_test(unknown_ceilings_judge_nothing),
      cmocka_unit_test(the_link_holds_transfers_and_the_pipeline),
  };
  return cmocka_run_group_tests_name("bench ceilings", tests, NULL, NULL);
}
