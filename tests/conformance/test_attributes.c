/* What a kernel needs of the device (kiln_kernel_get_attributes) and the
 * block size the backend suggests (kiln_kernel_suggest_block_size): on
 * CUDA and HIP the driver's figures, within what the device allows, a
 * kernel's static shared memory and __launch_bounds__ seen in them, and a
 * suggested block that launches and computes right; on Vulkan unknown
 * where Vulkan cannot tell, the block a GLSL kernel fixes, and a
 * suggestion only for such a kernel. */
#include <stdio.h>

#include "conformance.h"

/* A kernel with 1 KiB of static shared memory and at most 128 threads a
 * block (CUDA, HIP), or a fixed block of 64 x 2 (GLSL); each thread
 * writes the thread index of its block's next thread, through the shared
 * array, so the launch's result depends on the block it ran with. */
#define CUDA_TILES                                                          \
  "extern \"C\" __global__ void __launch_bounds__(128)\n"                   \
  "conf_tiles(unsigned *out) {\n"                                           \
  "  __shared__ unsigned tile[256];\n"                                      \
  "  tile[threadIdx.x] = threadIdx.x;\n"                                    \
  "  __syncthreads();\n"                                                    \
  "  out[blockIdx.x * blockDim.x + threadIdx.x] =\n"                        \
  "      tile[(threadIdx.x + 1) % blockDim.x];\n"                           \
  "}\n"
static const char glsl_tiles[] =
    "#version 460\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "layout(local_size_x = 64, local_size_y = 2) in;\n"
    "layout(buffer_reference, std430, buffer_reference_align = 4) buffer "
    "U32 { uint v[]; };\n"
    "layout(push_constant, std430) uniform Args { U32 out_words; } args;\n"
    "shared uint tile[128];\n"
    "void main() {\n"
    "  uint t = gl_LocalInvocationIndex;\n"
    "  tile[t] = t;\n"
    "  barrier();\n"
    "  args.out_words.v[gl_WorkGroupID.x * 128u + t] = tile[(t + 1u) % "
    "128u];\n"
    "}\n";

static bool is_vulkan(void) { return conf.backend == KILN_BACKEND_VULKAN; }

/* The tiles kernel from source, or a skip saying why there is no compiler
 * here. */
static kiln_module *tiles_module(void) {
  const char *compiler = NULL;
  if (kiln_compiler_available(conf.backend, &compiler) != KILN_OK)
    kiln_skip("no %s compiler to build the test's kernel: %s",
              kiln_backend_name(conf.backend), kiln_last_error());
  kiln_source src = {KILN_SOURCE_CUDA, CUDA_TILES, "tiles.cu", NULL};
  if (conf.backend == KILN_BACKEND_HIP) {
    src.language = KILN_SOURCE_HIP;
    src.name = "tiles.hip";
  } else if (is_vulkan()) {
    src = (kiln_source){KILN_SOURCE_GLSL, glsl_tiles, "conf_tiles.comp",
                        NULL};
  }
  kiln_module *m = NULL;
  check_ok(kiln_module_create_from_source(conf.ctx, &src, 1, NULL, &m));
  return m;
}

static void attributes_of_a_kernel(void **state) {
  (void)state;
  kiln_kernel_attributes a;
  memset(&a, 0x5a, sizeof a);
  check_ok(kiln_kernel_get_attributes(conf_kernel("conf_add_u32"), &a));
  print_message("conf_add_u32 on %s: registers %zu, static shared %zu, "
                "local %zu, max block %zu, fixed block %u x %u x %u\n",
                kiln_backend_name(conf.backend), a.registers,
                a.static_shared_bytes, a.local_bytes, a.max_block_threads,
                a.fixed_block[0], a.fixed_block[1], a.fixed_block[2]);
  if (a.fixed_block[0] || a.fixed_block[1] || a.fixed_block[2])
    fail_msg("conf_add_u32 chooses its block at the launch, yet its fixed "
             "block reads %u x %u x %u",
             a.fixed_block[0], a.fixed_block[1], a.fixed_block[2]);
  if (is_vulkan()) {
    if (a.registers != KILN_ATTRIBUTE_UNKNOWN ||
        a.static_shared_bytes != KILN_ATTRIBUTE_UNKNOWN ||
        a.local_bytes != KILN_ATTRIBUTE_UNKNOWN)
      fail_msg("Vulkan cannot tell registers, shared or local memory, yet "
               "they read %zu, %zu, %zu",
               a.registers, a.static_shared_bytes, a.local_bytes);
    assert_int_equal(a.max_block_threads, conf.props.max_threads_per_block);
    return;
  }
  /* A loop over a buffer: a few registers, no shared memory, no spills. */
  if (a.registers == 0 || a.registers > 255)
    fail_msg("conf_add_u32 uses %zu registers a thread", a.registers);
  assert_int_equal(a.static_shared_bytes, 0);
  assert_int_equal(a.local_bytes, 0);
  if (a.max_block_threads == 0 ||
      a.max_block_threads > conf.props.max_threads_per_block)
    fail_msg("conf_add_u32's block may have %zu threads, the device's %u",
             a.max_block_threads, conf.props.max_threads_per_block);
}

static void attributes_from_source(void **state) {
  (void)state;
  kiln_module *m = tiles_module();
  kiln_kernel *k = NULL;
  check_ok(kiln_module_get_kernel(m, "conf_tiles", &k));
  kiln_kernel_attributes a;
  check_ok(kiln_kernel_get_attributes(k, &a));
  if (is_vulkan()) {
    if (a.fixed_block[0] != 64 || a.fixed_block[1] != 2 ||
        a.fixed_block[2] != 1 || a.max_block_threads != 128)
      fail_msg("a GLSL kernel of local_size 64 x 2 reads a fixed block of "
               "%u x %u x %u, at most %zu threads",
               a.fixed_block[0], a.fixed_block[1], a.fixed_block[2],
               a.max_block_threads);
  } else {
    if (a.static_shared_bytes < 1024)
      fail_msg("a kernel with 1 KiB of static shared memory reads %zu bytes",
               a.static_shared_bytes);
    if (a.max_block_threads == 0 || a.max_block_threads > 128)
      fail_msg("a kernel bounded to 128 threads a block reads %zu",
               a.max_block_threads);
  }
  check_ok(kiln_module_destroy(m));
}

/* Launches conf_add_u32 with the block kiln suggests and a grid of at
 * least the suggested one, and checks every word. */
static void suggested_blocks_run(void **state) {
  (void)state;
  kiln_kernel *k = conf_kernel("conf_add_u32");
  uint32_t block = 0, grid = 0;
  if (is_vulkan()) {
    check_fails(kiln_kernel_suggest_block_size(k, 0, &block, &grid),
                KILN_ERROR_UNSUPPORTED);
    check_message_has("occupancy");
    kiln_module *m = tiles_module();
    kiln_kernel *tiles = NULL;
    check_ok(kiln_module_get_kernel(m, "conf_tiles", &tiles));
    check_ok(kiln_kernel_suggest_block_size(tiles, 0, &block, &grid));
    assert_int_equal(block, 128);
    assert_true(grid >= 1);
    check_ok(kiln_module_destroy(m));
    return;
  }
  check_ok(kiln_kernel_suggest_block_size(k, 0, &block, &grid));
  print_message("conf_add_u32 on %s: block %u, grid %u\n",
                kiln_backend_name(conf.backend), block, grid);
  if (block == 0 || block > conf.props.max_threads_per_block ||
      block % conf.props.subgroup_size != 0)
    fail_msg("the suggested block of %u threads is not a whole number of "
             "%u-thread warps within the device's %u",
             block, conf.props.subgroup_size, conf.props.max_threads_per_block);
  if (grid < conf.props.compute_units)
    fail_msg("%u blocks cannot fill %u compute units", grid,
             conf.props.compute_units);
  const uint32_t n = block * grid + 7;
  kiln_buffer *b;
  check_ok(kiln_buffer_create(conf.ctx, (size_t)n * 4, KILN_BUFFER_ZERO, &b));
  const kiln_launch_config c = {{grid, 1, 1}, {block, 1, 1}, 0};
  const kiln_arg args[3] = {kiln_arg_buffer(b, 0), kiln_arg_u32(n),
                            kiln_arg_u32(3)};
  check_ok(kiln_launch(NULL, k, &c, args, 3));
  uint32_t *got = conf_alloc((size_t)n * 4);
  check_ok(kiln_buffer_read(NULL, b, 0, got, (size_t)n * 4));
  for (uint32_t i = 0; i < n; i++)
    if (got[i] != 3)
      fail_msg("word %u is %u after a launch of the suggested block", i,
               got[i]);
  free(got);
  check_ok(kiln_buffer_destroy(b));
  /* With dynamic shared memory past the default: the limit is raised as
   * a launch would raise it, and a block still fits. */
  const size_t big = conf.props.max_shared_memory_per_block_optin;
  if (big > conf.props.max_shared_memory_per_block) {
    kiln_kernel *rotate = conf_kernel("conf_shared_rotate");
    check_ok(kiln_kernel_suggest_block_size(rotate, big, &block, NULL));
    assert_true(block >= 1);
  }
}

static void attribute_bad_calls(void **state) {
  (void)state;
  kiln_kernel *k = conf_kernel("conf_add_u32");
  kiln_kernel_attributes a;
  uint32_t block = 0;
  check_fails(kiln_kernel_get_attributes(NULL, &a), KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_kernel_get_attributes(k, NULL), KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_kernel_get_attributes_sized(k, 8, &a),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("out_attributes");
  check_fails(kiln_kernel_suggest_block_size(NULL, 0, &block, NULL),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_kernel_suggest_block_size(k, 0, NULL, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_kernel_suggest_block_size(
                  k, conf.props.max_shared_memory_per_block_optin + 1, &block,
                  NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("dynamic shared memory");
  /* A newer kiln.h's larger struct: the bytes past this kiln's come back
   * zero. */
  struct {
    kiln_kernel_attributes known;
    unsigned char later[16];
  } newer;
  memset(&newer, 0x77, sizeof newer);
  check_ok(kiln_kernel_get_attributes_sized(k, sizeof newer, &newer.known));
  for (size_t i = 0; i < sizeof newer.later; i++)
    if (newer.later[i])
      fail_msg("byte %zu past the struct was left at %u", i,
               newer.later[i]);
}

int conf_run_attribute_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(attributes_of_a_kernel),
      CONF_TEST(attributes_from_source),
      CONF_TEST(suggested_blocks_run),
      CONF_TEST(attribute_bad_calls),
  };
  return cmocka_run_group_tests_name("attributes", tests, NULL, NULL);
}
