/* Graphs: work captured from a stream and replayed, against the same work
 * issued directly; argument updates; what cannot be captured; replays that
 * overlap, on other streams, and a graph destroyed under its replays.
 * Captures with branches: test_branches.c. */
#include <stdio.h>

#include <stdlib.h>

#include "conformance.h"
#include "timing.h"

enum { WORDS = 4096 };

/* How long a gate holds a stream at most, should a test fail before it
 * opens the gate: far longer than any round needs. */
#define GATE_DEADLINE_MS 20000u

/* A mix of launches, copies and fills (one of them by kiln's fill kernel:
 * an 8-byte pattern) over two guarded buffers, each depending on the one
 * before, that changes the buffers differently each time it runs. */
static void work(kiln_stream *s, conf_guarded *a, conf_guarded *b) {
  const uint64_t wide = 0x0123456789abcdefull;
  const uint8_t byte = 0x5a;
  conf_add_u32(s, a->buf, CONF_GUARD, WORDS, 5);
  check_ok(kiln_buffer_copy(s, b->buf, CONF_GUARD, a->buf,
                            CONF_GUARD + WORDS * 2, WORDS * 2));
  conf_add_u32(s, b->buf, CONF_GUARD + 4, WORDS - 1, 3);
  check_ok(kiln_buffer_fill(s, a->buf, CONF_GUARD + 12, 40, &byte, 1));
  check_ok(kiln_buffer_fill(s, b->buf, CONF_GUARD + WORDS * 2, 64, &wide, 8));
  check_ok(kiln_buffer_copy(s, a->buf, CONF_GUARD + WORDS * 3, b->buf,
                            CONF_GUARD, WORDS));
}

/* Replayed N times, a captured graph gives the bytes the same work issued
 * N times directly gives, guards untouched. */
static void replay_matches_direct_work(void **state) {
  (void)state;
  enum { N = 7 };
  conf_rng r = conf_rng_for(__func__);
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  conf_guarded direct[2], graphed[2];
  for (int i = 0; i < 2; i++) {
    conf_guarded_create(&direct[i], WORDS * 4, &r);
    conf_guarded_create(&graphed[i], WORDS * 4, &r);
    check_ok(kiln_buffer_copy(s, graphed[i].buf, 0, direct[i].buf, 0,
                              WORDS * 4 + 2 * CONF_GUARD));
  }
  /* The canaries must match for one check of both. */
  for (int i = 0; i < 2; i++)
    memcpy(graphed[i].canary, direct[i].canary, WORDS * 4 + 2 * CONF_GUARD);
  for (int i = 0; i < N; i++) work(s, &direct[0], &direct[1]);

  kiln_graph *g;
  check_ok(kiln_stream_begin_capture(s));
  bool capturing = false;
  check_ok(kiln_stream_is_capturing(s, &capturing));
  assert_true(capturing);
  work(s, &graphed[0], &graphed[1]);
  check_ok(kiln_stream_end_capture(s, &g));
  check_ok(kiln_stream_is_capturing(s, &capturing));
  assert_false(capturing);
  size_t launches = 0;
  check_ok(kiln_graph_launch_count(g, &launches));
  assert_int_equal(launches, 2); /* the fill kernel's is not numbered */
  for (int i = 0; i < N; i++) check_ok(kiln_graph_launch(g, s));

  unsigned char *want = conf_alloc(WORDS * 4 + 2 * CONF_GUARD);
  for (int i = 0; i < 2; i++) {
    check_ok(kiln_buffer_read(s, direct[i].buf, 0, want,
                              WORDS * 4 + 2 * CONF_GUARD));
    conf_guarded_check(
        &graphed[i], s, want + CONF_GUARD,
        i ? "buffer b after the replays" : "buffer a after the replays");
  }
  free(want);
  check_ok(kiln_graph_destroy(g));
  for (int i = 0; i < 2; i++) {
    conf_guarded_destroy(&direct[i]);
    conf_guarded_destroy(&graphed[i]);
  }
  check_ok(kiln_stream_destroy(s));
}

/* kiln_graph_set_arguments changes a captured launch's scalars and buffer
 * for the replays after it, checked as kiln_launch checks. */
static void arguments_change_between_replays(void **state) {
  (void)state;
  uint32_t a[WORDS] = {0}, b[WORDS] = {0}, got[WORDS];
  kiln_buffer *ba, *bb;
  check_ok(kiln_buffer_create(conf.ctx, sizeof a, KILN_BUFFER_ZERO, &ba));
  check_ok(kiln_buffer_create(conf.ctx, sizeof b, KILN_BUFFER_ZERO, &bb));
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  check_ok(kiln_stream_begin_capture(s));
  conf_add_u32(s, ba, 0, WORDS, 1);
  conf_add_u32(s, bb, 0, WORDS, 2);
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(s, &g));
  check_ok(kiln_graph_launch(g, s));
  const kiln_arg args[3] = {kiln_arg_buffer(ba, 8), kiln_arg_u32(WORDS - 2),
                            kiln_arg_u32(10)};
  check_ok(kiln_graph_set_arguments(g, 1, args, 3));
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_graph_launch(g, s));
  for (size_t i = 0; i < WORDS; i++) {
    a[i] = 3 + (i >= 2 ? 20 : 0);
    b[i] = 2;
  }
  check_ok(kiln_buffer_read(s, ba, 0, got, sizeof got));
  conf_check_bytes(got, a, sizeof a, "buffer a after the update");
  check_ok(kiln_buffer_read(s, bb, 0, got, sizeof got));
  conf_check_bytes(got, b, sizeof b, "buffer b after the update");

  const kiln_arg wrong[2] = {kiln_arg_buffer(ba, 0), kiln_arg_u32(1)};
  check_fails(kiln_graph_set_arguments(g, 0, wrong, 2),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_graph_set_arguments(g, 2, args, 3), KILN_ERROR_OUT_OF_RANGE);
  check_message_has("kiln_graph_set_arguments");
  /* A failed update leaves the graph as it was. */
  check_ok(kiln_graph_launch(g, s));
  for (size_t i = 0; i < WORDS; i++) a[i] += 1 + (i >= 2 ? 10 : 0);
  check_ok(kiln_buffer_read(s, ba, 0, got, sizeof got));
  conf_check_bytes(got, a, sizeof a, "buffer a after a refused update");
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(ba));
  check_ok(kiln_buffer_destroy(bb));
}

/* What cannot be captured fails with INVALID_STATE and words, does
 * nothing, and the capture goes on; what a graph holds cannot be
 * destroyed. */
static void capture_refuses_what_it_cannot_hold(void **state) {
  (void)state;
  uint32_t data[64] = {0};
  kiln_buffer *buf;
  check_ok(kiln_buffer_create(conf.ctx, sizeof data, KILN_BUFFER_ZERO, &buf));
  kiln_host_buffer *hb;
  check_ok(kiln_host_buffer_create(conf.ctx, sizeof data, 0, &hb));
  kiln_event *e;
  check_ok(kiln_event_create(conf.ctx, &e));
  kiln_stream *s, *other;
  check_ok(kiln_stream_create(conf.ctx, &s));
  check_ok(kiln_stream_create(conf.ctx, &other));
  kiln_graph *g = NULL;
  check_fails(kiln_stream_end_capture(s, &g), KILN_ERROR_INVALID_STATE);
  check_message_has("not capturing");

  check_ok(kiln_stream_begin_capture(s));
  conf_add_u32(s, buf, 0, 64, 1);
  check_ok(kiln_event_record(e, s));
  check_fails(kiln_stream_begin_capture(s), KILN_ERROR_INVALID_STATE);
  check_message_has("already capturing");
  check_fails(kiln_buffer_write(s, buf, 0, data, sizeof data),
              KILN_ERROR_INVALID_STATE);
  check_message_has("kiln_buffer_write: the stream is capturing");
  check_fails(kiln_buffer_read(s, buf, 0, data, sizeof data),
              KILN_ERROR_INVALID_STATE);
  check_fails(kiln_buffer_write_async(s, buf, 0, hb, 0, sizeof data),
              KILN_ERROR_INVALID_STATE);
  check_fails(kiln_buffer_read_async(s, buf, 0, hb, 0, sizeof data),
              KILN_ERROR_INVALID_STATE);
  check_fails(kiln_stream_synchronize(s), KILN_ERROR_INVALID_STATE);
  check_fails(kiln_stream_synchronize_timeout(s, 0), KILN_ERROR_INVALID_STATE);
  check_fails(kiln_stream_destroy(s), KILN_ERROR_INVALID_STATE);
  check_message_has("kiln_stream_destroy");
  /* Other streams are not captured. */
  conf_add_u32(other, buf, 0, 64, 100);
  check_ok(kiln_stream_synchronize(other));
  conf_add_u32(s, buf, 0, 64, 2);
  check_ok(kiln_stream_end_capture(s, &g));
  check_fails(kiln_stream_end_capture(s, &g), KILN_ERROR_INVALID_STATE);

  /* Nothing captured ran. */
  check_ok(kiln_buffer_read(s, buf, 0, data, sizeof data));
  for (int i = 0; i < 64; i++) assert_int_equal(data[i], 100);
  size_t launches = 0;
  check_ok(kiln_graph_launch_count(g, &launches));
  assert_int_equal(launches, 2);

  check_ok(kiln_stream_begin_capture(other));
  check_fails(kiln_graph_launch(g, other), KILN_ERROR_INVALID_STATE);
  check_message_has("kiln_graph_launch");
  kiln_graph *empty;
  check_ok(kiln_stream_end_capture(other, &empty));
  check_ok(kiln_graph_launch(empty, other));
  check_ok(kiln_graph_destroy(empty));

  check_fails(kiln_buffer_destroy(buf), KILN_ERROR_INVALID_STATE);
  check_message_has("kiln_graph_destroy");
  check_fails(kiln_event_destroy(e), KILN_ERROR_INVALID_STATE);
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_event_synchronize(e));
  check_ok(kiln_buffer_read(s, buf, 0, data, sizeof data));
  for (int i = 0; i < 64; i++) assert_int_equal(data[i], 103);
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_buffer_destroy(buf));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_host_buffer_destroy(hb));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_stream_destroy(other));
}

/* Replays queued back to back while earlier ones still run, on the
 * capturing stream, another stream and the default one, ordered by
 * events; then the graph destroyed with replays pending. Each stream
 * adds its own number before its replays: the replays alone give the
 * same words in any order, and a wait that did not hold would not show. */
static void overlapping_replays_on_other_streams(void **state) {
  (void)state;
  enum { N = 2048, ROUNDS = 2000, REPLAYS = 6 };
  conf_rng r = conf_rng_for(__func__);
  uint32_t init[N], got[N];
  conf_random_bytes(&r, init, sizeof init);
  kiln_buffer *buf;
  check_ok(kiln_buffer_create(conf.ctx, sizeof init, 0, &buf));
  check_ok(kiln_buffer_write(NULL, buf, 0, init, sizeof init));
  kiln_stream *s1, *s2;
  check_ok(kiln_stream_create(conf.ctx, &s1));
  check_ok(kiln_stream_create(conf.ctx, &s2));
  kiln_event *done;
  check_ok(kiln_event_create(conf.ctx, &done));
  check_ok(kiln_context_synchronize(conf.ctx));

  kiln_graph *g;
  check_ok(kiln_stream_begin_capture(s1));
  conf_busy(s1, buf, N, ROUNDS);
  check_ok(kiln_event_record(done, s1));
  check_ok(kiln_stream_end_capture(s1, &g));
  for (int i = 0; i < REPLAYS; i++) check_ok(kiln_graph_launch(g, s1));
  check_ok(kiln_stream_wait_event(s2, done));
  conf_add_u32(s2, buf, 0, N, 1);
  check_ok(kiln_graph_launch(g, s2));
  check_ok(kiln_event_record(done, s2));
  check_ok(kiln_stream_wait_event(NULL, done));
  conf_add_u32(NULL, buf, 0, N, 2);
  check_ok(kiln_graph_launch(g, NULL));
  check_ok(kiln_graph_launch(g, NULL));
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_buffer_read(NULL, buf, 0, got, sizeof got));
  for (size_t i = 0; i < N; i++) {
    const uint32_t on_s1 = conf_lcg(init[i], (uint64_t)ROUNDS * REPLAYS);
    const uint32_t on_s2 = conf_lcg(on_s1 + 1, ROUNDS);
    const uint32_t want = conf_lcg(on_s2 + 2, (uint64_t)ROUNDS * 2);
    if (got[i] != want)
      fail_msg("word %zu is %u after the replays, expected %u", i, got[i],
               want);
  }
  check_ok(kiln_event_destroy(done));
  check_ok(kiln_stream_destroy(s1));
  check_ok(kiln_stream_destroy(s2));
  check_ok(kiln_buffer_destroy(buf));
}

/* A captured wait holds each replay until the event's mark as it stands
 * then; a wait may name a record of the same capture. */
static void captured_waits_follow_the_event(void **state) {
  (void)state;
  enum { N = 1024, ROUNDS = 4000 };
  uint32_t got[N];
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create(conf.ctx, N * 4, KILN_BUFFER_ZERO, &a));
  check_ok(kiln_buffer_create(conf.ctx, N * 4, KILN_BUFFER_ZERO, &b));
  kiln_stream *s1, *s2;
  check_ok(kiln_stream_create(conf.ctx, &s1));
  check_ok(kiln_stream_create(conf.ctx, &s2));
  kiln_event *e, *inner;
  check_ok(kiln_event_create(conf.ctx, &e));
  check_ok(kiln_event_create(conf.ctx, &inner));
  check_ok(kiln_event_record(e, s1));
  kiln_graph *g;
  check_ok(kiln_stream_begin_capture(s2));
  check_ok(kiln_stream_wait_event(s2, e));
  check_ok(kiln_buffer_copy(s2, b, 0, a, 0, N * 4));
  check_ok(kiln_event_record(inner, s2));
  check_ok(kiln_stream_wait_event(s2, inner));
  check_ok(kiln_stream_end_capture(s2, &g));
  for (uint32_t round = 1; round <= 3; round++) {
    conf_busy(s1, a, N, ROUNDS);
    check_ok(kiln_event_record(e, s1));
    check_ok(kiln_graph_launch(g, s2));
    check_ok(kiln_stream_synchronize(s2));
    check_ok(kiln_buffer_read(s2, b, 0, got, sizeof got));
    for (size_t i = 0; i < N; i++)
      if (got[i] != conf_lcg(0, (uint64_t)ROUNDS * round))
        fail_msg("round %u: word %zu copied before the wait: %u", round, i,
                 got[i]);
  }
  check_ok(kiln_event_synchronize(inner));
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_event_destroy(e));
  check_ok(kiln_event_destroy(inner));
  check_ok(kiln_stream_destroy(s1));
  check_ok(kiln_stream_destroy(s2));
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_buffer_destroy(b));
}

/* The built-in helpers are captured as the launches they are. */
static void helpers_are_captured(void **state) {
  (void)state;
  enum { N = 1000 };
  float x[N], y[N], sum = 0.0f;
  for (int i = 0; i < N; i++) {
    x[i] = (float)(i % 7);
    y[i] = 1.0f;
  }
  kiln_buffer *bx, *by, *res;
  check_ok(kiln_buffer_create(conf.ctx, sizeof x, 0, &bx));
  check_ok(kiln_buffer_create(conf.ctx, sizeof y, 0, &by));
  check_ok(kiln_buffer_create(conf.ctx, 4, KILN_BUFFER_ZERO, &res));
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  /* On s: a write is in its stream's order only (the H100 showed a write
   * on the default stream still landing during the first replay on s). */
  check_ok(kiln_buffer_write(s, bx, 0, x, sizeof x));
  check_ok(kiln_buffer_write(s, by, 0, y, sizeof y));
  kiln_graph *g;
  check_ok(kiln_stream_begin_capture(s));
  check_ok(kiln_axpy_f32(s, N, 2.0f, bx, 0, by, 0));
  check_ok(kiln_reduce_sum_f32(s, N, by, 0, res, 0));
  check_ok(kiln_stream_end_capture(s, &g));
  size_t launches = 1;
  check_ok(kiln_graph_launch_count(g, &launches));
  assert_int_equal(launches, 0);
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_graph_launch(g, s));
  /* The graph holds its reduction's scratch memory past the stream. */
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_graph_launch(g, NULL));
  for (int i = 0; i < N; i++) sum += 1.0f + 6.0f * x[i];
  float got = 0.0f;
  check_ok(kiln_buffer_read(NULL, res, 0, &got, 4));
  /* Whole numbers: every term and partial sum is exact in float (under
   * 2^24), so any order of the additions gives the sum exactly. */
  if (got != sum)
    fail_msg("the replayed reduction gave %.9g, expected %.9g", (double)got,
             (double)sum);
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_buffer_destroy(by));
  check_ok(kiln_buffer_destroy(res));
}

/* A captured reduction and the capturing stream's own reductions, and
 * replays of it on two streams, run at once without sharing the slots
 * or the counter that finds the last block: each result stays right.
 * Where a gate can hold a stream, one gate holds both streams until all
 * of a round is queued, so that the replays start together: otherwise the
 * first ends before the host has queued the second, and replays that
 * shared the slots at once would look right. On a GPU the sums are long
 * enough (64 MiB) that replays started together are still running
 * together when their workgroups take their tickets. The results are
 * reset and the summed data changes every round: replays that share the
 * slots may leave a result unwritten, or the counter or the slots
 * spoiled for the next round, which a result equal to the last round's
 * would hide. */
static void captured_reductions_run_beside_others(void **state) {
  (void)state;
  enum { ROUNDS = 20 };
  kiln_device_properties props;
  check_ok(kiln_context_get_properties(conf.ctx, &props));
  const int N = props.type == KILN_DEVICE_TYPE_CPU ? 1 << 20 : 1 << 24;
  float *x = conf_alloc(sizeof(float) * (size_t)N);
  float *y = conf_alloc(sizeof(float) * (size_t)N);
  double want_y = 0;
  for (int i = 0; i < N; i++) {
    y[i] = (float)(i % 3 == 0);
    want_y += y[i];
  }
  kiln_buffer *bx, *by, *rx, *ry;
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * (size_t)N, 0, &bx));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * (size_t)N, 0, &by));
  check_ok(kiln_buffer_create(conf.ctx, 4, KILN_BUFFER_ZERO, &rx));
  check_ok(kiln_buffer_create(conf.ctx, 4, KILN_BUFFER_ZERO, &ry));
  check_ok(kiln_buffer_write(NULL, by, 0, y, sizeof(float) * (size_t)N));
  kiln_stream *s, *other;
  check_ok(kiln_stream_create(conf.ctx, &s));
  check_ok(kiln_stream_create(conf.ctx, &other));
  check_ok(kiln_context_synchronize(conf.ctx));
  kiln_graph *g;
  check_ok(kiln_stream_begin_capture(s));
  check_ok(kiln_reduce_sum_f32(s, N, bx, 0, rx, 0));
  check_ok(kiln_stream_end_capture(s, &g));
  const bool gated = conf_gate_why_not(conf.ctx) == NULL;
  const float unset = -1.0f;
  for (int round = 0; round < ROUNDS; round++) {
    /* Every 2nd, 3rd or 4th element is 1: sums below 2^24, whole at
     * every step, so exact in float, and different from the last
     * round's. */
    const int every = 2 + round % 3;
    double want_x = 0;
    for (int i = 0; i < N; i++) {
      x[i] = (float)(i % every == 0);
      want_x += x[i];
    }
    check_ok(kiln_buffer_write(NULL, bx, 0, x, sizeof(float) * (size_t)N));
    check_ok(kiln_buffer_write(NULL, rx, 0, &unset, 4));
    check_ok(kiln_buffer_write(NULL, ry, 0, &unset, 4));
    /* Round 0 is ungated: a kernel's first use may wait for the work
     * queued before it, gate and all. */
    conf_gate *gate = NULL;
    if (gated && round > 0) {
      gate = conf_gate_close(conf.ctx, s, GATE_DEADLINE_MS);
      conf_gate_hold_also(gate, other);
    }
    check_ok(kiln_graph_launch(g, round % 2 ? other : s));
    check_ok(kiln_graph_launch(g, round % 2 ? s : other));
    check_ok(kiln_reduce_sum_f32(s, N, by, 0, ry, 0));
    if (gate) conf_gate_free(gate);
    check_ok(kiln_stream_synchronize(s));
    check_ok(kiln_stream_synchronize(other));
    float got_x = 0, got_y = 0;
    check_ok(kiln_buffer_read(NULL, rx, 0, &got_x, 4));
    check_ok(kiln_buffer_read(NULL, ry, 0, &got_y, 4));
    if ((double)got_x != want_x || (double)got_y != want_y)
      fail_msg("round %d: the replayed sum is %.9g (expected %.9g), the "
               "stream's own %.9g (expected %.9g)",
               round, (double)got_x, want_x, (double)got_y, want_y);
  }
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_stream_destroy(other));
  check_ok(kiln_buffer_destroy(bx));
  check_ok(kiln_buffer_destroy(by));
  check_ok(kiln_buffer_destroy(rx));
  check_ok(kiln_buffer_destroy(ry));
  free(x);
  free(y);
}

/* A graph's replays run one after another whichever streams they are on,
 * as CUDA orders the launches of one executable graph (kiln.h): with the
 * first replay held behind a gate on one stream, a second on another
 * stream, and an event after it, does not end while the gate is closed;
 * once it opens, both replays have run. Where one queue serves every
 * stream (lavapipe, or CUDA with one queue) the event waits anyway, so
 * the check holds trivially there; with several it is the graph's order
 * alone that holds the second replay. */
static void replays_of_one_graph_wait_for_each_other(void **state) {
  (void)state;
  const char *why_not = conf_gate_why_not(conf.ctx);
  if (why_not) kiln_skip("%s", why_not);
  enum { N = 4096, HELD_MS = 200 };
  kiln_buffer *buf;
  check_ok(kiln_buffer_create(conf.ctx, N * 4, KILN_BUFFER_ZERO, &buf));
  kiln_stream *s, *other;
  check_ok(kiln_stream_create(conf.ctx, &s));
  check_ok(kiln_stream_create(conf.ctx, &other));
  kiln_event *after;
  check_ok(kiln_event_create(conf.ctx, &after));
  kiln_graph *g;
  check_ok(kiln_stream_begin_capture(s));
  conf_add_u32(s, buf, 0, N, 5);
  check_ok(kiln_stream_end_capture(s, &g));
  /* The kernel is on the device before the gate closes: a kernel's first
   * use may wait for the work queued before it, gate and all. */
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_stream_synchronize(s));
  conf_gate *gate = conf_gate_close(conf.ctx, s, GATE_DEADLINE_MS);
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_graph_launch(g, other));
  check_ok(kiln_event_record(after, other));
  const uint64_t until = conf_now_ns() + (uint64_t)HELD_MS * 1000000u;
  kiln_status early = KILN_ERROR_NOT_READY;
  while (early == KILN_ERROR_NOT_READY && conf_now_ns() < until)
    early = kiln_event_query(after);
  conf_gate_free(gate);
  check_ok(kiln_event_synchronize(after));
  check_ok(kiln_stream_synchronize(s));
  if (early != KILN_ERROR_NOT_READY)
    fail_msg("the replay on another stream ended (%s) while the graph's "
             "replay before it was held behind a gate",
             kiln_status_name(early));
  uint32_t got[N];
  check_ok(kiln_buffer_read(NULL, buf, 0, got, sizeof got));
  for (size_t i = 0; i < N; i++)
    if (got[i] != 15)
      fail_msg("word %zu is %u after three replays adding 5, expected 15",
               i, got[i]);
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_event_destroy(after));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_stream_destroy(other));
  check_ok(kiln_buffer_destroy(buf));
}

/* A copy large enough for a backend's copy kernel (Vulkan's, from 256 KiB),
 * captured between two launches: each replay copies what the launch
 * before it left, and the launch after sees the copy. */
static void large_copies_are_captured(void **state) {
  (void)state;
  enum { BIG = (1 << 18) + 3, REPLAYS = 3 };
  const size_t bytes = (size_t)BIG * 4;
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create(conf.ctx, bytes, KILN_BUFFER_ZERO, &a));
  check_ok(kiln_buffer_create(conf.ctx, bytes + 4, KILN_BUFFER_ZERO, &b));
  kiln_graph *g;
  check_ok(kiln_stream_begin_capture(s));
  conf_add_u32(s, a, 0, BIG, 1);
  check_ok(kiln_buffer_copy(s, b, 4, a, 0, bytes));
  conf_add_u32(s, b, 4, BIG, 2);
  check_ok(kiln_stream_end_capture(s, &g));
  uint32_t *got = conf_alloc(bytes + 4), *want = conf_alloc(bytes + 4);
  for (uint32_t r = 1; r <= REPLAYS; r++) {
    check_ok(kiln_graph_launch(g, s));
    check_ok(kiln_buffer_read(s, b, 0, got, bytes + 4));
    want[0] = 0;
    for (size_t i = 1; i <= BIG; i++) want[i] = r + 2;
    char what[64];
    snprintf(what, sizeof what, "the copy's destination after replay %u", r);
    conf_check_bytes(got, want, bytes + 4, what);
  }
  free(got);
  free(want);
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_stream_destroy(s));
}

int conf_run_graph_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(replay_matches_direct_work),
      CONF_TEST(arguments_change_between_replays),
      CONF_TEST(capture_refuses_what_it_cannot_hold),
      CONF_TEST(overlapping_replays_on_other_streams),
      CONF_TEST(captured_waits_follow_the_event),
      CONF_TEST(helpers_are_captured),
      CONF_TEST(captured_reductions_run_beside_others),
      CONF_TEST(replays_of_one_graph_wait_for_each_other),
      CONF_TEST(large_copies_are_captured),
  };
  return cmocka_run_group_tests_name("graphs", tests, NULL, NULL);
}
