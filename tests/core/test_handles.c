/* Handles that are no longer live: every public function that takes a
 * handle, given one of each type that was destroyed (or released with its
 * context), answers KILN_ERROR_INVALID_HANDLE with a message and touches
 * nothing, also once the memory behind the handle holds new objects. Under
 * AddressSanitizer any read of the freed object fails the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

/* Live objects of the fixture's context, and dead ones of every type. */
typedef struct handles {
  kiln_context *ctx, *dead_ctx;
  kiln_buffer *buf, *dead_buf;
  kiln_host_buffer *hb, *dead_hb;
  kiln_module *mod, *dead_mod;
  kiln_kernel *kernel, *dead_kernel;
  kiln_stream *stream, *dead_stream;
  kiln_event *event, *dead_event;
} handles;

static const char image_text[] = "k:8 kiln_x:8";

static kiln_module *load(kiln_context *ctx) {
  kiln_module_image img = fake_image(image_text);
  kiln_module *m = NULL;
  check_ok(kiln_module_create(ctx, &img, 1, &m));
  return m;
}

static void make_live(handles *h) {
  check_ok(kiln_buffer_create(h->ctx, 64, 0, &h->buf));
  check_ok(kiln_host_buffer_create(h->ctx, 64, 0, &h->hb));
  h->mod = load(h->ctx);
  check_ok(kiln_module_get_kernel(h->mod, "k", &h->kernel));
  check_ok(kiln_stream_create(h->ctx, &h->stream));
  check_ok(kiln_event_create(h->ctx, &h->event));
  check_ok(kiln_event_record(h->event, NULL));
}

/* One dead handle of every type, each destroyed by its own function. */
static void make_dead(handles *h) {
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  check_ok(kiln_context_create(&o, &h->dead_ctx));
  check_ok(kiln_context_destroy(h->dead_ctx));
  check_ok(kiln_buffer_create(h->ctx, 64, 0, &h->dead_buf));
  check_ok(kiln_buffer_destroy(h->dead_buf));
  check_ok(kiln_host_buffer_create(h->ctx, 64, 0, &h->dead_hb));
  check_ok(kiln_host_buffer_destroy(h->dead_hb));
  h->dead_mod = load(h->ctx);
  check_ok(kiln_module_get_kernel(h->dead_mod, "k", &h->dead_kernel));
  check_ok(kiln_module_destroy(h->dead_mod));
  check_ok(kiln_stream_create(h->ctx, &h->dead_stream));
  check_ok(kiln_stream_destroy(h->dead_stream));
  check_ok(kiln_event_create(h->ctx, &h->dead_event));
  check_ok(kiln_event_record(h->dead_event, NULL));
  check_ok(kiln_event_destroy(h->dead_event));
}

static void release_live(handles *h) {
  check_ok(kiln_event_destroy(h->event));
  check_ok(kiln_stream_destroy(h->stream));
  check_ok(kiln_module_destroy(h->mod));
  check_ok(kiln_host_buffer_destroy(h->hb));
  check_ok(kiln_buffer_destroy(h->buf));
}

/* ---- The table: one call per row, with exactly one dead handle ---------- */

typedef kiln_status (*call_fn)(const handles *h);

#define CALL(id, expr)                                                         \
  static kiln_status id(const handles *h) { return (expr); }

static const kiln_launch_config one_block = {{1, 1, 1}, {1, 1, 1}, 0};
static const char source_text[] = "k:8";
static const kiln_source source = {KILN_SOURCE_GLSL, source_text, "k.comp",
                                   NULL};
static const char *const no_file[] = {"/nonexistent/k.comp"};
static unsigned char bytes[64];
static const uint32_t pattern = 7;

static kiln_status launch_with(kiln_stream *s, kiln_kernel *k,
                               const kiln_buffer *b) {
  kiln_arg a = kiln_arg_buffer(b, 0);
  return kiln_launch(s, k, &one_block, &a, 1);
}

/* The dead context. */
CALL(ctx_destroy, kiln_context_destroy(h->dead_ctx))
CALL(ctx_props, kiln_context_get_properties(
                    h->dead_ctx, &(kiln_device_properties){0}))
CALL(ctx_sync, kiln_context_synchronize(h->dead_ctx))
CALL(ctx_default_stream,
     kiln_context_default_stream(h->dead_ctx, &(kiln_stream *){NULL}))
CALL(ctx_builtin, kiln_context_builtin_module(h->dead_ctx,
                                              &(kiln_module *){NULL}))
CALL(ctx_buffer, kiln_buffer_create(h->dead_ctx, 16, 0,
                                    &(kiln_buffer *){NULL}))
CALL(ctx_host_buffer, kiln_host_buffer_create(h->dead_ctx, 16, 0,
                                              &(kiln_host_buffer *){NULL}))
CALL(ctx_module, kiln_module_create(h->dead_ctx,
                                    &(kiln_module_image){KILN_IMAGE_SPIRV,
                                                         image_text, 4},
                                    1, &(kiln_module *){NULL}))
CALL(ctx_source, kiln_module_create_from_source(h->dead_ctx, &source, 1, NULL,
                                                &(kiln_module *){NULL}))
CALL(ctx_files, kiln_module_create_from_files(h->dead_ctx, no_file, 1, NULL,
                                              &(kiln_module *){NULL}))
CALL(ctx_stream, kiln_stream_create(h->dead_ctx, &(kiln_stream *){NULL}))
CALL(ctx_event, kiln_event_create(h->dead_ctx, &(kiln_event *){NULL}))

/* The dead buffer, in every position a buffer takes. */
CALL(buf_destroy, kiln_buffer_destroy(h->dead_buf))
CALL(buf_write, kiln_buffer_write(NULL, h->dead_buf, 0, bytes, 4))
CALL(buf_read, kiln_buffer_read(NULL, h->dead_buf, 0, bytes, 4))
CALL(buf_copy_dst, kiln_buffer_copy(NULL, h->dead_buf, 0, h->buf, 0, 4))
CALL(buf_copy_src, kiln_buffer_copy(NULL, h->buf, 0, h->dead_buf, 0, 4))
CALL(buf_fill, kiln_buffer_fill(NULL, h->dead_buf, 0, 4, &pattern, 4))
CALL(buf_write_async,
     kiln_buffer_write_async(NULL, h->dead_buf, 0, h->hb, 0, 4))
CALL(buf_read_async, kiln_buffer_read_async(NULL, h->dead_buf, 0, h->hb, 0, 4))
CALL(buf_launch, launch_with(NULL, h->kernel, h->dead_buf))
CALL(buf_axpy_x, kiln_axpy_f32(NULL, 1, 1.0f, h->dead_buf, 0, h->buf, 0))
CALL(buf_axpy_y, kiln_axpy_f32(NULL, 1, 1.0f, h->buf, 0, h->dead_buf, 0))
CALL(buf_sum_x, kiln_reduce_sum_f32(NULL, 1, h->dead_buf, 0, h->buf, 0))
CALL(buf_sum_result, kiln_reduce_sum_f32(NULL, 1, h->buf, 0, h->dead_buf, 0))
CALL(buf_dot_x, kiln_dot_f32(NULL, 1, h->dead_buf, 0, h->buf, 0, h->buf, 8))
CALL(buf_dot_y, kiln_dot_f32(NULL, 1, h->buf, 0, h->dead_buf, 0, h->buf, 8))
CALL(buf_dot_result,
     kiln_dot_f32(NULL, 1, h->buf, 0, h->buf, 4, h->dead_buf, 0))
CALL(buf_sgemm_a, kiln_sgemm_f32(NULL, 1, 1, 1, 1.0f, h->dead_buf, 0, 1,
                                 h->buf, 0, 1, 0.0f, h->buf, 8, 1))
CALL(buf_sgemm_b, kiln_sgemm_f32(NULL, 1, 1, 1, 1.0f, h->buf, 0, 1,
                                 h->dead_buf, 0, 1, 0.0f, h->buf, 8, 1))
CALL(buf_sgemm_c, kiln_sgemm_f32(NULL, 1, 1, 1, 1.0f, h->buf, 0, 1, h->buf,
                                 4, 1, 0.0f, h->dead_buf, 0, 1))

/* The dead host buffer. */
CALL(hb_destroy, kiln_host_buffer_destroy(h->dead_hb))
CALL(hb_write_async,
     kiln_buffer_write_async(NULL, h->buf, 0, h->dead_hb, 0, 4))
CALL(hb_read_async, kiln_buffer_read_async(NULL, h->buf, 0, h->dead_hb, 0, 4))

/* The dead module and its kernel. */
CALL(mod_destroy, kiln_module_destroy(h->dead_mod))
CALL(mod_get_kernel,
     kiln_module_get_kernel(h->dead_mod, "k", &(kiln_kernel *){NULL}))
CALL(mod_build_info, kiln_module_get_build_info(
                         h->dead_mod, &(kiln_module_build_info){0}))
CALL(kernel_launch, launch_with(NULL, h->dead_kernel, h->buf))
CALL(kernel_attributes, kiln_kernel_get_attributes(
                            h->dead_kernel, &(kiln_kernel_attributes){0}))
CALL(kernel_suggest, kiln_kernel_suggest_block_size(h->dead_kernel, 0,
                                                    &(uint32_t){0}, NULL))

/* The dead stream, in every call that takes a stream. */
CALL(stream_destroy, kiln_stream_destroy(h->dead_stream))
CALL(stream_sync, kiln_stream_synchronize(h->dead_stream))
CALL(stream_sync_timeout,
     kiln_stream_synchronize_timeout(h->dead_stream, 1000000))
CALL(stream_write, kiln_buffer_write(h->dead_stream, h->buf, 0, bytes, 4))
CALL(stream_read, kiln_buffer_read(h->dead_stream, h->buf, 0, bytes, 4))
CALL(stream_copy, kiln_buffer_copy(h->dead_stream, h->buf, 0, h->buf, 8, 4))
CALL(stream_fill,
     kiln_buffer_fill(h->dead_stream, h->buf, 0, 4, &pattern, 4))
CALL(stream_write_async,
     kiln_buffer_write_async(h->dead_stream, h->buf, 0, h->hb, 0, 4))
CALL(stream_read_async,
     kiln_buffer_read_async(h->dead_stream, h->buf, 0, h->hb, 0, 4))
CALL(stream_launch, launch_with(h->dead_stream, h->kernel, h->buf))
CALL(stream_axpy,
     kiln_axpy_f32(h->dead_stream, 1, 1.0f, h->buf, 0, h->buf, 4))
CALL(stream_sum, kiln_reduce_sum_f32(h->dead_stream, 1, h->buf, 0, h->buf, 4))
CALL(stream_dot,
     kiln_dot_f32(h->dead_stream, 1, h->buf, 0, h->buf, 4, h->buf, 8))
CALL(stream_sgemm, kiln_sgemm_f32(h->dead_stream, 1, 1, 1, 1.0f, h->buf, 0, 1,
                                  h->buf, 4, 1, 0.0f, h->buf, 8, 1))
CALL(stream_record, kiln_event_record(h->event, h->dead_stream))
CALL(stream_wait, kiln_stream_wait_event(h->dead_stream, h->event))

/* The dead event. */
CALL(event_destroy, kiln_event_destroy(h->dead_event))
CALL(event_record, kiln_event_record(h->dead_event, NULL))
CALL(event_wait, kiln_stream_wait_event(NULL, h->dead_event))
CALL(event_sync, kiln_event_synchronize(h->dead_event))
CALL(event_query, kiln_event_query(h->dead_event))
CALL(event_elapsed_start,
     kiln_event_elapsed_ms(h->dead_event, h->event, &(float){0}))
CALL(event_elapsed_end,
     kiln_event_elapsed_ms(h->event, h->dead_event, &(float){0}))

/* Functions that answer a value instead of a status: the neutral value,
 * and a message. */
CALL(ctx_backend, kiln_context_backend(h->dead_ctx) == KILN_BACKEND_AUTO
                      ? KILN_ERROR_INVALID_HANDLE
                      : KILN_OK)
CALL(buf_size,
     kiln_buffer_size(h->dead_buf) == 0 ? KILN_ERROR_INVALID_HANDLE : KILN_OK)
CALL(hb_data, kiln_host_buffer_data(h->dead_hb) == NULL
                  ? KILN_ERROR_INVALID_HANDLE
                  : KILN_OK)
CALL(hb_size, kiln_host_buffer_size(h->dead_hb) == 0
                  ? KILN_ERROR_INVALID_HANDLE
                  : KILN_OK)
CALL(kernel_name, kiln_kernel_name(h->dead_kernel)[0] == '\0'
                      ? KILN_ERROR_INVALID_HANDLE
                      : KILN_OK)

typedef struct row {
  const char *what;
  call_fn call;
} row;

#define ROW(id) {#id, id}

static const row table[] = {
    ROW(ctx_destroy),      ROW(ctx_props),        ROW(ctx_sync),
    ROW(ctx_default_stream), ROW(ctx_builtin),    ROW(ctx_buffer),
    ROW(ctx_host_buffer),  ROW(ctx_module),       ROW(ctx_source),
    ROW(ctx_files),        ROW(ctx_stream),       ROW(ctx_event),
    ROW(ctx_backend),      ROW(buf_destroy),      ROW(buf_write),
    ROW(buf_read),         ROW(buf_copy_dst),     ROW(buf_copy_src),
    ROW(buf_fill),         ROW(buf_write_async),  ROW(buf_read_async),
    ROW(buf_launch),       ROW(buf_axpy_x),       ROW(buf_axpy_y),
    ROW(buf_sum_x),        ROW(buf_sum_result),   ROW(buf_dot_x),
    ROW(buf_dot_y),        ROW(buf_dot_result),   ROW(buf_sgemm_a),
    ROW(buf_sgemm_b),      ROW(buf_sgemm_c),      ROW(buf_size),
    ROW(hb_destroy),       ROW(hb_write_async),   ROW(hb_read_async),
    ROW(hb_data),          ROW(hb_size),          ROW(mod_destroy),
    ROW(mod_get_kernel),   ROW(mod_build_info),   ROW(kernel_launch),
    ROW(kernel_attributes), ROW(kernel_suggest),
    ROW(kernel_name),      ROW(stream_destroy),   ROW(stream_sync),
    ROW(stream_sync_timeout), ROW(stream_write),  ROW(stream_read),
    ROW(stream_copy),      ROW(stream_fill),      ROW(stream_write_async),
    ROW(stream_read_async), ROW(stream_launch),   ROW(stream_axpy),
    ROW(stream_sum),       ROW(stream_dot),       ROW(stream_sgemm),
    ROW(stream_record),    ROW(stream_wait),      ROW(event_destroy),
    ROW(event_record),     ROW(event_wait),       ROW(event_sync),
    ROW(event_query),      ROW(event_elapsed_start), ROW(event_elapsed_end),
};

/* Every row twice (a second destroy is as stale as the first use), each
 * answering INVALID_HANDLE with a message that says the handle is not
 * live. The backend must see no call at all. */
static void run_table(const handles *h, const fake_backend *fb) {
  unsigned calls[FAKE_OP_COUNT];
  for (size_t i = 0; i < FAKE_OP_COUNT; i++) calls[i] = fb->calls[i];
  for (int round = 0; round < 2; round++) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
      kiln_clear_error();
      kiln_status st = table[i].call(h);
      if (st != KILN_ERROR_INVALID_HANDLE)
        fail_msg("%s with a dead handle returned %s (message: \"%s\")",
                 table[i].what, kiln_status_name(st), kiln_last_error());
      if (!strstr(kiln_last_error(), "not a live kiln"))
        fail_msg("%s: the message \"%s\" does not say the handle is dead",
                 table[i].what, kiln_last_error());
    }
  }
  for (size_t i = 0; i < FAKE_OP_COUNT; i++)
    if (fb->calls[i] != calls[i])
      fail_msg("a call with a dead handle reached the backend (op %zu)", i);
}

static void every_call_rejects_dead_handles(void **state) {
  fake_fixture *f = *state;
  handles h = {.ctx = f->ctx};
  make_live(&h);
  make_dead(&h);
  run_table(&h, &f->fb);
  release_live(&h);
}

/* Objects released by their context's destroy are as dead as destroyed
 * ones. */
static void handles_released_with_their_context(void **state) {
  fake_fixture *f = *state;
  handles h = {.ctx = f->ctx};
  make_live(&h);
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *other;
  check_ok(kiln_context_create(&o, &other));
  h.dead_ctx = other;
  check_ok(kiln_buffer_create(other, 64, 0, &h.dead_buf));
  check_ok(kiln_host_buffer_create(other, 64, 0, &h.dead_hb));
  h.dead_mod = load(other);
  check_ok(kiln_module_get_kernel(h.dead_mod, "k", &h.dead_kernel));
  check_ok(kiln_stream_create(other, &h.dead_stream));
  check_ok(kiln_event_create(other, &h.dead_event));
  check_fails(kiln_context_destroy(other), KILN_ERROR_OBJECTS_ALIVE);
  run_table(&h, &f->fb);
  release_live(&h);
}

/* All object blocks the same size, so that a freed one can come back as an
 * object of any type. */
static int same_size_setup(void **state) {
  fake_fixture *f = calloc(1, sizeof *f);
  if (!f) return -1;
  fake_init(&f->fb, KILN_BACKEND_VULKAN);
  kiln_backend_ops *o = &f->fb.ops;
  /* The host buffers' size is in their sub-table, the fake's const: this
   * copy of it gets the new size. */
  static kiln_host_buffer_ops host_buffers;
  host_buffers = *o->host_buffers;
  /* Every object the size of the largest, so that any block can come back
   * as an object of any type. */
  const size_t host_buffer_size = host_buffers.host_buffer_size;
  size_t sizes[] = {o->context_size, o->buffer_size, host_buffer_size,
                    o->module_size,  o->kernel_size, o->stream_size,
                    o->event_size};
  size_t largest = 0;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (sizes[i] > largest) largest = sizes[i];
  o->context_size = o->buffer_size = host_buffers.host_buffer_size =
      o->module_size = o->kernel_size = o->stream_size = o->event_size =
          largest;
  o->host_buffers = &host_buffers;
  fake_backend *list[] = {&f->fb};
  fake_install(list, 1);
  kiln_context_options opts = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  if (kiln_context_create(&opts, &f->ctx) != KILN_OK) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

#define CHURN 600

/* The dead handles' memory, handed out again: first pushed out of kiln's
 * quarantine by many destroys, then refilled by hundreds of new events.
 * Every dead handle of another type must stay dead whatever now lives in
 * its block. (A block that comes back as an object of its old type is
 * that object: no pointer-sized handle can tell them apart, which is why
 * kiln holds blocks back for a while; see the next test.) */
static void reused_memory_stays_dead(void **state) {
  fake_fixture *f = *state;
  handles h = {.ctx = f->ctx};
  make_live(&h);
  make_dead(&h);
  kiln_event **events = calloc(CHURN, sizeof *events);
  assert_non_null(events);
  for (size_t i = 0; i < CHURN; i++)
    check_ok(kiln_event_create(f->ctx, &events[i]));
  for (size_t i = 0; i < CHURN; i++) check_ok(kiln_event_destroy(events[i]));
  const void *dead[] = {h.dead_ctx,    h.dead_buf,    h.dead_hb,
                        h.dead_mod,    h.dead_kernel, h.dead_stream};
  size_t reused = 0;
  bool event_reused = false;
  for (size_t i = 0; i < CHURN; i++) {
    check_ok(kiln_event_create(f->ctx, &events[i]));
    for (size_t d = 0; d < sizeof dead / sizeof dead[0]; d++)
      if ((const void *)events[i] == dead[d]) reused++;
    event_reused |= events[i] == h.dead_event;
  }
  printf("%zu dead handles of other types now point at live events\n",
         reused);
  if (event_reused) {
    /* A dead event of its own, fresh from the quarantine. */
    check_ok(kiln_event_create(f->ctx, &h.dead_event));
    check_ok(kiln_event_destroy(h.dead_event));
  }
  run_table(&h, &f->fb);
  for (size_t i = 0; i < CHURN; i++) check_ok(kiln_event_destroy(events[i]));
  free(events);
  release_live(&h);
}

/* A block is not handed out again right after its object is destroyed, so
 * that a handle used soon after its destroy is never an object of the
 * same type that happens to sit there. */
static void quarantine_keeps_recent_handles_dead(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *dead, *fresh[32];
  check_ok(kiln_buffer_create(f->ctx, 8, 0, &dead));
  check_ok(kiln_buffer_destroy(dead));
  for (size_t i = 0; i < 32; i++) {
    check_ok(kiln_buffer_create(f->ctx, 8, 0, &fresh[i]));
    assert_ptr_not_equal(fresh[i], dead);
  }
  check_fails(kiln_buffer_destroy(dead), KILN_ERROR_INVALID_HANDLE);
  check_message_has("kiln_buffer_destroy");
  for (size_t i = 0; i < 32; i++) check_ok(kiln_buffer_destroy(fresh[i]));
}

/* Objects made and destroyed in turn reuse the quarantine's oldest
 * blocks rather than malloc's, yet a destroyed handle still stays dead
 * through the next QUARANTINE - 1 (63) destroys: none of the 60 pairs after
 * it gets its block back, and it is refused all along. */
static void pairs_keep_a_destroyed_handle_dead(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *dead, *b;
  check_ok(kiln_buffer_create(f->ctx, 8, 0, &dead));
  check_ok(kiln_buffer_destroy(dead));
  for (int i = 0; i < 60; i++) {
    check_ok(kiln_buffer_create(f->ctx, 8, 0, &b));
    assert_ptr_not_equal(b, dead);
    check_fails(kiln_buffer_destroy(dead), KILN_ERROR_INVALID_HANDLE);
    check_ok(kiln_buffer_destroy(b));
  }
}

/* Under AddressSanitizer a destroyed object's block is poisoned while it
 * waits in quarantine, so that kiln's own reads of a destroyed object are
 * reported; its next use, as a new object, is not. Only the ASan build
 * (scripts/test.sh's asan stage) has the test. */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#if defined(TEST_ASAN)
#include <sanitizer/asan_interface.h>
#endif

#if defined(TEST_ASAN)
static void destroyed_blocks_are_poisoned(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b;
  check_ok(kiln_buffer_create(f->ctx, 8, 0, &b));
  assert_false(__asan_address_is_poisoned(b));
  check_ok(kiln_buffer_destroy(b));
  assert_true(__asan_address_is_poisoned(b));
}
#endif

/* A live handle passed where another type is expected. */
static void wrong_types(void **state) {
  fake_fixture *f = *state;
  kiln_buffer *b;
  kiln_event *e;
  check_ok(kiln_buffer_create(f->ctx, 8, 0, &b));
  check_ok(kiln_event_create(f->ctx, &e));
  check_fails(kiln_stream_synchronize((kiln_stream *)(void *)b),
              KILN_ERROR_INVALID_HANDLE);
  check_message_has("not a live kiln stream");
  check_fails(kiln_buffer_destroy((kiln_buffer *)(void *)e),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_context_synchronize((kiln_context *)(void *)b),
              KILN_ERROR_INVALID_HANDLE);
  /* Memory kiln never handed out, inside and outside a live object. */
  static uint64_t never[16];
  check_fails(kiln_event_query((kiln_event *)(void *)never),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_buffer_destroy((kiln_buffer *)(void *)((char *)b + 16)),
              KILN_ERROR_INVALID_HANDLE);
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_buffer_destroy(b));
}

int main(void) {
#define T(name)                                                                \
  cmocka_unit_test_setup_teardown(name, fake_fixture_setup,                    \
                                  fake_fixture_teardown)
  const struct CMUnitTest tests[] = {
      T(every_call_rejects_dead_handles),
      T(pairs_keep_a_destroyed_handle_dead),
#if defined(TEST_ASAN)
      T(destroyed_blocks_are_poisoned),
#endif
      T(handles_released_with_their_context),
      cmocka_unit_test_setup_teardown(reused_memory_stays_dead,
                                      same_size_setup, fake_fixture_teardown),
      T(quarantine_keeps_recent_handles_dead),
      T(wrong_types),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
