/* Device limits: cuCtxSetLimit and cuCtxGetLimit on the device's primary
 * context, which the CUDA runtime in the process shares. The driver may
 * round or clamp a value it is given, so a get tells what holds. */
#include "backends/cuda/cuda.h"

typedef struct cuda_limit {
  CUlimit id;
  const char *name;
  /* Why the driver may refuse a value, for the message. */
  const char *refused;
} cuda_limit;

static cuda_limit lookup(kiln_limit limit) {
  switch (limit) {
  case KILN_LIMIT_STACK_BYTES:
    return (cuda_limit){CU_LIMIT_STACK_SIZE, "CU_LIMIT_STACK_SIZE",
                        "a stack larger than the device can give every "
                        "thread it may run at once"};
  case KILN_LIMIT_PRINTF_FIFO_BYTES:
    return (cuda_limit){CU_LIMIT_PRINTF_FIFO_SIZE, "CU_LIMIT_PRINTF_FIFO_SIZE",
                        "the FIFO cannot change once a kernel that calls "
                        "printf has run in the context, nor outgrow the "
                        "device"};
  case KILN_LIMIT_MALLOC_HEAP_BYTES:
    break;
  }
  return (cuda_limit){CU_LIMIT_MALLOC_HEAP_SIZE, "CU_LIMIT_MALLOC_HEAP_SIZE",
                      "the heap cannot change once a kernel that calls "
                      "malloc or free has run in the context, nor outgrow "
                      "the device"};
}

kiln_status kiln_cuda_context_set_limit(kiln_context *ctx, kiln_limit limit,
                                        size_t value) {
  kiln_status st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  cuda_limit l = lookup(limit);
  CUresult r = kiln_cuda_api.cuCtxSetLimit(l.id, value);
  if (r == CUDA_SUCCESS) return KILN_OK;
  kiln_status mapped = kiln_cuda_status(r, KILN_ERROR_BACKEND);
  char why[384];
  kiln_cuda_describe(r, why, sizeof why);
  bool refused = mapped == KILN_ERROR_INVALID_ARGUMENT ||
                 mapped == KILN_ERROR_OUT_OF_DEVICE_MEMORY;
  return kiln_set_error(mapped,
                        "kiln_context_set_limit: cuCtxSetLimit(%s, %zu "
                        "bytes) on %s failed: %s%s%s",
                        l.name, value, ctx->properties.name, why,
                        refused ? "; the driver refuses, e.g., " : "",
                        refused ? l.refused : "");
}

kiln_status kiln_cuda_context_get_limit(kiln_context *ctx, kiln_limit limit,
                                        size_t *out_value) {
  kiln_status st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  cuda_limit l = lookup(limit);
  size_t value = 0;
  CUresult r = kiln_cuda_api.cuCtxGetLimit(&value, l.id);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "kiln_context_get_limit: cuCtxGetLimit(%s) on "
                              "%s",
                           l.name, ctx->properties.name);
  *out_value = value;
  return KILN_OK;
}
