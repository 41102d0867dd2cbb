/* KILN_DEBUG=reorder on the fake backend: each stream's commands are held
 * and run only at a host wait (or a deinit), the stream that began holding
 * last first, so that work the program queued on one stream without
 * waiting for another's runs before that other's earlier work and the
 * program sees a wrong result. A held wait runs first the recorded
 * stream's commands up to the event's record, which is all that orders
 * streams, as on a device. Every host wait runs all held work: the order a
 * wait would impose is then only what the events say.
 *
 * Cycles cannot arise: a wait refers to the record that was last held
 * when the wait was, so every wait points at an earlier-numbered command.
 * Streams, events, buffers and kernels stay alive while commands refer to
 * them, as each of their deinits runs the held work first. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "fake_objects.h"

static bool reorder(const kiln_context *ctx) {
  return (ctx->debug & KILN_DEBUG_REORDER) != 0;
}

static void unhold(fake_context *c, fake_stream *s) {
  fake_stream **p = &c->holding;
  while (*p != s) p = &(*p)->next_holding;
  *p = s->next_holding;
  s->next_holding = NULL;
}

/* Runs s's held commands numbered up to `seq`, under the queue lock. */
static kiln_status run_until(fake_context *c, fake_stream *s, uint64_t seq) {
  kiln_status first = KILN_OK;
  while (s->head && s->head->seq <= seq) {
    fake_cmd *cmd = s->head;
    s->head = cmd->next;
    if (!s->head) {
      s->tail = NULL;
      unhold(c, s);
    }
    kiln_status st = cmd->kind == FAKE_CMD_WAIT
                         ? run_until(c, cmd->wait_stream, cmd->wait_seq)
                         : fake_run(cmd);
    if (cmd->kind == FAKE_CMD_RECORD && cmd->event->ran_seq < cmd->seq)
      cmd->event->ran_seq = cmd->seq;
    free(cmd);
    if (first == KILN_OK) first = st;
  }
  return first;
}

kiln_status fake_submit(kiln_stream *s, const fake_cmd *c, bool copy_src) {
  kiln_context *ctx = s->base.context;
  if (!reorder(ctx)) return fake_run(c);
  fake_cmd *held = malloc(sizeof *held + (copy_src ? c->size : 0));
  if (!held)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "fake: no memory to hold a command");
  *held = *c;
  held->next = NULL;
  if (copy_src) {
    memcpy(held->data, c->src, c->size);
    held->src = held->data;
  }
  fake_context *fc = (fake_context *)ctx;
  fake_stream *fs = (fake_stream *)s;
  pthread_mutex_lock(&fc->queue_lock);
  held->seq = ++fc->next_seq;
  fake_event *e = held->event;
  if (held->kind == FAKE_CMD_RECORD) {
    e->record_stream = fs;
    e->record_seq = held->seq;
  } else if (held->kind == FAKE_CMD_WAIT) {
    if (e->ran_seq >= e->record_seq) {
      /* The record has run: nothing to wait for. */
      pthread_mutex_unlock(&fc->queue_lock);
      free(held);
      return KILN_OK;
    }
    held->wait_stream = e->record_stream;
    held->wait_seq = e->record_seq;
  }
  if (fs->tail) {
    fs->tail->next = held;
  } else {
    fs->head = held;
    fs->next_holding = fc->holding;
    fc->holding = fs;
  }
  fs->tail = held;
  pthread_mutex_unlock(&fc->queue_lock);
  return KILN_OK;
}

kiln_status fake_flush(kiln_context *ctx) {
  if (!reorder(ctx)) return KILN_OK;
  fake_context *fc = (fake_context *)ctx;
  kiln_status first = KILN_OK;
  pthread_mutex_lock(&fc->queue_lock);
  while (fc->holding) {
    kiln_status st = run_until(fc, fc->holding, UINT64_MAX);
    if (first == KILN_OK) first = st;
  }
  pthread_mutex_unlock(&fc->queue_lock);
  return first;
}

bool fake_event_pending(kiln_event *e) {
  kiln_context *ctx = e->base.context;
  if (!reorder(ctx)) return false;
  fake_context *fc = (fake_context *)ctx;
  const fake_event *fe = (const fake_event *)e;
  pthread_mutex_lock(&fc->queue_lock);
  bool pending = fe->ran_seq < fe->record_seq;
  pthread_mutex_unlock(&fc->queue_lock);
  return pending;
}

kiln_status fake_queue_init(kiln_context *ctx) {
  fake_context *fc = (fake_context *)ctx;
  fc->holding = NULL;
  fc->next_seq = 0;
  if (pthread_mutex_init(&fc->queue_lock, NULL) != 0)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "fake: pthread_mutex_init failed");
  return KILN_OK;
}

void fake_queue_deinit(kiln_context *ctx) {
  fake_context *fc = (fake_context *)ctx;
  if (!ctx->abandoned) fake_flush(ctx);
  while (fc->holding) {
    fake_stream *s = fc->holding;
    while (s->head) {
      fake_cmd *next = s->head->next;
      free(s->head);
      s->head = next;
    }
    s->tail = NULL;
    fc->holding = s->next_holding;
    s->next_holding = NULL;
  }
  pthread_mutex_destroy(&fc->queue_lock);
}
