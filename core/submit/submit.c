/* The door of every operation queued on a stream. The public functions
 * check their arguments and build a kiln_command; kiln_submit alone then
 * decides what becomes of it: captured into the stream's graph or refused
 * there (the capture hook, core/submit/capture.c), the waits on the host
 * that a bounded context needs before a backend op that waits without a
 * bound, KILN_DEBUG=guard's bookkeeping,
 * the backend's op, a device loss turned into the context's state, and
 * the trace hook (core/submit/trace.c).
 * A graph's build hands its commands back through the same door, on the
 * stream that builds the backend's graph (docs/design.md, "How a command
 * travels").
 *
 * Below the door: how a copy and a fill reach the device (the backend's
 * engine or a built-in kernel), and a copy between two streams of one
 * context. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* ---- Copies and fills, as the device does them ----------------------------- */

/* Fills part of a module's global whose address is not a multiple of 4,
 * where the copy engine's wider stores and kiln_fill's words would be
 * misaligned: the pattern is laid out in host memory and written. */
static kiln_status global_fill(kiln_stream *s, kiln_buffer *dst, size_t off,
                               size_t size, uint64_t pattern,
                               size_t pattern_size) {
  unsigned char *bytes = malloc(size);
  if (!bytes)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_buffer_fill: out of host memory laying out "
                          "%zu bytes of pattern for the global '%.96s'",
                          size, dst->global_name);
  for (size_t i = 0; i < size; i += pattern_size)
    memcpy(bytes + i, &pattern, pattern_size);
  kiln_status st =
      s->base.context->ops->buffer_write(s, dst, off, bytes, size);
  free(bytes);
  return st;
}

/* A built-in kernel's launch on s, not numbered in a graph. */
static kiln_status launch_builtin(kiln_stream *s, kiln_kernel *k,
                                  const kiln_launch_config *config,
                                  const kiln_arg *args, size_t arg_count) {
  kiln_context *ctx = s->base.context;
  kiln_status st = kiln_context_check_usable(ctx);
  kiln_packed_args packed;
  if (st == KILN_OK)
    st = kiln_launch_pack(ctx, k, config, args, arg_count, &packed);
  if (st != KILN_OK) return st;
  const kiln_command c = {.kind = KILN_COMMAND_LAUNCH,
                          .fn = "kiln_launch",
                          .kernel = k,
                          .config = *config,
                          .args = args,
                          .arg_count = arg_count,
                          .packed = &packed};
  return kiln_submit(s, &c);
}

kiln_status kiln_fill_with_kernel(kiln_stream *s, kiln_buffer *dst, size_t off,
                                  size_t size, uint64_t pattern,
                                  size_t pattern_size) {
  kiln_kernel *k;
  kiln_status st = kiln_builtin_kernel(s->base.context, "kiln_fill", &k);
  if (st != KILN_OK) return st;
  /* Repeat the pattern to 8 bytes: byte j of it is then the byte for any
   * position j (mod 8) counted from the fill's start. */
  for (size_t w = pattern_size; w < 8; w *= 2) pattern |= pattern << (8 * w);
  uint64_t start = off & 3u;
  /* off counts from the allocation's start, kiln_launch's offsets from the
   * caller's range, KILN_DEBUG=guard's bytes later (a multiple of 4, so
   * `start` is the same either way). */
  kiln_arg args[4] = {kiln_arg_buffer(dst, off - start - dst->guard),
                      kiln_arg_u64(start), kiln_arg_u64(start + size),
                      kiln_arg_u64(pattern)};
  kiln_launch_config c =
      kiln_helper_config((start + size + 3) / 4, KILN_HELPER_BLOCK, 65535u);
  return launch_builtin(s, k, &c, args, 4);
}

kiln_status kiln_copy_with_kernel(kiln_stream *s, kiln_kernel *k,
                                  kiln_buffer *dst, size_t dst_off,
                                  const kiln_buffer *src, size_t src_off,
                                  size_t size) {
  /* The offsets count from the allocation's start, kiln_launch's from the
   * caller's range (KILN_DEBUG=guard's bytes come first). The kernel
   * moves vec4s when both addresses are 16-byte aligned. */
  kiln_arg args[3] = {kiln_arg_buffer(dst, dst_off - dst->guard),
                      kiln_arg_buffer(src, src_off - src->guard),
                      kiln_arg_u32((uint32_t)(size / 4))};
  kiln_launch_config c = kiln_copy_kernel_config(size);
  return launch_builtin(s, k, &c, args, 3);
}

/* Copies between two buffers of s's context: the copy kernel where the
 * backend asks for it (copy_kernel_bytes) and the copy suits it, else the
 * backend's copy. */
static kiln_status copy_native(kiln_stream *s, kiln_buffer *dst, size_t dst_off,
                               const kiln_buffer *src, size_t src_off,
                               size_t size) {
  const kiln_backend_ops *ops = dst->base.context->ops;
  /* Whole words at word-aligned addresses (a module global may not be),
   * and few enough for the kernel's 32-bit count. */
  const uint64_t where =
      (dst->device_address + dst_off) | (src->device_address + src_off) | size;
  kiln_kernel *k;
  /* Without the kernel (a build without the backend's built-in kernels,
   * or no memory to load them) the backend's copy still copies. */
  if (ops->copy_kernel_bytes && size >= ops->copy_kernel_bytes &&
      where % 4 == 0 && size / 4 <= UINT32_MAX &&
      kiln_builtin_kernel(dst->base.context, "kiln_copy_f32", &k) == KILN_OK)
    return kiln_copy_with_kernel(s, k, dst, dst_off, src, src_off, size);
  return ops->buffer_copy(s, dst, dst_off, src, src_off, size);
}

/* The `size`-byte pattern repeated to `to` bytes (powers of two). */
static uint64_t widen_pattern(uint64_t pattern, size_t size, size_t to) {
  for (; size < to; size *= 2) pattern |= pattern << (size * 8);
  return pattern;
}

/* Fills with a pattern already narrowed to `width` bytes: the backend's
 * fill at the narrowest size it lists in fill_sizes that suits offset and
 * size (a wider one takes the pattern repeated: Vulkan fills 4-byte
 * words), else the fill kernel. */
static kiln_status fill_native(kiln_stream *s, kiln_buffer *dst, size_t offset,
                               size_t size, uint64_t pattern, size_t width) {
  const kiln_fill_ops *fills = dst->base.context->ops->fills;
  for (size_t w = width; fills && w <= 8; w *= 2)
    if ((fills->fill_sizes & w) && offset % w == 0 && size % w == 0)
      return fills->buffer_fill(s, dst, offset, size,
                                widen_pattern(pattern, width, w), w);
  return kiln_fill_with_kernel(s, dst, offset, size, pattern, width);
}

/* Makes `later` wait for the work queued so far on `earlier`, a stream of
 * the same context, through an internal event released at once (a backend
 * without stream_wait_event waits on the host instead). */
static kiln_status order_after(kiln_stream *later, kiln_stream *earlier) {
  kiln_context *ctx = earlier->base.context;
  const kiln_backend_ops *ops = ctx->ops;
  kiln_event *e;
  kiln_status st = kiln_event_internal(ctx, KILN_EVENT_DEFAULT, &e);
  if (st != KILN_OK) return st;
  st = ops->event_record(e, earlier);
  if (st == KILN_OK) {
    e->recorded = true;
    st = ops->event_waits ? ops->event_waits->stream_wait_event(later, e)
                          : ops->event_synchronize(e, KILN_WAIT_FOREVER);
  }
  kiln_event_release(e);
  return st;
}

/* A peer copy within one context: an ordinary copy on dst_s, fenced with
 * src_s both ways. */
static kiln_status copy_within(kiln_stream *dst_s, const kiln_command *c) {
  kiln_stream *src_s = c->src_stream;
  kiln_status st = KILN_OK;
  if (src_s != dst_s) st = order_after(dst_s, src_s);
  if (st == KILN_OK)
    st = copy_native(dst_s, c->dst, c->dst_offset, c->src, c->src_offset,
                     c->size);
  if (st == KILN_OK && src_s != dst_s) st = order_after(src_s, dst_s);
  return st;
}

/* ---- The door ---------------------------------------------------------------- */

/* Whether c has nothing to do once past capture: a launch of an empty
 * grid, or no bytes to move. */
static bool empty(const kiln_command *c) {
  switch (c->kind) {
  case KILN_COMMAND_LAUNCH:
    return c->config.grid.x == 0 || c->config.grid.y == 0 ||
           c->config.grid.z == 0;
  case KILN_COMMAND_RECORD:
  case KILN_COMMAND_WAIT:
  case KILN_COMMAND_WAIT_NATIVE:
  case KILN_COMMAND_REPLAY: return false;
  default: return c->size == 0;
  }
}

/* A buffer made in s's order, zeroed there when its memory was used. */
static kiln_status alloc(kiln_stream *s, const kiln_command *c) {
  bool zero = false;
  kiln_status st = kiln_pool_alloc(s, c->dst, c->flags, &zero);
  if (st != KILN_OK || !zero) return st;
  if ((st = fill_native(s, c->dst, 0, c->dst->size, 0, 1)) != KILN_OK &&
      kiln_pool_release(s, c->dst) != KILN_OK)
    kiln_log(KILN_LOG_WARN, "%s: a buffer that could not be zeroed could "
             "not be released either: %s", c->fn, kiln_last_error());
  return st;
}

/* e was recorded on s, by a command or a graph's replay: waits on it
 * follow this record now, not a capture's, and the guard knows where. */
static void noted_record(kiln_stream *s, kiln_event *e) {
  kiln_context *ctx = s->base.context;
  e->recorded = true;
  kiln_capture_forget_record(ctx, e);
  if (ctx->guard) kiln_guard_note_record(e, s);
}

/* A replay of g on s, one at a time (neither CUDA's nor HIP's executable
 * graphs may be launched by two threads at once), then what its captured
 * event records and launches mean on the host, as if queued one by one. */
static kiln_status replay(kiln_stream *s, kiln_graph *g, const char *fn) {
  kiln_context *ctx = s->base.context;
  pthread_mutex_lock(&g->lock);
  kiln_status st =
      g->built ? ctx->ops->graphs->graph_launch(g, s)
               : kiln_set_error(KILN_ERROR_INVALID_STATE,
                                "%s: the graph could not be built again "
                                "after an update failed; destroy it",
                                fn);
  for (size_t i = 0; st == KILN_OK && i < g->cmd_count; i++) {
    const kiln_command *c = &g->cmds[i];
    if (c->kind == KILN_COMMAND_RECORD) {
      noted_record(s, c->event);
    } else if (c->kind == KILN_COMMAND_LAUNCH && ctx->guard) {
      kiln_guard_note_launch(s, c->args, c->arg_count);
    }
  }
  if (st == KILN_OK && ctx->guard) kiln_guard_note_replay(s, g);
  pthread_mutex_unlock(&g->lock);
  return st;
}

/* Whether c is one of g's commands, not a kernel that one of them became
 * in its build. */
static bool listed(const kiln_graph *g, const kiln_command *c) {
  return c >= g->cmds && c < g->cmds + g->cmd_count;
}

/* KILN_ERROR_UNSUPPORTED where the backend lacks the ability c needs and
 * no other path does the work. */
static kiln_status check_backend(const kiln_stream *s, const kiln_command *c) {
  const kiln_context *ctx = s->base.context;
  const kiln_backend_ops *ops = ctx->ops;
  if (c->kind == KILN_COMMAND_WAIT_NATIVE && !ops->interop)
    return kiln_unsupported(ops, c->fn, "native handles", NULL);
  if (c->kind == KILN_COMMAND_COPY_PEER && c->src->base.context != ctx &&
      !ops->peers)
    return kiln_unsupported(ops, c->fn, "copies between contexts", NULL);
  return KILN_OK;
}

/* With a bound on waits, a backend op that waits for the stream's earlier
 * work without one (a transfer that completes before it returns, a peer
 * copy that waits on the host) is preceded by a wait within the bound, so
 * that the op's own wait finds that work done. */
static kiln_status wait_first(kiln_stream *s, const kiln_command *c) {
  const kiln_backend_ops *ops = s->base.context->ops;
  switch (c->kind) {
  case KILN_COMMAND_WRITE_ASYNC:
  case KILN_COMMAND_READ_ASYNC:
    if (ops->async_transfers) return KILN_OK;
    break;
  case KILN_COMMAND_WRITE:
  case KILN_COMMAND_READ:
  case KILN_COMMAND_FILL_HOST: break;
  case KILN_COMMAND_COPY_PEER: {
    static const char after[] =
        "nothing was copied; the work goes on and the contexts stay usable";
    kiln_stream *ss = c->src_stream;
    kiln_status st = KILN_OK;
    if (c->src->base.context == s->base.context || !ops->peers->peer_copy_waits)
      return KILN_OK;
    if (kiln_waits_bounded(ss->base.context))
      st = kiln_stream_wait(ss, c->fn, after);
    if (st == KILN_OK && kiln_waits_bounded(s->base.context))
      st = kiln_stream_wait(s, c->fn, after);
    return st;
  }
  default: return KILN_OK;
  }
  if (!kiln_waits_bounded(s->base.context)) return KILN_OK;
  return kiln_stream_wait(s, c->fn,
                          "nothing was transferred; the work goes on and the "
                          "context stays usable");
}

/* The backend's work for c on s, as the backend reports it. */
static kiln_status issue(kiln_stream *s, const kiln_command *c) {
  const kiln_backend_ops *ops = s->base.context->ops;
  switch (c->kind) {
  case KILN_COMMAND_LAUNCH:
    return ops->launch(s, c->kernel, &c->config, c->packed);
  case KILN_COMMAND_COPY:
    return copy_native(s, c->dst, c->dst_offset, c->src, c->src_offset,
                       c->size);
  case KILN_COMMAND_FILL:
    return fill_native(s, c->dst, c->dst_offset, c->size, c->pattern,
                       c->pattern_size);
  case KILN_COMMAND_RECORD: return ops->event_record(c->event, s);
  case KILN_COMMAND_WAIT:
    return ops->event_waits->stream_wait_event(s, c->event);
  case KILN_COMMAND_WRITE:
    return ops->buffer_write(s, c->dst, c->dst_offset, c->from, c->size);
  case KILN_COMMAND_READ:
    return ops->buffer_read(s, c->src, c->src_offset, c->to, c->size);
  case KILN_COMMAND_WRITE_ASYNC: /* synchronous is a valid async */
    if (!ops->async_transfers)
      return ops->buffer_write(
          s, c->dst, c->dst_offset,
          (const char *)c->host_from->data + c->host_offset, c->size);
    return ops->async_transfers->buffer_write_async(
        s, c->dst, c->dst_offset, c->host_from, c->host_offset, c->size);
  case KILN_COMMAND_READ_ASYNC:
    if (!ops->async_transfers)
      return ops->buffer_read(s, c->src, c->src_offset,
                              (char *)c->host_to->data + c->host_offset,
                              c->size);
    return ops->async_transfers->buffer_read_async(
        s, c->src, c->src_offset, c->host_to, c->host_offset, c->size);
  case KILN_COMMAND_FILL_HOST:
    return global_fill(s, c->dst, c->dst_offset, c->size, c->pattern,
                       c->pattern_size);
  case KILN_COMMAND_COPY_PEER:
    if (c->src->base.context == s->base.context) return copy_within(s, c);
    return ops->peers->buffer_copy_peer(s, c->dst, c->dst_offset, c->src_stream,
                                        c->src, c->src_offset, c->size);
  case KILN_COMMAND_WAIT_NATIVE:
    return ops->interop->stream_wait_native(s, c->handle, c->value);
  case KILN_COMMAND_ALLOC: return alloc(s, c);
  case KILN_COMMAND_FREE: return kiln_pool_release(s, c->dst);
  case KILN_COMMAND_REPLAY: return replay(s, c->graph, c->fn);
  }
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "a command of unknown kind %d", (int)c->kind);
}

kiln_status kiln_submit(kiln_stream *s, const kiln_command *c) {
  kiln_context *ctx = s->base.context;
  /* The capture hook (core/submit/capture.c): a command on a capturing
   * stream, or a wait that joins a capture, is kept, not issued. Asked
   * only where it may be so, which keeps a launch's path to two loads. */
  kiln_status st = KILN_OK;
  if (c->kind == KILN_COMMAND_WAIT || kiln_stream_capturing(s) ||
      (c->src_stream && kiln_stream_capturing(c->src_stream))) {
    bool kept = false;
    st = kiln_capture_submit(s, c, &kept);
    if (kept || st != KILN_OK) return st;
  }
  /* A graph's memory is made with the graph (capture_alloc): its build
   * has nothing to queue for it. */
  if (s->building &&
      (c->kind == KILN_COMMAND_ALLOC || c->kind == KILN_COMMAND_FREE))
    return KILN_OK;
  if (empty(c)) return KILN_OK;
  st = check_backend(s, c);
  if (st == KILN_OK) st = wait_first(s, c);
  if (st != KILN_OK) return st;
  /* A graph's build queues work that runs only at its replays, on a
   * stream that goes with the build: the replay does the bookkeeping. */
  const bool now = !s->building;
  /* With no handler set and no KILN_TRACE sink, tracing costs this one
   * look. */
  const bool traced =
      now && atomic_load_explicit(&kiln_trace_on, memory_order_relaxed);
  kiln_trace_mark mark;
  if (traced) kiln_trace_begin(s, c, &mark);
  if (c->kind == KILN_COMMAND_LAUNCH && ctx->guard) {
    if (now)
      kiln_guard_note_launch(s, c->args, c->arg_count);
    else if (!listed(s->building, c) &&
             (st = kiln_guard_keep_for_replay(s->building, c->args,
                                              c->arg_count)) != KILN_OK)
      return st;
  }
  if (c->kind == KILN_COMMAND_WAIT && !ctx->ops->event_waits)
    st = kiln_event_wait(c->event, c->fn, NULL); /* the host waits */
  else
    st = kiln_context_result(ctx, issue(s, c));
  if (c->kind == KILN_COMMAND_COPY_PEER || c->kind == KILN_COMMAND_WAIT_NATIVE)
    st = kiln_error_in(c->fn, st);
  if (st != KILN_OK || !now) {
    if (traced) kiln_trace_end(s, c, &mark, false);
    return st;
  }
  if (c->kind == KILN_COMMAND_RECORD) {
    noted_record(s, c->event);
  } else if (c->kind == KILN_COMMAND_READ && ctx->guard) {
    /* The stream's earlier kernels are done: a sync point. */
    st = kiln_guard_check_stream(s, c->fn);
  }
  if (traced) kiln_trace_end(s, c, &mark, true);
  return st;
}
