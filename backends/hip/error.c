/* hipError_t to kiln_status, and the runtime's own name and description of
 * an error for messages. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "backends/common/common.h"
#include "backends/hip/hip.h"

kiln_status kiln_hip_status(hipError_t err, kiln_status fallback) {
  switch (err) {
  case hipSuccess: return KILN_OK;
  case hipErrorOutOfMemory:
  case hipErrorRuntimeMemory: return KILN_ERROR_OUT_OF_DEVICE_MEMORY;
  case hipErrorNoDevice:
  case hipErrorInsufficientDriver: return KILN_ERROR_UNAVAILABLE;
  case hipErrorNotSupported:
  case hipErrorUnsupportedLimit: return KILN_ERROR_UNSUPPORTED;
  case hipErrorNotFound:
  case hipErrorSharedObjectSymbolNotFound: return KILN_ERROR_NOT_FOUND;
  case hipErrorNotReady: return KILN_ERROR_NOT_READY;
  case hipErrorNoBinaryForGpu: return KILN_ERROR_NO_IMAGE;
  case hipErrorInvalidImage:
  case hipErrorInvalidKernelFile:
  case hipErrorSharedObjectInitFailed: return KILN_ERROR_INVALID_IMAGE;
  case hipErrorLaunchOutOfResources:
  case hipErrorCooperativeLaunchTooLarge: return KILN_ERROR_LAUNCH_FAILED;
  /* Sticky faults: the device's state is gone, and every later call on it
   * returns the same error. The core marks the context lost. */
  case hipErrorIllegalAddress:
  case hipErrorLaunchFailure:
  case hipErrorLaunchTimeOut:
  case hipErrorAssert:
  case hipErrorECCNotCorrectable:
  case hipErrorPriorLaunchFailure:
  case hipErrorContextIsDestroyed: return KILN_ERROR_DEVICE_LOST;
  default: return fallback;
  }
}

void kiln_hip_describe(hipError_t err, char *buf, size_t size) {
  const char *name = kiln_hip_api.hipGetErrorName(err);
  const char *text = kiln_hip_api.hipGetErrorString(err);
  /* Runtimes answer "hipErrorUnknown" for a code they do not know. */
  if (!name || (err != hipErrorUnknown && strcmp(name, "hipErrorUnknown") == 0)) {
    snprintf(buf, size, "HIP error %d (unknown to the runtime)", (int)err);
    return;
  }
  /* ROCm 5 describes many errors by their name again. */
  if (!text || !text[0] || strcmp(text, name) == 0)
    snprintf(buf, size, "%s", name);
  else
    snprintf(buf, size, "%s (%s)", name, text);
}

/* The shared helper's view of hipError_t: see backends/common/common.h. */
static kiln_status status_of(int code, kiln_status fallback) {
  return kiln_hip_status((hipError_t)code, fallback);
}

static void describe(int code, char *buf, size_t size) {
  kiln_hip_describe((hipError_t)code, buf, size);
}

static const kiln_vendor vendor = {"hip", status_of, describe};

kiln_status kiln_hip_error(hipError_t err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status st =
      kiln_vendor_error(&vendor, (int)err, KILN_ERROR_BACKEND, fmt, ap);
  va_end(ap);
  return st;
}

kiln_status kiln_hip_error_as(hipError_t err, kiln_status fallback,
                              const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status st = kiln_vendor_error(&vendor, (int)err, fallback, fmt, ap);
  va_end(ap);
  return st;
}

void kiln_hip_warn(hipError_t err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_vendor_warn(&vendor, (int)err, fmt, ap);
  va_end(ap);
}
