/* Statuses, the thread's last error message, version, small utilities. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)

/* One message per thread, so concurrent callers never see each other's. */
static _Thread_local char tls_message[1024];

unsigned kiln_version(void) { return KILN_VERSION; }

const char *kiln_version_string(void) {
  return KILN_STR(KILN_VERSION_MAJOR) "." KILN_STR(
      KILN_VERSION_MINOR) "." KILN_STR(KILN_VERSION_PATCH);
}

const char *kiln_status_name(kiln_status status) {
  switch (status) {
  case KILN_OK: return "KILN_OK";
  case KILN_ERROR_INVALID_ARGUMENT: return "KILN_ERROR_INVALID_ARGUMENT";
  case KILN_ERROR_INVALID_HANDLE: return "KILN_ERROR_INVALID_HANDLE";
  case KILN_ERROR_WRONG_CONTEXT: return "KILN_ERROR_WRONG_CONTEXT";
  case KILN_ERROR_OUT_OF_RANGE: return "KILN_ERROR_OUT_OF_RANGE";
  case KILN_ERROR_OVERFLOW: return "KILN_ERROR_OVERFLOW";
  case KILN_ERROR_OUT_OF_HOST_MEMORY: return "KILN_ERROR_OUT_OF_HOST_MEMORY";
  case KILN_ERROR_OUT_OF_DEVICE_MEMORY: return "KILN_ERROR_OUT_OF_DEVICE_MEMORY";
  case KILN_ERROR_UNSUPPORTED: return "KILN_ERROR_UNSUPPORTED";
  case KILN_ERROR_UNAVAILABLE: return "KILN_ERROR_UNAVAILABLE";
  case KILN_ERROR_NOT_FOUND: return "KILN_ERROR_NOT_FOUND";
  case KILN_ERROR_NO_IMAGE: return "KILN_ERROR_NO_IMAGE";
  case KILN_ERROR_INVALID_IMAGE: return "KILN_ERROR_INVALID_IMAGE";
  case KILN_ERROR_LAUNCH_FAILED: return "KILN_ERROR_LAUNCH_FAILED";
  case KILN_ERROR_NOT_READY: return "KILN_ERROR_NOT_READY";
  case KILN_ERROR_DEVICE_LOST: return "KILN_ERROR_DEVICE_LOST";
  case KILN_ERROR_OBJECTS_ALIVE: return "KILN_ERROR_OBJECTS_ALIVE";
  case KILN_ERROR_INVALID_STATE: return "KILN_ERROR_INVALID_STATE";
  case KILN_ERROR_BACKEND: return "KILN_ERROR_BACKEND";
  case KILN_ERROR_COMPILE: return "KILN_ERROR_COMPILE";
  case KILN_ERROR_TIMEOUT: return "KILN_ERROR_TIMEOUT";
  case KILN_ERROR_MEMORY_CORRUPTION: return "KILN_ERROR_MEMORY_CORRUPTION";
  }
  return "KILN_STATUS_UNKNOWN";
}

const char *kiln_last_error(void) { return tls_message; }

void kiln_clear_error(void) { tls_message[0] = '\0'; }

kiln_status kiln_set_error(kiln_status status, const char *fmt, ...) {
  /* Format first into a scratch copy: arguments may point into the current
   * message (a caller prefixing an earlier error). */
  char msg[sizeof tls_message];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  memcpy(tls_message, msg, sizeof msg);
  kiln_log(KILN_LOG_DEBUG, "%s: %s", kiln_status_name(status), tls_message);
  return status;
}

kiln_status kiln_call_failed(kiln_status status, const char *why,
                             const char *fmt, va_list ap) {
  char what[512];
  vsnprintf(what, sizeof what, fmt, ap);
  return kiln_set_error(status, "%s failed: %s", what, why);
}

void kiln_call_warn(const char *backend, const char *why, const char *fmt,
                    va_list ap) {
  char what[512];
  vsnprintf(what, sizeof what, fmt, ap);
  kiln_log(KILN_LOG_WARN, "%s: %s failed: %s", backend, what, why);
}

kiln_status kiln_error_in(const char *fn, kiln_status status) {
  size_t n = strlen(fn);
  if (status == KILN_OK ||
      (strncmp(tls_message, fn, n) == 0 && tls_message[n] == ':'))
    return status;
  return kiln_set_error(status, "%s: %s", fn, tls_message);
}

void kiln_strlcpy(char *dst, const char *src, size_t dst_size) {
  if (dst_size == 0) return;
  size_t n = strlen(src);
  if (n >= dst_size) n = dst_size - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

const char *kiln_device_type_name(kiln_device_type type) {
  switch (type) {
  case KILN_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
  case KILN_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
  case KILN_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
  case KILN_DEVICE_TYPE_CPU: return "CPU";
  case KILN_DEVICE_TYPE_OTHER: break;
  }
  return "other";
}

const char *kiln_image_format_name(kiln_image_format format) {
  switch (format) {
  case KILN_IMAGE_SPIRV: return "SPIR-V";
  case KILN_IMAGE_PTX: return "PTX";
  case KILN_IMAGE_CUBIN: return "cubin";
  case KILN_IMAGE_FATBIN: return "fatbin";
  case KILN_IMAGE_HIP_CODE_OBJECT: return "HIP code object";
  }
  return "unknown";
}
