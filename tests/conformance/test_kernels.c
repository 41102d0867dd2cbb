/* Modules, kernels and launches: 3-D grids, every scalar type, dynamic
 * shared memory, the built-in module, launches repeated alone. */
#include <stdio.h>

#include "conformance.h"

static const char *const kernel_names[] = {"conf_index3d", "conf_scalars",
                                           "conf_shared_rotate", "conf_add_u32",
                                           "conf_busy"};

static void module_from_every_backends_images(void **state) {
  (void)state;
  size_t count;
  const kiln_module_image *images = conf_images(&count);
  printf("  %zu test-kernel images embedded:", count);
  for (size_t i = 0; i < count; i++)
    printf(" %s", kiln_image_format_name(images[i].format));
  printf("\n");
  kiln_module *m = conf_module();
  for (size_t i = 0; i < sizeof kernel_names / sizeof kernel_names[0]; i++) {
    kiln_kernel *k = NULL, *again = NULL;
    check_ok(kiln_module_get_kernel(m, kernel_names[i], &k));
    check_ok(kiln_module_get_kernel(m, kernel_names[i], &again));
    assert_ptr_equal(k, again);
    assert_string_equal(kiln_kernel_name(k), kernel_names[i]);
  }
  /* A second module from the same images is independent of the first. */
  kiln_module *second;
  check_ok(kiln_module_create(conf.ctx, images, count, &second));
  kiln_kernel *k1 = conf_kernel("conf_add_u32"), *k2;
  check_ok(kiln_module_get_kernel(second, "conf_add_u32", &k2));
  assert_ptr_not_equal(k1, k2);
  check_ok(kiln_module_destroy(second));
}

static void builtin_module_kernels(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  kiln_module *m, *again;
  check_ok(kiln_context_builtin_module(conf.ctx, &m));
  check_ok(kiln_context_builtin_module(conf.ctx, &again));
  assert_ptr_equal(m, again);
  static const char *const names[] = {
      "kiln_fill",    "kiln_axpy_f32",  "kiln_reduce_sum_f32",
      "kiln_dot_f32", "kiln_copy_f32",  "kiln_scale_f32",
      "kiln_add_f32", "kiln_triad_f32", "kiln_sgemm_f32"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    kiln_kernel *k;
    check_ok(kiln_module_get_kernel(m, names[i], &k));
    assert_string_equal(kiln_kernel_name(k), names[i]);
  }
  /* Launched by hand, with the parameters docs/kernels.md gives. */
  enum { N = 1000 };
  float x[N], y[N];
  for (int i = 0; i < N; i++) {
    x[i] = conf_uniform(&r, -1.0f, 1.0f);
    y[i] = conf_uniform(&r, -1.0f, 1.0f);
  }
  kiln_buffer *bx;
  conf_guarded gy;
  check_ok(kiln_buffer_create(conf.ctx, sizeof x, 0, &bx));
  check_ok(kiln_buffer_write(NULL, bx, 0, x, sizeof x));
  conf_guarded_create(&gy, sizeof y, &r);
  check_ok(kiln_buffer_write(NULL, gy.buf, CONF_GUARD, y, sizeof y));
  kiln_kernel *axpy;
  check_ok(kiln_module_get_kernel(m, "kiln_axpy_f32", &axpy));
  const kiln_arg args[4] = {conf_guarded_arg(&gy, 0), kiln_arg_buffer(bx, 0),
                            kiln_arg_f32(0.5f), kiln_arg_u32(N)};
  kiln_launch_config c = kiln_launch_config_1d(N, 64);
  check_ok(kiln_launch(NULL, axpy, &c, args, 4));
  /* 0.5 * x is exact, so every backend gets the same sums. */
  for (int i = 0; i < N; i++) y[i] = 0.5f * x[i] + y[i];
  conf_guarded_check(&gy, NULL, y, "kiln_axpy_f32 launched by hand");

  /* The BabelStream kernels, with powers of two for scalars so that every
   * result is exact, fused multiply-add or not. */
  conf_guarded gd;
  conf_guarded_create(&gd, sizeof x, &r);
  const kiln_arg dst = conf_guarded_arg(&gd, 0), src = kiln_arg_buffer(bx, 0);
  const kiln_arg other = conf_guarded_arg(&gy, 0), n = kiln_arg_u32(N);
  const struct {
    const char *name;
    kiln_arg args[5];
    size_t count;
  } stream_kernels[] = {
      {"kiln_copy_f32", {dst, src, n}, 3},
      {"kiln_scale_f32", {dst, src, kiln_arg_f32(0.25f), n}, 4},
      {"kiln_add_f32", {dst, src, other, n}, 4},
      {"kiln_triad_f32", {dst, src, other, kiln_arg_f32(-2.0f), n}, 5},
  };
  for (size_t t = 0; t < 4; t++) {
    float want[N];
    for (int i = 0; i < N; i++)
      want[i] = t == 0   ? x[i]
                : t == 1 ? 0.25f * x[i]
                : t == 2 ? x[i] + y[i]
                         : x[i] + -2.0f * y[i];
    kiln_kernel *k;
    check_ok(kiln_module_get_kernel(m, stream_kernels[t].name, &k));
    check_ok(kiln_launch(NULL, k, &c, stream_kernels[t].args,
                         stream_kernels[t].count));
    conf_guarded_check(&gd, NULL, want, stream_kernels[t].name);
  }
  conf_guarded_destroy(&gd);
  conf_guarded_destroy(&gy);
  check_ok(kiln_buffer_destroy(bx));
}

typedef struct grid_case {
  uint32_t nx, ny, nz;
  kiln_launch_config c;
} grid_case;

/* Every element's thread coordinates and number, for grids and blocks in
 * three dimensions, grids that overhang the data included. */
static void three_dimensional_grids(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  kiln_kernel *k = conf_kernel("conf_index3d");
  const uint32_t mt = conf.props.max_threads_per_block;
  const uint32_t mx =
      conf.props.max_block_size[0] < mt ? conf.props.max_block_size[0] : mt;
  const uint32_t my =
      conf.props.max_block_size[1] < mt ? conf.props.max_block_size[1] : mt;
  const uint32_t gx =
      conf.props.max_grid_size[0] < 70000 ? conf.props.max_grid_size[0] : 70000;
  const grid_case cases[] = {
      {1, 1, 1, {{1, 1, 1}, {1, 1, 1}, 0}},
      {10, 7, 3, {{3, 2, 2}, {4, 4, 2}, 0}},
      {40, 24, 8, {{5, 3, 2}, {8, 8, 4}, 0}},
      {33, 5, 17, {{2, 5, 3}, {32, 1, 6}, 0}},
      {2 * mx - 5, 1, 1, {{2, 1, 1}, {mx, 1, 1}, 0}},
      {1, my, 1, {{1, 1, 1}, {1, my, 1}, 0}},
      {3, 2, 64, {{3, 2, 1}, {1, 1, 64}, 0}},
      {7, 300, 5, {{1, 300, 5}, {7, 1, 1}, 0}},
      {gx * 4, 1, 1, {{gx, 1, 1}, {4, 1, 1}, 0}},
  };
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    const grid_case *gc = &cases[t];
    const size_t elems = (size_t)gc->nx * gc->ny * gc->nz;
    conf_guarded g;
    conf_guarded_create(&g, elems * 16, &r);
    uint32_t *want = conf_alloc(elems * 16);
    const kiln_dim3 gd = gc->c.grid, bd = gc->c.block;
    for (uint32_t z = 0; z < gc->nz; z++)
      for (uint32_t y = 0; y < gc->ny; y++)
        for (uint32_t x = 0; x < gc->nx; x++) {
          size_t i = ((size_t)z * gc->ny + y) * gc->nx + x;
          uint32_t block = ((z / bd.z) * gd.y + y / bd.y) * gd.x + x / bd.x;
          uint32_t local = ((z % bd.z) * bd.y + y % bd.y) * bd.x + x % bd.x;
          want[4 * i + 0] = x;
          want[4 * i + 1] = y;
          want[4 * i + 2] = z;
          want[4 * i + 3] = block * (bd.x * bd.y * bd.z) + local;
        }
    const kiln_arg args[4] = {conf_guarded_arg(&g, 0), kiln_arg_u32(gc->nx),
                              kiln_arg_u32(gc->ny), kiln_arg_u32(gc->nz)};
    check_ok(kiln_launch(NULL, k, &gc->c, args, 4));
    char what[128];
    snprintf(what, sizeof what,
             "conf_index3d over %ux%ux%u, grid %ux%ux%u, block %ux%ux%u",
             gc->nx, gc->ny, gc->nz, gd.x, gd.y, gd.z, bd.x, bd.y, bd.z);
    conf_guarded_check(&g, NULL, want, what);
    /* A zero grid dimension launches nothing. */
    kiln_launch_config none = gc->c;
    none.grid.y = 0;
    check_ok(kiln_launch(NULL, k, &none, args, 4));
    conf_guarded_check(&g, NULL, want, "after a launch with grid.y = 0");
    conf_guarded_destroy(&g);
    free(want);
  }
}

static uint64_t bits_f32(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  return u;
}

static uint64_t bits_f64(double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  return u;
}

/* Each scalar type, extremes included, between buffers at offsets. */
static void scalar_arguments(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  kiln_kernel *k = conf_kernel("conf_scalars");
  conf_guarded out, dst;
  conf_guarded_create(&out, 8 * 8, &r);
  conf_guarded_create(&dst, 4 * 4 + 4, &r);
  kiln_buffer *src;
  uint32_t src_words[8];
  conf_random_bytes(&r, src_words, sizeof src_words);
  check_ok(kiln_buffer_create(conf.ctx, sizeof src_words, 0, &src));
  check_ok(kiln_buffer_write(NULL, src, 0, src_words, sizeof src_words));
  const kiln_launch_config c = {{1, 1, 1}, {1, 1, 1}, 0};
  for (int round = 0; round < 8; round++) {
    int32_t a = (int32_t)(uint32_t)conf_next(&r);
    uint32_t b = (uint32_t)conf_next(&r);
    float fc = conf_uniform(&r, -1e6f, 1e6f);
    int64_t d = (int64_t)conf_next(&r);
    uint64_t e = conf_next(&r);
    double f = (double)conf_uniform(&r, -1.0f, 1.0f) * 1e300;
    if (round == 0) {
      a = INT32_MIN;
      b = UINT32_MAX;
      fc = -0.0f;
      d = INT64_MIN;
      e = UINT64_MAX;
      f = -0.0;
    } else if (round == 1) {
      a = -1;
      b = 0;
      fc = 3.4028235e38f;
      d = -1;
      e = 0;
      f = 1.7976931348623157e308 / 4;
    }
    const size_t src_off = 4 * conf_below(&r, 5);
    const kiln_arg args[9] = {conf_guarded_arg(&out, 0),
                              kiln_arg_i32(a),
                              kiln_arg_buffer(src, src_off),
                              kiln_arg_u32(b),
                              kiln_arg_f32(fc),
                              kiln_arg_i64(d),
                              kiln_arg_u64(e),
                              kiln_arg_f64(f),
                              conf_guarded_arg(&dst, 4)};
    check_ok(kiln_launch(NULL, k, &c, args, 9));
    const uint64_t want[8] = {(uint64_t)(int64_t)a,
                              b,
                              bits_f32(fc),
                              (uint64_t)d,
                              e,
                              bits_f64(f),
                              (uint64_t)d * 3u + e,
                              bits_f64(f * 2.0 + (double)fc)};
    char what[96];
    snprintf(what, sizeof what,
             "conf_scalars round %d (out[] is a, b, c, d, "
             "e, f, 3d+e, 2f+c)",
             round);
    conf_guarded_check(&out, NULL, want, what);
    unsigned char want_dst[20];
    memcpy(want_dst, conf_guarded_initial(&dst), 4);
    for (int i = 0; i < 4; i++) {
      uint32_t v = src_words[src_off / 4 + (size_t)i] + b;
      memcpy(want_dst + 4 + 4 * i, &v, 4);
    }
    snprintf(what, sizeof what, "conf_scalars round %d, dst[i] = src[i] + b",
             round);
    conf_guarded_check(&dst, NULL, want_dst, what);
  }
  check_ok(kiln_buffer_destroy(src));
  conf_guarded_destroy(&dst);
  conf_guarded_destroy(&out);
}

/* Dynamic shared memory up to the device's limits. */
static void dynamic_shared_memory(void **state) {
  (void)state;
  conf_rng r = conf_rng_for(__func__);
  kiln_kernel *k = conf_kernel("conf_shared_rotate");
  const size_t limit = conf.props.max_shared_memory_per_block;
  const size_t optin = conf.props.max_shared_memory_per_block_optin;
  const struct {
    uint32_t words, block, grid;
  } cases[] = {
      {1, 1, 1},
      {64, 64, 5},
      {1000, 128, 3},
      {(uint32_t)(limit / 4), 256, 2},
      {(uint32_t)(optin / 4), 256, 2},
  };
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    const uint32_t words = cases[t].words, grid = cases[t].grid;
    const size_t n = (size_t)words * grid;
    uint32_t *in = conf_alloc(n * 4), *want = conf_alloc(n * 4);
    conf_random_bytes(&r, in, n * 4);
    for (size_t b = 0; b < grid; b++)
      for (size_t i = 0; i < words; i++)
        want[b * words + i] = in[b * words + (i + 1) % words];
    kiln_buffer *bin;
    check_ok(kiln_buffer_create(conf.ctx, n * 4, 0, &bin));
    check_ok(kiln_buffer_write(NULL, bin, 0, in, n * 4));
    conf_guarded out;
    conf_guarded_create(&out, n * 4, &r);
    const kiln_launch_config c = {
        {grid, 1, 1}, {cases[t].block, 1, 1}, (size_t)words * 4};
    const kiln_arg args[3] = {conf_guarded_arg(&out, 0),
                              kiln_arg_buffer(bin, 0), kiln_arg_u32(words)};
    check_ok(kiln_launch(NULL, k, &c, args, 3));
    char what[96];
    snprintf(what, sizeof what,
             "conf_shared_rotate with %zu bytes of shared "
             "memory",
             c.shared_memory_bytes);
    conf_guarded_check(&out, NULL, want, what);
    conf_guarded_destroy(&out);
    check_ok(kiln_buffer_destroy(bin));
    free(in);
    free(want);
  }
}

/* conf_add_u32 of variant v (0 to 5) of the launches below: into a or b,
 * at a word offset, over n words, adding a value; each differs from the
 * others in one argument or in its grid. */
typedef struct alone_variant {
  int buffer;
  uint32_t word, n, value;
} alone_variant;

static const alone_variant alone_variants[] = {
    {0, 0, 256, 1},  {1, 0, 256, 1},  {0, 1, 256, 1},
    {0, 0, 4096, 1}, {0, 0, 256, 7},  {1, 3, 1000, 5},
};

/* k is conf_add_u32, or conf_busy (`busy`), whose arguments have the same
 * shape: v->value is then its rounds. The model follows a launch that
 * kiln took. */
static kiln_status launch_alone(kiln_stream *s, kiln_kernel *k, bool busy,
                                kiln_buffer *b[2], uint32_t *model[2],
                                const alone_variant *v) {
  kiln_launch_config c = kiln_launch_config_1d(v->n, 64);
  const kiln_arg args[3] = {kiln_arg_buffer(b[v->buffer], v->word * 4u),
                            kiln_arg_u32(v->n), kiln_arg_u32(v->value)};
  kiln_status st = kiln_launch(s, k, &c, args, 3);
  if (st != KILN_OK) return st;
  uint32_t *m = model[v->buffer] + v->word;
  for (uint32_t i = 0; i < v->n; i++)
    m[i] = busy ? conf_lcg(m[i], v->value) : m[i] + v->value;
  return kiln_stream_synchronize(s);
}

/* Whether Vulkan keeps the batches of launches here: not while a label
 * (KILN_TRACE=nvtx) or printf (KILN_VULKAN_VALIDATION=printf) must be
 * recorded with each launch. */
static bool batches_kept_here(void) {
  if (conf.backend != KILN_BACKEND_VULKAN) return false;
  const char *trace = getenv("KILN_TRACE");
  const char *layer = getenv("KILN_VULKAN_VALIDATION");
  return !(trace && strstr(trace, "nvtx")) &&
         !(layer && strcmp(layer, "printf") == 0);
}

/* Launches each into an idle stream (a synchronize after each), the same
 * ones again and again among others that differ in one argument or the
 * grid: every launch counts once, with its own arguments. Then more
 * launches than a Vulkan stream keeps, in turn, and launches with the
 * same arguments of conf_add_u32 and conf_busy in turn, each from a module
 * made for it and destroyed after: a kept batch of a pipeline destroyed
 * must never run again, even where the other kernel's new pipeline takes
 * its handle (lavapipe's handles are pointers, which malloc hands out
 * again). On Vulkan, the first three launches' batches are each kept once
 * and then reused (the debug log counts 3 kept over 30 launches), unless
 * labels or printf keep every batch from being kept. */
static void launches_repeated_alone(void **state) {
  (void)state;
  enum { WORDS = 4100 };
  kiln_buffer *b[2];
  uint32_t *model[2];
  for (int i = 0; i < 2; i++) {
    check_ok(kiln_buffer_create(conf.ctx, WORDS * 4, KILN_BUFFER_ZERO, &b[i]));
    model[i] = calloc(WORDS, sizeof *model[i]);
    assert_non_null(model[i]);
  }
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  kiln_kernel *k = conf_kernel("conf_add_u32");
  /* Vulkan's debug log says when a stream keeps a batch (solo.c). */
  const bool counted = batches_kept_here();
  if (counted) conf_count_log_begin("keeps the batch of a launch", NULL);
  kiln_status st = KILN_OK;
  for (int round = 0; round < 10 && st == KILN_OK; round++)
    for (int v = 0; v < 3 && st == KILN_OK; v++)
      st = launch_alone(s, k, false, b, model, &alone_variants[v]);
  unsigned kept[CONF_LOG_NEEDLES] = {0, 0};
  if (counted) {
    conf_count_log_read(kept);
    conf_count_log_end();
  }
  check_ok(st);
  if (counted && kept[0] != 3)
    fail_msg("30 launches of 3 kinds into an idle stream kept %u batches "
             "(expected 3: each kind's first, submitted again after)",
             kept[0]);
  for (int round = 0; round < 3; round++)
    for (size_t v = 0; v < sizeof alone_variants / sizeof alone_variants[0];
         v++)
      check_ok(launch_alone(s, k, false, b, model, &alone_variants[v]));
  for (int m = 0; m < 8; m++) {
    const char *name = m % 2 ? "conf_busy" : "conf_add_u32";
    size_t count = 0;
    const kiln_module_image *images = conf_images_with(conf.ctx, name, &count);
    kiln_module *mod;
    kiln_kernel *other;
    check_ok(kiln_module_create(conf.ctx, images, count, &mod));
    check_ok(kiln_module_get_kernel(mod, name, &other));
    for (int again = 0; again < 2; again++)
      check_ok(launch_alone(s, other, m % 2, b, model, &alone_variants[4]));
    check_ok(kiln_module_destroy(mod));
  }
  for (int i = 0; i < 2; i++) {
    uint32_t *got = calloc(WORDS, sizeof *got);
    assert_non_null(got);
    check_ok(kiln_buffer_read(NULL, b[i], 0, got, WORDS * 4));
    conf_check_bytes(got, model[i], WORDS * 4,
                     i ? "the second buffer after launches repeated alone"
                       : "the first buffer after launches repeated alone");
    free(got);
    free(model[i]);
    check_ok(kiln_buffer_destroy(b[i]));
  }
  check_ok(kiln_stream_destroy(s));
}

int conf_run_kernel_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(module_from_every_backends_images),
      CONF_TEST(builtin_module_kernels),
      CONF_TEST(three_dimensional_grids),
      CONF_TEST(scalar_arguments),
      CONF_TEST(dynamic_shared_memory),
      CONF_TEST(launches_repeated_alone),
  };
  return cmocka_run_group_tests_name("kernels", tests, NULL, NULL);
}
