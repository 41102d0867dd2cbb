/*
 * saxpy: y = a * x + y on whichever GPU kiln finds, checked against the CPU.
 *
 * A user program written only against kiln's public API. It opens a context
 * as the environment says (KILN_BACKEND=cuda|hip|vulkan|auto, KILN_DEVICE),
 * loads its own kernel — saxpy.cu, saxpy.hip and saxpy.comp next to this
 * file, compiled at build time and embedded as `saxpy_images` — and hands
 * kiln every image so that kiln picks the one for the backend it runs on.
 *
 *     saxpy [N]      N elements (default 1048576)
 *
 * Exit status: 0 when every element matches, 1 on any failure, 2 for a bad
 * argument, 77 when the chosen backend cannot run on this machine (the
 * "skipped" code of test harnesses; kiln's message says what is available).
 */
#include <kiln/kiln.h>

#include <errno.h>
#include <float.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Written by tools/kiln-embed at build time. */
extern const kiln_module_image saxpy_images[];
extern const size_t saxpy_images_count;

enum { EXIT_BAD_ARGUMENT = 2, EXIT_UNAVAILABLE = 77 };

/* The kernels index with 32-bit unsigned integers and loop grid-stride:
 * with n <= 2^31 an index plus the stride never wraps. */
#define SAXPY_MAX_N ((size_t)1 << 31)
#define SAXPY_DEFAULT_N ((size_t)1 << 20)
#define SAXPY_BLOCK_SIZE 256u

/* Reports a failed kiln call the way a user wants to see it: the call, the
 * status's name and kiln's message in words. */
static void report(const char *call, kiln_status status) {
  fprintf(stderr, "saxpy: %s failed: %s: %s\n", call, kiln_status_name(status),
          kiln_last_error());
}

#define CHECK(call)               \
  do {                            \
    kiln_status status_ = (call); \
    if (status_ != KILN_OK) {     \
      report(#call, status_);     \
      goto out;                   \
    }                             \
  } while (0)

/* Releases are checked too: a failure there is a failure of the run. */
#define RELEASE(call)             \
  do {                            \
    kiln_status status_ = (call); \
    if (status_ != KILN_OK) {     \
      report(#call, status_);     \
      result = EXIT_FAILURE;      \
    }                             \
  } while (0)

/* kiln reports what no status can carry — the Vulkan validation layer's
 * findings under KILN_VULKAN_VALIDATION=1 — as log messages at error level.
 * saxpy shows them and counts each one as a failure of the run. */
static atomic_uint logged_errors;

static void on_log(kiln_log_level level, const char *message,
                   void *user_data) {
  (void)user_data;
  static const char *const names[] = {"off", "error", "warn", "info",
                                      "debug"};
  if (level == KILN_LOG_ERROR) atomic_fetch_add(&logged_errors, 1u);
  fprintf(stderr, "kiln %s: %s\n",
          (unsigned)level < 5 ? names[level] : "log", message);
}

/* FNV-1a over the result's bytes: equal on two backends only when every
 * element is bit for bit the same, which a tolerance check cannot show. */
static uint64_t checksum(const float *v, size_t n) {
  const unsigned char *p = (const unsigned char *)v;
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n * sizeof *v; i++) {
    h ^= p[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

/* Fixed-seed xorshift64*: the same data on every run and every machine. */
static float next_random(uint64_t *state) {
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  uint64_t bits = (*state * UINT64_C(2685821657736338717)) >> 40;
  return (float)bits / (float)(1u << 24) * 2.0f - 1.0f; /* [-1, 1) */
}

static void usage(FILE *to) {
  fprintf(to,
          "usage: saxpy [N]\n"
          "Computes y = a * x + y on N floats (default %zu, at most %zu) "
          "with kiln\nand checks every element against the CPU.\n"
          "KILN_BACKEND (cuda, hip, vulkan, auto) and KILN_DEVICE choose the "
          "device.\n"
          "Exit status: 0 pass, 1 failure, 2 bad argument, 77 backend not "
          "available here.\n",
          SAXPY_DEFAULT_N, SAXPY_MAX_N);
}

static int parse_n(const char *text, size_t *out_n) {
  char *end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' ||
      value == 0 || value > SAXPY_MAX_N) {
    fprintf(stderr, "saxpy: N must be a whole number from 1 to %zu, not '%s'\n",
            SAXPY_MAX_N, text);
    return -1;
  }
  *out_n = (size_t)value;
  return 0;
}

/* Compares y_out with a * x + y_in computed in double and returns how many
 * elements differ. The device may fuse the multiply-add or not, so each
 * element may differ from the exact result by a few ulps of its terms; a
 * NaN never passes. */
static size_t verify(size_t n, float a, const float *x, const float *y_in,
                     const float *y_out, double *out_max_error) {
  double max_error = 0.0;
  size_t failures = 0;
  for (size_t i = 0; i < n; ++i) {
    double product = (double)a * (double)x[i];
    double expected = product + (double)y_in[i];
    double magnitude = (product < 0 ? -product : product) +
                       (y_in[i] < 0 ? -(double)y_in[i] : (double)y_in[i]);
    double tolerance = 4.0 * FLT_EPSILON * magnitude + FLT_MIN;
    double error = (double)y_out[i] - expected;
    if (error < 0) error = -error;
    if (!(error <= tolerance)) {
      if (failures < 5)
        fprintf(stderr, "saxpy: y[%zu] = %.9g, expected %.9g\n", i,
                (double)y_out[i], expected);
      ++failures;
    }
    if (error > max_error || error != error) max_error = error;
  }
  *out_max_error = max_error;
  return failures;
}

int main(int argc, char **argv) {
  size_t n = SAXPY_DEFAULT_N;
  if (argc > 2) {
    usage(stderr);
    return EXIT_BAD_ARGUMENT;
  }
  if (argc == 2) {
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
      usage(stdout);
      return EXIT_SUCCESS;
    }
    if (parse_n(argv[1], &n) != 0) return EXIT_BAD_ARGUMENT;
  }

  int result = EXIT_FAILURE;
  bool verified = false;
  size_t mismatches = 0;
  double max_error = 0.0;
  kiln_status status;
  const float a = 2.5f;
  const size_t bytes = n * sizeof(float);
  kiln_context *ctx = NULL;
  kiln_module *module = NULL;
  kiln_buffer *x_buf = NULL, *y_buf = NULL;
  kiln_event *start = NULL, *end = NULL;
  float *x = malloc(bytes), *y = malloc(bytes), *y_out = malloc(bytes);
  if (x == NULL || y == NULL || y_out == NULL) {
    fprintf(stderr, "saxpy: cannot allocate 3 x %zu bytes of host memory\n",
            bytes);
    goto out;
  }
  uint64_t seed = UINT64_C(0x9E3779B97F4A7C15);
  for (size_t i = 0; i < n; ++i) {
    x[i] = next_random(&seed);
    y[i] = next_random(&seed);
  }

  kiln_set_log_handler(on_log, NULL);
  if (kiln_get_log_level() < KILN_LOG_ERROR) kiln_set_log_level(KILN_LOG_ERROR);

  /* NULL options: backend and device from KILN_BACKEND / KILN_DEVICE. */
  status = kiln_context_create(NULL, &ctx);
  if (status != KILN_OK) {
    report("kiln_context_create", status);
    if (status == KILN_ERROR_UNAVAILABLE) result = EXIT_UNAVAILABLE;
    goto out;
  }
  kiln_device_properties props;
  CHECK(kiln_context_get_properties(ctx, &props));
  printf("saxpy: kiln %s, backend %s, device %s (%s, %s)\n",
         kiln_version_string(), kiln_backend_name(kiln_context_backend(ctx)),
         props.name, kiln_device_type_name(props.type), props.vendor);

  /* Every image goes in; kiln takes the ones its backend runs. */
  CHECK(kiln_module_create(ctx, saxpy_images, saxpy_images_count, &module));
  kiln_kernel *kernel = NULL;
  CHECK(kiln_module_get_kernel(module, "saxpy", &kernel));

  CHECK(kiln_buffer_create(ctx, bytes, KILN_BUFFER_DEFAULT, &x_buf));
  CHECK(kiln_buffer_create(ctx, bytes, KILN_BUFFER_DEFAULT, &y_buf));
  CHECK(kiln_buffer_write(NULL, x_buf, 0, x, bytes));
  CHECK(kiln_buffer_write(NULL, y_buf, 0, y, bytes));

  /* The kernel loops grid-stride, so the grid may be clamped to the
   * device's limit (65535 workgroups on many Vulkan devices). */
  uint32_t block = SAXPY_BLOCK_SIZE < props.max_threads_per_block
                       ? SAXPY_BLOCK_SIZE
                       : props.max_threads_per_block;
  kiln_launch_config config = kiln_launch_config_1d(n, block);
  if (config.grid.x > props.max_grid_size[0])
    config.grid.x = props.max_grid_size[0];
  /* The same ordered list as the kernels' parameters: y, x, a, n. */
  const kiln_arg args[] = {
      kiln_arg_buffer(y_buf, 0),
      kiln_arg_buffer(x_buf, 0),
      kiln_arg_f32(a),
      kiln_arg_u32((uint32_t)n),
  };

  /* A kernel's first launch may also load or compile it: time the second.
   * y is written again in between, so the result is one a * x + y. */
  CHECK(kiln_launch(NULL, kernel, &config, args, sizeof args / sizeof args[0]));
  CHECK(kiln_buffer_write(NULL, y_buf, 0, y, bytes));

  CHECK(kiln_event_create(ctx, &start));
  CHECK(kiln_event_create(ctx, &end));
  CHECK(kiln_event_record(start, NULL));
  CHECK(kiln_launch(NULL, kernel, &config, args, sizeof args / sizeof args[0]));
  CHECK(kiln_event_record(end, NULL));
  /* A read is complete when it returns, after the launch in stream order. */
  CHECK(kiln_buffer_read(NULL, y_buf, 0, y_out, bytes));
  float ms = 0.0f;
  CHECK(kiln_event_elapsed_ms(start, end, &ms));
  printf("saxpy: n = %zu, a = %g: %u blocks of %u threads, %.3f ms", n,
         (double)a, config.grid.x, config.block.x, (double)ms);
  if (ms > 0.0f)
    printf(", %.3g GB/s", 3.0 * (double)bytes / ((double)ms * 1e6));
  printf("\n");

  mismatches = verify(n, a, x, y, y_out, &max_error);
  verified = true;
  if (mismatches == 0) result = EXIT_SUCCESS;

out:
  /* Destroying NULL is a no-op, so a partial set-up unwinds the same way. */
  RELEASE(kiln_event_destroy(end));
  RELEASE(kiln_event_destroy(start));
  RELEASE(kiln_buffer_destroy(y_buf));
  RELEASE(kiln_buffer_destroy(x_buf));
  RELEASE(kiln_module_destroy(module));
  RELEASE(kiln_context_destroy(ctx));
  unsigned errors = atomic_load(&logged_errors);
  if (errors != 0) {
    fprintf(stderr, "saxpy: kiln logged %u error%s (above)\n", errors,
            errors == 1 ? "" : "s");
    result = EXIT_FAILURE;
  }

  if (verified)
    printf("saxpy: %s: %zu of %zu elements match the CPU, max error %.3g, "
           "checksum %016llx\n",
           result == EXIT_SUCCESS ? "PASS" : "FAIL", n - mismatches, n,
           max_error, (unsigned long long)checksum(y_out, n));
  else
    printf("saxpy: FAIL: %s\n", result == EXIT_UNAVAILABLE
                                    ? "the chosen backend cannot run here"
                                    : "see the messages above");
  free(y_out);
  free(y);
  free(x);
  return result;
}
