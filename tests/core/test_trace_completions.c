/* kiln_set_trace_handler_ex's KILN_TRACE_COMPLETIONS on the fake backend:
 * which host wait reports which commands completed, in what order, with
 * what numbers and times, and what timing costs when it is off. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

#define MAX_SEEN 64

typedef struct trace_sink {
  kiln_trace_command seen[MAX_SEEN];
  char names[MAX_SEEN][32];
  size_t count, completed;
  bool keep_all; /* count every call, keep none (the backlog test) */
} trace_sink;

static void collect(const kiln_trace_command *c, void *user_data) {
  trace_sink *sink = user_data;
  if (c->phase == KILN_TRACE_COMPLETED) sink->completed++;
  if (sink->keep_all) {
    sink->count++;
    return;
  }
  if (sink->count == MAX_SEEN) fail_msg("more than %d calls", MAX_SEEN);
  sink->seen[sink->count] = *c;
  snprintf(sink->names[sink->count], sizeof sink->names[0], "%s",
           c->kernel_name ? c->kernel_name : "");
  sink->count++;
}

static void start(trace_sink *sink) {
  memset(sink, 0, sizeof *sink);
  check_ok(kiln_set_trace_handler_ex(collect, KILN_TRACE_COMPLETIONS, sink));
}

static void stop(void) { kiln_set_trace_handler(NULL, NULL); }

static kiln_kernel *kernel_k(kiln_context *ctx, kiln_module **out_module) {
  kiln_module_image img = fake_image("k");
  kiln_kernel *k;
  check_ok(kiln_module_create(ctx, &img, 1, out_module));
  check_ok(kiln_module_get_kernel(*out_module, "k", &k));
  return k;
}

static const kiln_launch_config one = {{1, 1, 1}, {1, 1, 1}, 0};

/* Call i of the sink: its phase, kind, stream, and the id of the queued
 * call `of` (itself for a queued call). */
static void check_call(const trace_sink *sink, size_t i,
                       kiln_trace_phase phase, kiln_trace_kind kind,
                       const kiln_stream *s, size_t of) {
  assert_true(i < sink->count);
  const kiln_trace_command *c = &sink->seen[i];
  assert_int_equal(c->phase, phase);
  assert_int_equal(c->kind, kind);
  assert_ptr_equal(c->stream, s);
  assert_int_equal(sink->seen[of].phase, KILN_TRACE_QUEUED);
  assert_int_equal(c->id, sink->seen[of].id);
  if (phase == KILN_TRACE_QUEUED) {
    assert_false(c->timed);
    assert_int_equal(c->start_ns, 0);
    assert_int_equal(c->end_ns, 0);
  } else {
    assert_true(c->timed);
    assert_true(c->start_ns <= c->end_ns);
  }
}

/* Queued commands are numbered; a stream's wait reports its own, in order
 * with their times, and the context's wait the rest. */
static void a_stream_wait_reports_its_commands(void **state) {
  fake_fixture *f = *state;
  kiln_module *m;
  kiln_kernel *k = kernel_k(f->ctx, &m);
  kiln_stream *s1, *s2;
  kiln_buffer *b;
  check_ok(kiln_stream_create(f->ctx, &s1));
  check_ok(kiln_stream_create(f->ctx, &s2));
  check_ok(kiln_buffer_create(f->ctx, 64, 0, &b));
  const uint32_t pattern = 5;

  trace_sink sink;
  start(&sink);
  check_ok(kiln_launch(s1, k, &one, NULL, 0));
  check_ok(kiln_buffer_fill(s2, b, 0, 64, &pattern, 4));
  check_ok(kiln_launch(s1, k, &one, NULL, 0));
  assert_int_equal(sink.count, 3);
  assert_true(sink.seen[0].id > 0);
  assert_int_equal(sink.seen[1].id, sink.seen[0].id + 1);
  assert_int_equal(sink.seen[2].id, sink.seen[0].id + 2);
  check_ok(kiln_stream_synchronize(s1));
  assert_int_equal(sink.count, 5);
  check_call(&sink, 3, KILN_TRACE_COMPLETED, KILN_TRACE_LAUNCH, s1, 0);
  check_call(&sink, 4, KILN_TRACE_COMPLETED, KILN_TRACE_LAUNCH, s1, 2);
  assert_string_equal(sink.names[3], "k");
  assert_true(sink.seen[4].start_ns >= sink.seen[3].start_ns);
  check_ok(kiln_context_synchronize(f->ctx));
  assert_int_equal(sink.count, 6);
  check_call(&sink, 5, KILN_TRACE_COMPLETED, KILN_TRACE_FILL, s2, 1);
  assert_int_equal(sink.seen[5].bytes, 64);
  /* Nothing is reported twice. */
  check_ok(kiln_context_synchronize(f->ctx));
  stop();
  assert_int_equal(sink.count, 6);

  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_stream_destroy(s1));
  check_ok(kiln_stream_destroy(s2));
  check_ok(kiln_module_destroy(m));
}

/* An event's wait reports what its stream queued before the event's last
 * record, the record included, and nothing after it or on other streams. */
static void an_event_wait_reports_what_came_before_its_record(void **state) {
  fake_fixture *f = *state;
  kiln_module *m;
  kiln_kernel *k = kernel_k(f->ctx, &m);
  kiln_stream *s, *other;
  kiln_event *e;
  check_ok(kiln_stream_create(f->ctx, &s));
  check_ok(kiln_stream_create(f->ctx, &other));
  check_ok(kiln_event_create(f->ctx, &e));

  trace_sink sink;
  start(&sink);
  check_ok(kiln_launch(s, k, &one, NULL, 0));
  check_ok(kiln_launch(other, k, &one, NULL, 0));
  check_ok(kiln_event_record(e, s));
  check_ok(kiln_event_record(e, s));
  check_ok(kiln_launch(s, k, &one, NULL, 0));
  check_ok(kiln_event_synchronize(e));
  assert_int_equal(sink.count, 8);
  check_call(&sink, 5, KILN_TRACE_COMPLETED, KILN_TRACE_LAUNCH, s, 0);
  check_call(&sink, 6, KILN_TRACE_COMPLETED, KILN_TRACE_RECORD, s, 2);
  check_call(&sink, 7, KILN_TRACE_COMPLETED, KILN_TRACE_RECORD, s, 3);
  check_ok(kiln_stream_synchronize(s));
  assert_int_equal(sink.count, 9);
  check_call(&sink, 8, KILN_TRACE_COMPLETED, KILN_TRACE_LAUNCH, s, 4);
  check_ok(kiln_stream_synchronize(other));
  stop();
  assert_int_equal(sink.count, 10);
  check_call(&sink, 9, KILN_TRACE_COMPLETED, KILN_TRACE_LAUNCH, other, 1);

  check_ok(kiln_event_destroy(e));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_stream_destroy(other));
  check_ok(kiln_module_destroy(m));
}

/* A blocking read reports what its stream queued before it, then is
 * heard queued itself; destroying the stream reports the read. */
static void a_read_and_a_stream_destroy_report_completions(void **state) {
  fake_fixture *f = *state;
  kiln_module *m;
  kiln_kernel *k = kernel_k(f->ctx, &m);
  kiln_stream *s;
  kiln_buffer *b;
  check_ok(kiln_stream_create(f->ctx, &s));
  check_ok(kiln_buffer_create(f->ctx, 16, 0, &b));
  unsigned char bytes[16];

  trace_sink sink;
  start(&sink);
  check_ok(kiln_launch(s, k, &one, NULL, 0));
  check_ok(kiln_buffer_read(s, b, 0, bytes, 16));
  assert_int_equal(sink.count, 3);
  check_call(&sink, 1, KILN_TRACE_COMPLETED, KILN_TRACE_LAUNCH, s, 0);
  check_call(&sink, 2, KILN_TRACE_QUEUED, KILN_TRACE_READ, s, 2);
  check_ok(kiln_stream_destroy(s));
  stop();
  assert_int_equal(sink.count, 4);
  check_call(&sink, 3, KILN_TRACE_COMPLETED, KILN_TRACE_READ, s, 2);
  assert_int_equal(sink.seen[3].bytes, 16);

  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_module_destroy(m));
}

/* Destroying a context reports the commands it still had. */
static void a_context_destroy_reports_the_rest(void **state) {
  (void)state;
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_stream *s;
  check_ok(kiln_context_default_stream(ctx, &s));
  kiln_event *e;
  check_ok(kiln_event_create(ctx, &e));
  trace_sink sink;
  start(&sink);
  check_ok(kiln_event_record(e, NULL));
  check_ok(kiln_event_destroy(e));
  assert_int_equal(sink.count, 1);
  check_ok(kiln_context_destroy(ctx));
  stop();
  assert_int_equal(sink.count, 2);
  check_call(&sink, 1, KILN_TRACE_COMPLETED, KILN_TRACE_RECORD, s, 0);
}

/* Without KILN_TRACE_COMPLETIONS nothing is timed: no event is recorded
 * beyond the program's own, and no completion is heard. Captured commands
 * are not timed either (nor traced); their graph's replay is. */
static void timing_costs_nothing_unless_asked(void **state) {
  fake_fixture *f = *state;
  kiln_module *m;
  kiln_kernel *k = kernel_k(f->ctx, &m);
  kiln_stream *s;
  check_ok(kiln_stream_create(f->ctx, &s));
  trace_sink sink;
  memset(&sink, 0, sizeof sink);
  unsigned records = f->fb.calls[FAKE_OP_EVENT_RECORD];
  kiln_set_trace_handler(collect, &sink);
  check_ok(kiln_launch(s, k, &one, NULL, 0));
  check_ok(kiln_stream_synchronize(s));
  assert_int_equal(f->fb.calls[FAKE_OP_EVENT_RECORD], records);
  assert_int_equal(sink.count, 1);

  start(&sink);
  check_ok(kiln_stream_begin_capture(s));
  check_ok(kiln_launch(s, k, &one, NULL, 0));
  kiln_graph *g;
  check_ok(kiln_stream_end_capture(s, &g));
  assert_int_equal(sink.count, 0);
  assert_int_equal(f->fb.calls[FAKE_OP_EVENT_RECORD], records);
  /* The replay is one command, queued and completed, timed as a whole. */
  check_ok(kiln_graph_launch(g, s));
  check_ok(kiln_stream_synchronize(s));
  stop();
  assert_int_equal(sink.count, 2);
  assert_int_equal(sink.seen[0].kind, KILN_TRACE_GRAPH_LAUNCH);
  assert_int_equal(sink.seen[0].phase, KILN_TRACE_QUEUED);
  assert_int_equal(sink.seen[1].kind, KILN_TRACE_GRAPH_LAUNCH);
  assert_int_equal(sink.seen[1].phase, KILN_TRACE_COMPLETED);

  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_module_destroy(m));
}

/* A handler that stops asking for completions hears none of the commands
 * still waiting, and later commands are not timed. */
static void completions_stop_with_the_flag(void **state) {
  fake_fixture *f = *state;
  kiln_module *m;
  kiln_kernel *k = kernel_k(f->ctx, &m);
  trace_sink sink;
  start(&sink);
  check_ok(kiln_launch(NULL, k, &one, NULL, 0));
  kiln_set_trace_handler(collect, &sink);
  check_ok(kiln_launch(NULL, k, &one, NULL, 0));
  check_ok(kiln_context_synchronize(f->ctx));
  stop();
  assert_int_equal(sink.count, 2);
  assert_int_equal(sink.completed, 0);
  assert_int_equal(sink.seen[1].id, 0);
  check_ok(kiln_module_destroy(m));
}

/* A program that never waits on the host still hears of completions,
 * each time another 1024 commands wait to be reported. */
static void a_backlog_is_reported_without_a_wait(void **state) {
  fake_fixture *f = *state;
  kiln_module *m;
  kiln_kernel *k = kernel_k(f->ctx, &m);
  check_ok(kiln_context_synchronize(f->ctx));
  trace_sink sink;
  start(&sink);
  sink.keep_all = true;
  for (int i = 0; i < 1023; i++) check_ok(kiln_launch(NULL, k, &one, NULL, 0));
  assert_int_equal(sink.completed, 0);
  check_ok(kiln_launch(NULL, k, &one, NULL, 0));
  stop();
  assert_int_equal(sink.completed, 1024);
  check_ok(kiln_module_destroy(m));
}

/* Threads that queue and wait at once: each command is heard completed
 * once, with the number it was queued with. */
typedef struct tally {
  atomic_ulong queued, completed;
  _Atomic uint64_t queued_ids, completed_ids;
} tally;

static void count(const kiln_trace_command *c, void *user_data) {
  tally *t = user_data;
  if (c->phase == KILN_TRACE_QUEUED) {
    atomic_fetch_add(&t->queued, 1);
    atomic_fetch_add(&t->queued_ids, c->id);
  } else {
    atomic_fetch_add(&t->completed, 1);
    atomic_fetch_add(&t->completed_ids, c->id);
  }
}

typedef struct worker {
  kiln_context *ctx;
  kiln_status st;
} worker;

enum { WORKERS = 2, COMMANDS = 200 };

/* Writes to a buffer of its own: the fake's launches keep a log that
 * threads would share. */
static void *work(void *arg) {
  worker *w = arg;
  kiln_stream *s;
  kiln_buffer *b;
  const unsigned char bytes[16] = {0};
  w->st = kiln_stream_create(w->ctx, &s);
  if (w->st == KILN_OK) w->st = kiln_buffer_create(w->ctx, 16, 0, &b);
  for (int i = 0; w->st == KILN_OK && i < COMMANDS; i++) {
    w->st = kiln_buffer_write(s, b, 0, bytes, 16);
    if (w->st == KILN_OK && i % 50 == 49) w->st = kiln_stream_synchronize(s);
    if (w->st == KILN_OK && i % 70 == 69)
      w->st = kiln_context_synchronize(w->ctx);
  }
  if (w->st == KILN_OK) w->st = kiln_buffer_destroy(b);
  if (w->st == KILN_OK) w->st = kiln_stream_destroy(s);
  return NULL;
}

static void threads_hear_each_completion_once(void **state) {
  fake_fixture *f = *state;
  tally t;
  memset(&t, 0, sizeof t);
  check_ok(kiln_set_trace_handler_ex(count, KILN_TRACE_COMPLETIONS, &t));
  pthread_t threads[WORKERS];
  worker w[WORKERS];
  for (int i = 0; i < WORKERS; i++) {
    w[i] = (worker){f->ctx, KILN_OK};
    assert_int_equal(pthread_create(&threads[i], NULL, work, &w[i]), 0);
  }
  for (int i = 0; i < WORKERS; i++) {
    pthread_join(threads[i], NULL);
    check_ok(w[i].st);
  }
  check_ok(kiln_context_synchronize(f->ctx));
  stop();
  assert_int_equal(t.queued, WORKERS * COMMANDS);
  assert_int_equal(t.completed, WORKERS * COMMANDS);
  assert_int_equal(t.completed_ids, t.queued_ids);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(a_stream_wait_reports_its_commands,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(
          an_event_wait_reports_what_came_before_its_record,
          fake_fixture_setup, fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(
          a_read_and_a_stream_destroy_report_completions, fake_fixture_setup,
          fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(a_context_destroy_reports_the_rest,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(timing_costs_nothing_unless_asked,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(completions_stop_with_the_flag,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(a_backlog_is_reported_without_a_wait,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
      cmocka_unit_test_setup_teardown(threads_hear_each_completion_once,
                                      fake_fixture_setup,
                                      fake_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
