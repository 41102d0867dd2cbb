/* Graphs with branches: captures that fork onto other streams through
 * events and join back (kiln.h, "Branches"), on every backend; that the
 * branches run at once, on CUDA and HIP. */
#include <stdlib.h>

#include "conformance.h"

/* A capture that forks onto two other streams through an event and joins
 * back: each branch works on its own copy of what the fork left, long
 * enough that a lost edge shows, and the stream that began the capture
 * gathers both. Replayed on each of the three streams. */
static void branches_keep_their_edges(void **state) {
  (void)state;
  enum { N = 1 << 16, R1 = 1500, R2 = 2500 };
  kiln_buffer *a, *b, *c, *d;
  check_ok(kiln_buffer_create(conf.ctx, N * 4, 0, &a));
  check_ok(kiln_buffer_create(conf.ctx, N * 4, 0, &b));
  check_ok(kiln_buffer_create(conf.ctx, N * 4, 0, &c));
  check_ok(kiln_buffer_create(conf.ctx, N * 8, 0, &d));
  kiln_stream *s[3];
  kiln_event *fork, *join[2];
  for (int i = 0; i < 3; i++) check_ok(kiln_stream_create(conf.ctx, &s[i]));
  check_ok(kiln_event_create(conf.ctx, &fork));
  for (int i = 0; i < 2; i++) check_ok(kiln_event_create(conf.ctx, &join[i]));
  const uint32_t seven = 7, zero = 0;
  kiln_graph *g;
  check_ok(kiln_stream_begin_capture(s[0]));
  check_ok(kiln_buffer_fill(s[0], a, 0, N * 4, &seven, 4));
  check_ok(kiln_event_record(fork, s[0]));
  kiln_buffer *mine[2] = {b, c};
  const uint32_t rounds[2] = {R1, R2};
  for (int i = 0; i < 2; i++) {
    check_ok(kiln_stream_wait_event(s[1 + i], fork));
    check_ok(kiln_buffer_copy(s[1 + i], mine[i], 0, a, 0, N * 4));
    conf_busy(s[1 + i], mine[i], N, rounds[i]);
    check_ok(kiln_event_record(join[i], s[1 + i]));
  }
  for (int i = 0; i < 2; i++) check_ok(kiln_stream_wait_event(s[0], join[i]));
  check_ok(kiln_buffer_copy(s[0], d, 0, b, 0, N * 4));
  check_ok(kiln_buffer_copy(s[0], d, N * 4, c, 0, N * 4));
  conf_add_u32(s[0], d, 0, 2 * N, 1);
  check_ok(kiln_stream_end_capture(s[0], &g));
  const uint32_t want[2] = {conf_lcg(7, R1) + 1, conf_lcg(7, R2) + 1};
  uint32_t *got = malloc(N * 8);
  assert_non_null(got);
  for (int round = 0; round < 3; round++) {
    kiln_stream *on = s[round];
    check_ok(kiln_buffer_fill(on, b, 0, N * 4, &zero, 4));
    check_ok(kiln_buffer_fill(on, c, 0, N * 4, &zero, 4));
    check_ok(kiln_buffer_fill(on, d, 0, N * 8, &zero, 4));
    check_ok(kiln_graph_launch(g, on));
    check_ok(kiln_buffer_read(on, d, 0, got, N * 8));
    for (size_t i = 0; i < 2 * (size_t)N; i++)
      if (got[i] != want[i / N])
        fail_msg("replay %d on stream %d: word %zu is %u, expected %u (an "
                 "edge between the graph's branches was lost)",
                 round, round, i, got[i], want[i / N]);
  }
  free(got);
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_event_destroy(fork));
  for (int i = 0; i < 2; i++) check_ok(kiln_event_destroy(join[i]));
  for (int i = 0; i < 3; i++) check_ok(kiln_stream_destroy(s[i]));
  kiln_buffer *all[4] = {a, b, c, d};
  for (int i = 0; i < 4; i++) check_ok(kiln_buffer_destroy(all[i]));
}

/* Two branches of one graph that finish only by running at once: each
 * kernel raises its flag and polls for the other's (conf_handshake). */
static void branches_run_at_once(void **state) {
  (void)state;
  if (conf.backend == KILN_BACKEND_VULKAN)
    kiln_skip("Vulkan promises no overlap of commands on a queue, so the "
              "branches of a graph may run one after the other there "
              "(kiln-bench's graph section measures what a driver does)");
  kiln_buffer *flags;
  check_ok(kiln_buffer_create(conf.ctx, 16, 0, &flags));
  kiln_stream *s0, *s1;
  check_ok(kiln_stream_create(conf.ctx, &s0));
  check_ok(kiln_stream_create(conf.ctx, &s1));
  kiln_event *fork, *join;
  check_ok(kiln_event_create(conf.ctx, &fork));
  check_ok(kiln_event_create(conf.ctx, &join));
  const uint32_t zero = 0;
  const kiln_launch_config one = kiln_launch_config_1d(1, 1);
  kiln_graph *g;
  check_ok(kiln_stream_begin_capture(s0));
  check_ok(kiln_buffer_fill(s0, flags, 0, 16, &zero, 4));
  check_ok(kiln_event_record(fork, s0));
  check_ok(kiln_stream_wait_event(s1, fork));
  for (uint32_t me = 0; me < 2; me++) {
    const kiln_arg args[3] = {kiln_arg_buffer(flags, 0), kiln_arg_u32(1 - me),
                              kiln_arg_u32(1u << 24)};
    check_ok(kiln_launch(me ? s0 : s1, conf_kernel("conf_handshake"), &one,
                         args, 3));
  }
  check_ok(kiln_event_record(join, s1));
  check_ok(kiln_stream_wait_event(s0, join));
  check_ok(kiln_stream_end_capture(s0, &g));
  for (int round = 0; round < 3; round++) {
    check_ok(kiln_graph_launch(g, s0));
    uint32_t got[4];
    check_ok(kiln_buffer_read(s0, flags, 0, got, sizeof got));
    if (got[2] != 1 || got[3] != 1)
      fail_msg("replay %d: the branches' kernels saw each other %s and %s: "
               "they ran one after the other",
               round, got[2] ? "yes" : "no", got[3] ? "yes" : "no");
  }
  check_ok(kiln_graph_destroy(g));
  check_ok(kiln_event_destroy(fork));
  check_ok(kiln_event_destroy(join));
  check_ok(kiln_stream_destroy(s0));
  check_ok(kiln_stream_destroy(s1));
  check_ok(kiln_buffer_destroy(flags));
}

int conf_run_branch_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(branches_keep_their_edges),
      CONF_TEST(branches_run_at_once),
  };
  return cmocka_run_group_tests_name("branches", tests, NULL, NULL);
}
