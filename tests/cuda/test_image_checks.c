/* What the CUDA and HIP backends read of an image before their driver
 * does (core/images/params.h): that everything an ELF file, a fatbin or an offload
 * bundle claims lies within the size kiln was given, and the GPU a PTX
 * image's .target names. Pure functions of bytes, so this runs on every
 * machine, on images built here byte by byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/images/params.h"

static void put_le(unsigned char *p, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* An ELF64 little-endian header with one section header (64 bytes, at
 * 64) whose contents are 16 bytes at 128: 144 bytes in all. */
enum { ELF_SIZE = 144 };

static void make_elf(unsigned char *p) {
  memset(p, 0, ELF_SIZE);
  memcpy(p, "\177ELF", 4);
  p[4] = 2; /* 64-bit */
  p[5] = 1; /* little-endian */
  put_le(p + 18, KILN_EM_CUDA, 2);
  put_le(p + 0x28, 64, 8);  /* section headers at */
  put_le(p + 0x3a, 64, 2);  /* each this size */
  put_le(p + 0x3c, 1, 2);   /* this many */
  put_le(p + 64 + 4, 1, 4); /* PROGBITS */
  put_le(p + 64 + 0x18, 128, 8);
  put_le(p + 64 + 0x20, 16, 8);
}

static void elf_whole_passes(void **state) {
  (void)state;
  unsigned char p[ELF_SIZE];
  char why[160];
  make_elf(p);
  assert_null(kiln_image_elf_problem(p, sizeof p, why, sizeof why));
}

static void elf_of_another_kind_fails(void **state) {
  (void)state;
  unsigned char p[ELF_SIZE];
  char why[160];
  make_elf(p);
  p[4] = 1; /* 32-bit */
  assert_string_equal(kiln_image_elf_problem(p, sizeof p, why, sizeof why),
                      "not a 64-bit little-endian ELF file");
  make_elf(p);
  p[5] = 2; /* big-endian */
  assert_non_null(kiln_image_elf_problem(p, sizeof p, why, sizeof why));
  assert_non_null(kiln_image_elf_problem(p, 63, why, sizeof why));
}

static void elf_cut_short_fails(void **state) {
  (void)state;
  unsigned char p[ELF_SIZE];
  char why[160];
  make_elf(p);
  /* The section's contents run past the end. */
  const char *problem =
      kiln_image_elf_problem(p, ELF_SIZE - 1, why, sizeof why);
  assert_non_null(problem);
  assert_non_null(strstr(problem, "cut short"));
  assert_non_null(strstr(problem, "143 bytes"));
  /* The section header table runs past the end. */
  assert_non_null(kiln_image_elf_problem(p, 100, why, sizeof why));
  /* A count of sections that wraps the table's size around. */
  make_elf(p);
  put_le(p + 0x28, UINT64_MAX - 8, 8);
  assert_non_null(kiln_image_elf_problem(p, sizeof p, why, sizeof why));
  /* A NOBITS section has no contents in the file to lie outside it. */
  make_elf(p);
  put_le(p + 64 + 4, 8, 4);
  put_le(p + 64 + 0x20, 1u << 20, 8);
  assert_null(kiln_image_elf_problem(p, sizeof p, why, sizeof why));
}

/* A fatbin header: magic, version, header size 16, payload size. */
static void make_fatbin(unsigned char *p, uint64_t payload) {
  memset(p, 0, 16);
  put_le(p, KILN_FATBIN_MAGIC, 4);
  put_le(p + 4, 1, 2);
  put_le(p + 6, 16, 2);
  put_le(p + 8, payload, 8);
}

static void fatbin_checked(void **state) {
  (void)state;
  unsigned char p[64];
  make_fatbin(p, 48);
  assert_null(kiln_image_fatbin_problem(p, 64));
  assert_non_null(kiln_image_fatbin_problem(p, 63));
  /* A payload size that would wrap the end around to within the image. */
  make_fatbin(p, UINT64_MAX - 8);
  assert_non_null(kiln_image_fatbin_problem(p, 64));
  p[0] ^= 1;
  assert_non_null(strstr(kiln_image_fatbin_problem(p, 64), "not a fatbin"));
  assert_non_null(kiln_image_fatbin_problem(p, 15));
}

/* An offload bundle of one entry: magic, entry count, then the entry's
 * offset, size and id length, the id, and the code object. */
enum { BUNDLE_ID = 8, BUNDLE_CODE = 8 };
#define BUNDLE_AT (KILN_BUNDLE_MAGIC_SIZE + 8)
#define BUNDLE_SIZE (BUNDLE_AT + 24 + BUNDLE_ID + BUNDLE_CODE)

static void make_bundle(unsigned char *p) {
  memset(p, 0, BUNDLE_SIZE);
  memcpy(p, KILN_BUNDLE_MAGIC, KILN_BUNDLE_MAGIC_SIZE);
  put_le(p + KILN_BUNDLE_MAGIC_SIZE, 1, 8);
  put_le(p + BUNDLE_AT, BUNDLE_SIZE - BUNDLE_CODE, 8);
  put_le(p + BUNDLE_AT + 8, BUNDLE_CODE, 8);
  put_le(p + BUNDLE_AT + 16, BUNDLE_ID, 8);
}

static void bundle_checked(void **state) {
  (void)state;
  unsigned char p[BUNDLE_SIZE];
  char why[160];
  make_bundle(p);
  assert_null(kiln_image_bundle_problem(p, sizeof p, why, sizeof why));
  const char *problem =
      kiln_image_bundle_problem(p, sizeof p - 1, why, sizeof why);
  assert_non_null(problem);
  assert_non_null(strstr(problem, "entry 0 lies past"));
  problem = kiln_image_bundle_problem(p, BUNDLE_AT + 8, why, sizeof why);
  assert_non_null(problem);
  assert_non_null(strstr(problem, "entry 0 is cut short"));
  assert_non_null(kiln_image_bundle_problem(p, BUNDLE_AT - 1, why, sizeof why));
}

static bool target_of(const char *ptx, unsigned *arch, char *suffix) {
  return kiln_ptx_target(ptx, strlen(ptx), arch, suffix);
}

static void ptx_target_read(void **state) {
  (void)state;
  unsigned arch = 0;
  char suffix = 'x';
  assert_true(
      target_of("//\n// a comment\n.version 8.0\n.target sm_90\n"
                ".address_size 64\n",
                &arch, &suffix));
  assert_int_equal(arch, 90);
  assert_int_equal(suffix, '\0');
  assert_true(target_of(".version 8.0\n.target sm_90a\n", &arch, &suffix));
  assert_int_equal(arch, 90);
  assert_int_equal(suffix, 'a');
  assert_true(
      target_of("\t.target\tsm_100f, texmode_independent\n", &arch, &suffix));
  assert_int_equal(arch, 100);
  assert_int_equal(suffix, 'f');
  /* What kiln does not read is the driver's to judge. */
  assert_false(target_of(".version 8.0\n.address_size 64\n.target sm_90\n",
                         &arch, &suffix));
  assert_false(target_of(".target compute_90\n", &arch, &suffix));
  assert_false(target_of(".target sm_90x\n", &arch, &suffix));
  assert_false(target_of(".target sm_\n", &arch, &suffix));
  assert_false(target_of("", &arch, &suffix));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(elf_whole_passes),
      cmocka_unit_test(elf_of_another_kind_fails),
      cmocka_unit_test(elf_cut_short_fails),
      cmocka_unit_test(fatbin_checked),
      cmocka_unit_test(bundle_checked),
      cmocka_unit_test(ptx_target_read),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
