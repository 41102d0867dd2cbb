/* The run's check that its figures of bandwidth are inside physics: it
 * reads the host link's rate from sysfs and measures the memory's ceilings
 * (the device's L2 and a copy past it, from the raw CUDA comparator), and
 * holds the recorded figures to them by ceilings.c's rules, after the
 * sections and before the ratios. Apart from report.c, which the sections
 * call, since it calls a section's measurement (bench_ceiling) in turn. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"

/* The copy ceiling past the cache: a copy of the first power-of-two size
 * whose two arrays run over BENCH_PAST_CACHE times the L2. 0, with why in
 * `why`, where the run's largest array (--max-size) is smaller. */
static double dram_ceiling(bench *b, size_t l2, size_t *out_n, char *why,
                           size_t why_size) {
  size_t n = 1;
  while (2 * n * sizeof(float) < BENCH_PAST_CACHE * l2) n *= 2;
  *out_n = n;
  char size[32];
  if (n * sizeof(float) > b->opt.max_bytes) {
    snprintf(why, why_size, "a copy past the cache needs arrays of %s, "
             "above --max-size", bench_bytes_text(n * sizeof(float), size,
                                                  sizeof size));
    return 0.0;
  }
  double gbps = 0.0;
  if (bench_ceiling(b, n, &gbps) != 0) {
    snprintf(why, why_size, "the copy past the cache failed");
    return 0.0;
  }
  return gbps;
}

/* "kiln triad at 8 MiB" */
static const char *figure_text(const bench_result *r, char *buf, size_t size) {
  char bytes[32];
  const size_t unit = bench_size_in_bytes(r->section) ? 1 : sizeof(float);
  snprintf(buf, size, "%s %s %s at %s", r->impl, r->section, r->name,
           bench_bytes_text(r->size * unit, bytes, sizeof bytes));
  return buf;
}

/* A sysfs attribute of the PCI device at `address`, into out. */
static bool pci_attribute(const char *address, const char *name, char *out,
                          size_t size) {
  char path[160];
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/%s", address, name);
  FILE *f = fopen(path, "r");
  if (f == NULL) return false;
  bool ok = fgets(out, (int)size, f) != NULL;
  fclose(f);
  return ok;
}

/* The device's PCIe link in GB/s each way, from its current speed and
 * width (Gen 3 on encode 128 bits in 130, Gen 1 and 2 8 in 10); 0 when
 * the device has no PCI address or sysfs does not tell. */
static double link_gbps(const bench *b, char *what, size_t what_size) {
  const char *address = b->props.pci_bus_id;
  char speed[64], width[64];
  if (!address[0] ||
      !pci_attribute(address, "current_link_speed", speed, sizeof speed) ||
      !pci_attribute(address, "current_link_width", width, sizeof width))
    return 0.0;
  double gt = atof(speed);
  int lanes = atoi(width);
  if (gt <= 0.0 || lanes <= 0) return 0.0;
  double encoding = gt >= 8.0 ? 128.0 / 130.0 : 0.8;
  snprintf(what, what_size, "PCIe %.1f GT/s x%d at %s", gt, lanes, address);
  return gt * lanes * encoding / 8.0;
}

/* Figures between host and device, held to the link: one faster is a
 * measurement that went wrong (the 306 GB/s "over" a 55 GB/s link came
 * from the cache). */
static void check_link(bench *b) {
  const size_t fastest = bench_fastest_on_link(b->results, b->result_count);
  if (fastest == b->result_count) return;
  char link[96], what[96];
  const double ceiling = link_gbps(b, link, sizeof link);
  if (ceiling <= 0.0) {
    fprintf(b->out, "\nlink ceiling: unknown (%s), not checked\n",
            b->props.pci_bus_id[0] ? "sysfs does not give the device's link"
                                   : "the device has no PCI address");
    return;
  }
  fprintf(b->out,
          "\nlink ceiling: %.1f GB/s each way (%s); fastest between host "
          "and device: %.2f GB/s, %s\n",
          ceiling, link, b->results[fastest].value,
          figure_text(&b->results[fastest], what, sizeof what));
  for (size_t i = 0; (i = bench_above_link(b->results, b->result_count, i,
                                           ceiling)) < b->result_count;
       i++)
    bench_wrong(b,
                "%s: %.2f GB/s, above the %.1f GB/s that %s can carry: the "
                "figure measures something else (a cache, a copy that did "
                "not happen)",
                figure_text(&b->results[i], what, sizeof what),
                b->results[i].value, ceiling, link);
}

/* Figures of device memory, held to the memory system. */
static void check_memory(bench *b) {
  bool any = false;
  for (size_t i = 0; i < b->result_count && !any; i++)
    any = b->results[i].footprint != 0;
  if (!any) return;
  if (b->raw == NULL) {
    fprintf(b->out, "\nmemory ceilings: not checked (no raw CUDA comparator "
                    "on this device to measure the copy and the cache)\n");
    return;
  }
  bench_ceilings c = {0, 0.0, 0.0};
  int got = cuda_raw_enter(b->raw);
  if (got == 0) {
    got = cuda_raw_l2_bytes(b->raw, &c.l2);
    cuda_raw_leave(b->raw);
  }
  if (got != 0 || c.l2 == 0) {
    fprintf(b->out, "\nmemory ceilings: not checked (the driver does not "
                    "give the device's L2 size)\n");
    return;
  }
  char why[128] = "", l2_text[32], size[32];
  size_t n = 0;
  c.dram = dram_ceiling(b, c.l2, &n, why, sizeof why);
  c.cache = bench_cache_ceiling(b->results, b->result_count, c.l2, c.dram);
  fprintf(b->out, "\nmemory ceilings: L2 %s; ",
          bench_bytes_text(c.l2, l2_text, sizeof l2_text));
  if (c.dram > 0.0)
    fprintf(b->out, "a copy past it (cuMemcpyDtoD of %s) %.1f GB/s, held "
            "to %.1f; ", bench_bytes_text(n * sizeof(float), size,
                                          sizeof size),
            c.dram, c.dram * BENCH_DRAM_SLACK);
  else
    fprintf(b->out, "figures past it not checked (%s); ", why);
  if (c.cache > 0.0 && c.dram > 0.0)
    fprintf(b->out, "the fastest raw CUDA kernel within it %.1f GB/s (the "
            "cache's effect: %.2f x the copy), held to %.1f\n",
            c.cache, c.cache / c.dram, c.cache * BENCH_CACHE_SLACK);
  else if (c.cache > 0.0)
    fprintf(b->out, "the fastest raw CUDA kernel within it %.1f GB/s, held "
            "to %.1f\n", c.cache, c.cache * BENCH_CACHE_SLACK);
  else
    fprintf(b->out, "figures within it not checked (no raw CUDA kernel "
            "ran there)\n");
  double limit = 0.0;
  for (size_t i = 0;
       (i = bench_above_ceiling(b->results, b->result_count, i, &c,
                                &limit)) < b->result_count;
       i++) {
    char what[96];
    const bench_result *r = &b->results[i];
    bench_wrong(b, "%s: %.1f GB/s, above the %.1f GB/s the device's "
                "memory can give a batch over %s: the figure measures "
                "something else (bytes counted that were not moved, a batch "
                "timed short)",
                figure_text(r, what, sizeof what), r->value, limit,
                bench_bytes_text(r->footprint, size, sizeof size));
  }
}

void bench_check_ceilings(bench *b) {
  check_link(b);
  check_memory(b);
}
