/*
 * The contract between kiln's core and its backends. Past 600 lines for a
 * reason: it is the whole of what a backend author reads, objects, commands
 * and the ops table together.
 *
 * The core (the files of core/) checks every argument of every public call once —
 * handles, contexts, ranges, overflow, alignment, limits — and only then
 * calls the backend through its ops table. Backends therefore trust their
 * arguments and never repeat those checks.
 *
 * Objects: the core allocates each object as one zeroed block of the size
 * the backend asks for (ops->X_size), with the core's struct at offset 0, so
 * a backend extends an object by embedding it first:
 *
 *     typedef struct kiln_vk_buffer { kiln_buffer base; VkBuffer handle; } ...
 *
 * and casts with the helpers KILN_BACKEND_CAST (below) defines. The core
 * fills the base fields, links the object into its context, then calls
 * ops->X_init; if init fails, the core frees the block without calling
 * X_deinit, so init cleans up after itself. X_deinit releases what init
 * acquired; it must make sure the device no longer uses the object (wait,
 * or defer the release) and cannot fail: what goes wrong there is logged
 * with kiln_<backend>_warn(result, fmt, ...).
 *
 * Errors: a backend reports failure with kiln_set_error(status, fmt, ...),
 * which records the thread's message and returns the status; a vendor
 * error goes through kiln_<backend>_error(result, fmt, ...) or
 * kiln_<backend>_error_as(result, fallback, fmt, ...), which keep the
 * specific status a vendor code maps to (docs/design.md, errors).
 * KILN_ERROR_DEVICE_LOST from any op marks the context lost in the core.
 */
#ifndef KILN_CORE_BACKEND_H
#define KILN_CORE_BACKEND_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

#include "kiln/kiln.h"

/* ---- Objects --------------------------------------------------------------- */

typedef enum kiln_object_type {
  KILN_OBJECT_CONTEXT = 1,
  KILN_OBJECT_BUFFER,
  KILN_OBJECT_HOST_BUFFER,
  KILN_OBJECT_MODULE,
  KILN_OBJECT_KERNEL,
  KILN_OBJECT_STREAM,
  KILN_OBJECT_EVENT,
  KILN_OBJECT_GRAPH,
} kiln_object_type;

/* The header at offset 0 of every object. The core looks every handle up in
 * its registry of live objects (core/base/object.c) before reading any of it, so
 * a destroyed or foreign handle is an error, never a read of freed memory. */
typedef struct kiln_object {
  kiln_object_type type;
  kiln_context *context;
  /* Objects the core creates for itself (the default stream, the built-in
   * module, scratch buffers) are not reported as alive at context destroy. */
  bool internal;
  /* The size of its block (kiln_object_alloc's `size`), so that a block
   * leaving the registry's quarantine may serve an object of that size
   * (core/base/object.c); 0 where it may not. */
  uint32_t block_bytes;
  /* Graphs that use the object (core/api/graph.c): while any does, destroying
   * it is KILN_ERROR_INVALID_STATE, as a replay would reach freed memory. */
  atomic_uint graph_refs;
  struct kiln_object *prev, *next; /* the context's list it is on */
} kiln_object;

typedef struct kiln_backend_ops kiln_backend_ops;

struct kiln_context {
  kiln_object base;
  const kiln_backend_ops *ops;
  size_t device_index;
  kiln_device_properties properties; /* filled by the core before init */
  kiln_stream *default_stream;
  kiln_module *builtin_module; /* loaded on first use, under `lock` */
  /* The backend's builtin_matrix_images, loaded under `lock` when a kernel
   * of it is first wanted (kiln_builtin_matrix_kernel). */
  kiln_module *builtin_matrix_module;
  /* kiln_hgemm_f16's kernels, picked on first use (core/builtins/hgemm.c): [0] for
   * any call, [1] for calls whose A and B come in whole 16-byte pieces. A
   * variant is 0 until then, and published after its kernel. */
  kiln_kernel *hgemm_kernel[2];
  atomic_int hgemm_variant[2];
  pthread_mutex_t lock;        /* recursive; guards `streams` and lazily
                                  created state */
  /* The live objects, in two lists. Streams, which the context-wide waits
   * walk while others create and destroy, under `lock`; all the others
   * (but kernels, which are their module's) under the handle registry's
   * lock, which their create and destroy take anyway, so that a buffer
   * made and released in stream order takes one lock each way
   * (core/base/object.c). */
  kiln_object streams;         /* sentinel */
  kiln_object objects;         /* sentinel */
  atomic_bool lost;            /* set once an op returned DEVICE_LOST */
  char lost_message[512];      /* the fault that lost it, written once */
  /* Live modules whose kernels may call device printf (kiln_module's
   * `prints`): while any is, CUDA's and HIP's waits end with a call that
   * flushes the driver's printf buffer. */
  atomic_uint printing_modules;
  /* KILN_SYNC_TIMEOUT_MS in nanoseconds, else KILN_WAIT_FOREVER: the bound
   * of the waits the core asks for, and of a backend's own waits. */
  uint64_t sync_timeout_ns;
  /* How host threads wait (never KILN_SYNC_DEFAULT), set before
   * context_init: CUDA and HIP set the device's scheduling flag from it,
   * Vulkan waits in its own loop accordingly. */
  kiln_sync_policy sync;
  /* Set before context_deinit when kiln_context_destroy's wait timed out:
   * work may still be running, so deinit must neither wait for it nor free
   * what it may touch. The core then frees none of the context's objects
   * (their deinits are not called) and keeps their memory until the
   * process ends. */
  bool abandoned;
  /* The KILN_DEBUG modes (KILN_DEBUG_* bits) in force, set before
   * context_init: backends read KILN_DEBUG_REORDER here. */
  unsigned debug;
  /* KILN_DEBUG=guard's state (core/submit/guard.c); NULL when the mode is off. */
  struct kiln_guard *guard;
  /* The KILN_TRACE sinks in force for the context (core/submit/trace.c),
   * set as it opens. */
  unsigned trace_sinks;
  /* The timing of traced commands (core/submit/trace_timing.c), made when
   * the context's first command is timed; NULL until then. */
  _Atomic(struct kiln_trace_timing *) trace;
  /* Memory in stream order: which pool serves the context, and the core's
   * own (core/memory/pool.c); made with the context. */
  struct kiln_pool *pool;
};

/* A timeout of no limit. */
#define KILN_WAIT_FOREVER UINT64_MAX

/* How long KILN_SYNC_AUTO spins: longer than a launch's round trip on
 * current GPUs (10-20 us). It then polls with sched_yield between looks
 * until KILN_SYNC_AUTO_YIELD_NS, so that a wait of a few hundred
 * microseconds (a graph's replay, a batch of kernels) ends with polling's
 * latency rather than a sleeper's wake-up (14 to 24 us on an H100, more
 * on a loaded host), and only then blocks: a long wait costs the core
 * 1 ms, not its whole length. */
#define KILN_SYNC_AUTO_SPIN_NS 100000u
#define KILN_SYNC_AUTO_YIELD_NS 1000000u

struct kiln_buffer {
  kiln_object base;
  size_t size;
  /* The address kernels see (CUdeviceptr, hipDeviceptr_t, or Vulkan buffer
   * device address). Set by buffer_init. */
  uint64_t device_address;
  /* KILN_DEBUG=guard (core/submit/guard.c): `guard` bytes of a known pattern lie
   * before and after the caller's `size` bytes; 0 when the mode is off.
   * The backend's allocation is then size + 2 * guard bytes (buf->size
   * holds that sum during buffer_init, and the caller's size after it),
   * device_address is the allocation's start, and every offset the core
   * passes to a buffer op counts from there: the caller's byte i is byte
   * guard + i. So backends need not know about guards. */
  size_t guard;
  /* Made for one captured operation (a captured reduction's slots):
   * released when the last graph that holds it lets go (core/api/graph.c). */
  bool graph_owned;
  /* The guard's bookkeeping, under the context's guard lock: the next of
   * the buffers that kernels took since their last check, the stream of
   * those launches (or a marker for several), and that stream's
   * guard_launches at the last one. */
  struct kiln_buffer *guard_next;
  const kiln_stream *guard_stream;
  uint64_t guard_launch;
  /* Set for a module's global variable (core/api/global.c): a view of the
   * module's memory that the module owns and releases. It never reaches
   * buffer_init or buffer_deinit; the other buffer ops take it as any
   * buffer (its fields past the core's struct are zero). */
  kiln_module *module;
  char *global_name;        /* owned */
  kiln_buffer *next_global; /* the module's globals */
  /* Made by kiln_buffer_create_from_native without KILN_NATIVE_ADOPT:
   * buffer_deinit waits for the device as always but frees nothing. */
  bool borrowed;
  /* Made by kiln_buffer_create_async: its memory is the context's pool's
   * (core/memory/pool.c), through the backend's memory table or the
   * core's own pool. buffer_deinit still frees it, after its wait. */
  bool stream_ordered;
};

struct kiln_host_buffer {
  kiln_object base;
  size_t size;
  void *data; /* the host mapping; set by host_buffer_init */
};

/* What a backend can tell of one kernel parameter from the image it
 * loaded. The core checks each launch's arguments against the list. */
typedef enum kiln_param_kind {
  KILN_PARAM_BITS = 0,    /* only its size is known (a cubin's .nv.info) */
  KILN_PARAM_POINTER = 1, /* a device address: takes kiln_arg_buffer */
  KILN_PARAM_INT = 2,     /* an integer of unknown signedness (PTX .b/.u) */
  KILN_PARAM_SINT = 3,
  KILN_PARAM_UINT = 4,
  KILN_PARAM_FLOAT = 5,
} kiln_param_kind;

typedef struct kiln_param_info {
  uint32_t offset; /* in the packed list (natural alignment) */
  uint32_t size;   /* 4 or 8 bytes for what kiln packs */
  kiln_param_kind kind;
} kiln_param_info;

struct kiln_kernel {
  kiln_object base;
  kiln_module *module;
  kiln_kernel *next; /* the module's kernels */
  char *name;        /* owned by the core */
  /* The exact packed size of the kernel's argument list when the backend
   * can tell (Vulkan: the push-constant block), else KILN_ARG_BYTES_UNKNOWN.
   * Set by kernel_init; the core checks every launch against it. */
  size_t arg_bytes;
  /* The parameters, when the backend can tell them (param_count is then
   * not KILN_PARAMS_UNKNOWN): malloc'd by kernel_init, freed by the core.
   * The core checks a launch's argument count, each argument's size and
   * offset, and its kind where the kind is known, naming the argument. */
  size_t param_count;
  kiln_param_info *params;
};

#define KILN_ARG_BYTES_UNKNOWN SIZE_MAX
#define KILN_PARAMS_UNKNOWN SIZE_MAX

/* A C++ name the caller gave (options->name_expressions) and the lowered
 * name the compiler gave its kernel; both malloc'd. */
typedef struct kiln_name_pair {
  char *expression;
  char *lowered;
} kiln_name_pair;

struct kiln_module {
  kiln_object base;
  kiln_kernel *kernels; /* looked up so far, under the context lock */
  kiln_buffer *globals; /* likewise, its variables (core/api/global.c) */
  /* How it was built, for kiln_module_get_build_info; set by
   * core/compile/compile.c for modules made from source (build_log is owned). */
  char *build_log;
  size_t source_count, cache_hits;
  double compile_ms;
  /* The name expressions its sources were compiled with and the lowered
   * names they got: kiln_module_get_kernel finds a kernel by either
   * (owned; set with build_log). */
  kiln_name_pair *aliases;
  size_t alias_count;
  /* Set by the backend's module_init: a kernel of it may call device
   * printf (core/images/params.h's may_printf). Counted in the context's
   * printing_modules while the module lives. */
  bool prints;
  /* Read by module_init only (NULL after): checked[i] when image i came
   * from kiln's cache under a key that holds this context's image_checks
   * (kiln_compiler_ops), so that a module of it passed those checks
   * before it was stored; module_init may skip them. NULL when none did. */
  const bool *checked;
};

/* The helpers that keep a workspace on each stream (core/builtins/builtin.c). */
typedef enum kiln_scratch_use {
  KILN_SCRATCH_REDUCE,
  KILN_SCRATCH_GEMM,
  KILN_SCRATCH_USES
} kiln_scratch_use;

struct kiln_stream {
  kiln_object base;
  bool is_default;
  /* The graph being captured on the stream (core/api/graph.c; the door,
   * core/submit/submit.c, adds to it), else NULL; and the stream's branch
   * in it: 0 for the stream that began the capture, then the streams that
   * joined it by waiting on an event it recorded, in that order. */
  _Atomic(kiln_graph *) capture;
  uint32_t capture_branch;
  /* Set on the core's internal stream that turns a graph's recorded work
   * into the backend's own graph: every op issued on it belongs to that
   * graph (between graph_begin and graph_end). */
  kiln_graph *building;
  /* 0 to properties.max_stream_priority (checked), set before stream_init. */
  uint32_t priority;
  /* The built-in helpers' workspaces (kiln_helper_workspace), made on
   * first use: the reductions' slots, the split GEMM's. */
  kiln_buffer *scratch[KILN_SCRATCH_USES];
  uint64_t guard_launches; /* KILN_DEBUG=guard: launches queued on it */
  /* Made by kiln_stream_create_from_native without KILN_NATIVE_ADOPT:
   * stream_deinit leaves the native stream alive. */
  bool borrowed;
  /* Set under the context's lock while the native stream exists and may
   * take work (after stream_init or stream_import, until stream_deinit);
   * the walks over a context's streams look at no other. A graph's
   * building stream is never ready. */
  bool ready;
  /* Walks waiting on the stream outside the context's lock
   * (kiln_sync_streams); the stream's release waits for them to end. */
  atomic_uint pins;
};

struct kiln_event {
  kiln_object base;
  bool recorded;
  /* kiln_event_flags, checked, set before event_init. The core answers
   * event_elapsed_ms for NO_TIMING events itself; event_synchronize of a
   * BLOCKING event sleeps in the driver whatever the context's policy. */
  uint32_t flags;
  /* KILN_DEBUG=guard: the stream of the last record and its
   * guard_launches then; those launches are done once the event is. */
  const kiln_stream *guard_stream;
  uint64_t guard_mark;
  /* While an open capture holds the event's last record: that capture's
   * graph and the index of the RECORD among its commands, so that a
   * stream waiting on the event joins the capture there; else NULL.
   * Written under the context's lock. */
  _Atomic(kiln_graph *) capture_record;
  size_t capture_index;
};

/* A backend's checked cast from a core object to its own:
 *
 *     KILN_BACKEND_CAST(kiln_vk_buffer, kiln_buffer, kiln_vk_buffer_cast)
 *
 * defines kiln_vk_buffer_cast(kiln_buffer *) and, keeping const,
 * kiln_vk_buffer_cast_const(const kiln_buffer *). The core allocates every
 * object with ops->X_size bytes and its own struct at offset 0, and has
 * checked each handle's type before any op, so the casts are checked where
 * they can fail: at compile time, that `base` is the core's struct and
 * comes first. */
#define KILN_BACKEND_CAST(type, core_type, name)                              \
  _Static_assert(offsetof(type, base) == 0,                                   \
                 #type " must embed " #core_type " first");                   \
  _Static_assert(_Generic(((type *)0)->base, core_type: 1, default: 0),       \
                 #type "'s base must be a " #core_type);                      \
  static inline type *name(core_type *object) { return (type *)object; }      \
  static inline const type *name##_const(const core_type *object) {           \
    return (const type *)object;                                              \
  }

/* ---- Commands (core/submit/submit.c) and graphs (core/api/graph.c) ------------------ */

/* What a command queued on a stream does. The first five are those a graph
 * can hold; the others need the host, or another stream, as they run. */
typedef enum kiln_command_kind {
  KILN_COMMAND_LAUNCH = 1,
  KILN_COMMAND_COPY,
  KILN_COMMAND_FILL,
  KILN_COMMAND_RECORD,
  KILN_COMMAND_WAIT,
  KILN_COMMAND_WRITE,       /* host memory into a buffer, done on return */
  KILN_COMMAND_READ,        /* a buffer into host memory, done on return */
  KILN_COMMAND_WRITE_ASYNC, /* a host buffer into a buffer */
  KILN_COMMAND_READ_ASYNC,  /* a buffer into a host buffer */
  /* A fill laid out in host memory and written: a module global whose
   * address is not a multiple of 4 (kiln_global_fill). */
  KILN_COMMAND_FILL_HOST,
  KILN_COMMAND_COPY_PEER,   /* ordered on the stream and on src_stream */
  KILN_COMMAND_WAIT_NATIVE, /* for a native event or timeline value */
  /* Memory in stream order (core/memory/pool.c): dst made (its size set,
   * `flags` the caller's) or released; the core frees a released buffer's
   * object once the command is queued. */
  KILN_COMMAND_ALLOC,
  KILN_COMMAND_FREE,
  /* A built graph replayed on the stream (`graph`), with the bookkeeping
   * of its event records and launches. */
  KILN_COMMAND_REPLAY,
} kiln_command_kind;

typedef struct kiln_packed_args kiln_packed_args;

/* One operation queued on a stream, its arguments checked, its offsets
 * counted as the backend's ops count them (from the allocation's start).
 * The public functions build one and hand it to kiln_submit; a graph holds
 * the commands it captured, each with a copy of `args` and `packed` of its
 * own (malloc'd), and replays them through the same path. */
typedef struct kiln_command {
  kiln_command_kind kind;
  const char *fn; /* the public function that queued it, for messages */
  /* LAUNCH. `args` are the caller's (for updates and KILN_DEBUG=guard),
   * `packed` what the backend gets. numbered: a launch of the caller's
   * own, not of a built-in helper. */
  kiln_kernel *kernel;
  kiln_launch_config config;
  const kiln_arg *args;
  size_t arg_count;
  kiln_packed_args *packed;
  bool numbered;
  /* COPY and COPY_PEER (dst, src), FILL and FILL_HOST (dst), the
   * transfers (one of them). */
  kiln_buffer *dst;
  const kiln_buffer *src;
  size_t dst_offset, src_offset, size;
  uint64_t pattern;
  size_t pattern_size;
  /* The host's side of a transfer: WRITE's source, READ's destination,
   * the async ones' host buffer and the offset in it. */
  const void *from;
  void *to;
  const kiln_host_buffer *host_from;
  kiln_host_buffer *host_to;
  size_t host_offset;
  /* RECORD and WAIT. */
  kiln_event *event;
  /* COPY_PEER: the source's stream, of the source's context. */
  kiln_stream *src_stream;
  /* WAIT_NATIVE. */
  uint64_t handle, value;
  /* ALLOC: the kiln_buffer_flags. */
  uint32_t flags;
  /* REPLAY. */
  kiln_graph *graph;
  /* In a graph: the branch of the capture it came from (its stream's
   * capture_branch); for a WAIT on an event recorded in the same capture,
   * 1 + the index of that RECORD (an edge within the graph), else 0. */
  uint32_t branch;
  size_t joins;
} kiln_command;

struct kiln_graph {
  kiln_object base;
  /* Serializes replays and updates of one graph: neither CUDA's nor HIP's
   * executable graphs may be launched or changed by two threads at once. */
  pthread_mutex_t lock;
  kiln_command *cmds;
  size_t cmd_count, cmd_cap;
  size_t launch_count; /* numbered launches */
  bool built;          /* graph_end kept the backend's graph */
  /* The streams of its capture, [0] the one that began it (so while it is
   * open, under the context's lock); after it, only their count is used. */
  kiln_stream **branches;
  size_t branch_count, branch_cap;
  bool capturing;
  /* KILN_DEBUG=guard: the buffer arguments of the built-in kernels that
   * its build launched for captured copies and fills, noted at each
   * replay as its captured launches are (core/submit/guard.c). */
  kiln_arg *guard_args;
  size_t guard_arg_count, guard_arg_cap;
};

/* ---- Arguments ------------------------------------------------------------- */

/* The largest packed argument list the core handles; backends report their
 * own limit (<= this) as max_kernel_argument_bytes. */
#define KILN_MAX_ARG_BYTES 512

/* An argument list packed by the core with natural alignment, buffers
 * already resolved to device_address + offset. CUDA/HIP pass
 * `data + offsets[i]` as kernelParams[i]; Vulkan pushes data[0..size). */
struct kiln_packed_args {
  size_t size;
  size_t count;
  uint16_t offsets[KILN_MAX_KERNEL_ARGS];
  _Alignas(16) unsigned char data[KILN_MAX_ARG_BYTES];
};

/* ---- Run-time compilation -------------------------------------------------- */

/* One source for a backend's compiler, with the caller's options already
 * checked by the core (every array entry non-NULL). */
typedef struct kiln_compile_job {
  kiln_source_language language;
  const char *name;        /* never NULL */
  const char *text;
  const char *entry_point; /* GLSL: the kernel name main() becomes */
  const char *target;      /* the caller's, else compile_target's */
  const kiln_compile_options *options; /* never NULL */
} kiln_compile_job;

/* A compiler's output, every pointer malloc'd and the core's to free: the
 * image, the log, and for each of options->name_expressions (in order) its
 * lowered name (CUDA and HIP; none for GLSL). */
typedef struct kiln_compiled {
  kiln_image_format format;
  void *image;
  size_t image_size;
  char *log;
  kiln_name_pair *names;
  size_t name_count;
} kiln_compiled;

/* Frees names[0..count) and the array. */
void kiln_name_pairs_free(kiln_name_pair *names, size_t count);

/* What the backends' compilers share (core/compile/compiler_support.c). */

/* Keeps in `why` the most telling of the dlopen errors it is given. */
void kiln_dl_note_error(char *why, size_t why_size, const char *error);

/* The resolved path of the file that `symbol` was loaded from, else
 * `fallback`: named in messages and in the cache key. */
void kiln_dl_library_path(const void *symbol, const char *fallback,
                          char *out, size_t out_size);

/* `path` resolved (no "..", no symbolic links) into out, when it names a
 * directory; false otherwise. */
bool kiln_real_directory(const char *path, char *out, size_t out_size);

/* A compiler's command-line options, built up one at a time; `failed`
 * once out of memory (further adds do nothing). Start zeroed. */
typedef struct kiln_option_list {
  char **items;
  size_t count, cap;
  bool failed;
} kiln_option_list;

/* Appends prefix followed by value ("-D" "N=4"). */
void kiln_option_add(kiln_option_list *l, const char *prefix,
                     const char *value);
void kiln_option_list_free(kiln_option_list *l);

/* A compiler's lowered name for `expression` in `program` into *out (owned
 * by the program); false with *why (the compiler's words) when it has none. */
typedef bool (*kiln_lowered_name_fn)(void *program, const char *expression,
                                     const char **out, const char **why);

/* Each of job->options->name_expressions with its lowered name, through
 * `lowered`, into out->names: what a C++ compiler (`compiler`: "NVRTC",
 * "HIPRTC") gives after a compile. KILN_ERROR_COMPILE, in words, for an
 * expression that names no kernel. */
kiln_status kiln_take_lowered_names(const kiln_compile_job *job,
                                    const char *compiler,
                                    kiln_lowered_name_fn lowered,
                                    void *program, kiln_compiled *out);

/* How much of a compiler log to quote in a message (printf's "%.*s"): at
 * most KILN_LOG_HEAD_MAX bytes, trailing blank lines dropped. */
#define KILN_LOG_HEAD_MAX 4096
int kiln_log_head(const char *log);

/* ---- The ops table --------------------------------------------------------- */

/* What a backend may leave out follows one rule. Every op in
 * kiln_backend_ops itself is required. An ability a backend may lack is a
 * sub-table it has or lacks as a whole: the pointer to it is NULL when the
 * backend lacks the ability, and the comment at the pointer says what the
 * core does then (a fallback, or KILN_ERROR_UNSUPPORTED naming the backend
 * and the ability, through kiln_unsupported in core/internal.h); every
 * member of a sub-table that is there is set (its ops non-NULL, its sizes
 * non-zero). The registry checks both before the first probe
 * (core/base/registry.c): a table that lacks a required op or has a
 * half-filled sub-table makes its backend unavailable, the member named
 * ("the vulkan backend's interop table lacks stream_import"). Backends
 * keep their sub-tables `static const` in ops.c. */

/* Page-locked host memory the device reaches (core/api/host_buffer.c).
 * hb->size > 0 is set; init sets hb->data. */
typedef struct kiln_host_buffer_ops {
  size_t host_buffer_size; /* the backend's struct (>= the core's) */
  kiln_status (*host_buffer_init)(kiln_host_buffer *hb, uint32_t flags);
  void (*host_buffer_deinit)(kiln_host_buffer *hb);
} kiln_host_buffer_ops;

/* Transfers between a buffer and a host buffer that return before they
 * are done, ordered on the stream: ranges checked, size > 0. */
typedef struct kiln_async_transfer_ops {
  kiln_status (*buffer_write_async)(kiln_stream *s, kiln_buffer *dst,
                                    size_t dst_off,
                                    const kiln_host_buffer *src,
                                    size_t src_off, size_t size);
  kiln_status (*buffer_read_async)(kiln_stream *s, const kiln_buffer *src,
                                   size_t src_off, kiln_host_buffer *dst,
                                   size_t dst_off, size_t size);
} kiln_async_transfer_ops;

/* Fills by the device's own means. `pattern` holds pattern_size bytes in
 * its low bytes, in memory order (as memcpy'd from the caller);
 * pattern_size is one of fill_sizes, and off and size are multiples of it.
 * The core narrows each pattern first (core/api/buffer.c) and fills
 * through kiln_fill_with_kernel() (core/submit/submit.c) what no size of
 * fill_sizes can do, so the op does only what the hardware does. */
typedef struct kiln_fill_ops {
  /* The pattern sizes buffer_fill takes, each as its own bit: 1 | 2 | 4
   * for 1-, 2- and 4-byte patterns. */
  uint32_t fill_sizes;
  kiln_status (*buffer_fill)(kiln_stream *s, kiln_buffer *dst, size_t off,
                             size_t size, uint64_t pattern,
                             size_t pattern_size);
} kiln_fill_ops;

/* Copies between two contexts of this backend (kiln_buffer_copy_peer; the
 * core does one context itself, through buffer_copy).
 * buffer_copy_peer: dst_s and src_s are streams of dst's and src's
 *   contexts, ranges checked, size > 0, neither capturing. The copy goes
 *   on dst_s after the earlier work of both streams, and later work on
 *   both waits for it (kiln.h).
 * peer_copy_waits: the op waits on the host, without a bound, for src_s's
 *   earlier work (and, as a write from the host does, for room behind
 *   dst_s's), so the core first waits for both streams within
 *   KILN_SYNC_TIMEOUT_MS when that is set. (Not checked: false is a value.)
 * peer_direct: whether buffer_copy_peer between two distinct contexts of
 *   this backend goes device to device both ways. */
typedef struct kiln_peer_ops {
  kiln_status (*buffer_copy_peer)(kiln_stream *dst_s, kiln_buffer *dst,
                                  size_t dst_off, kiln_stream *src_s,
                                  const kiln_buffer *src, size_t src_off,
                                  size_t size);
  bool peer_copy_waits;
  kiln_status (*peer_direct)(const kiln_context *a, const kiln_context *b,
                             bool *out_direct);
} kiln_peer_ops;

/* Device-side waits: later work on s waits for e (recorded) to complete,
 * without the host waiting. */
typedef struct kiln_event_wait_ops {
  kiln_status (*stream_wait_event)(kiln_stream *s, kiln_event *e);
} kiln_event_wait_ops;

/* What a kernel needs of the device (kiln_kernel_get_attributes,
 * kiln_kernel_suggest_block_size). The core fills every field of *out with
 * KILN_ATTRIBUTE_UNKNOWN (fixed_block with 0) first; the backend sets what
 * it can tell. suggest_block gets dynamic shared memory the device allows
 * one block; KILN_ERROR_UNSUPPORTED, in words, where it cannot say. */
typedef struct kiln_kernel_info_ops {
  kiln_status (*kernel_attributes)(kiln_kernel *k,
                                   kiln_kernel_attributes *out);
  kiln_status (*suggest_block)(kiln_kernel *k, size_t dynamic_shared_bytes,
                               uint32_t *out_block, uint32_t *out_min_grid);
} kiln_kernel_info_ops;

/* Timestamps of events: the time between two recorded events, both done.
 * The core answers for KILN_EVENT_NO_TIMING events itself. */
typedef struct kiln_timing_ops {
  kiln_status (*event_elapsed_ms)(kiln_event *start, kiln_event *end,
                                  float *out_ms);
} kiln_timing_ops;

/* Device limits (core/api/limit.c): `limit` is a known kiln_limit. set may
 * wait for the device (the core has waited within its bound first).
 * KILN_ERROR_UNSUPPORTED, in words, for a limit the runtime lacks. */
typedef struct kiln_limit_ops {
  kiln_status (*context_set_limit)(kiln_context *ctx, kiln_limit limit,
                                   size_t value);
  kiln_status (*context_get_limit)(kiln_context *ctx, kiln_limit limit,
                                   size_t *out_value);
} kiln_limit_ops;

/* Module globals (core/api/global.c makes a buffer of them), for a backend
 * whose buffer ops need nothing but device_address: the address and size
 * of the module's global variable `name`, KILN_ERROR_NOT_FOUND with a
 * message that starts "kiln_module_get_global: " when the module lacks
 * it. */
typedef struct kiln_global_ops {
  kiln_status (*module_global)(kiln_module *m, const char *name,
                               uint64_t *out_address, size_t *out_size);
} kiln_global_ops;

/* Native handles in and out (core/api/interop.c).
 * context_native, stream_native: fill the backend's fields of *out
 *   (the core zeroed it and set `backend`); stream_native submits what
 *   is queued where the backend batches.
 * buffer_native: likewise; the core set device_address (the caller's
 *   first byte, buf->guard past the allocation's start) and size.
 * stream_wait_native: later work on s waits for the foreign handle
 *   (checked non-zero; value 0 except on Vulkan).
 * buffer_import: as buffer_init, but on the caller's memory described by
 *   `native` (backend and size checked, buf->size set, buf->borrowed set
 *   unless `adopt`): check it in words, set buf->device_address. On
 *   failure nothing is freed, whatever `adopt` says.
 * context_import_device: the index, among the backend's devices, of the
 *   device under `native` (probe has run; backend checked); words when
 *   none is.
 * context_import: as context_init (ctx->device_index and properties
 *   set), on the caller's context or device in `native`; `adopt` as
 *   asked (refuse it in words where it means nothing).
 * stream_import: as stream_init, on the caller's stream in `native`
 *   (backend checked, s->borrowed set unless `adopt`); checks it in
 *   words. On failure nothing is destroyed. */
typedef struct kiln_interop_ops {
  kiln_status (*context_native)(kiln_context *ctx, kiln_native_context *out);
  kiln_status (*buffer_native)(const kiln_buffer *buf,
                               kiln_native_buffer *out);
  kiln_status (*stream_native)(kiln_stream *s, kiln_native_stream *out);
  kiln_status (*stream_wait_native)(kiln_stream *s, uint64_t handle,
                                    uint64_t value);
  kiln_status (*buffer_import)(kiln_buffer *buf,
                               const kiln_native_buffer *native, bool adopt);
  kiln_status (*context_import_device)(const kiln_native_context *native,
                                       size_t *out_index);
  kiln_status (*context_import)(kiln_context *ctx,
                                const kiln_native_context *native,
                                bool adopt);
  kiln_status (*stream_import)(kiln_stream *s,
                               const kiln_native_stream *native, bool adopt);
} kiln_interop_ops;

/* Graphs (core/api/graph.c). The core builds a graph by issuing its
 * recorded work through the ops above on an internal stream s
 * (s->building is g): graph_begin, then the ops in capture order (with
 * the graph_updates table's graph_launched after each launch), then
 * graph_end. graph_end with keep false discards what was built (an op
 * failed); with keep true it makes the graph replayable, or fails and
 * discards it. graph_launch replays a built graph on s, in stream order,
 * with the captured event records and waits; a replay while earlier ones
 * run is valid. graph_begin on a graph already built (g->built) builds it
 * again and replaces the old build once no replay uses it. graph_deinit
 * waits for replays in flight; it is called for every graph, also one
 * never built or whose build failed.
 *
 * A capture with branches (streams that joined it through events) is
 * built in one of two ways, by which op the backend has:
 *  - graph_mark / graph_wait_mark (CUDA, HIP): each branch on a building
 *    stream of its own, all with s->building set, graph_begin and
 *    graph_end on the first. graph_mark(g, s, m) marks the point of s's
 *    work so far as mark m; graph_wait_mark(g, t, m) makes what t is
 *    handed next come after mark m (an edge within the graph, which
 *    waits on nothing at replay). A branch's first op is such a wait.
 *  - graph_level (Vulkan): one building stream, the commands in levels
 *    (no command depends on one of its own level or a later one), and
 *    graph_level(g, s) between two levels: what follows comes after what
 *    was handed before. Within a level the backend adds no ordering of
 *    its own, so the level's commands may run at once.
 * With neither, the core builds every branch on one stream in the order
 * of the capture, which keeps every edge and runs nothing at once. */
typedef struct kiln_graph_ops {
  size_t graph_size; /* the backend's struct (>= the core's) */
  kiln_status (*graph_begin)(kiln_graph *g, kiln_stream *s);
  kiln_status (*graph_end)(kiln_graph *g, kiln_stream *s, bool keep);
  kiln_status (*graph_launch)(kiln_graph *g, kiln_stream *s);
  void (*graph_deinit)(kiln_graph *g);
  kiln_status (*graph_mark)(kiln_graph *g, kiln_stream *s, size_t mark);
  kiln_status (*graph_wait_mark)(kiln_graph *g, kiln_stream *s, size_t mark);
  kiln_status (*graph_level)(kiln_graph *g, kiln_stream *s);
} kiln_graph_ops;

/* Changing a built graph's launch arguments in place. graph_launched is
 * called during a build after the launch of g->cmds[index] (its node, for
 * updates); graph_update passes the new g->cmds[index].packed of that
 * launch into the built graph. Only with the graphs table. */
typedef struct kiln_graph_update_ops {
  kiln_status (*graph_launched)(kiln_graph *g, kiln_stream *s, size_t index);
  kiln_status (*graph_update)(kiln_graph *g, size_t index);
} kiln_graph_update_ops;

/* Run-time compilation (core/compile/compile.c). `languages` lists what it
 * compiles, preferred first, ended by 0 (HIP: HIP C++, then CUDA C++).
 * compiler_load: loads the compiler library once per process (a failure
 *   is retried on the next call, so fixing KILN_*_LIBRARY takes effect);
 *   KILN_OK with "NVRTC 13.0 (libnvrtc.so.13)" in `description`, or
 *   KILN_ERROR_UNAVAILABLE with the reason, naming the library and the
 *   package that provides it. Called under the core's compiler lock.
 *   The description is part of every cache key.
 * compile_target: the target for the context's device when the caller
 *   gives none ("sm_90", "gfx90a", "spv1.6"); the compiler is loaded.
 * compile: one source to one image. On KILN_ERROR_COMPILE the message
 *   holds the head of the log; out->log (malloc'd, the core frees it)
 *   holds all of it, on success too (NULL when the compiler said
 *   nothing). out->image is malloc'd and owned by the core after.
 * image_checks (optional): what module_init checks an image against on
 *   ctx's device that costs enough to skip ("SPIRV-Tools v2023.1 ... with
 *   scalar block layout"), "" for nothing. Part of the cache key: the
 *   core stores an entry only once a module of it was made, so a hit
 *   under that key passed the same checks, and module_init gets it as
 *   checked (kiln_module's `checked`). */
typedef struct kiln_compiler_ops {
  kiln_source_language languages[3];
  kiln_status (*compiler_load)(char *description, size_t description_size);
  kiln_status (*compile_target)(const kiln_context *ctx, char *target,
                                size_t target_size);
  kiln_status (*compile)(const kiln_compile_job *job, kiln_compiled *out);
  void (*image_checks)(const kiln_context *ctx, char *out, size_t size);
} kiln_compiler_ops;

/* Memory in stream order from a pool of the backend's (core/memory/pool.c
 * decides which pool serves a context, asking `supported` once).
 * supported: KILN_OK where the device and driver have stream-ordered
 *   pools, else KILN_ERROR_UNSUPPORTED in words; the core then keeps a
 *   pool of its own for the context, over buffer_init and buffer_deinit.
 * buffer_init_async: buf->size > 0 is set; allocates in s's order, sets
 *   buf->device_address, zeroes in s's order for KILN_BUFFER_ZERO; when
 *   the device is full, gives back what the pool keeps and tries once
 *   more before KILN_ERROR_OUT_OF_DEVICE_MEMORY.
 * buffer_deinit_async: releases a buffer of buffer_init_async in s's
 *   order, without waiting; the core frees the object right after, so
 *   nothing may refer to buf later. buffer_deinit (the synchronous
 *   destroy, and a context's teardown) also frees such a buffer.
 * trim, usage, set_keep: kiln_context_trim_pool, kiln_context_pool_usage
 *   and kiln_context_set_pool_keep of kiln.h, for the backend's pool.
 * buffer_pool_bytes: what usage's `used` counts for a live buffer of
 *   buffer_init_async (its size as the pool rounds it), so that the core
 *   can leave out the buffers it keeps for reuse (core/memory/reuse.c). */
typedef struct kiln_memory_ops {
  kiln_status (*supported)(kiln_context *ctx);
  kiln_status (*buffer_init_async)(kiln_buffer *buf, kiln_stream *s,
                                   uint32_t flags);
  kiln_status (*buffer_deinit_async)(kiln_buffer *buf, kiln_stream *s);
  kiln_status (*trim)(kiln_context *ctx, size_t keep_bytes);
  kiln_status (*usage)(kiln_context *ctx, size_t *out_reserved,
                       size_t *out_used);
  kiln_status (*set_keep)(kiln_context *ctx, size_t keep_bytes);
  size_t (*buffer_pool_bytes)(const kiln_buffer *buf);
} kiln_memory_ops;

/* Debug labels in the device's own command stream, for KILN_TRACE=nvtx
 * (core/submit/trace.c), where the profilers of the API read those rather
 * than NVTX or rocTX: Vulkan's VK_EXT_debug_utils, which RenderDoc and
 * Nsight Systems show. CUDA and HIP have no table: Nsight Systems and
 * rocprof see the NVTX and rocTX ranges the core opens itself.
 * stream_label_begin: what the calling thread issues on s until
 *   stream_label_end(s) is the command called `name` (the text of its NVTX
 *   range, valid until the end). The door calls them around the op of
 *   each command it issues while the context's sinks hold nvtx, never for
 *   a graph's build; they nest on a thread as the commands do (kiln_fill
 *   inside the kiln_buffer_fill that issued it). Neither can fail: where
 *   the driver has no labels they do nothing. */
typedef struct kiln_label_ops {
  void (*stream_label_begin)(kiln_stream *s, const char *name);
  void (*stream_label_end)(kiln_stream *s);
} kiln_label_ops;

struct kiln_backend_ops {
  kiln_backend kind;
  const char *name; /* "cuda", "hip", "vulkan" */

  /* Process-wide set-up, called once (under the registry's lock) before any
   * other op: load the vendor library, initialise it, count devices.
   * KILN_OK, or KILN_ERROR_UNAVAILABLE with the reason written to `reason`
   * in words ("libcuda.so.1 not found: ...", "hipErrorNoDevice: no
   * ROCm-capable device is detected"). Never called again after failing. */
  kiln_status (*probe)(char *reason, size_t reason_size);
  size_t (*device_count)(void);
  /* Fills every field but `backend`; index < device_count(). */
  kiln_status (*device_properties)(size_t index,
                                   kiln_device_properties *out);

  /* The sizes of the backend's object structs (each >= the core's). */
  size_t context_size, buffer_size, module_size, kernel_size, stream_size,
      event_size;

  /* ctx->device_index, ctx->properties and ctx->sync are set. Init may
   * complete the properties with what only a context tells (CUDA's and
   * HIP's max_stream_priority). The core creates the default stream after
   * this returns. */
  kiln_status (*context_init)(kiln_context *ctx);
  void (*context_deinit)(kiln_context *ctx); /* see ctx->abandoned */
  /* The three waits (context, stream, event) return within about
   * timeout_ns (KILN_WAIT_FOREVER: no limit; 0: only look), with
   * KILN_ERROR_TIMEOUT while work is still running then; the core words
   * that message. */
  kiln_status (*context_synchronize)(kiln_context *ctx, uint64_t timeout_ns);

  /* buf->size > 0 is set; init sets buf->device_address and honours
   * KILN_BUFFER_ZERO. */
  kiln_status (*buffer_init)(kiln_buffer *buf, uint32_t flags);
  void (*buffer_deinit)(kiln_buffer *buf);

  /* Transfers: ranges checked, size > 0, stream of the same context.
   * write: `src` may be reused once it returns. read: complete on return. */
  kiln_status (*buffer_write)(kiln_stream *s, kiln_buffer *dst, size_t off,
                              const void *src, size_t size);
  kiln_status (*buffer_read)(kiln_stream *s, const kiln_buffer *src,
                             size_t off, void *dst, size_t size);
  kiln_status (*buffer_copy)(kiln_stream *s, kiln_buffer *dst, size_t dst_off,
                             const kiln_buffer *src, size_t src_off,
                             size_t size);
  /* 0, or the size from which the core copies whole 32-bit words between
   * buffers with the built-in kernel kiln_copy_f32 instead of buffer_copy:
   * for a backend whose copy command moves device memory slower than a
   * kernel does (NVIDIA's Vulkan vkCmdCopyBuffer: 0.28 of the memory's
   * bandwidth). */
  size_t copy_kernel_bytes;

  /* Modules. `image_formats` is a mask of (1u << kiln_image_format) the
   * backend loads; module_init gets only images of those formats, at least
   * one, in the caller's order. */
  uint32_t image_formats;
  kiln_status (*module_init)(kiln_module *m, const kiln_module_image *images,
                             size_t count);
  void (*module_deinit)(kiln_module *m);
  /* k->name and k->module are set, k->arg_bytes is KILN_ARG_BYTES_UNKNOWN
   * and k->param_count KILN_PARAMS_UNKNOWN; init sets what it can tell.
   * KILN_ERROR_NOT_FOUND (with a message) when the module lacks the name. */
  kiln_status (*kernel_init)(kiln_kernel *k);
  void (*kernel_deinit)(kiln_kernel *k);
  /* Grid dimensions are all > 0 and every limit is checked. */
  kiln_status (*launch)(kiln_stream *s, kiln_kernel *k,
                        const kiln_launch_config *config,
                        const kiln_packed_args *args);

  kiln_status (*stream_init)(kiln_stream *s);
  /* The core synchronizes the stream before this. */
  void (*stream_deinit)(kiln_stream *s);
  kiln_status (*stream_synchronize)(kiln_stream *s, uint64_t timeout_ns);

  kiln_status (*event_init)(kiln_event *e);
  void (*event_deinit)(kiln_event *e);
  kiln_status (*event_record)(kiln_event *e, kiln_stream *s);
  /* e->recorded is true for these two. */
  kiln_status (*event_synchronize)(kiln_event *e, uint64_t timeout_ns);
  kiln_status (*event_query)(kiln_event *e); /* KILN_OK or NOT_READY */

  /* The abilities a backend may lack, each NULL when it does. */
  /* NULL: kiln_host_buffer_create answers KILN_ERROR_UNSUPPORTED. */
  const kiln_host_buffer_ops *host_buffers;
  /* NULL: the core writes or reads through the host buffer's mapping, done
   * before the call returns (a valid async transfer, only slower). */
  const kiln_async_transfer_ops *async_transfers;
  /* NULL: the core fills through kiln_fill_with_kernel(). */
  const kiln_fill_ops *fills;
  /* NULL: copies between two contexts, and the question whether they go
   * device to device, answer KILN_ERROR_UNSUPPORTED. */
  const kiln_peer_ops *peers;
  /* NULL: the host waits for the event instead (kiln_stream_wait_event,
   * and the core's own fences between streams). */
  const kiln_event_wait_ops *event_waits;
  /* NULL: kiln_event_elapsed_ms answers KILN_ERROR_UNSUPPORTED. */
  const kiln_timing_ops *timing;
  /* NULL: kiln_kernel_get_attributes and kiln_kernel_suggest_block_size
   * answer KILN_ERROR_UNSUPPORTED. */
  const kiln_kernel_info_ops *kernel_info;
  /* NULL: kiln_context_set_limit and get_limit answer
   * KILN_ERROR_UNSUPPORTED. */
  const kiln_limit_ops *limits;
  /* NULL: kiln_module_get_global answers KILN_ERROR_UNSUPPORTED. */
  const kiln_global_ops *globals;
  /* NULL: the native-handle calls answer KILN_ERROR_UNSUPPORTED. */
  const kiln_interop_ops *interop;
  /* NULL: kiln_stream_begin_capture answers KILN_ERROR_UNSUPPORTED. */
  const kiln_graph_ops *graphs;
  /* NULL: the core builds the graph again to change a launch's arguments.
   * Only with `graphs`. */
  const kiln_graph_update_ops *graph_updates;
  /* NULL: kiln_compiler_available answers KILN_ERROR_UNAVAILABLE, and
   * sources find no compiler (images still load). */
  const kiln_compiler_ops *compiler;
  /* NULL: the core keeps a pool of its own for kiln_buffer_create_async
   * (core/memory/pool.c), as it does where `supported` says no. */
  const kiln_memory_ops *memory;
  /* NULL: KILN_TRACE=nvtx opens NVTX and rocTX ranges only, and needs one
   * of them. */
  const kiln_label_ops *labels;

  /* kiln's built-in kernels for this backend, embedded at build time by
   * tools/kiln-embed: a list ended by an entry whose format is 0. NULL when
   * the build had no compiler for them. */
  const kiln_module_image *builtin_images;
  /* Built-in kernels for matrix units, kept out of builtin_images because
   * a device without them refuses the whole module (Vulkan: SPIR-V that
   * declares CooperativeMatrixNV; CUDA: sm_90a code, which only Hopper
   * runs); NULL where there are none. */
  const kiln_module_image *builtin_matrix_images;
};

/* ---- Core services for backends ------------------------------------------- */

/* Records `status` and a printf-style message as this thread's last error
 * (also logged at debug level) and returns `status`. */
kiln_status kiln_set_error(kiln_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* A backend's failed driver call, in one wording for every backend: the
 * call's words from fmt and ap, the driver's in `why` (its name and text
 * for the result). kiln_call_failed records "<call> failed: <why>" as the
 * last error with `status` and returns it; kiln_call_warn logs it as a
 * warning, prefixed by `backend` ("cuda"), for deinit paths that cannot
 * report. */
kiln_status kiln_call_failed(kiln_status status, const char *why,
                             const char *fmt, va_list ap);
void kiln_call_warn(const char *backend, const char *why, const char *fmt,
                    va_list ap);

/* Logs a message at `level` if logging is on at that level. */
void kiln_log(kiln_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Sends msg to the log handler (or stderr) at level l, whatever the level
 * in force: for what the user asked to see by name (KILN_TRACE=log, a
 * Vulkan kernel's printf under KILN_VULKAN_VALIDATION=printf). */
void kiln_log_always(kiln_log_level l, const char *msg);

/* The built-in kernel `name` of ctx (loading the built-in module on first
 * use); KILN_ERROR_UNSUPPORTED when the build has no kernels for it. */
kiln_status kiln_builtin_kernel(kiln_context *ctx, const char *name,
                                kiln_kernel **out_kernel);

/* The kernel `name` of the backend's builtin_matrix_images (loading them
 * on first use): KILN_ERROR_NOT_FOUND where there are none, the module's
 * error, logged, where the device refuses them (and on every later call). */
kiln_status kiln_builtin_matrix_kernel(kiln_context *ctx, const char *name,
                                       kiln_kernel **out_kernel);

/* Fills through the built-in kernel kiln_fill (any offset and size, counted
 * as the buffer ops' are: from the allocation's start), for the patterns or
 * alignments a backend's transfer engine cannot do. */
kiln_status kiln_fill_with_kernel(kiln_stream *s, kiln_buffer *dst,
                                  size_t off, size_t size, uint64_t pattern,
                                  size_t pattern_size);

/* Copies `size` bytes (a multiple of 4, at offsets that are, counted as
 * the buffer ops' are) through `k`, the built-in kernel kiln_copy_f32. */
kiln_status kiln_copy_with_kernel(kiln_stream *s, kiln_kernel *k,
                                  kiln_buffer *dst, size_t dst_off,
                                  const kiln_buffer *src, size_t src_off,
                                  size_t size);

/* The launch shape of kiln_copy_f32 for `size` bytes, for a backend that
 * launches it itself (between memory that is no kiln_buffer). */
kiln_launch_config kiln_copy_kernel_config(size_t size);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t kiln_now_ns(void);

/* A bounded wait for drivers that have no timed one: calls done(arg) (KILN_OK
 * once the work is done, KILN_ERROR_NOT_READY while it runs, any other
 * status a failure, returned as it is) until it is done or timeout_ns have
 * passed, then KILN_ERROR_TIMEOUT. Spins for the first 50 us, as drivers do
 * before they block, then sleeps in steps growing to 1 ms, so a long wait
 * costs little CPU and ends at most about 1 ms late. */
kiln_status kiln_poll_until(kiln_status (*done)(void *arg), void *arg,
                            uint64_t timeout_ns);

/* An unbounded wait as `policy` says, for drivers whose own wait either
 * spins or sleeps: query(arg) answers KILN_OK once the work is done and
 * KILN_ERROR_NOT_READY before (any other status ends the wait), sleep(arg)
 * waits by blocking. SPIN polls, YIELD polls giving up the core between
 * looks, BLOCK sleeps, AUTO polls for KILN_SYNC_AUTO_SPIN_NS and then
 * sleeps. */
kiln_status kiln_wait_as(kiln_sync_policy policy,
                         kiln_status (*query)(void *arg),
                         kiln_status (*sleep)(void *arg), void *arg);

/* kiln_poll_until for a whole context, for drivers whose device-wide wait
 * has no bound: polls query(s) (KILN_OK once s is done, NOT_READY while it
 * runs) over every stream of ctx, the default one included. */
kiln_status kiln_poll_streams(kiln_context *ctx,
                              kiln_status (*query)(kiln_stream *s),
                              uint64_t timeout_ns);

/* Waits, without bound, for the work queued so far on every stream of ctx
 * (the default one included; not one that builds a graph), so that memory
 * the work may use can be freed: backends whose free does not promise that
 * wait call it first, and context waits. The first failure is returned
 * (the other streams are still waited for). */
kiln_status kiln_sync_streams(kiln_context *ctx);

/* Marks s ready (its native stream made) or not (about to go), under the
 * context's lock, for the walks above. */
void kiln_stream_set_ready(kiln_stream *s, bool ready);

/* Sets p->features, the subgroup size range and the matrix shapes from
 * p->architecture ("sm_90", "gfx90a") and p->subgroup_size, for CUDA and
 * HIP, whose drivers answer no such question (core/api/features.c). */
void kiln_features_from_architecture(kiln_device_properties *p);

/* ---- Hashing and the disk cache (core/compile/hash.c, core/compile/cache.c) --------------- */

/* SHA-256, incrementally: init, update any number of times, final. */
typedef struct kiln_sha256 {
  uint32_t state[8];
  uint64_t bytes;
  unsigned char block[64];
  size_t used;
} kiln_sha256;

typedef struct kiln_hash {
  unsigned char bytes[32];
} kiln_hash;

void kiln_sha256_init(kiln_sha256 *h);
void kiln_sha256_update(kiln_sha256 *h, const void *data, size_t size);
void kiln_sha256_final(kiln_sha256 *h, kiln_hash *out);
/* Hashes `size` then the bytes, so that consecutive fields cannot run into
 * each other ("ab","c" and "a","bc" differ); a NULL string counts as "". */
void kiln_sha256_field(kiln_sha256 *h, const void *data, size_t size);
void kiln_sha256_string(kiln_sha256 *h, const char *text);

/*
 * A store of blobs on disk under KILN_CACHE_DIR (else $XDG_CACHE_HOME/kiln,
 * else ~/.cache/kiln), one file per key, for compiled images and Vulkan
 * pipeline caches; `kind` ("image", "pipeline") prefixes the file name.
 * Entries carry magic, version, key, length and a checksum; they are
 * written to a temporary file and renamed into place, so a reader never
 * sees a torn one, and anything odd on reading is a miss (the entry is
 * removed). Neither call fails: KILN_CACHE=off, a directory that cannot be
 * written, or a full disk make the cache a no-op, with a warning logged
 * once. Above KILN_CACHE_MAX_BYTES (default 512 MiB) the least recently
 * used entries are evicted. Thread- and process-safe.
 */
/* Whether the cache is on (KILN_CACHE is not "off"/"0"/"no"/"false"). */
bool kiln_cache_enabled(void);
/* On a hit, true with *out_data (malloc'd; the caller frees it) and
 * *out_size; marks the entry recently used. */
bool kiln_cache_load(const char *kind, const kiln_hash *key, void **out_data,
                     size_t *out_size);
void kiln_cache_store(const char *kind, const kiln_hash *key,
                      const void *data, size_t size);

/* Reads environment variable `name`; NULL when unset or empty (core/base/env.c,
 * with kiln_env_flag). */
const char *kiln_getenv(const char *name);

/* Reads environment variable `name` as a whole number: decimal digits only
 * (no sign, space or suffix), at most `max`. Unset or empty: KILN_OK with
 * *out_given false. Otherwise KILN_OK with *out_given true and the value,
 * or KILN_ERROR_INVALID_ARGUMENT with a message naming the variable, its
 * value and `what` it should be ("a device index"). core/base/settings.c. */
kiln_status kiln_env_uint(const char *name, uint64_t max, const char *what,
                          bool *out_given, uint64_t *out_value);

/* Reads environment variable `name` as a switch: 1, on, yes, true or 0,
 * off, no, false, in any case. Unset or empty gives `fallback`; any other
 * value gives `fallback` with *out_valid false, for the caller to warn
 * about (this never logs or sets the error, so the logger may use it). */
bool kiln_env_flag(const char *name, bool fallback, bool *out_valid);

/* Copies `src` into dst[dst_size], truncating and always terminating. */
void kiln_strlcpy(char *dst, const char *src, size_t dst_size);

/* Little-endian reads and writes of `bytes` bytes at p: the byte order of
 * the images kiln parses and of the files it keeps, whatever the host's. */
static inline uint64_t kiln_read_le(const unsigned char *p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = bytes; i-- > 0;) v = v << 8 | p[i];
  return v;
}
static inline void kiln_write_le(unsigned char *p, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Test hook: replaces the registry's backends with `ops[0..count)` (at most
 * one per kind; the fakes of tests/core use it) and forgets every cached
 * probe result. kiln_registry_override(NULL, 0) restores the compiled-in
 * backends. Not thread-safe; never used outside tests. */
void kiln_registry_override(const kiln_backend_ops *const *ops, size_t count);

/* The compiled-in backends' tables, for the registry. */
extern const kiln_backend_ops kiln_cuda_ops;
extern const kiln_backend_ops kiln_hip_ops;
extern const kiln_backend_ops kiln_vulkan_ops;

#endif /* KILN_CORE_BACKEND_H */
