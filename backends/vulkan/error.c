/* VkResult to kiln_status, and the result's name and the specification's
 * description of it for messages. */
#include <stdarg.h>
#include <stdio.h>

#include "backends/vulkan/vulkan.h"

/* The specification's words for each result, shortened. */
#define KILN_VULKAN_RESULTS(X)                                                 \
  X(VK_SUCCESS, "success")                                                     \
  X(VK_NOT_READY, "a fence or query has not yet completed")                    \
  X(VK_TIMEOUT, "a wait did not complete in the time given")                   \
  X(VK_EVENT_SET, "an event is signaled")                                      \
  X(VK_EVENT_RESET, "an event is unsignaled")                                  \
  X(VK_INCOMPLETE, "a return array was too small for the result")              \
  X(VK_ERROR_OUT_OF_HOST_MEMORY, "a host memory allocation has failed")        \
  X(VK_ERROR_OUT_OF_DEVICE_MEMORY, "a device memory allocation has failed")    \
  X(VK_ERROR_INITIALIZATION_FAILED,                                            \
    "initialization of an object could not be completed")                     \
  X(VK_ERROR_DEVICE_LOST, "the logical or physical device has been lost")      \
  X(VK_ERROR_MEMORY_MAP_FAILED, "mapping of a memory object has failed")       \
  X(VK_ERROR_LAYER_NOT_PRESENT, "a requested layer is not present")            \
  X(VK_ERROR_EXTENSION_NOT_PRESENT, "a requested extension is not supported")  \
  X(VK_ERROR_FEATURE_NOT_PRESENT, "a requested feature is not supported")      \
  X(VK_ERROR_INCOMPATIBLE_DRIVER,                                              \
    "the requested version of Vulkan is not supported by the driver")          \
  X(VK_ERROR_TOO_MANY_OBJECTS, "too many objects of the type exist already")   \
  X(VK_ERROR_FORMAT_NOT_SUPPORTED, "a requested format is not supported")      \
  X(VK_ERROR_FRAGMENTED_POOL, "a pool allocation failed from fragmentation")   \
  X(VK_ERROR_UNKNOWN, "an unknown error has occurred")                         \
  X(VK_ERROR_OUT_OF_POOL_MEMORY, "a pool memory allocation has failed")        \
  X(VK_ERROR_INVALID_EXTERNAL_HANDLE, "an external handle is not valid")       \
  X(VK_ERROR_FRAGMENTATION, "an allocation failed from fragmentation")         \
  X(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS,                                   \
    "the requested address is not available")                                 \
  X(VK_PIPELINE_COMPILE_REQUIRED,                                              \
    "the pipeline needs compiling, which was not allowed")                    \
  X(VK_ERROR_VALIDATION_FAILED_EXT, "invalid usage was detected")              \
  X(VK_ERROR_INVALID_SHADER_NV, "shaders failed to compile or link")           \
  X(VK_ERROR_NOT_PERMITTED_KHR, "the driver denied the request")

const char *kiln_vulkan_result_name(VkResult result) {
  switch (result) {
#define KILN_VULKAN_NAME(r, text)                                              \
  case r: return #r;
    KILN_VULKAN_RESULTS(KILN_VULKAN_NAME)
#undef KILN_VULKAN_NAME
  default: return "VkResult (unknown value)";
  }
}

static const char *result_text(VkResult result) {
  switch (result) {
#define KILN_VULKAN_TEXT(r, text)                                              \
  case r: return text;
    KILN_VULKAN_RESULTS(KILN_VULKAN_TEXT)
#undef KILN_VULKAN_TEXT
  default: return NULL;
  }
}

void kiln_vulkan_describe(VkResult result, char *buf, size_t size) {
  const char *text = result_text(result);
  if (text)
    snprintf(buf, size, "%s (%s)", kiln_vulkan_result_name(result), text);
  else
    snprintf(buf, size, "VkResult %d", (int)result);
}

kiln_status kiln_vulkan_status(VkResult result, kiln_status fallback) {
  switch (result) {
  case VK_SUCCESS: return KILN_OK;
  case VK_NOT_READY:
  case VK_TIMEOUT: return KILN_ERROR_NOT_READY;
  case VK_ERROR_OUT_OF_HOST_MEMORY:
  case VK_ERROR_MEMORY_MAP_FAILED: return KILN_ERROR_OUT_OF_HOST_MEMORY;
  case VK_ERROR_OUT_OF_DEVICE_MEMORY:
  case VK_ERROR_TOO_MANY_OBJECTS:
  case VK_ERROR_FRAGMENTATION: return KILN_ERROR_OUT_OF_DEVICE_MEMORY;
  case VK_ERROR_DEVICE_LOST: return KILN_ERROR_DEVICE_LOST;
  case VK_ERROR_INITIALIZATION_FAILED:
  case VK_ERROR_INCOMPATIBLE_DRIVER:
  case VK_ERROR_LAYER_NOT_PRESENT:
  case VK_ERROR_EXTENSION_NOT_PRESENT: return KILN_ERROR_UNAVAILABLE;
  case VK_ERROR_FEATURE_NOT_PRESENT:
  case VK_ERROR_FORMAT_NOT_SUPPORTED:
  case VK_ERROR_NOT_PERMITTED_KHR: return KILN_ERROR_UNSUPPORTED;
  case VK_ERROR_INVALID_SHADER_NV: return KILN_ERROR_INVALID_IMAGE;
  default: return fallback;
  }
}

kiln_status kiln_vulkan_error(VkResult result, const char *fmt, ...) {
  char why[384];
  kiln_vulkan_describe(result, why, sizeof why);
  va_list ap;
  va_start(ap, fmt);
  const kiln_status status = kiln_vulkan_status(result, KILN_ERROR_BACKEND);
  kiln_status st = kiln_call_failed(status, why, fmt, ap);
  va_end(ap);
  return st;
}

kiln_status kiln_vulkan_error_as(VkResult result, kiln_status fallback,
                                 const char *fmt, ...) {
  char why[384];
  kiln_vulkan_describe(result, why, sizeof why);
  va_list ap;
  va_start(ap, fmt);
  kiln_status st =
      kiln_call_failed(kiln_vulkan_status(result, fallback), why, fmt, ap);
  va_end(ap);
  return st;
}

void kiln_vulkan_warn(VkResult result, const char *fmt, ...) {
  char why[384];
  kiln_vulkan_describe(result, why, sizeof why);
  va_list ap;
  va_start(ap, fmt);
  kiln_call_warn("vulkan", why, fmt, ap);
  va_end(ap);
}
