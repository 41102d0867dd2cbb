/* Trace hooks: the door (core/submit/submit.c) tells the handler in force of each
 * command it queues; KILN_TRACE=log's handler writes a line to the log. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

_Atomic(kiln_trace_handler) kiln_trace_current;

/* The handler's user data, set with it: the door reads the pair under the
 * lock, only once its one look saw a handler. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static kiln_trace_handler handler;
static void *handler_data;

void kiln_set_trace_handler(kiln_trace_handler h, void *user_data) {
  pthread_mutex_lock(&lock);
  handler = h;
  handler_data = user_data;
  atomic_store_explicit(&kiln_trace_current, h, memory_order_relaxed);
  pthread_mutex_unlock(&lock);
}

static kiln_trace_kind public_kind(kiln_command_kind kind) {
  switch (kind) {
  case KILN_COMMAND_LAUNCH: return KILN_TRACE_LAUNCH;
  case KILN_COMMAND_COPY: return KILN_TRACE_COPY;
  case KILN_COMMAND_FILL:
  case KILN_COMMAND_FILL_HOST: return KILN_TRACE_FILL;
  case KILN_COMMAND_RECORD: return KILN_TRACE_RECORD;
  case KILN_COMMAND_WAIT: return KILN_TRACE_WAIT;
  case KILN_COMMAND_WRITE: return KILN_TRACE_WRITE;
  case KILN_COMMAND_READ: return KILN_TRACE_READ;
  case KILN_COMMAND_WRITE_ASYNC: return KILN_TRACE_WRITE_ASYNC;
  case KILN_COMMAND_READ_ASYNC: return KILN_TRACE_READ_ASYNC;
  case KILN_COMMAND_COPY_PEER: return KILN_TRACE_COPY_PEER;
  case KILN_COMMAND_WAIT_NATIVE: return KILN_TRACE_WAIT_NATIVE;
  }
  return KILN_TRACE_LAUNCH;
}

void kiln_trace(kiln_stream *s, const kiln_command *c) {
  pthread_mutex_lock(&lock);
  kiln_trace_handler h = handler;
  void *data = handler_data;
  pthread_mutex_unlock(&lock);
  if (!h) return;
  kiln_trace_command t;
  memset(&t, 0, sizeof t);
  t.kind = public_kind(c->kind);
  t.stream = s;
  t.context = s->base.context;
  if (c->kind == KILN_COMMAND_LAUNCH) {
    t.kernel_name = c->kernel->name;
    t.grid = c->config.grid;
    t.block = c->config.block;
  } else if (c->kind != KILN_COMMAND_RECORD && c->kind != KILN_COMMAND_WAIT &&
             c->kind != KILN_COMMAND_WAIT_NATIVE) {
    t.bytes = c->size;
  }
  h(&t, data);
}

/* ---- KILN_TRACE=log ------------------------------------------------------ */

static const char *const kind_names[] = {
    [KILN_TRACE_LAUNCH] = "launch",
    [KILN_TRACE_COPY] = "copy",
    [KILN_TRACE_FILL] = "fill",
    [KILN_TRACE_RECORD] = "event record",
    [KILN_TRACE_WAIT] = "event wait",
    [KILN_TRACE_WRITE] = "write",
    [KILN_TRACE_READ] = "read",
    [KILN_TRACE_WRITE_ASYNC] = "async write",
    [KILN_TRACE_READ_ASYNC] = "async read",
    [KILN_TRACE_COPY_PEER] = "peer copy",
    [KILN_TRACE_WAIT_NATIVE] = "native wait",
};

/* "trace: launch 'saxpy' grid 4x1x1 block 256x1x1 on stream 0x... of
 * context 0x..." or "trace: copy of 4096 bytes on stream ...". */
static void log_command(const kiln_trace_command *t, void *user_data) {
  (void)user_data;
  char what[192];
  if (t->kind == KILN_TRACE_LAUNCH)
    snprintf(what, sizeof what, "launch '%.96s' grid %ux%ux%u block %ux%ux%u",
             t->kernel_name, t->grid.x, t->grid.y, t->grid.z, t->block.x,
             t->block.y, t->block.z);
  else if (t->bytes)
    snprintf(what, sizeof what, "%s of %zu byte%s", kind_names[t->kind],
             t->bytes, t->bytes == 1 ? "" : "s");
  else
    snprintf(what, sizeof what, "%s", kind_names[t->kind]);
  char line[320];
  snprintf(line, sizeof line, "trace: %s on stream %p of context %p", what,
           (void *)t->stream, (void *)t->context);
  kiln_log_always(KILN_LOG_INFO, line);
}

kiln_status kiln_trace_from_env(void) {
  const char *v = kiln_getenv("KILN_TRACE");
  if (!v) return KILN_OK;
  if (strcmp(v, "log") != 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "KILN_TRACE=\"%.64s\" is no trace mode; it takes: "
                          "log (unset or empty: none)",
                          v);
  pthread_mutex_lock(&lock);
  if (!handler) {
    handler = log_command;
    handler_data = NULL;
    atomic_store_explicit(&kiln_trace_current, log_command,
                          memory_order_relaxed);
  }
  pthread_mutex_unlock(&lock);
  return KILN_OK;
}
