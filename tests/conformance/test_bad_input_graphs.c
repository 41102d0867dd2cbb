/* The bad-input cases of graphs: capture, replay, updates, destroy. */
#include "bad_input.h"

void bad_graph_calls(void **state) {
  (void)state;
  bad_fixture_init();
  int before = bad_failures();
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_begin_capture(NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_begin_capture(fx.dead_stream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_begin_capture(AS(kiln_stream, fx.buf)));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_end_capture(NULL, &out.graph));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_end_capture(fx.dead_stream, &out.graph));
  BAD(KILN_ERROR_INVALID_STATE, kiln_stream_end_capture(fx.stream, &out.graph));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_is_capturing(NULL, &out.capturing));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_is_capturing(AS(kiln_stream, fx.ev), &out.capturing));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_stream_is_capturing(fx.stream, NULL));

  /* A graph of one launch of fx.add on fx.buf. */
  const kiln_launch_config c = {{1, 1, 1}, {64, 1, 1}, 0};
  const kiln_arg args[3] = {kiln_arg_buffer(fx.buf, 0), kiln_arg_u32(64),
                            kiln_arg_u32(1)};
  check_ok(kiln_stream_begin_capture(fx.stream));
  BAD(KILN_ERROR_INVALID_STATE, kiln_stream_begin_capture(fx.stream));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_stream_end_capture(fx.stream, NULL));
  check_ok(kiln_launch(fx.stream, fx.add, &c, args, 3));
  kiln_graph *g, *dead;
  check_ok(kiln_stream_end_capture(fx.stream, &g));
  check_ok(kiln_stream_begin_capture(fx.stream));
  check_ok(kiln_stream_end_capture(fx.stream, &dead));
  check_ok(kiln_graph_destroy(dead));

  BAD(KILN_ERROR_INVALID_HANDLE, kiln_graph_launch(NULL, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_graph_launch(dead, fx.stream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_graph_launch(AS(kiln_graph, fx.stream), fx.stream));
  BAD(KILN_ERROR_WRONG_CONTEXT, kiln_graph_launch(g, fx.other_stream));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_graph_launch(g, fx.dead_stream));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_graph_launch_count(NULL, &out.count));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_graph_launch_count(dead, &out.count));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_graph_launch_count(g, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_graph_set_arguments(NULL, 0, args, 3));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_graph_set_arguments(dead, 0, args, 3));
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_graph_set_arguments(g, 1, args, 3));
  BAD(KILN_ERROR_OUT_OF_RANGE, kiln_graph_set_arguments(g, SIZE_MAX, args, 3));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_graph_set_arguments(g, 0, NULL, 3));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_graph_set_arguments(g, 0, args, 2));
  const kiln_arg foreign[3] = {kiln_arg_buffer(fx.other_buf, 0),
                               kiln_arg_u32(64), kiln_arg_u32(1)};
  BAD(KILN_ERROR_WRONG_CONTEXT, kiln_graph_set_arguments(g, 0, foreign, 3));
  const kiln_arg freed[3] = {kiln_arg_buffer(fx.dead_buf, 0), kiln_arg_u32(64),
                             kiln_arg_u32(1)};
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_graph_set_arguments(g, 0, freed, 3));
  BAD_AS("kiln_buffer_destroy", KILN_ERROR_INVALID_STATE,
         kiln_buffer_destroy(fx.buf));
  BAD(KILN_OK, kiln_graph_launch(g, NULL));
  BAD(KILN_OK, kiln_graph_destroy(NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_graph_destroy(dead));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_graph_destroy(AS(kiln_graph, fx.ev)));
  check_ok(kiln_graph_destroy(g));

  /* Branches (kiln.h): a joined stream is capturing but does not end the
   * capture; one never joined back makes the capture fail; another
   * capture cannot wait on this one's record. */
  kiln_stream *joined, *apart;
  check_ok(kiln_stream_create(conf.ctx, &joined));
  check_ok(kiln_stream_create(conf.ctx, &apart));
  check_ok(kiln_stream_begin_capture(fx.stream));
  check_ok(kiln_event_record(fx.ev, fx.stream));
  check_ok(kiln_stream_wait_event(joined, fx.ev));
  BAD(KILN_ERROR_INVALID_STATE, kiln_stream_end_capture(joined, &out.graph));
  BAD(KILN_ERROR_INVALID_STATE, kiln_stream_synchronize(joined));
  BAD(KILN_ERROR_INVALID_STATE, kiln_stream_begin_capture(joined));
  check_ok(kiln_stream_begin_capture(apart));
  BAD(KILN_ERROR_INVALID_STATE, kiln_stream_wait_event(apart, fx.ev));
  check_ok(kiln_stream_end_capture(apart, &g));
  check_ok(kiln_graph_destroy(g));
  BAD(KILN_ERROR_INVALID_STATE, kiln_stream_end_capture(fx.stream, &out.graph));
  bool capturing = true;
  check_ok(kiln_stream_is_capturing(joined, &capturing));
  if (capturing) fail_msg("a stream of a discarded capture still captures");
  check_ok(kiln_stream_destroy(apart));
  check_ok(kiln_stream_destroy(joined));
  bad_finish(before);
}
