/* KILN_DEBUG=guard on the backend under test, with a real kernel that
 * writes past the end of a 4 KiB buffer, or 4 bytes before its start,
 * with no check of its range (conf_poke): the next sync point must report
 * KILN_ERROR_MEMORY_CORRUPTION naming the side and the offsets, the
 * buffers on either side must keep their bytes, the report must come once,
 * and a kernel that writes exactly the whole buffer must report nothing.
 * Each test opens a context of its own with KILN_DEBUG=guard set. */
#include <stdio.h>

#include "conformance.h"

#define WORDS 1024u /* a 4 KiB buffer */

typedef struct guard_env {
  kiln_context *ctx;
  kiln_module *module;
  kiln_kernel *poke;
  kiln_buffer *left, *buf, *right; /* buf between two neighbours */
} guard_env;

static void guard_open(guard_env *g) {
  memset(g, 0, sizeof *g);
  kiln_context_options o = kiln_context_options_default();
  o.backend = conf.backend;
  setenv("KILN_DEBUG", "guard", 1);
  kiln_status st = kiln_context_create(&o, &g->ctx);
  unsetenv("KILN_DEBUG");
  check_ok(st);
  size_t count;
  const kiln_module_image *images = conf_images(&count);
  check_ok(kiln_module_create(g->ctx, images, count, &g->module));
  check_ok(kiln_module_get_kernel(g->module, "conf_poke", &g->poke));
  kiln_buffer **bufs[3] = {&g->left, &g->buf, &g->right};
  for (size_t i = 0; i < 3; i++)
    check_ok(kiln_buffer_create(g->ctx, WORDS * 4, KILN_BUFFER_ZERO, bufs[i]));
}

/* Destroys what guard_open made; everything was reported before. */
static void guard_close(guard_env *g) {
  check_ok(kiln_buffer_destroy(g->right));
  check_ok(kiln_buffer_destroy(g->buf));
  check_ok(kiln_buffer_destroy(g->left));
  check_ok(kiln_module_destroy(g->module));
  check_ok(kiln_context_destroy(g->ctx));
}

/* conf_poke(buf, first, count, 0x1000) on `stream` (NULL: default). */
static void poke(guard_env *g, kiln_stream *stream, int32_t first,
                 uint32_t count) {
  kiln_launch_config c = kiln_launch_config_1d(count, 64);
  const kiln_arg args[4] = {kiln_arg_buffer(g->buf, 0), kiln_arg_i32(first),
                            kiln_arg_u32(count), kiln_arg_u32(0x1000)};
  check_ok(kiln_launch(stream, g->poke, &c, args, 4));
}

/* The message names the buffer (handle and size) and `where`. */
static void check_report(const guard_env *g, const char *fn,
                         const char *where) {
  char handle[64];
  snprintf(handle, sizeof handle, "buffer %p (%u bytes", (void *)g->buf,
           WORDS * 4);
  check_message_has(fn);
  check_message_has("KILN_DEBUG=guard");
  check_message_has(handle);
  check_message_has(where);
}

/* Each of the three buffers must hold `expected` (NULL: zeros). */
static void check_contents(const guard_env *g, const uint32_t *expected) {
  static uint32_t zeros[WORDS];
  uint32_t got[WORDS];
  const kiln_buffer *bufs[3] = {g->left, g->buf, g->right};
  for (size_t i = 0; i < 3; i++) {
    check_ok(kiln_buffer_read(NULL, bufs[i], 0, got, sizeof got));
    conf_check_bytes(got, i == 1 && expected ? expected : zeros, sizeof got,
                     i == 1 ? "the buffer's own bytes"
                            : "a neighbouring buffer");
  }
}

static void guard_write_past_end(void **state) {
  (void)state;
  guard_env g;
  guard_open(&g);
  poke(&g, NULL, (int32_t)WORDS, 1); /* the word right after the end */
  kiln_stream *s;
  check_ok(kiln_context_default_stream(g.ctx, &s));
  check_fails(kiln_stream_synchronize(s), KILN_ERROR_MEMORY_CORRUPTION);
  check_report(&g, "kiln_stream_synchronize",
               "after its end at offsets size+0 to size+3");
  /* Reported once; the buffers themselves untouched. */
  check_ok(kiln_stream_synchronize(s));
  check_contents(&g, NULL);

  /* A whole block past the end, found by the next read of the stream.
   * Word 253 gets 0x10fd, whose first byte is the guard's own value, so
   * the changed bytes run from size+0 to the last word's size+1023. */
  poke(&g, s, (int32_t)WORDS, 256);
  uint32_t word;
  check_fails(kiln_buffer_read(s, g.buf, 0, &word, 4),
              KILN_ERROR_MEMORY_CORRUPTION);
  check_report(&g, "kiln_buffer_read", "size+0 to size+1023");
  check_contents(&g, NULL);
  guard_close(&g);
}

static void guard_write_before_start(void **state) {
  (void)state;
  guard_env g;
  guard_open(&g);
  kiln_stream *s;
  check_ok(kiln_stream_create(g.ctx, &s));
  poke(&g, s, -1, 1); /* the 4 bytes before the start */
  check_fails(kiln_context_synchronize(g.ctx), KILN_ERROR_MEMORY_CORRUPTION);
  check_report(&g, "kiln_context_synchronize",
               "before its start at offsets -4 to -1");
  check_ok(kiln_context_synchronize(g.ctx));
  check_contents(&g, NULL);
  check_ok(kiln_stream_destroy(s));
  guard_close(&g);
}

/* Legal writes of every byte of the buffer, by the kernel and by the
 * transfers, fills and copies at its edges: nothing to report. */
static void guard_legal_writes(void **state) {
  (void)state;
  guard_env g;
  guard_open(&g);
  poke(&g, NULL, 0, WORDS);
  kiln_stream *s;
  check_ok(kiln_context_default_stream(g.ctx, &s));
  check_ok(kiln_stream_synchronize(s));
  uint32_t want[WORDS];
  for (uint32_t i = 0; i < WORDS; i++) want[i] = 0x1000 + i;
  check_contents(&g, want);

  const uint8_t byte = 0xab;
  const uint16_t half = 0x1234;
  check_ok(kiln_buffer_fill(NULL, g.buf, 0, 1, &byte, 1));
  check_ok(kiln_buffer_fill(NULL, g.buf, WORDS * 4 - 3, 3, &byte, 1));
  check_ok(kiln_buffer_fill(NULL, g.buf, 2, 2, &half, 2));
  check_ok(kiln_buffer_copy(NULL, g.right, WORDS * 4 - 1, g.buf, 0, 1));
  check_ok(kiln_buffer_copy(NULL, g.left, 0, g.buf, WORDS * 4 - 1, 1));
  check_ok(kiln_axpy_f32(NULL, WORDS, 0.0f, g.left, 0, g.right, 0));
  check_ok(kiln_context_synchronize(g.ctx));
  unsigned char first[4], last;
  check_ok(kiln_buffer_read(NULL, g.buf, 0, first, 4));
  check_ok(kiln_buffer_read(NULL, g.right, WORDS * 4 - 1, &last, 1));
  assert_int_equal(first[0], 0xab);
  assert_int_equal(first[2], 0x34);
  assert_int_equal(first[3], 0x12);
  assert_int_equal(last, 0xab);
  guard_close(&g);
}

int conf_run_guard_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(guard_write_past_end),
      CONF_TEST(guard_write_before_start),
      CONF_TEST(guard_legal_writes),
  };
  return cmocka_run_group_tests_name("guard", tests, NULL, NULL);
}
