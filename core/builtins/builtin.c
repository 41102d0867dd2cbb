/* The built-in helpers of kiln.h (docs/kernels.md): axpy and the one-launch
 * reductions, their checks, and the workspaces they keep on a stream (the
 * GEMMs are in core/builtins/gemm.c, the kernels and launch shapes in
 * core/builtins/kernels.c). */
#include <string.h>

#include "core/internal.h"

/* The most blocks a reduction uses (one slot each, in its workspace). */
#define REDUCE_MAX_BLOCKS 1024u

kiln_status kiln_check_array(const kiln_buffer *b, size_t offset, size_t n,
                             size_t elem_size, kiln_context *ctx,
                             const char *fn, const char *what) {
  kiln_status st = kiln_object_check_in(b, KILN_OBJECT_BUFFER, ctx, fn, what);
  if (st != KILN_OK) return st;
  if (offset % elem_size)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: the offset %zu of %s is not a multiple of %zu",
                          fn, offset, what, elem_size);
  if (n > SIZE_MAX / elem_size)
    return kiln_set_error(KILN_ERROR_OVERFLOW,
                          "%s: n = %zu elements of %s overflows", fn, n, what);
  return kiln_check_range(offset, n * elem_size, b->size, fn, what);
}

static kiln_status check_vector(const kiln_buffer *b, size_t offset, size_t n,
                                kiln_context *ctx, const char *fn,
                                const char *what) {
  return kiln_check_array(b, offset, n, sizeof(float), ctx, fn, what);
}

kiln_status kiln_check_helper(const kiln_buffer *anchor, kiln_stream *stream,
                              size_t n, const char *fn, const char *what,
                              kiln_stream **out_stream) {
  kiln_status st = kiln_object_check(anchor, KILN_OBJECT_BUFFER, fn, what);
  if (st != KILN_OK) return st;
  kiln_context *ctx = anchor->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  if ((st = kiln_stream_resolve(stream, ctx, fn, out_stream)) != KILN_OK)
    return st;
  if (n > UINT32_MAX)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: n = %zu; the built-in kernels take at most "
                          "2^32 - 1 elements",
                          fn, n);
  return KILN_OK;
}

kiln_status kiln_axpy_f32(kiln_stream *stream, size_t n, float a,
                          const kiln_buffer *x, size_t x_offset, kiln_buffer *y,
                          size_t y_offset) {
  static const char fn[] = "kiln_axpy_f32";
  kiln_stream *s;
  kiln_status st = kiln_check_helper(y, stream, n, fn, "y", &s);
  if (st != KILN_OK) return st;
  kiln_context *ctx = y->base.context;
  if ((st = check_vector(y, y_offset, n, ctx, fn, "y")) != KILN_OK ||
      (st = check_vector(x, x_offset, n, ctx, fn, "x")) != KILN_OK)
    return st;
  if (n == 0) return KILN_OK;
  kiln_kernel *k;
  if ((st = kiln_builtin_kernel(ctx, "kiln_axpy_f32", &k)) != KILN_OK)
    return st;
  kiln_arg args[4] = {kiln_arg_buffer(y, y_offset),
                      kiln_arg_buffer(x, x_offset), kiln_arg_f32(a),
                      kiln_arg_u32((uint32_t)n)};
  kiln_launch_config c = kiln_helper_config(n, KILN_HELPER_BLOCK, 65535u);
  return kiln_launch_helper(s, k, &c, args, 4);
}

/* A helper's workspace is made on the stream's first use of it, with its
 * counters at 0 in the stream's order; the kernels put the counters back
 * to 0 when they finish, so calls in the stream's order share it. The
 * lock guards making it, once per stream and use, and is one of these,
 * picked by the stream's address (a lock in each stream would cost every
 * stream a mutex for the few that use a helper's workspace). */
#define SCRATCH_LOCKS 8u
static pthread_mutex_t scratch_locks[SCRATCH_LOCKS] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
};

static pthread_mutex_t *scratch_lock(const kiln_stream *s) {
  /* Streams are malloc'd blocks of a few hundred bytes: the lowest bits
   * of their addresses tell them apart least. */
  return &scratch_locks[((uintptr_t)s >> 6) % SCRATCH_LOCKS];
}

/* A new workspace whose last counter_bytes are zeroed on s: now, or when
 * the graph being captured on s replays. */
static kiln_status workspace_create(kiln_stream *s, size_t bytes,
                                    size_t counter_bytes, bool captured,
                                    kiln_buffer **out) {
  kiln_context *ctx = s->base.context;
  kiln_buffer *b = NULL;
  kiln_status st = kiln_buffer_create_internal(ctx, bytes, &b);
  if (st != KILN_OK) return st;
  /* Offsets below kiln_buffer_fill's checks count from the guard bytes
   * (KILN_DEBUG=guard), as the backend counts. */
  const size_t at = b->guard + bytes - counter_bytes;
  b->graph_owned = captured;
  const kiln_command c = {.kind = KILN_COMMAND_FILL,
                          .fn = "kiln_buffer_fill",
                          .dst = b,
                          .dst_offset = at,
                          .size = counter_bytes,
                          .pattern_size = 4};
  st = kiln_submit(s, &c);
  if (st != KILN_OK) {
    kiln_buffer_release(b);
    return st;
  }
  *out = b;
  return KILN_OK;
}

kiln_status kiln_helper_workspace(kiln_stream *s, kiln_scratch_use use,
                                  size_t bytes, size_t counter_bytes,
                                  kiln_buffer **out) {
  /* A graph may replay on other streams than s, beside s's own helpers: a
   * captured helper gets a workspace of its own, held by the graph, and
   * its counters are zeroed at the start of each replay. */
  if (kiln_stream_capturing(s))
    return workspace_create(s, bytes, counter_bytes, true, out);
  pthread_mutex_t *lock = scratch_lock(s);
  pthread_mutex_lock(lock);
  kiln_status st = KILN_OK;
  if (!s->scratch[use])
    st = workspace_create(s, bytes, counter_bytes, false, &s->scratch[use]);
  *out = s->scratch[use];
  pthread_mutex_unlock(lock);
  return st;
}

/* A reduction of n elements launches one block per 2048 elements (8 a
 * thread), at most 512 up to 2^23 elements, 1024 beyond. Fewer blocks
 * take fewer tickets one after another on the counter, which is what a
 * small reduction waits for: on the H100, 1 to 32 MiB went 1.1 to 1.35
 * times faster than with a block per 256 elements; the 1024 blocks of
 * large arrays keep the bytes in flight that memory bandwidth needs. */
static kiln_launch_config reduce_config(size_t n) {
  return kiln_helper_config(
      n, 2048,
      n > ((size_t)1 << 23) ? REDUCE_MAX_BLOCKS : REDUCE_MAX_BLOCKS / 2);
}

/* Sums x (and y, for a dot product) into result in one launch, through a
 * workspace of REDUCE_MAX_BLOCKS slots for the blocks' sums and the ticket
 * counter the blocks take to find the last of them
 * (shaders/<backend>/reduce.*), all 0 between reductions. */
static kiln_status reduce(kiln_stream *s, const char *kernel_name, size_t n,
                          const kiln_buffer *x, size_t x_offset,
                          const kiln_buffer *y, size_t y_offset,
                          kiln_buffer *result, size_t result_offset) {
  kiln_context *ctx = result->base.context;
  kiln_status st;
  if (n == 0) {
    const uint32_t zero = 0;
    return kiln_buffer_fill(s, result, result_offset, 4, &zero, 4);
  }
  kiln_kernel *k;
  kiln_buffer *work = NULL;
  const size_t work_bytes = (REDUCE_MAX_BLOCKS + 1) * sizeof(uint32_t);
  if ((st = kiln_builtin_kernel(ctx, kernel_name, &k)) != KILN_OK ||
      (st = kiln_helper_workspace(s, KILN_SCRATCH_REDUCE, work_bytes,
                                  work_bytes, &work)) != KILN_OK)
    return st;
  kiln_launch_config c = reduce_config(n);
  kiln_arg args[6];
  size_t count = 0;
  args[count++] = kiln_arg_buffer(work, 0);
  args[count++] = kiln_arg_buffer(x, x_offset);
  if (y) args[count++] = kiln_arg_buffer(y, y_offset);
  args[count++] = kiln_arg_buffer(result, result_offset);
  args[count++] =
      kiln_arg_buffer(work, REDUCE_MAX_BLOCKS * sizeof(uint32_t));
  args[count++] = kiln_arg_u32((uint32_t)n);
  return kiln_launch_helper(s, k, &c, args, count);
}

kiln_status kiln_reduce_sum_f32(kiln_stream *stream, size_t n,
                                const kiln_buffer *x, size_t x_offset,
                                kiln_buffer *result, size_t result_offset) {
  static const char fn[] = "kiln_reduce_sum_f32";
  kiln_stream *s;
  kiln_status st = kiln_check_helper(result, stream, n, fn, "result", &s);
  if (st != KILN_OK) return st;
  kiln_context *ctx = result->base.context;
  if ((st = check_vector(result, result_offset, 1, ctx, fn, "result")) !=
          KILN_OK ||
      (st = check_vector(x, x_offset, n, ctx, fn, "x")) != KILN_OK)
    return st;
  return reduce(s, "kiln_reduce_sum_f32", n, x, x_offset, NULL, 0, result,
                result_offset);
}

kiln_status kiln_dot_f32(kiln_stream *stream, size_t n, const kiln_buffer *x,
                         size_t x_offset, const kiln_buffer *y, size_t y_offset,
                         kiln_buffer *result, size_t result_offset) {
  static const char fn[] = "kiln_dot_f32";
  kiln_stream *s;
  kiln_status st = kiln_check_helper(result, stream, n, fn, "result", &s);
  if (st != KILN_OK) return st;
  kiln_context *ctx = result->base.context;
  if ((st = check_vector(result, result_offset, 1, ctx, fn, "result")) !=
          KILN_OK ||
      (st = check_vector(x, x_offset, n, ctx, fn, "x")) != KILN_OK ||
      (st = check_vector(y, y_offset, n, ctx, fn, "y")) != KILN_OK)
    return st;
  return reduce(s, "kiln_dot_f32", n, x, x_offset, y, y_offset, result,
                result_offset);
}
