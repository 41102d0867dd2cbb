/* The raw CUDA driver comparator: libcuda.so.1 loaded and driven directly,
 * so that kiln's own overhead shows as the difference. It declares the few
 * driver types it needs instead of including cuda.h, so kiln-bench builds
 * without a CUDA toolkit and finds the driver at run time, as kiln does.
 * Past 600 lines for a reason: the raw mirror of every kiln path the bench
 * compares (launches, graphs, copies, pools, events) drives one loaded
 * table and one context; split by section, each part would reach into
 * the loader's private state. */
#include "cuda_raw.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult; /* CUDA_SUCCESS is 0 */
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
/* CUmemPoolProps: its size and leading members have stayed put since CUDA
 * 11.2; later members came out of the reserved bytes, and zero is their
 * default. */
typedef struct raw_pool_props {
  int alloc_type;   /* CU_MEM_ALLOCATION_TYPE_PINNED: 1 */
  int handle_types; /* CU_MEM_HANDLE_TYPE_NONE: 0 */
  int location_type; /* CU_MEM_LOCATION_TYPE_DEVICE: 1 */
  int location_id;
  void *win32_security_attributes;
  unsigned char reserved[64];
} raw_pool_props;

#define RAW_STREAM_NON_BLOCKING 1u
#define RAW_CAPTURE_MODE_RELAXED 2
#define RAW_EVENT_DEFAULT 0u
#define RAW_EVENT_DISABLE_TIMING 2u
#define RAW_MAX_MODULES 8
/* CUmemPool_attribute: values of type cuuint64_t. */
#define RAW_POOL_RELEASE_THRESHOLD 4
/* CUmemPool_attribute with an int value. */
#define RAW_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES 3
#define RAW_POOL_USED_MEM_CURRENT 7
/* CUdevice_attribute */
#define RAW_DEVICE_L2_CACHE_SIZE 38

/* The entry points used, by their exported (versioned) names. */
typedef struct cuda_api {
  CUresult (*Init)(unsigned);
  CUresult (*DriverGetVersion)(int *);
  CUresult (*GetErrorName)(CUresult, const char **);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*DeviceGetUuid)(unsigned char *, CUdevice);
  CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*DevicePrimaryCtxRelease)(CUdevice);
  CUresult (*CtxPushCurrent)(CUcontext);
  CUresult (*CtxPopCurrent)(CUcontext *);
  CUresult (*CtxGetCurrent)(CUcontext *);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*ModuleLoadData)(CUmodule *, const void *);
  CUresult (*ModuleUnload)(CUmodule);
  CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, unsigned, CUstream,
                           void **, void **);
  CUresult (*MemAlloc)(raw_ptr *, size_t);
  CUresult (*MemFree)(raw_ptr);
  CUresult (*MemAllocHost)(void **, size_t);
  CUresult (*MemFreeHost)(void *);
  CUresult (*MemsetD32Async)(raw_ptr, unsigned, size_t, CUstream);
  CUresult (*MemcpyDtoDAsync)(raw_ptr, raw_ptr, size_t, CUstream);
  CUresult (*MemcpyHtoDAsync)(raw_ptr, const void *, size_t, CUstream);
  CUresult (*MemcpyDtoHAsync)(void *, raw_ptr, size_t, CUstream);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*StreamBeginCapture)(CUstream, int);
  CUresult (*StreamEndCapture)(CUstream, CUgraph *);
  CUresult (*GraphInstantiateWithFlags)(CUgraphExec *, CUgraph,
                                        unsigned long long);
  CUresult (*GraphLaunch)(CUgraphExec, CUstream);
  CUresult (*GraphExecDestroy)(CUgraphExec);
  CUresult (*GraphDestroy)(CUgraph);
  CUresult (*DeviceCanAccessPeer)(int *, CUdevice, CUdevice);
  CUresult (*CtxEnablePeerAccess)(CUcontext, unsigned);
  CUresult (*MemcpyPeerAsync)(raw_ptr, CUcontext, raw_ptr, CUcontext, size_t,
                              CUstream);
  CUresult (*MemAllocAsync)(raw_ptr *, size_t, CUstream);
  CUresult (*MemFreeAsync)(raw_ptr, CUstream);
  CUresult (*DeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
  CUresult (*MemPoolSetAttribute)(CUmemoryPool, int, void *);
  CUresult (*MemPoolGetAttribute)(CUmemoryPool, int, void *);
  CUresult (*MemPoolCreate)(CUmemoryPool *, const raw_pool_props *);
  CUresult (*MemPoolDestroy)(CUmemoryPool);
  CUresult (*MemAllocFromPoolAsync)(raw_ptr *, size_t, CUmemoryPool,
                                    CUstream);
} cuda_api;

/* Each slot's exported name, and an older name for drivers without it. */
static const struct {
  const char *name, *older;
  size_t offset;
} cuda_symbols[] = {
#define RAW_SYMBOL(field, name, older) {name, older, offsetof(cuda_api, field)}
    RAW_SYMBOL(Init, "cuInit", NULL),
    RAW_SYMBOL(DriverGetVersion, "cuDriverGetVersion", NULL),
    RAW_SYMBOL(GetErrorName, "cuGetErrorName", NULL),
    RAW_SYMBOL(DeviceGetCount, "cuDeviceGetCount", NULL),
    RAW_SYMBOL(DeviceGet, "cuDeviceGet", NULL),
    RAW_SYMBOL(DeviceGetName, "cuDeviceGetName", NULL),
    RAW_SYMBOL(DeviceGetAttribute, "cuDeviceGetAttribute", NULL),
    RAW_SYMBOL(DeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid"),
    RAW_SYMBOL(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL),
    RAW_SYMBOL(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",
               "cuDevicePrimaryCtxRelease"),
    RAW_SYMBOL(CtxPushCurrent, "cuCtxPushCurrent_v2", NULL),
    RAW_SYMBOL(CtxPopCurrent, "cuCtxPopCurrent_v2", NULL),
    RAW_SYMBOL(CtxGetCurrent, "cuCtxGetCurrent", NULL),
    RAW_SYMBOL(CtxSetCurrent, "cuCtxSetCurrent", NULL),
    RAW_SYMBOL(ModuleLoadData, "cuModuleLoadData", NULL),
    RAW_SYMBOL(ModuleUnload, "cuModuleUnload", NULL),
    RAW_SYMBOL(ModuleGetFunction, "cuModuleGetFunction", NULL),
    RAW_SYMBOL(LaunchKernel, "cuLaunchKernel", NULL),
    RAW_SYMBOL(MemAlloc, "cuMemAlloc_v2", NULL),
    RAW_SYMBOL(MemFree, "cuMemFree_v2", NULL),
    RAW_SYMBOL(MemAllocHost, "cuMemAllocHost_v2", NULL),
    RAW_SYMBOL(MemFreeHost, "cuMemFreeHost", NULL),
    RAW_SYMBOL(MemsetD32Async, "cuMemsetD32Async", NULL),
    RAW_SYMBOL(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL),
    RAW_SYMBOL(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL),
    RAW_SYMBOL(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL),
    RAW_SYMBOL(StreamCreate, "cuStreamCreate", NULL),
    RAW_SYMBOL(StreamDestroy, "cuStreamDestroy_v2", NULL),
    RAW_SYMBOL(StreamSynchronize, "cuStreamSynchronize", NULL),
    RAW_SYMBOL(StreamWaitEvent, "cuStreamWaitEvent", NULL),
    RAW_SYMBOL(EventCreate, "cuEventCreate", NULL),
    RAW_SYMBOL(EventDestroy, "cuEventDestroy_v2", NULL),
    RAW_SYMBOL(EventRecord, "cuEventRecord", NULL),
    RAW_SYMBOL(EventSynchronize, "cuEventSynchronize", NULL),
    RAW_SYMBOL(EventElapsedTime, "cuEventElapsedTime_v2",
               "cuEventElapsedTime"),
    RAW_SYMBOL(StreamBeginCapture, "cuStreamBeginCapture_v2", NULL),
    RAW_SYMBOL(StreamEndCapture, "cuStreamEndCapture", NULL),
    RAW_SYMBOL(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags",
               NULL),
    RAW_SYMBOL(GraphLaunch, "cuGraphLaunch", NULL),
    RAW_SYMBOL(GraphExecDestroy, "cuGraphExecDestroy", NULL),
    RAW_SYMBOL(GraphDestroy, "cuGraphDestroy", NULL),
    RAW_SYMBOL(DeviceCanAccessPeer, "cuDeviceCanAccessPeer", NULL),
    RAW_SYMBOL(CtxEnablePeerAccess, "cuCtxEnablePeerAccess", NULL),
    RAW_SYMBOL(MemcpyPeerAsync, "cuMemcpyPeerAsync", NULL),
    RAW_SYMBOL(MemAllocAsync, "cuMemAllocAsync", NULL),
    RAW_SYMBOL(MemFreeAsync, "cuMemFreeAsync", NULL),
    RAW_SYMBOL(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", NULL),
    RAW_SYMBOL(MemPoolSetAttribute, "cuMemPoolSetAttribute", NULL),
    RAW_SYMBOL(MemPoolGetAttribute, "cuMemPoolGetAttribute", NULL),
    RAW_SYMBOL(MemPoolCreate, "cuMemPoolCreate", NULL),
    RAW_SYMBOL(MemPoolDestroy, "cuMemPoolDestroy", NULL),
    RAW_SYMBOL(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", NULL),
#undef RAW_SYMBOL
};

struct cuda_raw {
  void *library;
  cuda_api api;
  CUdevice device;
  CUcontext context; /* the device's primary context, retained */
  CUstream stream; /* the one the calls below use */
  CUstream own;    /* the comparator's own */
  CUmemoryPool pool; /* made as kiln makes its own; NULL until used */
  CUevent start, end;
  CUmodule modules[RAW_MAX_MODULES];
  size_t module_count;
  /* A second device's primary context, for copies between devices. */
  CUdevice peer_device;
  CUcontext peer_context;
  char description[320];
};

/* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: kiln, sharing the primary
 * contexts, may have enabled it first. */
#define RAW_PEER_ALREADY_ENABLED 704

/* Prints a failed driver call with the driver's name for the error. */
static int raw_failed(const cuda_raw *r, const char *call, CUresult result) {
  const char *name = NULL;
  if (r->api.GetErrorName == NULL ||
      r->api.GetErrorName(result, &name) != 0 || name == NULL)
    name = "unknown CUresult";
  fprintf(stderr, "kiln-bench: raw CUDA: %s failed: %s (%d)\n", call, name,
          result);
  return -1;
}

#define RAW_CALL(r, call)                                    \
  do {                                                       \
    CUresult raw_result_ = (r)->api.call;                    \
    if (raw_result_ != 0) return raw_failed(r, #call, raw_result_); \
  } while (0)

static int load_library(cuda_raw *r, char *why, size_t why_size) {
  const char *path = getenv("KILN_CUDA_LIBRARY");
  if (path == NULL || path[0] == '\0') path = "libcuda.so.1";
  r->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (r->library == NULL) {
    snprintf(why, why_size, "%s cannot be loaded: %s", path, dlerror());
    return -1;
  }
  for (size_t i = 0; i < sizeof cuda_symbols / sizeof cuda_symbols[0]; i++) {
    void *symbol = dlsym(r->library, cuda_symbols[i].name);
    if (symbol == NULL && cuda_symbols[i].older != NULL)
      symbol = dlsym(r->library, cuda_symbols[i].older);
    if (symbol == NULL) {
      snprintf(why, why_size, "%s has no %s (driver too old)", path,
               cuda_symbols[i].name);
      return -1;
    }
    /* A data pointer into a function-pointer slot: memcpy, as ISO C has
     * no conversion between the two. */
    memcpy((char *)&r->api + cuda_symbols[i].offset, &symbol, sizeof symbol);
  }
  return 0;
}

static bool all_zero(const uint8_t *bytes, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (bytes[i] != 0) return false;
  return true;
}

/* The CUDA device with kiln's device's UUID. */
static int find_device(cuda_raw *r, const kiln_device_properties *kiln_device,
                       char *why, size_t why_size) {
  int count = 0;
  CUresult result = r->api.DeviceGetCount(&count);
  if (result != 0 || count == 0) {
    snprintf(why, why_size, "the CUDA driver sees no device");
    return -1;
  }
  bool any = all_zero(kiln_device->uuid, sizeof kiln_device->uuid);
  for (int i = 0; i < count; i++) {
    CUdevice device;
    unsigned char uuid[16];
    if (r->api.DeviceGet(&device, i) != 0) continue;
    if (!any && (r->api.DeviceGetUuid(uuid, device) != 0 ||
                 memcmp(uuid, kiln_device->uuid, sizeof uuid) != 0))
      continue;
    r->device = device;
    char name[256] = "";
    r->api.DeviceGetName(name, (int)sizeof name, device);
    int version = 0;
    r->api.DriverGetVersion(&version);
    snprintf(r->description, sizeof r->description,
             "CUDA driver %d.%d, device %d: %s%s", version / 1000,
             version % 1000 / 10, i, name,
             any ? " (kiln's device has no UUID: CUDA device 0 taken)" : "");
    return 0;
  }
  snprintf(why, why_size,
           "no CUDA device is kiln's device %s (no UUID matches)",
           kiln_device->name);
  return -1;
}

/* Loads the fatbins; one that has no code for this GPU is left out with a
 * note, and launches of its kernels then say so. */
static void load_modules(cuda_raw *r, const kiln_module_image *images,
                         size_t count) {
  for (size_t i = 0; i < count && r->module_count < RAW_MAX_MODULES; i++) {
    CUmodule module;
    CUresult result = r->api.ModuleLoadData(&module, images[i].data);
    if (result != 0) {
      raw_failed(r, "cuModuleLoadData", result);
      continue;
    }
    r->modules[r->module_count++] = module;
  }
}

cuda_raw *cuda_raw_open(const kiln_device_properties *kiln_device,
                        const kiln_module_image *images, size_t count,
                        char *why, size_t why_size) {
  cuda_raw *r = calloc(1, sizeof *r);
  if (r == NULL) {
    snprintf(why, why_size, "out of host memory");
    return NULL;
  }
  if (load_library(r, why, why_size) != 0) goto fail;
  CUresult result = r->api.Init(0);
  if (result != 0) {
    const char *name = "unknown CUresult";
    r->api.GetErrorName(result, &name);
    snprintf(why, why_size, "cuInit failed: %s", name);
    goto fail;
  }
  if (find_device(r, kiln_device, why, why_size) != 0) goto fail;
  if (r->api.DevicePrimaryCtxRetain(&r->context, r->device) != 0) {
    snprintf(why, why_size, "cuDevicePrimaryCtxRetain failed");
    r->context = NULL;
    goto fail;
  }
  if (cuda_raw_enter(r) != 0) {
    snprintf(why, why_size, "cuCtxPushCurrent failed");
    goto fail;
  }
  bool made = r->api.StreamCreate(&r->stream, RAW_STREAM_NON_BLOCKING) == 0 &&
              r->api.EventCreate(&r->start, RAW_EVENT_DEFAULT) == 0 &&
              r->api.EventCreate(&r->end, RAW_EVENT_DEFAULT) == 0;
  r->own = r->stream;
  if (made) load_modules(r, images, count);
  cuda_raw_leave(r);
  if (!made) {
    snprintf(why, why_size, "cannot create a CUDA stream and events");
    goto fail;
  }
  return r;
fail:
  cuda_raw_close(r);
  return NULL;
}

void cuda_raw_close(cuda_raw *r) {
  if (r == NULL) return;
  if (r->peer_context != NULL) r->api.DevicePrimaryCtxRelease(r->peer_device);
  if (r->context != NULL && cuda_raw_enter(r) == 0) {
    for (size_t i = 0; i < r->module_count; i++)
      r->api.ModuleUnload(r->modules[i]);
    if (r->start != NULL) r->api.EventDestroy(r->start);
    if (r->end != NULL) r->api.EventDestroy(r->end);
    if (r->own != NULL) r->api.StreamDestroy(r->own);
    if (r->pool != NULL) r->api.MemPoolDestroy(r->pool);
    cuda_raw_leave(r);
    r->api.DevicePrimaryCtxRelease(r->device);
  }
  /* libcuda stays loaded: kiln's CUDA backend may share the handle, and
   * the driver does not support being unloaded while contexts live. */
  free(r);
}

const char *cuda_raw_description(const cuda_raw *r) { return r->description; }

int cuda_raw_l2_bytes(cuda_raw *r, size_t *out) {
  int bytes = 0;
  RAW_CALL(r, DeviceGetAttribute(&bytes, RAW_DEVICE_L2_CACHE_SIZE, r->device));
  *out = bytes > 0 ? (size_t)bytes : 0;
  return 0;
}

int cuda_raw_enter(cuda_raw *r) {
  RAW_CALL(r, CtxPushCurrent(r->context));
  return 0;
}

void cuda_raw_leave(cuda_raw *r) {
  CUcontext popped;
  r->api.CtxPopCurrent(&popped);
}

int cuda_raw_function(cuda_raw *r, const char *name, void **out_function) {
  for (size_t i = 0; i < r->module_count; i++) {
    CUfunction f;
    if (r->api.ModuleGetFunction(&f, r->modules[i], name) == 0) {
      *out_function = f;
      return 0;
    }
  }
  return -1;
}

int cuda_raw_module_load(cuda_raw *r, const void *image, void **out_module) {
  CUmodule module;
  RAW_CALL(r, ModuleLoadData(&module, image));
  *out_module = module;
  return 0;
}

int cuda_raw_module_function(cuda_raw *r, void *module, const char *name,
                             void **out_function) {
  CUfunction f;
  RAW_CALL(r, ModuleGetFunction(&f, (CUmodule)module, name));
  *out_function = f;
  return 0;
}

void cuda_raw_module_unload(cuda_raw *r, void *module) {
  if (module != NULL) r->api.ModuleUnload((CUmodule)module);
}

void cuda_raw_no_kernel(const char *section, const char *kernel) {
  fprintf(stderr,
          "kiln-bench: %s: no raw-driver launches: the raw CUDA comparator "
          "has no %s (kiln-bench built without nvcc, or no code in the "
          "fatbins for this GPU)\n",
          section, kernel);
}

int cuda_raw_launch(cuda_raw *r, void *function, unsigned grid_x,
                    unsigned grid_y, unsigned block_x, void **params) {
  RAW_CALL(r, LaunchKernel((CUfunction)function, grid_x, grid_y, 1, block_x,
                           1, 1, 0, r->stream, params, NULL));
  return 0;
}

int cuda_raw_alloc(cuda_raw *r, size_t bytes, raw_ptr *out) {
  RAW_CALL(r, MemAlloc(out, bytes));
  return 0;
}

void cuda_raw_free(cuda_raw *r, raw_ptr p) {
  if (p != 0) r->api.MemFree(p);
}

int cuda_raw_free_checked(cuda_raw *r, raw_ptr p) {
  RAW_CALL(r, MemFree(p));
  return 0;
}

int cuda_raw_alloc_async(cuda_raw *r, size_t bytes, raw_ptr *out) {
  RAW_CALL(r, MemAllocAsync(out, bytes, r->stream));
  return 0;
}

int cuda_raw_free_async(cuda_raw *r, raw_ptr p) {
  RAW_CALL(r, MemFreeAsync(p, r->stream));
  return 0;
}

int cuda_raw_make_current(cuda_raw *r) {
  CUcontext have = NULL;
  if (r->api.CtxGetCurrent(&have) == 0 && have == r->context) return 0;
  RAW_CALL(r, CtxSetCurrent(r->context));
  return 0;
}

int cuda_raw_alloc_own_pool(cuda_raw *r, size_t bytes, raw_ptr *out) {
  if (r->pool == NULL) {
    raw_pool_props props;
    memset(&props, 0, sizeof props);
    props.alloc_type = 1;
    props.location_type = 1;
    props.location_id = r->device;
    CUmemoryPool pool;
    RAW_CALL(r, MemPoolCreate(&pool, &props));
    uint64_t keep = UINT64_MAX;
    int no = 0;
    if (r->api.MemPoolSetAttribute(pool, RAW_POOL_RELEASE_THRESHOLD, &keep) ||
        r->api.MemPoolSetAttribute(
            pool, RAW_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &no)) {
      r->api.MemPoolDestroy(pool);
      return raw_failed(r, "cuMemPoolSetAttribute of a pool of its own", -1);
    }
    r->pool = pool;
  }
  RAW_CALL(r, MemAllocFromPoolAsync(out, bytes, r->pool, r->stream));
  return 0;
}

int cuda_raw_pool_keep(cuda_raw *r, uint64_t bytes, uint64_t *out_before) {
  CUmemoryPool pool;
  RAW_CALL(r, DeviceGetDefaultMemPool(&pool, r->device));
  RAW_CALL(r, MemPoolGetAttribute(pool, RAW_POOL_RELEASE_THRESHOLD,
                                  out_before));
  RAW_CALL(r, MemPoolSetAttribute(pool, RAW_POOL_RELEASE_THRESHOLD, &bytes));
  return 0;
}

int cuda_raw_pool_used(cuda_raw *r, uint64_t *out_used) {
  CUmemoryPool pool;
  RAW_CALL(r, DeviceGetDefaultMemPool(&pool, r->device));
  RAW_CALL(r, MemPoolGetAttribute(pool, RAW_POOL_USED_MEM_CURRENT, out_used));
  return 0;
}

int cuda_raw_host_alloc(cuda_raw *r, size_t bytes, void **out) {
  RAW_CALL(r, MemAllocHost(out, bytes));
  return 0;
}

void cuda_raw_host_free(cuda_raw *r, void *p) {
  if (p != NULL) r->api.MemFreeHost(p);
}

int cuda_raw_fill32(cuda_raw *r, raw_ptr dst, uint32_t value, size_t count) {
  RAW_CALL(r, MemsetD32Async(dst, value, count, r->stream));
  return 0;
}

int cuda_raw_dtod(cuda_raw *r, raw_ptr dst, raw_ptr src, size_t bytes) {
  RAW_CALL(r, MemcpyDtoDAsync(dst, src, bytes, r->stream));
  return 0;
}

int cuda_raw_htod(cuda_raw *r, raw_ptr dst, const void *src, size_t bytes) {
  RAW_CALL(r, MemcpyHtoDAsync(dst, src, bytes, r->stream));
  return 0;
}

int cuda_raw_dtoh(cuda_raw *r, void *dst, raw_ptr src, size_t bytes) {
  RAW_CALL(r, MemcpyDtoHAsync(dst, src, bytes, r->stream));
  return 0;
}

int cuda_raw_sync(cuda_raw *r) {
  RAW_CALL(r, StreamSynchronize(r->stream));
  return 0;
}

void *cuda_raw_stream(cuda_raw *r) { return r->stream; }

int cuda_raw_stream_create(cuda_raw *r, void **out) {
  CUstream s;
  RAW_CALL(r, StreamCreate(&s, RAW_STREAM_NON_BLOCKING));
  *out = s;
  return 0;
}

void cuda_raw_stream_destroy(cuda_raw *r, void *stream) {
  if (stream != NULL) r->api.StreamDestroy((CUstream)stream);
}

void *cuda_raw_use_stream(cuda_raw *r, void *stream) {
  CUstream before = r->stream;
  r->stream = stream != NULL ? (CUstream)stream : r->own;
  return before == r->own ? NULL : before;
}

int cuda_raw_event_create(cuda_raw *r, void **out) {
  CUevent e;
  RAW_CALL(r, EventCreate(&e, RAW_EVENT_DISABLE_TIMING));
  *out = e;
  return 0;
}

void cuda_raw_event_destroy(cuda_raw *r, void *event) {
  if (event != NULL) r->api.EventDestroy((CUevent)event);
}

int cuda_raw_event_record(cuda_raw *r, void *event) {
  RAW_CALL(r, EventRecord((CUevent)event, r->stream));
  return 0;
}

int cuda_raw_wait_event(cuda_raw *r, void *event) {
  RAW_CALL(r, StreamWaitEvent(r->stream, (CUevent)event, 0));
  return 0;
}

int cuda_raw_time(cuda_raw *r, int (*queue)(void *arg), void *arg,
                  unsigned iters, double *ms) {
  RAW_CALL(r, EventRecord(r->start, r->stream));
  for (unsigned i = 0; i < iters; i++)
    if (queue(arg) != 0) return -1;
  RAW_CALL(r, EventRecord(r->end, r->stream));
  RAW_CALL(r, EventSynchronize(r->end));
  float elapsed = 0.0f;
  RAW_CALL(r, EventElapsedTime(&elapsed, r->start, r->end));
  *ms = elapsed;
  return 0;
}

#define RAW_MAX_BRANCHES 16

/* The launches of a graph of `branches` chains, each on a stream of its own
 * (branch 0 the comparator's), forked and joined through events. */
static int capture_branches(cuda_raw *r, void *function, unsigned block_x,
                            unsigned branches, void **params, unsigned count,
                            CUstream *streams, CUevent *events) {
  RAW_CALL(r, EventRecord(events[0], r->stream));
  for (unsigned b = 1; b < branches; b++)
    RAW_CALL(r, StreamWaitEvent(streams[b], events[0], 0));
  for (unsigned i = 0; i < count; i++) {
    CUstream s = streams[i * branches / count];
    RAW_CALL(r, LaunchKernel((CUfunction)function, 1, 1, 1, block_x, 1, 1, 0,
                             s, params, NULL));
  }
  for (unsigned b = 1; b < branches; b++) {
    RAW_CALL(r, EventRecord(events[b], streams[b]));
    RAW_CALL(r, StreamWaitEvent(r->stream, events[b], 0));
  }
  return 0;
}

int cuda_raw_graph_capture(cuda_raw *r, void *function, unsigned block_x,
                           unsigned branches, void **params, unsigned count,
                           void **out_exec) {
  if (branches == 0 || branches > RAW_MAX_BRANCHES || branches > count)
    return raw_failed(r, "a graph of that many branches", -1);
  CUstream streams[RAW_MAX_BRANCHES] = {r->stream};
  CUevent events[RAW_MAX_BRANCHES] = {NULL};
  int result = 0;
  for (unsigned b = 0; b < branches && result == 0; b++) {
    if (b > 0 && r->api.StreamCreate(&streams[b], RAW_STREAM_NON_BLOCKING))
      result = raw_failed(r, "cuStreamCreate", -1);
    if (result == 0 &&
        r->api.EventCreate(&events[b], RAW_EVENT_DISABLE_TIMING))
      result = raw_failed(r, "cuEventCreate", -1);
  }
  CUgraph graph = NULL;
  CUresult begun = result == 0 ? r->api.StreamBeginCapture(
                                     r->stream, RAW_CAPTURE_MODE_RELAXED)
                               : 0;
  if (begun != 0) result = raw_failed(r, "cuStreamBeginCapture", begun);
  if (result == 0) {
    result = capture_branches(r, function, block_x, branches, params, count,
                              streams, events);
    CUresult end = r->api.StreamEndCapture(r->stream, &graph);
    if (result == 0 && end != 0)
      result = raw_failed(r, "cuStreamEndCapture", end);
  }
  for (unsigned b = 0; b < branches; b++) {
    if (b > 0 && streams[b] != NULL) r->api.StreamDestroy(streams[b]);
    if (events[b] != NULL) r->api.EventDestroy(events[b]);
  }
  if (result != 0) {
    if (graph != NULL) r->api.GraphDestroy(graph);
    return result;
  }
  CUgraphExec exec = NULL;
  CUresult cr = r->api.GraphInstantiateWithFlags(&exec, graph, 0);
  r->api.GraphDestroy(graph);
  if (cr != 0) return raw_failed(r, "cuGraphInstantiateWithFlags", cr);
  *out_exec = exec;
  return 0;
}

int cuda_raw_graph_launch(cuda_raw *r, void *exec) {
  RAW_CALL(r, GraphLaunch((CUgraphExec)exec, r->stream));
  return 0;
}

void cuda_raw_graph_destroy(cuda_raw *r, void *exec) {
  if (exec != NULL) r->api.GraphExecDestroy((CUgraphExec)exec);
}

/* Enables access from the current context to `to`'s memory. */
static int enable_peer(cuda_raw *r, CUcontext to) {
  CUresult result = r->api.CtxEnablePeerAccess(to, 0);
  if (result != 0 && result != RAW_PEER_ALREADY_ENABLED)
    return raw_failed(r, "cuCtxEnablePeerAccess", result);
  return 0;
}

int cuda_raw_peer_open(cuda_raw *r, const kiln_device_properties *other,
                       bool *out_direct) {
  int count = 0;
  RAW_CALL(r, DeviceGetCount(&count));
  for (int i = 0; i < count && r->peer_context == NULL; i++) {
    CUdevice device;
    unsigned char uuid[16];
    if (r->api.DeviceGet(&device, i) != 0 ||
        r->api.DeviceGetUuid(uuid, device) != 0 ||
        memcmp(uuid, other->uuid, sizeof uuid) != 0)
      continue;
    RAW_CALL(r, DevicePrimaryCtxRetain(&r->peer_context, device));
    r->peer_device = device;
  }
  if (r->peer_context == NULL) {
    fprintf(stderr, "kiln-bench: raw CUDA: no CUDA device is %s\n",
            other->name);
    return -1;
  }
  int there = 1, back = 1;
  if (r->peer_device != r->device) {
    RAW_CALL(r, DeviceCanAccessPeer(&there, r->device, r->peer_device));
    RAW_CALL(r, DeviceCanAccessPeer(&back, r->peer_device, r->device));
  }
  *out_direct = there && back;
  if (r->peer_device == r->device || !*out_direct) return 0;
  /* As kiln does: direct copies both ways where the driver allows. */
  if (cuda_raw_enter(r) != 0) return -1;
  int result = enable_peer(r, r->peer_context);
  cuda_raw_leave(r);
  if (result != 0) return -1;
  RAW_CALL(r, CtxPushCurrent(r->peer_context));
  result = enable_peer(r, r->context);
  cuda_raw_leave(r);
  return result;
}

int cuda_raw_peer_alloc(cuda_raw *r, size_t bytes, raw_ptr *out) {
  RAW_CALL(r, CtxPushCurrent(r->peer_context));
  CUresult result = r->api.MemAlloc(out, bytes);
  cuda_raw_leave(r);
  return result == 0 ? 0 : raw_failed(r, "cuMemAlloc on the peer", result);
}

void cuda_raw_peer_free(cuda_raw *r, raw_ptr p) {
  if (p == 0 || r->api.CtxPushCurrent(r->peer_context) != 0) return;
  r->api.MemFree(p);
  cuda_raw_leave(r);
}

int cuda_raw_peer_copy(cuda_raw *r, raw_ptr dst, raw_ptr src, size_t bytes,
                       bool to_peer) {
  CUcontext from = to_peer ? r->context : r->peer_context;
  CUcontext to = to_peer ? r->peer_context : r->context;
  RAW_CALL(r, MemcpyPeerAsync(dst, to, src, from, bytes, r->stream));
  return 0;
}

