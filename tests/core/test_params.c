/* kiln_launch against a kernel's parameters, on fake kernels that declare
 * them (fake_backend.h): the count, each argument's offset and size, and
 * the class of its kind; the message names the argument; nothing that does
 * not fit reaches the backend, and everything that fits does. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

/* The kernels of every test. */
static const char kernels[] =
    "saxpy(p,p,f,u) "
    "none() "
    "one(u) "
    "wide(u8,i8,s8,f8,b8) "
    "narrow(u,i,s,f,b) "
    "odd(b1,u) "
    "vec(u,b16,u) "
    "spaced(u,u@8) "
    "sized(p,u):12 "
    "half(p,f2,u,f2,b2) "
    "short(u2) "
    "unknown";

typedef struct params_fixture {
  fake_fixture *f;
  kiln_module *m;
  kiln_buffer *b;
} params_fixture;

static int setup(void **state) {
  void *inner;
  if (fake_fixture_setup(&inner) != 0) return -1;
  params_fixture *p = calloc(1, sizeof *p);
  if (!p) return -1;
  p->f = inner;
  kiln_module_image img = fake_image(kernels);
  if (kiln_module_create(p->f->ctx, &img, 1, &p->m) != KILN_OK ||
      kiln_buffer_create(p->f->ctx, 64, 0, &p->b) != KILN_OK) {
    print_error("setup: %s\n", kiln_last_error());
    return -1;
  }
  *state = p;
  return 0;
}

static int teardown(void **state) {
  params_fixture *p = *state;
  kiln_buffer_destroy(p->b);
  kiln_module_destroy(p->m);
  void *inner = p->f;
  free(p);
  return fake_fixture_teardown(&inner);
}

static kiln_kernel *kernel(params_fixture *p, const char *name) {
  kiln_kernel *k = NULL;
  check_ok(kiln_module_get_kernel(p->m, name, &k));
  return k;
}

static unsigned launches(const params_fixture *p) {
  return p->f->fb.calls[FAKE_OP_LAUNCH];
}

static const kiln_launch_config one = {{1, 1, 1}, {1, 1, 1}, 0};

/* The launch must fail with INVALID_ARGUMENT, a message holding each of
 * the NULL-ended `needles`, and no call of the backend. */
static void refused(params_fixture *p, const char *name, const kiln_arg *args,
                    size_t count, ...) {
  unsigned before = launches(p);
  check_fails(kiln_launch(NULL, kernel(p, name), &one, args, count),
              KILN_ERROR_INVALID_ARGUMENT);
  va_list ap;
  va_start(ap, count);
  for (const char *n = va_arg(ap, const char *); n;
       n = va_arg(ap, const char *))
    check_message_has(n);
  va_end(ap);
  assert_int_equal(launches(p), before);
}

/* The launch must reach the backend with the arguments packed as given. */
static void accepted(params_fixture *p, const char *name, const kiln_arg *args,
                     size_t count) {
  unsigned before = launches(p);
  check_ok(kiln_launch(NULL, kernel(p, name), &one, args, count));
  assert_int_equal(launches(p), before + 1);
  const fake_launch *l = fake_launch_back(&p->f->fb, 0);
  assert_non_null(l);
  assert_string_equal(l->kernel, name);
  assert_int_equal(l->args.count, count);
}

static void correct_launches_run(void **state) {
  params_fixture *p = *state;
  const kiln_arg saxpy[4] = {kiln_arg_buffer(p->b, 0),
                             kiln_arg_buffer(p->b, 16), kiln_arg_f32(2.0f),
                             kiln_arg_u32(4)};
  accepted(p, "saxpy", saxpy, 4);
  const fake_launch *l = fake_launch_back(&p->f->fb, 0);
  assert_int_equal(l->args.size, 24);
  assert_int_equal(l->args.offsets[3], 20);
  accepted(p, "none", NULL, 0);
  const kiln_arg wide[5] = {kiln_arg_u64(1), kiln_arg_i64(-2),
                            kiln_arg_i64(-3), kiln_arg_f64(4.0),
                            kiln_arg_f64(5.0)};
  accepted(p, "wide", wide, 5);
  const kiln_arg narrow[5] = {kiln_arg_u32(1), kiln_arg_i32(-2),
                              kiln_arg_i32(-3), kiln_arg_f32(4.0f),
                              kiln_arg_f32(5.0f)};
  accepted(p, "narrow", narrow, 5);
  const kiln_arg sized[2] = {kiln_arg_buffer(p->b, 0), kiln_arg_u32(1)};
  accepted(p, "sized", sized, 2);
  /* A kernel whose parameters the backend cannot tell takes any list. */
  accepted(p, "unknown", wide, 5);
  accepted(p, "unknown", NULL, 0);
  /* The core's own kernels declare theirs in the fake too. */
  check_ok(kiln_axpy_f32(NULL, 4, 2.0f, p->b, 0, p->b, 16));
}

static void count_must_match(void **state) {
  params_fixture *p = *state;
  const kiln_arg args[5] = {kiln_arg_buffer(p->b, 0),
                            kiln_arg_buffer(p->b, 16), kiln_arg_f32(2.0f),
                            kiln_arg_u32(4), kiln_arg_u32(5)};
  refused(p, "saxpy", args, 3, "kernel 'saxpy' takes 4 arguments, the "
          "launch gives 3", NULL);
  refused(p, "saxpy", args, 5, "takes 4 arguments, the launch gives 5",
          NULL);
  refused(p, "saxpy", NULL, 0, "the launch gives 0", NULL);
  refused(p, "none", args + 3, 1, "kernel 'none' takes 0 arguments", NULL);
  refused(p, "one", args + 3, 2, "kernel 'one' takes 1 argument,", NULL);
  /* The count is checked first, before a bad argument is looked at. */
  const kiln_arg bad[2] = {kiln_arg_buffer(NULL, 0), kiln_arg_u32(1)};
  refused(p, "saxpy", bad, 2, "takes 4 arguments", NULL);
}

/* The case: a float and a uint swapped pack to the same size. */
static void swapped_float_and_uint(void **state) {
  params_fixture *p = *state;
  const kiln_arg args[4] = {kiln_arg_buffer(p->b, 0),
                            kiln_arg_buffer(p->b, 16), kiln_arg_u32(4),
                            kiln_arg_f32(2.0f)};
  refused(p, "saxpy", args, 4,
          "kiln_launch: argument 2 (u32, 4 bytes) does not fit parameter 2 "
          "of kernel 'saxpy', a 32-bit float; pass kiln_arg_f32",
          NULL);
}

static void pointers_take_buffers_only(void **state) {
  params_fixture *p = *state;
  kiln_arg args[4] = {kiln_arg_f32(1.0f), kiln_arg_buffer(p->b, 16),
                      kiln_arg_f32(2.0f), kiln_arg_u32(4)};
  refused(p, "saxpy", args, 4,
          "argument 0 (f32, 4 bytes) does not fit parameter 0 of kernel "
          "'saxpy', a 64-bit pointer; pass a buffer (kiln_arg_buffer)",
          NULL);
  /* The same size is not enough: an address is not any 64-bit scalar. */
  args[0] = kiln_arg_u64(0x1000);
  refused(p, "saxpy", args, 4, "argument 0 (u64, 8 bytes)", "pointer", NULL);
  args[0] = kiln_arg_i64(0x1000);
  refused(p, "saxpy", args, 4, "argument 0 (i64, 8 bytes)", NULL);
  args[0] = kiln_arg_buffer(p->b, 0);
  args[1] = kiln_arg_f64(1.0);
  refused(p, "saxpy", args, 4, "argument 1 (f64, 8 bytes)",
          "parameter 1 of kernel 'saxpy', a 64-bit pointer", NULL);
}

/* A buffer is an address: it fits a pointer and an 8-byte integer of no
 * stated sign or unsigned (PTX's .u64, GLSL's uint64_t), and nothing else. */
static void buffers_take_addresses_only(void **state) {
  params_fixture *p = *state;
  kiln_arg w[5] = {kiln_arg_buffer(p->b, 0), kiln_arg_buffer(p->b, 8),
                   kiln_arg_i64(0), kiln_arg_f64(0.0),
                   kiln_arg_buffer(p->b, 4)};
  accepted(p, "wide", w, 5);
  w[2] = kiln_arg_buffer(p->b, 0);
  refused(p, "wide", w, 5,
          "argument 2 (buffer, 8 bytes) does not fit parameter 2 of kernel "
          "'wide', a 64-bit signed integer; pass kiln_arg_i64 or kiln_arg_u64",
          NULL);
  w[2] = kiln_arg_i64(0);
  w[3] = kiln_arg_buffer(p->b, 0);
  refused(p, "wide", w, 5, "argument 3 (buffer, 8 bytes)", "a 64-bit float",
          "pass kiln_arg_f64", NULL);
  const kiln_arg n[5] = {kiln_arg_buffer(p->b, 0), kiln_arg_i32(0),
                         kiln_arg_i32(0), kiln_arg_f32(0.0f),
                         kiln_arg_f32(0.0f)};
  refused(p, "narrow", n, 5, "argument 0 (buffer, 8 bytes)",
          "a 32-bit unsigned integer", NULL);
}

static void integers_and_floats_do_not_mix(void **state) {
  params_fixture *p = *state;
  kiln_arg n[5] = {kiln_arg_f32(1.0f), kiln_arg_i32(0), kiln_arg_i32(0),
                   kiln_arg_f32(0.0f), kiln_arg_f32(0.0f)};
  refused(p, "narrow", n, 5, "argument 0 (f32, 4 bytes)",
          "a 32-bit unsigned integer; pass kiln_arg_i32 or kiln_arg_u32",
          NULL);
  n[0] = kiln_arg_u32(0);
  n[1] = kiln_arg_f32(0.0f);
  refused(p, "narrow", n, 5, "argument 1 (f32, 4 bytes)", "a 32-bit integer",
          NULL);
  n[1] = kiln_arg_u32(0);
  n[2] = kiln_arg_f32(0.0f);
  refused(p, "narrow", n, 5, "argument 2 (f32", "a 32-bit signed integer",
          NULL);
  n[2] = kiln_arg_i32(0);
  n[3] = kiln_arg_i32(1);
  refused(p, "narrow", n, 5, "argument 3 (i32, 4 bytes)", "a 32-bit float",
          NULL);
  n[3] = kiln_arg_u32(1);
  refused(p, "narrow", n, 5, "argument 3 (u32", NULL);
  kiln_arg w[5] = {kiln_arg_f64(1.0), kiln_arg_i64(0), kiln_arg_i64(0),
                   kiln_arg_f64(0.0), kiln_arg_f64(0.0)};
  refused(p, "wide", w, 5, "argument 0 (f64, 8 bytes)",
          "a 64-bit unsigned integer", NULL);
  w[0] = kiln_arg_u64(0);
  w[3] = kiln_arg_u64(3);
  refused(p, "wide", w, 5, "argument 3 (u64, 8 bytes)", "a 64-bit float",
          NULL);
}

/* i32 and u32 are the same bits: either passes for either sign. */
static void signedness_is_not_checked(void **state) {
  params_fixture *p = *state;
  const kiln_arg n[5] = {kiln_arg_i32(1), kiln_arg_u32(2), kiln_arg_u32(3),
                         kiln_arg_f32(0.0f), kiln_arg_u32(4)};
  accepted(p, "narrow", n, 5);
  const kiln_arg w[5] = {kiln_arg_i64(1), kiln_arg_u64(2), kiln_arg_u64(3),
                         kiln_arg_f64(0.0), kiln_arg_i64(4)};
  accepted(p, "wide", w, 5);
}

static void sizes_must_match(void **state) {
  params_fixture *p = *state;
  kiln_arg n[5] = {kiln_arg_u64(1), kiln_arg_i32(0), kiln_arg_i32(0),
                   kiln_arg_f32(0.0f), kiln_arg_f32(0.0f)};
  refused(p, "narrow", n, 5, "argument 0 (u64, 8 bytes)",
          "a 32-bit unsigned integer", NULL);
  n[0] = kiln_arg_u32(1);
  n[3] = kiln_arg_f64(0.0);
  refused(p, "narrow", n, 5, "argument 3 (f64, 8 bytes)", "a 32-bit float",
          NULL);
  n[3] = kiln_arg_f32(0.0f);
  n[4] = kiln_arg_buffer(p->b, 0);
  refused(p, "narrow", n, 5, "argument 4 (buffer, 8 bytes)",
          "a 4-byte value; pass a 4-byte argument", NULL);
  kiln_arg w[5] = {kiln_arg_u32(1), kiln_arg_i64(0), kiln_arg_i64(0),
                   kiln_arg_f64(0.0), kiln_arg_f64(0.0)};
  refused(p, "wide", w, 5, "argument 0 (u32, 4 bytes)",
          "a 64-bit unsigned integer", NULL);
  w[0] = kiln_arg_u64(1);
  w[4] = kiln_arg_f32(0.0f);
  refused(p, "wide", w, 5, "argument 4 (f32, 4 bytes)", "an 8-byte value",
          NULL);
}

/* Parameters of sizes kiln cannot pass, or at offsets it does not pack
 * to, cannot be launched at all. */
static void layouts_kiln_cannot_pack(void **state) {
  params_fixture *p = *state;
  const kiln_arg two[2] = {kiln_arg_i32(1), kiln_arg_u32(2)};
  refused(p, "odd", two, 2, "argument 0 (i32, 4 bytes) does not fit "
          "parameter 0 of kernel 'odd', a 1-byte value; kiln passes 2-, 4- "
          "and 8-byte arguments only", NULL);
  const kiln_arg three[3] = {kiln_arg_u32(1), kiln_arg_u64(2),
                             kiln_arg_u32(3)};
  refused(p, "vec", three, 3, "argument 1 (u64, 8 bytes)", "a 16-byte value",
          NULL);
  refused(p, "spaced", two, 2,
          "argument 1 (u32) packs at byte 4 of the list, but parameter 1 of "
          "kernel 'spaced' (a 32-bit unsigned integer) is at byte 8",
          NULL);
}

/* 16-bit floats: packed as 2 bytes at 2-byte alignment, their bits as
 * given, and accepted where the kernel takes a 16-bit float or 2 bytes of
 * unknown type; nothing else fits such a parameter, and they fit nothing
 * else. */
static void half_precision_scalars(void **state) {
  params_fixture *p = *state;
  kiln_arg a[5] = {kiln_arg_buffer(p->b, 0), kiln_arg_f16(0x3c00),
                   kiln_arg_u32(3), kiln_arg_bf16(0x3f80),
                   kiln_arg_f16(0xc000)};
  accepted(p, "half", a, 5);
  const fake_launch *l = fake_launch_back(&p->f->fb, 0);
  assert_int_equal(l->args.size, 20);
  assert_int_equal(l->args.offsets[1], 8);
  assert_int_equal(l->args.offsets[2], 12);
  assert_int_equal(l->args.offsets[3], 16);
  assert_int_equal(l->args.offsets[4], 18);
  const unsigned char want[] = {0x00, 0x3c, 0x80, 0x3f, 0x00, 0xc0};
  assert_memory_equal(l->args.data + 8, want, 2);
  assert_memory_equal(l->args.data + 16, want + 2, 4);
  a[1] = kiln_arg_f32(1.0f);
  refused(p, "half", a, 5, "argument 1 (f32, 4 bytes)", "a 16-bit float",
          "pass kiln_arg_f16 or kiln_arg_bf16", NULL);
  a[1] = kiln_arg_f16(0x3c00);
  a[2] = kiln_arg_f16(0x3c00);
  refused(p, "half", a, 5, "argument 2 (f16, 2 bytes)",
          "a 32-bit unsigned integer", NULL);
  const kiln_arg s[1] = {kiln_arg_bf16(1)};
  refused(p, "short", s, 1, "argument 0 (bf16, 2 bytes)",
          "a 16-bit unsigned integer",
          "kiln passes 2-byte arguments only as 16-bit floats", NULL);
}

/* Writes 0xa5 over the stack below its caller, where the launch next
 * packs its arguments. */
static __attribute__((noinline)) void dirty_stack(void) {
  volatile unsigned char junk[16384];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = 0xa5;
}

/* The packed list has no byte the arguments left as they were: padding
 * before an aligned argument and the bytes up to the next 8 after the
 * last are 0, as a backend that compares whole lists (Vulkan's kept
 * launches) or pushes whole words needs. */
static void padding_is_zero(void **state) {
  params_fixture *p = *state;
  const kiln_arg a[5] = {kiln_arg_buffer(p->b, 0), kiln_arg_f16(0x3c00),
                         kiln_arg_u32(3), kiln_arg_bf16(0x3f80),
                         kiln_arg_f16(0xc000)};
  dirty_stack();
  accepted(p, "half", a, 5);
  const fake_launch *l = fake_launch_back(&p->f->fb, 0);
  const unsigned char zero[4] = {0};
  assert_memory_equal(l->args.data + 10, zero, 2);
  assert_memory_equal(l->args.data + 20, zero, 4);
}

/* Several mismatches: the first is the one named. */
static void first_mismatch_is_named(void **state) {
  params_fixture *p = *state;
  const kiln_arg args[4] = {kiln_arg_buffer(p->b, 0), kiln_arg_u32(1),
                            kiln_arg_u32(2), kiln_arg_f32(3.0f)};
  refused(p, "saxpy", args, 4, "argument 1 (u32, 4 bytes)", NULL);
}

/* The fake's own format: a malformed list makes the image invalid. */
static void malformed_lists_are_invalid_images(void **state) {
  params_fixture *p = *state;
  static const char *const bad[] = {"k(x)", "k(p", "k(p,)", "k(,p)",
                                    "k(p@)", "k(u0)", "k(p)x", "k(p):"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    kiln_module_image img = fake_image(bad[i]);
    kiln_module *m = NULL;
    check_fails(kiln_module_create(p->f->ctx, &img, 1, &m),
                KILN_ERROR_INVALID_IMAGE);
    assert_null(m);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(correct_launches_run, setup, teardown),
      cmocka_unit_test_setup_teardown(count_must_match, setup, teardown),
      cmocka_unit_test_setup_teardown(swapped_float_and_uint, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(pointers_take_buffers_only, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(buffers_take_addresses_only, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(integers_and_floats_do_not_mix, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(signedness_is_not_checked, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(sizes_must_match, setup, teardown),
      cmocka_unit_test_setup_teardown(layouts_kiln_cannot_pack, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(first_mismatch_is_named, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(padding_is_zero, setup, teardown),
      cmocka_unit_test_setup_teardown(half_precision_scalars, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(malformed_lists_are_invalid_images,
                                      setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
