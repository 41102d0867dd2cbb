/*
 * kiln — portable GPU compute for C: buffers, kernels, streams and events on
 * CUDA, HIP or Vulkan compute, through one API. The whole public API is
 * this one header, as SQLite's and Lua's are, so it is long by design.
 *
 * Conventions that hold for every function below:
 *  - Every fallible call returns a kiln_status; KILN_OK is 0. On failure a
 *    message in words is left for the calling thread (kiln_last_error()) and
 *    out-parameters are left untouched.
 *  - Objects are opaque handles, created by kiln_X_create and released by
 *    kiln_X_destroy. Every object belongs to one context; using it with
 *    another context's objects is KILN_ERROR_WRONG_CONTEXT.
 *  - Sizes and offsets are in bytes, as size_t. Out-parameters come last.
 *  - Operations that take a kiln_stream* are ordered on that stream; NULL
 *    means the default stream of the context the other arguments belong to.
 *  - A zero-length transfer, copy or fill, and a launch with a zero grid
 *    dimension, are valid and do nothing (their arguments are still checked).
 *  - Threads: any call may be made from any thread while other threads call
 *    kiln with the same context, kernels and streams, the default stream
 *    included. Calls on one stream from several threads are queued each
 *    whole, in the order they were made (the launches of a built-in helper
 *    such as kiln_reduce_sum_f32 together), and a synchronize or a read
 *    waits for everything queued on the stream before it, whichever thread
 *    queued it. Objects of every kind may be created and destroyed while
 *    other threads launch in the same context, and threads may have
 *    contexts of their own. tests/conformance/test_threads.c checks each of
 *    these with 8 threads on every backend (and under ThreadSanitizer on
 *    Vulkan). Recording an event while another thread uses that event is
 *    the caller's race.
 *  - A handle that was destroyed (or released with its context), or that
 *    kiln never handed out, is KILN_ERROR_INVALID_HANDLE in every call, never
 *    a crash; destroying a handle while another thread still uses it is the
 *    caller's race.
 *  - Calls that wait for the device (the synchronize calls, reads, destroys)
 *    wait without limit unless KILN_SYNC_TIMEOUT_MS holds a number of
 *    milliseconds (> 0) when the context is created. Each such wait then
 *    returns KILN_ERROR_TIMEOUT after that long; a write from host memory
 *    then first waits, within the same bound, for its stream's earlier
 *    work; a destroy that timed out leaves its object alive
 *    (kiln_context_destroy excepted). kiln_stream_synchronize_timeout
 *    bounds one wait of its own.
 *  - Structs that grow: a struct that a caller fills for kiln or that kiln
 *    fills for the caller (kiln_context_options, kiln_device_properties,
 *    kiln_compile_options, kiln_module_build_info, kiln_stream_options,
 *    kiln_kernel_attributes and the kiln_native_* structs) goes with its
 *    size. The exported function
 *    (kiln_context_create_sized) takes it as a size_t parameter, and the
 *    static inline function of the plain name passes sizeof as this header
 *    has it, so calls read as if there were none:
 *    kiln_context_create(&options, &ctx). A program built against an older
 *    kiln.h thus tells a newer libkiln.so.0 how much of the struct it has:
 *    kiln reads only that much, takes zero for every field beyond it
 *    (every field added later means "the default" at zero), and writes no
 *    more than that much. A program built against a newer kiln.h, run with
 *    an older libkiln.so.0, gets zeros in the fields the library does not
 *    know, and KILN_ERROR_UNSUPPORTED, naming the byte, if it set one of
 *    them. Such structs only ever grow at their end. Code that cannot use
 *    the inline functions (bindings through dlsym or an FFI) calls the
 *    _sized one with the size of its own copy of the struct:
 *    kiln_context_create_sized(&o, sizeof o, &c).
 *    kiln_trace_command, which kiln fills for a handler, says its own size
 *    in its first field. The other public structs (kiln_dim3,
 *    kiln_launch_config, kiln_arg, kiln_module_image, kiln_source,
 *    kiln_header, kiln_matrix_shape) never change: passed by value or in
 *    arrays, they cannot say their size, and a need they do not meet gets
 *    a new struct. scripts/abi-check.sh holds libkiln.so.0 to this.
 */
#ifndef KILN_KILN_H
#define KILN_KILN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KILN_STATIC)
#define KILN_API
#elif defined(_WIN32) && defined(KILN_BUILDING)
#define KILN_API __declspec(dllexport)
#elif defined(_WIN32)
#define KILN_API __declspec(dllimport)
#elif defined(__GNUC__) && defined(KILN_BUILDING)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0
/* One number that compares: major * 10000 + minor * 100 + patch. */
#define KILN_VERSION \
  (KILN_VERSION_MAJOR * 10000 + KILN_VERSION_MINOR * 100 + KILN_VERSION_PATCH)

/* The version of the library actually loaded, as KILN_VERSION computes it;
 * compare with KILN_VERSION to detect a header/library mismatch. */
KILN_API unsigned kiln_version(void);

/* The loaded library's version as "major.minor.patch"; a static string. */
KILN_API const char *kiln_version_string(void);

/* ------------------------------------------------------------------------ */
/* Status and errors                                                          */
/* ------------------------------------------------------------------------ */

typedef enum kiln_status {
  KILN_OK = 0,
  /* An argument is NULL where it may not be, or has a meaningless value. */
  KILN_ERROR_INVALID_ARGUMENT = 1,
  /* A handle is NULL, of the wrong kind, or was already destroyed. */
  KILN_ERROR_INVALID_HANDLE = 2,
  /* Objects from two different contexts were used together. */
  KILN_ERROR_WRONG_CONTEXT = 3,
  /* An offset, length, index or dimension is outside what is allowed. */
  KILN_ERROR_OUT_OF_RANGE = 4,
  /* A size computation overflowed. */
  KILN_ERROR_OVERFLOW = 5,
  /* Host memory could not be allocated. */
  KILN_ERROR_OUT_OF_HOST_MEMORY = 6,
  /* Device memory could not be allocated. */
  KILN_ERROR_OUT_OF_DEVICE_MEMORY = 7,
  /* The backend or device cannot do this. */
  KILN_ERROR_UNSUPPORTED = 8,
  /* The backend is not compiled in, or cannot run here (see the message). */
  KILN_ERROR_UNAVAILABLE = 9,
  /* A kernel name or device index does not exist. */
  KILN_ERROR_NOT_FOUND = 10,
  /* A module has no image for the context's backend. */
  KILN_ERROR_NO_IMAGE = 11,
  /* An image was rejected: malformed, or failed to load or compile. */
  KILN_ERROR_INVALID_IMAGE = 12,
  /* A kernel launch was rejected or failed. */
  KILN_ERROR_LAUNCH_FAILED = 13,
  /* Queried work has not finished yet (kiln_event_query). */
  KILN_ERROR_NOT_READY = 14,
  /* The device faulted or was lost; the context is unusable from now on and
   * every later call on it returns this status. Destroy it. A new context
   * then works on Vulkan; CUDA (and HIP on NVIDIA) keep a kernel's fault
   * for the rest of the process, as their drivers document, so a new
   * context on that device fails with this status too: restart the
   * process. tests/conformance/test_faults.c checks both. */
  KILN_ERROR_DEVICE_LOST = 15,
  /* kiln_context_destroy found objects still alive (they were released). */
  KILN_ERROR_OBJECTS_ALIVE = 16,
  /* A call is not valid in the object's current state. */
  KILN_ERROR_INVALID_STATE = 17,
  /* A vendor error with no closer kiln status; the message names it. */
  KILN_ERROR_BACKEND = 18,
  /* Kernel source failed to compile; the message holds the compiler's log
   * (file and line), kiln_last_compile_log() all of it. */
  KILN_ERROR_COMPILE = 19,
  /* A bounded wait ran out of time with the device's work still running:
   * the work goes on and the context stays usable (wait again, or destroy
   * the context). See KILN_SYNC_TIMEOUT_MS above. */
  KILN_ERROR_TIMEOUT = 20,
  /* KILN_DEBUG=guard found bytes next to a buffer changed: a kernel wrote
   * outside the buffer's range. The call that reports it did its own work;
   * the context stays usable. See "Debugging" below. */
  KILN_ERROR_MEMORY_CORRUPTION = 21,
} kiln_status;

/* The status's name, e.g. "KILN_ERROR_OUT_OF_RANGE"; a static string, and
 * "KILN_STATUS_UNKNOWN" for a value that is not a kiln_status. */
KILN_API const char *kiln_status_name(kiln_status status);

/* The message of the last failed call on this thread, in words, with the
 * vendor's own error name where there is one; "" if none failed yet. Valid
 * until the next kiln call on this thread. */
KILN_API const char *kiln_last_error(void);

/* Forgets this thread's last error message. */
KILN_API void kiln_clear_error(void);

/*
 * Debugging. KILN_DEBUG, read when a context is created, turns on checks
 * for that context: a comma-separated list of modes, of which there is one
 * so far; any other word fails kiln_context_create with
 * KILN_ERROR_INVALID_ARGUMENT. Unset or empty: no checks, at no cost.
 *
 * KILN_DEBUG=guard finds kernels that write outside their buffers, on every
 * backend, lavapipe included. Every device buffer gets 4096 guard bytes of
 * the value 0xfd before and after it (its size, its address as kernels see
 * it and every range check stay as asked). The guards of a buffer that
 * kernels took as an argument (a graph's replay included, with the
 * built-in kernels that its copies and fills may have become) are read
 * back once the host knows those kernels are done: by kiln_stream_synchronize(_timeout), a kiln_buffer_read
 * or kiln_stream_destroy of their stream, kiln_event_synchronize of an
 * event recorded after them on it, and kiln_context_synchronize; a buffer
 * that kernels of several streams took, by the last only.
 * kiln_buffer_destroy checks its buffer and kiln_context_destroy every
 * buffer, whether a kernel took it or not. A changed guard makes that call
 * return KILN_ERROR_MEMORY_CORRUPTION once it has done its own work (the
 * data read, the buffer destroyed), with a message naming the buffer
 * (handle, size, device address), the side and the changed offsets counted
 * from the buffer's start ("-4 to -1" before it, "size+0 to size+3" after
 * it); every corrupted buffer is also logged at the error level. The guards
 * are then written again, so one overrun is reported once. Not found:
 * writes more than 4096 bytes away (unless they land in another buffer's
 * guards, and are then reported for that buffer), writes of 0xfd itself,
 * reads out of range. Cost: 8 KiB more device memory per buffer; creating
 * a buffer writes its guards and waits for that; a check reads 8 KiB per
 * buffer that kernels took since its last check (nothing when no kernel
 * ran); guard reads and writes go through one internal stream, under one
 * lock, per context.
 */

/* ------------------------------------------------------------------------ */
/* Logging                                                                    */
/* ------------------------------------------------------------------------ */

/* kiln prints nothing unless asked: KILN_LOG=off|error|warn|info|debug (in
 * any case) in the environment, or kiln_set_log_level(), sends messages to
 * stderr or to the handler set with kiln_set_log_handler(). Without
 * KILN_LOG, KILN_VULKAN_VALIDATION=1 (or core, or printf) means warn, so
 * that the validation layer's findings are seen. Any other KILN_LOG value
 * is reported once, as a warning sent whatever the level, and counts as
 * unset. Some lines are sent whatever the level, because the user asked
 * for them by name: KILN_TRACE=log's, and under
 * KILN_VULKAN_VALIDATION=printf each line a Vulkan kernel's
 * debugPrintfEXT prints, at the info level, as "vulkan printf (KERNEL):
 * TEXT" (a graph's replay names the graph's kernels, "a, b"). */
typedef enum kiln_log_level {
  KILN_LOG_OFF = 0,
  KILN_LOG_ERROR = 1,
  KILN_LOG_WARN = 2,
  KILN_LOG_INFO = 3,
  KILN_LOG_DEBUG = 4,
} kiln_log_level;

/* Receives one message; `message` is valid only during the call. The
 * handler may be called from any thread that calls into kiln. */
typedef void (*kiln_log_handler)(kiln_log_level level, const char *message,
                                 void *user_data);

/* Sets the most verbose level that is reported (overrides KILN_LOG). */
KILN_API void kiln_set_log_level(kiln_log_level level);

/* The level in force: kiln_set_log_level's, else KILN_LOG's, else WARN
 * when KILN_VULKAN_VALIDATION is on, else OFF. */
KILN_API kiln_log_level kiln_get_log_level(void);

/* Routes messages to `handler` instead of stderr; NULL restores stderr. */
KILN_API void kiln_set_log_handler(kiln_log_handler handler, void *user_data);

/* ------------------------------------------------------------------------ */
/* Backends and devices                                                       */
/* ------------------------------------------------------------------------ */

typedef enum kiln_backend {
  /* Picks one: a discrete GPU through CUDA, then HIP, then Vulkan, then any
   * Vulkan device (lavapipe, Mesa's CPU driver, included). */
  KILN_BACKEND_AUTO = 0,
  KILN_BACKEND_CUDA = 1,
  KILN_BACKEND_HIP = 2,
  KILN_BACKEND_VULKAN = 3,
} kiln_backend;

#define KILN_BACKEND_COUNT 4

/* "auto", "cuda", "hip" or "vulkan"; "unknown" otherwise. Static string. */
KILN_API const char *kiln_backend_name(kiln_backend backend);

/* Parses a backend name as KILN_BACKEND takes it (case-insensitive).
 * KILN_ERROR_NOT_FOUND, naming the known backends, for anything else. */
KILN_API kiln_status kiln_backend_from_name(const char *name,
                                            kiln_backend *out_backend);

/* Whether this build of kiln has the backend compiled in. */
KILN_API bool kiln_backend_compiled(kiln_backend backend);

/* Whether the backend can run here: KILN_OK, or KILN_ERROR_UNAVAILABLE with
 * the reason in words (no driver, no device, not compiled in, ...). The
 * reason is also stored in *out_reason if that is not NULL: "" when
 * available, else a string owned by kiln, valid until the process ends. The
 * first call loads the vendor library; later calls are cheap. An available
 * backend stays so; an unavailable one is probed again (here, by
 * kiln_context_create and by the other calls that look at backends) once
 * the variable naming its library, KILN_CUDA_LIBRARY, KILN_HIP_LIBRARY or
 * KILN_VULKAN_LIBRARY, has a value other than at the failed probe (set,
 * changed or unset), and the reason's text is then replaced. A HIP runtime
 * once loaded cannot be replaced by another in the same process. */
KILN_API kiln_status kiln_backend_available(kiln_backend backend,
                                            const char **out_reason);

/* The number of devices the backend sees (0 when it is unavailable, which
 * is not an error here). */
KILN_API kiln_status kiln_device_count(kiln_backend backend, size_t *out_count);

typedef enum kiln_device_type {
  KILN_DEVICE_TYPE_OTHER = 0,
  KILN_DEVICE_TYPE_DISCRETE_GPU = 1,
  KILN_DEVICE_TYPE_INTEGRATED_GPU = 2,
  KILN_DEVICE_TYPE_VIRTUAL_GPU = 3,
  KILN_DEVICE_TYPE_CPU = 4,
} kiln_device_type;

/* "discrete GPU", "integrated GPU", "virtual GPU", "CPU" or "other". */
KILN_API const char *kiln_device_type_name(kiln_device_type type);

/* Optional abilities a kernel may use, as bits of
 * kiln_device_properties.features. On Vulkan each is a device feature that
 * kiln enables when it creates the device, where the device offers it (a
 * kernel using one that is not enabled is invalid); on CUDA and HIP they
 * follow the device's architecture. */
typedef enum kiln_device_feature {
  KILN_FEATURE_FLOAT16 = 1u << 0,  /* 16-bit float arithmetic and storage */
  KILN_FEATURE_FLOAT64 = 1u << 1,  /* 64-bit float arithmetic */
  KILN_FEATURE_INT8 = 1u << 2,     /* 8-bit integer arithmetic and storage */
  KILN_FEATURE_INT8_DOT_PRODUCT = 1u << 3, /* packed 4 x 8-bit dot products
                                              (CUDA __dp4a, Vulkan
                                              VK_KHR_shader_integer_dot_product) */
  KILN_FEATURE_FLOAT32_ATOMIC_ADD = 1u << 4, /* atomic add of a float in a
                                                buffer (Vulkan:
                                                VK_EXT_shader_atomic_float) */
  KILN_FEATURE_FLOAT64_ATOMIC_ADD = 1u << 5, /* the same for doubles */
  KILN_FEATURE_SUBGROUP_SIZE_CONTROL = 1u << 6, /* a kernel may ask for any
                                                   subgroup size from
                                                   min_subgroup_size to
                                                   max_subgroup_size */
  KILN_FEATURE_COOPERATIVE_MATRIX = 1u << 7, /* matrix instructions on tensor
                                                or matrix cores (CUDA mma,
                                                Vulkan cooperative matrices:
                                                shapes in matrix_shapes) */
  KILN_FEATURE_BFLOAT16 = 1u << 8, /* bfloat16 values in kernels, with the
                                      device's own instructions for them
                                      (CUDA sm_80 and later: cuda_bf16.h;
                                      AMD gfx90a, gfx94x, gfx11, gfx12;
                                      Vulkan VK_KHR_shader_bfloat16's
                                      shaderBFloat16Type) */
} kiln_device_feature;

/* Element types of a matrix shape. */
typedef enum kiln_matrix_type {
  KILN_MATRIX_OTHER = 0, /* a type kiln has no name for */
  KILN_MATRIX_F16 = 1,
  KILN_MATRIX_F32 = 2,
  KILN_MATRIX_F64 = 3,
  KILN_MATRIX_BF16 = 4,
  KILN_MATRIX_S8 = 5,
  KILN_MATRIX_U8 = 6,
  KILN_MATRIX_S32 = 7,
  KILN_MATRIX_U32 = 8,
} kiln_matrix_type;

/* One product the device's matrix instructions compute in a subgroup:
 * result (m x n) = a (m x k) * b (k x n) + c (m x n). */
typedef struct kiln_matrix_shape {
  uint32_t m, n, k;
  kiln_matrix_type a, b, c, result;
} kiln_matrix_shape;

#define KILN_MAX_MATRIX_SHAPES 32

typedef struct kiln_device_properties {
  kiln_backend backend;
  char name[256];               /* "NVIDIA H100 80GB HBM3" */
  char vendor[64];              /* "NVIDIA", "AMD", "Mesa", ... */
  uint32_t vendor_id;           /* PCI vendor id, or 0 where unknown */
  uint32_t device_id;           /* PCI device id, or 0 where unknown */
  kiln_device_type type;
  char architecture[64];        /* "sm_90", "gfx90a", "llvmpipe", ... */
  uint64_t memory_bytes;        /* device-local memory */
  uint32_t compute_units;       /* SMs, CUs, or 0 where the API hides it */
  uint32_t max_threads_per_block;
  uint32_t max_block_size[3];
  uint32_t max_grid_size[3];
  size_t max_shared_memory_per_block;       /* without opting in */
  size_t max_shared_memory_per_block_optin; /* with kiln raising the limit */
  uint32_t subgroup_size;       /* warp, wavefront or subgroup width */
  size_t max_kernel_argument_bytes; /* packed size of one argument list */
  char api_version[32];         /* "12.8", "1.3.230", "5.2", ... */
  char driver_version[64];
  uint8_t uuid[16];             /* all zero where the API gives none */
  /* The PCI address as "domain:bus:device.function" in lower-case hex,
   * "0000:3b:00.0" (the form of lspci -D and of sysfs: a domain of at
   * least 4 digits, 5 on hosts with VMD domains), telling devices apart
   * across backends and processes; "" where the API gives none
   * (a CPU driver such as lavapipe, a Vulkan driver without
   * VK_EXT_pci_bus_info). */
  char pci_bus_id[16];
  /* Streams take a priority from 0 (the default) to this, the most
   * urgent; 0 where the device has none. CUDA and HIP tell the range only
   * to a context: kiln_device_get_properties gives 0 there, and
   * kiln_context_get_properties the device's (5 on an H100: CUDA's 0 to
   * -5). Vulkan: 1 where the compute queue family has two queues, else 0. */
  uint32_t max_stream_priority;
  uint32_t features; /* kiln_device_feature bits */
  /* The subgroup sizes a kernel may run with: both subgroup_size where the
   * size is fixed (CUDA's warp of 32). */
  uint32_t min_subgroup_size;
  uint32_t max_subgroup_size;
  /* With KILN_FEATURE_COOPERATIVE_MATRIX, the shapes of the matrix
   * instructions (Vulkan: as the driver lists them, subgroup scope, the
   * first KILN_MAX_MATRIX_SHAPES; CUDA: the mma.sync shapes of the
   * architecture). */
  uint32_t matrix_shape_count;
  kiln_matrix_shape matrix_shapes[KILN_MAX_MATRIX_SHAPES];
  /* The device queues kiln spreads streams over, or 0 where the driver
   * does that itself (CUDA, HIP: streams progress independently). Vulkan:
   * with 1 (lavapipe), every stream shares one queue, and work on one waits
   * for work queued earlier on the others. */
  uint32_t stream_queues;
} kiln_device_properties;

/* Fills *out_properties (properties_size bytes of it: see "Structs that
 * grow" above) for device `index` of `backend`.
 * KILN_ERROR_UNAVAILABLE if the backend cannot run here;
 * KILN_ERROR_NOT_FOUND if index >= kiln_device_count(). */
KILN_API kiln_status kiln_device_get_properties_sized(
    kiln_backend backend, size_t index, size_t properties_size,
    kiln_device_properties *out_properties);
static inline kiln_status kiln_device_get_properties(
    kiln_backend backend, size_t index,
    kiln_device_properties *out_properties) {
  return kiln_device_get_properties_sized(
      backend, index, sizeof(kiln_device_properties), out_properties);
}

/* ------------------------------------------------------------------------ */
/* Contexts                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct kiln_context kiln_context;
typedef struct kiln_buffer kiln_buffer;
typedef struct kiln_host_buffer kiln_host_buffer;
typedef struct kiln_module kiln_module;
typedef struct kiln_kernel kiln_kernel;
typedef struct kiln_stream kiln_stream;
typedef struct kiln_graph kiln_graph;
typedef struct kiln_event kiln_event;

/* Use the environment (KILN_BACKEND, KILN_DEVICE) for this field. */
#define KILN_DEVICE_FROM_ENV SIZE_MAX

/* How a host thread waits for the device (the synchronize calls, reads,
 * destroys). KILN_SYNC=auto|spin|yield|block (in any case), read when a
 * context is created, chooses for contexts whose options say DEFAULT; any
 * other value fails kiln_context_create with KILN_ERROR_INVALID_ARGUMENT.
 *  - SPIN polls without pause: the lowest latency, a whole core busy.
 *  - YIELD polls, giving the core to other threads between looks.
 *  - BLOCK sleeps in the driver until the device signals: no CPU used,
 *    tens of microseconds more per wait.
 *  - AUTO spins for up to 100 us, polls as YIELD does until 1 ms, then
 *    blocks: waits of up to a millisecond (a graph's replay, a batch of
 *    kernels) cost what spinning does, long ones 1 ms of a core.
 * The policy is the context's: kiln polls (cuStreamQuery, hipStreamQuery,
 * vkGetSemaphoreCounterValue) or sleeps (on an event made with
 * CU_EVENT_BLOCKING_SYNC or hipEventBlockingSync, in vkWaitSemaphores)
 * itself, and never sets the device's scheduling flag, which every user of
 * the device in the process shares. Polling's "not ready" answers appear
 * in compute-sanitizer's API-error report; BLOCK has none. Waits stay
 * bounded by KILN_SYNC_TIMEOUT_MS under every policy. */
typedef enum kiln_sync_policy {
  KILN_SYNC_DEFAULT = 0, /* KILN_SYNC's choice; AUTO when it is unset */
  KILN_SYNC_AUTO = 1,
  KILN_SYNC_SPIN = 2,
  KILN_SYNC_YIELD = 3,
  KILN_SYNC_BLOCK = 4,
} kiln_sync_policy;

typedef struct kiln_context_options {
  /* A backend, or KILN_BACKEND_AUTO for KILN_BACKEND's choice (and the
   * automatic choice when KILN_BACKEND is unset or "auto"). */
  kiln_backend backend;
  /* A device index within the backend, or KILN_DEVICE_FROM_ENV for
   * KILN_DEVICE (default 0; under auto, the best device). */
  size_t device_index;
  /* How the host waits; KILN_SYNC_DEFAULT for KILN_SYNC's choice. An
   * explicit policy wins over KILN_SYNC (which is still checked). Added
   * last, so that {backend, device} initializers keep their meaning. */
  kiln_sync_policy sync;
} kiln_context_options;

/* Options that defer to the environment: backend AUTO, device from env,
 * sync policy DEFAULT. Inline, so that it fills the struct as the caller's
 * kiln.h has it. */
static inline kiln_context_options kiln_context_options_default(void) {
  kiln_context_options o = {KILN_BACKEND_AUTO, KILN_DEVICE_FROM_ENV,
                            KILN_SYNC_DEFAULT};
  return o;
}

/* Opens a context on one device; `options` (options_size bytes: see
 * "Structs that grow" above) may be NULL for the defaults. An explicit
 * backend in options wins over KILN_BACKEND. Fails with
 * KILN_ERROR_UNAVAILABLE or KILN_ERROR_NOT_FOUND, listing what is available,
 * when the choice cannot be met. Destroy with kiln_context_destroy. */
KILN_API kiln_status kiln_context_create_sized(
    const kiln_context_options *options, size_t options_size,
    kiln_context **out_context);
static inline kiln_status kiln_context_create(
    const kiln_context_options *options, kiln_context **out_context) {
  return kiln_context_create_sized(options, sizeof(kiln_context_options),
                                   out_context);
}

/* Waits for all work, releases the context and every object still alive in
 * it. Returns KILN_ERROR_OBJECTS_ALIVE, counting them in the message, if
 * there were any: their handles are invalid from then on. NULL is a no-op.
 * With KILN_SYNC_TIMEOUT_MS set, work still running after that long makes
 * it KILN_ERROR_TIMEOUT: the context is released all the same, except what
 * the running work may still touch. CUDA: kiln drops its hold on the
 * device's primary context, which the driver destroys, work and memory
 * included, once no other code in the process holds it. Vulkan and HIP
 * cannot stop the work: the device's objects stay until the process ends.
 * Either way the handle is invalid afterwards. */
KILN_API kiln_status kiln_context_destroy(kiln_context *context);

/* The backend the context runs on. */
KILN_API kiln_backend kiln_context_backend(const kiln_context *context);

/* The properties of the context's device (properties_size bytes of
 * them: see "Structs that grow" above). */
KILN_API kiln_status kiln_context_get_properties_sized(
    const kiln_context *context, size_t properties_size,
    kiln_device_properties *out_properties);
static inline kiln_status kiln_context_get_properties(
    const kiln_context *context, kiln_device_properties *out_properties) {
  return kiln_context_get_properties_sized(
      context, sizeof(kiln_device_properties), out_properties);
}

/* Waits until all work submitted to every stream of the context is done. */
KILN_API kiln_status kiln_context_synchronize(kiln_context *context);

/* The synchronisation policy in force for the context (never DEFAULT:
 * what the options or KILN_SYNC chose, else AUTO). */
KILN_API kiln_status kiln_context_get_sync_policy(const kiln_context *context,
                                                  kiln_sync_policy *out_policy);

/* Memory the device sets aside for what kernels do at run time, in bytes.
 * A limit belongs to the device (CUDA: its primary context, shared with
 * the CUDA runtime in the process; HIP: the device), so it holds for every
 * context on that device. Vulkan has none: both calls below answer
 * KILN_ERROR_UNSUPPORTED there. */
typedef enum kiln_limit {
  KILN_LIMIT_STACK_BYTES = 1,       /* each GPU thread's stack */
  KILN_LIMIT_PRINTF_FIFO_BYTES = 2, /* the buffer device-side printf fills */
  KILN_LIMIT_MALLOC_HEAP_BYTES = 3, /* the heap of device-side malloc/free */
} kiln_limit;

/* Asks for `value` bytes of `limit`. Drivers may round or clamp the value:
 * kiln_context_get_limit tells the one in force. An unknown limit is
 * KILN_ERROR_INVALID_ARGUMENT; a value the driver refuses (e.g. a stack
 * larger than the device can give every thread) fails with the driver's
 * error mapped and named, and the limit as it was. Not stream-ordered:
 * CUDA waits for the device's earlier work before changing the stack size
 * (kiln first waits within KILN_SYNC_TIMEOUT_MS, when set), and refuses
 * (INVALID_ARGUMENT) to change the printf FIFO or the malloc heap once a
 * kernel that uses printf or malloc has run. */
KILN_API kiln_status kiln_context_set_limit(kiln_context *context,
                                            kiln_limit limit, size_t value);

/* The value of `limit` in force, in bytes. KILN_ERROR_INVALID_ARGUMENT for
 * an unknown limit; KILN_ERROR_UNSUPPORTED, in words, where the backend or
 * its runtime has no such limit (Vulkan; HIP on AMD has no printf FIFO
 * limit, and before ROCm 6 no stack limit). */
KILN_API kiln_status kiln_context_get_limit(kiln_context *context,
                                            kiln_limit limit,
                                            size_t *out_value);

/* ------------------------------------------------------------------------ */
/* Device buffers                                                             */
/* ------------------------------------------------------------------------ */

typedef enum kiln_buffer_flags {
  KILN_BUFFER_DEFAULT = 0,
  /* The new buffer reads as zero bytes. */
  KILN_BUFFER_ZERO = 1u << 0,
} kiln_buffer_flags;

/* Allocates `size` bytes (> 0) of device memory. Contents are undefined
 * unless KILN_BUFFER_ZERO is given. KILN_ERROR_OUT_OF_DEVICE_MEMORY when the
 * device cannot hold it. Destroy with kiln_buffer_destroy. */
KILN_API kiln_status kiln_buffer_create(kiln_context *context, size_t size,
                                        uint32_t flags,
                                        kiln_buffer **out_buffer);

/* Waits for work that may use the buffer, then frees it. NULL is a no-op.
 * "Work that may use it" is all the work queued on every stream of the
 * context, since kernels may reach a buffer through an address stored in
 * another one, where kiln cannot see it: a destroy inside a pipeline waits
 * for the whole device. kiln_buffer_destroy_async ("Memory in stream
 * order") releases a buffer in one stream's order instead, without
 * waiting. A buffer of kiln_buffer_create_async may be destroyed here
 * too. */
KILN_API kiln_status kiln_buffer_destroy(kiln_buffer *buffer);

/* The buffer's size in bytes; 0 for NULL. */
KILN_API size_t kiln_buffer_size(const kiln_buffer *buffer);

/* Copies `size` bytes from host memory `src` into `dst` at `dst_offset`.
 * The caller may reuse `src` as soon as this returns; the device sees the
 * data in stream order (work on other streams must wait on an event or a
 * synchronize, as for any other operation). */
KILN_API kiln_status kiln_buffer_write(kiln_stream *stream, kiln_buffer *dst,
                                       size_t dst_offset, const void *src,
                                       size_t size);

/* Copies `size` bytes from `src` at `src_offset` into host memory `dst`,
 * after all earlier work on the stream; complete when it returns. */
KILN_API kiln_status kiln_buffer_read(kiln_stream *stream,
                                      const kiln_buffer *src,
                                      size_t src_offset, void *dst,
                                      size_t size);

/* Copies `size` bytes between two buffers of one context, in stream order.
 * The two ranges may be in the same buffer but must not overlap. */
KILN_API kiln_status kiln_buffer_copy(kiln_stream *stream, kiln_buffer *dst,
                                      size_t dst_offset, const kiln_buffer *src,
                                      size_t src_offset, size_t size);

/* Copies `size` bytes from `src` to `dst`, buffers of any two contexts of
 * one backend (two devices, two contexts on one device, or one context),
 * queued on `dst_stream` (a stream of dst's context; NULL: its default).
 * It starts once the work queued earlier on `dst_stream` and on
 * `src_stream` (src's context; NULL: its default) is done, and work queued
 * later on either waits for it: the caller owes nothing across the
 * contexts but naming those two streams. CUDA and HIP copy device to
 * device and return at once; Vulkan stages through pinned host memory and
 * returns once `src` is read (docs/multi-device.md). Errors: a stream of
 * the other context, KILN_ERROR_WRONG_CONTEXT; two backends,
 * KILN_ERROR_UNSUPPORTED; a capturing stream, KILN_ERROR_INVALID_STATE
 * (not captured); ranges and overlap as kiln_buffer_copy. */
KILN_API kiln_status kiln_buffer_copy_peer(kiln_stream *dst_stream,
                                           kiln_buffer *dst, size_t dst_offset,
                                           kiln_stream *src_stream,
                                           const kiln_buffer *src,
                                           size_t src_offset, size_t size);

/* Whether kiln_buffer_copy_peer between contexts `a` and `b` (either way)
 * goes device to device, in *out_direct: true for one context, for two on
 * one CUDA or HIP device, for two devices the driver lets access each
 * other's memory (cuDeviceCanAccessPeer, hipDeviceCanAccessPeer), and for
 * two Vulkan contexts on one GPU that share device memory
 * (VK_KHR_external_memory_fd; not with KILN_VULKAN_PEER=host); false where
 * the bytes go through host memory. The copy works either way.
 * KILN_ERROR_UNSUPPORTED for contexts of two backends, and for two
 * contexts of a backend that cannot copy between contexts at all (every
 * compiled-in backend can). */
KILN_API kiln_status kiln_context_can_copy_peer(const kiln_context *a,
                                                const kiln_context *b,
                                                bool *out_direct);

/* Fills `size` bytes of `dst` from `offset` with a repeated pattern of 1, 2,
 * 4 or 8 bytes; offset and size must be multiples of the pattern size. */
KILN_API kiln_status kiln_buffer_fill(kiln_stream *stream, kiln_buffer *dst,
                                      size_t offset, size_t size,
                                      const void *pattern,
                                      size_t pattern_size);

/* ------------------------------------------------------------------------ */
/* Host buffers                                                               */
/* ------------------------------------------------------------------------ */

/* Allocates `size` bytes (> 0) of host memory that the device reaches
 * directly (pinned, or host-visible on Vulkan), mapped for the caller at
 * kiln_host_buffer_data(). Transfers from and to it can be asynchronous.
 * `flags` must be 0 (none are defined yet); contents start undefined. */
KILN_API kiln_status kiln_host_buffer_create(kiln_context *context, size_t size,
                                             uint32_t flags,
                                             kiln_host_buffer **out_buffer);

/* Waits for work that may use the host buffer, then frees it. NULL: no-op. */
KILN_API kiln_status kiln_host_buffer_destroy(kiln_host_buffer *buffer);

/* The host address of the mapping; NULL for NULL. Owned by the buffer. */
KILN_API void *kiln_host_buffer_data(kiln_host_buffer *buffer);

/* The host buffer's size in bytes; 0 for NULL. */
KILN_API size_t kiln_host_buffer_size(const kiln_host_buffer *buffer);

/* Queues a copy from a host buffer to a device buffer and returns at once.
 * The host buffer's bytes must stay untouched until the stream reaches this
 * point (synchronize the stream, or wait on a later event). */
KILN_API kiln_status kiln_buffer_write_async(kiln_stream *stream,
                                             kiln_buffer *dst,
                                             size_t dst_offset,
                                             const kiln_host_buffer *src,
                                             size_t src_offset, size_t size);

/* Queues a copy from a device buffer to a host buffer and returns at once;
 * the bytes are there once the stream is synchronized or a later event has
 * completed. */
KILN_API kiln_status kiln_buffer_read_async(kiln_stream *stream,
                                            const kiln_buffer *src,
                                            size_t src_offset,
                                            kiln_host_buffer *dst,
                                            size_t dst_offset, size_t size);

/* ------------------------------------------------------------------------ */
/* Memory in stream order                                                     */
/* ------------------------------------------------------------------------ */

/* Buffers made and released in a stream's order, from a pool the context
 * keeps: neither call waits for the device, and releasing a buffer used
 * only on stream B returns at once while stream A is busy (the synchronous
 * kiln_buffer_destroy waits for every stream, since a buffer's address may
 * be stored in another buffer where kiln cannot see it). The pool is
 * CUDA's cuMemPool (one of kiln's own per context, not the device's
 * default), HIP's hipMallocAsync pool, kiln's sub-allocator on Vulkan.
 *
 * What the caller owes, as with cudaMallocAsync: a buffer made on stream S
 * may be used by work queued on S after the create, and by other streams
 * only after they wait for an event recorded on S after it; work that
 * uses a buffer must be ordered before its release (queued on the release
 * stream earlier, or waited for by it through an event). kiln does not
 * detect a use outside that order: it reads or writes memory that may
 * already belong to another buffer. */

/* Allocates `size` bytes (> 0) of device memory in `stream`'s order (see
 * above); KILN_BUFFER_ZERO zeroes it, also in stream order. Memory released
 * on any stream of the context is reused once the work queued before its
 * release is done, and memory released on `stream` itself at once where
 * kiln kept it (kiln_buffer_destroy_async) or its own pool serves the
 * context. When the device is full the pool gives back what it keeps and
 * tries once more, then fails with
 * KILN_ERROR_OUT_OF_DEVICE_MEMORY; the context stays usable. Release with
 * kiln_buffer_destroy_async, or kiln_buffer_destroy (which waits).
 * Inside a graph's capture the buffer is the graph's: made now, once, and
 * reused by every replay (zeroed at the start of each for
 * KILN_BUFFER_ZERO); the capture may release it (the end of its use in the
 * graph), and the graph frees it when it is destroyed. Until then the
 * handle stays valid, and destroying it is KILN_ERROR_INVALID_STATE. */
KILN_API kiln_status kiln_buffer_create_async(kiln_stream *stream, size_t size,
                                              uint32_t flags,
                                              kiln_buffer **out_buffer);

/* Releases `buffer`, made by kiln_buffer_create_async on any stream of
 * the same context, in `stream`'s order (NULL: the context's default
 * stream), without waiting: the handle is invalid at once, and the memory
 * returns to the pool when the work queued on `stream` before this call is
 * done. A small buffer (up to 4 MiB; a few, at most 16 MiB in all and no
 * more than the pool's keep setting) is first kept whole for `stream`'s
 * next kiln_buffer_create_async of its size, which takes it back without
 * asking the driver. It goes to the pool, released on `stream`, when
 * newer releases on `stream` need its room, at kiln_context_synchronize
 * (before its wait), at kiln_context_trim_pool, when the device is full,
 * and when `stream` or the context is destroyed. No other stream takes a
 * kept buffer, and a release never queues work on another stream.
 * Errors, in words and with nothing freed: KILN_ERROR_INVALID_ARGUMENT
 * for a buffer made by kiln_buffer_create (release it with
 * kiln_buffer_destroy), KILN_ERROR_INVALID_STATE for one a graph holds,
 * KILN_ERROR_WRONG_CONTEXT for a stream of another context,
 * KILN_ERROR_INVALID_HANDLE for a buffer already released. NULL buffer:
 * no-op. Inside a capture it releases only a buffer that capture made
 * (KILN_ERROR_UNSUPPORTED for another, since each replay would free
 * memory made once; KILN_ERROR_INVALID_ARGUMENT for a second release).
 * Under KILN_DEBUG=guard, outside captures, both this call and
 * kiln_buffer_create_async are the synchronous ones, so that the guard
 * bytes are checked when the buffer goes. */
KILN_API kiln_status kiln_buffer_destroy_async(kiln_stream *stream,
                                               kiln_buffer *buffer);

/* The pool's device memory in bytes: reserved from the driver, and of that
 * in use by live buffers of kiln_buffer_create_async (not buffers released
 * and kept for their stream, which are reserved). Vulkan's pool also
 * serves kiln_buffer_create, host buffers and kiln's own staging memory:
 * there both figures count kiln_buffer_create's buffers too, and the
 * reserved figure also the memory of the other two. At KILN_LOG=debug
 * kiln logs both figures at each kiln_context_synchronize, after each
 * trim and at the context's end, once the pool has served.
 * Either out-parameter may be NULL. */
KILN_API kiln_status kiln_context_pool_usage(kiln_context *context,
                                             size_t *out_reserved,
                                             size_t *out_used);

/* How many bytes of released memory the pool keeps reserved, for the
 * fastest reuse, rather than giving them back to the driver. CUDA and HIP
 * apply it as their release threshold when the device is synchronized;
 * their default, SIZE_MAX, keeps all. Vulkan's pool, which also serves
 * kiln_buffer_create, applies it to its empty blocks of each memory type
 * as they empty; its default keeps one block (64 MiB) per type. kiln's
 * own pool (a backend without pools) applies it at
 * kiln_context_synchronize; its default keeps all. 0 gives all back. It
 * also bounds the buffers kept whole for their streams (see
 * kiln_buffer_destroy_async), which count apart from it until the next
 * kiln_context_synchronize gives them to the pool. */
KILN_API kiln_status kiln_context_set_pool_keep(kiln_context *context,
                                                size_t bytes);

/* Gives released memory back to the driver now, until the pool reserves
 * at most `keep_bytes` more than its live buffers use. Does not wait:
 * memory whose release is still queued behind work (the buffers kept for
 * their streams, which this queues for release, among them) is given back
 * by a later trim, after a synchronize. */
KILN_API kiln_status kiln_context_trim_pool(kiln_context *context,
                                            size_t keep_bytes);

/* ------------------------------------------------------------------------ */
/* Modules and kernels                                                        */
/* ------------------------------------------------------------------------ */

typedef enum kiln_image_format {
  KILN_IMAGE_SPIRV = 1,           /* Vulkan: SPIR-V words, one or more
                                     GLCompute entry points */
  KILN_IMAGE_PTX = 2,             /* CUDA: NUL-terminated PTX text (JIT) */
  KILN_IMAGE_CUBIN = 3,           /* CUDA: machine code for one arch */
  KILN_IMAGE_FATBIN = 4,          /* CUDA: nvcc --fatbin output */
  KILN_IMAGE_HIP_CODE_OBJECT = 5, /* HIP: hipcc --genco output (a code
                                     object or an offload bundle) */
} kiln_image_format;

/* "SPIR-V", "PTX", "cubin", "fatbin", "HIP code object" or "unknown". */
KILN_API const char *kiln_image_format_name(kiln_image_format format);

typedef struct kiln_module_image {
  kiln_image_format format;
  const void *data; /* read during kiln_module_create only */
  size_t size;
} kiln_module_image;

/* Loads a module from a set of images, one or more per backend. Every image
 * of the context's backend is loaded, and a kernel comes from the first that
 * has it (CUDA: cubins, fatbins, then PTX; else the caller's order); images
 * with no code for this device are passed over. Fails with
 * KILN_ERROR_NO_IMAGE when no image fits, KILN_ERROR_INVALID_IMAGE (naming
 * the image, with the driver's log) when one fails to load. */
KILN_API kiln_status kiln_module_create(kiln_context *context,
                                        const kiln_module_image *images,
                                        size_t image_count,
                                        kiln_module **out_module);

/* Waits for the context's work, then releases the module and its kernels.
 * NULL is a no-op. */
KILN_API kiln_status kiln_module_destroy(kiln_module *module);

/* Looks a kernel up by its entry-point name (extern "C" name on CUDA/HIP).
 * The kernel is owned by the module; asking twice gives the same handle.
 * The first call loads the kernel on the device (on CUDA 12.4 drivers and
 * later, which would otherwise load it lazily at its first launch, a load
 * that waits for the work queued before it): get kernels before launching
 * one that waits for another. KILN_ERROR_NOT_FOUND when the module has no
 * such kernel. */
KILN_API kiln_status kiln_module_get_kernel(kiln_module *module,
                                            const char *name,
                                            kiln_kernel **out_kernel);

/* The kernel's name; owned by the kernel. A kernel found by a name
 * expression (kiln_compile_options) has its lowered name
 * ("_Z6axpy_tIfEvPT_PKS0_S0_j" for "axpy_t<float>"). */
KILN_API const char *kiln_kernel_name(const kiln_kernel *kernel);

/* What a field of kiln_kernel_attributes holds where the backend cannot
 * tell (kiln guesses none). */
#define KILN_ATTRIBUTE_UNKNOWN SIZE_MAX

/* What a kernel needs of the device, as its backend tells it
 * (kiln_kernel_get_attributes). A struct that grows (see above). */
typedef struct kiln_kernel_attributes {
  /* 32-bit registers each thread uses. CUDA, HIP; unknown on Vulkan. */
  size_t registers;
  /* Shared memory the kernel declares with a fixed size, per block; the
   * dynamic shared memory of a launch (kiln_launch_config.shared_bytes)
   * comes on top. CUDA, HIP; unknown on Vulkan, whose drivers lay shared
   * variables out as they choose. */
  size_t static_shared_bytes;
  /* Local memory per thread: registers spilled, arrays the compiler keeps
   * in memory. CUDA, HIP; unknown on Vulkan. */
  size_t local_bytes;
  /* The most threads a block of this kernel may have here: the device's
   * limit, lowered by the kernel's registers and by the bound it declares
   * (__launch_bounds__) on CUDA and HIP; on Vulkan the fixed block's
   * threads where every dimension is fixed, else the device's limit. */
  size_t max_block_threads;
  /* The block size the kernel fixes, which every launch must use: in each
   * dimension a GLSL kernel gives its local_size as a number rather than
   * by constant_id (local_size_y = 1 beside local_size_x_id), that
   * number; 0 in a dimension the launch chooses (every one on CUDA and
   * HIP). */
  uint32_t fixed_block[3];
} kiln_kernel_attributes;

/* Fills *out_attributes (fields the backend cannot tell are
 * KILN_ATTRIBUTE_UNKNOWN). KILN_ERROR_INVALID_HANDLE for a kernel that is
 * not live; KILN_ERROR_INVALID_ARGUMENT for a NULL out_attributes;
 * KILN_ERROR_UNSUPPORTED where the backend tells nothing of kernels. */
KILN_API kiln_status kiln_kernel_get_attributes_sized(
    kiln_kernel *kernel, size_t attributes_size,
    kiln_kernel_attributes *out_attributes);
static inline kiln_status kiln_kernel_get_attributes(
    kiln_kernel *kernel, kiln_kernel_attributes *out_attributes) {
  return kiln_kernel_get_attributes_sized(
      kernel, sizeof(kiln_kernel_attributes), out_attributes);
}

/* A 1-D block size for the kernel with `dynamic_shared_bytes` of dynamic
 * shared memory per block: the smallest that gives it the device's highest
 * occupancy, and in *out_min_grid_blocks (may be NULL) the fewest blocks of
 * that size that fill the device. CUDA: cuOccupancyMaxPotentialBlockSize;
 * HIP: hipModuleOccupancyMaxPotentialBlockSize. Vulkan drivers have no
 * occupancy calculator: a kernel whose block is fixed in every dimension
 * gets that block's threads (and a grid of one block per compute unit),
 * any other KILN_ERROR_UNSUPPORTED, in words. KILN_ERROR_INVALID_ARGUMENT for a NULL
 * out_block_threads, or dynamic shared memory beyond what one block may
 * have here (kiln_device_properties.max_shared_memory_per_block_optin). */
KILN_API kiln_status kiln_kernel_suggest_block_size(
    kiln_kernel *kernel, size_t dynamic_shared_bytes,
    uint32_t *out_block_threads, uint32_t *out_min_grid_blocks);

/* Finds the module's __device__ or __constant__ variable `name` (CUDA,
 * HIP) and gives it as a buffer over the variable's memory, of its size,
 * so that every buffer call works on it in stream order: write, read,
 * copy, fill, their async forms, and kiln_arg_buffer to pass its address
 * to a kernel (which must not write a __constant__ one). Its address has
 * the alignment of the variable's type. The name is the image's: a
 * variable at file scope keeps its own (C++ mangles one in a namespace).
 * Each image has its own copy of its variables; the first image that has
 * the name gives it. The buffer belongs to the module: asking twice gives
 * the same handle, kiln_buffer_destroy on it is KILN_ERROR_INVALID_ARGUMENT,
 * and kiln_module_destroy releases it (its handle is invalid from then
 * on). KILN_ERROR_NOT_FOUND when the module has no such variable;
 * KILN_ERROR_UNSUPPORTED on Vulkan, whose shaders have no variables the
 * host can reach: pass such values as kernel arguments (push constants) or
 * in a buffer. */
KILN_API kiln_status kiln_module_get_global(kiln_module *module,
                                            const char *name,
                                            kiln_buffer **out_buffer);

/* ------------------------------------------------------------------------ */
/* Kernels from source at run time                                           */
/* ------------------------------------------------------------------------ */

/* The kernel languages kiln compiles at run time, each with the compiler it
 * loads when first asked (never linked): CUDA C++ through NVRTC
 * (libnvrtc.so.N, KILN_NVRTC_LIBRARY), HIP C++ through HIPRTC
 * (libhiprtc.so.N or the HIP runtime, KILN_HIPRTC_LIBRARY), GLSL compute
 * through shaderc (libshaderc.so.1, KILN_SHADERC_LIBRARY). */
typedef enum kiln_source_language {
  KILN_SOURCE_CUDA = 1, /* CUDA backend; also HIP when no HIP source is given */
  KILN_SOURCE_HIP = 2,  /* HIP backend */
  KILN_SOURCE_GLSL = 3, /* Vulkan backend: #version 450 or later, compute */
} kiln_source_language;

/* "CUDA C++", "HIP C++", "GLSL" or "unknown". Static string. */
KILN_API const char *kiln_source_language_name(kiln_source_language language);

typedef struct kiln_source {
  kiln_source_language language;
  /* NUL-terminated source text; read during the call only. */
  const char *text;
  /* The file name that messages and the compiler's log use ("saxpy.cu");
   * NULL gives "source<N>" with the language's extension. */
  const char *name;
  /* GLSL only: the kernel name that the shader's main() gets. NULL takes
   * the stem of `name` ("saxpy" for "saxpy.comp"), else "main". */
  const char *entry_point;
} kiln_source;

/* A header kept in memory, found by #include "name" before any directory. */
typedef struct kiln_header {
  const char *name; /* as the #include spells it: "common.h" */
  const char *text; /* NUL-terminated */
} kiln_header;

typedef enum kiln_optimization {
  /* The compiler's own default: optimised code for NVRTC and HIPRTC;
   * unoptimised SPIR-V for shaderc, as glslc (drivers optimise it). */
  KILN_OPTIMIZE_DEFAULT = 0,
  KILN_OPTIMIZE_NONE = 1,  /* -O0, for debugging */
  KILN_OPTIMIZE_SIZE = 2,  /* shaderc -Os; NVRTC and HIPRTC -O2 */
  KILN_OPTIMIZE_SPEED = 3, /* shaderc -O; NVRTC and HIPRTC -O3 */
} kiln_optimization;

typedef enum kiln_compile_flags {
  KILN_COMPILE_DEFAULT = 0,
  /* Faster, less exact float math (NVRTC --use_fast_math, HIPRTC
   * -ffast-math; GLSL has no such switch and ignores it). */
  KILN_COMPILE_FAST_MATH = 1u << 0,
  /* Neither read nor write the disk cache for this call. */
  KILN_COMPILE_NO_CACHE = 1u << 1,
  /* CUDA: leave out the toolkit's include directories, which kiln
   * otherwise searches after `include_dirs` (docs/kernels.md, "What a
   * source may include"); HIP and GLSL ignore it. */
  KILN_COMPILE_NO_TOOLKIT_HEADERS = 1u << 2,
} kiln_compile_flags;

/* Everything optional: a zeroed struct (or NULL) compiles with defaults for
 * the context's device. Arrays are read during the call only. */
typedef struct kiln_compile_options {
  /* Macro definitions, "NAME" or "NAME=VALUE". */
  const char *const *defines;
  size_t define_count;
  /* Directories searched by #include, after `headers`. Their files' names,
   * sizes and modification times are part of the cache key (see
   * docs/kernels.md). */
  const char *const *include_dirs;
  size_t include_dir_count;
  const kiln_header *headers;
  size_t header_count;
  kiln_optimization optimization;
  uint32_t flags; /* kiln_compile_flags */
  /* The target instead of the device's own: "sm_90" (cubin) or
   * "compute_90" (PTX) on CUDA, a gfx name ("gfx90a") on HIP, a SPIR-V
   * version ("spv1.5") on Vulkan. NULL: what the device runs best. */
  const char *target;
  /* Raw options handed to one compiler as they are: NVRTC's, HIPRTC's, and
   * for GLSL the glslc-style "-g", "-w", "-Werror". */
  const char *const *cuda_options;
  size_t cuda_option_count;
  const char *const *hip_options;
  size_t hip_option_count;
  const char *const *glsl_options;
  size_t glsl_option_count;
  /* CUDA and HIP: C++ names of kernels to compile and to find by those
   * names: template instantiations ("axpy<float>"), kernels in a namespace
   * ("ops::scale"). A template named here is instantiated; each name's
   * lowered (mangled) one is kept with the module and in the cache, so
   * kiln_module_get_kernel(module, "axpy<float>") finds the kernel, on a
   * cache hit too. GLSL ignores them. Added after kiln 0.1: a struct of an
   * older kiln.h has none. */
  const char *const *name_expressions;
  size_t name_expression_count;
} kiln_compile_options;

/* Compiles the sources in the context backend's language and loads the
 * result as one module. Sources of other languages are ignored, so one list
 * may carry a kernel's text for every backend (HIP takes CUDA text when no
 * HIP text is given). Several sources of one language go into one module.
 * Compiled images are cached on disk (KILN_CACHE_DIR, docs/kernels.md).
 * Fails with KILN_ERROR_NO_IMAGE when no source is in the backend's
 * language, KILN_ERROR_UNAVAILABLE (naming the library and its package)
 * when the compiler is missing, KILN_ERROR_COMPILE with the log. */
KILN_API kiln_status kiln_module_create_from_source_sized(
    kiln_context *context, const kiln_source *sources, size_t source_count,
    const kiln_compile_options *options, size_t options_size,
    kiln_module **out_module);
static inline kiln_status kiln_module_create_from_source(
    kiln_context *context, const kiln_source *sources, size_t source_count,
    const kiln_compile_options *options, kiln_module **out_module) {
  return kiln_module_create_from_source_sized(
      context, sources, source_count, options, sizeof(kiln_compile_options),
      out_module);
}

/* Loads a module from files: sources (.cu, .hip, .comp/.glsl) compiled as
 * by kiln_module_create_from_source, and images (SPIR-V, PTX, cubin,
 * fatbin, HIP code objects), told apart by their first bytes, else by
 * extension. Files for other backends are ignored. `options` may be NULL.
 * KILN_ERROR_NOT_FOUND (with the OS's reason) for a file that cannot be
 * read, KILN_ERROR_INVALID_ARGUMENT for one of no known kind. */
KILN_API kiln_status kiln_module_create_from_files_sized(
    kiln_context *context, const char *const *paths, size_t path_count,
    const kiln_compile_options *options, size_t options_size,
    kiln_module **out_module);
static inline kiln_status kiln_module_create_from_files(
    kiln_context *context, const char *const *paths, size_t path_count,
    const kiln_compile_options *options, kiln_module **out_module) {
  return kiln_module_create_from_files_sized(
      context, paths, path_count, options, sizeof(kiln_compile_options),
      out_module);
}

/* How a module was built. */
typedef struct kiln_module_build_info {
  size_t source_count;     /* sources compiled into it (0: images only) */
  size_t cache_hits;       /* of those, how many came from the disk cache */
  double compile_ms;       /* wall time spent compiling and caching */
  const char *log;         /* the compilers' output, warnings included;
                              "" when silent; owned by the module */
} kiln_module_build_info;

/* Fills *out_info (info_size bytes of it) for `module`. */
KILN_API kiln_status kiln_module_get_build_info_sized(
    const kiln_module *module, size_t info_size,
    kiln_module_build_info *out_info);
static inline kiln_status kiln_module_get_build_info(
    const kiln_module *module, kiln_module_build_info *out_info) {
  return kiln_module_get_build_info_sized(
      module, sizeof(kiln_module_build_info), out_info);
}

/* The whole log of the last compile on this thread, failed or not ("" if
 * none); valid until the next compile on this thread. */
KILN_API const char *kiln_last_compile_log(void);

/* Whether the backend's compiler can be loaded: KILN_OK with
 * *out_description naming it and its version ("NVRTC 13.0
 * (libnvrtc.so.13)"), or KILN_ERROR_UNAVAILABLE with the reason there. The
 * string is owned by kiln and valid until the next call for that backend.
 * Needs no device: the compiler is loaded, the driver is not. */
KILN_API kiln_status kiln_compiler_available(kiln_backend backend,
                                             const char **out_description);

/* ------------------------------------------------------------------------ */
/* Launching kernels: the one argument ABI                                    */
/* ------------------------------------------------------------------------ */

/* A kernel's parameters are an ordered list of buffer addresses and scalars,
 * laid out with natural alignment (as a C struct of those members would be):
 *   CUDA/HIP:  __global__ void k(float *y, const float *x, float a, unsigned n)
 *   GLSL:      layout(push_constant) uniform Args { F32 y; F32 x; float a;
 *                                                    uint n; } args;
 * where F32 is a buffer_reference type. A buffer argument is the device
 * address of `buffer` plus `offset` (64 bits on every backend). */
typedef enum kiln_arg_type {
  KILN_ARG_BUFFER = 1,
  KILN_ARG_I32 = 2,
  KILN_ARG_U32 = 3,
  KILN_ARG_F32 = 4,
  KILN_ARG_I64 = 5,
  KILN_ARG_U64 = 6,
  KILN_ARG_F64 = 7,
  /* Half precision (IEEE binary16: CUDA's __half, GLSL's float16_t) and
   * bfloat16 (__nv_bfloat16, bfloat16_t): 2 bytes each, taken as their
   * bit pattern in value.u32's low 16 bits (kiln_arg_f16, kiln_arg_bf16),
   * since C has no portable 16-bit float type. */
  KILN_ARG_F16 = 8,
  KILN_ARG_BF16 = 9,
} kiln_arg_type;

typedef struct kiln_arg {
  kiln_arg_type type;
  union {
    struct {
      const kiln_buffer *buffer;
      size_t offset;
    } buffer;
    int32_t i32;
    uint32_t u32;
    float f32;
    int64_t i64;
    uint64_t u64;
    double f64;
  } value;
} kiln_arg;

/* The most arguments one launch takes on any backend. */
#define KILN_MAX_KERNEL_ARGS 64

static inline kiln_arg kiln_arg_buffer(const kiln_buffer *buffer,
                                       size_t offset) {
  kiln_arg a;
  a.type = KILN_ARG_BUFFER;
  a.value.buffer.buffer = buffer;
  a.value.buffer.offset = offset;
  return a;
}
static inline kiln_arg kiln_arg_i32(int32_t v) {
  kiln_arg a;
  a.type = KILN_ARG_I32;
  a.value.i32 = v;
  return a;
}
static inline kiln_arg kiln_arg_u32(uint32_t v) {
  kiln_arg a;
  a.type = KILN_ARG_U32;
  a.value.u32 = v;
  return a;
}
static inline kiln_arg kiln_arg_f32(float v) {
  kiln_arg a;
  a.type = KILN_ARG_F32;
  a.value.f32 = v;
  return a;
}
static inline kiln_arg kiln_arg_i64(int64_t v) {
  kiln_arg a;
  a.type = KILN_ARG_I64;
  a.value.i64 = v;
  return a;
}
static inline kiln_arg kiln_arg_u64(uint64_t v) {
  kiln_arg a;
  a.type = KILN_ARG_U64;
  a.value.u64 = v;
  return a;
}
static inline kiln_arg kiln_arg_f64(double v) {
  kiln_arg a;
  a.type = KILN_ARG_F64;
  a.value.f64 = v;
  return a;
}
/* A half-precision scalar by its 16 bits (0x3c00 is 1.0); packed as 2
 * bytes, 2-aligned, and accepted where the kernel's parameter is a 16-bit
 * float (or a 2-byte value whose type the image does not tell). */
static inline kiln_arg kiln_arg_f16(uint16_t bits) {
  kiln_arg a;
  a.type = KILN_ARG_F16;
  a.value.u32 = bits;
  return a;
}
/* A bfloat16 scalar by its 16 bits (0x3f80 is 1.0: a float's upper half);
 * packed and checked as kiln_arg_f16. */
static inline kiln_arg kiln_arg_bf16(uint16_t bits) {
  kiln_arg a;
  a.type = KILN_ARG_BF16;
  a.value.u32 = bits;
  return a;
}

typedef struct kiln_dim3 {
  uint32_t x, y, z;
} kiln_dim3;

typedef struct kiln_launch_config {
  kiln_dim3 grid;  /* blocks (workgroups) in each dimension */
  kiln_dim3 block; /* threads (invocations) per block in each dimension */
  /* Dynamic shared memory per block. CUDA/HIP: extern __shared__. Vulkan:
   * the kernel declares layout(constant_id = 3) const uint and sizes its
   * shared array with it. Above the device's default limit kiln raises the
   * kernel's limit, up to max_shared_memory_per_block_optin. */
  size_t shared_memory_bytes;
} kiln_launch_config;

/* A 1-D configuration covering n elements with `block_size` threads per
 * block (0 picks 256): grid.x = ceil(n / block_size). Grid.x is clamped to
 * 2^31-1, so kernels over very large n should loop (grid-stride). */
KILN_API kiln_launch_config kiln_launch_config_1d(size_t n,
                                                  uint32_t block_size);

/* Queues kernel `kernel` with the ordered argument list `args`, packed with
 * each argument at the next offset that is a multiple of its own size (4 or
 * 8 bytes); the list ends where its last argument ends, with no padding
 * after it. The list must match the kernel's parameters. Where kiln can
 * read them (Vulkan: the push-constant block; CUDA: the driver from CUDA
 * 13.2 on, else the PTX, cubin or fatbin loaded; HIP: the code object's
 * metadata), a launch fails with KILN_ERROR_INVALID_ARGUMENT, naming the
 * argument, unless it gives
 *   - exactly as many arguments as the kernel has parameters,
 *   - each at the parameter's offset and of its size,
 *   - each of the parameter's class where the image tells it: a buffer for
 *     a pointer (or an address-sized integer of no stated sign, since PTX
 *     and cubins do not tell a pointer from a 64-bit integer), an
 *     i32/u32/i64/u64 for an integer, an f32/f64 for a float.
 * Signedness is not checked: i32 and u32 each pass for int and unsigned.
 * Cubins tell sizes only, so there a float and an integer of one size pass
 * for each other. Fails with KILN_ERROR_OUT_OF_RANGE for a block or grid
 * beyond the device's limits, or an argument list larger than
 * max_kernel_argument_bytes. */
KILN_API kiln_status kiln_launch(kiln_stream *stream, kiln_kernel *kernel,
                                 const kiln_launch_config *config,
                                 const kiln_arg *args, size_t arg_count);

/* ------------------------------------------------------------------------ */
/* Tracing                                                                    */
/* ------------------------------------------------------------------------ */

/* What a traced command is: the call that queued it on a stream. */
typedef enum kiln_trace_kind {
  KILN_TRACE_LAUNCH = 1,   /* kiln_launch, and the launches of kiln's helpers */
  KILN_TRACE_COPY,         /* kiln_buffer_copy */
  KILN_TRACE_FILL,         /* kiln_buffer_fill */
  KILN_TRACE_RECORD,       /* kiln_event_record */
  KILN_TRACE_WAIT,         /* kiln_stream_wait_event */
  KILN_TRACE_WRITE,        /* kiln_buffer_write */
  KILN_TRACE_READ,         /* kiln_buffer_read */
  KILN_TRACE_WRITE_ASYNC,  /* kiln_buffer_write_async */
  KILN_TRACE_READ_ASYNC,   /* kiln_buffer_read_async */
  KILN_TRACE_COPY_PEER,    /* kiln_buffer_copy_peer */
  KILN_TRACE_WAIT_NATIVE,  /* kiln_stream_wait_native */
  KILN_TRACE_ALLOC,        /* kiln_buffer_create_async */
  KILN_TRACE_FREE,         /* kiln_buffer_destroy_async */
  KILN_TRACE_GRAPH_LAUNCH, /* kiln_graph_launch */
} kiln_trace_kind;

/* Which of a command's two moments a handler call tells of. */
typedef enum kiln_trace_phase {
  KILN_TRACE_QUEUED = 0,    /* the command was just queued */
  KILN_TRACE_COMPLETED = 1, /* kiln learned that the device completed it */
} kiln_trace_phase;

/* The flags of kiln_set_trace_handler_ex. */
typedef enum kiln_trace_flags {
  /* Also tell of each command's completion, with device times. */
  KILN_TRACE_COMPLETIONS = 1u << 0,
} kiln_trace_flags;

/* One command, as the trace handler sees it; valid only during the call.
 * kiln fills it, and later versions add fields at its end only. */
typedef struct kiln_trace_command {
  /* sizeof the struct as this libkiln fills it: a handler built against a
   * newer kiln.h reads a field only when it lies within this many bytes
   * (offsetof(kiln_trace_command, f) + sizeof f <= size). */
  size_t size;
  kiln_trace_kind kind;
  /* A launch's kernel name, else NULL. Owned by the kernel in the queued
   * call, by kiln in the completed one (the kernel may be gone by then). */
  const char *kernel_name;
  /* A launch's grid and block, else zeros. */
  kiln_dim3 grid, block;
  /* The bytes a transfer, copy or fill moves or sets; 0 for the others. */
  size_t bytes;
  /* The stream it was queued on (a peer copy: the destination's), and
   * that stream's context. */
  kiln_stream *stream;
  kiln_context *context;
  /* The fields below came with kiln_set_trace_handler_ex. */
  kiln_trace_phase phase;
  /* Under KILN_TRACE_COMPLETIONS, the command's number (from 1, unique in
   * the process), the same in its queued and its completed call; else 0. */
  uint64_t id;
  /* KILN_TRACE_COMPLETED: whether start_ns and end_ns hold device times
   * (false where the device cannot time its work: a Vulkan queue without
   * timestamps). */
  bool timed;
  /* KILN_TRACE_COMPLETED: when the device began and ended the command, in
   * nanoseconds since the context's reference event. kiln records that
   * event on a stream of its own, and waits for it, when the context's
   * first command is timed; so a later command cannot begin before it
   * (a time that the device's clocks put before it counts as 0). The
   * times are those of two events kiln records on the command's stream
   * just before and just after it, so they include what the stream does
   * in between (a kernel's launch, a transfer's staging), and two
   * commands of one stream come in their order. 0 in the queued call. */
  uint64_t start_ns, end_ns;
} kiln_trace_command;

/* Receives one command. It may be called from any thread that queues work
 * or waits for it, while that thread holds no lock of kiln's, and may call
 * into kiln (work it queues is traced too). */
typedef void (*kiln_trace_handler)(const kiln_trace_command *command,
                                   void *user_data);

/* Routes every command queued on a stream of any context to `handler`,
 * once the backend has taken it and before the call that queued it
 * returns; NULL turns the handler off, and with it its cost (one branch
 * per command while no KILN_TRACE sink is on either). Not reported: calls
 * that failed or did nothing (0 bytes, an empty grid), commands kept by a
 * graph's capture, and a graph's replays (kiln_graph_launch). A copy or
 * fill that kiln does with one of its own kernels is also reported as
 * that kernel's launch, just before it. The handler and user_data stay
 * the caller's; one handler serves the whole process, and the last call
 * (of this or kiln_set_trace_handler_ex) wins. No errors.
 *
 * The handler works beside the sinks KILN_TRACE names, never in their
 * place: a context created while KILN_TRACE is set keeps those sinks for
 * its life, whatever handler is set or unset. KILN_TRACE is a
 * comma-separated list of sinks:
 *   log   one line per command, sent to the log (stderr, or
 *         kiln_set_log_handler's handler) at the info level whatever the
 *         level in force;
 *   nvtx  a range around each command's enqueue, named after the kernel
 *         for a launch and "<function> <bytes> B" for the others
 *         ("kiln_buffer_copy 4096 B"), for Nsight Systems (NVTX 3, domain
 *         "kiln"; each range costs a few loads while no tool is attached)
 *         and for rocprof (rocTX, where libroctx64.so loads: the library
 *         KILN_ROCTX_LIBRARY names, else libroctx64.so, .so.4 or
 *         /opt/rocm/lib's; looked for once per process, and said once at
 *         the info level when it is not found). A kiln built without
 *         NVTX 3's headers emits rocTX ranges only.
 * An unknown word, or nvtx where this kiln has neither NVTX nor rocTX,
 * makes creating a context fail with KILN_ERROR_INVALID_ARGUMENT, naming
 * it. */
KILN_API void kiln_set_trace_handler(kiln_trace_handler handler,
                                     void *user_data);

/* kiln_set_trace_handler with `flags`, a mask of kiln_trace_flags.
 *
 * KILN_TRACE_COMPLETIONS: each command reported as queued (phase
 * KILN_TRACE_QUEUED) is also reported once more, phase
 * KILN_TRACE_COMPLETED, with the device times of its start and end, when
 * kiln learns that it completed. kiln learns it only in a host wait that
 * returns KILN_OK, and reports there, before the wait returns, what that
 * wait covers:
 *   kiln_stream_synchronize (and _timeout), kiln_stream_destroy: the
 *     stream's commands;
 *   kiln_event_synchronize: the commands queued on the event's stream
 *     before its last kiln_event_record (and kiln_stream_wait_event where
 *     the backend waits for events on the host);
 *   kiln_context_synchronize, kiln_context_destroy, and the waits for the
 *     whole context that other calls make (destroying a buffer or a module
 *     while work may use it): all the context's commands;
 *   kiln_buffer_read: the commands queued on its stream before it.
 * Commands of one stream are reported in the order they were queued;
 * completions that two threads learn at once may interleave. A context
 * with 1024 or more timed commands not yet reported also reports, as it
 * queues each further 1024th, those already complete. A command of a lost
 * context, or one that completes after the handler stopped asking for
 * completions, is never reported completed.
 * Each timed command costs two event records on its stream (the backend's
 * own, not traced) and a host wait for the reference event once per
 * context; with the flag off, none of that happens. Commands that graph
 * capture keeps are not timed.
 * KILN_ERROR_INVALID_ARGUMENT, and the handler in force left as it was,
 * for an unknown flag. */
KILN_API kiln_status kiln_set_trace_handler_ex(kiln_trace_handler handler,
                                               uint32_t flags,
                                               void *user_data);

/* ------------------------------------------------------------------------ */
/* Built-in kernels                                                           */
/* ------------------------------------------------------------------------ */

/* The module of kiln's own kernels for the context's backend, loaded on
 * first use and owned by the context (do not destroy it); the same names and
 * parameters on every backend, listed in docs/kernels.md.
 * KILN_ERROR_UNSUPPORTED if this build has no kernels for the backend. */
KILN_API kiln_status kiln_context_builtin_module(kiln_context *context,
                                                 kiln_module **out_module);

/* y[i] = a * x[i] + y[i] for i < n, float32, on buffers at byte offsets
 * that are multiples of 4. */
KILN_API kiln_status kiln_axpy_f32(kiln_stream *stream, size_t n, float a,
                                   const kiln_buffer *x, size_t x_offset,
                                   kiln_buffer *y, size_t y_offset);

/* Writes the float32 sum of x[0..n) to the 4 bytes of `result` at
 * `result_offset`, in stream order; offsets are multiples of 4. The order of
 * additions depends only on n and x_offset % 16, so the result repeats
 * exactly run to run. */
KILN_API kiln_status kiln_reduce_sum_f32(kiln_stream *stream, size_t n,
                                         const kiln_buffer *x, size_t x_offset,
                                         kiln_buffer *result,
                                         size_t result_offset);

/* Writes the float32 dot product of x[0..n) and y[0..n) to the 4 bytes of
 * `result` at `result_offset`, in stream order; offsets are multiples of 4. */
KILN_API kiln_status kiln_dot_f32(kiln_stream *stream, size_t n,
                                  const kiln_buffer *x, size_t x_offset,
                                  const kiln_buffer *y, size_t y_offset,
                                  kiln_buffer *result, size_t result_offset);

/* Row-major float32 C = alpha * A * B + beta * C, with A m x k (row stride
 * lda elements), B k x n (ldb), C m x n (ldc), FMA on the CUDA cores (no
 * tensor cores, no TF32). Offsets are in bytes, multiples of 4. m or n of 0
 * does nothing; k must be at least 1. With beta == 0, C is not read. The
 * result repeats exactly run to run. A product with fewer tiles than SMs
 * and a long k splits k between blocks through a workspace the stream
 * keeps from its first such call (two 16 KiB tiles per SM; docs/kernels.md). */
KILN_API kiln_status kiln_sgemm_f32(kiln_stream *stream, size_t m, size_t n,
                                    size_t k, float alpha,
                                    const kiln_buffer *a, size_t a_offset,
                                    size_t lda, const kiln_buffer *b,
                                    size_t b_offset, size_t ldb, float beta,
                                    kiln_buffer *c, size_t c_offset,
                                    size_t ldc);

/* Row-major C = alpha * A * B + beta * C with A (m x k, row stride lda)
 * and B (k x n, ldb) in IEEE binary16 and C (m x n, ldc) in float32: the
 * products of halves summed in float32, on the matrix units where the
 * device has them (CUDA: wgmma on Hopper, mma.sync elsewhere; Vulkan:
 * cooperative matrices) and on the ordinary cores elsewhere
 * (docs/kernels.md says which kernel runs where).
 * Offsets in bytes: multiples of 2 for A and B, of 4 for C. m or n of 0
 * does nothing; k must be at least 1. With beta == 0, C is not read. */
KILN_API kiln_status kiln_hgemm_f16(kiln_stream *stream, size_t m, size_t n,
                                    size_t k, float alpha,
                                    const kiln_buffer *a, size_t a_offset,
                                    size_t lda, const kiln_buffer *b,
                                    size_t b_offset, size_t ldb, float beta,
                                    kiln_buffer *c, size_t c_offset,
                                    size_t ldc);

/* ------------------------------------------------------------------------ */
/* Streams                                                                    */
/* ------------------------------------------------------------------------ */

/* The stream every call with a NULL stream uses. Owned by the context: do
 * not destroy it. */
KILN_API kiln_status kiln_context_default_stream(kiln_context *context,
                                                 kiln_stream **out_stream);

/* Creates an in-order stream; work on different streams may overlap unless
 * ordered with events. Destroy with kiln_stream_destroy. */
KILN_API kiln_status kiln_stream_create(kiln_context *context,
                                        kiln_stream **out_stream);

typedef struct kiln_stream_options {
  /* From 0, the default stream's, to max_stream_priority of the context's
   * properties, the most urgent: the device starts work of a more urgent
   * stream first when several have work waiting (it does not preempt
   * running kernels). CUDA/HIP: a native stream priority; Vulkan: streams
   * above 0 go to a queue created with a higher queue priority, a hint
   * the driver may ignore. A priority beyond the range is
   * KILN_ERROR_OUT_OF_RANGE (nothing is clamped, so a program learns
   * that the device cannot give it): portable code asks for at most
   * max_stream_priority, which is 0 where there are no priorities. */
  uint32_t priority;
} kiln_stream_options;

/* As kiln_stream_create, with `options` (NULL: as kiln_stream_create).
 * KILN_ERROR_OUT_OF_RANGE, naming the range, for a priority beyond
 * max_stream_priority. Destroy with kiln_stream_destroy. */
KILN_API kiln_status kiln_stream_create_with_options_sized(
    kiln_context *context, const kiln_stream_options *options,
    size_t options_size, kiln_stream **out_stream);
static inline kiln_status kiln_stream_create_with_options(
    kiln_context *context, const kiln_stream_options *options,
    kiln_stream **out_stream) {
  return kiln_stream_create_with_options_sized(
      context, options, sizeof(kiln_stream_options), out_stream);
}

/* Waits for the stream's work, then releases it. The default stream cannot
 * be destroyed (KILN_ERROR_INVALID_ARGUMENT). NULL is a no-op. */
KILN_API kiln_status kiln_stream_destroy(kiln_stream *stream);

/* Submits anything queued and waits until all of the stream's work is done.
 * NULL is KILN_ERROR_INVALID_HANDLE (there is no context to take it from).
 * On CUDA and HIP, device printf output of the finished work has reached
 * stdout when this (or any other wait) returns KILN_OK (docs/kernels.md,
 * "Device printf"). */
KILN_API kiln_status kiln_stream_synchronize(kiln_stream *stream);

/* As kiln_stream_synchronize, but waits at most `timeout_ns` nanoseconds
 * (0 only looks; UINT64_MAX waits without limit), whatever
 * KILN_SYNC_TIMEOUT_MS says. KILN_ERROR_TIMEOUT, naming the stream and the
 * time waited, while work is still running: it goes on, and the context
 * stays usable. */
KILN_API kiln_status kiln_stream_synchronize_timeout(kiln_stream *stream,
                                                     uint64_t timeout_ns);

/* ------------------------------------------------------------------------ */
/* Events                                                                     */
/* ------------------------------------------------------------------------ */

/* Creates an event, a point in a stream to wait on or to time from. */
KILN_API kiln_status kiln_event_create(kiln_context *context,
                                       kiln_event **out_event);

typedef enum kiln_event_flags {
  KILN_EVENT_DEFAULT = 0,
  /* No timestamp: cheaper to record (CUDA/HIP DisableTiming, Vulkan no
   * timestamp query); kiln_event_elapsed_ms on it is
   * KILN_ERROR_INVALID_STATE. */
  KILN_EVENT_NO_TIMING = 1u << 0,
  /* kiln_event_synchronize sleeps until the mark is reached instead of
   * following the context's sync policy (CUDA/HIP BlockingSync, Vulkan
   * vkWaitSemaphores): no CPU used, more latency. */
  KILN_EVENT_BLOCKING = 1u << 1,
} kiln_event_flags;

/* As kiln_event_create, with kiln_event_flags or'ed in `flags`; an unknown
 * bit is KILN_ERROR_INVALID_ARGUMENT. Destroy with kiln_event_destroy. */
KILN_API kiln_status kiln_event_create_with_flags(kiln_context *context,
                                                  uint32_t flags,
                                                  kiln_event **out_event);

/* Releases the event (after the work it marks, if recorded). NULL: no-op. */
KILN_API kiln_status kiln_event_destroy(kiln_event *event);

/* Marks the current end of `stream` (NULL: the default stream), with a
 * timestamp. Recording again moves the mark. */
KILN_API kiln_status kiln_event_record(kiln_event *event, kiln_stream *stream);

/* Makes later work on `stream` (NULL: the default stream) wait until the
 * event's mark is reached; the host does not wait. Where the event's last
 * record is in a capture, the stream joins that capture instead (see
 * "Branches" under Graphs). KILN_ERROR_INVALID_STATE if the event was never
 * recorded, or was last recorded in a capture other than the one `stream`
 * is capturing. */
KILN_API kiln_status kiln_stream_wait_event(kiln_stream *stream,
                                            kiln_event *event);

/* Blocks the host until the event's mark is reached.
 * KILN_ERROR_INVALID_STATE if never recorded. */
KILN_API kiln_status kiln_event_synchronize(kiln_event *event);

/* KILN_OK if the event's mark is reached, KILN_ERROR_NOT_READY if not;
 * does not block. */
KILN_API kiln_status kiln_event_query(kiln_event *event);

/* Milliseconds of device time from `start` to `end`, two recorded,
 * completed events of one context: the end's timestamp minus the start's,
 * so negative when the device reached `end` first (recorded first, or on
 * another stream that ran ahead), on every backend. KILN_ERROR_NOT_READY
 * if either has not completed; KILN_ERROR_INVALID_STATE if either was not
 * recorded or was created with KILN_EVENT_NO_TIMING. */
KILN_API kiln_status kiln_event_elapsed_ms(kiln_event *start, kiln_event *end,
                                           float *out_ms);

/* ------------------------------------------------------------------------ */
/* Graphs: record once, replay cheaply                                        */
/* ------------------------------------------------------------------------ */

/*
 * A graph is work captured from a stream and replayed, whole, as one
 * submission: a CUDA or HIP executable graph, or one reusable Vulkan
 * command buffer with barriers only where a command depends on another. A
 * replay costs about what one launch does, however many launches the graph
 * holds.
 *
 * Captured, in order: kiln_launch, kiln_buffer_copy, kiln_buffer_fill, the
 * built-in helpers (kiln_axpy_f32, ...: launches too), kiln_event_record and
 * kiln_stream_wait_event on the capturing stream. Nothing of it runs during
 * the capture; each replay runs all of it, with the arguments, buffers and
 * byte ranges it was captured with. A captured record marks its event at
 * every replay. On Vulkan a replay waits, before its first command, for
 * every event the graph waits for, and a captured record's event is reached
 * when the whole replay is: later, never earlier, than on CUDA and HIP.
 *
 * Not captured: calls that need the host, that is kiln_buffer_write,
 * kiln_buffer_read, their _async forms and fills of a module global at an
 * address that is not a multiple of 4, and kiln_stream_synchronize(_timeout),
 * kiln_stream_destroy or a second kiln_stream_begin_capture on the
 * capturing stream. Each fails with KILN_ERROR_INVALID_STATE and a message,
 * does nothing, and the capture goes on: kiln_stream_end_capture then gives
 * the graph of what was captured.
 *
 * Branches, as CUDA's stream capture has them: another stream of the
 * context that waits on an event whose last record is in the capture
 * joins it, and its work from that wait on is captured too, as a branch
 * of the graph that runs beside the others (each branch in its stream's
 * order, after what the event marked). A branch joins back when a stream
 * of the capture waits on an event recorded on it. Before the capture
 * ends on the stream that began it, that stream must have waited, through
 * such events, for everything captured on every branch (its records and
 * waits too, as CUDA asks): else
 * kiln_stream_end_capture fails with KILN_ERROR_INVALID_STATE, naming the
 * branch, and discards the capture. A joined stream is capturing until
 * then (it refuses what the capturing stream refuses, and cannot end the
 * capture); a stream capturing another graph cannot wait on this one's
 * records (KILN_ERROR_INVALID_STATE). Work on streams that never joined is
 * not captured. Independent branches run at once on CUDA and HIP; on
 * Vulkan they share levels without a barrier between them, which drivers
 * may overlap (Vulkan promises no overlap on one queue).
 *
 * The graph holds the kernels' modules, the buffers and the events it uses:
 * destroying one of them while a graph holds it is KILN_ERROR_INVALID_STATE
 * (destroy the graph first). Threads: a graph may be replayed and updated
 * from any thread; one graph's replays and updates take turns.
 */

/* Starts capturing the work issued to `stream` into a new graph (see above).
 * KILN_ERROR_INVALID_STATE if the stream is already capturing;
 * KILN_ERROR_UNSUPPORTED where the backend has no graphs. */
KILN_API kiln_status kiln_stream_begin_capture(kiln_stream *stream);

/* Ends the capture on `stream` and returns the graph in *out_graph (owned by
 * the caller; kiln_graph_destroy). The stream, and every stream that
 * joined the capture, is back to running its work. KILN_ERROR_INVALID_STATE
 * if the stream is not capturing, if it joined a capture that another
 * stream began (that one ends it), or if a branch was not joined back
 * (see above). If the backend cannot build the graph, the capture is
 * abandoned all the same. */
KILN_API kiln_status kiln_stream_end_capture(kiln_stream *stream,
                                             kiln_graph **out_graph);

/* Whether `stream` is capturing, in *out_capturing. */
KILN_API kiln_status kiln_stream_is_capturing(kiln_stream *stream,
                                              bool *out_capturing);

/* Replays the graph on `stream` (NULL: the context's default stream), any
 * stream of the graph's context, in that stream's order, as one submission.
 * It may be queued while earlier replays still run, on any stream; the
 * replays of one graph then run one after another, as CUDA runs them.
 * KILN_ERROR_INVALID_STATE if `stream` is capturing. */
KILN_API kiln_status kiln_graph_launch(kiln_graph *graph, kiln_stream *stream);

/* The number of the caller's kiln_launch calls the graph holds, numbered
 * from 0 in capture order for kiln_graph_set_arguments (the built-in
 * helpers' launches are not numbered). */
KILN_API kiln_status kiln_graph_launch_count(const kiln_graph *graph,
                                             size_t *out_count);

/* Replaces the arguments of captured launch `launch_index` for the replays
 * that start after this call; checked as kiln_launch checks them (the
 * kernel and launch configuration stay). Replays already started keep the
 * old ones. KILN_ERROR_OUT_OF_RANGE for an index >= the launch count. On
 * Vulkan the graph's command buffer is recorded again, after the replays
 * in flight are done. */
KILN_API kiln_status kiln_graph_set_arguments(kiln_graph *graph,
                                              size_t launch_index,
                                              const kiln_arg *args,
                                              size_t arg_count);

/* Waits for the graph's replays in flight, then releases it and what it
 * holds. NULL is a no-op. */
KILN_API kiln_status kiln_graph_destroy(kiln_graph *graph);

/* ------------------------------------------------------------------------ */
/* Native handles: kiln's objects in other GPU code, and its objects in kiln  */
/* ------------------------------------------------------------------------ */

/*
 * Export: the *_get_native calls hand out the vendor handles under a kiln
 * object, so that cuBLAS, NCCL, a vendor library or the application's own
 * API calls can work on kiln's memory and streams. The handles stay kiln's:
 * never free, destroy or reset them, and do not use them after the kiln
 * object is destroyed. Work the caller queues on them is the caller's to
 * order against kiln's (see kiln_native_stream) and to finish before the
 * kiln object is destroyed. docs/interop.md has the whole set of rules.
 *
 * Import: the *_create_from_native calls make a kiln object of a handle
 * the caller made. Borrowed by default: destroying the kiln object waits
 * for kiln's work on it and leaves the handle alive, the caller's to free
 * after. With KILN_NATIVE_ADOPT kiln owns it from a successful call on and
 * frees it when the kiln object is destroyed (on failure it stays the
 * caller's).
 *
 * Vulkan handles: dispatchable ones (VkInstance, VkPhysicalDevice,
 * VkDevice, VkQueue) travel as void *, non-dispatchable ones (VkBuffer,
 * VkDeviceMemory, VkSemaphore) as uint64_t, whatever the platform's
 * VK_USE_64_BIT_PTR_DEFINES: cast with (uint64_t)(uintptr_t)h where they
 * are pointers. Fields of another backend are zero.
 */

/* The import flag: kiln takes ownership of the native handle. */
#define KILN_NATIVE_ADOPT (1u << 0)

typedef struct kiln_native_context {
  kiln_backend backend;
  /* CUDA: the CUdevice and the CUcontext kiln makes current (the device's
   * primary context unless the context was imported). */
  int cuda_device;
  void *cuda_context;
  /* HIP: the device ordinal kiln selects around its calls. */
  int hip_device;
  /* Vulkan: the instance, physical device and device kiln uses, the queue
   * family of all its queues, the default stream's queue, the API version
   * the device was created for, and the vkGetInstanceProcAddr kiln loaded
   * (cast to PFN_vkGetInstanceProcAddr; use it to reach the same loader). */
  void *vk_instance;
  void *vk_physical_device;
  void *vk_device;
  uint32_t vk_queue_family;
  void *vk_queue;
  uint32_t vk_api_version;
  void (*vk_get_instance_proc_addr)(void);
  /* Vulkan, import only (kiln_context_create_from_native; 0 and NULL on
   * export): how many queues of vk_queue_family the device was created
   * with, and the pNext chain of its VkDeviceCreateInfo (the
   * VkPhysicalDeviceFeatures2 / Vulkan12Features / feature structs it
   * enabled), which Vulkan gives no way to ask the device for. */
  uint32_t vk_queue_count;
  const void *vk_enabled_features;
} kiln_native_context;

/* Fills *out_native with the context's native handles. They belong to kiln
 * (destroy nothing); the VkQueue is one kiln submits to from any thread
 * under its own lock: submit to it only while no other thread calls kiln
 * on this context, or use a queue of your own. */
KILN_API kiln_status kiln_context_get_native_sized(
    kiln_context *context, size_t native_size,
    kiln_native_context *out_native);
static inline kiln_status kiln_context_get_native(
    kiln_context *context, kiln_native_context *out_native) {
  return kiln_context_get_native_sized(context, sizeof(kiln_native_context),
                                       out_native);
}

/* Opens a kiln context on a device another library or the application set
 * up, as kiln_context_create does otherwise (KILN_DEBUG and
 * KILN_SYNC_TIMEOUT_MS apply). `native->backend` picks the backend; then
 * CUDA: `cuda_context`, any CUcontext (a primary context, or one of the
 * caller's), which kiln makes current around its calls; HIP: `hip_device`;
 * Vulkan: `vk_instance`, `vk_physical_device`, `vk_device`,
 * `vk_queue_family` (with compute), `vk_queue_count` (> 0; kiln uses up to
 * 8 of them), `vk_api_version` (that of the VkInstance, at least 1.2) and
 * `vk_enabled_features`. The VkDevice must come from the Vulkan loader
 * kiln uses (libvulkan.so.1, or KILN_VULKAN_LIBRARY) and have Vulkan 1.2's
 * bufferDeviceAddress and timelineSemaphore and shaderInt64 enabled:
 * KILN_ERROR_UNSUPPORTED names what is missing. Borrowed: kiln_context_destroy
 * leaves the device (and CUcontext) alive, after waiting for kiln's work;
 * with KILN_NATIVE_ADOPT (Vulkan only: CUDA and HIP answer
 * KILN_ERROR_INVALID_ARGUMENT) it destroys the VkDevice. */
KILN_API kiln_status kiln_context_create_from_native_sized(
    const kiln_native_context *native, size_t native_size, uint32_t flags,
    kiln_context **out_context);
static inline kiln_status kiln_context_create_from_native(
    const kiln_native_context *native, uint32_t flags,
    kiln_context **out_context) {
  return kiln_context_create_from_native_sized(
      native, sizeof(kiln_native_context), flags, out_context);
}

typedef struct kiln_native_buffer {
  kiln_backend backend;
  /* The address kernels see of the buffer's first byte: the CUdeviceptr,
   * the HIP device pointer, or the Vulkan buffer device address. */
  uint64_t device_address;
  size_t size; /* bytes from device_address that are the buffer's */
  /* Vulkan: the VkBuffer holding it, the VkDeviceMemory it is bound to,
   * and the offset of the buffer's first byte within vk_buffer (not 0
   * under KILN_DEBUG=guard). The VkBuffer has transfer source and
   * destination and shader device address usage. The memory is most often
   * a block that other buffers share, the VkBuffer bound at an offset in
   * it: use the VkBuffer, not the memory at offset 0. */
  uint64_t vk_buffer;
  uint64_t vk_memory;
  uint64_t vk_offset;
} kiln_native_buffer;

/* Fills *out_native with where the buffer lives. A module's global variable
 * is given by its address (vk_buffer 0). The memory stays kiln's: do not
 * free it; reads and writes by foreign work follow kiln_native_stream's
 * ordering rules. */
KILN_API kiln_status kiln_buffer_get_native_sized(
    const kiln_buffer *buffer, size_t native_size,
    kiln_native_buffer *out_native);
static inline kiln_status kiln_buffer_get_native(
    const kiln_buffer *buffer, kiln_native_buffer *out_native) {
  return kiln_buffer_get_native_sized(buffer, sizeof(kiln_native_buffer),
                                      out_native);
}

/* Makes a kiln buffer of foreign device memory of the context's device:
 * `native` gives backend (the context's), device_address and size (> 0);
 * Vulkan also vk_buffer (with the usages above), vk_offset and, for
 * KILN_NATIVE_ADOPT, vk_memory (freed after the VkBuffer; 0: none), and
 * device_address may be 0 for kiln to look it up; vk_offset and size are
 * multiples of 4. CUDA and HIP check that the range lies in one
 * allocation (CUDA: of the context's device), and adopting needs the
 * allocation's start (kiln frees it with cuMemFree / hipFree).
 * KILN_ERROR_INVALID_ARGUMENT, in words, for a mismatch; flags other than
 * KILN_NATIVE_ADOPT are KILN_ERROR_INVALID_ARGUMENT. The new buffer is used
 * as any other and released with kiln_buffer_destroy (see "Import"). */
KILN_API kiln_status kiln_buffer_create_from_native_sized(
    kiln_context *context, const kiln_native_buffer *native,
    size_t native_size, uint32_t flags, kiln_buffer **out_buffer);
static inline kiln_status kiln_buffer_create_from_native(
    kiln_context *context, const kiln_native_buffer *native, uint32_t flags,
    kiln_buffer **out_buffer) {
  return kiln_buffer_create_from_native_sized(
      context, native, sizeof(kiln_native_buffer), flags, out_buffer);
}

typedef struct kiln_native_stream {
  kiln_backend backend;
  /* CUDA: the CUstream; HIP: the hipStream_t. Foreign work queued on it
   * is in order with kiln's on that stream, both ways. */
  void *stream;
  /* Vulkan: the queue the stream submits to, its family, and a timeline
   * semaphore that reaches vk_semaphore_value when all the work queued on
   * the stream before kiln_stream_get_native is done (the call submits
   * that work). Foreign submissions wait for (semaphore, value) to come
   * after kiln's work; kiln_stream_wait_native puts kiln's later work after
   * theirs. Never signal kiln's semaphore. */
  void *vk_queue;
  uint32_t vk_queue_family;
  uint64_t vk_semaphore;
  uint64_t vk_semaphore_value;
} kiln_native_stream;

/* Fills *out_native with the stream's native handles (Vulkan: submitting
 * what is queued first). NULL is KILN_ERROR_INVALID_HANDLE. The handles
 * stay kiln's: do not destroy them, and do not wait on them in a graph
 * capture (a capturing stream is KILN_ERROR_INVALID_STATE). */
KILN_API kiln_status kiln_stream_get_native_sized(
    kiln_stream *stream, size_t native_size, kiln_native_stream *out_native);
static inline kiln_status kiln_stream_get_native(
    kiln_stream *stream, kiln_native_stream *out_native) {
  return kiln_stream_get_native_sized(stream, sizeof(kiln_native_stream),
                                      out_native);
}

/* Makes a kiln stream of a native one of the context's device: CUDA: the
 * CUstream `native->stream` (checked to be of the context's CUcontext);
 * HIP: the hipStream_t `native->stream` (of the context's device: HIP
 * gives no check); Vulkan: kiln's own stream state on `native->vk_queue`,
 * which must be one of the context's queues (kiln_context_get_native's,
 * or any of its family that the context uses). kiln's work on it is in
 * order with foreign work on the same CUDA or HIP stream. Borrowed, it is
 * not destroyed by kiln_stream_destroy; KILN_NATIVE_ADOPT hands it to kiln
 * (cuStreamDestroy / hipStreamDestroy; on Vulkan, whose queues belong to
 * the device, KILN_ERROR_INVALID_ARGUMENT). Destroy the kiln stream before
 * a borrowed native one. */
KILN_API kiln_status kiln_stream_create_from_native_sized(
    kiln_context *context, const kiln_native_stream *native,
    size_t native_size, uint32_t flags, kiln_stream **out_stream);
static inline kiln_status kiln_stream_create_from_native(
    kiln_context *context, const kiln_native_stream *native, uint32_t flags,
    kiln_stream **out_stream) {
  return kiln_stream_create_from_native_sized(
      context, native, sizeof(kiln_native_stream), flags, out_stream);
}

/* Makes later work on `stream` wait, on the device, for foreign work:
 * Vulkan: until the timeline semaphore `handle` (a VkSemaphore of the
 * context's VkDevice, as uint64_t) reaches `value`; CUDA: for the CUevent
 * `handle`, HIP: the hipEvent_t `handle` (recorded by the caller), with
 * `value` 0. The host does not wait. The handle stays the caller's and
 * must live until the work waiting for it is done. KILN_ERROR_INVALID_ARGUMENT
 * for a zero handle, or a value other than 0 on CUDA or HIP. */
KILN_API kiln_status kiln_stream_wait_native(kiln_stream *stream,
                                             uint64_t handle, uint64_t value);

#ifdef __cplusplus
}
#endif

#endif /* KILN_KILN_H */
