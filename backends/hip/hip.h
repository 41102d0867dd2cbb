/*
 * The HIP backend's private header: the HIP runtime API as kiln declares it
 * (types here, values and entry points in symbols.h), the loaded entry
 * points, the backend's objects (each embeds the core's struct first), and
 * the functions its files share.
 *
 * Why declare HIP's API here rather than include <hip/hip_runtime_api.h>:
 * the backend loads libamdhip64 at run time and needs no ROCm at build time
 * otherwise, and ROCm's headers are missing from most machines kiln is built
 * on (the NVIDIA CI machine among them). Declaring the few types, values and
 * prototypes kiln uses keeps one build that works everywhere, and
 * tests/hip/api_check.c proves them equal to ROCm's wherever ROCm's headers
 * exist. The declarations are ROCm 5/6 ABI; symbols.h notes where the two
 * differ.
 *
 * Defining KILN_HIP_API_ONLY before including this header gives only the HIP
 * API part (the HIP-on-CUDA test shim uses it to implement the same API).
 */
#ifndef KILN_HIP_HIP_H
#define KILN_HIP_HIP_H

#include <stddef.h>
#include <stdint.h>

#include "backends/hip/symbols.h"

/* ---- The HIP runtime API --------------------------------------------------- */

#define KILN_HIP_ENUMERATOR(name, value) name = value,

typedef enum hipError_t { KILN_HIP_ERRORS(KILN_HIP_ENUMERATOR) } hipError_t;

typedef enum hipDeviceAttribute_t {
  KILN_HIP_DEVICE_ATTRIBUTES(KILN_HIP_ENUMERATOR)
} hipDeviceAttribute_t;

typedef enum hipMemcpyKind {
  KILN_HIP_MEMCPY_KINDS(KILN_HIP_ENUMERATOR)
} hipMemcpyKind;

typedef enum hipFuncAttribute {
  KILN_HIP_FUNC_ATTRIBUTES(KILN_HIP_ENUMERATOR)
} hipFuncAttribute;

typedef enum hipFunction_attribute {
  KILN_HIP_FUNCTION_ATTRIBUTES(KILN_HIP_ENUMERATOR)
} hipFunction_attribute;

typedef enum hipLimit_t {
  KILN_HIP_LIMITS_ROCM6(KILN_HIP_ENUMERATOR)
  KILN_HIP_LIMITS(KILN_HIP_ENUMERATOR)
} hipLimit_t;

typedef enum hipMemPoolAttr {
  KILN_HIP_MEM_POOL_ATTRS(KILN_HIP_ENUMERATOR)
} hipMemPoolAttr;
typedef enum hipMemLocationType {
  KILN_HIP_MEM_LOCATION_TYPES(KILN_HIP_ENUMERATOR)
} hipMemLocationType;
typedef enum hipMemAllocationType {
  KILN_HIP_MEM_ALLOCATION_TYPES(KILN_HIP_ENUMERATOR)
} hipMemAllocationType;
typedef enum hipMemAllocationHandleType {
  KILN_HIP_MEM_HANDLE_TYPES(KILN_HIP_ENUMERATOR)
} hipMemAllocationHandleType;

enum { KILN_HIP_FLAGS(KILN_HIP_ENUMERATOR) };
enum { KILN_HIP_FLAGS_ROCM6(KILN_HIP_ENUMERATOR) };

typedef enum hipStreamCaptureMode {
  KILN_HIP_CAPTURE_MODES(KILN_HIP_ENUMERATOR)
} hipStreamCaptureMode;
typedef enum hipStreamCaptureStatus {
  KILN_HIP_CAPTURE_STATUSES(KILN_HIP_ENUMERATOR)
} hipStreamCaptureStatus;

typedef int hipDevice_t; /* an ordinal on AMD */
typedef void *hipDeviceptr_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipEvent_t *hipEvent_t;
typedef struct ihipModule_t *hipModule_t;
typedef struct ihipModuleSymbol_t *hipFunction_t;
typedef struct ihipGraph *hipGraph_t;
typedef struct hipGraphNode *hipGraphNode_t;
typedef struct hipGraphExec *hipGraphExec_t;
typedef struct ihipMemPoolHandle_t *hipMemPool_t;
typedef struct dim3 {
  uint32_t x, y, z;
} dim3;
typedef struct hipKernelNodeParams {
  dim3 blockDim;
  void **extra;
  void *func;
  dim3 gridDim;
  void **kernelParams;
  unsigned int sharedMemBytes;
} hipKernelNodeParams;
/* As ROCm lays it out: tests/hip/api_check.c asserts the same numbers
 * against ROCm's header. */
_Static_assert(sizeof(hipKernelNodeParams) == 64 &&
                   offsetof(hipKernelNodeParams, extra) == 16 &&
                   offsetof(hipKernelNodeParams, func) == 24 &&
                   offsetof(hipKernelNodeParams, gridDim) == 32 &&
                   offsetof(hipKernelNodeParams, kernelParams) == 48 &&
                   offsetof(hipKernelNodeParams, sharedMemBytes) == 56,
               "hipKernelNodeParams is not laid out as ROCm's");
typedef struct hipMemLocation {
  hipMemLocationType type;
  int id; /* the device ordinal */
} hipMemLocation;
/* ROCm 5's layout. ROCm 6 spends the first 8 reserved bytes on maxSize,
 * whose 0 asks for the runtime's default, so a zeroed struct means the
 * same to both; api_check.c asserts the fields kiln sets and the size. */
typedef struct hipMemPoolProps {
  hipMemAllocationType allocType;
  hipMemAllocationHandleType handleTypes;
  hipMemLocation location;
  void *win32SecurityAttributes;
  unsigned char reserved[64];
} hipMemPoolProps;
_Static_assert(sizeof(hipMemPoolProps) == 88 &&
                   offsetof(hipMemPoolProps, handleTypes) == 4 &&
                   offsetof(hipMemPoolProps, location) == 8 &&
                   offsetof(hipMemPoolProps, win32SecurityAttributes) == 16,
               "hipMemPoolProps is not laid out as ROCm's");
typedef struct hipUUID_t {
  char bytes[16];
} hipUUID;
/* Opaque to kiln: its layout differs between ROCm releases (see device.c). */
typedef struct hipDeviceProp_t hipDeviceProp_t;

/* The names the runtime is looked for under when KILN_HIP_LIBRARY names
 * none (loader.c), newest soname first: a machine with several ROCm
 * releases gets the one it would give a program built today. Here, in the
 * API part, so that kiln-bench's raw comparator finds the same one. */
#define KILN_HIP_RUNTIME_NAMES \
  "libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"

#ifndef KILN_HIP_API_ONLY

#include "core/images/params.h"
#include "core/backend.h"
#include "core/internal.h"

/* ---- Loaded entry points (loader.c) ---------------------------------------- */

typedef struct kiln_hip_api_table {
#define KILN_HIP_X(ret, name, params) ret(*name) params;
  KILN_HIP_SYMBOLS(KILN_HIP_X)
  KILN_HIP_OPTIONAL_SYMBOLS(KILN_HIP_X)
#undef KILN_HIP_X
} kiln_hip_api_table;

/* Filled once by kiln_hip_load; read-only afterwards. */
extern kiln_hip_api_table kiln_hip_api;

/* Opens the HIP runtime (KILN_HIP_LIBRARY, else libamdhip64.so.6, .so.5,
 * .so) and resolves symbols.h's entry points. KILN_ERROR_UNAVAILABLE with
 * the reason in `reason` when it cannot. `*out_library` is the file name
 * that was opened. */
kiln_status kiln_hip_load(char *reason, size_t reason_size,
                          const char **out_library);

/* ---- Errors (error.c) ------------------------------------------------------- */

/* The kiln status for a hipError_t: the specific one where the code has
 * one (out of memory, device lost, not found, not ready, ...), else
 * `fallback`. */
kiln_status kiln_hip_status(hipError_t err, kiln_status fallback);

/* Writes "<name> (<string>)" for `err` (just the name where the runtime's
 * string says no more) into buf. */
void kiln_hip_describe(hipError_t err, char *buf, size_t size);

/* Records "<what> failed: <name> (<string>)" as the thread's error, <what>
 * formatted printf-style from fmt, and returns
 * kiln_hip_status(err, KILN_ERROR_BACKEND). */
kiln_status kiln_hip_error(hipError_t err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* As kiln_hip_error, but a code with no specific status gives `fallback`:
 * a specific status (a lost device above all) is never hidden by the
 * call's own. */
kiln_status kiln_hip_error_as(hipError_t err, kiln_status fallback,
                              const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Logs "hip: <what> failed: <name> (<string>)" as a warning: for failures
 * that cannot be reported, in the deinit ops. */
void kiln_hip_warn(hipError_t err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- Devices (device.c) ------------------------------------------------------ */

kiln_status kiln_hip_probe(char *reason, size_t reason_size);
size_t kiln_hip_device_count(void);
kiln_status kiln_hip_device_properties(size_t index,
                                       kiln_device_properties *out);

/*
 * HIP keeps a current device per thread, and allocations, streams, events
 * and module loads go to it. kiln makes its context's device current for
 * such calls and then gives the thread back the device it had, so a program
 * that also calls HIP itself never finds its current device changed
 * (device.c: the context's other parts all use it, and it uses none).
 */
typedef struct kiln_hip_device_scope {
  int previous;
  bool switched;
} kiln_hip_device_scope;

kiln_status kiln_hip_device_enter(const kiln_context *ctx,
                                  kiln_hip_device_scope *scope);
void kiln_hip_device_leave(const kiln_hip_device_scope *scope);
/* kiln_hip_device_enter for a deinit op: a failure is logged (see
 * kiln_hip_warn), and false then means the release must be skipped. */
bool kiln_hip_device_enter_for_deinit(const kiln_context *ctx,
                                      kiln_hip_device_scope *scope,
                                      const char *what);

/* ---- Contexts (context.c) ---------------------------------------------------- */

typedef struct kiln_hip_context {
  kiln_context base;
  int device; /* the HIP device ordinal */
  /* Bit d: peer access to device d is enabled from this one (buffer.c),
   * for copies out of device d's buffers. */
  atomic_uint_least64_t peers;
  /* KILN_DEBUG=reorder (reorder.c): the pinned pages of the streams' gate
   * words, and whether other code holds the context (its streams are then
   * never gated); under reorder.c's lock. */
  struct kiln_hip_gate_page *gate_pages;
  bool exposed;
  /* Stream-ordered allocation (pool.c): the context's own hipMemPool_t,
   * NULL until the first allocation makes it, then set once and read
   * without a lock; and the release threshold it gets, kept until it is
   * made (pool_keep_set false: keep all). The pool is made and the
   * threshold changed under pool.c's lock. */
  _Atomic(hipMemPool_t) pool;
  uint64_t pool_keep;
  bool pool_keep_set;
} kiln_hip_context;

KILN_BACKEND_CAST(kiln_hip_context, kiln_context, kiln_hip_context_cast)

kiln_status kiln_hip_context_init(kiln_context *ctx);
void kiln_hip_context_deinit(kiln_context *ctx);
kiln_status kiln_hip_context_synchronize(kiln_context *ctx,
                                        uint64_t timeout_ns);
kiln_status kiln_hip_peer_direct(const kiln_context *a, const kiln_context *b,
                                 bool *out_direct);

/* ---- Streams (stream.c) ------------------------------------------------------- */

typedef struct kiln_hip_stream {
  kiln_stream base;
  hipStream_t handle;
  /* KILN_DEBUG=reorder (reorder.c), under its lock: the stream's gate word
   * (host and device views; NULL when the stream is never gated), the
   * value its last gate waits for, whether that gate is closed (the
   * stream is then on the held list, before next_held), and whether
   * other code holds the native stream. */
  _Atomic uint32_t *gate;
  void *gate_device;
  uint32_t gate_value;
  bool gated, exposed;
  struct kiln_hip_stream *next_held;
} kiln_hip_stream;

KILN_BACKEND_CAST(kiln_hip_stream, kiln_stream, kiln_hip_stream_cast)
static inline hipStream_t kiln_hip_stream_handle(const kiln_stream *s) {
  return kiln_hip_stream_cast_const(s)->handle;
}

/* Sets ctx->properties.max_stream_priority from the current device's range
 * (context.c). */
kiln_status kiln_hip_context_priorities(kiln_context *ctx);
kiln_status kiln_hip_stream_init(kiln_stream *s);
void kiln_hip_stream_deinit(kiln_stream *s);
kiln_status kiln_hip_stream_synchronize(kiln_stream *s, uint64_t timeout_ns);
/* KILN_OK once the stream's work is done, KILN_ERROR_NOT_READY while it
 * runs. */
kiln_status kiln_hip_stream_query(kiln_stream *s);

/* ---- KILN_DEBUG=reorder (reorder.c) ------------------------------------------- */

/* KILN_ERROR_UNSUPPORTED, in words, for a context in the mode when the
 * runtime lacks the gates' entry points; KILN_OK otherwise. */
kiln_status kiln_hip_reorder_check(const kiln_context *ctx);
/* Gives a new stream of a context in the mode its gate word. */
kiln_status kiln_hip_reorder_stream_init(kiln_stream *s);
/* Opens the stream's gate and takes it off the held list. */
void kiln_hip_reorder_stream_deinit(kiln_stream *s);
/* Frees the context's gate words (kept when it is abandoned). */
void kiln_hip_reorder_deinit(kiln_context *ctx);
/* Other code now holds the native stream s, or with s NULL the context:
 * opens the held gates and gates it no more. */
void kiln_hip_reorder_expose(kiln_context *ctx, kiln_stream *s);
/* What every op does before it queues work on s: under the mode, a
 * closed gate queued on s unless one is already queued there. */
kiln_status kiln_hip_hold(kiln_stream *s);
/* What every host wait for the program does first: under the mode, every
 * held gate opened, newest first, each stream given a bounded time to
 * finish before the next opens. */
void kiln_hip_open_gates(const kiln_context *ctx);
/* As kiln_cuda_gates_stay_open (backends/cuda/cuda.h), around hipFree,
 * hipHostFree and module loads, lookups and unloads. */
void kiln_hip_gates_stay_open(const kiln_context *ctx, bool open);

/* ---- Buffers (buffer.c, host_buffer.c) ---------------------------------------- */

/* A device buffer needs nothing beyond the core's struct: device_address is
 * the hipMalloc pointer. */
static inline void *kiln_hip_buffer_ptr(const kiln_buffer *b, size_t offset) {
  return (void *)(uintptr_t)(b->device_address + offset);
}

kiln_status kiln_hip_buffer_init(kiln_buffer *buf, uint32_t flags);
void kiln_hip_buffer_deinit(kiln_buffer *buf);
kiln_status kiln_hip_buffer_write(kiln_stream *s, kiln_buffer *dst, size_t off,
                                  const void *src, size_t size);
kiln_status kiln_hip_buffer_read(kiln_stream *s, const kiln_buffer *src,
                                 size_t off, void *dst, size_t size);
kiln_status kiln_hip_buffer_copy(kiln_stream *s, kiln_buffer *dst,
                                 size_t dst_off, const kiln_buffer *src,
                                 size_t src_off, size_t size);
kiln_status kiln_hip_buffer_fill(kiln_stream *s, kiln_buffer *dst, size_t off,
                                 size_t size, uint64_t pattern,
                                 size_t pattern_size);

kiln_status kiln_hip_host_buffer_init(kiln_host_buffer *hb, uint32_t flags);
void kiln_hip_host_buffer_deinit(kiln_host_buffer *hb);
kiln_status kiln_hip_buffer_write_async(kiln_stream *s, kiln_buffer *dst,
                                        size_t dst_off,
                                        const kiln_host_buffer *src,
                                        size_t src_off, size_t size);
kiln_status kiln_hip_buffer_read_async(kiln_stream *s, const kiln_buffer *src,
                                       size_t src_off, kiln_host_buffer *dst,
                                       size_t dst_off, size_t size);
kiln_status kiln_hip_buffer_copy_peer(kiln_stream *dst_s, kiln_buffer *dst,
                                      size_t dst_off, kiln_stream *src_s,
                                      const kiln_buffer *src, size_t src_off,
                                      size_t size);

/* ---- Stream-ordered allocation (pool.c) ---------------------------------------- */

/* KILN_OK where ctx's device can allocate in stream order from a pool of
 * kiln's own; KILN_ERROR_UNSUPPORTED, in words, where the runtime lacks
 * the pool entry points or the device reports no memory pools
 * (hipDeviceAttributeMemoryPoolsSupported is 0). */
kiln_status kiln_hip_pool_supported(kiln_context *ctx);
/* Allocates buf->size (> 0) bytes from the context's pool in s's order
 * (the pool is made on first use) and sets buf->device_address; with
 * KILN_BUFFER_ZERO the zeroes are queued on s too. On hipErrorOutOfMemory
 * the pool is trimmed to nothing and the allocation tried once more; then
 * KILN_ERROR_OUT_OF_DEVICE_MEMORY, in words, and the context stays
 * usable. */
kiln_status kiln_hip_buffer_init_async(kiln_buffer *buf, kiln_stream *s,
                                       uint32_t flags);
/* Returns buf's memory to the pool in s's order: it is reused only after
 * the work queued on s before it. Nothing refers to buf afterwards. */
kiln_status kiln_hip_buffer_deinit_async(kiln_buffer *buf, kiln_stream *s);
/* Releases to the device what the pool holds beyond keep_bytes. Memory
 * freed on a stream whose work the host has not yet seen finish still
 * counts as in use, so a caller that wants it all back synchronizes
 * first. KILN_OK when no pool was made yet. */
kiln_status kiln_hip_pool_trim(kiln_context *ctx, size_t keep_bytes);
/* The bytes the pool holds from the device and the bytes of it handed out;
 * 0 and 0 before the first allocation. */
kiln_status kiln_hip_pool_usage(kiln_context *ctx, size_t *out_reserved,
                                size_t *out_used);
/* How much memory the pool may hold on to: past it, the next synchronize
 * gives what is free back to the device (the release threshold; SIZE_MAX,
 * the default, keeps all). Applied at once, or when the pool is made. */
kiln_status kiln_hip_pool_set_keep(kiln_context *ctx, size_t keep_bytes);
size_t kiln_hip_buffer_pool_bytes(const kiln_buffer *buf);
/* Destroys the pool, from context_deinit once the streams are done; kept
 * when the context is abandoned, as work may still use its memory. */
void kiln_hip_pool_deinit(kiln_context *ctx);

/* ---- Modules and kernels (module.c, launch.c) ---------------------------------- */

typedef struct kiln_hip_module {
  kiln_module base;
  /* A module per image that loaded, in the caller's order. A kernel comes
   * from the first of them that has its name. */
  hipModule_t *handles;
  /* kiln's copy of each loaded image (images[i] for handles[i]): the
   * caller's may go away once kiln_module_create returns, and the runtime
   * may read it later. */
  void **images;
  size_t count;
  /* The images passed over for having no code for this device, named for
   * the message when a kernel is not found; NULL when none was. */
  char *skipped;
  /* params[i]: the parameter lists that images[i] tells (params.h), read
   * when it loads. */
  kiln_param_table *params;
} kiln_hip_module;

KILN_BACKEND_CAST(kiln_hip_module, kiln_module, kiln_hip_module_cast)

typedef struct kiln_hip_kernel {
  kiln_kernel base;
  hipFunction_t function;
  /* The dynamic shared memory the kernel has been allowed so far, beyond
   * the device's default; raised on demand by launch.c. */
  atomic_size_t shared_limit;
} kiln_hip_kernel;

KILN_BACKEND_CAST(kiln_hip_kernel, kiln_kernel, kiln_hip_kernel_cast)

kiln_status kiln_hip_module_init(kiln_module *m,
                                 const kiln_module_image *images,
                                 size_t count);
void kiln_hip_module_deinit(kiln_module *m);
kiln_status kiln_hip_kernel_init(kiln_kernel *k);
void kiln_hip_kernel_deinit(kiln_kernel *k);
kiln_status kiln_hip_launch(kiln_stream *s, kiln_kernel *k,
                            const kiln_launch_config *config,
                            const kiln_packed_args *args);
/* What hipModuleLaunchKernel and a graph's kernel node take as
 * kernelParams for the packed `args`: params[i] points at argument i
 * (launch.c). The runtime copies the values before its call returns. */
void kiln_hip_params_of(const kiln_packed_args *args, void **params);
/* Lets kernel hk take `bytes` of dynamic shared memory, raising its limit
 * once per larger size (launch.c). */
kiln_status kiln_hip_need_shared(kiln_hip_kernel *hk, size_t bytes);
/* attributes.c */
kiln_status kiln_hip_kernel_attributes(kiln_kernel *k,
                                       kiln_kernel_attributes *out);
kiln_status kiln_hip_suggest_block(kiln_kernel *k, size_t dynamic_shared_bytes,
                                   uint32_t *out_block, uint32_t *out_min_grid);
kiln_status kiln_hip_module_global(kiln_module *m, const char *name,
                                   uint64_t *out_address, size_t *out_size);

/* ---- Limits (limit.c) ----------------------------------------------------------- */

kiln_status kiln_hip_context_set_limit(kiln_context *ctx, kiln_limit limit,
                                       size_t value);
kiln_status kiln_hip_context_get_limit(kiln_context *ctx, kiln_limit limit,
                                       size_t *out_value);

/* ---- Events (event.c) ----------------------------------------------------------- */

typedef struct kiln_hip_event {
  kiln_event base;
  hipEvent_t handle;
} kiln_hip_event;

KILN_BACKEND_CAST(kiln_hip_event, kiln_event, kiln_hip_event_cast)
static inline hipEvent_t kiln_hip_event_handle(const kiln_event *e) {
  return kiln_hip_event_cast_const(e)->handle;
}

kiln_status kiln_hip_event_init(kiln_event *e);
void kiln_hip_event_deinit(kiln_event *e);
kiln_status kiln_hip_event_record(kiln_event *e, kiln_stream *s);
kiln_status kiln_hip_stream_wait_event(kiln_stream *s, kiln_event *e);
kiln_status kiln_hip_event_synchronize(kiln_event *e, uint64_t timeout_ns);
kiln_status kiln_hip_event_query(kiln_event *e);
kiln_status kiln_hip_event_elapsed_ms(kiln_event *start, kiln_event *end,
                                      float *out_ms);

/* ---- Compiler (compiler.c) --------------------------------------------------- */

/* HIP C++ and CUDA C++ through HIPRTC, loaded at run time: the ops'
 * compiler_load, compile_target and compile (see core/backend.h). */
kiln_status kiln_hip_compiler_load(char *description, size_t description_size);
kiln_status kiln_hip_compile_target(const kiln_context *ctx, char *target,
                                    size_t target_size);
kiln_status kiln_hip_compile(const kiln_compile_job *job, kiln_compiled *out);

/* A copy of HIPRTC's `log` (malloc'd; NULL when out of memory) with the
 * temporary paths of ROCm 5's comgr replaced by the names the caller
 * knows: ".../comgr-XXXXXX/input/CompileSource" by `name`, and
 * ".../comgr-XXXXXX/include/h.h" by "h.h". */
char *kiln_hip_log_with_names(const char *log, const char *name);

/* ---- Graphs (graph.c) --------------------------------------------------------- */

/* The captured hipGraph_t, its executable form, and the kernel node of each
 * captured launch (nodes[i] for g->cmds[i]), for updates. */
typedef struct kiln_hip_graph {
  kiln_graph base;
  hipGraph_t graph;
  hipGraphExec_t exec;
  hipGraphNode_t *nodes;
  /* The marks of a build with branches (graph.c), NULL until made. */
  hipEvent_t *marks;
  size_t mark_count;
} kiln_hip_graph;

kiln_status kiln_hip_graph_begin(kiln_graph *g, kiln_stream *s);
kiln_status kiln_hip_graph_launched(kiln_graph *g, kiln_stream *s,
                                    size_t index);
kiln_status kiln_hip_graph_end(kiln_graph *g, kiln_stream *s, bool keep);
kiln_status kiln_hip_graph_mark(kiln_graph *g, kiln_stream *s, size_t mark);
kiln_status kiln_hip_graph_wait_mark(kiln_graph *g, kiln_stream *s,
                                     size_t mark);
kiln_status kiln_hip_graph_launch(kiln_graph *g, kiln_stream *s);
kiln_status kiln_hip_graph_update(kiln_graph *g, size_t index);
void kiln_hip_graph_deinit(kiln_graph *g);

/* ---- Native handles (interop.c) -------------------------------------------- */

kiln_status kiln_hip_context_native(kiln_context *ctx,
                                    kiln_native_context *out);
kiln_status kiln_hip_context_import_device(const kiln_native_context *native,
                                        size_t *out_index);
kiln_status kiln_hip_context_import(kiln_context *ctx,
                                const kiln_native_context *native, bool adopt);
kiln_status kiln_hip_buffer_native(const kiln_buffer *buf,
                                   kiln_native_buffer *out);
kiln_status kiln_hip_buffer_import(kiln_buffer *buf,
                                   const kiln_native_buffer *native,
                                   bool adopt);
kiln_status kiln_hip_stream_import(kiln_stream *s,
                                const kiln_native_stream *native, bool adopt);
kiln_status kiln_hip_stream_native(kiln_stream *s, kiln_native_stream *out);
kiln_status kiln_hip_stream_wait_native(kiln_stream *s, uint64_t handle,
                                        uint64_t value);

#endif /* KILN_HIP_API_ONLY */

#endif /* KILN_HIP_HIP_H */
