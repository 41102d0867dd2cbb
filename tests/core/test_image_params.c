/* kiln_params_read_cuda, kiln_params_read_hip and kiln_param_table_find
 * (core/params*.c) on the images nvcc and hipcc make of
 * kernels/image_params.cu at build time, on hand-written PTX, and on every
 * truncation of each, thousands of mutants, and headers whose lengths and
 * offsets are made huge. The readers parse bytes that nobody has checked:
 * whatever those hold, each call must return KILN_OK (or, for lack of
 * memory, OUT_OF_HOST_MEMORY with an empty table) and a well-formed table,
 * and never read outside the image, which the sanitizer build checks (each
 * image is read from a block of exactly its size).
 *
 * Over 600 lines: the real images, the hand-written PTX and the mutation
 * loops share the table checks here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/images/params.h"
#include "kiln_check.h"

/* The images of the build: meson.build says which, and why one is
 * missing (IMGP_*_WHY, empty when it is there). */
extern const kiln_module_image imgp_ptx_images[];
#if IMGP_CUDA
extern const kiln_module_image imgp_cuda_images[];
static const kiln_module_image *const cuda_images = imgp_cuda_images;
#else
static const kiln_module_image *const cuda_images = NULL;
#endif
#if IMGP_HIP
extern const kiln_module_image imgp_hip_images[];
static const kiln_module_image *const hip_images = imgp_hip_images;
#else
static const kiln_module_image *const hip_images = NULL;
#endif
static const char cuda_why[] = IMGP_CUDA_WHY, hip_why[] = IMGP_HIP_WHY,
                  gfx90a_why[] = IMGP_GFX90A_WHY;
/* The order of meson.build's lists. */
enum {
  CU_PTX,
  CU_CUBIN,
  CU_PLAIN,
  CU_SASS,
  CU_ZIPPED,
  CU_DEFAULT,
  CU_EDGE,
  CU_PRINTF_PTX,
  CU_PRINTF_CUBIN,
  CU_PRINTF_PLAIN,
  CU_PRINTF_ZIPPED
};
static const char *const cu_names[] = {"PTX",
                                       "cubin",
                                       "plain fatbin",
                                       "cubin-only fatbin",
                                       "zipped fatbin",
                                       "default fatbin",
                                       "ptxas's cubin of the edge cases",
                                       "printf PTX",
                                       "printf cubin",
                                       "printf plain fatbin",
                                       "printf zipped fatbin"};
enum { HIP_BUNDLE, HIP_GFX90A };

/* Skips the test, saying why, when its images were not built. */
#define NEED(images, why)                                                      \
  do {                                                                         \
    if (!(images) || (why)[0]) {                                               \
      kiln_skip("%s", why);                                                    \
      return;                                                                  \
    }                                                                          \
  } while (0)

/* ---- What the readers must find -------------------------------------------- */

/* A kernel the reader must find, its parameters as "offset/size kind"
 * words, each kind a letter of `kinds`. */
typedef struct want {
  const char *name, *params;
} want;

static const char kinds[] = "bpisuf"; /* kiln_param_kind's order */

/* kernels/image_params.cu as its PTX tells it: nvcc declares integers and
 * pointers alike .u (an integer that may hold an address), a struct as
 * bytes. A cubin tells the same offsets and sizes, with no kinds. */
static const want cu_kernels[] = {
    {"k", "0/8i 8/8i 16/4f 20/4i 24/8f 32/8i"},
    {"none", ""},
    {"_Z7mangledsPic", "0/2i 8/8i 16/1i"},
    {"aggregate", "0/8i 8/16b 24/4i"},
};
#define CU_COUNT (sizeof cu_kernels / sizeof cu_kernels[0])

/* As an AMDGPU code object's metadata tells it: pointers, and values of
 * no more than their size; k's hidden arguments are not parameters. The
 * last is only in the gfx90a code object. */
static const want hip_kernels[] = {
    {"k", "0/8p 8/8p 16/4b 20/4b 24/8b 32/8b"},
    {"none", ""},
    {"_Z7mangledsPic", "0/2b 8/8p 16/1b"},
    {"aggregate", "0/8p 8/16b 24/4b"},
    {"gfx90a_only", "0/8p"},
};
#define HIP_COUNT (sizeof hip_kernels / sizeof hip_kernels[0])

/* kernels/ptx_edge_cases.ptx, at the offsets ptxas gives. */
static const want edge_kernels[] = {
    {"scalars", "0/1i 2/2s 4/4f 8/8b 16/4s 24/8f 32/2f 34/2i 48/16b"},
    {"arrays", "0/4i 8/16b 24/3b 32/16b 48/2i"},
    {"aligns", "0/4i 8/8b 16/1i 20/8b 28/8b 48/4i"},
    {"pointers", "0/8p 8/4i 16/8p 24/8p 32/4i 40/8p"},
    {"triton_like", "0/8p 8/8p 16/4i 24/8p"},
    {"names$with$dollars", "0/4i"},
    {"$leading_dollar", "0/4f"},
    {"%percent", "0/8s"},
    {"empty_list", ""},
    {"no_list", ""},
    {"tuned", "0/4i"},
    {"commented", "0/4i 8/8f"},
    {"crlf", "0/4i 8/8i"},
};
#define EDGE_COUNT (sizeof edge_kernels / sizeof edge_kernels[0])

/* The table must hold exactly the n kernels of w; where `sizes_only` (a
 * cubin's), each of kind BITS. */
static void check_table(const kiln_param_table *t, const want *w, size_t n,
                        bool sizes_only, const char *what) {
  if (t->count != n)
    fail_msg("%s: %zu kernels, expected %zu", what, t->count, n);
  for (size_t i = 0; i < n; i++) {
    const kiln_kernel_params *kp = kiln_param_table_find(t, w[i].name);
    if (!kp) fail_msg("%s: no kernel '%s'", what, w[i].name);
    const char *spec = w[i].params;
    unsigned offset, size;
    char kind;
    int used;
    size_t j = 0;
    for (; sscanf(spec, " %u/%u%c%n", &offset, &size, &kind, &used) == 3;
         spec += used, j++) {
      kiln_param_kind k = (kiln_param_kind)(strchr(kinds, kind) - kinds);
      if (sizes_only) k = KILN_PARAM_BITS;
      if (j >= kp->count) break;
      const kiln_param_info *g = &kp->params[j];
      if (g->offset != offset || g->size != size || g->kind != k)
        fail_msg("%s: parameter %zu of '%s' is %u/%u%c, expected %u/%u%c", what,
                 j, w[i].name, g->offset, g->size,
                 g->kind <= KILN_PARAM_FLOAT ? kinds[g->kind] : '?', offset,
                 size, kinds[k]);
    }
    if (kp->count != j || *spec)
      fail_msg("%s: '%s' has %zu parameters, expected \"%s\"", what, w[i].name,
               kp->count, w[i].params);
  }
}

/* ---- Reading --------------------------------------------------------------- */

/* The reader of each image format. */
typedef enum reader {
  READ_PTX = KILN_IMAGE_PTX,
  READ_CUBIN = KILN_IMAGE_CUBIN,
  READ_FATBIN = KILN_IMAGE_FATBIN,
  READ_HIP = KILN_IMAGE_HIP_CODE_OBJECT,
} reader;

/* Whatever the bytes: OK, or OUT_OF_HOST_MEMORY with an empty table; names
 * unique, sorted and not empty; at most `size` parameters a kernel, each
 * of a size and a known kind. */
static void check_sane(kiln_status st, const kiln_param_table *t, size_t size,
                       const char *what) {
  if (st != KILN_OK && st != KILN_ERROR_OUT_OF_HOST_MEMORY)
    fail_msg("%s: the reader returned %s", what, kiln_status_name(st));
  if (st != KILN_OK && (t->count || t->kernels))
    fail_msg("%s: failed, but left %zu kernels", what, t->count);
  for (size_t i = 0; i < t->count; i++) {
    const kiln_kernel_params *kp = &t->kernels[i];
    if (!kp->name[0] || (i && strcmp(kp[-1].name, kp->name) >= 0))
      fail_msg("%s: kernel %zu ('%s') is out of order", what, i, kp->name);
    if (kp->count > size || (kp->count == 0) != (kp->params == NULL))
      fail_msg("%s: '%s' has %zu parameters", what, kp->name, kp->count);
    for (size_t j = 0; j < kp->count; j++)
      if (kp->params[j].size == 0 || kp->params[j].kind > KILN_PARAM_FLOAT)
        fail_msg("%s: parameter %zu of '%s' has size %u, kind %d", what, j,
                 kp->name, kp->params[j].size, kp->params[j].kind);
  }
}

/* Reads `size` bytes that lie in a block of exactly that size into t,
 * checking the result is sane. HIP images are read for gfx90a, and also
 * for no target, which picks a bundle's first code object. */
static void read_block(reader r, const unsigned char *block, size_t size,
                       kiln_param_table *t, const char *what) {
  if (r == READ_HIP) {
    check_sane(kiln_params_read_hip(block, size, NULL, t), t, size, what);
    kiln_param_table_free(t);
  }
  kiln_status st =
      r == READ_HIP
          ? kiln_params_read_hip(block, size, "gfx90a", t)
          : kiln_params_read_cuda((kiln_image_format)r, block, size, t);
  check_sane(st, t, size, what);
}

/* read_block on a copy of [data, data + size). */
static void read_copy(reader r, const void *data, size_t size,
                      kiln_param_table *t, const char *what) {
  unsigned char *block = malloc(size ? size : 1);
  assert_non_null(block);
  memcpy(block, data, size);
  read_block(r, block, size, t, what);
  free(block);
}

/* Reads an image whole and checks it against w. */
static void check_image(reader r, const kiln_module_image *img, const want *w,
                        size_t n, bool sizes_only, const char *what) {
  kiln_param_table t;
  read_copy(r, img->data, img->size, &t, what);
  check_table(&t, w, n, sizes_only, what);
  kiln_param_table_free(&t);
}

/* ---- Fatbins ------------------------------------------------------------------ */

enum { FATBIN_PTX = 1, FATBIN_ELF = 2 };
#define COMPRESSED (0x2000u | 0x8000u)

/* The header of the fatbin's first entry of `kind`, or NULL. */
static const unsigned char *fatbin_entry(const unsigned char *p, size_t size,
                                         unsigned kind) {
  if (size < 16 || kiln_read_le(p, 4) != 0xba55ed50u) return NULL;
  uint64_t at = kiln_read_le(p + 6, 2);
  while (kiln_within(at, 48, size)) {
    uint64_t header = kiln_read_le(p + at + 4, 4);
    uint64_t payload = kiln_read_le(p + at + 8, 8);
    if (kiln_read_le(p + at, 2) == kind) return p + at;
    if (header < 48 || !kiln_within(at + header, payload, size)) break;
    at += header + payload;
  }
  return NULL;
}

static bool plain_entry(const kiln_module_image *img, unsigned kind) {
  const unsigned char *h = fatbin_entry(img->data, img->size, kind);
  return h && !(kiln_read_le(h + 40, 8) & COMPRESSED);
}

/* ---- The images of kernels/image_params.cu ----------------------------------- */

static void test_cuda_images(void **state) {
  (void)state;
  NEED(cuda_images, cuda_why);
  const kiln_module_image *im = cuda_images;
  for (int i = CU_PTX; i <= CU_SASS; i++) {
    bool sizes_only = i == CU_CUBIN || i == CU_SASS;
    check_image((reader)im[i].format, &im[i], cu_kernels, CU_COUNT, sizes_only,
                cu_names[i]);
    /* HIP on NVIDIA loads the same images. */
    check_image(READ_HIP, &im[i], cu_kernels, CU_COUNT, sizes_only,
                cu_names[i]);
  }
  /* Not a kernel of the table: before, between and after its names, and a
   * prefix of one. */
  kiln_param_table t;
  read_copy(READ_PTX, im[CU_PTX].data, im[CU_PTX].size, &t, "PTX");
  static const char *const absent[] = {"",   "K",     "_Z7mangled", "a",
                                       "kk", "nonez", "zzz",        "aggregat"};
  for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
    if (kiln_param_table_find(&t, absent[i]))
      fail_msg("a kernel '%s' was found", absent[i]);
  kiln_param_table_free(&t);
  /* An image read as a format it is not describes nothing. */
  for (int i = CU_PTX; i <= CU_PLAIN; i++)
    for (reader r = READ_PTX; r <= READ_FATBIN; r++) {
      if (r == (reader)im[i].format) continue;
      read_copy(r, im[i].data, im[i].size, &t, "mismatched format");
      if (t.count) fail_msg("image %d read as format %d has kernels", i, r);
    }
}

/* Compressed entries are left out: kiln does not decompress them. */
static void test_fatbin_compression(void **state) {
  (void)state;
  NEED(cuda_images, cuda_why);
  const kiln_module_image *im = cuda_images;
  if (plain_entry(&im[CU_ZIPPED], FATBIN_PTX) ||
      plain_entry(&im[CU_ZIPPED], FATBIN_ELF) ||
      !fatbin_entry(im[CU_ZIPPED].data, im[CU_ZIPPED].size, FATBIN_ELF))
    fail_msg("nvcc -Xfatbin -compress-all left an entry uncompressed");
  check_image(READ_FATBIN, &im[CU_ZIPPED], cu_kernels, 0, false,
              "compressed fatbin");
  /* nvcc's default: the lists come from whichever entry it left plain,
   * PTX first for its kinds. */
  const kiln_module_image *d = &im[CU_DEFAULT];
  bool ptx = plain_entry(d, FATBIN_PTX), elf = plain_entry(d, FATBIN_ELF);
  print_message("nvcc's default fatbin: PTX %s, cubin %s\n",
                ptx ? "plain" : "compressed", elf ? "plain" : "compressed");
  check_image(READ_FATBIN, d, cu_kernels, ptx || elf ? CU_COUNT : 0, !ptx,
              "default fatbin");
  /* The plain fatbin with one entry marked compressed in turn. */
  const kiln_module_image *plain = &im[CU_PLAIN];
  unsigned char *copy = malloc(plain->size);
  assert_non_null(copy);
  for (unsigned kind = FATBIN_PTX; kind <= FATBIN_ELF; kind++) {
    memcpy(copy, plain->data, plain->size);
    const unsigned char *h = fatbin_entry(copy, plain->size, kind);
    assert_non_null(h);
    /* Zstandard for the PTX, LZ4 for the cubin: bits 15 and 13. */
    copy[(size_t)(h - copy) + 41] |= kind == FATBIN_PTX ? 0x80 : 0x20;
    kiln_module_image img = {KILN_IMAGE_FATBIN, copy, plain->size};
    check_image(READ_FATBIN, &img, cu_kernels, CU_COUNT, kind == FATBIN_PTX,
                kind == FATBIN_PTX ? "fatbin, PTX compressed"
                                   : "fatbin, cubin compressed");
  }
  free(copy);
}

/* may_printf: set for images that name vprintf, and for a fatbin kiln
 * cannot see into (every entry compressed); clear for the others. */
static void test_printf_detection(void **state) {
  (void)state;
  static const char text[] = "call vprintf, (a);";
  assert_true(kiln_bytes_contain(text, sizeof text - 1, "vprintf"));
  assert_true(kiln_bytes_contain(text, sizeof text - 1, ");"));
  assert_false(kiln_bytes_contain(text, 9, "vprintf"));
  assert_false(kiln_bytes_contain(text, sizeof text - 1, "vprintff"));
  assert_false(kiln_bytes_contain(text, 0, "v"));
  assert_true(kiln_bytes_contain(text, 0, ""));
  /* A compressed HIP bundle: unreadable, so it may print. */
  static const unsigned char ccob[] = "CCOB\1\0\2\0 compressed bytes";
  kiln_param_table t;
  assert_int_equal(kiln_params_read_hip(ccob, sizeof ccob, "gfx90a", &t),
                   KILN_OK);
  assert_true(t.may_printf);
  kiln_param_table_free(&t);
  if (hip_images && !hip_why[0]) {
    const kiln_module_image *b = &hip_images[HIP_BUNDLE];
    read_copy(READ_HIP, b->data, b->size, &t, "HIP bundle");
    if (t.may_printf) fail_msg("a HIP bundle without printf may print");
    kiln_param_table_free(&t);
  }
  NEED(cuda_images, cuda_why);
  for (int i = CU_PTX; i <= CU_PRINTF_ZIPPED; i++) {
    const kiln_module_image *im = &cuda_images[i];
    /* nvcc's default fatbin: unseen only where it compressed both. */
    const bool prints = i == CU_ZIPPED || i >= CU_PRINTF_PTX ||
                        (i == CU_DEFAULT && !plain_entry(im, FATBIN_PTX) &&
                         !plain_entry(im, FATBIN_ELF));
    read_copy((reader)im->format, im->data, im->size, &t, cu_names[i]);
    if (t.may_printf != prints)
      fail_msg("%s: may_printf is %d, expected %d", cu_names[i],
               (int)t.may_printf, (int)prints);
    kiln_param_table_free(&t);
    read_copy(READ_HIP, im->data, im->size, &t, cu_names[i]);
    if (t.may_printf != prints)
      fail_msg("%s read for HIP: may_printf is %d, expected %d", cu_names[i],
               (int)t.may_printf, (int)prints);
    kiln_param_table_free(&t);
  }
}

/* The target of a bundle's first AMDGPU code object, into buf: what
 * follows the "--" of its id ("hipv4-amdgcn-amd-amdhsa--gfx90a"). */
static void first_target(const unsigned char *p, size_t size, char *buf) {
  buf[0] = '\0';
  uint64_t n = kiln_read_le(p + 24, 8), at = 32;
  for (uint64_t e = 0; e < n && !buf[0] && kiln_within(at, 24, size); e++) {
    uint64_t length = kiln_read_le(p + at + 16, 8);
    char id[128];
    snprintf(id, sizeof id, "%.*s", (int)(length < 127 ? length : 127),
             (const char *)p + at + 24);
    const char *target = strstr(id, "--");
    if (strstr(id, "-amdgcn-") && kiln_read_le(p + at + 8, 8) && target)
      snprintf(buf, 32, "%.*s", (int)strcspn(target + 2, ":"), target + 2);
    at += 24 + length;
  }
}

/* kiln_params_read_hip for `target` on a copy of img: the first n kernels
 * of w, exactly. */
static void check_hip(const kiln_module_image *img, const char *target,
                      const want *w, size_t n) {
  unsigned char *block = malloc(img->size);
  assert_non_null(block);
  memcpy(block, img->data, img->size);
  const char *what = target ? target : "no target";
  kiln_param_table t;
  check_sane(kiln_params_read_hip(block, img->size, target, &t), &t, img->size,
             what);
  free(block);
  check_table(&t, w, n, false, what);
  kiln_param_table_free(&t);
}

static void test_hip_images(void **state) {
  (void)state;
  NEED(hip_images, hip_why);
  const kiln_module_image *bundle = &hip_images[HIP_BUNDLE];
  /* The code object of each target: gfx90a_only in gfx90a's alone. */
  char targets[] = IMGP_HIP_TARGETS;
  for (char *save = NULL, *t = strtok_r(targets, " ", &save); t;
       t = strtok_r(NULL, " ", &save))
    check_hip(bundle, t, hip_kernels, HIP_COUNT - (strcmp(t, "gfx90a") != 0));
  /* No target, or one the bundle lacks: its first code object. */
  char first[32];
  first_target(bundle->data, bundle->size, first);
  print_message("the bundle's first code object is for %s\n", first);
  static const char *const others[] = {NULL, "gfx0", "gfx90", "gfx90a0"};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
    check_hip(bundle, others[i], hip_kernels,
              HIP_COUNT - (strcmp(first, "gfx90a") != 0));
  /* A bundle is no CUDA image. */
  for (reader r = READ_PTX; r <= READ_FATBIN; r++) {
    kiln_param_table t;
    read_copy(r, bundle->data, bundle->size, &t, "bundle as CUDA");
    assert_int_equal(t.count, 0);
  }
}

static void test_gfx90a_code_object(void **state) {
  (void)state;
  NEED(hip_images, hip_why);
  NEED(hip_images, gfx90a_why);
  const kiln_module_image *co = &hip_images[HIP_GFX90A];
  assert_true(co->size > 64 && memcmp(co->data, "\177ELF", 4) == 0);
  /* Whatever the target asked: a lone code object is read as it is. */
  check_hip(co, "gfx90a", hip_kernels, HIP_COUNT);
  check_hip(co, NULL, hip_kernels, HIP_COUNT);
  check_hip(co, "gfx1030", hip_kernels, HIP_COUNT);
  kiln_param_table t;
  read_copy(READ_CUBIN, co->data, co->size, &t, "code object as cubin");
  assert_int_equal(t.count, 0);
  /* A symbol with a NUL in it, "agg\0egate.kd": its kernel is left out,
   * not filed under "agg". */
  static const char symbol[] =
      "\xac"
      "aggregate.kd";
  unsigned char *copy = malloc(co->size);
  assert_non_null(copy);
  memcpy(copy, co->data, co->size);
  size_t at = 0;
  while (at + sizeof symbol - 1 <= co->size &&
         memcmp(copy + at, symbol, sizeof symbol - 1) != 0)
    at++;
  assert_true(at + sizeof symbol - 1 <= co->size);
  copy[at + 4] = '\0';
  const kiln_module_image img = {KILN_IMAGE_HIP_CODE_OBJECT, copy, co->size};
  const want rest[] = {hip_kernels[0], hip_kernels[1], hip_kernels[2],
                       hip_kernels[4]};
  check_hip(&img, "gfx90a", rest, 4);
  free(copy);
}

/* ---- Hand-written PTX ----------------------------------------------------------- */

static void test_ptx_edge_cases(void **state) {
  (void)state;
  check_image(READ_PTX, &imgp_ptx_images[0], edge_kernels, EDGE_COUNT, false,
              "ptx_edge_cases.ptx");
}

/* What ptxas makes of the same text: the same offsets and sizes. */
static void test_ptxas_edge_cases(void **state) {
  (void)state;
  NEED(cuda_images, cuda_why);
  check_image(READ_CUBIN, &cuda_images[CU_EDGE], edge_kernels, EDGE_COUNT, true,
              cu_names[CU_EDGE]);
}

/* Lists kiln cannot describe leave their kernel out, and the reader goes
 * on with the next; of two entries of a name, the first counts. */
static const char broken_ptx[] =
    ".version 8.3\n.target sm_90\n.address_size 64\n"
    ".entry textured(.param .texref t, .param .u32 n) { ret; }\n"
    ".entry hex_align(.param .align 0x10 .b8 h[16]) { ret; }\n"
    ".entry odd_align(.param .align 3 .b8 h[16]) { ret; }\n"
    ".entry no_count(.param .b8 h[]) { ret; }\n"
    ".entry zero_count(.param .b8 h[0]) { ret; }\n"
    ".entry too_many(.param .b32 h[1073741824]) { ret; }\n"
    ".entry past_4g(.param .b8 h0[2147483648], .param .b8 h1[2147483648],"
    " .param .u32 h2) { ret; }\n"
    ".entry two_types(.param .u32 .f32 a) { ret; }\n"
    ".entry untyped(.param a) { ret; }\n"
    ".entry no_comma(.param .u32 a .param .u32 b) { ret; }\n"
    ".entry no_name(.param .u32) { ret; }\n"
    ".entry not_param(.reg .u32 a) { ret; }\n"
    ".entry dup(.param .u32 first) { ret; }\n"
    ".entry dup(.param .f32 second, .param .u32 third) { ret; }\n"
    ".entry after(.param .u32 ok) { ret; }\n"
    ".entry\n";

static void test_ptx_broken(void **state) {
  (void)state;
  static const want kept[] = {{"dup", "0/4i"}, {"after", "0/4i"}};
  kiln_param_table t;
  read_copy(READ_PTX, broken_ptx, sizeof broken_ptx - 1, &t, "broken PTX");
  check_table(&t, kept, 2, false, "broken PTX");
  kiln_param_table_free(&t);
  /* ptxas refuses a name with a dot: whatever the reader makes of it, it
   * is not that kernel, and the next is read. */
  static const char dotted[] =
      ".entry dotted.name(.param .u32 d) { ret; }\n"
      ".entry after(.param .u32 ok) { ret; }\n";
  read_copy(READ_PTX, dotted, sizeof dotted - 1, &t, "dotted PTX");
  assert_null(kiln_param_table_find(&t, "dotted.name"));
  const kiln_kernel_params *kp = kiln_param_table_find(&t, "after");
  assert_true(kp && kp->count == 1 && kp->params[0].kind == KILN_PARAM_INT);
  kiln_param_table_free(&t);
  /* Text past a NUL is not read, as the driver reads none. */
  static const char nul[] =
      ".entry before(.param .u32 a) { ret; }\n\0"
      ".entry past(.param .u32 b) { ret; }\n";
  read_copy(READ_PTX, nul, sizeof nul, &t, "PTX with a NUL");
  assert_int_equal(t.count, 1);
  assert_non_null(kiln_param_table_find(&t, "before"));
  kiln_param_table_free(&t);
}

/* Many kernels: the table grows, sorts and finds each, and keeps the
 * first list of a name given twice. */
static void test_many_kernels(void **state) {
  (void)state;
  enum { N = 300 };
  size_t cap = (N + 20) * 96, used = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  for (int i = N + 19; i >= 0; i--) {
    /* Names 19..0 with an extra parameter, then N-1..0. */
    int n = i % N;
    used += (size_t)snprintf(text + used, cap - used, ".entry e%d(", n);
    for (int j = 0; j < n % 5 + (i >= N); j++)
      used += (size_t)snprintf(text + used, cap - used, "%s.param .u32 p%d",
                               j ? ", " : "", j);
    used += (size_t)snprintf(text + used, cap - used, ") { ret; }\n");
  }
  kiln_param_table t;
  read_copy(READ_PTX, text, used, &t, "many kernels");
  free(text);
  assert_int_equal(t.count, N);
  for (int i = 0; i < N; i++) {
    char name[16];
    snprintf(name, sizeof name, "e%d", i);
    const kiln_kernel_params *kp = kiln_param_table_find(&t, name);
    if (!kp) fail_msg("no kernel %s", name);
    assert_int_equal(kp->count, (size_t)(i % 5 + (i < 20)));
  }
  static const char *const absent[] = {"e", "e300", "e00", "e-1", "f", "d"};
  for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
    assert_null(kiln_param_table_find(&t, absent[i]));
  kiln_param_table_free(&t);
  assert_int_equal(t.count, 0);
  assert_null(kiln_param_table_find(&t, "e1"));
}

/* ---- Robustness ---------------------------------------------------------------- */

/* The images of every robustness test. */
typedef struct image {
  const char *what;
  reader reader;
  const unsigned char *data;
  size_t size;
} image;

#define IMAGES_MAX 16

static size_t all_images(image *out) {
  size_t n = 0;
  out[n++] = (image){"ptx_edge_cases.ptx", READ_PTX, imgp_ptx_images[0].data,
                     imgp_ptx_images[0].size};
  out[n++] = (image){"broken PTX", READ_PTX, (const unsigned char *)broken_ptx,
                     sizeof broken_ptx - 1};
  for (size_t i = 0; cuda_images && i <= CU_EDGE; i++)
    out[n++] = (image){cu_names[i], (reader)cuda_images[i].format,
                       cuda_images[i].data, cuda_images[i].size};
  for (size_t i = 0; hip_images && i <= (gfx90a_why[0] ? 0u : 1u); i++)
    out[n++] = (image){i == HIP_BUNDLE ? "bundle" : "gfx90a code object",
                       READ_HIP, hip_images[i].data, hip_images[i].size};
  return n;
}

/* Every length from 0 to the whole (a stride past 64 KiB): each kernel
 * found is as in the whole image, with the same parameters, of the same
 * kind or of only their size (a fatbin cut in its PTX gives its cubin's
 * lists), or left out. */
static void test_truncated(void **state) {
  (void)state;
  image images[IMAGES_MAX];
  for (size_t i = 0, n = all_images(images); i < n; i++) {
    const image *im = &images[i];
    kiln_param_table full, part;
    read_copy(im->reader, im->data, im->size, &full, im->what);
    for (size_t length = 0; length <= im->size;
         length += im->size / 65536 + 1) {
      read_copy(im->reader, im->data, length, &part, im->what);
      for (size_t k = 0; k < part.count; k++) {
        const kiln_kernel_params *p = &part.kernels[k];
        const kiln_kernel_params *f = kiln_param_table_find(&full, p->name);
        bool same = f && f->count == p->count;
        for (size_t j = 0; same && j < p->count; j++)
          same = p->params[j].offset == f->params[j].offset &&
                 p->params[j].size == f->params[j].size &&
                 (p->params[j].kind == f->params[j].kind ||
                  p->params[j].kind == KILN_PARAM_BITS);
        if (!same)
          fail_msg("%s cut to %zu bytes: '%s' is not as in the whole image",
                   im->what, length, p->name);
      }
      kiln_param_table_free(&part);
    }
    kiln_param_table_free(&full);
  }
}

/* ---- Where the images keep their lengths and offsets ------------------------- */

/* A field the readers follow: LE or BE, `width` bytes at `at` (big-endian
 * in MessagePack); FIX, a MessagePack head that holds its own count
 * (fixstr, fixarray, fixmap); HEAD, any MessagePack head. */
enum { FIELD_LE, FIELD_BE, FIELD_FIX, FIELD_HEAD };

typedef struct field {
  size_t at;
  unsigned width, kind;
} field;

/* The fields of the image being tried, of `image_size` bytes. */
#define FIELDS_MAX 16384
static field fields[FIELDS_MAX];
static size_t field_count, image_size;

static void add(size_t at, unsigned width, unsigned kind) {
  if (field_count < FIELDS_MAX && at <= image_size && width <= image_size - at)
    fields[field_count++] = (field){at, width, kind};
}

/* The MessagePack value at *at, and each it holds, up to `end`; false
 * where it does not parse (the fields so far stay). */
static bool msgpack_fields(const unsigned char *p, size_t *at, size_t end,
                           int depth) {
  if (*at >= end || depth > 32) return false;
  size_t h = (*at)++;
  unsigned c = p[h], width = 0;
  uint64_t n = 0, length = 0;
  bool map = false;
  add(h, 1, FIELD_HEAD);
  if (c >= 0x80 && c <= 0xbf) {
    add(h, 1, FIELD_FIX);
    if (c >= 0xa0)
      length = c & 0x1f;
    else
      n = c & 0x0f, map = c <= 0x8f;
  } else if ((c >= 0xc4 && c <= 0xc6) || (c >= 0xd9 && c <= 0xdb)) {
    width = 1u << (c >= 0xd9 ? c - 0xd9 : c - 0xc4);
  } else if (c >= 0xdc && c <= 0xdf) {
    width = c == 0xdc || c == 0xde ? 2 : 4;
    map = c >= 0xde;
  } else if (c >= 0xca && c <= 0xd3) {
    length = c <= 0xcb ? 4u << (c - 0xca) : 1u << ((c - 0xcc) & 3);
  } else if (c > 0x7f && c < 0xe0 && c != 0xc0 && c != 0xc2 && c != 0xc3) {
    return false; /* ext, which the metadata does not use */
  }
  if (width) {
    if (end - *at < width) return false;
    add(*at, width, FIELD_BE);
    uint64_t v = 0;
    for (unsigned i = 0; i < width; i++) v = v << 8 | p[*at + i];
    *at += width;
    *(c >= 0xdc ? &n : &length) = v;
  }
  if (length > end - *at) return false;
  *at += (size_t)length;
  for (uint64_t i = 0; i < (map ? 2 * n : n); i++)
    if (!msgpack_fields(p, at, end, depth + 1)) return false;
  return true;
}

/* A note section at [at, end): each note's sizes and type, and the
 * AMDGPU metadata. */
static void note_fields(const unsigned char *p, size_t at, size_t end) {
  while (end - at >= 12) {
    for (unsigned i = 0; i < 3; i++) add(at + 4 * i, 4, FIELD_LE);
    uint64_t name_size = kiln_read_le(p + at, 4);
    uint64_t desc_size = kiln_read_le(p + at + 4, 4);
    size_t desc = at + 12 + (size_t)((name_size + 3) & ~(uint64_t)3), mp = desc;
    if (!kiln_within(desc, desc_size, end)) return;
    if (kiln_read_le(p + at + 8, 4) == 32)
      msgpack_fields(p, &mp, desc + (size_t)desc_size, 0);
    at = desc + (size_t)((desc_size + 3) & ~(uint64_t)3);
    if (at > end) return;
  }
}

/* An .nv.info section at [at, end): each attribute's length, and the
 * ordinal, offset and size of each EIATTR_KPARAM_INFO. */
static void nv_info_fields(const unsigned char *p, size_t at, size_t end) {
  while (end - at >= 4) {
    size_t length = p[at] == 4 ? (size_t)kiln_read_le(p + at + 2, 2) : 0;
    if (p[at] == 4) add(at + 2, 2, FIELD_LE);
    if (p[at + 1] == 0x17 && length >= 12)
      for (unsigned i = 0; i < 3; i++)
        add(at + 8 + 2 * i, i < 2 ? 2 : 4, FIELD_LE);
    if (length > end - at - 4) return;
    at += 4 + length;
  }
}

/* An ELF image at [base, base + size): its header's section fields, each
 * section's name, offset, size and link, and the notes and .nv.info
 * sections. */
static void elf_fields(const unsigned char *p, size_t base, size_t size) {
  const unsigned char *e = p + base;
  if (size < 64 || memcmp(e, "\177ELF", 4) != 0) return;
  add(base + 0x28, 8, FIELD_LE);
  for (unsigned i = 0; i < 3; i++) add(base + 0x3a + 2 * i, 2, FIELD_LE);
  uint64_t shoff = kiln_read_le(e + 0x28, 8);
  uint64_t entsize = kiln_read_le(e + 0x3a, 2);
  uint64_t shnum = kiln_read_le(e + 0x3c, 2);
  uint64_t strndx = kiln_read_le(e + 0x3e, 2);
  if (entsize < 64 || strndx >= shnum ||
      !kiln_within(shoff, shnum * entsize, size))
    return;
  const unsigned char *strings = e + shoff + strndx * entsize;
  uint64_t str_at = kiln_read_le(strings + 24, 8);
  uint64_t str_size = kiln_read_le(strings + 32, 8);
  if (!kiln_within(str_at, str_size, size)) return;
  for (uint64_t i = 0; i < shnum; i++) {
    size_t at = base + (size_t)(shoff + i * entsize);
    static const unsigned char offsets[] = {0, 24, 32, 40},
                               widths[] = {4, 8, 8, 4};
    for (unsigned j = 0; j < 4; j++) add(at + offsets[j], widths[j], FIELD_LE);
    uint64_t name = kiln_read_le(p + at, 4), type = kiln_read_le(p + at + 4, 4);
    uint64_t off = kiln_read_le(p + at + 24, 8);
    uint64_t bytes = kiln_read_le(p + at + 32, 8);
    if (type == 8 || !kiln_within(off, bytes, size)) continue;
    size_t start = base + (size_t)off, end = start + (size_t)bytes;
    if (type == 7)
      note_fields(p, start, end);
    else if (kiln_within(name, 8, str_size) &&
             memcmp(e + str_at + name, ".nv.info", 8) == 0)
      nv_info_fields(p, start, end);
  }
}

/* Where the image keeps lengths and offsets, into `fields`: a fatbin's
 * sizes and its entries' sizes and flags, a bundle's count and its
 * entries' offsets, sizes and id lengths, and the ELF images within. */
static void find_fields(const image *im) {
  const unsigned char *p = im->data;
  size_t size = im->size;
  field_count = 0;
  image_size = size;
  if (size >= 16 && kiln_read_le(p, 4) == 0xba55ed50u) {
    add(6, 2, FIELD_LE);
    add(8, 8, FIELD_LE);
    for (uint64_t at = kiln_read_le(p + 6, 2); kiln_within(at, 48, size);) {
      add((size_t)at + 4, 4, FIELD_LE);  /* the header's size */
      add((size_t)at + 8, 8, FIELD_LE);  /* the payload's */
      add((size_t)at + 40, 8, FIELD_LE); /* the flags */
      uint64_t header = kiln_read_le(p + at + 4, 4);
      uint64_t payload = kiln_read_le(p + at + 8, 8);
      if (header < 48 || !kiln_within(at + header, payload, size)) break;
      if (kiln_read_le(p + at, 2) == FATBIN_ELF)
        elf_fields(p, (size_t)(at + header), (size_t)payload);
      at += header + payload;
    }
  }
  if (size >= 32 && memcmp(p, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0) {
    add(24, 8, FIELD_LE);
    uint64_t n = kiln_read_le(p + 24, 8), at = 32;
    for (uint64_t e = 0; e < n && kiln_within(at, 24, size); e++) {
      for (unsigned i = 0; i < 3; i++) add((size_t)at + 8 * i, 8, FIELD_LE);
      uint64_t off = kiln_read_le(p + at, 8);
      uint64_t bytes = kiln_read_le(p + at + 8, 8);
      at += 24 + kiln_read_le(p + at + 16, 8);
      if (kiln_within(off, bytes, size))
        elf_fields(p, (size_t)off, (size_t)bytes);
    }
  }
  elf_fields(p, 0, size);
}

/* ---- Huge fields and mutants ---------------------------------------------------- */

static void put(unsigned char *p, const field *fd, uint64_t v) {
  for (unsigned i = 0; i < fd->width; i++) {
    unsigned byte = fd->kind == FIELD_BE ? fd->width - 1 - i : i;
    p[fd->at + i] = (unsigned char)(v >> 8 * byte);
  }
}

/* The k-th of the values tried in a field: its largest, nearly so, its top
 * bit, zero, and the image's size and one past it. A MessagePack head
 * becomes a 32-bit string, array, map, bin or ext of a huge length or
 * the image's size; a fixed head, its largest count. */
#define TRIES 6
static void set_huge(unsigned char *p, const field *fd, int k) {
  if (fd->kind == FIELD_FIX) {
    p[fd->at] |= p[fd->at] >= 0xa0 ? 0x1f : 0x0f;
  } else if (fd->kind == FIELD_HEAD) {
    static const unsigned char heads[TRIES] = {0xdb, 0xdd, 0xdf,
                                               0xc6, 0xc9, 0xda};
    if (image_size - fd->at < 5) return;
    p[fd->at] = heads[k];
    const field length = {fd->at + 1, 4, FIELD_BE};
    put(p, &length, k % 2 ? 0xffffffffu : (uint64_t)image_size);
  } else {
    uint64_t max =
        fd->width == 8 ? UINT64_MAX : (UINT64_C(1) << 8 * fd->width) - 1;
    const uint64_t values[TRIES] = {max, max - 3,    max / 2 + 1,
                                    0,   image_size, (uint64_t)image_size + 1};
    put(p, fd, values[k] & max);
  }
}

/* splitmix64, for mutants that are the same on every machine. */
static uint64_t rng_state;
static uint64_t rng(void) {
  uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* One to four changes: half of them to a field (a huge or random value),
 * the rest to any byte (a bit flipped, a byte or a word set; in text, a
 * character the lexer minds). */
static void mutate(unsigned char *p, size_t size, bool text) {
  static const char chars[] = " \n\r/*().,[]$%_0123456789aex";
  for (int i = 1 + (int)(rng() % 4); i > 0 && size; i--) {
    uint64_t r = rng();
    if (field_count && r % 2 == 0) {
      const field *fd = &fields[rng() % field_count];
      if (r % 4 == 0 || fd->kind > FIELD_BE)
        set_huge(p, fd, (int)(rng() % TRIES));
      else
        put(p, fd, r >> rng() % 64);
      continue;
    }
    size_t at = (size_t)(rng() % size);
    switch (r / 2 % 4) {
    case 0: p[at] ^= (unsigned char)(1u << rng() % 8); break;
    case 1:
      p[at] = text ? (unsigned char)chars[rng() % (sizeof chars - 1)]
                   : (unsigned char)rng();
      break;
    case 2:
      for (size_t j = at; j < size && j < at + 4; j++)
        p[j] = (unsigned char)(r >> 8 * (j - at + 2));
      break;
    default: p[at] = rng() % 2 ? 0xff : 0; break;
    }
  }
}

#define MUTANTS 2000

/* Each field of each image set to each huge value in turn, then MUTANTS
 * mutants of the image from a fixed seed. */
static void test_damaged(void **state) {
  (void)state;
  image images[IMAGES_MAX];
  size_t tried = 0;
  rng_state = UINT64_C(0x6b696c6e);
  for (size_t i = 0, n = all_images(images); i < n; i++) {
    const image *im = &images[i];
    find_fields(im);
    if (im->reader != READ_PTX && field_count < 8)
      fail_msg("%s: only %zu fields found", im->what, field_count);
    unsigned char *block = malloc(im->size);
    assert_non_null(block);
    memcpy(block, im->data, im->size);
    kiln_param_table t;
    for (size_t j = 0; j < field_count; j++) {
      const field *fd = &fields[j];
      for (int k = 0; k < (fd->kind == FIELD_FIX ? 1 : TRIES); k++, tried++) {
        set_huge(block, fd, k);
        read_block(im->reader, block, im->size, &t, im->what);
        kiln_param_table_free(&t);
        memcpy(block + fd->at, im->data + fd->at,
               im->size - fd->at < 8 ? im->size - fd->at : 8);
      }
    }
    for (int m = 0; m < MUTANTS; m++, tried++) {
      memcpy(block, im->data, im->size);
      mutate(block, im->size, im->reader == READ_PTX);
      read_block(im->reader, block, im->size, &t, im->what);
      kiln_param_table_free(&t);
    }
    free(block);
  }
  print_message("%zu damaged images read\n", tried);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cuda_images),
      cmocka_unit_test(test_fatbin_compression),
      cmocka_unit_test(test_printf_detection),
      cmocka_unit_test(test_hip_images),
      cmocka_unit_test(test_gfx90a_code_object),
      cmocka_unit_test(test_ptx_edge_cases),
      cmocka_unit_test(test_ptxas_edge_cases),
      cmocka_unit_test(test_ptx_broken),
      cmocka_unit_test(test_many_kernels),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_damaged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
