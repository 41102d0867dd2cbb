/* Module globals (kiln_module_get_global) and device limits
 * (kiln_context_set_limit, kiln_context_get_limit). On CUDA and HIP:
 * globals written, read, filled, copied and used by kernels in stream
 * order, and every limit round-tripped; on Vulkan both answer
 * KILN_ERROR_UNSUPPORTED with words, and the tests of what they do are
 * skipped, saying so. The core's argument checks run on every backend. */
#include <stdio.h>

#include "conformance.h"

#define WORDS 4
#define BYTES 13 /* conf_global_bytes */

static bool has_globals(void) { return conf.backend != KILN_BACKEND_VULKAN; }

/* Skips a test of globals where the backend has none (global_lookup checks
 * the words it answers with). */
#define NEED_GLOBALS()                                                         \
  do {                                                                         \
    if (!has_globals())                                                        \
      kiln_skip("%s kernels have no module globals (their arguments are push " \
                "constants; global_lookup checks KILN_ERROR_UNSUPPORTED)",     \
                kiln_backend_name(conf.backend));                              \
  } while (0)

static kiln_buffer *global(kiln_module *m, const char *name) {
  kiln_buffer *g = NULL;
  check_ok(kiln_module_get_global(m, name, &g));
  return g;
}

/* ---- Globals --------------------------------------------------------------- */

/* Arguments, found and missing names, ownership: the handle is the module's,
 * the same each time, not destroyable, and gone with its module. */
static void global_lookup(void **state) {
  (void)state;
  kiln_module *m = conf_module();
  kiln_buffer *g = NULL;
  check_fails(kiln_module_get_global(NULL, "conf_global_words", &g),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_module_get_global(m, NULL, &g),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_get_global(m, "", &g), KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_get_global(m, "conf_global_words", NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  if (!has_globals()) {
    check_fails(kiln_module_get_global(m, "conf_global_words", &g),
                KILN_ERROR_UNSUPPORTED);
    check_message_has("push constants");
    assert_null(g);
    return;
  }
  check_fails(kiln_module_get_global(m, "conf_no_such_global", &g),
              KILN_ERROR_NOT_FOUND);
  check_message_has("conf_no_such_global");
  assert_null(g);

  g = global(m, "conf_global_words");
  assert_ptr_equal(global(m, "conf_global_words"), g);
  assert_int_equal(kiln_buffer_size(g), WORDS * sizeof(uint32_t));
  kiln_buffer *c = global(m, "conf_constant_words");
  assert_ptr_not_equal(c, g);
  assert_int_equal(kiln_buffer_size(c), WORDS * sizeof(uint32_t));
  assert_int_equal(kiln_buffer_size(global(m, "conf_global_bytes")), BYTES);
  check_fails(kiln_buffer_destroy(g), KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("conf_global_words");
  assert_int_equal(kiln_buffer_size(g), WORDS * sizeof(uint32_t));

  /* Ranges are checked as for any buffer. */
  uint64_t word = 0;
  check_fails(kiln_buffer_write(NULL, g, 12, &word, 8),
              KILN_ERROR_OUT_OF_RANGE);
  check_fails(kiln_buffer_read(NULL, g, SIZE_MAX, &word, 2),
              KILN_ERROR_OVERFLOW);

  /* Each module has its own copy; destroying one invalidates its globals
   * and leaves the other's alone. */
  size_t count;
  const kiln_module_image *images = conf_images(&count);
  kiln_module *second;
  check_ok(kiln_module_create(conf.ctx, images, count, &second));
  kiln_buffer *g2 = global(second, "conf_global_words");
  assert_ptr_not_equal(g2, g);
  const uint32_t mine[WORDS] = {1, 2, 3, 4}, theirs[WORDS] = {5, 6, 7, 8};
  check_ok(kiln_buffer_write(NULL, g, 0, mine, sizeof mine));
  check_ok(kiln_buffer_write(NULL, g2, 0, theirs, sizeof theirs));
  uint32_t got[WORDS];
  check_ok(kiln_buffer_read(NULL, g, 0, got, sizeof got));
  conf_check_bytes(got, mine, sizeof got, "the first module's global");
  check_ok(kiln_buffer_read(NULL, g2, 0, got, sizeof got));
  conf_check_bytes(got, theirs, sizeof got, "the second module's global");
  check_ok(kiln_module_destroy(second));
  assert_int_equal(kiln_buffer_size(g2), 0);
  check_fails(kiln_buffer_write(NULL, g2, 0, mine, sizeof mine),
              KILN_ERROR_INVALID_HANDLE);
  check_ok(kiln_buffer_read(NULL, g, 0, got, sizeof got));
  conf_check_bytes(got, mine, sizeof got, "the first module's global");
}

/* Writes to a __device__ and a __constant__ global on a stream, each
 * followed by a launch that reads them and updates the __device__ one, with
 * no synchronize in between: every launch sees the values written just
 * before it, and the host reads what the last launch left. */
static void globals_in_stream_order(void **state) {
  (void)state;
  NEED_GLOBALS();
  enum { ROUNDS = 8 };
  conf_rng r = conf_rng_for(__func__);
  kiln_module *m = conf_module();
  kiln_kernel *k = conf_kernel("conf_globals");
  kiln_buffer *g = global(m, "conf_global_words");
  kiln_buffer *c = global(m, "conf_constant_words");
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  conf_guarded out;
  conf_guarded_create(&out, ROUNDS * WORDS * sizeof(uint32_t), &r);
  uint32_t want[ROUNDS][WORDS], last[WORDS];
  kiln_launch_config one = {{1, 1, 1}, {WORDS, 1, 1}, 0};
  for (uint32_t round = 0; round < ROUNDS; round++) {
    uint32_t words[WORDS], constants[WORDS];
    for (int i = 0; i < WORDS; i++) {
      words[i] = (uint32_t)conf_next(&r) >> 2;
      constants[i] = (uint32_t)conf_next(&r) >> 2;
      want[round][i] = words[i] + constants[i] + round;
      last[i] = 3u * words[i] + 1u;
    }
    check_ok(kiln_buffer_write(s, g, 0, words, sizeof words));
    /* The __constant__ one in two parts, the second at an offset. */
    check_ok(kiln_buffer_write(s, c, 0, constants, 8));
    check_ok(kiln_buffer_write(s, c, 8, constants + 2, 8));
    const kiln_arg args[2] = {
        conf_guarded_arg(&out, round * WORDS * sizeof(uint32_t)),
        kiln_arg_u32(round)};
    check_ok(kiln_launch(s, k, &one, args, 2));
  }
  conf_guarded_check(&out, s, want, "what each launch read of the globals");
  uint32_t got[WORDS];
  check_ok(kiln_buffer_read(s, g, 0, got, sizeof got));
  conf_check_bytes(got, last, sizeof got, "the global the kernel wrote");
  check_ok(kiln_stream_destroy(s));
  conf_guarded_destroy(&out);
}

/* Fills `g` (at most 16 bytes) with each pattern size from each offset
 * the size allows, checking every byte after each fill; with `sum`, also
 * what a launch of conf_global_bytes_sum sees (into `out`). */
static void fill_global(kiln_buffer *g, conf_rng *r, kiln_kernel *sum,
                        kiln_buffer *out, const char *name) {
  const size_t total = kiln_buffer_size(g);
  unsigned char want[16];
  assert_true(total <= sizeof want);
  conf_random_bytes(r, want, total);
  check_ok(kiln_buffer_write(NULL, g, 0, want, total));
  const kiln_arg sum_args[1] = {kiln_arg_buffer(out, 0)};
  const kiln_launch_config one = {{1, 1, 1}, {32, 1, 1}, 0};
  static const size_t sizes[] = {1, 2, 4, 8};
  for (size_t p = 0; p < 4; p++) {
    const size_t ps = sizes[p];
    for (size_t off = 0; off + ps <= total; off += ps) {
      size_t size = (total - off) / ps * ps;
      unsigned char pattern[8];
      conf_random_bytes(r, pattern, sizeof pattern);
      check_ok(kiln_buffer_fill(NULL, g, off, size, pattern, ps));
      for (size_t i = 0; i < size; i++) want[off + i] = pattern[i % ps];
      unsigned char seen[16];
      check_ok(kiln_buffer_read(NULL, g, 0, seen, total));
      char what[96];
      snprintf(what, sizeof what, "%s after a %zu-byte fill of [%zu, %zu)",
               name, ps, off, off + size);
      conf_check_bytes(seen, want, total, what);
      if (!sum) continue;
      check_ok(kiln_launch(NULL, sum, &one, sum_args, 1));
      uint32_t got = 0, expected = 0;
      for (size_t i = 0; i < total; i++) expected += want[i];
      check_ok(kiln_buffer_read(NULL, out, 0, &got, sizeof got));
      if (got != expected)
        fail_msg("%s: the kernel sums the bytes to %u, not %u", what,
                 (unsigned)got, (unsigned)expected);
    }
  }
}

/* A global as a kernel's buffer argument, as the source and destination of
 * copies, and filled with each pattern size at each offset its alignment
 * allows (the byte array may sit at an odd address). */
static void globals_as_buffers(void **state) {
  (void)state;
  NEED_GLOBALS();
  conf_rng r = conf_rng_for(__func__);
  kiln_module *m = conf_module();
  kiln_buffer *g = global(m, "conf_global_words");
  uint32_t words[WORDS];
  conf_random_bytes(&r, words, sizeof words);
  check_ok(kiln_buffer_write(NULL, g, 0, words, sizeof words));
  const kiln_arg args[3] = {kiln_arg_buffer(g, 4), kiln_arg_u32(2),
                            kiln_arg_u32(77)};
  kiln_launch_config one = {{1, 1, 1}, {32, 1, 1}, 0};
  check_ok(kiln_launch(NULL, conf_kernel("conf_add_u32"), &one, args, 3));
  words[1] += 77;
  words[2] += 77;
  uint32_t got[WORDS];
  check_ok(kiln_buffer_read(NULL, g, 0, got, sizeof got));
  conf_check_bytes(got, words, sizeof got, "a global as a kernel argument");

  /* Copies both ways between a global and an ordinary buffer. */
  kiln_buffer *b;
  check_ok(kiln_buffer_create(conf.ctx, 64, KILN_BUFFER_ZERO, &b));
  check_ok(kiln_buffer_copy(NULL, b, 8, g, 4, 8));
  uint32_t copied[4] = {0};
  check_ok(kiln_buffer_read(NULL, b, 4, copied, sizeof copied));
  const uint32_t want_copied[4] = {0, words[1], words[2], 0};
  conf_check_bytes(copied, want_copied, sizeof copied, "a copy from a global");
  const uint32_t back[2] = {0xfeedf00du, 0x0badcafeu};
  check_ok(kiln_buffer_write(NULL, b, 32, back, sizeof back));
  check_ok(kiln_buffer_copy(NULL, g, 8, b, 32, 8));
  words[2] = back[0];
  words[3] = back[1];
  check_ok(kiln_buffer_read(NULL, g, 0, got, sizeof got));
  conf_check_bytes(got, words, sizeof got, "a copy into a global");

  /* The one-byte flag before the byte array, as the kernel sees it. */
  kiln_kernel *sum = conf_kernel("conf_global_bytes_sum");
  const unsigned char flag = 0xa5;
  check_ok(kiln_buffer_write(NULL, global(m, "conf_global_flag"), 0, &flag,
                             1));
  const kiln_arg sum_args[1] = {kiln_arg_buffer(b, 0)};
  check_ok(kiln_launch(NULL, sum, &one, sum_args, 1));
  uint32_t seen_flag[2];
  check_ok(kiln_buffer_read(NULL, b, 0, seen_flag, sizeof seen_flag));
  assert_int_equal(seen_flag[1], flag);

  fill_global(g, &r, NULL, NULL, "the global word array");
  fill_global(global(m, "conf_global_bytes"), &r, sum, b,
              "the global byte array");
  /* The fills left the flag next to the array alone. */
  check_ok(kiln_launch(NULL, sum, &one, sum_args, 1));
  check_ok(kiln_buffer_read(NULL, b, 0, seen_flag, sizeof seen_flag));
  assert_int_equal(seen_flag[1], flag);
  check_ok(kiln_buffer_destroy(b));
}

/* A context destroyed with a module alive releases the module's globals
 * with it, counting the module alone as alive. */
static void globals_released_with_context(void **state) {
  (void)state;
  NEED_GLOBALS();
  kiln_context_options o = kiln_context_options_default();
  o.backend = conf.backend;
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  size_t count;
  const kiln_module_image *images = conf_images(&count);
  kiln_module *m;
  check_ok(kiln_module_create(ctx, images, count, &m));
  kiln_buffer *g = global(m, "conf_global_words");
  const uint32_t words[WORDS] = {9, 8, 7, 6};
  check_ok(kiln_buffer_write(NULL, g, 0, words, sizeof words));
  check_fails(kiln_context_destroy(ctx), KILN_ERROR_OBJECTS_ALIVE);
  check_message_has("1 object was still alive");
  check_message_has("0 buffers");
  assert_int_equal(kiln_buffer_size(g), 0);
}

/* ---- Limits ---------------------------------------------------------------- */

static const kiln_limit limits[] = {KILN_LIMIT_STACK_BYTES,
                                    KILN_LIMIT_PRINTF_FIFO_BYTES,
                                    KILN_LIMIT_MALLOC_HEAP_BYTES};
static const char *const limit_names[] = {"stack", "printf FIFO",
                                          "malloc heap"};

/* Whether the backend's runtime must have every limit: CUDA, and HIP on
 * NVIDIA through the HIP-on-CUDA shim; AMD's runtime lacks some. */
static bool all_limits(void) {
  return conf.backend == KILN_BACKEND_CUDA ||
         (conf.backend == KILN_BACKEND_HIP &&
          strncmp(conf.props.architecture, "gfx", 3) != 0);
}

/* Skips a test of the limits' values where the backend has none
 * (limit_arguments checks the words it answers with). */
#define NEED_LIMITS()                                                          \
  do {                                                                         \
    if (conf.backend == KILN_BACKEND_VULKAN)                                   \
      kiln_skip("Vulkan has no stack, printf FIFO or malloc heap limit to "    \
                "set (limit_arguments checks KILN_ERROR_UNSUPPORTED)");        \
  } while (0)

static void limit_arguments(void **state) {
  (void)state;
  size_t value = 0;
  check_fails(kiln_context_set_limit(NULL, KILN_LIMIT_STACK_BYTES, 4096),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_context_get_limit(NULL, KILN_LIMIT_STACK_BYTES, &value),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_context_set_limit(conf.ctx, (kiln_limit)0, 4096),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_context_get_limit(conf.ctx, (kiln_limit)99, &value),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("kiln_limit");
  check_fails(kiln_context_get_limit(conf.ctx, KILN_LIMIT_STACK_BYTES, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  if (conf.backend != KILN_BACKEND_VULKAN) return;
  for (size_t i = 0; i < 3; i++) {
    check_fails(kiln_context_get_limit(conf.ctx, limits[i], &value),
                KILN_ERROR_UNSUPPORTED);
    check_message_has("vulkan");
    check_fails(kiln_context_set_limit(conf.ctx, limits[i], 1u << 20),
                KILN_ERROR_UNSUPPORTED);
    check_message_has("vulkan");
  }
}

/* Each limit raised, read back at least as large (drivers round), and put
 * back; where the runtime lacks one (AMD), KILN_ERROR_UNSUPPORTED in words.
 * No kernel of the suite calls printf or malloc, so the FIFO and the heap
 * may still change. */
static void limits_round_trip(void **state) {
  (void)state;
  NEED_LIMITS();
  size_t round_tripped = 0;
  for (size_t i = 0; i < 3; i++) {
    size_t before = 0;
    kiln_clear_error();
    kiln_status st = kiln_context_get_limit(conf.ctx, limits[i], &before);
    if (st == KILN_ERROR_UNSUPPORTED && !all_limits()) {
      assert_true(kiln_last_error()[0] != '\0');
      printf("  %s limit: %s\n", limit_names[i], kiln_last_error());
      continue;
    }
    check_ok(st);
    /* The stack grows by 1 KiB only: the device keeps one for every
     * thread it can run at once. */
    size_t want = limits[i] == KILN_LIMIT_STACK_BYTES ? before + 1024
                                                      : 2 * before + 4096;
    kiln_clear_error();
    st = kiln_context_set_limit(conf.ctx, limits[i], want);
    if (st == KILN_ERROR_UNSUPPORTED && !all_limits()) {
      assert_true(kiln_last_error()[0] != '\0');
      printf("  %s limit: %s\n", limit_names[i], kiln_last_error());
      continue;
    }
    check_ok(st);
    size_t now = 0;
    check_ok(kiln_context_get_limit(conf.ctx, limits[i], &now));
    printf("  %s limit: %zu bytes, asked for %zu, got %zu\n", limit_names[i],
           before, want, now);
    check_ok(kiln_context_set_limit(conf.ctx, limits[i], before));
    if (now < want)
      fail_msg("the %s limit reads %zu bytes after asking for %zu",
               limit_names[i], now, want);
    size_t restored = 0;
    check_ok(kiln_context_get_limit(conf.ctx, limits[i], &restored));
    if (restored < before)
      fail_msg("the %s limit reads %zu bytes after putting back %zu",
               limit_names[i], restored, before);
    round_tripped++;
  }
  /* The context still runs kernels. */
  conf_rng r = conf_rng_for(__func__);
  conf_guarded g;
  conf_guarded_create(&g, 64, &r);
  uint32_t data[16];
  memcpy(data, conf_guarded_initial(&g), sizeof data);
  const kiln_arg args[3] = {conf_guarded_arg(&g, 0), kiln_arg_u32(16),
                            kiln_arg_u32(5)};
  kiln_launch_config c = kiln_launch_config_1d(16, 32);
  check_ok(kiln_launch(NULL, conf_kernel("conf_add_u32"), &c, args, 3));
  for (int i = 0; i < 16; i++) data[i] += 5;
  conf_guarded_check(&g, NULL, data, "a launch after changing the limits");
  conf_guarded_destroy(&g);
  if (round_tripped == 0)
    kiln_skip("%s's runtime has none of the limits (each printed above)",
              conf.props.name);
}

/* A stack of 1 TiB per thread is more than any device has: the driver
 * refuses it with words, the limit stays as it was, the context usable. */
static void absurd_limit_refused(void **state) {
  (void)state;
  NEED_LIMITS();
  size_t before = 0;
  kiln_clear_error();
  kiln_status st =
      kiln_context_get_limit(conf.ctx, KILN_LIMIT_STACK_BYTES, &before);
  if (st == KILN_ERROR_UNSUPPORTED && !all_limits())
    kiln_skip("%s's runtime has no stack limit to refuse: %s", conf.props.name,
              kiln_last_error());
  check_ok(st);
  const size_t absurd = (size_t)1 << 40;
  kiln_clear_error();
  st = kiln_context_set_limit(conf.ctx, KILN_LIMIT_STACK_BYTES, absurd);
  if (st == KILN_OK) {
    size_t now = 0;
    kiln_context_get_limit(conf.ctx, KILN_LIMIT_STACK_BYTES, &now);
    kiln_context_set_limit(conf.ctx, KILN_LIMIT_STACK_BYTES, before);
    fail_msg("a stack of %zu bytes per thread was accepted (it reads %zu)",
             absurd, now);
  }
  if (st == KILN_ERROR_DEVICE_LOST)
    fail_msg("refusing a stack size lost the context: %s", kiln_last_error());
  printf("  a 1 TiB stack: %s: %s\n", kiln_status_name(st),
         kiln_last_error());
  check_message_has("kiln_context_set_limit");
  check_message_has("1099511627776");
  size_t after = 0;
  check_ok(kiln_context_get_limit(conf.ctx, KILN_LIMIT_STACK_BYTES, &after));
  assert_int_equal(after, before);
  check_ok(kiln_context_synchronize(conf.ctx));
}

int conf_run_global_tests(void) {
  const struct CMUnitTest globals[] = {
      CONF_TEST(global_lookup),
      CONF_TEST(globals_in_stream_order),
      CONF_TEST(globals_as_buffers),
      CONF_TEST(globals_released_with_context),
  };
  const struct CMUnitTest limit_tests[] = {
      CONF_TEST(limit_arguments),
      CONF_TEST(limits_round_trip),
      CONF_TEST(absurd_limit_refused),
  };
  return cmocka_run_group_tests_name("globals", globals, NULL, NULL) +
         cmocka_run_group_tests_name("limits", limit_tests, NULL, NULL);
}
