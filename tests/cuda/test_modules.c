/* CUDA modules: PTX JIT-compiled by the driver, what happens to PTX that
 * does not compile, modules of several images (every one loads; those for
 * other GPUs are passed over; a broken one fails the module), kernels by
 * name and the message when one is missing, dynamic shared memory beyond
 * the default limit, and the built-in fatbin. Needs a CUDA device (exit 77,
 * skipped, without one). The images built by nvcc (tests/cuda/meson.build)
 * are there only when the build found nvcc. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../core/kiln_check.h"

/* out[i] = base + i for i < n, grid-stride. Written by hand so that the test
 * does not depend on nvcc; the driver JIT-compiles it for whatever GPU
 * runs it. */
static const char iota_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry kiln_test_iota(\n"
    "    .param .u64 out,\n"
    "    .param .u32 base,\n"
    "    .param .u32 n)\n"
    "{\n"
    "    .reg .pred %p;\n"
    "    .reg .b32 %r<8>;\n"
    "    .reg .b64 %rd<4>;\n"
    "\n"
    "    ld.param.u64 %rd1, [out];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    ld.param.u32 %r1, [base];\n"
    "    ld.param.u32 %r2, [n];\n"
    "    mov.u32 %r3, %ctaid.x;\n"
    "    mov.u32 %r4, %ntid.x;\n"
    "    mov.u32 %r5, %tid.x;\n"
    "    mad.lo.u32 %r6, %r3, %r4, %r5;\n"
    "    mov.u32 %r7, %nctaid.x;\n"
    "    mul.lo.u32 %r7, %r7, %r4;\n"
    "LOOP:\n"
    "    setp.ge.u32 %p, %r6, %r2;\n"
    "    @%p bra DONE;\n"
    "    mul.wide.u32 %rd2, %r6, 4;\n"
    "    add.u64 %rd3, %rd1, %rd2;\n"
    "    add.u32 %r3, %r1, %r6;\n"
    "    st.global.u32 [%rd3], %r3;\n"
    "    add.u32 %r6, %r6, %r7;\n"
    "    bra LOOP;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

/* The same kernel storing a register that was never declared: the JIT
 * rejects it and says so in its log. */
static const char bad_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry kiln_test_bad(\n"
    "    .param .u64 out)\n"
    "{\n"
    "    .reg .b64 %rd<2>;\n"
    "\n"
    "    ld.param.u64 %rd1, [out];\n"
    "    st.global.u32 [%rd1], %kiln_no_such_register;\n"
    "    ret;\n"
    "}\n";

/* Stores `value` at byte `offset` of the block's dynamic shared memory,
 * reads it back and writes it to out[0]. */
static const char shared_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".extern .shared .align 16 .b8 kiln_dynamic_shared[];\n"
    "\n"
    ".visible .entry kiln_test_shared(\n"
    "    .param .u64 out,\n"
    "    .param .u32 offset,\n"
    "    .param .u32 value)\n"
    "{\n"
    "    .reg .b32 %r<5>;\n"
    "    .reg .b64 %rd<2>;\n"
    "\n"
    "    ld.param.u64 %rd1, [out];\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    ld.param.u32 %r1, [offset];\n"
    "    ld.param.u32 %r2, [value];\n"
    "    mov.u32 %r3, kiln_dynamic_shared;\n"
    "    add.u32 %r3, %r3, %r1;\n"
    "    st.volatile.shared.u32 [%r3], %r2;\n"
    "    ld.volatile.shared.u32 %r4, [%r3];\n"
    "    st.global.u32 [%rd1], %r4;\n"
    "    ret;\n"
    "}\n";

/* A kernel `name` for `target` that stores `value` at out[0]; written
 * into buf. */
static const char *store_ptx(char *buf, size_t size, const char *target,
                             const char *name, unsigned value) {
  snprintf(buf, size,
           ".version 7.0\n"
           ".target %s\n"
           ".address_size 64\n"
           "\n"
           ".visible .entry %s(\n"
           "    .param .u64 out)\n"
           "{\n"
           "    .reg .b32 %%r<2>;\n"
           "    .reg .b64 %%rd<2>;\n"
           "\n"
           "    ld.param.u64 %%rd1, [out];\n"
           "    cvta.to.global.u64 %%rd1, %%rd1;\n"
           "    mov.u32 %%r1, %u;\n"
           "    st.global.u32 [%%rd1], %%r1;\n"
           "    ret;\n"
           "}\n",
           target, name, value);
  return buf;
}

#if defined(KILN_TEST_CUDA_IMAGES)
/* tests/cuda/meson.build embeds them in this order. */
extern const kiln_module_image cuda_test_images[];
enum {
  FIRST_FATBIN,      /* kiln_test_which (1), kiln_test_first */
  SECOND_FATBIN,     /* kiln_test_which (2), kiln_test_second, the mangled
                        _Z17kiln_test_mangledPj */
  SECOND_SM90_CUBIN, /* second.cu for sm_90 alone */
  FIRST_SM75_CUBIN,  /* first.cu for sm_75 alone */
};
#endif

#define GUARD 0xa5a5a5a5u

static kiln_context *ctx;

static int setup(void **state) {
  (void)state;
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_CUDA;
  return kiln_context_create(&o, &ctx) == KILN_OK ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  return kiln_context_destroy(ctx) == KILN_OK ? 0 : -1;
}

static kiln_module_image ptx_image(const char *text, size_t size) {
  kiln_module_image image = {KILN_IMAGE_PTX, text, size};
  return image;
}

/* The device's compute capability as 10 * major + minor. */
static unsigned device_arch(void) {
  kiln_device_properties p;
  check_ok(kiln_context_get_properties(ctx, &p));
  unsigned arch = 0;
  if (sscanf(p.architecture, "sm_%u", &arch) != 1)
    fail_msg("CUDA architecture \"%s\" is not sm_<N>", p.architecture);
  return arch;
}

/* Whether the driver lists a module's kernels (CUDA 12.4 and later), as
 * kiln then names them when one is missing. */
static bool driver_lists_kernels(void) {
  const char *library = getenv("KILN_CUDA_LIBRARY");
  void *handle = dlopen(library && library[0] ? library : "libcuda.so.1",
                        RTLD_NOW | RTLD_LOCAL);
  assert_non_null(handle);
  void *symbol = dlsym(handle, "cuDriverGetVersion");
  assert_non_null(symbol);
  int (*get_version)(int *);
  memcpy(&get_version, &symbol, sizeof get_version);
  int version = 0;
  assert_int_equal(get_version(&version), 0);
  dlclose(handle);
  return version >= 12040;
}

/* Launches `name` of `m`, one thread storing a number, and returns it. */
static uint32_t run_store(kiln_module *m, const char *name) {
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, name, &k));
  kiln_buffer *out;
  check_ok(kiln_buffer_create(ctx, 4, KILN_BUFFER_ZERO, &out));
  kiln_launch_config c = kiln_launch_config_1d(1, 1);
  kiln_arg args[] = {kiln_arg_buffer(out, 0)};
  check_ok(kiln_launch(NULL, k, &c, args, 1));
  uint32_t value = 0;
  check_ok(kiln_buffer_read(NULL, out, 0, &value, 4));
  check_ok(kiln_buffer_destroy(out));
  return value;
}

/* Runs kiln_test_iota of `m` over n elements with a small grid, so that the
 * kernel's loop runs, and checks the result and the guard words after it. */
static void run_iota(kiln_module *m, uint32_t n, uint32_t base) {
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "kiln_test_iota", &k));
  assert_string_equal(kiln_kernel_name(k), "kiln_test_iota");
  const size_t words = n + 16;
  uint32_t *host = malloc(words * 4);
  assert_non_null(host);
  kiln_buffer *out;
  check_ok(kiln_buffer_create(ctx, words * 4, 0, &out));
  const uint32_t guard = GUARD;
  check_ok(kiln_buffer_fill(NULL, out, 0, words * 4, &guard, 4));
  kiln_launch_config c = kiln_launch_config_1d(n, 64);
  c.grid.x = 3;
  kiln_arg args[] = {kiln_arg_buffer(out, 0), kiln_arg_u32(base),
                     kiln_arg_u32(n)};
  check_ok(kiln_launch(NULL, k, &c, args, 3));
  check_ok(kiln_buffer_read(NULL, out, 0, host, words * 4));
  for (uint32_t i = 0; i < n; i++)
    if (host[i] != base + i)
      fail_msg("out[%u] = %u, expected %u", i, host[i], base + i);
  for (size_t i = n; i < words; i++) assert_int_equal(host[i], GUARD);
  check_ok(kiln_buffer_destroy(out));
  free(host);
}

static void test_ptx_jit(void **state) {
  (void)state;
  kiln_module *m;
  /* Without the terminating NUL, which the driver needs: kiln adds it. */
  kiln_module_image image = ptx_image(iota_ptx, strlen(iota_ptx));
  check_ok(kiln_module_create(ctx, &image, 1, &m));
  run_iota(m, 1000, 7);
  check_ok(kiln_module_destroy(m));

  image = ptx_image(iota_ptx, sizeof iota_ptx);
  check_ok(kiln_module_create(ctx, &image, 1, &m));
  run_iota(m, 4096 + 3, 100000);
  check_ok(kiln_module_destroy(m));
}

static void test_bad_ptx(void **state) {
  (void)state;
  kiln_module *m = NULL;
  kiln_module_image image = ptx_image(bad_ptx, sizeof bad_ptx);
  check_fails(kiln_module_create(ctx, &image, 1, &m), KILN_ERROR_INVALID_IMAGE);
  assert_null(m);
  check_message_has("CUDA_ERROR_INVALID_PTX");
  check_message_has("JIT log");
  check_message_has("kiln_no_such_register");
}

/* Every image of a module loads, each with kernels of its own. */
static void test_several_images(void **state) {
  (void)state;
  char store[1024];
  store_ptx(store, sizeof store, "sm_75", "kiln_test_store", 77);
  kiln_module_image images[] = {
      ptx_image(iota_ptx, sizeof iota_ptx),
      ptx_image(store, strlen(store)),
  };
  kiln_module *m;
  check_ok(kiln_module_create(ctx, images, 2, &m));
  run_iota(m, 100, 1);
  assert_int_equal(run_store(m, "kiln_test_store"), 77);
  check_ok(kiln_module_destroy(m));
#if defined(KILN_TEST_CUDA_IMAGES)
  /* What nvcc made of two .cu files. */
  kiln_module_image both[] = {cuda_test_images[FIRST_FATBIN],
                              cuda_test_images[SECOND_FATBIN]};
  check_ok(kiln_module_create(ctx, both, 2, &m));
  assert_int_equal(run_store(m, "kiln_test_first"), 11);
  assert_int_equal(run_store(m, "kiln_test_second"), 22);
  assert_int_equal(run_store(m, "_Z17kiln_test_mangledPj"), 33);
  check_ok(kiln_module_destroy(m));
#endif
}

/* A name in several images comes from the first one loaded: cubin, then
 * fatbin, then PTX, and the caller's order within a format. */
static void test_preferred_image(void **state) {
  (void)state;
  char one[1024], two[1024];
  store_ptx(one, sizeof one, "sm_75", "kiln_test_which", 1);
  store_ptx(two, sizeof two, "sm_75", "kiln_test_which", 2);
  kiln_module_image images[] = {ptx_image(one, strlen(one)),
                                ptx_image(two, strlen(two))};
  kiln_module *m;
  check_ok(kiln_module_create(ctx, images, 2, &m));
  assert_int_equal(run_store(m, "kiln_test_which"), 1);
  check_ok(kiln_module_destroy(m));
  kiln_module_image swapped[] = {images[1], images[0]};
  check_ok(kiln_module_create(ctx, swapped, 2, &m));
  assert_int_equal(run_store(m, "kiln_test_which"), 2);
  check_ok(kiln_module_destroy(m));
#if defined(KILN_TEST_CUDA_IMAGES)
  /* The fatbin comes before the PTX given ahead of it. */
  kiln_module_image mixed[] = {images[1], cuda_test_images[FIRST_FATBIN]};
  check_ok(kiln_module_create(ctx, mixed, 2, &m));
  assert_int_equal(run_store(m, "kiln_test_which"), 1);
  assert_int_equal(run_store(m, "kiln_test_first"), 11);
  check_ok(kiln_module_destroy(m));
  /* And a cubin before the fatbin, where the cubin is for this GPU. */
  kiln_module_image machine[] = {cuda_test_images[FIRST_FATBIN],
                                 cuda_test_images[SECOND_SM90_CUBIN]};
  check_ok(kiln_module_create(ctx, machine, 2, &m));
  if (device_arch() == 90) {
    assert_int_equal(run_store(m, "kiln_test_which"), 2);
    assert_int_equal(run_store(m, "kiln_test_second"), 22);
  } else {
    printf("  the sm_90 cubin is for another GPU here: passed over\n");
    assert_int_equal(run_store(m, "kiln_test_which"), 1);
  }
  assert_int_equal(run_store(m, "kiln_test_first"), 11);
  check_ok(kiln_module_destroy(m));
#endif
}

/* An image for another GPU is passed over while the others load; the
 * message for a kernel that only it had says so. A module whose every
 * image is for another GPU fails, saying why for each. */
static void test_other_gpu(void **state) {
  (void)state;
  const unsigned arch = device_arch();
  /* PTX for the next major architecture: kiln reads its .target. */
  char target[16], newer[1024];
  snprintf(target, sizeof target, "sm_%u", (arch / 10 + 1) * 10);
  store_ptx(newer, sizeof newer, target, "kiln_test_newer", 5);
  kiln_module_image images[] = {ptx_image(newer, strlen(newer)),
                                ptx_image(iota_ptx, sizeof iota_ptx)};
  kiln_module *m;
  check_ok(kiln_module_create(ctx, images, 2, &m));
  run_iota(m, 100, 3);
  kiln_kernel *k = NULL;
  check_fails(kiln_module_get_kernel(m, "kiln_test_newer", &k),
              KILN_ERROR_NOT_FOUND);
  assert_null(k);
  check_message_has("no code for this device: PTX image 0 (.target sm_");
  check_ok(kiln_module_destroy(m));

  m = NULL;
  check_fails(kiln_module_create(ctx, images, 1, &m), KILN_ERROR_NO_IMAGE);
  assert_null(m);
  check_message_has("no image loads");
  check_message_has("PTX image 0: its .target sm_");
#if defined(KILN_TEST_CUDA_IMAGES)
  /* A cubin for another GPU: the driver says there is no code for this
   * one. sm_75 code runs on no later GPU, sm_90 code on no earlier one. */
  const kiln_module_image other =
      cuda_test_images[arch / 10 == 7 ? SECOND_SM90_CUBIN : FIRST_SM75_CUBIN];
  kiln_module_image with_cubin[] = {other,
                                    ptx_image(iota_ptx, sizeof iota_ptx)};
  check_ok(kiln_module_create(ctx, with_cubin, 2, &m));
  run_iota(m, 100, 4);
  check_fails(kiln_module_get_kernel(m, "kiln_test_which", &k),
              KILN_ERROR_NOT_FOUND);
  check_message_has("cubin image 0 (CUDA_ERROR_NO_BINARY_FOR_GPU)");
  check_ok(kiln_module_destroy(m));

  kiln_module_image none[] = {other, images[0]};
  m = NULL;
  check_fails(kiln_module_create(ctx, none, 2, &m), KILN_ERROR_NO_IMAGE);
  assert_null(m);
  check_message_has("no image loads");
  check_message_has("cubin image 0: CUDA_ERROR_NO_BINARY_FOR_GPU");
  check_message_has("PTX image 1: its .target sm_");
#endif
}

/* A broken image among good ones fails the module, naming it: one that
 * is not what it claims to be, or PTX that the JIT rejects. */
static void test_broken_among_good(void **state) {
  (void)state;
  static const unsigned char not_a_cubin[64] = {0};
  kiln_module_image images[] = {
      {KILN_IMAGE_PTX, iota_ptx, sizeof iota_ptx},
      {KILN_IMAGE_CUBIN, not_a_cubin, sizeof not_a_cubin},
  };
  kiln_module *m = NULL;
  check_fails(kiln_module_create(ctx, images, 2, &m),
              KILN_ERROR_INVALID_IMAGE);
  assert_null(m);
  check_message_has("cubin image 1 of 2 is malformed");

  kiln_module_image jit[] = {
      {KILN_IMAGE_PTX, iota_ptx, sizeof iota_ptx},
      {KILN_IMAGE_PTX, bad_ptx, sizeof bad_ptx},
  };
  check_fails(kiln_module_create(ctx, jit, 2, &m), KILN_ERROR_INVALID_IMAGE);
  assert_null(m);
  check_message_has("PTX image 1 of 2 does not load");
  check_message_has("CUDA_ERROR_INVALID_PTX");
  check_message_has("kiln_no_such_register");
#if defined(KILN_TEST_CUDA_IMAGES)
  kiln_module_image cut[] = {cuda_test_images[FIRST_FATBIN],
                             cuda_test_images[SECOND_FATBIN]};
  cut[1].size /= 2;
  check_fails(kiln_module_create(ctx, cut, 2, &m), KILN_ERROR_INVALID_IMAGE);
  assert_null(m);
  check_message_has("fatbin image 1 of 2 is malformed");
#endif
}

static void test_kernel_by_name(void **state) {
  (void)state;
  kiln_module *m;
  kiln_module_image image = ptx_image(iota_ptx, sizeof iota_ptx);
  check_ok(kiln_module_create(ctx, &image, 1, &m));
  kiln_kernel *k = NULL;
  check_fails(kiln_module_get_kernel(m, "kiln_test_missing", &k),
              KILN_ERROR_NOT_FOUND);
  assert_null(k);
  check_message_has("no kernel named 'kiln_test_missing'");
  if (driver_lists_kernels())
    check_message_has("; its kernels are: kiln_test_iota");
  else
    check_message_has("only when declared extern \"C\"");
  kiln_kernel *a, *b;
  check_ok(kiln_module_get_kernel(m, "kiln_test_iota", &a));
  check_ok(kiln_module_get_kernel(m, "kiln_test_iota", &b));
  assert_ptr_equal(a, b);
  check_ok(kiln_module_destroy(m));
}

/* A missing kernel's message lists the module's kernels, from every
 * image, and blames C++ name mangling only where a listed name is the
 * mangled form of the one asked for. */
static void test_not_found_message(void **state) {
  (void)state;
  char hint[1024];
  store_ptx(hint, sizeof hint, "sm_75", "_Z14kiln_test_hintPj", 6);
  kiln_module_image images[] = {ptx_image(iota_ptx, sizeof iota_ptx),
                                ptx_image(shared_ptx, sizeof shared_ptx),
                                ptx_image(hint, strlen(hint))};
  kiln_module *m;
  check_ok(kiln_module_create(ctx, images, 3, &m));
  kiln_kernel *k = NULL;
  const bool listed = driver_lists_kernels();
  check_fails(kiln_module_get_kernel(m, "kiln_test_missing", &k),
              KILN_ERROR_NOT_FOUND);
  if (listed) {
    check_message_has("the module has no kernel named 'kiln_test_missing'; "
                      "its kernels are: ");
    check_message_has("kiln_test_iota");
    check_message_has("kiln_test_shared");
    check_message_has("_Z14kiln_test_hintPj");
    if (strstr(kiln_last_error(), "extern"))
      fail_msg("no listed name is a mangled kiln_test_missing: %s",
               kiln_last_error());
  } else {
    printf("  the driver is older than CUDA 12.4: kernels not listed\n");
    check_message_has("(a C++ kernel keeps this name only when declared "
                      "extern \"C\")");
  }
  check_fails(kiln_module_get_kernel(m, "kiln_test_hint", &k),
              KILN_ERROR_NOT_FOUND);
  check_message_has(listed ? "_Z14kiln_test_hintPj (declared without extern "
                             "\"C\"? C++ mangles the name)"
                           : "only when declared extern \"C\"");
  assert_null(k);
  /* The mangled name itself is a name like any other. */
  assert_int_equal(run_store(m, "_Z14kiln_test_hintPj"), 6);
  check_ok(kiln_module_destroy(m));
#if defined(KILN_TEST_CUDA_IMAGES)
  /* nvcc's own mangling of a kernel declared without extern "C". */
  check_ok(kiln_module_create(ctx, &cuda_test_images[SECOND_FATBIN], 1, &m));
  check_fails(kiln_module_get_kernel(m, "kiln_test_mangled", &k),
              KILN_ERROR_NOT_FOUND);
  check_message_has(listed ? "_Z17kiln_test_mangledPj (declared without "
                             "extern \"C\"?"
                           : "only when declared extern \"C\"");
  check_ok(kiln_module_destroy(m));
#endif
}

/* Dynamic shared memory past the default 48 KiB: kiln raises the kernel's
 * limit before the launch. */
static void test_dynamic_shared_optin(void **state) {
  (void)state;
  kiln_device_properties p;
  check_ok(kiln_context_get_properties(ctx, &p));
  if (p.max_shared_memory_per_block_optin <= p.max_shared_memory_per_block) {
    kiln_skip("%s cannot opt in to more shared memory", p.name);
  }
  kiln_module *m;
  kiln_module_image image = ptx_image(shared_ptx, sizeof shared_ptx);
  check_ok(kiln_module_create(ctx, &image, 1, &m));
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "kiln_test_shared", &k));
  kiln_buffer *out;
  check_ok(kiln_buffer_create(ctx, 4, KILN_BUFFER_ZERO, &out));

  const size_t sizes[] = {p.max_shared_memory_per_block,
                          p.max_shared_memory_per_block + 4,
                          p.max_shared_memory_per_block_optin};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    kiln_launch_config c = kiln_launch_config_1d(1, 32);
    c.shared_memory_bytes = sizes[i];
    uint32_t value = 0x5eed0000u + (uint32_t)i;
    kiln_arg args[] = {kiln_arg_buffer(out, 0),
                       kiln_arg_u32((uint32_t)sizes[i] - 4),
                       kiln_arg_u32(value)};
    check_ok(kiln_launch(NULL, k, &c, args, 3));
    uint32_t got = 0;
    check_ok(kiln_buffer_read(NULL, out, 0, &got, 4));
    assert_int_equal(got, value);
  }
  kiln_launch_config c = kiln_launch_config_1d(1, 32);
  c.shared_memory_bytes = p.max_shared_memory_per_block_optin + 4;
  kiln_arg args[] = {kiln_arg_buffer(out, 0), kiln_arg_u32(0),
                     kiln_arg_u32(0)};
  check_fails(kiln_launch(NULL, k, &c, args, 3), KILN_ERROR_OUT_OF_RANGE);
  check_ok(kiln_buffer_destroy(out));
  check_ok(kiln_module_destroy(m));
}

/* The fatbin built in has code this device runs, and every kernel of
 * docs/kernels.md. */
static void test_builtin_module(void **state) {
  (void)state;
  kiln_module *m;
  kiln_status st = kiln_context_builtin_module(ctx, &m);
#if !defined(KILN_TEST_CUDA_BUILTINS)
  /* Built without nvcc: the module must be refused, with the reason. */
  assert_int_equal(st, KILN_ERROR_UNSUPPORTED);
  check_message_has("no built-in kernels");
  return;
#endif
  check_ok(st);
  static const char *const names[] = {
      "kiln_fill",     "kiln_axpy_f32",  "kiln_reduce_sum_f32",
      "kiln_dot_f32",  "kiln_copy_f32",  "kiln_scale_f32",
      "kiln_add_f32",  "kiln_triad_f32", "kiln_sgemm_f32"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    kiln_kernel *k;
    check_ok(kiln_module_get_kernel(m, names[i], &k));
  }
}

int main(void) {
  const char *reason = NULL;
  if (kiln_backend_available(KILN_BACKEND_CUDA, &reason) != KILN_OK) {
    printf("skipped: the CUDA backend is unavailable: %s\n", reason);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ptx_jit),
      cmocka_unit_test(test_bad_ptx),
      cmocka_unit_test(test_several_images),
      cmocka_unit_test(test_preferred_image),
      cmocka_unit_test(test_other_gpu),
      cmocka_unit_test(test_broken_among_good),
      cmocka_unit_test(test_kernel_by_name),
      cmocka_unit_test(test_not_found_message),
      cmocka_unit_test(test_dynamic_shared_optin),
      cmocka_unit_test(test_builtin_module),
  };
  return cmocka_run_group_tests_name("cuda: modules", tests, setup, teardown);
}
