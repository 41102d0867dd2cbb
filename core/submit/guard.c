/* KILN_DEBUG and its mode `guard`: bytes of a known value around every
 * device buffer, read back once the host knows that the kernels which took
 * the buffer are done (kiln.h, "Debugging").
 *
 * Only launches are noted. Every transfer, copy and fill is checked against
 * the buffer's range before it reaches a backend, so only a kernel can
 * write outside a buffer (a backend's fill through kiln_fill is a launch
 * and is noted too, as are the built-in kernels that a graph's copies and
 * fills became, at each of its replays); noting transfers as well would
 * only make a buffer
 * written on one stream and computed on by another look shared, and so be
 * checked later. A noted buffer keeps the stream of its launches and that
 * stream's launch count at the last one, so each sync point reads the
 * guards of the buffers whose kernels it proves done, and only those, once
 * each.
 *
 * Every guard read and write goes through one internal stream of the
 * context, under one lock: a check never queues behind the caller's own
 * work on another stream, and a buffer cannot be released while its guards
 * are read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Neither 0, nor a small integer, nor a common float's byte: the values an
 * overrunning kernel writes most. MSVC's debug heap fills its guards with
 * the same byte, which some readers will recognise in a dump. */
#define GUARD_VALUE 0xfdu

typedef struct kiln_guard kiln_guard;

struct kiln_guard {
  pthread_mutex_t lock; /* the list, the guard fields of the context's
                           buffers, streams and events, `stream` and
                           `scratch` */
  kiln_stream *stream;  /* carries every guard read and write */
  kiln_buffer *pending; /* buffers that kernels took since their check */
  unsigned char pattern[KILN_GUARD_BYTES]; /* what a guard holds */
  unsigned char scratch[KILN_GUARD_BYTES]; /* a guard as read back */
};

/* The guard_stream of a buffer that kernels of several streams took. */
static const kiln_stream several_streams;

/* ---- KILN_DEBUG ----------------------------------------------------------- */

static const struct debug_mode {
  const char *name;
  unsigned bit;
} debug_modes[] = {
    {"guard", KILN_DEBUG_GUARD},
    {"reorder", KILN_DEBUG_REORDER},
};
#define DEBUG_MODE_COUNT (sizeof debug_modes / sizeof debug_modes[0])

kiln_status kiln_debug_from_env(unsigned *out_modes) {
  const char *v = kiln_getenv("KILN_DEBUG");
  unsigned modes = 0;
  for (const char *p = v; p;) {
    size_t n = strcspn(p, ","), i = 0;
    while (i < DEBUG_MODE_COUNT && !(strlen(debug_modes[i].name) == n &&
                                     strncmp(p, debug_modes[i].name, n) == 0))
      i++;
    if (i == DEBUG_MODE_COUNT) {
      char known[128] = "";
      for (size_t j = 0; j < DEBUG_MODE_COUNT; j++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                 j ? ", " : "", debug_modes[j].name);
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "kiln_context_create: KILN_DEBUG=\"%s\" names "
                            "\"%.*s\", which is no debug mode; it takes a "
                            "comma-separated list of: %s (unset or empty: "
                            "none)",
                            v, (int)(n < 64 ? n : 64), p, known);
    }
    modes |= debug_modes[i].bit;
    p = p[n] ? p + n + 1 : NULL;
  }
  *out_modes = modes;
  return KILN_OK;
}

/* ---- Set-up ---------------------------------------------------------------- */

kiln_status kiln_guard_init(kiln_context *ctx, kiln_stream *stream) {
  kiln_guard *g = calloc(1, sizeof *g);
  if (!g || pthread_mutex_init(&g->lock, NULL) != 0) {
    free(g);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_context_create: out of host memory setting "
                          "up KILN_DEBUG=guard");
  }
  g->stream = stream;
  memset(g->pattern, GUARD_VALUE, sizeof g->pattern);
  ctx->guard = g;
  kiln_log(KILN_LOG_INFO,
           "KILN_DEBUG=guard: %u guard bytes around every buffer of the "
           "context, checked at its sync points",
           KILN_GUARD_BYTES);
  return KILN_OK;
}

void kiln_guard_deinit(kiln_context *ctx) {
  pthread_mutex_destroy(&ctx->guard->lock);
  free(ctx->guard);
  ctx->guard = NULL;
}

/* ---- Writing the guards ---------------------------------------------------- */

/* Writes the guard value into one side of buf, at `offset` in the
 * allocation; the lock is held. */
static kiln_status write_side(kiln_guard *g, kiln_buffer *buf, size_t offset) {
  kiln_context *ctx = buf->base.context;
  return kiln_context_result(ctx, ctx->ops->buffer_write(g->stream, buf, offset,
                                                         g->pattern,
                                                         buf->guard));
}

/* Writes the chosen sides and waits until they are in memory, before any
 * kernel of any stream can run over them; the lock is held. */
static kiln_status write_guards(kiln_guard *g, kiln_buffer *buf, bool before,
                                bool after, const char *fn,
                                const char *on_timeout) {
  kiln_status st = KILN_OK;
  if (before) st = write_side(g, buf, 0);
  if (st == KILN_OK && after)
    st = write_side(g, buf, buf->guard + buf->size);
  if (st == KILN_OK) st = kiln_stream_wait(g->stream, fn, on_timeout);
  return st;
}

kiln_status kiln_guard_arm(kiln_buffer *buf) {
  kiln_guard *g = buf->base.context->guard;
  pthread_mutex_lock(&g->lock);
  kiln_status st = write_guards(g, buf, true, true, "kiln_buffer_create",
                                "the buffer was not created");
  pthread_mutex_unlock(&g->lock);
  return st;
}

/* ---- Noting launches ------------------------------------------------------- */

void kiln_guard_note_launch(kiln_stream *s, const kiln_arg *args,
                            size_t count) {
  kiln_guard *g = s->base.context->guard;
  pthread_mutex_lock(&g->lock);
  uint64_t launch = ++s->guard_launches;
  for (size_t i = 0; i < count; i++) {
    if (args[i].type != KILN_ARG_BUFFER) continue;
    /* The caller's handle is const; the bookkeeping is the core's. */
    kiln_buffer *b = (kiln_buffer *)args[i].value.buffer.buffer;
    if (b->guard == 0) continue; /* a module's global */
    if (!b->guard_stream) {
      b->guard_stream = s;
      b->guard_next = g->pending;
      g->pending = b;
    } else if (b->guard_stream != s) {
      b->guard_stream = &several_streams;
    }
    b->guard_launch = launch;
  }
  pthread_mutex_unlock(&g->lock);
}

kiln_status kiln_guard_keep_for_replay(kiln_graph *g, const kiln_arg *args,
                                       size_t count) {
  for (size_t i = 0; i < count; i++) {
    if (args[i].type != KILN_ARG_BUFFER) continue;
    if (g->guard_arg_count == g->guard_arg_cap) {
      size_t cap = g->guard_arg_cap ? g->guard_arg_cap * 2 : 8;
      kiln_arg *more = realloc(g->guard_args, cap * sizeof *more);
      if (!more)
        return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                              "KILN_DEBUG=guard: out of host memory noting "
                              "a graph's copy and fill kernels");
      g->guard_args = more;
      g->guard_arg_cap = cap;
    }
    g->guard_args[g->guard_arg_count++] = args[i];
  }
  return KILN_OK;
}

void kiln_guard_note_replay(kiln_stream *s, const kiln_graph *g) {
  if (g->guard_arg_count)
    kiln_guard_note_launch(s, g->guard_args, g->guard_arg_count);
}

void kiln_guard_note_record(kiln_event *e, kiln_stream *s) {
  kiln_guard *g = s->base.context->guard;
  pthread_mutex_lock(&g->lock);
  e->guard_stream = s;
  e->guard_mark = s->guard_launches;
  pthread_mutex_unlock(&g->lock);
}

/* Takes buf off the list if it is there; the lock is held. */
static void unlist(kiln_guard *g, kiln_buffer *buf) {
  if (!buf->guard_stream) return;
  for (kiln_buffer **link = &g->pending; *link; link = &(*link)->guard_next)
    if (*link == buf) {
      *link = buf->guard_next;
      break;
    }
  buf->guard_next = NULL;
  buf->guard_stream = NULL;
}

void kiln_guard_forget(kiln_buffer *buf) {
  kiln_guard *g = buf->base.context->guard;
  pthread_mutex_lock(&g->lock);
  unlist(g, buf);
  pthread_mutex_unlock(&g->lock);
}

/* ---- Checking -------------------------------------------------------------- */

/* What one check found: the first corrupted buffer's message (kept here,
 * since reading the next buffer may set the thread's error) and the count
 * of corrupted buffers. */
typedef struct report {
  size_t corrupted;
  char first[768];
} report;

/* The first and last changed byte of one side, if any. */
typedef struct side_change {
  bool changed;
  size_t first, last;
} side_change;

/* Reads the side of buf at `offset` in the allocation and finds what
 * changed in it; the lock is held. */
static kiln_status read_side(kiln_guard *g, kiln_buffer *buf, size_t offset,
                             side_change *out) {
  kiln_context *ctx = buf->base.context;
  kiln_status st = kiln_context_result(
      ctx, ctx->ops->buffer_read(g->stream, buf, offset, g->scratch,
                                 buf->guard));
  side_change c = {false, 0, 0};
  for (size_t i = 0; st == KILN_OK && i < buf->guard; i++)
    if (g->scratch[i] != GUARD_VALUE) {
      if (!c.changed) c.first = i;
      c.changed = true;
      c.last = i;
    }
  *out = c;
  return st;
}

/* "before its start at offsets -4 to -1" or "after its end at offset
 * size+0": offsets counted from the buffer's first byte. */
static void describe_side(char *out, size_t size, const side_change *c,
                          bool before, size_t guard) {
  char first[32], last[32];
  if (before) {
    snprintf(first, sizeof first, "-%zu", guard - c->first);
    snprintf(last, sizeof last, "-%zu", guard - c->last);
  } else {
    snprintf(first, sizeof first, "size+%zu", c->first);
    snprintf(last, sizeof last, "size+%zu", c->last);
  }
  if (c->first == c->last)
    snprintf(out, size, "%s at offset %s",
             before ? "before its start" : "after its end", first);
  else
    snprintf(out, size, "%s at offsets %s to %s",
             before ? "before its start" : "after its end", first, last);
}

/* Reads buf's guards; a changed side is reported (logged, and kept in r
 * when it is the first) and written again. The lock is held. KILN_OK
 * unless the guards could not be read or written. */
static kiln_status check_one(kiln_guard *g, kiln_buffer *buf, const char *fn,
                             report *r) {
  side_change b, a;
  kiln_status st = read_side(g, buf, 0, &b);
  if (st == KILN_OK) st = read_side(g, buf, buf->guard + buf->size, &a);
  if (st != KILN_OK) return st;
  if (!b.changed && !a.changed) return KILN_OK;

  char sides[240] = "", side[112];
  if (b.changed) {
    describe_side(side, sizeof side, &b, true, buf->guard);
    snprintf(sides, sizeof sides, "%s", side);
  }
  if (a.changed) {
    describe_side(side, sizeof side, &a, false, buf->guard);
    snprintf(sides + strlen(sides), sizeof sides - strlen(sides), "%s%s",
             b.changed ? " and " : "", side);
  }
  char message[sizeof r->first];
  snprintf(message, sizeof message,
           "%s: KILN_DEBUG=guard: %sbuffer %p (%zu bytes at device address "
           "0x%llx) was written outside its range, %s, by a kernel since "
           "its guard bytes were last checked (one that took this buffer, "
           "or ran past one near it). They hold 0x%02x again, so this is "
           "reported once",
           fn, buf->base.internal ? "kiln's internal " : "", (void *)buf,
           buf->size, (unsigned long long)(buf->device_address + buf->guard),
           sides, GUARD_VALUE);
  kiln_log(KILN_LOG_ERROR, "%s", message);
  if (r->corrupted++ == 0) kiln_strlcpy(r->first, message, sizeof r->first);
  return write_guards(g, buf, b.changed, a.changed, fn,
                      "the guard bytes could not be written again");
}

/* The status of a check that ended with `st`. */
static kiln_status finish(const report *r, kiln_status st) {
  if (st != KILN_OK || r->corrupted == 0) return st;
  if (r->corrupted == 1)
    return kiln_set_error(KILN_ERROR_MEMORY_CORRUPTION, "%s", r->first);
  return kiln_set_error(KILN_ERROR_MEMORY_CORRUPTION,
                        "%s (and so %s %zu more buffer%s, each logged at the "
                        "error level: KILN_LOG=error)",
                        r->first, r->corrupted == 2 ? "was" : "were",
                        r->corrupted - 1, r->corrupted == 2 ? "" : "s");
}

typedef bool (*due_fn)(const kiln_buffer *buf, const void *arg);

/* Checks the listed buffers that due() picks, taking them off the list. A
 * buffer whose guards cannot be read stays on it, as do those after it. */
static kiln_status check_due(kiln_context *ctx, const char *fn, due_fn due,
                             const void *arg) {
  if (atomic_load(&ctx->lost)) return KILN_OK;
  kiln_guard *g = ctx->guard;
  report r = {0, ""};
  kiln_status st = KILN_OK;
  pthread_mutex_lock(&g->lock);
  for (kiln_buffer **link = &g->pending; *link && st == KILN_OK;) {
    kiln_buffer *b = *link;
    if (!due(b, arg)) {
      link = &b->guard_next;
      continue;
    }
    st = check_one(g, b, fn, &r);
    if (st == KILN_OK) {
      *link = b->guard_next;
      b->guard_next = NULL;
      b->guard_stream = NULL;
    }
  }
  pthread_mutex_unlock(&g->lock);
  return finish(&r, st);
}

static bool launched_on(const kiln_buffer *buf, const void *stream) {
  return buf->guard_stream == stream;
}

static bool launched_before(const kiln_buffer *buf, const void *event) {
  const kiln_event *e = event;
  return buf->guard_stream == e->guard_stream &&
         buf->guard_launch <= e->guard_mark;
}

static bool any(const kiln_buffer *buf, const void *arg) {
  (void)buf;
  (void)arg;
  return true;
}

kiln_status kiln_guard_check_stream(kiln_stream *s, const char *fn) {
  return check_due(s->base.context, fn, launched_on, s);
}

kiln_status kiln_guard_check_event(kiln_event *e, const char *fn) {
  return check_due(e->base.context, fn, launched_before, e);
}

kiln_status kiln_guard_check_launched(kiln_context *ctx, const char *fn) {
  return check_due(ctx, fn, any, NULL);
}

kiln_status kiln_guard_check_buffer(kiln_buffer *buf, const char *fn) {
  kiln_context *ctx = buf->base.context;
  if (buf->guard == 0 || atomic_load(&ctx->lost)) return KILN_OK;
  kiln_guard *g = ctx->guard;
  report r = {0, ""};
  pthread_mutex_lock(&g->lock);
  kiln_status st = check_one(g, buf, fn, &r);
  if (st == KILN_OK) unlist(g, buf);
  pthread_mutex_unlock(&g->lock);
  return finish(&r, st);
}

kiln_status kiln_guard_check_all(kiln_context *ctx, const char *fn) {
  if (atomic_load(&ctx->lost)) return KILN_OK;
  kiln_guard *g = ctx->guard;
  report r = {0, ""};
  kiln_status st = KILN_OK;
  pthread_mutex_lock(&g->lock);
  for (kiln_object *o = ctx->objects.next; o != &ctx->objects && st == KILN_OK;
       o = o->next) {
    kiln_buffer *b = (kiln_buffer *)o;
    if (o->type == KILN_OBJECT_BUFFER && b->guard)
      st = check_one(g, b, fn, &r);
  }
  if (st == KILN_OK)
    while (g->pending) unlist(g, g->pending);
  pthread_mutex_unlock(&g->lock);
  return finish(&r, st);
}
