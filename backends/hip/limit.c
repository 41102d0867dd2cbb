/* Device limits: hipDeviceSetLimit and hipDeviceGetLimit on the context's
 * device, made current around the call. Which limits a runtime has varies
 * (ROCm 5.2 has no stack limit and no hipDeviceSetLimit; AMD's runtime has
 * no printf FIFO limit); what it lacks is KILN_ERROR_UNSUPPORTED. */
#include "backends/hip/hip.h"

typedef struct hip_limit {
  enum hipLimit_t id;
  const char *name;
} hip_limit;

static hip_limit lookup(kiln_limit limit) {
  switch (limit) {
  case KILN_LIMIT_STACK_BYTES:
    return (hip_limit){hipLimitStackSize, "hipLimitStackSize"};
  case KILN_LIMIT_PRINTF_FIFO_BYTES:
    return (hip_limit){hipLimitPrintfFifoSize, "hipLimitPrintfFifoSize"};
  case KILN_LIMIT_MALLOC_HEAP_BYTES: break;
  }
  return (hip_limit){hipLimitMallocHeapSize, "hipLimitMallocHeapSize"};
}

/* A value the runtime refuses is the caller's argument (the fallback); a
 * limit the runtime lacks is worth saying in words. */
static const char *unsupported_note(hipError_t err) {
  return kiln_hip_status(err, KILN_ERROR_INVALID_ARGUMENT) ==
                 KILN_ERROR_UNSUPPORTED
             ? " (this HIP runtime has no such limit)"
             : "";
}

kiln_status kiln_hip_context_set_limit(kiln_context *ctx, kiln_limit limit,
                                       size_t value) {
  if (!kiln_hip_api.hipDeviceSetLimit)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "kiln_context_set_limit: this HIP runtime has no "
                          "hipDeviceSetLimit (ROCm 6 has it, ROCm 5.2 not)");
  hip_limit l = lookup(limit);
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(ctx, &scope);
  if (st != KILN_OK) return st;
  hipError_t err = kiln_hip_api.hipDeviceSetLimit(l.id, value);
  kiln_hip_device_leave(&scope);
  if (err == hipSuccess) return KILN_OK;
  return kiln_hip_error_as(err, KILN_ERROR_INVALID_ARGUMENT,
                           "kiln_context_set_limit: hipDeviceSetLimit(%s, %zu "
                           "bytes) on %s%s",
                           l.name, value, ctx->properties.name,
                           unsupported_note(err));
}

kiln_status kiln_hip_context_get_limit(kiln_context *ctx, kiln_limit limit,
                                       size_t *out_value) {
  if (!kiln_hip_api.hipDeviceGetLimit)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "kiln_context_get_limit: this HIP runtime has no "
                          "hipDeviceGetLimit");
  hip_limit l = lookup(limit);
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(ctx, &scope);
  if (st != KILN_OK) return st;
  size_t value = 0;
  hipError_t err = kiln_hip_api.hipDeviceGetLimit(&value, l.id);
  kiln_hip_device_leave(&scope);
  if (err == hipSuccess) {
    *out_value = value;
    return KILN_OK;
  }
  return kiln_hip_error_as(err, KILN_ERROR_INVALID_ARGUMENT,
                           "kiln_context_get_limit: hipDeviceGetLimit(%s) on "
                           "%s%s",
                           l.name, ctx->properties.name, unsupported_note(err));
}
