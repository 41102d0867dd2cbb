/* The fake backend's objects (fake_backend.c), shared with the files that
 * fill parts of its table (fake_interop.c). Private to tests/core. */
#ifndef KILN_TESTS_FAKE_OBJECTS_H
#define KILN_TESTS_FAKE_OBJECTS_H

#include <pthread.h>

#include "fake_backend.h"

/* Written by every init into the bytes past the core's struct and checked by
 * every deinit: a core that allocated less than ops->X_size, or handed one
 * object's deinit another's block, trips it (or AddressSanitizer). */
#define FAKE_TAG 0x66616b65u

typedef struct fake_stream fake_stream;

typedef struct fake_context {
  kiln_context base;
  /* KILN_DEBUG=reorder (fake_queue.c): the streams that hold work, the
   * one that began holding last first, and the number of the next
   * command held; both under `queue_lock`. */
  pthread_mutex_t queue_lock;
  fake_stream *holding;
  uint64_t next_seq;
  uint32_t tag;
} fake_context;

typedef struct fake_buffer {
  kiln_buffer base;
  unsigned char *mem;
  uint32_t tag;
} fake_buffer;

typedef struct fake_host_buffer {
  kiln_host_buffer base;
  uint32_t tag;
} fake_host_buffer;

typedef struct fake_module {
  kiln_module base;
  char *text; /* every image's text, joined by spaces */
  uint32_t tag;
} fake_module;

typedef struct fake_kernel {
  kiln_kernel base;
  uint32_t tag;
} fake_kernel;

struct fake_cmd;

struct fake_stream {
  kiln_stream base;
  /* KILN_DEBUG=reorder: the commands held, oldest first, and the next
   * stream of the context's `holding` list; under the context's
   * queue_lock. */
  struct fake_cmd *head, *tail;
  fake_stream *next_holding;
  uint32_t tag;
};

typedef struct fake_event {
  kiln_event base;
  uint64_t ns; /* CLOCK_MONOTONIC at the last record */
  /* KILN_DEBUG=reorder, under the context's queue_lock: the stream and
   * number of the last record held, and the number of the last record
   * run; the record is pending while ran_seq < record_seq. */
  fake_stream *record_stream;
  uint64_t record_seq, ran_seq;
  uint32_t tag;
} fake_event;

/* One command of the fake's device, as its ops make it. A MOVE is a
 * transfer (write, copy, or one with a host buffer), `size` bytes from
 * src to dst. A WAIT held under KILN_DEBUG=reorder runs first the
 * commands of wait_stream numbered up to wait_seq (the event's record). */
typedef enum fake_cmd_kind {
  FAKE_CMD_MOVE,
  FAKE_CMD_FILL,
  FAKE_CMD_LAUNCH,
  FAKE_CMD_RECORD,
  FAKE_CMD_WAIT,
} fake_cmd_kind;

typedef struct fake_cmd {
  struct fake_cmd *next;
  fake_cmd_kind kind;
  uint64_t seq;
  unsigned char *dst;
  const unsigned char *src;
  size_t size;
  uint64_t pattern;
  size_t pattern_size;
  char kernel[64];
  kiln_launch_config config;
  kiln_packed_args args;
  fake_event *event;
  fake_stream *wait_stream;
  uint64_t wait_seq;
  /* A held buffer_write's bytes: the caller may reuse its own at once. */
  unsigned char data[];
} fake_cmd;

/* Does the work of c (fake_backend.c). */
kiln_status fake_run(const fake_cmd *c);

/* KILN_DEBUG=reorder (fake_queue.c). Without it fake_submit runs c at
 * once and the others do nothing. With it, fake_submit holds c on s (with
 * a copy of its source bytes if `copy_src`), and fake_flush, what every
 * host wait and every deinit does first, runs all the context's held
 * work: the stream that began holding last first, each stream's commands
 * in order, a WAIT running the recorded stream up to its record. The
 * first failure of a held command is returned (its message set). */
kiln_status fake_submit(kiln_stream *s, const fake_cmd *c, bool copy_src);
kiln_status fake_flush(kiln_context *ctx);
/* Whether the event's last record is still held (never, without the mode). */
bool fake_event_pending(kiln_event *e);
kiln_status fake_queue_init(kiln_context *ctx);
/* Runs what is held unless the context is abandoned, then frees it all. */
void fake_queue_deinit(kiln_context *ctx);

/* A command of a graph the fake built (fake_graph.c): what the op was
 * handed on the building stream, the arguments copied. `cmd` is the index
 * of the graph's g->cmds a launch came from, SIZE_MAX for the others. */
/* The kinds of the fake's graph nodes: the commands a graph can hold.
 * Named as the core named them before its commands had kinds of their own
 * (issue 28), which fake_backend.c and fake_graph.c still use. */
typedef enum fake_node_op {
  KILN_GRAPH_LAUNCH = KILN_COMMAND_LAUNCH,
  KILN_GRAPH_COPY = KILN_COMMAND_COPY,
  KILN_GRAPH_FILL = KILN_COMMAND_FILL,
  KILN_GRAPH_RECORD = KILN_COMMAND_RECORD,
  KILN_GRAPH_WAIT = KILN_COMMAND_WAIT,
  /* The shape of a build with branches (core/backend.h): graph_level,
   * graph_mark and graph_wait_mark. */
  FAKE_GRAPH_LEVEL = 100,
  FAKE_GRAPH_MARK,
  FAKE_GRAPH_WAIT_MARK,
} fake_node_op;

typedef struct fake_node {
  fake_node_op op;
  size_t cmd;
  kiln_kernel *kernel;
  kiln_launch_config config;
  kiln_packed_args packed;
  kiln_buffer *dst;
  const kiln_buffer *src;
  size_t dst_offset, src_offset, size;
  uint64_t pattern;
  size_t pattern_size;
  kiln_event *event;
  size_t lane; /* the building stream it came on, in order of first use */
  size_t mark; /* FAKE_GRAPH_MARK, FAKE_GRAPH_WAIT_MARK */
} fake_node;

/* Adds n to the graph that s builds (s->building). */
kiln_status fake_graph_add(kiln_stream *s, const fake_node *n);

/* The fake that owns an object: ops is the fake's first member. */
static inline fake_backend *fake_owner(const void *obj) {
  return (fake_backend *)((const kiln_object *)obj)->context->ops;
}

#endif /* KILN_TESTS_FAKE_OBJECTS_H */
