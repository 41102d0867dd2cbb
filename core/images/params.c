/* Kernel parameter tables, the ELF reading that the image readers
 * (params_cuda.c, params_hip.c) share, and what the backends read of an
 * image before their driver does: see params.h. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/images/params.h"

/* ---- The table ------------------------------------------------------------ */

bool kiln_param_table_add(kiln_param_table *table, const char *name,
                          size_t name_size, const kiln_param_info *params,
                          size_t count) {
  /* Grown by doubling: the capacity is the next power of two. */
  size_t n = table->count;
  if (n == 0 || (n >= 8 && (n & (n - 1)) == 0)) {
    size_t capacity = n == 0 ? 8 : 2 * n;
    kiln_kernel_params *k = realloc(table->kernels, capacity * sizeof *k);
    if (!k) return false;
    table->kernels = k;
  }
  kiln_kernel_params *kp = &table->kernels[n];
  kp->name = malloc(name_size + 1);
  kp->params = count ? malloc(count * sizeof *params) : NULL;
  if (!kp->name || (count && !kp->params)) {
    free(kp->name);
    free(kp->params);
    return false;
  }
  memcpy(kp->name, name, name_size);
  kp->name[name_size] = '\0';
  if (count) memcpy(kp->params, params, count * sizeof *params);
  kp->count = count;
  table->count++;
  return true;
}

/* By name, then by address: the kernels array is in the order added, so
 * the first added of a name sorts first. */
static int by_name(const void *a, const void *b) {
  const kiln_kernel_params *x = *(const kiln_kernel_params *const *)a;
  const kiln_kernel_params *y = *(const kiln_kernel_params *const *)b;
  int c = strcmp(x->name, y->name);
  if (c) return c;
  return x < y ? -1 : x > y;
}

void kiln_param_table_finish(kiln_param_table *table) {
  size_t n = table->count;
  if (n < 2) return;
  kiln_kernel_params **order = malloc(n * sizeof *order);
  kiln_kernel_params *sorted = malloc(n * sizeof *sorted);
  if (!order || !sorted) {
    /* Unsorted, a table would answer lookups wrongly: empty it. */
    free(order);
    free(sorted);
    kiln_param_table_free(table);
    return;
  }
  for (size_t i = 0; i < n; i++) order[i] = &table->kernels[i];
  qsort(order, n, sizeof *order, by_name);
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (kept && strcmp(sorted[kept - 1].name, order[i]->name) == 0) {
      free(order[i]->name);
      free(order[i]->params);
      continue;
    }
    sorted[kept++] = *order[i];
  }
  free(order);
  free(table->kernels);
  table->kernels = sorted;
  table->count = kept;
}

bool kiln_bytes_contain(const void *data, size_t size, const char *needle) {
  const unsigned char *p = data;
  const size_t n = strlen(needle);
  if (n == 0) return true;
  for (size_t at = 0; n <= size && at <= size - n; at++) {
    const unsigned char *hit = memchr(p + at, needle[0], size - n + 1 - at);
    if (!hit) return false;
    at = (size_t)(hit - p);
    if (memcmp(hit, needle, n) == 0) return true;
  }
  return false;
}

const kiln_kernel_params *kiln_param_table_find(const kiln_param_table *table,
                                                const char *name) {
  size_t lo = 0, hi = table->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(name, table->kernels[mid].name);
    if (c == 0) return &table->kernels[mid];
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return NULL;
}

void kiln_param_table_free(kiln_param_table *table) {
  for (size_t i = 0; i < table->count; i++) {
    free(table->kernels[i].name);
    free(table->kernels[i].params);
  }
  free(table->kernels);
  table->kernels = NULL;
  table->count = 0;
}

bool kiln_kernel_params_apply(const kiln_kernel_params *kp, kiln_kernel *k) {
  kiln_param_info *copy = NULL;
  if (kp->count) {
    copy = malloc(kp->count * sizeof *copy);
    if (!copy) return false;
    memcpy(copy, kp->params, kp->count * sizeof *copy);
  }
  free(k->params);
  k->params = copy;
  k->param_count = kp->count;
  return true;
}
/* ---- ELF ------------------------------------------------------------------ */

bool kiln_elf_open(kiln_elf *elf, const void *data, size_t size) {
  const unsigned char *p = data;
  memset(elf, 0, sizeof *elf);
  if (size < 64 || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2 || p[5] != 1)
    return false;
  elf->data = p;
  elf->size = size;
  elf->shoff = kiln_read_le(p + 0x28, 8);
  elf->shentsize = kiln_read_le(p + 0x3a, 2);
  elf->shnum = kiln_read_le(p + 0x3c, 2);
  elf->shstrndx = kiln_read_le(p + 0x3e, 2);
  if (elf->shentsize < 64 || !kiln_within(elf->shoff, 64, size)) return false;
  /* Past 0xff00 sections, the count and the string table's index move
   * into section 0's size and link. */
  const unsigned char *first = p + elf->shoff;
  if (elf->shnum == 0) elf->shnum = kiln_read_le(first + 32, 8);
  if (elf->shstrndx == 0xffff) elf->shstrndx = kiln_read_le(first + 40, 4);
  if (elf->shnum > (size - elf->shoff) / elf->shentsize) return false;
  return elf->shstrndx < elf->shnum;
}

static const unsigned char *section_header(const kiln_elf *elf, uint64_t i) {
  return elf->data + elf->shoff + i * elf->shentsize;
}

uint32_t kiln_elf_section_type(const kiln_elf *elf, uint64_t i) {
  return (uint32_t)kiln_read_le(section_header(elf, i) + 4, 4);
}

bool kiln_elf_section_data(const kiln_elf *elf, uint64_t i,
                           const unsigned char **out_data, size_t *out_size) {
  const unsigned char *h = section_header(elf, i);
  const uint32_t nobits = 8;
  uint64_t offset = kiln_read_le(h + 24, 8), size = kiln_read_le(h + 32, 8);
  if (kiln_elf_section_type(elf, i) == nobits ||
      !kiln_within(offset, size, elf->size))
    return false;
  *out_data = elf->data + offset;
  *out_size = (size_t)size;
  return true;
}

const char *kiln_elf_section_name(const kiln_elf *elf, uint64_t i,
                                  size_t *out_length) {
  const unsigned char *strings;
  size_t strings_size;
  if (!kiln_elf_section_data(elf, elf->shstrndx, &strings, &strings_size))
    return NULL;
  uint64_t at = kiln_read_le(section_header(elf, i), 4);
  if (at >= strings_size) return NULL;
  const unsigned char *end = memchr(strings + at, '\0', strings_size - at);
  if (!end) return NULL;
  *out_length = (size_t)(end - (strings + at));
  return (const char *)strings + at;
}

/* ---- What an image says before a driver reads it ------------------------- */

/* Whether [offset, offset + count * each) lies within size bytes. */
static bool table_within(uint64_t offset, uint64_t count, uint64_t each,
                         uint64_t size) {
  if (each != 0 && count > (UINT64_MAX - offset) / each) return false;
  return offset + count * each <= size;
}

const char *kiln_image_elf_problem(const void *data, size_t size, char *why,
                                   size_t why_size) {
  const unsigned char *p = data;
  if (size < 64 || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2 || p[5] != 1)
    return "not a 64-bit little-endian ELF file";
  uint64_t sections = kiln_read_le(p + 0x28, 8);
  uint64_t section_bytes = kiln_read_le(p + 0x3a, 2);
  uint64_t section_count = kiln_read_le(p + 0x3c, 2);
  bool fits = table_within(kiln_read_le(p + 0x20, 8), kiln_read_le(p + 0x38, 2),
                           kiln_read_le(p + 0x36, 2), size) &&
              table_within(sections, section_count, section_bytes, size) &&
              (section_count == 0 || section_bytes >= 0x28);
  for (uint64_t i = 0; fits && i < section_count; i++) {
    const unsigned char *h = p + sections + i * section_bytes;
    const uint32_t nobits = 8;
    if (kiln_read_le(h + 4, 4) != nobits)
      fits = kiln_within(kiln_read_le(h + 0x18, 8), kiln_read_le(h + 0x20, 8),
                         size);
  }
  if (fits) return NULL;
  snprintf(why, why_size,
           "an ELF file cut short: its headers or sections lie past its "
           "%zu bytes",
           size);
  return why;
}

const char *kiln_image_fatbin_problem(const void *data, size_t size) {
  const unsigned char *p = data;
  /* Magic, version, header size (16 bits each but the first), then the
   * size of what follows the header. */
  if (size < 16 || kiln_read_le(p, 4) != KILN_FATBIN_MAGIC)
    return "not a fatbin (nvcc --fatbin output starts with 0xba55ed50)";
  if (!kiln_within(kiln_read_le(p + 6, 2), kiln_read_le(p + 8, 8), size))
    return "a fatbin cut short: its header counts more bytes than it has";
  return NULL;
}

const char *kiln_image_bundle_problem(const void *data, size_t size, char *why,
                                      size_t why_size) {
  const unsigned char *p = data;
  if (size < KILN_BUNDLE_MAGIC_SIZE + 8) {
    snprintf(why, why_size, "an offload bundle cut short in its header");
    return why;
  }
  uint64_t entries = kiln_read_le(p + KILN_BUNDLE_MAGIC_SIZE, 8);
  uint64_t at = KILN_BUNDLE_MAGIC_SIZE + 8;
  for (uint64_t e = 0; e < entries; e++) {
    if (!kiln_within(at, 24, size)) {
      snprintf(why, why_size, "the offload bundle's entry %llu is cut short",
               (unsigned long long)e);
      return why;
    }
    uint64_t offset = kiln_read_le(p + at, 8);
    uint64_t bytes = kiln_read_le(p + at + 8, 8);
    uint64_t id_bytes = kiln_read_le(p + at + 16, 8);
    at += 24;
    if (!kiln_within(at, id_bytes, size) || !kiln_within(offset, bytes, size)) {
      snprintf(why, why_size,
               "the offload bundle's entry %llu lies past the image's "
               "%zu bytes",
               (unsigned long long)e, size);
      return why;
    }
    at += id_bytes;
  }
  return NULL;
}

bool kiln_ptx_target(const void *data, size_t size, unsigned *arch,
                     char *suffix) {
  const char *p = data, *end = p + size;
  while (p < end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
      p++;
    const char *line = p;
    while (p < end && *p != '\n') p++;
    size_t n = (size_t)(p - line);
    if (n >= 2 && memcmp(line, "//", 2) == 0) continue;
    if (n >= 8 && memcmp(line, ".version", 8) == 0) continue;
    /* The header ends at the first line that is not a comment, .version
     * or .target; the PTX ISA puts .target before any code. */
    if (n < 8 || memcmp(line, ".target", 7) != 0 ||
        (line[7] != ' ' && line[7] != '\t'))
      return false;
    const char *q = line + 8;
    while (q < p && (*q == ' ' || *q == '\t')) q++;
    if (p - q < 4 || memcmp(q, "sm_", 3) != 0 || !isdigit((unsigned char)q[3]))
      return false;
    unsigned v = 0;
    for (q += 3; q < p && isdigit((unsigned char)*q) && v < 10000; q++)
      v = v * 10 + (unsigned)(*q - '0');
    *suffix = '\0';
    if (q < p && (*q == 'a' || *q == 'f')) *suffix = *q++;
    if (q < p && isalnum((unsigned char)*q)) return false;
    *arch = v;
    return true;
  }
  return false;
}
