/* CUresult -> kiln_status, and messages that carry the driver's own error
 * name and description. */
#include <stdarg.h>
#include <stdio.h>

#include "backends/common/common.h"
#include "backends/cuda/cuda.h"

kiln_status kiln_cuda_status(CUresult result, kiln_status fallback) {
  switch (result) {
  case CUDA_SUCCESS: return KILN_OK;

  /* The kernel faulted or the hardware failed. The driver leaves the
   * context unusable ("any further CUDA work will return the same error;
   * the process must be terminated and relaunched"), so the core marks the
   * kiln context lost instead of letting later calls touch it. */
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_NVLINK_UNCORRECTABLE:
  case CUDA_ERROR_EXTERNAL_DEVICE:
  case CUDA_ERROR_MPS_CLIENT_TERMINATED: return KILN_ERROR_DEVICE_LOST;

  case CUDA_ERROR_INVALID_VALUE: return KILN_ERROR_INVALID_ARGUMENT;
  case CUDA_ERROR_OUT_OF_MEMORY: return KILN_ERROR_OUT_OF_DEVICE_MEMORY;
  case CUDA_ERROR_INVALID_HANDLE: return KILN_ERROR_INVALID_HANDLE;
  case CUDA_ERROR_NOT_READY: return KILN_ERROR_NOT_READY;

  case CUDA_ERROR_NOT_FOUND:
  case CUDA_ERROR_INVALID_DEVICE:
  case CUDA_ERROR_FILE_NOT_FOUND:
  case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND: return KILN_ERROR_NOT_FOUND;

  case CUDA_ERROR_INVALID_IMAGE:
  case CUDA_ERROR_NO_BINARY_FOR_GPU:
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
  case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
  case CUDA_ERROR_JIT_COMPILATION_DISABLED:
  case CUDA_ERROR_INVALID_SOURCE: return KILN_ERROR_INVALID_IMAGE;

  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
  case CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING:
  case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
  case CUDA_ERROR_INVALID_CLUSTER_SIZE: return KILN_ERROR_LAUNCH_FAILED;

  case CUDA_ERROR_NO_DEVICE:
  case CUDA_ERROR_STUB_LIBRARY:
  case CUDA_ERROR_DEVICE_UNAVAILABLE:
  case CUDA_ERROR_DEVICE_NOT_LICENSED:
  case CUDA_ERROR_SYSTEM_NOT_READY:
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
  case CUDA_ERROR_MPS_CONNECTION_FAILED:
  case CUDA_ERROR_MPS_RPC_FAILURE:
  case CUDA_ERROR_MPS_SERVER_NOT_READY:
  case CUDA_ERROR_MPS_MAX_CLIENTS_REACHED:
  case CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED: return KILN_ERROR_UNAVAILABLE;

  case CUDA_ERROR_NOT_SUPPORTED:
  case CUDA_ERROR_NOT_PERMITTED:
  case CUDA_ERROR_UNSUPPORTED_LIMIT:
  case CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY:
  case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
  case CUDA_ERROR_TOO_MANY_PEERS:
  case CUDA_ERROR_CDP_NOT_SUPPORTED:
  case CUDA_ERROR_CDP_VERSION_MISMATCH: return KILN_ERROR_UNSUPPORTED;

  case CUDA_ERROR_NOT_INITIALIZED:
  case CUDA_ERROR_DEINITIALIZED:
  case CUDA_ERROR_INVALID_CONTEXT:
  case CUDA_ERROR_CONTEXT_ALREADY_CURRENT:
  case CUDA_ERROR_CONTEXT_ALREADY_IN_USE:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
  case CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE:
  case CUDA_ERROR_INVALID_GRAPHICS_CONTEXT:
  case CUDA_ERROR_ILLEGAL_STATE:
  case CUDA_ERROR_ARRAY_IS_MAPPED:
  case CUDA_ERROR_ALREADY_MAPPED:
  case CUDA_ERROR_ALREADY_ACQUIRED:
  case CUDA_ERROR_NOT_MAPPED:
  case CUDA_ERROR_NOT_MAPPED_AS_ARRAY:
  case CUDA_ERROR_NOT_MAPPED_AS_POINTER:
  case CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
  case CUDA_ERROR_PEER_ACCESS_NOT_ENABLED:
  case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
  case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
  case CUDA_ERROR_STREAM_CAPTURE_MERGE:
  case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED:
  case CUDA_ERROR_STREAM_CAPTURE_UNJOINED:
  case CUDA_ERROR_STREAM_CAPTURE_ISOLATION:
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
  case CUDA_ERROR_CAPTURED_EVENT:
  case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD: return KILN_ERROR_INVALID_STATE;


#if CUDA_VERSION >= 13000
  /* Codes younger than the oldest cuda.h kiln builds against (12.4). Built
   * against an older header they reach the default case, which still
   * names them through the driver. */
  case CUDA_ERROR_CONTAINED:
  case CUDA_ERROR_TENSOR_MEMORY_LEAK: return KILN_ERROR_DEVICE_LOST;
  case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
  case CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC: return KILN_ERROR_UNSUPPORTED;
  case CUDA_ERROR_FUNCTION_NOT_LOADED:
  case CUDA_ERROR_LOSSY_QUERY: return KILN_ERROR_INVALID_STATE;
  case CUDA_ERROR_INVALID_RESOURCE_TYPE:
  case CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION:
    return KILN_ERROR_INVALID_ARGUMENT;
#endif

  /* Profiler, mapping, OS and unknown failures say nothing a caller can
   * act on beyond "this call failed": the call's own status. */
  default: return fallback;
  }
}

void kiln_cuda_describe(CUresult result, char *buf, size_t size) {
  const char *name = NULL;
  const char *text = NULL;
  /* Before the table is loaded (a failing probe) there is no driver to
   * ask; and the driver answers CUDA_ERROR_INVALID_VALUE for a code it does
   * not know. */
  if (kiln_cuda_api.cuGetErrorName &&
      kiln_cuda_api.cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = NULL;
  if (kiln_cuda_api.cuGetErrorString &&
      kiln_cuda_api.cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = NULL;
  if (name && text)
    snprintf(buf, size, "%s (%s)", name, text);
  else if (name)
    snprintf(buf, size, "%s", name);
  else
    snprintf(buf, size, "CUresult %d", (int)result);
}

/* The shared helper's view of CUresult: see backends/common/common.h. */
static kiln_status status_of(int code, kiln_status fallback) {
  return kiln_cuda_status((CUresult)code, fallback);
}

static void describe(int code, char *buf, size_t size) {
  kiln_cuda_describe((CUresult)code, buf, size);
}

static const kiln_vendor vendor = {"cuda", status_of, describe};

kiln_status kiln_cuda_error(CUresult result, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status st =
      kiln_vendor_error(&vendor, (int)result, KILN_ERROR_BACKEND, fmt, ap);
  va_end(ap);
  return st;
}

kiln_status kiln_cuda_error_as(CUresult result, kiln_status fallback,
                               const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_status st = kiln_vendor_error(&vendor, (int)result, fallback, fmt, ap);
  va_end(ap);
  return st;
}

void kiln_cuda_warn(CUresult result, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  kiln_vendor_warn(&vendor, (int)result, fmt, ap);
  va_end(ap);
}
