/* The shim's loading of the CUDA driver, its errors, its devices, and the
 * per-thread current device that HIP has and the driver API does not. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/hip/shim/shim.h"

shim_cuda shim_cu;

#define SHIM_MAX_DEVICES 64

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static hipError_t ready_status;
/* Why the driver cannot be used, for hipGetErrorString. */
static char ready_detail[256];
static int device_count;
static CUdevice devices[SHIM_MAX_DEVICES];
/* Each device's primary context, retained on first use and kept for the
 * life of the process, as the HIP runtime keeps its devices. */
static CUcontext contexts[SHIM_MAX_DEVICES];
static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local int current_device;
/* The CUDA failure behind this thread's last error, and its HIP code. */
static _Thread_local char last_cuda[256];
static _Thread_local hipError_t last_cuda_error;
static _Thread_local char error_text[512];

static hipError_t from_cuda(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS: return hipSuccess;
  case CUDA_ERROR_INVALID_VALUE: return hipErrorInvalidValue;
  case CUDA_ERROR_OUT_OF_MEMORY: return hipErrorOutOfMemory;
  case CUDA_ERROR_NOT_INITIALIZED: return hipErrorNotInitialized;
  case CUDA_ERROR_DEINITIALIZED: return hipErrorDeinitialized;
  case CUDA_ERROR_STUB_LIBRARY:
  case CUDA_ERROR_NO_DEVICE: return hipErrorNoDevice;
  case CUDA_ERROR_INVALID_DEVICE: return hipErrorInvalidDevice;
  case CUDA_ERROR_INVALID_IMAGE: return hipErrorInvalidImage;
  case CUDA_ERROR_INVALID_CONTEXT: return hipErrorInvalidContext;
  case CUDA_ERROR_NO_BINARY_FOR_GPU: return hipErrorNoBinaryForGpu;
  case CUDA_ERROR_ECC_UNCORRECTABLE: return hipErrorECCNotCorrectable;
  case CUDA_ERROR_INVALID_PTX:
  case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
  case CUDA_ERROR_JIT_COMPILER_NOT_FOUND: return hipErrorInvalidKernelFile;
  case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
    return hipErrorSharedObjectSymbolNotFound;
  case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
    return hipErrorSharedObjectInitFailed;
  case CUDA_ERROR_OPERATING_SYSTEM: return hipErrorOperatingSystem;
  case CUDA_ERROR_INVALID_HANDLE: return hipErrorInvalidHandle;
  case CUDA_ERROR_NOT_FOUND: return hipErrorNotFound;
  case CUDA_ERROR_NOT_READY: return hipErrorNotReady;
  case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED: return hipErrorPeerAccessUnsupported;
  case CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED:
    return hipErrorPeerAccessAlreadyEnabled;
  case CUDA_ERROR_ILLEGAL_ADDRESS: return hipErrorIllegalAddress;
  case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    return hipErrorLaunchOutOfResources;
  case CUDA_ERROR_LAUNCH_TIMEOUT: return hipErrorLaunchTimeOut;
  case CUDA_ERROR_CONTEXT_IS_DESTROYED: return hipErrorContextIsDestroyed;
  case CUDA_ERROR_ASSERT: return hipErrorAssert;
  /* HIP has one code for the faults of a running kernel that CUDA tells
   * apart; all of them are sticky. */
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED: return hipErrorLaunchFailure;
  case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
    return hipErrorCooperativeLaunchTooLarge;
  case CUDA_ERROR_NOT_SUPPORTED: return hipErrorNotSupported;
  case CUDA_ERROR_UNSUPPORTED_LIMIT: return hipErrorUnsupportedLimit;
  case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
  case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    return hipErrorInsufficientDriver;
  default: return hipErrorUnknown;
  }
}

static void describe_cuda(CUresult r, const char *call, char *buf,
                          size_t size) {
  const char *name = NULL, *text = NULL;
  if (shim_cu.cuGetErrorName) shim_cu.cuGetErrorName(r, &name);
  if (shim_cu.cuGetErrorString) shim_cu.cuGetErrorString(r, &text);
  snprintf(buf, size, "%s returned %s: %s", call, name ? name : "CUresult",
           text ? text : "no description");
}

hipError_t shim_error(CUresult result, const char *call) {
  hipError_t err = from_cuda(result);
  if (err != hipSuccess) {
    describe_cuda(result, call, last_cuda, sizeof last_cuda);
    last_cuda_error = err;
  }
  return err;
}

static void load(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    snprintf(ready_detail, sizeof ready_detail,
             "the CUDA driver is not installed (%s)",
             why ? why : "libcuda.so.1 not found");
    ready_status = hipErrorNoDevice;
    return;
  }
  void *sym = dlsym(lib, "cuGetProcAddress_v2");
  if (!sym) {
    snprintf(ready_detail, sizeof ready_detail,
             "the CUDA driver is older than 12.0 (no cuGetProcAddress_v2)");
    ready_status = hipErrorInsufficientDriver;
    return;
  }
  PFN_cuGetProcAddress_v12000 get_proc;
  memcpy(&get_proc, &sym, sizeof get_proc);
  shim_cuda cu;
  memset(&cu, 0, sizeof cu);
  void *fn;
  CUdriverProcAddressQueryResult found;
#define SHIM_X(name, version)                                                 \
  fn = NULL;                                                                  \
  if (get_proc(#name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &found) !=   \
          CUDA_SUCCESS ||                                                     \
      !fn) {                                                                  \
    snprintf(ready_detail, sizeof ready_detail,                               \
             "the CUDA driver lacks %s at version %d", #name, version);       \
    ready_status = hipErrorInsufficientDriver;                                \
    return;                                                                   \
  }                                                                           \
  memcpy(&cu.name, &fn, sizeof cu.name);
  SHIM_CUDA_SYMBOLS(SHIM_X)
#undef SHIM_X
  shim_cu = cu;

  CUresult r = shim_cu.cuInit(0);
  int count = 0;
  if (r == CUDA_SUCCESS) r = shim_cu.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    describe_cuda(r, "cuInit", ready_detail, sizeof ready_detail);
    ready_status = from_cuda(r);
    return;
  }
  if (count > SHIM_MAX_DEVICES) count = SHIM_MAX_DEVICES;
  for (int i = 0; i < count; i++) {
    r = shim_cu.cuDeviceGet(&devices[i], i);
    if (r != CUDA_SUCCESS) {
      describe_cuda(r, "cuDeviceGet", ready_detail, sizeof ready_detail);
      ready_status = from_cuda(r);
      return;
    }
  }
  device_count = count;
  if (count == 0) {
    snprintf(ready_detail, sizeof ready_detail,
             "the CUDA driver sees no device");
    ready_status = hipErrorNoDevice;
  }
}

hipError_t shim_ready(void) {
  pthread_once(&load_once, load);
  return ready_status;
}

static hipError_t check_device(int device) {
  hipError_t err = shim_ready();
  if (err != hipSuccess) return err;
  return device >= 0 && device < device_count ? hipSuccess
                                              : hipErrorInvalidDevice;
}

static hipError_t make_current(CUcontext ctx) {
  CUcontext now = NULL;
  if (shim_cu.cuCtxGetCurrent(&now) == CUDA_SUCCESS && now == ctx)
    return hipSuccess;
  return shim_error(shim_cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
}

hipError_t shim_device(int device, CUdevice *out) {
  hipError_t err = check_device(device);
  if (err == hipSuccess) *out = devices[device];
  return err;
}

hipError_t shim_device_context(int device, CUcontext *out) {
  hipError_t err = check_device(device);
  if (err != hipSuccess) return err;
  pthread_mutex_lock(&contexts_lock);
  CUresult r = CUDA_SUCCESS;
  if (!contexts[device])
    r = shim_cu.cuDevicePrimaryCtxRetain(&contexts[device], devices[device]);
  *out = contexts[device];
  pthread_mutex_unlock(&contexts_lock);
  if (r != CUDA_SUCCESS) return shim_error(r, "cuDevicePrimaryCtxRetain");
  return hipSuccess;
}

hipError_t shim_enter(void) {
  CUcontext ctx;
  hipError_t err = shim_device_context(current_device, &ctx);
  if (err != hipSuccess) return err;
  return make_current(ctx);
}

hipError_t shim_enter_stream(hipStream_t stream) {
  if (!stream) return shim_enter();
  hipError_t err = shim_ready();
  if (err != hipSuccess) return err;
  CUcontext ctx;
  CUresult r = shim_cu.cuStreamGetCtx(SHIM_HANDLE(CUstream, stream), &ctx);
  if (r != CUDA_SUCCESS) return shim_error(r, "cuStreamGetCtx");
  return make_current(ctx);
}

/* ---- Errors ------------------------------------------------------------- */

const char *hipGetErrorName(hipError_t hip_error) {
  switch (hip_error) {
#define SHIM_NAME(name, value) \
  case name: return #name;
    KILN_HIP_ERRORS(SHIM_NAME)
#undef SHIM_NAME
  }
  return "hipErrorUnknown";
}

static const char *describe(hipError_t err) {
  switch (err) {
  case hipSuccess: return "no error";
  case hipErrorInvalidValue: return "invalid argument";
  case hipErrorOutOfMemory: return "out of memory";
  case hipErrorNoDevice: return "no CUDA-capable device is detected";
  case hipErrorInvalidDevice: return "invalid device ordinal";
  case hipErrorInvalidImage: return "device kernel image is invalid";
  case hipErrorNoBinaryForGpu:
    return "no kernel image is available for execution on the device";
  case hipErrorInvalidHandle: return "invalid resource handle";
  case hipErrorNotFound: return "named symbol not found";
  case hipErrorNotReady: return "device not ready";
  case hipErrorIllegalAddress:
    return "an illegal memory access was encountered";
  case hipErrorLaunchFailure: return "unspecified launch failure";
  case hipErrorNotSupported: return "operation not supported";
  default: return hipGetErrorName(err);
  }
}

/* The thread's CUDA detail is added when it belongs to this error; the
 * text stays valid until the thread's next call. */
const char *hipGetErrorString(hipError_t hip_error) {
  const char *text = describe(hip_error);
  if (hip_error == shim_ready() && ready_detail[0])
    snprintf(error_text, sizeof error_text,
             "%s (kiln's HIP-on-CUDA test shim: %s)", text, ready_detail);
  else if (hip_error != hipSuccess && hip_error == last_cuda_error)
    snprintf(error_text, sizeof error_text,
             "%s (kiln's HIP-on-CUDA test shim: %s)", text, last_cuda);
  else
    return text;
  return error_text;
}

/* ---- Runtime and devices ------------------------------------------------ */

hipError_t hipInit(unsigned int flags) {
  if (flags != 0) return hipErrorInvalidValue;
  return shim_ready();
}

/* The CUDA version the shim was built for: HIP on NVIDIA reports the CUDA
 * runtime's version here. */
hipError_t hipRuntimeGetVersion(int *runtime_version) {
  if (!runtime_version) return hipErrorInvalidValue;
  *runtime_version = CUDA_VERSION;
  return hipSuccess;
}

/* 0 without a driver, as CUDA answers. */
hipError_t hipDriverGetVersion(int *driver_version) {
  if (!driver_version) return hipErrorInvalidValue;
  *driver_version = 0;
  if (shim_ready() != hipSuccess) return hipSuccess;
  return shim_error(shim_cu.cuDriverGetVersion(driver_version),
                    "cuDriverGetVersion");
}

hipError_t hipGetDeviceCount(int *count) {
  if (!count) return hipErrorInvalidValue;
  *count = 0;
  hipError_t err = shim_ready();
  if (err != hipSuccess) return err;
  *count = device_count;
  return hipSuccess;
}

hipError_t hipGetDevice(int *device_id) {
  if (!device_id) return hipErrorInvalidValue;
  hipError_t err = shim_ready();
  if (err != hipSuccess) return err;
  *device_id = current_device;
  return hipSuccess;
}

hipError_t hipSetDevice(int device_id) {
  hipError_t err = check_device(device_id);
  if (err != hipSuccess) return err;
  current_device = device_id;
  return shim_enter();
}

/* HIP's device handles are the ordinals. */
hipError_t hipDeviceGet(hipDevice_t *device, int ordinal) {
  if (!device) return hipErrorInvalidValue;
  hipError_t err = check_device(ordinal);
  if (err != hipSuccess) return err;
  *device = ordinal;
  return hipSuccess;
}

hipError_t hipDeviceGetName(char *name, int len, hipDevice_t device) {
  if (!name || len <= 0) return hipErrorInvalidValue;
  hipError_t err = check_device(device);
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuDeviceGetName(name, len, devices[device]),
                    "cuDeviceGetName");
}

hipError_t hipDeviceTotalMem(size_t *bytes, hipDevice_t device) {
  if (!bytes) return hipErrorInvalidValue;
  hipError_t err = check_device(device);
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuDeviceTotalMem(bytes, devices[device]),
                    "cuDeviceTotalMem");
}

hipError_t hipDeviceGetUuid(hipUUID *uuid, hipDevice_t device) {
  if (!uuid) return hipErrorInvalidValue;
  hipError_t err = check_device(device);
  if (err != hipSuccess) return err;
  CUuuid id;
  err = shim_error(shim_cu.cuDeviceGetUuid(&id, devices[device]),
                   "cuDeviceGetUuid");
  if (err == hipSuccess) memcpy(uuid->bytes, id.bytes, sizeof uuid->bytes);
  return err;
}

/* "0000:3B:00.0", as cuDeviceGetPCIBusId and HIP on NVIDIA write it. */
hipError_t hipDeviceGetPCIBusId(char *pci_bus_id, int len, int device) {
  if (!pci_bus_id || len <= 0) return hipErrorInvalidValue;
  hipError_t err = check_device(device);
  if (err != hipSuccess) return err;
  return shim_error(
      shim_cu.cuDeviceGetPCIBusId(pci_bus_id, len, devices[device]),
      "cuDeviceGetPCIBusId");
}

hipError_t hipDeviceCanAccessPeer(int *can_access_peer, int device_id,
                                  int peer_device_id) {
  if (!can_access_peer) return hipErrorInvalidValue;
  hipError_t err = check_device(device_id);
  if (err == hipSuccess) err = check_device(peer_device_id);
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuDeviceCanAccessPeer(can_access_peer,
                                                  devices[device_id],
                                                  devices[peer_device_id]),
                    "cuDeviceCanAccessPeer");
}

/* From the current device's primary context to the peer's, as HIP does. */
hipError_t hipDeviceEnablePeerAccess(int peer_device_id, unsigned int flags) {
  if (flags != 0) return hipErrorInvalidValue;
  CUcontext peer;
  hipError_t err = shim_device_context(peer_device_id, &peer);
  if (err == hipSuccess) err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuCtxEnablePeerAccess(peer, 0),
                    "cuCtxEnablePeerAccess");
}

hipError_t hipDeviceGetAttribute(int *value, hipDeviceAttribute_t attr,
                                 int device_id) {
  if (!value) return hipErrorInvalidValue;
  hipError_t err = check_device(device_id);
  if (err != hipSuccess) return err;
  CUdevice_attribute cu_attr;
  switch (attr) {
  case hipDeviceAttributeIntegrated:
    cu_attr = CU_DEVICE_ATTRIBUTE_INTEGRATED;
    break;
  case hipDeviceAttributeComputeCapabilityMajor:
    cu_attr = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR;
    break;
  case hipDeviceAttributeComputeCapabilityMinor:
    cu_attr = CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR;
    break;
  case hipDeviceAttributeMaxBlockDimX:
    cu_attr = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X;
    break;
  case hipDeviceAttributeMaxBlockDimY:
    cu_attr = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y;
    break;
  case hipDeviceAttributeMaxBlockDimZ:
    cu_attr = CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z;
    break;
  case hipDeviceAttributeMaxGridDimX:
    cu_attr = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X;
    break;
  case hipDeviceAttributeMaxGridDimY:
    cu_attr = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y;
    break;
  case hipDeviceAttributeMaxGridDimZ:
    cu_attr = CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z;
    break;
  case hipDeviceAttributeMaxThreadsPerBlock:
    cu_attr = CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    break;
  case hipDeviceAttributeMultiprocessorCount:
    cu_attr = CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
    break;
  case hipDeviceAttributeMaxSharedMemoryPerBlock:
    cu_attr = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK;
    break;
  case hipDeviceAttributeSharedMemPerBlockOptin:
    cu_attr = CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN;
    break;
  case hipDeviceAttributeWarpSize:
    cu_attr = CU_DEVICE_ATTRIBUTE_WARP_SIZE;
    break;
  case hipDeviceAttributeMemoryPoolsSupported:
    cu_attr = CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED;
    break;
  default: return hipErrorInvalidValue;
  }
  return shim_error(
      shim_cu.cuDeviceGetAttribute(value, cu_attr, devices[device_id]),
      "cuDeviceGetAttribute");
}

/* What HIP on NVIDIA fills of the properties that kiln reads: the name,
 * which every layout of hipDeviceProp_t begins with. There is no gfx
 * architecture name on NVIDIA. */
hipError_t hipGetDeviceProperties(hipDeviceProp_t *prop, int device_id) {
  if (!prop) return hipErrorInvalidValue;
  hipError_t err = check_device(device_id);
  if (err != hipSuccess) return err;
  char *name = (char *)(void *)prop;
  memset(name, 0, 256);
  return shim_error(shim_cu.cuDeviceGetName(name, 256, devices[device_id]),
                    "cuDeviceGetName");
}

hipError_t hipDeviceSynchronize(void) {
  hipError_t err = shim_enter();
  if (err != hipSuccess) return err;
  return shim_error(shim_cu.cuCtxSynchronize(), "cuCtxSynchronize");
}
