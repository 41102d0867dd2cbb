/* The suite's helpers: random data, guarded buffers, the test kernels'
 * images, and the watch on the Vulkan validation layer. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>

#include "conformance.h"
#include "timing.h"

conf_suite conf;

/* ---- Random data --------------------------------------------------------- */

/* splitmix64: small, fast, and good enough for test data. */
uint64_t conf_next(conf_rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

conf_rng conf_rng_for(const char *test) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
  for (const char *p = test; *p; p++)
    h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  conf_rng r = {conf.seed ^ h};
  return r;
}

size_t conf_below(conf_rng *r, size_t n) {
  return n ? (size_t)(conf_next(r) % n) : 0;
}

float conf_uniform(conf_rng *r, float lo, float hi) {
  float u = (float)(conf_next(r) >> 40) / 16777216.0f; /* 24 bits: exact */
  return lo + (hi - lo) * u;
}

void conf_random_bytes(conf_rng *r, void *dst, size_t size) {
  unsigned char *p = dst;
  while (size >= 8) {
    uint64_t v = conf_next(r);
    memcpy(p, &v, 8);
    p += 8;
    size -= 8;
  }
  if (size) {
    uint64_t v = conf_next(r);
    memcpy(p, &v, size);
  }
}

void *conf_alloc(size_t size) {
  void *p = malloc(size ? size : 1);
  if (!p) fail_msg("out of host memory allocating %zu bytes", size);
  return p;
}

/* ---- Guarded buffers ----------------------------------------------------- */

void conf_guarded_create(conf_guarded *g, size_t size, conf_rng *r) {
  size_t total = size + 2 * CONF_GUARD;
  g->size = size;
  g->buf = NULL;
  g->canary = conf_alloc(total);
  conf_random_bytes(r, g->canary, total);
  check_ok(kiln_buffer_create(conf.ctx, total, 0, &g->buf));
  check_ok(kiln_buffer_write(NULL, g->buf, 0, g->canary, total));
  /* Writes are ordered on their stream only; tests use these buffers from
   * other streams too, so the data must be in place before they start. */
  kiln_stream *def;
  check_ok(kiln_context_default_stream(conf.ctx, &def));
  check_ok(kiln_stream_synchronize(def));
}

void conf_guarded_destroy(conf_guarded *g) {
  check_ok(kiln_buffer_destroy(g->buf));
  free(g->canary);
  g->buf = NULL;
  g->canary = NULL;
}

kiln_arg conf_guarded_arg(const conf_guarded *g, size_t offset) {
  return kiln_arg_buffer(g->buf, CONF_GUARD + offset);
}

const unsigned char *conf_guarded_initial(const conf_guarded *g) {
  return g->canary + CONF_GUARD;
}

void conf_check_bytes(const void *got, const void *want, size_t size,
                      const char *what) {
  if (memcmp(got, want, size) == 0) return;
  const unsigned char *a = got, *b = want;
  size_t i = 0;
  while (a[i] == b[i]) i++;
  size_t bad = 0;
  for (size_t j = i; j < size; j++) bad += a[j] != b[j];
  fail_msg("%s: byte %zu of %zu is 0x%02x, expected 0x%02x (%zu bytes "
           "differ)",
           what, i, size, a[i], b[i], bad);
}

void conf_guarded_check(const conf_guarded *g, kiln_stream *stream,
                        const void *expected, const char *what) {
  size_t total = g->size + 2 * CONF_GUARD;
  unsigned char *got = conf_alloc(total);
  kiln_status st = kiln_buffer_read(stream, g->buf, 0, got, total);
  if (st != KILN_OK) {
    free(got);
    fail_msg("%s: reading the result failed with %s: %s", what,
             kiln_status_name(st), kiln_last_error());
  }
  char label[256];
  if (memcmp(got, g->canary, CONF_GUARD) != 0) {
    snprintf(label, sizeof label, "%s (the guard before the output)", what);
    conf_check_bytes(got, g->canary, CONF_GUARD, label);
  }
  size_t tail = CONF_GUARD + g->size;
  if (memcmp(got + tail, g->canary + tail, CONF_GUARD) != 0) {
    snprintf(label, sizeof label, "%s (the guard after the output)", what);
    conf_check_bytes(got + tail, g->canary + tail, CONF_GUARD, label);
  }
  if (memcmp(got + CONF_GUARD, expected, g->size) != 0)
    conf_check_bytes(got + CONF_GUARD, expected, g->size, what);
  free(got);
}

/* ---- Test kernels -------------------------------------------------------- */

/* tests/conformance/meson.build embeds the images of each backend it could
 * compile the kernels for and says which with these macros. */
#if CONF_SPIRV_KERNELS
extern const kiln_module_image conf_spirv_images[];
extern const size_t conf_spirv_images_count;
#endif
#if CONF_CUDA_KERNELS
extern const kiln_module_image conf_cuda_images[];
extern const size_t conf_cuda_images_count;
#endif
#if CONF_HIP_KERNELS
extern const kiln_module_image conf_hip_images[];
extern const size_t conf_hip_images_count;
#endif

static kiln_module_image all_images[16];
static size_t all_count;
static kiln_module *module;

static void add_images(const kiln_module_image *images, size_t count) {
  for (size_t i = 0; i < count && all_count < 16; i++)
    all_images[all_count++] = images[i];
}

const kiln_module_image *conf_images(size_t *out_count) {
  if (all_count == 0) {
#if CONF_SPIRV_KERNELS
    add_images(conf_spirv_images, conf_spirv_images_count);
#endif
#if CONF_CUDA_KERNELS
    add_images(conf_cuda_images, conf_cuda_images_count);
#endif
#if CONF_HIP_KERNELS
    add_images(conf_hip_images, conf_hip_images_count);
#endif
  }
  (void)add_images;
  *out_count = all_count;
  return all_images;
}

const kiln_module_image *conf_images_with(kiln_context *ctx, const char *kernel,
                                          size_t *out_count) {
  size_t count = 0;
  const kiln_module_image *images = conf_images(&count);
  if (kiln_context_backend(ctx) != KILN_BACKEND_VULKAN) {
    *out_count = count;
    return images;
  }
  for (size_t i = 0; i < count; i++) {
    kiln_module *m = NULL;
    kiln_kernel *k = NULL;
    if (images[i].format != KILN_IMAGE_SPIRV ||
        kiln_module_create(ctx, &images[i], 1, &m) != KILN_OK)
      continue;
    const bool has = kiln_module_get_kernel(m, kernel, &k) == KILN_OK;
    check_ok(kiln_module_destroy(m));
    if (has) {
      *out_count = 1;
      return &images[i];
    }
  }
  fail_msg("no SPIR-V image of the test kernels has %s", kernel);
  return NULL;
}

static bool kernels_built(kiln_backend b) {
  switch (b) {
  case KILN_BACKEND_VULKAN: return CONF_SPIRV_KERNELS;
  case KILN_BACKEND_CUDA: return CONF_CUDA_KERNELS;
  case KILN_BACKEND_HIP: return CONF_HIP_KERNELS;
  default: return false;
  }
}

kiln_module *conf_module(void) {
  if (module) return module;
  if (!kernels_built(conf.backend))
    fail_msg("this build has no %s test kernels: their compiler was not "
             "found when meson configured it (see the warning in its "
             "output); the %s kernel tests cannot run",
             kiln_backend_name(conf.backend), kiln_backend_name(conf.backend));
  size_t count;
  const kiln_module_image *images = conf_images(&count);
  check_ok(kiln_module_create(conf.ctx, images, count, &module));
  return module;
}

kiln_kernel *conf_kernel(const char *name) {
  kiln_kernel *k = NULL;
  check_ok(kiln_module_get_kernel(conf_module(), name, &k));
  return k;
}

void conf_add_u32(kiln_stream *s, kiln_buffer *b, size_t offset, uint32_t n,
                  uint32_t value) {
  kiln_launch_config c = kiln_launch_config_1d(n, 64);
  const kiln_arg args[3] = {kiln_arg_buffer(b, offset), kiln_arg_u32(n),
                            kiln_arg_u32(value)};
  check_ok(kiln_launch(s, conf_kernel("conf_add_u32"), &c, args, 3));
}

void conf_busy(kiln_stream *s, kiln_buffer *b, uint32_t n, uint32_t rounds) {
  kiln_launch_config c = kiln_launch_config_1d(n, 128);
  const kiln_arg args[3] = {kiln_arg_buffer(b, 0), kiln_arg_u32(n),
                            kiln_arg_u32(rounds)};
  check_ok(kiln_launch(s, conf_kernel("conf_busy"), &c, args, 3));
}

uint32_t conf_lcg(uint32_t v, uint64_t steps) {
  for (uint64_t i = 0; i < steps; i++) v = v * 1664525u + 1013904223u;
  return v;
}

kiln_status conf_release_module(void) {
  kiln_status st = kiln_module_destroy(module);
  module = NULL;
  return st;
}

/* ---- Validation messages ------------------------------------------------- */

static const char validation_prefix[] = "Vulkan validation: ";
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int validation_count;
static int validation_seen;
static const char *validation_expected;

/* conf_count_log_begin's needles and what it counted, and the level to
 * give back; under log_lock. */
static bool counting;
static const char *count_needles[CONF_LOG_NEEDLES];
static unsigned count_hits[CONF_LOG_NEEDLES];
static kiln_log_level count_level;

static void on_log(kiln_log_level level, const char *message, void *user) {
  (void)user;
  bool validation =
      strncmp(message, validation_prefix, sizeof validation_prefix - 1) == 0;
  pthread_mutex_lock(&log_lock);
  if (validation && validation_expected &&
      strcmp(message + sizeof validation_prefix - 1, validation_expected) == 0)
    validation = false;
  if (validation) validation_count++;
  for (int i = 0; counting && i < CONF_LOG_NEEDLES; i++)
    if (count_needles[i] && strstr(message, count_needles[i])) count_hits[i]++;
  /* The debug log is on only to be counted. */
  const bool quiet = counting && level == KILN_LOG_DEBUG;
  pthread_mutex_unlock(&log_lock);
  static const char *const names[] = {"", "error", "warn", "info", "debug"};
  if (!quiet) fprintf(stderr, "kiln %s: %s\n", names[level], message);
}

void conf_count_log_begin(const char *first, const char *second) {
  pthread_mutex_lock(&log_lock);
  counting = true;
  count_needles[0] = first;
  count_needles[1] = second;
  count_hits[0] = count_hits[1] = 0;
  count_level = kiln_get_log_level();
  pthread_mutex_unlock(&log_lock);
  kiln_set_log_handler(on_log, NULL);
  kiln_set_log_level(KILN_LOG_DEBUG);
}

void conf_count_log_read(unsigned counts[CONF_LOG_NEEDLES]) {
  pthread_mutex_lock(&log_lock);
  for (int i = 0; i < CONF_LOG_NEEDLES; i++) counts[i] = count_hits[i];
  pthread_mutex_unlock(&log_lock);
}

void conf_count_log_end(void) {
  pthread_mutex_lock(&log_lock);
  counting = false;
  const kiln_log_level level = count_level;
  pthread_mutex_unlock(&log_lock);
  kiln_set_log_level(level);
}

void conf_install_log_handler(void) {
  if (kiln_get_log_level() < KILN_LOG_WARN) kiln_set_log_level(KILN_LOG_WARN);
  kiln_set_log_handler(on_log, NULL);
}

void conf_expect_validation(const char *message) {
  pthread_mutex_lock(&log_lock);
  validation_expected = message;
  pthread_mutex_unlock(&log_lock);
}

int conf_validation_messages(void) {
  pthread_mutex_lock(&log_lock);
  int n = validation_count;
  pthread_mutex_unlock(&log_lock);
  return n;
}

/* When the test now ending began: the last teardown, or its group's start
 * (conf_test_clock_start); 0 before any. */
static uint64_t test_began_ns;

void conf_test_clock_start(void) { test_began_ns = conf_now_ns(); }

int conf_check_validation(void **state) {
  (void)state;
  /* Printed between the test's RUN and OK lines, which name it: the GPU
   * machine's minutes are few, and a slow test shows where they go. */
  const uint64_t now = conf_now_ns();
  if (test_began_ns && now - test_began_ns >= CONF_SLOW_TEST_NS)
    printf("kiln-conformance: test took %.1f s\n",
           (double)(now - test_began_ns) * 1e-9);
  test_began_ns = now;
  int n = conf_validation_messages();
  if (n == validation_seen) return 0;
  print_error("the Vulkan validation layer reported %d message(s) during "
              "this test (printed above)\n",
              n - validation_seen);
  validation_seen = n;
  return -1;
}

size_t conf_gemm_c_create(conf_guarded *gc, const conf_gemm_case *t,
                          conf_rng *r, float (*value)(conf_rng *r)) {
  const size_t c_elems = (size_t)(t->m - 1) * t->ldc + t->n;
  const size_t payload = t->c_off + c_elems * 4;
  conf_guarded_create(gc, payload, r);
  unsigned char *init = gc->canary + CONF_GUARD;
  for (size_t i = 0; i < t->m; i++)
    for (size_t j = 0; j < t->n; j++) {
      const float v = t->beta == 0.0f ? NAN : value(r);
      memcpy(init + t->c_off + 4 * (i * t->ldc + j), &v, 4);
    }
  check_ok(kiln_buffer_write(NULL, gc->buf, CONF_GUARD, init, payload));
  return payload;
}

void conf_gemm_launch(const char *name, uint32_t tile_m, uint32_t tile_n,
                      uint32_t threads, size_t shared_bytes, uint32_t k_split,
                      const conf_gemm_case *t, kiln_buffer *a, kiln_buffer *b,
                      kiln_buffer *c, size_t c_off) {
  kiln_module *builtins;
  kiln_kernel *k;
  check_ok(kiln_context_builtin_module(conf.ctx, &builtins));
  check_ok(kiln_module_get_kernel(builtins, name, &k));
  kiln_arg args[14] = {
      kiln_arg_buffer(c, c_off),    kiln_arg_buffer(a, t->a_off),
      kiln_arg_buffer(b, t->b_off), kiln_arg_u32(t->m),
      kiln_arg_u32(t->n),           kiln_arg_u32(t->k),
      kiln_arg_u32(t->lda),         kiln_arg_u32(t->ldb),
      kiln_arg_u32(t->ldc),         kiln_arg_f32(t->alpha),
      kiln_arg_f32(t->beta)};
  kiln_launch_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.grid.x = (t->n + tile_n - 1) / tile_n;
  cfg.grid.y = (t->m + tile_m - 1) / tile_m;
  cfg.grid.z = 1;
  cfg.block.x = threads;
  cfg.block.y = cfg.block.z = 1;
  cfg.shared_memory_bytes = shared_bytes;
  if (k_split == 0) {
    check_ok(kiln_launch(NULL, k, &cfg, args, 11));
    return;
  }
  /* The split kernel's parts (a tile of floats per block), then a ticket
   * counter per tile, at 0. */
  cfg.grid.z = (t->k + k_split - 1) / k_split;
  const size_t tiles = (size_t)cfg.grid.x * cfg.grid.y;
  const size_t parts = tiles * cfg.grid.z * tile_m * tile_n * sizeof(float);
  kiln_buffer *work;
  check_ok(
      kiln_buffer_create(conf.ctx, parts + tiles * 4, KILN_BUFFER_ZERO, &work));
  args[11] = kiln_arg_buffer(work, 0);
  args[12] = kiln_arg_buffer(work, parts);
  args[13] = kiln_arg_u32(k_split);
  check_ok(kiln_launch(NULL, k, &cfg, args, 14));
  check_ok(kiln_buffer_destroy(work));
}

/* ---- More contexts ------------------------------------------------------- */

/* conf.ctx's device index among the backend's devices, by UUID (the suite
 * may have picked it through KILN_DEVICE). */
static size_t own_device(size_t count) {
  for (size_t i = 0; i < count; i++) {
    kiln_device_properties p;
    check_ok(kiln_device_get_properties(conf.backend, i, &p));
    if (memcmp(p.uuid, conf.props.uuid, sizeof p.uuid) == 0 &&
        strcmp(p.pci_bus_id, conf.props.pci_bus_id) == 0)
      return i;
  }
  return 0;
}

kiln_context *conf_second_context(void) {
  size_t count = 0;
  check_ok(kiln_device_count(conf.backend, &count));
  kiln_context_options o = kiln_context_options_default();
  o.backend = conf.backend;
  if (count > 1) o.device_index = (own_device(count) + 1) % count;
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(&o, &ctx));
  return ctx;
}

void conf_contexts_with_peer(const char *peer, kiln_context **a,
                             kiln_context **b) {
  static const char env[] = "KILN_VULKAN_PEER";
  const char *was = getenv(env);
  char *saved = was ? strdup(was) : NULL;
  setenv(env, peer, 1);
  *a = conf_second_context();
  *b = conf_second_context();
  if (saved) {
    setenv(env, saved, 1);
    free(saved);
  } else {
    unsetenv(env);
  }
}

