/* Device limits: the stack, printf FIFO and malloc heap that kernels use,
 * set and read through the backend (backends/<name>/limit.c). */
#include "core/internal.h"

static const char *limit_name(kiln_limit limit) {
  switch (limit) {
  case KILN_LIMIT_STACK_BYTES: return "KILN_LIMIT_STACK_BYTES";
  case KILN_LIMIT_PRINTF_FIFO_BYTES: return "KILN_LIMIT_PRINTF_FIFO_BYTES";
  case KILN_LIMIT_MALLOC_HEAP_BYTES: return "KILN_LIMIT_MALLOC_HEAP_BYTES";
  }
  return NULL;
}

/* The checks both calls share: a live context and a known limit. */
static kiln_status check(kiln_context *ctx, kiln_limit limit,
                         const char *fn) {
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!limit_name(limit))
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: %d is not a kiln_limit (KILN_LIMIT_STACK_BYTES, "
                          "KILN_LIMIT_PRINTF_FIFO_BYTES or "
                          "KILN_LIMIT_MALLOC_HEAP_BYTES)",
                          fn, (int)limit);
  return KILN_OK;
}

/* A usable context on a backend that has limits. */
static kiln_status check_backend(kiln_context *ctx, const char *fn) {
  kiln_status st = kiln_context_check_usable(ctx);
  if (st != KILN_OK || ctx->ops->limits) return st;
  return kiln_unsupported(ctx->ops, fn, "device limits",
                          "its kernels have no device-side stack, printf "
                          "FIFO or malloc heap for kiln to size (Vulkan "
                          "drivers size shader stacks themselves)");
}

kiln_status kiln_context_set_limit(kiln_context *ctx, kiln_limit limit,
                                   size_t value) {
  static const char fn[] = "kiln_context_set_limit";
  kiln_status st = check(ctx, limit, fn);
  if (st != KILN_OK) return st;
  st = check_backend(ctx, fn);
  if (st != KILN_OK) return st;
  /* The driver may wait for the device's work without a bound of its own
   * (CUDA does, for the stack size). */
  if (kiln_waits_bounded(ctx) &&
      (st = kiln_context_wait(ctx, fn,
                              "the limit was not changed; the work goes on "
                              "and the context stays usable")) != KILN_OK)
    return st;
  return kiln_context_result(
      ctx, ctx->ops->limits->context_set_limit(ctx, limit, value));
}

kiln_status kiln_context_get_limit(kiln_context *ctx, kiln_limit limit,
                                   size_t *out_value) {
  static const char fn[] = "kiln_context_get_limit";
  kiln_status st = check(ctx, limit, fn);
  if (st != KILN_OK) return st;
  if (!out_value)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: out_value is NULL", fn);
  st = check_backend(ctx, fn);
  if (st != KILN_OK) return st;
  return kiln_context_result(
      ctx, ctx->ops->limits->context_get_limit(ctx, limit, out_value));
}
