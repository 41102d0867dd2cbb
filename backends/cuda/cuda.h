/*
 * The CUDA backend's private header: its objects (each embeds the core's
 * struct first), the driver entry-point table, and what its files share.
 *
 * The backend speaks the CUDA driver API only and never links libcuda:
 * loader.c dlopens it at run time and fills kiln_cuda_api. NVIDIA's own
 * header is reached as <cudaTypedefs.h> (which includes <cuda.h>) with angle
 * brackets, which never search this folder, so this file's name does not
 * shadow it.
 */
#ifndef KILN_BACKENDS_CUDA_CUDA_H
#define KILN_BACKENDS_CUDA_CUDA_H

#include <cudaTypedefs.h>
#include <stdatomic.h>
#include <stddef.h>

#include "core/images/params.h"
#include "backends/cuda/symbols.h"
#include "core/backend.h"
#include "core/internal.h"

/* ---- The driver ------------------------------------------------------------ */

/* CUDA 13.2's, for headers older than it (the build takes 12.4 on). */
#if CUDA_VERSION < 13020
typedef CUresult(CUDAAPI *PFN_cuFuncGetParamCount_v13020)(CUfunction func,
                                                          size_t *paramCount);
#endif

typedef struct kiln_cuda_api_table {
#define KILN_CUDA_FIELD(name, version) PFN_##name##_v##version name;
  KILN_CUDA_SYMBOLS(KILN_CUDA_FIELD)
  KILN_CUDA_OPTIONAL_SYMBOLS(KILN_CUDA_FIELD)
#undef KILN_CUDA_FIELD
  /* The CUDA version the driver implements, as cuDriverGetVersion gives it
   * (1000 * major + 10 * minor). */
  int driver_version;
} kiln_cuda_api_table;

/* Filled once by kiln_cuda_load (under the registry's lock, before any other
 * op runs) and read-only afterwards. */
extern kiln_cuda_api_table kiln_cuda_api;

/* Loads the driver library (KILN_CUDA_LIBRARY, else libcuda.so.1) and
 * resolves kiln_cuda_api. KILN_OK, or KILN_ERROR_UNAVAILABLE with the
 * reason in words written to `reason`. */
kiln_status kiln_cuda_load(char *reason, size_t reason_size);

/* ---- Objects --------------------------------------------------------------- */

typedef struct kiln_cuda_context {
  kiln_context base;
  CUdevice device;
  CUcontext handle; /* the device's primary context, retained */
  /* Bit d: peer access to device d's primary context is enabled from this
   * one (buffer.c), for copies out of that device's buffers. */
  atomic_uint_least64_t peers;
  /* Made by kiln_context_create_from_native: `handle` is the caller's
   * CUcontext, neither retained nor released by kiln. */
  bool imported;
  /* KILN_DEBUG=reorder (reorder.c): the pinned pages of the streams' gate
   * words, and whether other code holds the CUcontext (its streams are
   * then never gated); under reorder.c's lock. */
  struct kiln_cuda_gate_page *gate_pages;
  bool exposed;
  /* Stream-ordered allocation (pool.c): the context's own CUmemoryPool,
   * NULL until the first allocation makes it, then set once and read
   * without a lock; and the release threshold it gets, kept until it is
   * made (pool_keep_set false: keep all). The pool is made and the
   * threshold changed under pool.c's lock. */
  _Atomic(CUmemoryPool) pool;
  uint64_t pool_keep;
  bool pool_keep_set;
} kiln_cuda_context;

typedef struct kiln_cuda_module {
  kiln_module base;
  /* A CUmodule per image that loaded, in the order module.c loads them
   * (cubin, fatbin, then PTX; the caller's order within a format). A
   * kernel comes from the first of them that has its name. */
  CUmodule *handles;
  size_t count;
  /* The images passed over for having no code for this device, named for
   * the message when a kernel is not found; NULL when none was. */
  char *skipped;
  /* params[i]: the parameter lists that handles[i]'s image tells
   * (params.h), read when it loads, since kiln keeps no image. */
  kiln_param_table *params;
} kiln_cuda_module;

typedef struct kiln_cuda_kernel {
  kiln_kernel base;
  CUfunction handle;
  /* The most dynamic shared memory a launch may ask for once launch.c has
   * raised the kernel's limit to all the device allows it; 0 until a launch
   * first needs more than the default. */
  atomic_size_t shared_limit;
  /* Launched with programmatic stream serialization: a built-in kernel
   * that waits for the previous kernel itself (module.c). */
  bool follows;
  /* A built-in GEMM kernel that reads A and B through tensor maps, which
   * the backend makes from the GEMM's arguments and appends to them
   * (kiln_cuda_params_of); the core sees only the GEMM's arguments. */
  bool maps;
} kiln_cuda_kernel;

typedef struct kiln_cuda_stream {
  kiln_stream base;
  CUstream handle;
  /* KILN_DEBUG=reorder (reorder.c), under its lock: the stream's gate word
   * (host and device views; NULL when the stream is never gated), the
   * value its last gate waits for, whether that gate is closed (the
   * stream is then on the held list, before next_held), and whether
   * other code holds the native stream. */
  _Atomic uint32_t *gate;
  CUdeviceptr gate_device;
  uint32_t gate_value;
  bool gated, exposed;
  struct kiln_cuda_stream *next_held;
} kiln_cuda_stream;

/* A graph: the captured CUgraph, its executable form, and the kernel node
 * of each captured launch (nodes[i] for g->cmds[i], NULL for others), for
 * updates. */
typedef struct kiln_cuda_graph {
  kiln_graph base;
  CUgraph graph;
  CUgraphExec exec;
  CUgraphNode *nodes;
  /* The marks of a build with branches (graph.c), NULL until made. */
  CUevent *marks;
  size_t mark_count;
} kiln_cuda_graph;

typedef struct kiln_cuda_event {
  kiln_event base;
  CUevent handle;
} kiln_cuda_event;

KILN_BACKEND_CAST(kiln_cuda_context, kiln_context, kiln_cuda_context_cast)
KILN_BACKEND_CAST(kiln_cuda_module, kiln_module, kiln_cuda_module_cast)
KILN_BACKEND_CAST(kiln_cuda_kernel, kiln_kernel, kiln_cuda_kernel_cast)
KILN_BACKEND_CAST(kiln_cuda_stream, kiln_stream, kiln_cuda_stream_cast)
KILN_BACKEND_CAST(kiln_cuda_event, kiln_event, kiln_cuda_event_cast)

static inline CUdeviceptr kiln_cuda_address(const kiln_buffer *buffer,
                                            size_t offset) {
  return (CUdeviceptr)(buffer->device_address + offset);
}

/* ---- Errors ---------------------------------------------------------------- */

/* The kiln status for a CUresult (error.c): the specific one where the
 * code has one (out of memory, device lost, not ready, ...), else
 * `fallback`. */
kiln_status kiln_cuda_status(CUresult result, kiln_status fallback);

/* Writes "CUDA_ERROR_NAME (the driver's description)" for `result`. */
void kiln_cuda_describe(CUresult result, char *buf, size_t size);

/* Records "<what> failed: CUDA_ERROR_NAME (description)" as the thread's
 * error, <what> formatted printf-style from fmt, and returns
 * kiln_cuda_status(result, KILN_ERROR_BACKEND). */
kiln_status kiln_cuda_error(CUresult result, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* As kiln_cuda_error, but a code with no specific status gives `fallback`:
 * a specific status (a lost device above all) is never hidden by the
 * call's own. */
kiln_status kiln_cuda_error_as(CUresult result, kiln_status fallback,
                               const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Logs "cuda: <what> failed: CUDA_ERROR_NAME (description)" as a warning:
 * for failures that cannot be reported, in the deinit ops. */
void kiln_cuda_warn(CUresult result, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- Contexts -------------------------------------------------------------- */

/* Makes ctx's primary context current on the calling thread. It is left
 * current on return, as the CUDA runtime leaves it, so that the next call
 * from this thread costs one cuCtxGetCurrent; kiln switches only when other
 * code has made another context current in between. */
static inline CUresult kiln_cuda_set_current(const kiln_context *ctx) {
  CUcontext want = kiln_cuda_context_cast_const(ctx)->handle;
  CUcontext have = NULL;
  if (kiln_cuda_api.cuCtxGetCurrent(&have) == CUDA_SUCCESS && have == want)
    return CUDA_SUCCESS;
  return kiln_cuda_api.cuCtxSetCurrent(want);
}

/* kiln_cuda_set_current, its failure reported. */
static inline kiln_status kiln_cuda_make_current(const kiln_context *ctx) {
  CUresult r = kiln_cuda_set_current(ctx);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuCtxSetCurrent (making the CUDA context "
                              "current on this thread)");
  return KILN_OK;
}

/* kiln_cuda_set_current for a deinit op, its failure logged: the release
 * that follows is still tried. */
static inline void kiln_cuda_make_current_for_deinit(const kiln_context *ctx,
                                                     const char *what) {
  CUresult r = kiln_cuda_set_current(ctx);
  if (r != CUDA_SUCCESS)
    kiln_cuda_warn(r, "cuCtxSetCurrent before %s", what);
}

/* ---- The ops (ops.c puts them in kiln_cuda_ops) ---------------------------- */

kiln_status kiln_cuda_probe(char *reason, size_t reason_size);
size_t kiln_cuda_device_count(void);
kiln_status kiln_cuda_device_properties(size_t index,
                                        kiln_device_properties *out);

kiln_status kiln_cuda_context_init(kiln_context *ctx);
void kiln_cuda_context_deinit(kiln_context *ctx);
kiln_status kiln_cuda_context_synchronize(kiln_context *ctx,
                                         uint64_t timeout_ns);
kiln_status kiln_cuda_peer_direct(const kiln_context *a,
                                  const kiln_context *b, bool *out_direct);

kiln_status kiln_cuda_buffer_init(kiln_buffer *buf, uint32_t flags);
void kiln_cuda_buffer_deinit(kiln_buffer *buf);
kiln_status kiln_cuda_buffer_write(kiln_stream *s, kiln_buffer *dst,
                                   size_t off, const void *src, size_t size);
kiln_status kiln_cuda_buffer_read(kiln_stream *s, const kiln_buffer *src,
                                  size_t off, void *dst, size_t size);
kiln_status kiln_cuda_buffer_copy(kiln_stream *s, kiln_buffer *dst,
                                  size_t dst_off, const kiln_buffer *src,
                                  size_t src_off, size_t size);
kiln_status kiln_cuda_buffer_fill(kiln_stream *s, kiln_buffer *dst,
                                  size_t off, size_t size, uint64_t pattern,
                                  size_t pattern_size);
kiln_status kiln_cuda_buffer_write_async(kiln_stream *s, kiln_buffer *dst,
                                         size_t dst_off,
                                         const kiln_host_buffer *src,
                                         size_t src_off, size_t size);
kiln_status kiln_cuda_buffer_read_async(kiln_stream *s,
                                        const kiln_buffer *src,
                                        size_t src_off, kiln_host_buffer *dst,
                                        size_t dst_off, size_t size);
kiln_status kiln_cuda_buffer_copy_peer(kiln_stream *dst_s, kiln_buffer *dst,
                                       size_t dst_off, kiln_stream *src_s,
                                       const kiln_buffer *src, size_t src_off,
                                       size_t size);

kiln_status kiln_cuda_host_buffer_init(kiln_host_buffer *hb, uint32_t flags);
void kiln_cuda_host_buffer_deinit(kiln_host_buffer *hb);

kiln_status kiln_cuda_module_init(kiln_module *m,
                                  const kiln_module_image *images,
                                  size_t count);
void kiln_cuda_module_deinit(kiln_module *m);
kiln_status kiln_cuda_kernel_init(kiln_kernel *k);
void kiln_cuda_kernel_deinit(kiln_kernel *k);
kiln_status kiln_cuda_module_global(kiln_module *m, const char *name,
                                    uint64_t *out_address, size_t *out_size);

/* limit.c */
kiln_status kiln_cuda_context_set_limit(kiln_context *ctx, kiln_limit limit,
                                        size_t value);
kiln_status kiln_cuda_context_get_limit(kiln_context *ctx, kiln_limit limit,
                                        size_t *out_value);

kiln_status kiln_cuda_launch(kiln_stream *s, kiln_kernel *k,
                             const kiln_launch_config *config,
                             const kiln_packed_args *args);
/* The GEMM arguments of the built-in kernels (core/builtins/gemm.c), in
 * order: c, a, b, m, n, k, lda, ldb, ldc, alpha, beta. A kernel with maps
 * takes its two tensor maps after them. */
enum {
  KILN_CUDA_GEMM_A = 1,
  KILN_CUDA_GEMM_B,
  KILN_CUDA_GEMM_M,
  KILN_CUDA_GEMM_N,
  KILN_CUDA_GEMM_K,
  KILN_CUDA_GEMM_LDA,
  KILN_CUDA_GEMM_LDB,
  KILN_CUDA_GEMM_ARGS = 11
};

/* What cuLaunchKernel and a graph's kernel node take as kernelParams for
 * the packed `args` of kernel k: params[i] points at argument i, and for a
 * kernel with maps, the two after the GEMM's arguments at `maps`, made from
 * them (launch.c). The driver copies all of it before its call returns. */
typedef struct kiln_cuda_params {
  CUtensorMap maps[2];
  void *params[KILN_MAX_KERNEL_ARGS + 2];
} kiln_cuda_params;
kiln_status kiln_cuda_params_of(const kiln_cuda_kernel *k,
                                const kiln_packed_args *args,
                                kiln_cuda_params *out);
/* Lets kernel k take `bytes` of dynamic shared memory: up to the device's
 * default every kernel may, beyond it the kernel must opt in first, once
 * per larger size (launch.c); `fn` names the public call in a refusal. */
kiln_status kiln_cuda_need_shared(kiln_cuda_kernel *k, const kiln_context *ctx,
                                  size_t bytes, const char *fn);
/* attributes.c */
kiln_status kiln_cuda_kernel_attributes(kiln_kernel *k,
                                        kiln_kernel_attributes *out);
kiln_status kiln_cuda_suggest_block(kiln_kernel *k,
                                    size_t dynamic_shared_bytes,
                                    uint32_t *out_block,
                                    uint32_t *out_min_grid);

/* Sets base->properties.max_stream_priority from the current context's
 * range (context.c). */
kiln_status kiln_cuda_context_priorities(kiln_context *base);
kiln_status kiln_cuda_stream_init(kiln_stream *s);
void kiln_cuda_stream_deinit(kiln_stream *s);
kiln_status kiln_cuda_stream_synchronize(kiln_stream *s, uint64_t timeout_ns);
/* KILN_OK once the stream's work is done, KILN_ERROR_NOT_READY while it
 * runs. */
kiln_status kiln_cuda_stream_query(kiln_stream *s);

kiln_status kiln_cuda_event_init(kiln_event *e);
void kiln_cuda_event_deinit(kiln_event *e);
kiln_status kiln_cuda_event_record(kiln_event *e, kiln_stream *s);
kiln_status kiln_cuda_stream_wait_event(kiln_stream *s, kiln_event *e);
kiln_status kiln_cuda_event_synchronize(kiln_event *e, uint64_t timeout_ns);
kiln_status kiln_cuda_event_query(kiln_event *e);
kiln_status kiln_cuda_event_elapsed_ms(kiln_event *start, kiln_event *end,
                                       float *out_ms);

/* ---- KILN_DEBUG=reorder (reorder.c) ---------------------------------------- */

/* KILN_ERROR_UNSUPPORTED, in words, for a context in the mode when the
 * driver lacks the gates' entry points; KILN_OK otherwise. */
kiln_status kiln_cuda_reorder_check(const kiln_context *ctx);
/* Gives a new stream of a context in the mode its gate word. */
kiln_status kiln_cuda_reorder_stream_init(kiln_stream *s);
/* Opens the stream's gate and takes it off the held list. */
void kiln_cuda_reorder_stream_deinit(kiln_stream *s);
/* Frees the context's gate words (kept when it is abandoned). */
void kiln_cuda_reorder_deinit(kiln_context *ctx);
/* Other code now holds the native stream s, or with s NULL the context:
 * opens the held gates and gates it no more. */
void kiln_cuda_reorder_expose(kiln_context *ctx, kiln_stream *s);
/* What every op does before it queues work on s: under the mode, a
 * closed gate queued on s unless one is already queued there. */
kiln_status kiln_cuda_hold(kiln_stream *s);
/* What every host wait for the program does first: under the mode, every
 * held gate opened, newest first, each stream given a bounded time to
 * finish before the next opens. */
void kiln_cuda_open_gates(const kiln_context *ctx);
/* Around a driver call that may wait for the whole device while holding
 * the driver's own locks (cuMemFree, cuMemFreeHost, module loads and
 * unloads, cuFuncLoad): with `open` true, every held gate
 * opened and none closed until the call with `open` false. Else another
 * thread's gate, closed in between, leaves work the call waits for, and
 * that thread, stuck in the driver behind the call, never opens it. The
 * gates' lock is held in between, so other threads' work under the mode
 * waits out the call (a PTX JIT: seconds), and nothing in between may
 * take it again (no kiln wait, no hold). */
void kiln_cuda_gates_stay_open(const kiln_context *ctx, bool open);

/* ---- Stream-ordered allocation (pool.c) ------------------------------------ */

/* KILN_OK where ctx's device can allocate in stream order from a pool of
 * kiln's own; KILN_ERROR_UNSUPPORTED, in words, where the driver lacks the
 * pool entry points (CUDA 11.2) or the device has no memory pools
 * (CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED is 0). */
kiln_status kiln_cuda_pool_supported(kiln_context *ctx);
/* Allocates buf->size (> 0) bytes from the context's pool in s's order
 * (the pool is made on first use) and sets buf->device_address; with
 * KILN_BUFFER_ZERO the zeroes are queued on s too. On
 * CUDA_ERROR_OUT_OF_MEMORY the pool is trimmed to nothing and the
 * allocation tried once more; then KILN_ERROR_OUT_OF_DEVICE_MEMORY, in
 * words, and the context stays usable. */
kiln_status kiln_cuda_buffer_init_async(kiln_buffer *buf, kiln_stream *s,
                                        uint32_t flags);
/* Returns buf's memory to the pool in s's order: it is reused only after
 * the work queued on s before it. Nothing refers to buf afterwards. */
kiln_status kiln_cuda_buffer_deinit_async(kiln_buffer *buf, kiln_stream *s);
/* Releases to the device what the pool holds beyond keep_bytes. Memory
 * freed on a stream whose work the host has not yet seen finish still
 * counts as in use, so a caller that wants it all back synchronizes
 * first. KILN_OK when no pool was made yet. */
kiln_status kiln_cuda_pool_trim(kiln_context *ctx, size_t keep_bytes);
/* The bytes the pool holds from the device and the bytes of it handed out;
 * 0 and 0 before the first allocation. */
kiln_status kiln_cuda_pool_usage(kiln_context *ctx, size_t *out_reserved,
                                 size_t *out_used);
/* How much memory the pool may hold on to: past it, the next synchronize
 * gives what is free back to the device (the release threshold; SIZE_MAX,
 * the default, keeps all). Applied at once, or when the pool is made. */
kiln_status kiln_cuda_pool_set_keep(kiln_context *ctx, size_t keep_bytes);
size_t kiln_cuda_buffer_pool_bytes(const kiln_buffer *buf);
/* Destroys the pool, from context_deinit once the streams are done; kept
 * when the context is abandoned, as work may still use its memory. */
void kiln_cuda_pool_deinit(kiln_context *ctx);

/* ---- Compiler (compiler.c) ------------------------------------------------ */

/* CUDA C++ through NVRTC, loaded at run time: the ops' compiler_load,
 * compile_target and compile (see core/backend.h). */
kiln_status kiln_cuda_compiler_load(char *description, size_t description_size);
kiln_status kiln_cuda_compile_target(const kiln_context *ctx, char *target,
                                     size_t target_size);
kiln_status kiln_cuda_compile(const kiln_compile_job *job, kiln_compiled *out);

/* ---- Graphs (graph.c) ---------------------------------------------------- */

kiln_status kiln_cuda_graph_begin(kiln_graph *g, kiln_stream *s);
kiln_status kiln_cuda_graph_launched(kiln_graph *g, kiln_stream *s,
                                     size_t index);
kiln_status kiln_cuda_graph_end(kiln_graph *g, kiln_stream *s, bool keep);
kiln_status kiln_cuda_graph_mark(kiln_graph *g, kiln_stream *s, size_t mark);
kiln_status kiln_cuda_graph_wait_mark(kiln_graph *g, kiln_stream *s,
                                      size_t mark);
kiln_status kiln_cuda_graph_launch(kiln_graph *g, kiln_stream *s);
kiln_status kiln_cuda_graph_update(kiln_graph *g, size_t index);
void kiln_cuda_graph_deinit(kiln_graph *g);

/* ---- Native handles (interop.c) -------------------------------------------- */

kiln_status kiln_cuda_context_native(kiln_context *ctx,
                                     kiln_native_context *out);
kiln_status kiln_cuda_context_import_device(const kiln_native_context *native,
                                        size_t *out_index);
kiln_status kiln_cuda_context_import(kiln_context *ctx,
                                const kiln_native_context *native, bool adopt);
kiln_status kiln_cuda_buffer_native(const kiln_buffer *buf,
                                    kiln_native_buffer *out);
kiln_status kiln_cuda_buffer_import(kiln_buffer *buf,
                                    const kiln_native_buffer *native,
                                    bool adopt);
kiln_status kiln_cuda_stream_import(kiln_stream *s,
                                const kiln_native_stream *native, bool adopt);
kiln_status kiln_cuda_stream_native(kiln_stream *s, kiln_native_stream *out);
kiln_status kiln_cuda_stream_wait_native(kiln_stream *s, uint64_t handle,
                                         uint64_t value);

#endif /* KILN_BACKENDS_CUDA_CUDA_H */
