/* Graphs in the core, on the fake backend: capture records instead of
 * issuing, refusals leave the capture going, a build issues the work once
 * through the ops, replays and updates (through graph_update, and the
 * rebuild for a backend without it), what a graph holds, failed builds,
 * and context destroy with graphs and a capture. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

static kiln_kernel *kernel(kiln_context *ctx, kiln_module **m) {
  kiln_module_image img = fake_image("k(p,u)");
  check_ok(kiln_module_create(ctx, &img, 1, m));
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(*m, "k", &k));
  return k;
}

static void launch(kiln_stream *s, kiln_kernel *k, kiln_buffer *b, uint32_t v) {
  const kiln_launch_config c = {{1, 1, 1}, {1, 1, 1}, 0};
  const kiln_arg args[2] = {kiln_arg_buffer(b, 0), kiln_arg_u32(v)};
  check_ok(kiln_launch(s, k, &c, args, 2));
}

/* Nothing captured reaches the backend until the capture ends; the build
 * issues it once, each replay once more, and the bytes are the work's. */
static void capture_builds_once_and_replays(void **state) {
  fake_fixture *f = *state;
  kiln_module *m;
  kiln_kernel *k = kernel(f->ctx, &m);
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create(f->ctx, 64, KILN_BUFFER_ZERO, &a));
  check_ok(kiln_buffer_create(f->ctx, 64, KILN_BUFFER_ZERO, &b));
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  const unsigned launches = f->fb.calls[FAKE_OP_LAUNCH];
  const unsigned copies = f->fb.calls[FAKE_OP_COPY];
  const uint16_t pattern = 0xbeef;
  check_ok(kiln_stream_begin_capture(s));
  launch(s, k, a, 1);
  check_ok(kiln_buffer_fill(s, a, 8, 16, &pattern, 2));
  check_ok(kiln_buffer_copy(s, b, 0, a, 0, 64));
  launch(s, k, b, 2);
  assert_int_equal(f->fb.calls[FAKE_OP_LAUNCH], launches);
  assert_int_equal(f->fb.calls[FAKE_OP_COPY], copies);
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(s, &g));
  assert_int_equal(f->fb.calls[FAKE_OP_GRAPH_BEGIN], 1);
  assert_int_equal(f->fb.calls[FAKE_OP_LAUNCH], launches + 2);
  assert_int_equal(f->fb.calls[FAKE_OP_COPY], copies + 1);
  size_t n = 0;
  check_ok(kiln_graph_launch_count(g, &n));
  assert_int_equal(n, 2);

  unsigned char got[64], want[64] = {0};
  check_ok(kiln_buffer_read(s, b, 0, got, 64));
  assert_memory_equal(got, want, 64);
  check_ok(kiln_graph_launch(g, NULL));
  check_ok(kiln_graph_launch(g, s));
  assert_int_equal(f->fb.calls[FAKE_OP_GRAPH_LAUNCH], 2);
  assert_int_equal(f->fb.calls[FAKE_OP_LAUNCH], launches + 6);
  for (int i = 8; i < 24; i += 2) {
    want[i] = 0xef;
    want[i + 1] = 0xbe;
  }
  check_ok(kiln_buffer_read(s, b, 0, got, 64));
  assert_memory_equal(got, want, 64);
  /* The replay's launch saw the captured arguments. */
  const fake_launch *l = fake_launch_back(&f->fb, 0);
  uint32_t v = 0;
  memcpy(&v, l->args.data + l->args.offsets[1], 4);
  assert_int_equal(v, 2);

  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_module_destroy(m));
}

/* The arguments the last launch the fake ran got: its buffer's address
 * and its value. */
static void last_launch(const fake_backend *fb, uint64_t *addr, uint32_t *v) {
  const fake_launch *l = fake_launch_back(fb, 0);
  assert_non_null(l);
  memcpy(addr, l->args.data + l->args.offsets[0], 8);
  memcpy(v, l->args.data + l->args.offsets[1], 4);
}

/* The core passes new arguments to the backend's graph_update, not to a
 * rebuild, and the replay uses them (the fake's graph keeps its own copy
 * of each launch's arguments, which only graph_update changes); a failed
 * update leaves the old ones in force, in the graph and in what it holds. */
static void updates_go_through_graph_update(void **state) {
  fake_fixture *f = *state;
  kiln_module *m;
  kiln_kernel *k = kernel(f->ctx, &m);
  kiln_buffer *a, *b, *z;
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &a));
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &b));
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &z));
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  check_ok(kiln_stream_begin_capture(s));
  /* A command before the launches: launch i is not command i. */
  const uint32_t zero = 0;
  check_ok(kiln_buffer_fill(s, z, 0, 16, &zero, sizeof zero));
  launch(s, k, b, 5);
  launch(s, k, a, 7);
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(s, &g));
  const kiln_arg args[2] = {kiln_arg_buffer(b, 4), kiln_arg_u32(9)};
  check_ok(kiln_graph_set_arguments(g, 1, args, 2));
  assert_int_equal(f->fb.calls[FAKE_OP_GRAPH_UPDATE], 1);
  assert_int_equal(f->fb.calls[FAKE_OP_GRAPH_BEGIN], 1);
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_graph_launch(g, s));
  uint64_t addr = 0;
  uint32_t v = 0;
  last_launch(&f->fb, &addr, &v);
  assert_int_equal(v, 9);
  assert_true(addr == b->device_address + 4);
  /* The other launch kept its own. */
  const fake_launch *first = fake_launch_back(&f->fb, 1);
  memcpy(&v, first->args.data + first->args.offsets[1], 4);
  assert_int_equal(v, 5);

  kiln_buffer *c;
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &c));
  f->fb.fail_op = FAKE_OP_GRAPH_UPDATE;
  f->fb.fail_status = KILN_ERROR_OUT_OF_DEVICE_MEMORY;
  const kiln_arg other[2] = {kiln_arg_buffer(c, 0), kiln_arg_u32(11)};
  check_fails(kiln_graph_set_arguments(g, 1, other, 2),
              KILN_ERROR_OUT_OF_DEVICE_MEMORY);
  check_message_has("kiln_graph_set_arguments");
  assert_int_equal(f->fb.calls[FAKE_OP_GRAPH_BEGIN], 1);
  /* The graph does not hold c, and still holds b. */
  check_ok(kiln_buffer_destroy(c));
  check_fails(kiln_buffer_destroy(b), KILN_ERROR_INVALID_STATE);
  check_ok(kiln_graph_launch(g, s));
  last_launch(&f->fb, &addr, &v);
  assert_int_equal(v, 9);
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_buffer_destroy(z));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_module_destroy(m));
}

/* Without graph_update the core builds the graph again with the new
 * arguments; a failed build leaves the old ones in force. */
static void updates_build_again(void **state) {
  fake_fixture *f = *state;
  f->fb.ops.graph_updates = NULL;
  kiln_module *m;
  kiln_kernel *k = kernel(f->ctx, &m);
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &a));
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &b));
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  check_ok(kiln_stream_begin_capture(s));
  launch(s, k, a, 7);
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(s, &g));
  const kiln_arg args[2] = {kiln_arg_buffer(b, 4), kiln_arg_u32(9)};
  check_ok(kiln_graph_set_arguments(g, 0, args, 2));
  assert_int_equal(f->fb.calls[FAKE_OP_GRAPH_BEGIN], 2);
  /* The graph now holds b, not a. */
  check_ok(kiln_buffer_destroy(a));
  check_fails(kiln_buffer_destroy(b), KILN_ERROR_INVALID_STATE);
  check_ok(kiln_graph_launch(g, s));
  const fake_launch *l = fake_launch_back(&f->fb, 0);
  uint64_t addr = 0;
  uint32_t v = 0;
  memcpy(&addr, l->args.data, 8);
  memcpy(&v, l->args.data + 8, 4);
  assert_int_equal(v, 9);
  assert_true(addr == b->device_address + 4);

  f->fb.fail_op = FAKE_OP_GRAPH_BEGIN;
  f->fb.fail_status = KILN_ERROR_OUT_OF_DEVICE_MEMORY;
  const kiln_arg other[2] = {kiln_arg_buffer(b, 0), kiln_arg_u32(11)};
  check_fails(kiln_graph_set_arguments(g, 0, other, 2),
              KILN_ERROR_OUT_OF_DEVICE_MEMORY);
  check_message_has("kiln_graph_set_arguments");
  check_ok(kiln_graph_launch(g, s));
  l = fake_launch_back(&f->fb, 0);
  memcpy(&v, l->args.data + 8, 4);
  assert_int_equal(v, 9);
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_module_destroy(m));
}

/* A build that fails ends the capture, returns the error, and lets go of
 * everything the capture held. */
static void a_failed_build_abandons_the_capture(void **state) {
  fake_fixture *f = *state;
  kiln_module *m;
  kiln_kernel *k = kernel(f->ctx, &m);
  kiln_buffer *a;
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &a));
  kiln_event *e;
  check_ok(kiln_event_create(f->ctx, &e));
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  check_ok(kiln_stream_begin_capture(s));
  launch(s, k, a, 1);
  check_ok(kiln_event_record(e, s));
  check_ok(kiln_stream_wait_event(s, e));
  f->fb.fail_op = FAKE_OP_LAUNCH;
  f->fb.fail_status = KILN_ERROR_LAUNCH_FAILED;
  kiln_graph *g = NULL;
  check_fails(kiln_stream_end_capture(s, &g), KILN_ERROR_LAUNCH_FAILED);
  check_message_has("kiln_stream_end_capture");
  assert_null(g);
  bool capturing = true;
  check_ok(kiln_stream_is_capturing(s, &capturing));
  assert_false(capturing);
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_stream_destroy(s));
}

/* The context releases its graphs and a capture still going, counting
 * the graphs (not the capture) as alive. */
static void context_destroy_releases_graphs(void **state) {
  fake_fixture *f = *state;
  const long before = fake_live_objects(&f->fb);
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_module *m;
  kiln_kernel *k = kernel(ctx, &m);
  kiln_buffer *a;
  check_ok(kiln_buffer_create(ctx, 16, 0, &a));
  kiln_stream *s;
  check_ok(kiln_stream_create(ctx, &s));
  check_ok(kiln_stream_begin_capture(s));
  launch(s, k, a, 1);
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(s, &g));
  check_ok(kiln_stream_begin_capture(s));
  launch(s, k, a, 2);
  check_fails(kiln_context_destroy(ctx), KILN_ERROR_OBJECTS_ALIVE);
  check_message_has("1 graphs");
  assert_int_equal(fake_live_objects(&f->fb), before);
  check_fails(kiln_graph_launch(g, NULL), KILN_ERROR_INVALID_HANDLE);
}

/* A backend without graphs says so at the start of a capture. (Its
 * graph_updates go too: updates without graphs are a half-filled table.) */
static void no_graphs_is_unsupported(void **state) {
  (void)state;
  fake_backend fb;
  fake_init(&fb, KILN_BACKEND_VULKAN);
  fb.ops.graphs = NULL;
  fb.ops.graph_updates = NULL;
  fake_backend *list[] = {&fb};
  fake_install(list, 1);
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_stream *s;
  check_ok(kiln_context_default_stream(ctx, &s));
  check_fails(kiln_stream_begin_capture(s), KILN_ERROR_UNSUPPORTED);
  check_message_has("the vulkan backend has no graphs");
  check_ok(kiln_context_destroy(ctx));
}

#define FIXTURE_TEST(name)                                  \
  cmocka_unit_test_setup_teardown(name, fake_fixture_setup, \
                                  fake_fixture_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      FIXTURE_TEST(capture_builds_once_and_replays),
      FIXTURE_TEST(updates_go_through_graph_update),
      FIXTURE_TEST(updates_build_again),
      FIXTURE_TEST(a_failed_build_abandons_the_capture),
      FIXTURE_TEST(context_destroy_releases_graphs),
      cmocka_unit_test(no_graphs_is_unsupported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
