/* What kiln_buffer_fill hands a backend's fill op: the pattern narrowed
 * once in the core, and only a size the backend lists in fill_sizes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

/* The fake's fills table is const: the test puts this copy of it in the
 * fake's place, and each fill gives it its sizes. */
static kiln_fill_ops fill_table;

/* One fill through the fake, whose buffer_fill takes the sizes `sizes`:
 * which pattern and size it received (0 and 0 when the fill went through
 * the kernel kiln_fill instead), and that the bytes are the caller's. */
typedef struct fill_seen {
  uint64_t pattern;
  size_t size;
} fill_seen;

static fill_seen fill_through(fake_fixture *f, kiln_buffer *b, uint32_t sizes,
                              size_t off, size_t size, const void *pattern,
                              size_t pattern_size) {
  fill_table.fill_sizes = sizes;
  unsigned char zeros[64] = {0}, got[64];
  check_ok(kiln_buffer_write(NULL, b, 0, zeros, 64));
  unsigned fills = f->fb.calls[FAKE_OP_FILL];
  unsigned launches = f->fb.calls[FAKE_OP_LAUNCH];
  check_ok(kiln_buffer_fill(NULL, b, off, size, pattern, pattern_size));
  check_ok(kiln_buffer_read(NULL, b, 0, got, 64));
  for (size_t i = 0; i < 64; i++) {
    unsigned char want = 0;
    if (i >= off && i < off + size)
      want = ((const unsigned char *)pattern)[(i - off) % pattern_size];
    assert_int_equal(got[i], want);
  }
  fill_seen seen = {0, 0};
  if (f->fb.calls[FAKE_OP_FILL] == fills + 1) {
    seen.pattern = f->fb.last_fill_pattern;
    seen.size = f->fb.last_fill_pattern_size;
  } else {
    assert_int_equal(f->fb.calls[FAKE_OP_FILL], fills);
    assert_int_equal(f->fb.calls[FAKE_OP_LAUNCH], launches + 1);
  }
  return seen;
}

/* kiln_buffer_fill narrows a pattern to the fewest bytes that describe it,
 * and hands the backend only a size it takes (fill_sizes) at an offset and
 * size that suit it, the pattern repeated to that size; all else goes to
 * the kernel kiln_fill. */
static void fill_patterns_narrowed_for_the_backend(void **state) {
  fake_fixture *f = *state;
  f->fb.fill_with_kernel = false;
  fill_table = *f->fb.ops.fills;
  f->fb.ops.fills = &fill_table;
  kiln_buffer *b;
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &b));
  const uint32_t any = 1 | 2 | 4 | 8, cuda = 1 | 2 | 4, vulkan = 4;
  const unsigned char zero8[8] = {0};
  const unsigned char byte8[8] = {0xab, 0xab, 0xab, 0xab,
                                  0xab, 0xab, 0xab, 0xab};
  const unsigned char half8[8] = {0x11, 0x22, 0x11, 0x22,
                                  0x11, 0x22, 0x11, 0x22};
  const unsigned char word8[8] = {1, 2, 3, 4, 1, 2, 3, 4};
  const unsigned char full8[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const unsigned char byte4[4] = {0x5a, 0x5a, 0x5a, 0x5a};
  const unsigned char one[1] = {0x7e};
  const unsigned char two[2] = {0x34, 0x12};
  fill_seen s;

  /* Narrowed: equal halves are the half repeated. */
  s = fill_through(f, b, any, 8, 32, zero8, 8);
  assert_int_equal(s.size, 1);
  assert_int_equal(s.pattern, 0);
  s = fill_through(f, b, any, 8, 32, byte8, 8);
  assert_int_equal(s.size, 1);
  assert_int_equal(s.pattern, 0xab);
  s = fill_through(f, b, any, 8, 32, half8, 8);
  assert_int_equal(s.size, 2);
  assert_int_equal(s.pattern, 0x2211);
  s = fill_through(f, b, any, 8, 32, word8, 8);
  assert_int_equal(s.size, 4);
  assert_int_equal(s.pattern, 0x04030201);
  s = fill_through(f, b, any, 8, 32, byte4, 4);
  assert_int_equal(s.size, 1);
  assert_int_equal(s.pattern, 0x5a);
  s = fill_through(f, b, any, 8, 32, full8, 8);
  assert_int_equal(s.size, 8);
  assert_int_equal(s.pattern, 0x0807060504030201);

  /* CUDA and HIP: no 8-byte fill, so a true 8-byte pattern is the
   * kernel's; a narrowed one is theirs at any offset. */
  s = fill_through(f, b, cuda, 8, 32, full8, 8);
  assert_int_equal(s.size, 0);
  s = fill_through(f, b, cuda, 8, 32, word8, 8);
  assert_int_equal(s.size, 4);
  s = fill_through(f, b, cuda, 1, 7, one, 1);
  assert_int_equal(s.size, 1);
  assert_int_equal(s.pattern, 0x7e);

  /* Vulkan: 4-byte words at 4-byte offsets and sizes, the pattern
   * repeated to a word; anything else is the kernel's. */
  s = fill_through(f, b, vulkan, 4, 12, one, 1);
  assert_int_equal(s.size, 4);
  assert_int_equal(s.pattern, 0x7e7e7e7e);
  s = fill_through(f, b, vulkan, 8, 16, two, 2);
  assert_int_equal(s.size, 4);
  assert_int_equal(s.pattern, 0x12341234);
  s = fill_through(f, b, vulkan, 8, 32, byte8, 8);
  assert_int_equal(s.size, 4);
  assert_int_equal(s.pattern, 0xabababab);
  s = fill_through(f, b, vulkan, 1, 7, one, 1);
  assert_int_equal(s.size, 0);
  s = fill_through(f, b, vulkan, 2, 4, two, 2);
  assert_int_equal(s.size, 0);
  s = fill_through(f, b, vulkan, 8, 32, full8, 8);
  assert_int_equal(s.size, 0);

  /* A backend without a fills table: always the kernel. */
  f->fb.ops.fills = NULL;
  s = fill_through(f, b, any, 8, 32, byte8, 8);
  assert_int_equal(s.size, 0);
  check_ok(kiln_buffer_destroy(b));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(fill_patterns_narrowed_for_the_backend,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
