/* Graphs with branches, on the fake backend: streams that wait on an event
 * recorded in a capture join it, their work becomes branches of the graph,
 * and the capture ends only once the stream that began it waited for all
 * of it. Run under each FAKE_GRAPH_MODE (meson.build), whose replays run
 * the nodes in the worst order their edges allow (fake_graph.c): a result
 * is right only if the build kept every edge of the capture. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

#define N 64

typedef struct branches {
  kiln_context *ctx;
  kiln_stream *s[3];
  kiln_event *fork, *join[2];
  kiln_buffer *a, *b, *c, *d;
} branches;

static branches open_branches(void **state) {
  fake_fixture *f = *state;
  branches t = {.ctx = f->ctx};
  for (int i = 0; i < 3; i++) check_ok(kiln_stream_create(t.ctx, &t.s[i]));
  check_ok(kiln_event_create(t.ctx, &t.fork));
  for (int i = 0; i < 2; i++) check_ok(kiln_event_create(t.ctx, &t.join[i]));
  kiln_buffer **bufs[4] = {&t.a, &t.b, &t.c, &t.d};
  for (int i = 0; i < 4; i++)
    check_ok(kiln_buffer_create(t.ctx, N * sizeof(float), 0, bufs[i]));
  return t;
}

static void close_branches(branches *t) {
  check_ok(kiln_buffer_destroy(t->a));
  check_ok(kiln_buffer_destroy(t->b));
  check_ok(kiln_buffer_destroy(t->c));
  check_ok(kiln_buffer_destroy(t->d));
  check_ok(kiln_event_destroy(t->fork));
  for (int i = 0; i < 2; i++) check_ok(kiln_event_destroy(t->join[i]));
  for (int i = 0; i < 3; i++) check_ok(kiln_stream_destroy(t->s[i]));
}

static void fill(kiln_stream *s, kiln_buffer *b, float v) {
  check_ok(kiln_buffer_fill(s, b, 0, N * sizeof(float), &v, sizeof v));
}

static void expect(kiln_stream *s, kiln_buffer *b, float want,
                   const char *what) {
  float got[N];
  check_ok(kiln_buffer_read(s, b, 0, got, sizeof got));
  for (int i = 0; i < N; i++)
    if (got[i] != want)
      fail_msg("%s[%d] is %g, not %g: an edge of the capture was lost",
               what, i, (double)got[i], (double)want);
}

/* A = 1 on s0, then two branches from it: B = 2A + A on s1, C = 4A + A on
 * s2; s0 meanwhile sets D = 1, then waits for both and adds B and C. */
static void capture_fork_join(branches *t, kiln_graph **out) {
  check_ok(kiln_stream_begin_capture(t->s[0]));
  fill(t->s[0], t->a, 1.0f);
  check_ok(kiln_event_record(t->fork, t->s[0]));
  const float scale[2] = {2.0f, 4.0f};
  kiln_buffer *out_of[2] = {t->b, t->c};
  for (int i = 0; i < 2; i++) {
    kiln_stream *s = t->s[1 + i];
    check_ok(kiln_stream_wait_event(s, t->fork));
    bool capturing = false;
    check_ok(kiln_stream_is_capturing(s, &capturing));
    assert_true(capturing);
    check_ok(kiln_buffer_copy(s, out_of[i], 0, t->a, 0, N * sizeof(float)));
    check_ok(kiln_axpy_f32(s, N, scale[i], t->a, 0, out_of[i], 0));
    check_ok(kiln_event_record(t->join[i], s));
  }
  fill(t->s[0], t->d, 1.0f);
  for (int i = 0; i < 2; i++)
    check_ok(kiln_stream_wait_event(t->s[0], t->join[i]));
  check_ok(kiln_axpy_f32(t->s[0], N, 1.0f, t->b, 0, t->d, 0));
  check_ok(kiln_axpy_f32(t->s[0], N, 1.0f, t->c, 0, t->d, 0));
  check_ok(kiln_stream_end_capture(t->s[0], out));
}

static void forks_and_joins_keep_their_edges(void **state) {
  branches t = open_branches(state);
  kiln_graph *g;
  capture_fork_join(&t, &g);
  /* Every stream of the capture is free again. */
  for (int i = 0; i < 3; i++) {
    bool capturing = true;
    check_ok(kiln_stream_is_capturing(t.s[i], &capturing));
    assert_false(capturing);
    check_ok(kiln_stream_synchronize(t.s[i]));
  }
  for (int round = 0; round < 3; round++) {
    kiln_stream *s = t.s[round % 3];
    fill(s, t.a, 0.0f);
    fill(s, t.b, 0.0f);
    fill(s, t.c, 0.0f);
    fill(s, t.d, 0.0f);
    check_ok(kiln_graph_launch(g, s));
    expect(s, t.b, 3.0f, "B");
    expect(s, t.c, 5.0f, "C");
    expect(s, t.d, 9.0f, "D");
  }
  /* The replays recorded the events; waits on them are ordinary ones. */
  check_ok(kiln_stream_wait_event(t.s[1], t.join[1]));
  check_ok(kiln_event_synchronize(t.fork));
  check_ok(kiln_graph_destroy(g));
  close_branches(&t);
}

/* A branch the stream that began the capture never waited for: the
 * capture is refused and every stream in it capturing no more. */
static void an_unjoined_branch_is_refused(void **state) {
  branches t = open_branches(state);
  check_ok(kiln_stream_begin_capture(t.s[0]));
  fill(t.s[0], t.a, 1.0f);
  check_ok(kiln_event_record(t.fork, t.s[0]));
  check_ok(kiln_stream_wait_event(t.s[1], t.fork));
  fill(t.s[1], t.b, 2.0f);
  check_ok(kiln_stream_wait_event(t.s[2], t.fork));
  fill(t.s[2], t.c, 2.0f);
  check_ok(kiln_event_record(t.join[1], t.s[2]));
  check_ok(kiln_stream_wait_event(t.s[0], t.join[1]));
  kiln_graph *g = NULL;
  check_fails(kiln_stream_end_capture(t.s[0], &g), KILN_ERROR_INVALID_STATE);
  check_message_has("branch 1");
  check_message_has("discarded");
  assert_null(g);
  for (int i = 0; i < 3; i++) {
    bool capturing = true;
    check_ok(kiln_stream_is_capturing(t.s[i], &capturing));
    assert_false(capturing);
  }
  /* The records were captured only: nothing was recorded. */
  check_fails(kiln_stream_wait_event(t.s[1], t.fork),
              KILN_ERROR_INVALID_STATE);
  /* A joined stream may begin a capture of its own now. */
  check_ok(kiln_stream_begin_capture(t.s[1]));
  fill(t.s[1], t.b, 2.0f);
  check_ok(kiln_stream_end_capture(t.s[1], &g));
  check_ok(kiln_graph_destroy(g));
  close_branches(&t);
}

/* Only the stream that began a capture ends it; a joined stream refuses
 * what needs the host, as the first one does, and cannot begin another. */
static void a_joined_stream_is_capturing(void **state) {
  branches t = open_branches(state);
  check_ok(kiln_stream_begin_capture(t.s[0]));
  check_ok(kiln_event_record(t.fork, t.s[0]));
  check_ok(kiln_stream_wait_event(t.s[1], t.fork));
  kiln_graph *g = NULL;
  check_fails(kiln_stream_end_capture(t.s[1], &g), KILN_ERROR_INVALID_STATE);
  check_message_has("end the capture on that stream");
  check_fails(kiln_stream_synchronize(t.s[1]), KILN_ERROR_INVALID_STATE);
  check_fails(kiln_stream_destroy(t.s[1]), KILN_ERROR_INVALID_STATE);
  check_fails(kiln_stream_begin_capture(t.s[1]), KILN_ERROR_INVALID_STATE);
  /* Another capture cannot wait on this one's record. */
  check_ok(kiln_stream_begin_capture(t.s[2]));
  check_fails(kiln_stream_wait_event(t.s[2], t.fork),
              KILN_ERROR_INVALID_STATE);
  check_message_has("another stream's capture");
  check_ok(kiln_stream_end_capture(t.s[2], &g));
  check_ok(kiln_graph_destroy(g));
  /* Joined back, the capture ends on its own stream. */
  fill(t.s[1], t.b, 7.0f);
  check_ok(kiln_event_record(t.join[0], t.s[1]));
  check_ok(kiln_stream_wait_event(t.s[0], t.join[0]));
  check_ok(kiln_stream_end_capture(t.s[0], &g));
  check_ok(kiln_graph_launch(g, NULL));
  expect(NULL, t.b, 7.0f, "B");
  check_ok(kiln_graph_destroy(g));
  close_branches(&t);
}

/* A record outside any capture, after one inside, is what waits follow:
 * a stream waiting on it then joins nothing. */
static void a_later_record_outside_ends_the_join(void **state) {
  branches t = open_branches(state);
  check_ok(kiln_stream_begin_capture(t.s[0]));
  check_ok(kiln_event_record(t.fork, t.s[0]));
  check_ok(kiln_event_record(t.fork, t.s[2]));
  check_ok(kiln_stream_wait_event(t.s[1], t.fork));
  bool capturing = true;
  check_ok(kiln_stream_is_capturing(t.s[1], &capturing));
  assert_false(capturing);
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(t.s[0], &g));
  check_ok(kiln_graph_destroy(g));
  close_branches(&t);
}

/* A replay's record of an event is a record outside any capture too: after
 * it, a wait on the event joins no capture that recorded it before. */
static void a_replays_record_ends_the_join(void **state) {
  branches t = open_branches(state);
  kiln_graph *recorder, *g;
  check_ok(kiln_stream_begin_capture(t.s[2]));
  check_ok(kiln_event_record(t.fork, t.s[2]));
  check_ok(kiln_stream_end_capture(t.s[2], &recorder));
  check_ok(kiln_stream_begin_capture(t.s[0]));
  check_ok(kiln_event_record(t.fork, t.s[0]));
  check_ok(kiln_graph_launch(recorder, t.s[2]));
  check_ok(kiln_stream_wait_event(t.s[1], t.fork));
  bool capturing = true;
  check_ok(kiln_stream_is_capturing(t.s[1], &capturing));
  assert_false(capturing);
  check_ok(kiln_stream_end_capture(t.s[0], &g));
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_context_synchronize(t.ctx));
  check_ok(kiln_graph_destroy(recorder));
  close_branches(&t);
}

/* A graph built again (an update, on a backend without graph_update)
 * hands its captured waits back through the door: a wait on an event that
 * another open capture recorded since is still the graph's own, and joins
 * nothing. */
static void a_rebuild_joins_no_capture(void **state) {
  fake_fixture *f = *state;
  f->fb.ops.graph_updates = NULL;
  kiln_module *m;
  kiln_module_image img = fake_image("k(p,u)");
  check_ok(kiln_module_create(f->ctx, &img, 1, &m));
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "k", &k));
  kiln_buffer *b;
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &b));
  kiln_stream *s0, *s1;
  check_ok(kiln_stream_create(f->ctx, &s0));
  check_ok(kiln_stream_create(f->ctx, &s1));
  kiln_event *e;
  check_ok(kiln_event_create(f->ctx, &e));
  check_ok(kiln_event_record(e, s0));
  const kiln_launch_config c = {{1, 1, 1}, {1, 1, 1}, 0};
  kiln_arg args[2] = {kiln_arg_buffer(b, 0), kiln_arg_u32(1)};
  kiln_graph *g, *other;
  check_ok(kiln_stream_begin_capture(s0));
  check_ok(kiln_stream_wait_event(s0, e));
  check_ok(kiln_launch(s0, k, &c, args, 2));
  check_ok(kiln_stream_end_capture(s0, &g));
  check_ok(kiln_stream_begin_capture(s1));
  check_ok(kiln_event_record(e, s1));
  args[1] = kiln_arg_u32(2);
  check_ok(kiln_graph_set_arguments(g, 0, args, 2));
  check_ok(kiln_stream_end_capture(s1, &other));
  check_ok(kiln_graph_destroy(other));
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s1));
  check_ok(kiln_stream_destroy(s0));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_module_destroy(m));
}

/* Context destroy releases an open capture with branches. */
static void context_destroy_ends_an_open_capture(void **state) {
  fake_fixture *f = *state;
  kiln_stream *s0, *s1;
  kiln_event *e;
  check_ok(kiln_stream_create(f->ctx, &s0));
  check_ok(kiln_stream_create(f->ctx, &s1));
  check_ok(kiln_event_create(f->ctx, &e));
  check_ok(kiln_stream_begin_capture(s0));
  check_ok(kiln_event_record(e, s0));
  check_ok(kiln_stream_wait_event(s1, e));
  check_fails(kiln_context_destroy(f->ctx), KILN_ERROR_OBJECTS_ALIVE);
  f->ctx = NULL;
}

int main(void) {
#define T(name) \
  cmocka_unit_test_setup_teardown(name, fake_fixture_setup, \
                                  fake_fixture_teardown)
  const struct CMUnitTest tests[] = {
      T(forks_and_joins_keep_their_edges),
      T(an_unjoined_branch_is_refused),
      T(a_joined_stream_is_capturing),
      T(a_later_record_outside_ends_the_join),
      T(a_rebuild_joins_no_capture),
      T(a_replays_record_ends_the_join),
      T(context_destroy_ends_an_open_capture),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
