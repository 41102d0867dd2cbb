/*
 * Helpers shared by the core's files and nothing else: handle checks, object
 * allocation, stream resolution, range checks, the registry's internals.
 */
#ifndef KILN_CORE_INTERNAL_H
#define KILN_CORE_INTERNAL_H

#include "core/backend.h"

/* Checks that `obj` is a live object of `type`, looking it up in the
 * registry of live objects before reading it: KILN_ERROR_INVALID_HANDLE
 * naming `fn` and `what` otherwise. */
kiln_status kiln_object_check(const void *obj, kiln_object_type type,
                              const char *fn, const char *what);

/* Checks `obj` as above and that it belongs to `ctx`. */
kiln_status kiln_object_check_in(const void *obj, kiln_object_type type,
                                 const kiln_context *ctx, const char *fn,
                                 const char *what);

/* KILN_ERROR_DEVICE_LOST (with the original fault's message) once the
 * context has been marked lost, else KILN_OK. */
kiln_status kiln_context_check_usable(kiln_context *ctx);

/* Passes a backend result through, marking the context lost on
 * KILN_ERROR_DEVICE_LOST. */
kiln_status kiln_context_result(kiln_context *ctx, kiln_status status);

/* Passes `status` through; a failure's message, worded by a backend or an
 * inner call, is led by "fn: " (unless it already is), so that it names
 * the public function the caller called. core/base/status.c. */
kiln_status kiln_error_in(const char *fn, kiln_status status);

/* The end of a struct's last field in kiln 0.1, the first kiln.h that
 * passed sizes ("Structs that grow" in kiln.h): no caller's struct is
 * smaller. Fields added later never move these. */
#define KILN_END_OF(type, field) \
  (offsetof(type, field) + sizeof(((type *)0)->field))
#define KILN_CONTEXT_OPTIONS_0_1 KILN_END_OF(kiln_context_options, sync)
#define KILN_DEVICE_PROPERTIES_0_1 \
  KILN_END_OF(kiln_device_properties, stream_queues)
#define KILN_COMPILE_OPTIONS_0_1 \
  KILN_END_OF(kiln_compile_options, glsl_option_count)
#define KILN_MODULE_BUILD_INFO_0_1 KILN_END_OF(kiln_module_build_info, log)
#define KILN_STREAM_OPTIONS_0_1 KILN_END_OF(kiln_stream_options, priority)
#define KILN_NATIVE_CONTEXT_0_1 \
  KILN_END_OF(kiln_native_context, vk_enabled_features)
#define KILN_NATIVE_BUFFER_0_1 KILN_END_OF(kiln_native_buffer, vk_offset)
#define KILN_NATIVE_STREAM_0_1 \
  KILN_END_OF(kiln_native_stream, vk_semaphore_value)

/* A caller's struct of caller_size bytes (its kiln.h's sizeof) into
 * `full`, this kiln's of full_size bytes: what the caller lacks is zero,
 * its default. NULL `caller` leaves `full` all zero.
 * KILN_ERROR_INVALID_ARGUMENT for a size under min_size (the struct's
 * KILN_*_0_1), KILN_ERROR_UNSUPPORTED when a newer caller set a field this
 * kiln lacks. core/base/structs.c. */
kiln_status kiln_struct_in(const char *fn, const char *what, void *full,
                           size_t full_size, size_t min_size,
                           const void *caller, size_t caller_size);

/* Checks an out-struct and its size before a call fills it. */
kiln_status kiln_struct_out_check(const char *fn, const char *what,
                                  const void *caller, size_t caller_size,
                                  size_t min_size);

/* Writes caller_size bytes of `full` (this kiln's struct of full_size
 * bytes) to the caller's struct, zero past this kiln's end. */
void kiln_struct_out(void *caller, size_t caller_size, const void *full,
                     size_t full_size);

/* Marks the context lost, `why` becoming the message of every later call,
 * unless it already is. */
void kiln_context_mark_lost(kiln_context *ctx, const char *why);

/* Allocates a zeroed object of `size` bytes with its header filled in,
 * registers it as live and links it into ctx's live list (contexts and
 * kernels excepted). NULL (and the error set) if out of memory. */
void *kiln_object_alloc(kiln_context *ctx, kiln_object_type type, size_t size,
                        bool internal);

/* Unlinks the object from its context, removes it from the registry and
 * frees it (after a spell in quarantine, see core/base/object.c). */
void kiln_object_free(void *obj);

/* KILN_ERROR_INVALID_STATE, naming fn and what, while a graph holds o
 * (its graph_refs, core/api/graph.c). */
kiln_status kiln_check_not_held(const void *o, const char *fn,
                                const char *what);

/* Removes the object from the registry only: its handle is invalid from
 * now on, its memory stays (an abandoned context's objects). */
void kiln_object_forget(void *obj);

/* The core's waits for the device, through the backend's op with the
 * context's bound (KILN_SYNC_TIMEOUT_MS) and kiln_context_result.
 * KILN_ERROR_TIMEOUT gets a message naming `fn`, what was waited for, the
 * time waited and the bound, then `after`: what the timeout means for the
 * caller ("the buffer was not destroyed"), or NULL for "the context stays
 * usable". core/submit/wait.c. */
kiln_status kiln_context_wait(kiln_context *ctx, const char *fn,
                              const char *after);
kiln_status kiln_stream_wait(kiln_stream *s, const char *fn,
                             const char *after);
kiln_status kiln_event_wait(kiln_event *e, const char *fn, const char *after);

/* kiln_stream_wait with the caller's own bound, which the timeout's
 * message gives in milliseconds (kiln_stream_synchronize_timeout). */
kiln_status kiln_stream_wait_timeout(kiln_stream *s, uint64_t timeout_ns,
                                     const char *fn);

/* Whether the context's waits are bounded: the calls whose backend ops may
 * wait without a bound of their own (reads, destroys) then wait first
 * through the functions above. */
static inline bool kiln_waits_bounded(const kiln_context *ctx) {
  return ctx->sync_timeout_ns != KILN_WAIT_FOREVER;
}

/* Resolves a stream argument: NULL means ctx's default stream; otherwise it
 * must be a live stream of ctx. */
kiln_status kiln_stream_resolve(kiln_stream *stream, kiln_context *ctx,
                                const char *fn, kiln_stream **out);

/* KILN_ERROR_OUT_OF_RANGE unless [offset, offset + size) lies within
 * `total` bytes; KILN_ERROR_OVERFLOW if offset + size wraps. */
kiln_status kiln_check_range(size_t offset, size_t size, size_t total,
                             const char *fn, const char *what);

/* ---- The built-in kernels' helpers (core/builtins/builtin.c, core/builtins/gemm.c) ---------- */

/* The checks every helper shares, on the buffer that fixes the context:
 * a usable context, the stream resolved into *out_stream, n < 2^32. */
kiln_status kiln_check_helper(const kiln_buffer *anchor, kiln_stream *stream,
                              size_t n, const char *fn, const char *what,
                              kiln_stream **out_stream);

/* Checks an array of n elements of elem_size bytes at a byte offset of b
 * (a multiple of elem_size), b a live buffer of ctx. */
kiln_status kiln_check_array(const kiln_buffer *b, size_t offset, size_t n,
                             size_t elem_size, kiln_context *ctx,
                             const char *fn, const char *what);

/* Checks a row-major matrix of rows x cols elements of elem_size bytes,
 * row stride ld elements (>= cols), at a byte offset of b. */
kiln_status kiln_check_matrix(const kiln_buffer *b, size_t offset,
                              size_t rows, size_t cols, size_t ld,
                              size_t elem_size, kiln_context *ctx,
                              const char *fn, const char *what);

/* A built-in helper's workspace on stream s, `bytes` long (one size for
 * every call of one use on one context), its last counter_bytes 0 at the
 * start of the helper's work (ticket counters, and a reduction's slots:
 * the whole of its workspace); the helper's kernel puts them back to 0. The
 * stream owns it; while s captures a graph, each call gets one of its own,
 * owned by the graph, its counters zeroed at the start of every replay. */
kiln_status kiln_helper_workspace(kiln_stream *s, kiln_scratch_use use,
                                  size_t bytes, size_t counter_bytes,
                                  kiln_buffer **out);

/* A GEMM call's arguments: C (float32) = alpha * A * B + beta * C. */
typedef struct kiln_gemm {
  size_t m, n, k;
  float alpha, beta;
  const kiln_buffer *a;
  size_t a_offset, lda;
  const kiln_buffer *b;
  size_t b_offset, ldb;
  kiln_buffer *c;
  size_t c_offset, ldc;
} kiln_gemm;

/* A kiln_gemm of the public functions' arguments, in their order. */
static inline kiln_gemm kiln_gemm_args(size_t m, size_t n, size_t k,
                                       float alpha, const kiln_buffer *a,
                                       size_t a_offset, size_t lda,
                                       const kiln_buffer *b, size_t b_offset,
                                       size_t ldb, float beta, kiln_buffer *c,
                                       size_t c_offset, size_t ldc) {
  return (kiln_gemm){.m = m,
                     .n = n,
                     .k = k,
                     .alpha = alpha,
                     .beta = beta,
                     .a = a,
                     .a_offset = a_offset,
                     .lda = lda,
                     .b = b,
                     .b_offset = b_offset,
                     .ldb = ldb,
                     .c = c,
                     .c_offset = c_offset,
                     .ldc = ldc};
}

/* The checks of kiln_sgemm_f32 and kiln_hgemm_f16 (core/builtins/gemm.c): the
 * stream resolved into *out_stream, dimensions below 2^32, k >= 1 for a
 * non-empty C, the three matrices inside their buffers (A and B of
 * ab_size-byte elements, C of floats). */
kiln_status kiln_gemm_check(const kiln_gemm *g, size_t ab_size,
                            kiln_stream *stream, const char *fn,
                            kiln_stream **out_stream);

/* Launches a GEMM kernel of the built-in ABI (c, a, b, m, n, k, lda, ldb,
 * ldc, alpha, beta) with `threads` a block: one block per tile_m x tile_n
 * tile of C (x across its columns), or, where max_blocks is not 0, a row of
 * at most max_blocks blocks that take the tiles in turn (a persistent
 * kernel). */
kiln_status kiln_gemm_launch(kiln_stream *s, kiln_kernel *kernel,
                             const kiln_gemm *g, uint32_t tile_m,
                             uint32_t tile_n, uint32_t threads,
                             size_t shared_bytes, size_t max_blocks);

/* Releases an object without argument checks (context destroy, and the
 * public destroy functions after theirs). */
void kiln_buffer_release(kiln_buffer *buf);
/* The arguments every buffer create checks alike (core/api/buffer.c):
 * out_buffer, a size > 0, known flags; messages name fn. */
kiln_status kiln_buffer_check_create(const char *fn, size_t size,
                                     uint32_t flags, kiln_buffer **out_buffer);
void kiln_host_buffer_release(kiln_host_buffer *hb);
void kiln_module_release(kiln_module *m);
void kiln_stream_release(kiln_stream *s);
void kiln_event_release(kiln_event *e);

/* An event of the core's own (core/base/object.c): not counted among the
 * context's live objects, made through the backend's ops with `flags`
 * (kiln_event_flags), into *out. Released with kiln_event_release. The
 * door's fences, the pool's parkings and the trace's timings use it. */
kiln_status kiln_event_internal(kiln_context *ctx, uint32_t flags,
                                kiln_event **out);

/* Releases the module's globals (core/api/global.c); their memory is the
 * module's, so no backend op is called. */
void kiln_module_release_globals(kiln_module *m);

/* Creates a buffer for the core's own use (not reported as alive). */
kiln_status kiln_buffer_create_internal(kiln_context *ctx, size_t size,
                                        kiln_buffer **out);

/* Creates a module from images already checked (formats known, non-empty);
 * `internal` for the built-in module; `checked` (NULL for none) as
 * kiln_module's field says. */
kiln_status kiln_module_create_checked(kiln_context *ctx,
                                       const kiln_module_image *images,
                                       const bool *checked, size_t count,
                                       bool internal, kiln_module **out);

/* The disk cache's entry for a compiled image (core/compile/entry.c):
 * stored under `key`, and loaded into *out (false, a miss, for anything
 * that is not a whole entry of an image this backend loads). */
void kiln_entry_store(const kiln_hash *key, const kiln_compiled *c);
bool kiln_entry_load(const kiln_backend_ops *ops, const kiln_hash *key,
                     kiln_compiled *out);

/* Builds a module from sources (compiled in the backend's language, or
 * taken from the disk cache; others ignored) and ready images (those of
 * other backends ignored), all checked by the caller; `fn` names the public
 * function in messages. core/compile/compile.c. */
kiln_status kiln_module_build(kiln_context *ctx, const char *fn,
                              const kiln_source *sources, size_t source_count,
                              const kiln_module_image *images,
                              size_t image_count,
                              const kiln_compile_options *options,
                              kiln_module **out);

/* Checks compile options as kiln_module_create_from_source does. */
kiln_status kiln_compile_options_check(const char *fn,
                                       const kiln_compile_options *options);

/* Creates a stream; `is_default` marks the context's own. `priority` is
 * checked already. */
kiln_status kiln_stream_create_internal(kiln_context *ctx, bool is_default,
                                        uint32_t priority, kiln_stream **out);

/* ---- Launches, the door, graphs (core/submit/args.c, submit.c, graph.c) ---------- */

/* kiln_launch's checks of everything but the kernel handle and the stream,
 * and the packing of the arguments; messages name kiln_launch. */
kiln_status kiln_launch_pack(kiln_context *ctx, kiln_kernel *kernel,
                             const kiln_launch_config *config,
                             const kiln_arg *args, size_t arg_count,
                             kiln_packed_args *packed);

/* kiln_launch for the built-in helpers: a captured one is not numbered. */
kiln_status kiln_launch_helper(kiln_stream *stream, kiln_kernel *kernel,
                               const kiln_launch_config *config,
                               const kiln_arg *args, size_t arg_count);

/* Threads per block of the built-in helpers' launches. */
#define KILN_HELPER_BLOCK 256u

/* A 1-D grid of blocks of KILN_HELPER_BLOCK threads, one per `per_block`
 * of n items, at least 1 and at most `max_blocks`: every built-in kernel
 * loops grid-stride, so any count covers n. core/builtins/kernels.c. */
kiln_launch_config kiln_helper_config(size_t n, size_t per_block,
                                      uint32_t max_blocks);

/* The one path of every command queued on s (core/submit/submit.c): captured into
 * s's graph while s captures one (or refused there, naming c->fn, if a
 * graph cannot hold it), else issued through the backend's ops, with the
 * guard's bookkeeping, a device loss marked on the context, and the trace
 * hook told. s is resolved and every argument in c checked. */
kiln_status kiln_submit(kiln_stream *s, const kiln_command *c);

/* Calls f on each object a command that a graph holds uses. */
void kiln_command_objects(const kiln_command *c, void (*f)(const void *o));

/* A graph's hold on an object it uses (kiln_check_not_held). */
static inline void kiln_graph_hold(const void *o) {
  atomic_fetch_add(&((kiln_object *)(uintptr_t)o)->graph_refs, 1);
}

/* ---- Trace hooks (core/submit/trace*.c) ---------------------------------- */

/* Whether a command of this kind has bytes to report: all but launches,
 * event records and waits, and replays. */
static inline bool kiln_command_moves_bytes(kiln_command_kind kind) {
  return kind != KILN_COMMAND_LAUNCH && kind != KILN_COMMAND_RECORD &&
         kind != KILN_COMMAND_WAIT && kind != KILN_COMMAND_WAIT_NATIVE &&
         kind != KILN_COMMAND_REPLAY;
}


/* The sinks KILN_TRACE names, as bits of a context's trace_sinks. */
#define KILN_TRACE_SINK_LOG 1u
#define KILN_TRACE_SINK_NVTX 2u

/* Non-zero while a trace handler is set or a live context has a KILN_TRACE
 * sink: the door's one look at tracing while it is off. */
extern atomic_uint kiln_trace_on;

/* What kiln_trace_begin hands kiln_trace_end about one command: the
 * handler in force when it began, and its timing start event (NULL when
 * the command is not timed). */
typedef struct kiln_trace_mark {
  kiln_trace_handler handler;
  void *user_data;
  uint32_t flags;
  uint64_t id;
  kiln_event *start;
  /* KILN_TRACE=nvtx: the command's range name where it is made up, which
   * the backend's labels may read until the end. */
  char name[128];
} kiln_trace_mark;

/* Around the backend's work for command c on s, in the door, for commands
 * that run now (not a graph's build): begin opens the command's profiler
 * ranges and records its timing start; end closes them and, if `issued`,
 * records its timing end and tells the handler and the sinks. */
void kiln_trace_begin(kiln_stream *s, const kiln_command *c,
                      kiln_trace_mark *m);
void kiln_trace_end(kiln_stream *s, const kiln_command *c, kiln_trace_mark *m,
                    bool issued);

/* Reads KILN_TRACE for a new context of `ops` into *out_sinks
 * (KILN_TRACE_SINK_* bits); KILN_ERROR_INVALID_ARGUMENT, naming the value,
 * for a word that is no sink or a sink this kiln cannot drive there. */
kiln_status kiln_trace_from_env(const kiln_backend_ops *ops,
                                unsigned *out_sinks);
/* A context opened with `sinks`, and one going (destroyed or abandoned,
 * its waits done): what tracing keeps for it. */
void kiln_trace_context_open(kiln_context *ctx, unsigned sinks);
void kiln_trace_context_close(kiln_context *ctx);

/* Reports the completions a host wait that returned KILN_OK has made
 * known (kiln_set_trace_handler_ex's KILN_TRACE_COMPLETIONS): the commands
 * of stream s when s is given, those before event e's last record when e
 * is, else all the context's. */
void kiln_trace_completed(kiln_context *ctx, const kiln_stream *s,
                          const kiln_event *e);
/* kiln_trace_completed where the context traces at all: what the waits
 * call (a function, not an inline here, so that this header, which every
 * room includes, calls into no room). */
void kiln_trace_waited(kiln_context *ctx, const kiln_stream *s,
                       const kiln_event *e);
/* Stream s is done and going: its completions are reported, and tracing
 * forgets it. */
void kiln_trace_stream_release(kiln_stream *s);

/* Whether a graph is being captured on s. */
static inline bool kiln_stream_capturing(kiln_stream *s) {
  return atomic_load_explicit(&s->capture, memory_order_acquire) != NULL;
}

/* KILN_ERROR_INVALID_STATE, naming fn, when s is capturing: for the calls
 * that are no command and cannot be captured (synchronize, destroy). */
kiln_status kiln_capture_refuse(kiln_stream *s, const char *fn);

/* Whether e's last record is in an open capture: a stream's wait on it is
 * then valid, and joins that capture (or is an edge within it). */
static inline bool kiln_capture_records(const kiln_event *e) {
  return atomic_load(&e->capture_record) != NULL;
}

/* The door's capture hook (core/submit/capture.c): c kept in s's capture
 * (or in one that s joins by this wait), or refused there, *kept set
 * either way and the status the call's; *kept false where c is the
 * backend's to issue. */
kiln_status kiln_capture_submit(kiln_stream *s, const kiln_command *c,
                                bool *kept);
/* A record of e made outside any capture: waits on e follow it now. */
void kiln_capture_forget_record(kiln_context *ctx, kiln_event *e);

/* Releases a graph or an abandoned capture (context destroy). */
void kiln_graph_release(kiln_graph *g);

/* ---- KILN_DEBUG (core/submit/guard.c) ---------------------------------------------- */

/* The modes KILN_DEBUG may name, as bits. */
#define KILN_DEBUG_GUARD 1u
/* Streams are ordered only by what the program asked for (events, waits,
 * synchronizes): each backend holds a stream's work back and releases it
 * out of queue order, so that an order the program did not ask for, and
 * relied on, shows as a wrong result rather than hiding on a device that
 * happens to run everything in one queue. */
#define KILN_DEBUG_REORDER 2u

/* Reads KILN_DEBUG (a comma-separated list of modes) into *out_modes;
 * KILN_ERROR_INVALID_ARGUMENT, naming the modes there are, for a word that
 * is not one. */
kiln_status kiln_debug_from_env(unsigned *out_modes);

/* The guard bytes before and after each buffer under KILN_DEBUG=guard: a
 * multiple of 256, so the caller's range keeps the allocation's alignment. */
#define KILN_GUARD_BYTES 4096u

/* Turns the guards on for a new context, `stream` (an internal stream of
 * the context's) carrying every guard read and write, and frees that
 * state once every buffer of the context was released. */
kiln_status kiln_guard_init(kiln_context *ctx, kiln_stream *stream);
void kiln_guard_deinit(kiln_context *ctx);

/* Writes the pattern into a new buffer's guards and waits for it (buf->guard
 * > 0, buffer_init done). */
kiln_status kiln_guard_arm(kiln_buffer *buf);

/* Drops a buffer being released from the list of buffers to check. */
void kiln_guard_forget(kiln_buffer *buf);

/* Keeps the buffer arguments of a built-in kernel that g's build launched
 * for a captured copy or fill, for kiln_guard_note_replay. */
kiln_status kiln_guard_keep_for_replay(kiln_graph *g, const kiln_arg *args,
                                       size_t count);
/* Notes what g's replays launch on s that its commands do not list: the
 * kernels of its copies and fills. */
void kiln_guard_note_replay(kiln_stream *s, const kiln_graph *g);

/* Notes the buffer arguments of a launch queued on s, and the point of s
 * that an event recorded there marks. */
void kiln_guard_note_launch(kiln_stream *s, const kiln_arg *args,
                            size_t count);
void kiln_guard_note_record(kiln_event *e, kiln_stream *s);

/* The checks, each once the host knows the work they cover is done: the
 * buffers the launches of stream s took, those of s's launches up to
 * event e's mark, those of every launch (after a context-wide wait), one
 * buffer (whether a kernel took it or not), and every buffer of the
 * context. KILN_ERROR_MEMORY_CORRUPTION, with the message described in
 * kiln.h and `fn` at its head, when a guard changed (it is then written
 * again); another status when the guards could not be read. */
kiln_status kiln_guard_check_stream(kiln_stream *s, const char *fn);
kiln_status kiln_guard_check_event(kiln_event *e, const char *fn);
kiln_status kiln_guard_check_launched(kiln_context *ctx, const char *fn);
kiln_status kiln_guard_check_buffer(kiln_buffer *buf, const char *fn);
kiln_status kiln_guard_check_all(kiln_context *ctx, const char *fn);

/* The backend registered for `backend`, or NULL when not compiled in. */
const kiln_backend_ops *kiln_registry_get(kiln_backend backend);

/* KILN_ERROR_UNSUPPORTED for a call that needs an ability whose sub-table
 * the backend lacks (core/backend.h, "The ops table"), in one shape for
 * every call: "<fn>: the <backend> backend has no <ability>", then ":
 * <advice>" where advice is not NULL (core/base/registry.c). */
kiln_status kiln_unsupported(const kiln_backend_ops *ops, const char *fn,
                             const char *ability, const char *advice);

/* kiln_context_create's work once the backend and device are chosen
 * (core/api/context.c): a context on device `device` of `ops`, made by
 * ops->context_init, or by its interop table's context_import on `native`
 * when that is not NULL (core/api/interop.c), waiting as `asked` says
 * (KILN_SYNC_DEFAULT: as KILN_SYNC says). Failures name `fn`. */
kiln_status kiln_context_open(const char *fn, const kiln_backend_ops *ops,
                              size_t device, kiln_sync_policy asked,
                              const kiln_native_context *native, bool adopt,
                              kiln_context **out_context);

/* Probes the backend once; KILN_OK or KILN_ERROR_UNAVAILABLE with
 * *out_reason (owned by the registry) saying why. */
kiln_status kiln_registry_probe(kiln_backend backend, const char **out_reason);

/* Picks the backend and device for a new context from `options` and the
 * environment (KILN_BACKEND, KILN_DEVICE), with messages that list what is
 * available when the choice cannot be met. */
kiln_status kiln_registry_select(const kiln_context_options *options,
                                 const kiln_backend_ops **out_ops,
                                 size_t *out_device);

/* ---- Memory in stream order (core/memory/pool.c) ------------------------ */

typedef struct kiln_pool kiln_pool;

/* Makes ctx->pool (with the context) and frees it (after the context's
 * streams are done, before the backend's context_deinit). */
kiln_status kiln_pool_open(kiln_context *ctx);
void kiln_pool_close(kiln_context *ctx);
/* The door's ALLOC and FREE commands: buf made, or released, in s's
 * order, by whichever pool serves the context. *out_zero is set where the
 * core's pool handed out used memory for KILN_BUFFER_ZERO: the door then
 * zeroes it in s's order. */
kiln_status kiln_pool_alloc(kiln_stream *s, kiln_buffer *buf, uint32_t flags,
                            bool *out_zero);
kiln_status kiln_pool_release(kiln_stream *s, kiln_buffer *buf);
/* A buffer of the pool's freed by the synchronous destroy (its wait done):
 * the core's pool stops counting it. */
void kiln_pool_forget(kiln_buffer *buf);
/* Gives the buffers kept for reuse on s (NULL: on every stream) to the
 * backend's pool, on their streams: before s goes, and before the waits
 * of a context's synchronize and destroy. */
void kiln_pool_flush(kiln_context *ctx, const kiln_stream *s);
/* After a wait for the whole device: the core's pool frees what it parked
 * beyond the amount it keeps. */
void kiln_pool_synchronized(kiln_context *ctx);
kiln_status kiln_pool_usage(kiln_context *ctx, size_t *reserved,
                            size_t *used);
kiln_status kiln_pool_set_keep(kiln_context *ctx, size_t bytes);
kiln_status kiln_pool_trim(kiln_context *ctx, size_t keep_bytes);

#endif /* KILN_CORE_INTERNAL_H */
