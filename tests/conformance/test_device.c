/* Devices and contexts: properties, creation from the environment and from
 * explicit options, several contexts at once. */
#include <stdio.h>
#include <stdlib.h>

#include "conformance.h"

static bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

/* Field by field: a struct copy need not carry its padding. */
static bool same_device(const kiln_device_properties *a,
                        const kiln_device_properties *b) {
  return a->backend == b->backend && strcmp(a->name, b->name) == 0 &&
         a->vendor_id == b->vendor_id && a->device_id == b->device_id &&
         a->type == b->type && a->memory_bytes == b->memory_bytes &&
         a->max_threads_per_block == b->max_threads_per_block &&
         memcmp(a->uuid, b->uuid, sizeof a->uuid) == 0 &&
         strcmp(a->pci_bus_id, b->pci_bus_id) == 0;
}

static void library_matches_header(void **state) {
  (void)state;
  assert_int_equal(kiln_version(), KILN_VERSION);
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", KILN_VERSION_MAJOR,
           KILN_VERSION_MINOR, KILN_VERSION_PATCH);
  assert_string_equal(kiln_version_string(), want);
}

static void properties_are_sane(void **state) {
  (void)state;
  const kiln_device_properties *p = &conf.props;
  assert_int_equal(p->backend, conf.backend);
  assert_true(p->name[0] != '\0');
  assert_true(p->vendor[0] != '\0');
  assert_true(p->architecture[0] != '\0');
  assert_true(p->api_version[0] != '\0');
  assert_true(p->driver_version[0] != '\0');
  assert_true(p->type <= KILN_DEVICE_TYPE_CPU);
  assert_true(p->memory_bytes > 0);
  /* The minimums every backend's API guarantees (Vulkan's are lowest). */
  assert_true(p->max_threads_per_block >= 128);
  assert_true(p->max_block_size[0] >= 128 && p->max_block_size[1] >= 128 &&
              p->max_block_size[2] >= 64);
  for (int d = 0; d < 3; d++) assert_true(p->max_grid_size[d] >= 65535);
  assert_true(p->max_shared_memory_per_block >= 16384);
  assert_true(p->max_shared_memory_per_block_optin >=
              p->max_shared_memory_per_block);
  assert_true(power_of_two(p->subgroup_size));
  assert_true(p->max_kernel_argument_bytes >= 128);
  printf("  %s: %s, %s %s, %u compute units, %.1f GiB, %u threads per block, "
         "%zu/%zu bytes shared, subgroup %u, %zu argument bytes, API %s\n",
         p->name, kiln_device_type_name(p->type), p->vendor, p->architecture,
         p->compute_units, (double)p->memory_bytes / (1 << 30),
         p->max_threads_per_block, p->max_shared_memory_per_block,
         p->max_shared_memory_per_block_optin, p->subgroup_size,
         p->max_kernel_argument_bytes, p->api_version);
}

static bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Every device's, as "dddd:bb:dd.f" in lower-case hex (a domain of 4 to 6
 * digits), or "" where the API gives none (Vulkan only: CUDA and HIP
 * drivers always tell it). */
static void pci_bus_ids(void **state) {
  (void)state;
  static const char shape[] = ":xx:xx.x";
  size_t count = 0;
  check_ok(kiln_device_count(conf.backend, &count));
  for (size_t i = 0; i < count; i++) {
    kiln_device_properties p;
    check_ok(kiln_device_get_properties(conf.backend, i, &p));
    const char *id = p.pci_bus_id;
    if (!id[0] && conf.backend == KILN_BACKEND_VULKAN) continue;
    size_t domain = 0;
    while (is_hex(id[domain])) domain++;
    const char *rest = id + domain;
    bool right = domain >= 4 && domain <= 6 &&
                 strlen(rest) == sizeof shape - 1;
    for (size_t c = 0; right && shape[c]; c++)
      right = shape[c] == 'x' ? is_hex(rest[c]) : rest[c] == shape[c];
    if (!right || rest[7] > '7')
      fail_msg("%s device %zu (%s): pci_bus_id \"%s\" is not "
               "domain:bus:device.function (\"0000:3b:00.0\")",
               kiln_backend_name(conf.backend), i, p.name, id);
    printf("  device %zu: %s at PCI %s\n", i, p.name, id);
  }
}

static void device_list_has_the_context_device(void **state) {
  (void)state;
  assert_true(kiln_backend_compiled(conf.backend));
  const char *reason = NULL;
  check_ok(kiln_backend_available(conf.backend, &reason));
  assert_string_equal(reason, "");
  size_t n = 0;
  check_ok(kiln_device_count(conf.backend, &n));
  assert_true(n >= 1);
  bool found = false;
  for (size_t i = 0; i < n; i++) {
    kiln_device_properties p;
    check_ok(kiln_device_get_properties(conf.backend, i, &p));
    assert_int_equal(p.backend, conf.backend);
    if (same_device(&p, &conf.props)) found = true;
  }
  assert_true(found);
  kiln_device_properties p;
  check_fails(kiln_device_get_properties(conf.backend, n, &p),
              KILN_ERROR_NOT_FOUND);
}

/* The run's environment names the backend; explicit options must agree. */
static void contexts_from_environment_and_options(void **state) {
  (void)state;
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(NULL, &ctx));
  assert_int_equal(kiln_context_backend(ctx), conf.backend);
  check_ok(kiln_context_destroy(ctx));

  kiln_context_options o = kiln_context_options_default();
  check_ok(kiln_context_create(&o, &ctx));
  assert_int_equal(kiln_context_backend(ctx), conf.backend);
  check_ok(kiln_context_destroy(ctx));

  size_t n;
  check_ok(kiln_device_count(conf.backend, &n));
  for (size_t i = 0; i < n; i++) {
    o.backend = conf.backend;
    o.device_index = i;
    check_ok(kiln_context_create(&o, &ctx));
    kiln_device_properties a, b;
    check_ok(kiln_context_get_properties(ctx, &a));
    check_ok(kiln_device_get_properties(conf.backend, i, &b));
    assert_true(same_device(&a, &b));
    check_ok(kiln_context_synchronize(ctx));
    check_ok(kiln_context_destroy(ctx));
  }
  o.device_index = n;
  ctx = NULL;
  check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_NOT_FOUND);
  assert_null(ctx);
}

/* Two contexts on one device keep their own memory and streams. */
static void two_contexts_at_once(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  kiln_context *other;
  kiln_context_options o = {conf.backend, KILN_DEVICE_FROM_ENV,
                            KILN_SYNC_DEFAULT};
  check_ok(kiln_context_create(&o, &other));
  enum { N = 100003 };
  unsigned char *a = conf_alloc(N), *b = conf_alloc(N), *got = conf_alloc(N);
  conf_random_bytes(&r, a, N);
  conf_random_bytes(&r, b, N);
  kiln_buffer *ba, *bb;
  kiln_stream *sb;
  check_ok(kiln_buffer_create(conf.ctx, N, 0, &ba));
  check_ok(kiln_buffer_create(other, N, 0, &bb));
  check_ok(kiln_stream_create(other, &sb));
  check_ok(kiln_buffer_write(NULL, ba, 0, a, N));
  check_ok(kiln_buffer_write(sb, bb, 0, b, N));
  /* The write is in sb's order only (kiln.h); the read is on the second
   * context's default stream. */
  check_ok(kiln_stream_synchronize(sb));
  check_ok(kiln_buffer_read(NULL, bb, 0, got, N));
  conf_check_bytes(got, b, N, "the second context's buffer");
  check_ok(kiln_buffer_read(NULL, ba, 0, got, N));
  conf_check_bytes(got, a, N, "the first context's buffer");
  check_ok(kiln_stream_destroy(sb));
  check_ok(kiln_buffer_destroy(bb));
  check_ok(kiln_context_destroy(other));
  /* The first context is untouched by the second's end. */
  check_ok(kiln_buffer_read(NULL, ba, 0, got, N));
  conf_check_bytes(got, a, N, "the first context's buffer afterwards");
  check_ok(kiln_buffer_destroy(ba));
  free(a);
  free(b);
  free(got);
}

/* Destroying a context with objects alive reports them and frees them. */
static void context_destroy_reports_live_objects(void **state) {
  (void)state;
  kiln_context *ctx;
  check_ok(kiln_context_create(NULL, &ctx));
  kiln_buffer *b;
  kiln_host_buffer *h;
  kiln_stream *s;
  kiln_event *e;
  check_ok(kiln_buffer_create(ctx, 4096, KILN_BUFFER_ZERO, &b));
  check_ok(kiln_host_buffer_create(ctx, 4096, 0, &h));
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_event_create(ctx, &e));
  check_ok(kiln_buffer_read_async(s, b, 0, h, 0, 4096));
  check_ok(kiln_event_record(e, s));
  check_fails(kiln_context_destroy(ctx), KILN_ERROR_OBJECTS_ALIVE);
  check_message_has("4 objects");
}

/* The reported features agree with themselves: the subgroup range holds
 * the subgroup size, matrix shapes come with the feature, and each shape
 * is a product the hardware could have. */
static void features_are_consistent(void **state) {
  (void)state;
  const kiln_device_properties *p = &conf.props;
  printf("  features 0x%x, subgroup sizes %u to %u, %u matrix shapes\n",
         p->features, p->min_subgroup_size, p->max_subgroup_size,
         p->matrix_shape_count);
  assert_true(p->min_subgroup_size >= 1);
  assert_true(p->min_subgroup_size <= p->subgroup_size);
  assert_true(p->subgroup_size <= p->max_subgroup_size);
  if (!(p->features & KILN_FEATURE_SUBGROUP_SIZE_CONTROL))
    assert_int_equal(p->min_subgroup_size, p->max_subgroup_size);
  assert_true(p->matrix_shape_count <= KILN_MAX_MATRIX_SHAPES);
  assert_int_equal(p->matrix_shape_count > 0,
                   (p->features & KILN_FEATURE_COOPERATIVE_MATRIX) != 0);
  for (uint32_t i = 0; i < p->matrix_shape_count; i++) {
    const kiln_matrix_shape *s = &p->matrix_shapes[i];
    assert_true(s->m >= 1 && s->n >= 1 && s->k >= 1);
    assert_true(s->m <= 256 && s->n <= 256 && s->k <= 256);
  }
  /* What every backend kiln runs on has. */
  assert_true(p->features & KILN_FEATURE_INT8);
}

/* A float atomic add from a user kernel, compiled from source, where the
 * device has KILN_FEATURE_FLOAT32_ATOMIC_ADD: 4096 threads add small whole
 * numbers into 8 sums, exact in float whatever the order. */
static const char atomic_cuda[] =
    "extern \"C\" __global__ void conf_atomic_sum(float *sums, const float "
    "*x, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) atomicAdd(&sums[i % 8], x[i]);\n"
    "}\n";
static const char atomic_glsl[] =
    "#version 460\n"
    "#extension GL_EXT_shader_atomic_float : require\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) "
    "in;\n"
    "layout(buffer_reference, std430, buffer_reference_align = 4) buffer "
    "Floats { float v[]; };\n"
    "layout(push_constant, std430) uniform Args { Floats sums; Floats x; "
    "uint n; } args;\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i < args.n) atomicAdd(args.sums.v[i % 8], args.x.v[i]);\n"
    "}\n";

static void float_atomics_from_user_kernels(void **state) {
  (void)state;
  if (!(conf.props.features & KILN_FEATURE_FLOAT32_ATOMIC_ADD)) {
    print_message("%s has no float atomic add (KILN_FEATURE_FLOAT32_ATOMIC_ADD "
                  "unset)\n",
                  conf.props.name);
    skip();
  }
  const char *description = NULL;
  if (kiln_compiler_available(conf.backend, &description) != KILN_OK) {
    print_message("no run-time compiler for %s here: %s\n",
                  kiln_backend_name(conf.backend), kiln_last_error());
    skip();
  }
  const kiln_source sources[2] = {
      {KILN_SOURCE_CUDA, atomic_cuda, "conf_atomic_sum.cu", NULL},
      {KILN_SOURCE_GLSL, atomic_glsl, "conf_atomic_sum.comp", NULL},
  };
  kiln_module *m = NULL;
  check_ok(kiln_module_create_from_source(conf.ctx, sources, 2, NULL, &m));
  kiln_kernel *k = NULL;
  check_ok(kiln_module_get_kernel(m, "conf_atomic_sum", &k));
  enum { N = 4096 };
  float *x = conf_alloc(sizeof(float) * N);
  float want[8] = {0}, got[8];
  for (unsigned i = 0; i < N; i++) {
    x[i] = (float)(i % 13) - 6.0f;
    want[i % 8] += x[i];
  }
  kiln_buffer *bx = NULL, *bs = NULL;
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * N, 0, &bx));
  check_ok(kiln_buffer_create(conf.ctx, sizeof got, KILN_BUFFER_ZERO, &bs));
  check_ok(kiln_buffer_write(NULL, bx, 0, x, sizeof(float) * N));
  const kiln_launch_config c = kiln_launch_config_1d(N, 128);
  const kiln_arg args[3] = {kiln_arg_buffer(bs, 0), kiln_arg_buffer(bx, 0),
                            kiln_arg_u32(N)};
  check_ok(kiln_launch(NULL, k, &c, args, 3));
  check_ok(kiln_buffer_read(NULL, bs, 0, got, sizeof got));
  conf_check_bytes(got, want, sizeof got,
                   "the sums of a kernel's float atomic adds");
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_buffer_destroy(bs));
  check_ok(kiln_module_destroy(m));
  free(x);
}

/* bfloat16 in a user kernel where the device has KILN_FEATURE_BFLOAT16
 * (and the flag as CUDA's architecture says): y = a * x + y on
 * __nv_bfloat16, with `a` passed as kiln_arg_bf16, in small whole numbers
 * that bfloat16 holds exactly. CUDA only: HIP's bfloat16 header and type
 * differ (hip_bf16.h), and Debian's glslang has no GL_EXT_bfloat16. */
static const char bf16_cuda[] =
    "#include <cuda_bf16.h>\n"
    "extern \"C\" __global__ void conf_bf16_axpy(__nv_bfloat16 *y, const "
    "__nv_bfloat16 *x, __nv_bfloat16 a, unsigned n) {\n"
    "  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = __hadd(__hmul(a, x[i]), y[i]);\n"
    "}\n";

static void bfloat16_in_user_kernels(void **state) {
  (void)state;
  const kiln_device_properties *p = &conf.props;
  unsigned cc = 0;
  if (conf.backend == KILN_BACKEND_CUDA &&
      sscanf(p->architecture, "sm_%u", &cc) == 1)
    assert_int_equal((p->features & KILN_FEATURE_BFLOAT16) != 0, cc >= 80);
  if (!(p->features & KILN_FEATURE_BFLOAT16))
    kiln_skip("KILN_FEATURE_BFLOAT16 is unset on %s (%s: %s)", p->name,
              kiln_backend_name(conf.backend),
              conf.backend == KILN_BACKEND_VULKAN
                  ? "VK_KHR_shader_bfloat16 is not offered, or is left off "
                    "under a validation layer older than it"
                  : "the architecture has no bfloat16 instructions");
  if (conf.backend != KILN_BACKEND_CUDA)
    kiln_skip("the bfloat16 kernel is CUDA's; %s kernels spell bfloat16 "
              "otherwise",
              kiln_backend_name(conf.backend));
  const char *description = NULL;
  if (kiln_compiler_available(conf.backend, &description) != KILN_OK)
    kiln_skip("no run-time compiler for CUDA here: %s", kiln_last_error());
  const kiln_source src = {KILN_SOURCE_CUDA, bf16_cuda, "conf_bf16.cu", NULL};
  kiln_module *m = NULL;
  check_ok(kiln_module_create_from_source(conf.ctx, &src, 1, NULL, &m));
  kiln_kernel *k = NULL;
  check_ok(kiln_module_get_kernel(m, "conf_bf16_axpy", &k));
  enum { N = 1000 };
  /* A small whole number's bfloat16 is its float's upper half. */
  uint16_t x[N], y[N], want[N], got[N];
  for (unsigned i = 0; i < N; i++) {
    const float xf = (float)(i % 8), yf = 1.0f, wf = 2.0f * xf + yf;
    uint32_t bits;
    memcpy(&bits, &xf, 4);
    x[i] = (uint16_t)(bits >> 16);
    memcpy(&bits, &yf, 4);
    y[i] = (uint16_t)(bits >> 16);
    memcpy(&bits, &wf, 4);
    want[i] = (uint16_t)(bits >> 16);
  }
  kiln_buffer *bx = NULL, *by = NULL;
  check_ok(kiln_buffer_create(conf.ctx, sizeof x, 0, &bx));
  check_ok(kiln_buffer_create(conf.ctx, sizeof y, 0, &by));
  check_ok(kiln_buffer_write(NULL, bx, 0, x, sizeof x));
  check_ok(kiln_buffer_write(NULL, by, 0, y, sizeof y));
  const kiln_launch_config c = kiln_launch_config_1d(N, 128);
  const kiln_arg args[4] = {kiln_arg_buffer(by, 0), kiln_arg_buffer(bx, 0),
                            kiln_arg_bf16(0x4000), kiln_arg_u32(N)};
  check_ok(kiln_launch(NULL, k, &c, args, 4));
  check_ok(kiln_buffer_read(NULL, by, 0, got, sizeof got));
  conf_check_bytes(got, want, sizeof got, "y = 2 x + y in bfloat16");
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_buffer_destroy(by));
  check_ok(kiln_module_destroy(m));
}

/* One 16 x 16 x 16 product on the matrix units, from a user kernel compiled
 * from source, where the device lists that shape with f16 inputs and f32
 * sums: CUDA through PTX's wmma instructions (no header needed), Vulkan
 * through GL_NV_cooperative_matrix (the GLSL compiler of Debian 12, glslang
 * 12, predates GL_KHR_cooperative_matrix; devices that have only the KHR
 * extension skip with words). Small whole numbers: the products are exact. */
static const char matrix_cuda[] =
    "extern \"C\" __global__ void conf_matrix_mul(float *d, const unsigned "
    "short *a, const unsigned short *b) {\n"
    "  unsigned fa[8], fb[8];\n"
    "  float fc[8];\n"
    "  asm volatile(\"wmma.load.a.sync.aligned.row.m16n16k16.global.f16 "
    "{%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;\"\n"
    "      : \"=r\"(fa[0]), \"=r\"(fa[1]), \"=r\"(fa[2]), \"=r\"(fa[3]),\n"
    "        \"=r\"(fa[4]), \"=r\"(fa[5]), \"=r\"(fa[6]), \"=r\"(fa[7])\n"
    "      : \"l\"(a), \"r\"(16u));\n"
    "  asm volatile(\"wmma.load.b.sync.aligned.row.m16n16k16.global.f16 "
    "{%0,%1,%2,%3,%4,%5,%6,%7}, [%8], %9;\"\n"
    "      : \"=r\"(fb[0]), \"=r\"(fb[1]), \"=r\"(fb[2]), \"=r\"(fb[3]),\n"
    "        \"=r\"(fb[4]), \"=r\"(fb[5]), \"=r\"(fb[6]), \"=r\"(fb[7])\n"
    "      : \"l\"(b), \"r\"(16u));\n"
    "  asm volatile(\"wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 "
    "{%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11,%12,%13,%14,%15}, "
    "{%16,%17,%18,%19,%20,%21,%22,%23}, {%24,%24,%24,%24,%24,%24,%24,%24};\"\n"
    "      : \"=f\"(fc[0]), \"=f\"(fc[1]), \"=f\"(fc[2]), \"=f\"(fc[3]),\n"
    "        \"=f\"(fc[4]), \"=f\"(fc[5]), \"=f\"(fc[6]), \"=f\"(fc[7])\n"
    "      : \"r\"(fa[0]), \"r\"(fa[1]), \"r\"(fa[2]), \"r\"(fa[3]),\n"
    "        \"r\"(fa[4]), \"r\"(fa[5]), \"r\"(fa[6]), \"r\"(fa[7]),\n"
    "        \"r\"(fb[0]), \"r\"(fb[1]), \"r\"(fb[2]), \"r\"(fb[3]),\n"
    "        \"r\"(fb[4]), \"r\"(fb[5]), \"r\"(fb[6]), \"r\"(fb[7]), \"f\"(0.0f));\n"
    "  asm volatile(\"wmma.store.d.sync.aligned.row.m16n16k16.global.f32 "
    "[%0], {%1,%2,%3,%4,%5,%6,%7,%8}, %9;\"\n"
    "      :: \"l\"(d), \"f\"(fc[0]), \"f\"(fc[1]), \"f\"(fc[2]), \"f\"(fc[3]),\n"
    "         \"f\"(fc[4]), \"f\"(fc[5]), \"f\"(fc[6]), \"f\"(fc[7]), "
    "\"r\"(16u)\n"
    "      : \"memory\");\n"
    "}\n";
static const char matrix_glsl[] =
    "#version 460\n"
    "#extension GL_KHR_memory_scope_semantics : require\n"
    "#extension GL_NV_cooperative_matrix : require\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) "
    "in;\n"
    "layout(buffer_reference, std430) buffer F32 { float v[]; };\n"
    "layout(buffer_reference, std430) buffer F16 { float16_t v[]; };\n"
    "layout(push_constant, std430) uniform Args { F32 d; F16 a; F16 b; } "
    "args;\n"
    "void main() {\n"
    "  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a, b;\n"
    "  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> c =\n"
    "      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);\n"
    "  coopMatLoadNV(a, args.a.v, 0, 16, false);\n"
    "  coopMatLoadNV(b, args.b.v, 0, 16, false);\n"
    "  c = coopMatMulAddNV(a, b, c);\n"
    "  coopMatStoreNV(c, args.d.v, 0, 16, false);\n"
    "}\n";

/* The binary16 of a whole number of magnitude below 2048. */
static uint16_t f16_of_int(int v) {
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? 0x8000u : 0u;
  const unsigned a = (unsigned)(v < 0 ? -v : v);
  unsigned e = 0;
  while ((a >> (e + 1)) != 0) e++;
  return (uint16_t)(sign | ((e + 15u) << 10) | ((a << (10u - e)) & 0x3ffu));
}

static void cooperative_matrices_from_user_kernels(void **state) {
  (void)state;
  const kiln_device_properties *p = &conf.props;
  const char *description = NULL;
  const bool compiler =
      kiln_compiler_available(conf.backend, &description) == KILN_OK;
  char why[512];
  snprintf(why, sizeof why, "%s", compiler ? "" : kiln_last_error());
  if (conf.backend == KILN_BACKEND_VULKAN &&
      !(p->features & KILN_FEATURE_COOPERATIVE_MATRIX) && compiler) {
    /* Where the device has none, the kernel is refused with words when
     * the module is made, not handed to the driver (lavapipe failed it
     * only at pipeline creation). */
    const kiln_source glsl = {KILN_SOURCE_GLSL, matrix_glsl,
                              "conf_matrix_mul.comp", NULL};
    kiln_module *m = NULL;
    check_fails(kiln_module_create_from_source(conf.ctx, &glsl, 1, NULL, &m),
                KILN_ERROR_UNSUPPORTED);
    check_message_has("CooperativeMatrixNV");
    return;
  }
  bool shape = false;
  for (uint32_t i = 0; i < p->matrix_shape_count && !shape; i++) {
    const kiln_matrix_shape *m = &p->matrix_shapes[i];
    shape = m->m == 16 && m->n == 16 && m->k == 16 &&
            m->a == KILN_MATRIX_F16 && m->b == KILN_MATRIX_F16 &&
            m->c == KILN_MATRIX_F32 && m->result == KILN_MATRIX_F32;
  }
  if (!shape) {
    print_message("%s lists no 16x16x16 f16 x f16 + f32 matrix shape "
                  "(%u shapes)\n",
                  p->name, p->matrix_shape_count);
    skip();
  }
  if (conf.backend == KILN_BACKEND_HIP) {
    print_message("no HIP text for this case: AMD's matrix instructions "
                  "differ by architecture, and the HIP-on-CUDA shim is no "
                  "AMD GPU\n");
    skip();
  }
  if (conf.backend == KILN_BACKEND_VULKAN && p->vendor_id != 0x10DE) {
    print_message("the case's GLSL uses GL_NV_cooperative_matrix, which "
                  "only NVIDIA's drivers offer\n");
    skip();
  }
  if (!compiler) {
    print_message("no run-time compiler for %s here: %s\n",
                  kiln_backend_name(conf.backend), why);
    skip();
  }
  const kiln_source sources[2] = {
      {KILN_SOURCE_CUDA, matrix_cuda, "conf_matrix_mul.cu", NULL},
      {KILN_SOURCE_GLSL, matrix_glsl, "conf_matrix_mul.comp", NULL},
  };
  kiln_module *m = NULL;
  check_ok(kiln_module_create_from_source(conf.ctx, sources, 2, NULL, &m));
  kiln_kernel *k = NULL;
  check_ok(kiln_module_get_kernel(m, "conf_matrix_mul", &k));
  enum { N = 16 };
  uint16_t a[N * N], b[N * N];
  int ai[N * N], bi[N * N];
  float want[N * N], got[N * N];
  for (int i = 0; i < N * N; i++) {
    ai[i] = (i * 7 + 3) % 9 - 4;
    bi[i] = (i * 5 + 1) % 7 - 3;
    a[i] = f16_of_int(ai[i]);
    b[i] = f16_of_int(bi[i]);
  }
  for (int r = 0; r < N; r++)
    for (int c = 0; c < N; c++) {
      int sum = 0;
      for (int x = 0; x < N; x++) sum += ai[r * N + x] * bi[x * N + c];
      want[r * N + c] = (float)sum;
    }
  kiln_buffer *bd = NULL, *ba = NULL, *bb = NULL;
  check_ok(kiln_buffer_create(conf.ctx, sizeof got, 0, &bd));
  check_ok(kiln_buffer_create(conf.ctx, sizeof a, 0, &ba));
  check_ok(kiln_buffer_create(conf.ctx, sizeof b, 0, &bb));
  check_ok(kiln_buffer_write(NULL, ba, 0, a, sizeof a));
  check_ok(kiln_buffer_write(NULL, bb, 0, b, sizeof b));
  /* One subgroup (a warp) holds the matrices. */
  const kiln_launch_config c =
      kiln_launch_config_1d(p->subgroup_size, p->subgroup_size);
  const kiln_arg args[3] = {kiln_arg_buffer(bd, 0), kiln_arg_buffer(ba, 0),
                            kiln_arg_buffer(bb, 0)};
  check_ok(kiln_launch(NULL, k, &c, args, 3));
  check_ok(kiln_buffer_read(NULL, bd, 0, got, sizeof got));
  conf_check_bytes(got, want, sizeof got,
                   "a 16 x 16 x 16 product on the matrix units");
  check_ok(kiln_buffer_destroy(bd));
  check_ok(kiln_buffer_destroy(ba));
  check_ok(kiln_buffer_destroy(bb));
  check_ok(kiln_module_destroy(m));
}

int conf_run_device_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(library_matches_header),
      CONF_TEST(properties_are_sane),
      CONF_TEST(features_are_consistent),
      CONF_TEST(bfloat16_in_user_kernels),
      CONF_TEST(float_atomics_from_user_kernels),
      CONF_TEST(cooperative_matrices_from_user_kernels),
      CONF_TEST(pci_bus_ids),
      CONF_TEST(device_list_has_the_context_device),
      CONF_TEST(contexts_from_environment_and_options),
      CONF_TEST(two_contexts_at_once),
      CONF_TEST(context_destroy_reports_live_objects),
  };
  return cmocka_run_group_tests_name("device", tests, NULL, NULL);
}
