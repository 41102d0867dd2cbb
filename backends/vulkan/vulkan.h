/*
 * The Vulkan backend's private header: its objects (each embeds the core's
 * struct first), the loaded entry points, and the functions its files share.
 *
 * How it works, and why:
 *  - No descriptor sets: kernel arguments are push constants holding buffer
 *    device addresses, and the block size is set by specialization
 *    constants, one pipeline per kernel and block size (launch.c).
 *  - A stream records into a command buffer and submits batches of up to
 *    BATCH_COMMANDS commands, or earlier: on a synchronize, a read, an
 *    event or a staged write, and when the stream has nothing in flight
 *    (so its work starts while the host waits elsewhere). Copies to and
 *    from host memory go to a transfer queue where the device has a
 *    family of them (a DMA engine that runs them beside kernels), each
 *    submitted at once, unless the stream's compute work is unfinished;
 *    device-to-device copies stay on the compute queue,
 *    where NVIDIA's driver copies 4.7 times as fast as on its DMA queue
 *    (docs/performance.md). Consecutive commands are separated by one global
 *    compute/transfer memory barrier, also at the start of every batch
 *    (its scope reaches back over earlier submissions to the queue), and a
 *    batch ends with a barrier to the host stage, so that whatever the host
 *    sees complete it can read (submit.c).
 *  - Each stream has a timeline semaphore, signalled once per submission:
 *    command buffers and staging memory are recycled when it passes their
 *    value, events are (semaphore, value) pairs, and cross-stream waits are
 *    semaphore waits, as are the waits between a stream's two lanes.
 *    Streams are spread over the queues of one family.
 *  - Transfers from host memory: straight into mapped memory when no
 *    stream has work queued or running; otherwise through the stream's
 *    staging ring in chunks, and then every stream's next submission waits
 *    for the copy (so a write is seen by any work submitted after it
 *    returns). Reads wait for the stream, then copy out of cached mapped
 *    memory or through the ring (buffer.c).
 *  - Memory comes in blocks of 64 MiB per memory type, mapped once where
 *    the type is host-visible; each buffer is a VkBuffer of its own bound
 *    at its range of a block (blocks.c, the books in suballoc.c), and a
 *    buffer the driver wants dedicated or too large to share gets memory
 *    of its own. A range may be given back for later, once a stream's
 *    timeline passes a value.
 *  - Freeing a buffer, host buffer or kernel first waits for every stream:
 *    a kernel may reach any buffer through its address.
 *  - A launch into an idle stream is a batch of one command, submitted at
 *    once; its command buffer is kept (a few per stream) and submitted
 *    again, unrecorded, when the same launch comes back to an idle stream
 *    (solo.c): recording costs more than the submission on NVIDIA.
 *  - KILN_DEBUG=reorder holds every submission back until the host waits
 *    for it, then makes it out of the program's order (reorder.c).
 *
 * Locks, always taken in this order: the context's streams.lock, then a
 * stream's lock, then the context's reorder.lock or a memory pool's lock,
 * then a queue's lock, the context's writes.lock (a pool reclaiming a
 * range may release a timeline, which drains the queues) or imports.c's
 * lock (a pool freeing an exported block frees other contexts' imports
 * of it), which, like peer.c's, is held only over its lists. No kiln core
 * function that takes the context lock is called while a stream lock is
 * held.
 *
 * The files, each calling only files below it, so that no two call each
 * other: interop.c (native handles) over context.c (the device and its
 * queues); peer.c (copies between contexts, over imports.c: which
 * contexts export, and imports of their blocks) and host_buffer.c over
 * buffer.c (transfers, copies, fills), event.c and module.c; these over
 * stream.c (streams' lives, context-wide waits), graph.c and launch.c;
 * all of them over submit.c (recording and submitting a stream's
 * commands); below it solo.c (the kept batches of one launch, a
 * stream's books only), staging.c (the staging ring's books), wait.c (the
 * host's semaphore waits), reorder.c, labels.c (KILN_TRACE=nvtx's debug
 * labels), memory.c (VkBuffers and their
 * memory) over blocks.c (memory types, budgets, blocks) over suballoc.c
 * (their books) and timeline.c, pipeline_cache.c, device.c over
 * features.c and instance.c (the physical devices, their optional
 * features, the instance), the SPIR-V and compiler files, loader.c and
 * error.c. ops.c only hands the others to the core as its table.
 *
 * The one knot the design needs stays inside submit.c, which is why it
 * is one file: opening a batch on one lane flushes the other's, a flush
 * waits for room among the submissions in flight, and a wait for the
 * stream first flushes what it waits for. To keep the other files out of
 * it, the staging ring only keeps its books (submit.c retires its ranges;
 * buffer.c, not staging.c, waits for the stream to free one), and the
 * waits for every stream live in stream.c beside the list they walk, not
 * in context.c, which the transfers' files would then call back.
 *
 * One header for all of them, so over 600 lines: the files share these
 * objects, and headers split by file would scatter declarations that the
 * order above already keeps apart.
 */
#ifndef KILN_VULKAN_VULKAN_H
#define KILN_VULKAN_VULKAN_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "backends/vulkan/symbols.h"
#include "core/backend.h"

/* ---- Loaded entry points (loader.c) ----------------------------------------
 */

typedef struct kiln_vulkan_library {
  void *handle;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
  /* NULL on a Vulkan 1.0 loader. */
  PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion;
#define KILN_VULKAN_X(name) PFN_##name name;
  KILN_VULKAN_GLOBAL_SYMBOLS(KILN_VULKAN_X)
  KILN_VULKAN_INSTANCE_SYMBOLS(KILN_VULKAN_X)
#undef KILN_VULKAN_X
  /* Only with validation (VK_EXT_debug_utils). */
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT;
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT;
  /* KILN_TRACE=nvtx's labels (labels.c): set by instance.c where the
   * instance has VK_EXT_debug_utils, else NULL. */
  PFN_vkCmdBeginDebugUtilsLabelEXT vkCmdBeginDebugUtilsLabelEXT;
  PFN_vkCmdEndDebugUtilsLabelEXT vkCmdEndDebugUtilsLabelEXT;
  PFN_vkQueueBeginDebugUtilsLabelEXT vkQueueBeginDebugUtilsLabelEXT;
  PFN_vkQueueEndDebugUtilsLabelEXT vkQueueEndDebugUtilsLabelEXT;
} kiln_vulkan_library;

typedef struct kiln_vulkan_device_fns {
#define KILN_VULKAN_X(name) PFN_##name name;
  KILN_VULKAN_DEVICE_SYMBOLS(KILN_VULKAN_X)
#undef KILN_VULKAN_X
} kiln_vulkan_device_fns;

extern kiln_vulkan_library kiln_vulkan_lib;

/* Opens the loader and resolves the global entry points. */
kiln_status kiln_vulkan_load_library(char *reason, size_t reason_size);
/* Resolves the instance-level entry points. */
kiln_status kiln_vulkan_load_instance(VkInstance instance, char *reason,
                                      size_t reason_size);
/* Fills a device's table. */
kiln_status kiln_vulkan_load_device(VkDevice device,
                                    kiln_vulkan_device_fns *fns);

/* ---- Errors (error.c)
 * -------------------------------------------------------- */

/* "VK_ERROR_OUT_OF_DEVICE_MEMORY", ... */
const char *kiln_vulkan_result_name(VkResult result);
/* The kiln status for a VkResult: the specific one where the result has
 * one (out of memory, device lost, not ready, ...), else `fallback`. */
kiln_status kiln_vulkan_status(VkResult result, kiln_status fallback);
/* Writes "VK_ERROR_NAME (the specification's description)" for `result`. */
void kiln_vulkan_describe(VkResult result, char *buf, size_t size);

/* Records "<what> failed: VK_ERROR_NAME (description)" as the thread's
 * error, <what> formatted printf-style from fmt, and returns
 * kiln_vulkan_status(result, KILN_ERROR_BACKEND). */
kiln_status kiln_vulkan_error(VkResult result, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* As kiln_vulkan_error, but a result with no specific status gives
 * `fallback`: a specific status (a lost device above all) is never hidden
 * by the call's own. */
kiln_status kiln_vulkan_error_as(VkResult result, kiln_status fallback,
                                 const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Logs "vulkan: <what> failed: VK_ERROR_NAME (description)" as a warning:
 * for failures that cannot be reported, in the deinit ops. */
void kiln_vulkan_warn(VkResult result, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- The instance (instance.c)
 * ----------------------------------------------------- */

/* Creates the process-wide instance, with the validation layer where
 * KILN_VULKAN_VALIDATION asks for it; *reason says why not. */
kiln_status kiln_vulkan_instance_create(uint32_t loader_version, char *reason,
                                        size_t reason_size);
void kiln_vulkan_instance_destroy(void);
/* VK_NULL_HANDLE before probe, and after a failed one. */
VkInstance kiln_vulkan_instance(void);
/* Why a context cannot be created although probe succeeded (validation was
 * asked for but is not installed), or NULL. */
const char *kiln_vulkan_validation_problem(void);
/* The validation layer's specVersion while it is on, else 0. */
uint32_t kiln_vulkan_validation_version(void);
/* The Vulkan version the instance asked for: 1.2, or 1.3 under
 * KILN_VULKAN_VALIDATION=printf where the loader has it (what a shader's
 * SPIR-V may target is the lesser of this and the device's). */
uint32_t kiln_vulkan_instance_api(void);
/* Whether KILN_VULKAN_VALIDATION=printf put the layer's debug printf on. */
bool kiln_vulkan_printf_on(void);
/* Under printf: the kernels whose text the calling thread's next
 * vkQueueSubmit may print (the layer hands it over inside that call, on
 * the submitting thread), or NULL once it returned. The string stays the
 * caller's. */
void kiln_vulkan_printf_source(const char *kernels);
/* Whether `name` is among the `count` extensions of `exts`. */
bool kiln_vulkan_has_extension(const VkExtensionProperties *exts,
                               uint32_t count, const char *name);

/* ---- Devices (device.c)
 * ------------------------------------------------------- */

/* A usable physical device, as found by probe. */
/* VK_KHR_cooperative_matrix's feature struct, which the Vulkan headers kiln
 * builds with predate (features.c). */
typedef struct kiln_vulkan_coopmat_features {
  VkStructureType sType;
  void *pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
} kiln_vulkan_coopmat_features;

/* VK_KHR_shader_bfloat16's feature struct, which those headers predate
 * too. */
typedef struct kiln_vulkan_bf16_features {
  VkStructureType sType;
  void *pNext;
  VkBool32 shaderBFloat16Type;
  VkBool32 shaderBFloat16DotProduct;
  VkBool32 shaderBFloat16CooperativeMatrix;
} kiln_vulkan_bf16_features;

/* Optional features for user kernels (features.c): has_* where the device
 * lists the extension and offers its feature; the structs as the device
 * answered, to chain when the VkDevice is created. */
typedef struct kiln_vulkan_optional {
  bool has_atomic, has_subgroup, has_dot, has_coopmat_khr, has_coopmat_nv;
  bool has_bf16;
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomic;
  VkPhysicalDeviceSubgroupSizeControlFeaturesEXT subgroup;
  VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR dot;
  kiln_vulkan_coopmat_features coopmat_khr;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat_nv;
  kiln_vulkan_bf16_features bf16;
} kiln_vulkan_optional;

/* The most optional extensions kiln_vulkan_optional_enable names. */
#define KILN_VULKAN_MAX_OPTIONAL 6

typedef struct kiln_vulkan_physical {
  VkPhysicalDevice handle;
  uint32_t api_version;
  VkPhysicalDeviceLimits limits;
  VkPhysicalDeviceMemoryProperties memory;
  VkDeviceSize max_allocation_bytes;
  VkPhysicalDeviceType type;
  /* With vendor and device ids, what a pipeline cache blob is valid for. */
  uint32_t driver_version;
  uint8_t pipeline_cache_uuid[VK_UUID_SIZE];
  uint32_t queue_family;
  uint32_t queue_count;
  /* A family that can copy but not compute (a DMA engine), or UINT32_MAX. */
  uint32_t transfer_family;
  uint32_t transfer_queue_count;
  uint32_t timestamp_valid_bits;
  bool portability_subset; /* must be enabled when present */
  bool memory_budget;      /* VK_EXT_memory_budget */
  bool non_semantic_info;  /* VK_KHR_shader_non_semantic_info */
  /* VK_EXT_external_memory_host, and the alignment of what it imports. */
  bool host_import;
  VkDeviceSize host_import_align;
  /* VK_KHR_external_memory_fd, offering buffers of device memory that can
   * be exported and imported as opaque fds (only as dedicated allocations
   * where memory_fd_dedicated), and the UUIDs that say which VkDevices can
   * import what another exported: those of one physical device and driver.
   * Two contexts on one GPU share memory so. */
  bool memory_fd, memory_fd_dedicated;
  uint8_t driver_uuid[VK_UUID_SIZE];
  kiln_vulkan_optional optional;
  /* The subgroup operations compute shaders may use (VkSubgroupFeatureFlags;
   * none where subgroups are not offered to compute). */
  uint32_t subgroup_operations;
  /* Supported features, chained; context.c enables a subset. */
  VkPhysicalDeviceFeatures2 features;
  VkPhysicalDeviceVulkan11Features features11;
  VkPhysicalDeviceVulkan12Features features12;
  kiln_device_properties properties;
} kiln_vulkan_physical;

/* Fills *out with the optional features `dev` offers, from its extension
 * list (features.c); `layer` is the validation layer's specVersion while
 * it is on, else 0. */
void kiln_vulkan_optional_probe(VkPhysicalDevice dev,
                                const VkExtensionProperties *exts,
                                uint32_t count, uint32_t layer,
                                kiln_vulkan_optional *out);
/* Sets kp->features, the subgroup size range and the matrix shapes of the
 * device p describes (its optional features probed), a device of
 * `instance`. */
void kiln_vulkan_optional_report(VkInstance instance,
                                 const kiln_vulkan_physical *p,
                                 kiln_device_properties *kp);
/* The optional features a foreign VkDevice was created with, from the
 * pNext chain of its creation (kiln_context_create_from_native). */
void kiln_vulkan_optional_take(kiln_vulkan_optional *out, const void *chain);
/* Copies `offered` into `enabled` (the context's storage), chains its
 * structs onto *chain and writes the extensions to enable into `names`
 * (KILN_VULKAN_MAX_OPTIONAL at most): their count. */
uint32_t kiln_vulkan_optional_enable(const kiln_vulkan_optional *offered,
                                     kiln_vulkan_optional *enabled,
                                     const char **names, void **chain);
const kiln_vulkan_physical *kiln_vulkan_physical_device(size_t index);

kiln_status kiln_vulkan_probe(char *reason, size_t reason_size);
size_t kiln_vulkan_device_count(void);
kiln_status kiln_vulkan_device_properties(size_t index,
                                          kiln_device_properties *out);

/* ---- Context (context.c)
 * ------------------------------------------------------- */

/* Queues beyond this many per family bring no more overlap worth having. */
#define KILN_VULKAN_MAX_QUEUES 8

typedef struct kiln_vulkan_queue {
  VkQueue handle;
  pthread_mutex_t lock; /* vkQueueSubmit needs the queue to itself */
} kiln_vulkan_queue;

typedef struct kiln_vulkan_stream kiln_vulkan_stream;

/* Transfer queues used per context; NVIDIA offers 2, AMD 2 or more. */
#define KILN_VULKAN_MAX_TRANSFER 4

/* Where copies go (KILN_VULKAN_TRANSFER; context.c). */
typedef enum kiln_vulkan_transfer_mode {
  /* No transfer lane: every command on the compute queues. */
  KILN_VULKAN_TRANSFER_OFF,
  /* Host<->device copies on the transfer family's queues (the default
   * where the device has one). */
  KILN_VULKAN_TRANSFER_HOST,
  /* Device<->device copies there too. */
  KILN_VULKAN_TRANSFER_ALL,
  /* Every copy through the transfer lane, on the compute queues: the lane's
   * switching and ordering, testable on a device with one queue family. */
  KILN_VULKAN_TRANSFER_COMPUTE,
} kiln_vulkan_transfer_mode;

/* A timeline semaphore, shared by its stream, the events recorded on it and
 * the waits of other streams, so it outlives whichever is destroyed
 * first. */
typedef struct kiln_vulkan_timeline {
  VkSemaphore semaphore;
  atomic_uint refs;
  bool foreign; /* the caller's (kiln_stream_wait_native): not destroyed */
} kiln_vulkan_timeline;

typedef struct kiln_vulkan_wait {
  kiln_vulkan_timeline *timeline;
  uint64_t value;
} kiln_vulkan_wait;

/* suballoc.h's, which blocks.c, memory.c and peer.c look into. */
struct kiln_vulkan_suballoc_range;
struct kiln_vulkan_suballoc_block;

typedef struct kiln_vulkan_context {
  kiln_context base;

  /* The device (context.c, interop.c): set before anything else runs and
   * only read after, so no lock guards it. Every Vulkan call names
   * `device` and `vk`, so they stay at the top rather than in a group. */
  const kiln_vulkan_physical *phys;
  VkDevice device;
  kiln_vulkan_device_fns vk;
  /* false for a VkDevice imported without KILN_NATIVE_ADOPT: deinit waits
   * for kiln's streams only (the caller may still use the device's other
   * queues) and leaves the device alive. */
  bool owns_device;
  /* Whether shaders may declare SPV_KHR_non_semantic_info (GLSL's
   * debugPrintfEXT): the device's extension enabled, or Vulkan 1.3 on
   * both the instance and the device (an imported device's: the caller's
   * instance). */
  bool non_semantic;
  /* An imported device's physical device as the context sees it: kiln's
   * entry with the caller's queue family and enabled features (phys then
   * points here; interop.c). */
  kiln_vulkan_physical imported_phys;
  /* The features the device was created with, chained enabled ->
   * enabled11 -> enabled12: kiln_context_get_native hands them out. */
  VkPhysicalDeviceFeatures2 enabled;
  VkPhysicalDeviceVulkan11Features enabled11;
  VkPhysicalDeviceVulkan12Features enabled12;
  /* The optional features enabled, chained after enabled12 (features.c);
   * none where the device would not take them. */
  kiln_vulkan_optional enabled_optional;

  /* The queues (context.c), fixed once the context is set up: each
   * queue's own lock guards submissions to it, and the next_* counters
   * that spread streams over them are atomic. */
  struct {
    kiln_vulkan_queue compute[KILN_VULKAN_MAX_QUEUES];
    uint32_t compute_count;
    atomic_uint next_compute;
    /* The transfer family's queues (transfer_count 0 without one). Kiln's
     * buffers are then shared by both families
     * (VK_SHARING_MODE_CONCURRENT): a kernel reaches any buffer through
     * its address, so kiln cannot know which buffers a queue-family
     * ownership transfer would have to name. */
    kiln_vulkan_transfer_mode transfer_mode;
    uint32_t transfer_family; /* UINT32_MAX without a transfer lane */
    kiln_vulkan_queue transfer[KILN_VULKAN_MAX_TRANSFER];
    uint32_t transfer_count;
    atomic_uint next_transfer;
  } queues;

  /* Memory (memory.c, blocks.c): the fields are set when the device is
   * created and only read after, with no lock; each pool has its own. */
  struct {
    /* VK_EXT_memory_budget is enabled: blocks and memory of their own
     * stay within the heap's budget. */
    bool budget;
    /* VK_EXT_external_memory_host is enabled (NULL: not): host memory
     * that two contexts both import carries copies between them. */
    PFN_vkGetMemoryHostPointerPropertiesEXT vkGetMemoryHostPointerPropertiesEXT;
    /* VK_KHR_external_memory_fd is enabled (NULL: not): device memory
     * that one context exports and another of the same GPU imports
     * carries copies between them. */
    PFN_vkGetMemoryFdKHR vkGetMemoryFdKHR;
    /* With it, the blocks of a context that shares its GPU may be made
     * exportable, for other contexts to import (not under
     * KILN_VULKAN_PEER=slots, nor where the driver exports only
     * dedicated allocations). */
    bool export_blocks;
    /* Called as an exportable block is freed, its pool's lock held:
     * imports.c's kiln_vulkan_imports_forget_block, which frees other
     * contexts' imports of it, set by context.c. blocks.c stands below
     * imports.c and reaches it only through this. */
    void (*exported_block_gone)(struct kiln_vulkan_context *ctx,
                                const struct kiln_vulkan_suballoc_block *block);
    /* Vulkan 1.1's, which says whether a buffer wants memory of its own
     * (VkMemoryDedicatedRequirements). */
    PFN_vkGetBufferMemoryRequirements2 vkGetBufferMemoryRequirements2;
    /* One pool of blocks per memory type, sub-allocated (blocks.c). */
    struct kiln_vulkan_pool *pools;
    /* A test's ceiling on the bytes of memory type test_type's blocks and
     * memory of its own (tests/vulkan/test_suballoc.c): past it a new one
     * fails as the driver's VK_ERROR_OUT_OF_DEVICE_MEMORY would, and so
     * does any in another type, where a request that found no room would
     * otherwise go next (a GPU has several device-local types; lavapipe
     * one). 0: none. Set before any allocation of the test's, read under
     * a pool's lock. */
    VkDeviceSize test_limit;
    uint32_t test_type;
  } memory;

  /* Counts the kernels whose pipelines were destroyed: a kept batch of
   * one launch (solo.c) recorded under another count may name a pipeline
   * whose handle a new one has since taken. */
  atomic_uint_fast64_t pipeline_epoch;

  /* Whether another live context shares this one's GPU and can import
   * its memory (imports.c keeps it, at each context's creation and
   * destruction): then new device buffers go to exportable blocks, which
   * a copy to that context reads directly. */
  atomic_bool exporting;

  /* The pipeline cache (pipeline_cache.c). The handle is created at setup
   * and destroyed at deinit; Vulkan synchronizes pipeline creation's use
   * of it itself. */
  struct {
    VkPipelineCache handle;
    /* The SHA-256 and size of what it was seeded with from the disk cache
     * (size 0: nothing), so that deinit writes it back only when it
     * changed. */
    kiln_hash seed;
    size_t seed_size;
  } pipeline_cache;

  /* The streams (stream.c), for context-wide waits: `lock` guards the
   * list; `busy` is atomic; `util` is set at setup and uses its own
   * stream lock. */
  struct {
    pthread_mutex_t lock;
    /* Every stream, the core's and the internal one. */
    kiln_vulkan_stream *list;
    /* Streams with work recorded or not yet seen complete: when none
     * has, no command can be touching any buffer, and a write to mapped
     * memory may bypass the queue. */
    atomic_int busy;
    /* Internal stream that zeroes new buffers that are not
     * host-visible. */
    kiln_vulkan_stream *util;
  } streams;

  /* The last staged kiln_buffer_write of each stream (submit.c): every
   * stream's next submission waits for them, so that a write is seen by
   * all work submitted after it returns, on any stream and queue (as the
   * host caller expects of a call that took its bytes), not only by work
   * in its own stream. `lock` guards the list; `epoch`, atomic, counts
   * updates, so that streams look only when something changed. */
  struct {
    pthread_mutex_t lock;
    kiln_vulkan_wait *list;
    size_t count, cap;
    atomic_uint_fast64_t epoch;
  } writes;

  /* KILN_DEBUG=reorder (reorder.c): `on` is set at setup; with it,
   * submissions are held in `held`, oldest first, instead of being made,
   * and `lock` guards them. */
  struct {
    bool on;
    pthread_mutex_t lock;
    struct kiln_vulkan_held *held;
    size_t count, cap;
  } reorder;
} kiln_vulkan_context;

/* ---- Memory (memory.c)
 * ------------------------------------------------------------ */

/* What memory is for: device buffers, or host-side staging and host
 * buffers. */
typedef enum kiln_vulkan_memory_use {
  KILN_VULKAN_MEMORY_DEVICE,
  KILN_VULKAN_MEMORY_HOST,
} kiln_vulkan_memory_use;


/* A VkBuffer and the memory bound to it, mapped when the memory allows. */
typedef struct kiln_vulkan_allocation {
  VkBuffer buffer;
  VkDeviceMemory memory;
  VkDeviceSize memory_offset; /* where the buffer lies in `memory` */
  /* Its range of a pool's block, or of a whole block of its own
   * (blocks.c); NULL for memory kiln imported, freed by itself. */
  struct kiln_vulkan_suballoc_range *range;
  unsigned char *map;      /* host-visible and host-coherent, else NULL */
  bool cached;             /* map is also HOST_CACHED: cheap to read */
  /* Taken for KILN_VULKAN_MEMORY_HOST: memory kiln stages through, or a
   * host buffer's, which kiln_context_pool_usage does not count as in
   * use by buffers. */
  bool host_use;
  VkDeviceAddress address; /* only with device_address */
  /* Usable on the transfer lane's queues too: kiln's own allocations, not
   * a caller's imported VkBuffer, whose sharing mode kiln does not know. */
  bool any_queue;
} kiln_vulkan_allocation;

/* A VkBuffer of `size` bytes in memory for `use`: a range of a block
 * shared with other buffers, or, where the driver asks for it or the
 * buffer is large, memory of its own. */
kiln_status kiln_vulkan_allocate(kiln_vulkan_context *ctx, VkDeviceSize size,
                                 kiln_vulkan_memory_use use,
                                 bool device_address,
                                 kiln_vulkan_allocation *out);
/* Destroys the VkBuffer and frees its memory at once: no work may still
 * use them. */
void kiln_vulkan_free(kiln_vulkan_context *ctx, kiln_vulkan_allocation *alloc);
/* Frees them once `timeline` reaches `value`, which the work that may
 * use them signals: until then their memory is not handed out again.
 * Needs an allocation of kiln_vulkan_allocate's; takes a reference on
 * `timeline` until then. */
void kiln_vulkan_free_after(kiln_vulkan_context *ctx,
                            kiln_vulkan_allocation *alloc,
                            kiln_vulkan_timeline *timeline, uint64_t value);
/* A VkBuffer over `size` bytes of host memory at `host` (both multiples of
 * the device's host_import_align), which stays the caller's and must
 * outlive the allocation; needs vkGetMemoryHostPointerPropertiesEXT. */
kiln_status kiln_vulkan_import_host(kiln_vulkan_context *ctx, void *host,
                                    VkDeviceSize size,
                                    kiln_vulkan_allocation *out);

/* What a buffer over memory shared by two contexts is for: copies in and
 * out, and the copy kernel's device addresses. */
#define KILN_VULKAN_SHARED_USAGE                                         \
  (VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT | \
   VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |                                  \
   VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT)
/* Whether memory `a` exports can be imported by `b`: both have
 * vkGetMemoryFdKHR and sit on one physical device under one driver. */
bool kiln_vulkan_can_share_memory(const kiln_vulkan_context *a,
                                  const kiln_vulkan_context *b);
/* `size` bytes of device memory that `from` allocates and exports, and
 * `to` imports (kiln_vulkan_can_share_memory(from, to)): a VkBuffer with a
 * device address over them in each, *on_from and *on_to; free each with
 * its context. */
kiln_status kiln_vulkan_share_memory(kiln_vulkan_context *from,
                                     kiln_vulkan_context *to, VkDeviceSize size,
                                     kiln_vulkan_allocation *on_from,
                                     kiln_vulkan_allocation *on_to);
/* Imports the block `in` lies in, exportable memory of `from`'s
 * (KILN_VULKAN_BLOCK_EXPORTED), into `to`
 * (kiln_vulkan_can_share_memory(from, to)): a VkBuffer with a device
 * address over the whole block, *out, which `to` frees; the memory lives
 * on until both have freed it. */
kiln_status kiln_vulkan_import_block(kiln_vulkan_context *from,
                                     const kiln_vulkan_allocation *in,
                                     kiln_vulkan_context *to,
                                     kiln_vulkan_allocation *out);

/* ---- Device memory (blocks.c)
 * ------------------------------------------------------------ */

/* The pools, one per memory type; released with the context, after
 * every allocation. */
kiln_status kiln_vulkan_memory_init(kiln_vulkan_context *ctx);
void kiln_vulkan_memory_deinit(kiln_vulkan_context *ctx);
/* What blocks.c notes of a block (kiln_vulkan_suballoc_block's flags):
 * allocated exportable, as an opaque fd (never as a dedicated allocation,
 * which only an identical buffer may import); its `serial` then names
 * it. */
#define KILN_VULKAN_BLOCK_EXPORTED 1u

/* Memory for a resource that needs `req`, of the type that serves `use`
 * best within the heaps' budgets: a range of a block, or with `own` (or
 * for a large request) a whole block of its own, allocated with `next`
 * chained; with `exported`, of the exportable pool, for a resource made
 * for external memory (VkExternalMemoryBufferCreateInfo, opaque fd).
 * Sets out->memory, memory_offset, range, map and cached, and
 * *out_type. When no heap has room, empty blocks kept and the ranges
 * whose work is done are given back to the driver, and the whole tried
 * once more: then KILN_ERROR_OUT_OF_DEVICE_MEMORY (of host memory for
 * `use` host) saying how much of which type and heap. */
kiln_status kiln_vulkan_memory_get(kiln_vulkan_context *ctx,
                                   const VkMemoryRequirements *req,
                                   kiln_vulkan_memory_use use, bool own,
                                   const void *next, bool exported,
                                   kiln_vulkan_allocation *out,
                                   uint32_t *out_type);
/* Gives alloc->range back at once; its buffer is destroyed already. */
void kiln_vulkan_memory_put(kiln_vulkan_context *ctx,
                            kiln_vulkan_allocation *alloc);
/* Gives alloc->range back, and destroys alloc->buffer, once `timeline`
 * reaches `value` (a reference on it is taken until then). */
void kiln_vulkan_memory_put_after(kiln_vulkan_context *ctx,
                                  kiln_vulkan_allocation *alloc,
                                  kiln_vulkan_timeline *timeline,
                                  uint64_t value);
/* What kiln_vulkan_memory_usage counts as used for `a` (of a buffer of
 * `size` bytes): its range, rounded up to the pool's alignment. */
size_t kiln_vulkan_counted_bytes(const kiln_vulkan_allocation *a,
                                 size_t size);
/* Every pool's blocks and, of them, the bytes taken by live buffers. */
void kiln_vulkan_memory_usage(kiln_vulkan_context *ctx, size_t *out_reserved,
                              size_t *out_used);
/* The empty blocks each pool keeps (UINT64_MAX: all; the default, one
 * block), applied now and whenever a block empties. */
void kiln_vulkan_memory_set_keep(kiln_vulkan_context *ctx, uint64_t bytes);
/* Takes back every range given back after `timeline`, whose stream is
 * done and going: its last reference then drops in the stream's teardown,
 * which may wait, never in an allocation's reclaim, which must not. */
void kiln_vulkan_memory_forget_timeline(kiln_vulkan_context *ctx,
                                       kiln_vulkan_timeline *timeline);
/* Takes back the ranges whose work is done, waiting for none, and gives
 * the driver empty blocks beyond `keep` bytes in each pool. */
void kiln_vulkan_memory_trim(kiln_vulkan_context *ctx, uint64_t keep);

/* ---- Pipeline cache (pipeline_cache.c)
 * -------------------------------------------- */

/* Creates ctx->pipeline_cache.handle, seeded from the disk cache when it holds a
 * copy for this device and driver. */
kiln_status kiln_vulkan_pipeline_cache_create(kiln_vulkan_context *ctx);
/* Writes the pipeline cache to the disk cache when it changed since it was
 * loaded. Best effort: a failure only costs the next run its compiles. */
void kiln_vulkan_pipeline_cache_save(kiln_vulkan_context *ctx);

/* ---- Context (context.c)
 * ------------------------------------------------------- */

kiln_status kiln_vulkan_context_init(kiln_context *ctx);
/* Whether the instance lets ctx be made, before any device is chosen or
 * imported: KILN_ERROR_UNAVAILABLE where validation was asked for and
 * cannot be had, KILN_ERROR_UNSUPPORTED where ctx's KILN_DEBUG modes
 * cannot go with the instance's (reorder under
 * KILN_VULKAN_VALIDATION=printf); in words. */
kiln_status kiln_vulkan_context_allowed(const kiln_context *ctx);
/* The rest of context_init once vc->phys, vc->device, the queue counts,
 * vc->owns_device and the enabled features are set: the device's entry
 * points, its queues, the pipeline cache, the locks and the internal
 * stream. On failure the device is destroyed if the context owns it. */
kiln_status kiln_vulkan_context_setup(kiln_vulkan_context *vc);
void kiln_vulkan_context_deinit(kiln_context *ctx);

KILN_BACKEND_CAST(kiln_vulkan_context, kiln_context, kiln_vulkan_context_cast)

/* ---- Streams (stream.c: their lives, context-wide waits; submit.c:
 * recording and submission; wait.c: the host's waits; timeline.c) ------- */

/* A stream records into one of two lanes: kernels, fills, timestamps and
 * graphs on a compute queue; copies that the context's transfer mode
 * sends there on a transfer queue, where a DMA engine runs them beside
 * other streams' kernels. A submission on one lane waits for the stream's
 * last submission on the other through the stream's timeline, so the
 * stream keeps its order. */
typedef enum kiln_vulkan_lane {
  KILN_VULKAN_LANE_COMPUTE,
  KILN_VULKAN_LANE_TRANSFER,
} kiln_vulkan_lane;

/* How deep KILN_TRACE=nvtx's labels nest (labels.c): a command, the
 * helpers it issues, theirs; deeper ones go unlabelled. */
#define KILN_VULKAN_LABEL_DEPTH 4

typedef struct kiln_vulkan_lane_state {
  kiln_vulkan_queue *queue; /* NULL: the stream has no such lane */
  VkCommandPool pool;
  VkCommandBuffer *spare; /* completed command buffers for reuse */
  size_t spare_count, spare_cap;
} kiln_vulkan_lane_state;

/* A launch as a kept batch records it (solo.c): the pipeline, the
 * context's pipeline_epoch then, the grid and the push constants. */
#define KILN_VULKAN_SOLO_PUSH 256
typedef struct kiln_vulkan_solo_key {
  VkPipeline pipeline;
  uint64_t epoch;
  uint32_t grid[3];
  uint32_t push_bytes;
  unsigned char push[KILN_VULKAN_SOLO_PUSH];
} kiln_vulkan_solo_key;

/* How many batches of one launch a stream keeps. */
#define KILN_VULKAN_SOLO_KEPT 4

typedef struct kiln_vulkan_solo {
  /* The launch that opened the batch being recorded, to be kept with it
   * if the batch holds only that launch when it is submitted. */
  kiln_vulkan_solo_key pending;
  bool pending_set;
  struct {
    kiln_vulkan_solo_key key;
    VkCommandBuffer cmd; /* VK_NULL_HANDLE: an empty place */
    uint64_t used;       /* `clock` at its last use */
  } kept[KILN_VULKAN_SOLO_KEPT];
  uint64_t clock;
} kiln_vulkan_solo;

/* A submitted command buffer, recycled when `value` is reached. */
typedef struct kiln_vulkan_batch {
  VkCommandBuffer cmd; /* VK_NULL_HANDLE for a submission of waits only */
  kiln_vulkan_lane lane;
  uint64_t value;
  kiln_vulkan_wait *waits; /* references released on completion */
  uint32_t wait_count;
} kiln_vulkan_batch;

/* A staging range in use until the stream reaches `value`. */
typedef struct kiln_vulkan_staging_span {
  size_t begin, end;
  uint64_t value; /* KILN_VULKAN_HELD while a read still copies out of it */
} kiln_vulkan_staging_span;

#define KILN_VULKAN_HELD UINT64_MAX

/* A ring of host-visible memory through which transfers to and from
 * memory that the host cannot map go, in chunks. */
typedef struct kiln_vulkan_staging {
  kiln_vulkan_allocation alloc; /* alloc.buffer is VK_NULL_HANDLE until used */
  size_t head;                  /* where the next range starts */
  kiln_vulkan_staging_span *spans; /* a FIFO, oldest first */
  size_t first, count, cap;
} kiln_vulkan_staging;

struct kiln_vulkan_stream {
  kiln_stream base;
  kiln_vulkan_context *ctx;
  kiln_vulkan_stream *prev, *next; /* the context's list */
  pthread_mutex_t lock;
  kiln_vulkan_lane_state lanes[2];
  kiln_vulkan_timeline *timeline;
  uint64_t submitted;   /* the value the last submission signals */
  uint64_t completed;   /* the last value seen reached */
  bool busy;            /* counted in ctx->streams.busy */
  uint64_t write_epoch; /* ctx->writes.epoch when last looked at */
  /* The batch being recorded, and its lane. */
  VkCommandBuffer cmd;
  kiln_vulkan_lane lane;
  /* The lane of the last submission: the next one on the other lane waits
   * for it. */
  kiln_vulkan_lane submitted_lane;
  uint32_t recorded;
  bool dirty; /* commands recorded since the last barrier, or a new batch */
  VkPipeline bound;
  /* Waits for the next submission (kiln_stream_wait_event). */
  kiln_vulkan_wait *waits;
  uint32_t wait_count, wait_cap;
  /* Submissions not yet seen complete, a FIFO. */
  kiln_vulkan_batch *inflight;
  size_t inflight_first, inflight_count, inflight_cap;
  kiln_vulkan_staging staging;
  /* KILN_TRACE=nvtx (labels.c): the ids of the labels begun in `cmd` and
   * not yet ended, outermost first; the innermost label of the transfer
   * batch being recorded, which its submission carries (0: none). */
  uint64_t label_open[KILN_VULKAN_LABEL_DEPTH];
  uint32_t label_depth;
  uint64_t label_queued;
  /* Batches of one launch kept to be submitted again (solo.c). */
  kiln_vulkan_solo solo;
};

KILN_BACKEND_CAST(kiln_vulkan_stream, kiln_stream, kiln_vulkan_stream_cast)

/* Sets the stream up on compute queue `queue` and, where the context has
 * a transfer lane, a queue of it. */
kiln_status kiln_vulkan_stream_setup(kiln_vulkan_context *ctx,
                                     kiln_vulkan_stream *st,
                                     kiln_vulkan_queue *queue);
void kiln_vulkan_stream_teardown(kiln_vulkan_stream *st);
kiln_status kiln_vulkan_stream_init(kiln_stream *s);
void kiln_vulkan_stream_deinit(kiln_stream *s);
kiln_status kiln_vulkan_stream_synchronize(kiln_stream *s,
                                           uint64_t timeout_ns);
kiln_status kiln_vulkan_context_synchronize(kiln_context *ctx,
                                            uint64_t timeout_ns);
/* Submits every stream's recorded work and waits until all of it is done,
 * without limit: before a deinit frees anything a command might still use
 * (the core has waited within its bound before any destroy). A failure is
 * logged as a warning naming `what`; the deinit goes on. */
void kiln_vulkan_quiesce_for_deinit(kiln_vulkan_context *ctx,
                                    const char *what);

void kiln_vulkan_stream_lock(kiln_vulkan_stream *st);
void kiln_vulkan_stream_unlock(kiln_vulkan_stream *st);

/* The functions below need the stream's lock. */

/* The open command buffer of the compute lane, for commands that need no
 * ordering barrier (timestamps). */
kiln_status kiln_vulkan_stream_open(kiln_vulkan_stream *st,
                                    VkCommandBuffer *out);
/* The command buffer to record one command into on `lane`, after the
 * barrier that orders it behind the stream's earlier commands. Follow
 * with kiln_vulkan_stream_recorded once it is recorded. */
kiln_status kiln_vulkan_stream_command(kiln_vulkan_stream *st,
                                       kiln_vulkan_lane lane,
                                       VkCommandBuffer *out);
/* The lane for a copy between `dst` and `src`, `host` when one of them is
 * host memory (staging, a host buffer): the transfer lane where the
 * context's mode sends such copies, both allocations allow it and the
 * stream has no compute work still to finish; never while a graph is
 * recorded (a graph is one compute submission). */
kiln_vulkan_lane kiln_vulkan_copy_lane(kiln_vulkan_stream *st,
                                       const kiln_vulkan_allocation *dst,
                                       const kiln_vulkan_allocation *src,
                                       bool host);
/* Counts the command and submits the batch when it is large enough, when
 * the stream has nothing in flight (looked at on the first command and on
 * every 16th), or at once on the transfer lane. */
kiln_status kiln_vulkan_stream_recorded(kiln_vulkan_stream *st);
/* Submits what was recorded, and any waits still pending. */
kiln_status kiln_vulkan_stream_flush(kiln_vulkan_stream *st);
/* Waits, as the context's sync policy says (`block` forces sleeping in
 * vkWaitSemaphores), until `semaphore` reaches `value`, for at most
 * timeout_ns (KILN_WAIT_FOREVER: no limit): KILN_ERROR_TIMEOUT naming
 * `what` ("the stream's work") then, and KILN_ERROR_DEVICE_LOST as soon as
 * the device is lost, also on drivers that report that to submissions
 * only (an empty submission to the first queue, when its lock is free). */
kiln_status kiln_vulkan_wait_semaphore(kiln_vulkan_context *vc,
                                       VkSemaphore semaphore, uint64_t value,
                                       const char *what, uint64_t timeout_ns,
                                       bool block);
/* Waits until the stream reaches `value`, submitting first if needed, for
 * at most timeout_ns: KILN_ERROR_TIMEOUT then. */
kiln_status kiln_vulkan_stream_wait_for(kiln_vulkan_stream *st,
                                        uint64_t value, uint64_t timeout_ns);
/* As kiln_vulkan_stream_wait_for, within the context's bound
 * (KILN_SYNC_TIMEOUT_MS; none by default). */
kiln_status kiln_vulkan_stream_wait(kiln_vulkan_stream *st, uint64_t value);
/* Submits and waits for everything, within the context's bound. */
kiln_status kiln_vulkan_stream_finish(kiln_vulkan_stream *st);
/* Notes which submissions completed and recycles what they held. */
kiln_status kiln_vulkan_stream_poll(kiln_vulkan_stream *st);
/* Submits the stream's staged writes and makes every stream's next
 * submission wait for them. */
kiln_status kiln_vulkan_stream_publish_writes(kiln_vulkan_stream *st);
/* Makes the next submission wait for the staged writes other streams
 * published since the stream last looked (flush does this itself). */
kiln_status kiln_vulkan_stream_collect_writes(kiln_vulkan_stream *st);
/* Forgets the published writes of `only`'s stream, or all with NULL. */
void kiln_vulkan_release_writes(kiln_vulkan_context *ctx,
                                kiln_vulkan_timeline *only);
/* Makes the next submission wait for `value` on `timeline`. */
kiln_status kiln_vulkan_stream_add_wait(kiln_vulkan_stream *st,
                                        kiln_vulkan_timeline *timeline,
                                        uint64_t value);
/* Drops the batch being recorded and the pending waits, unsubmitted. */
void kiln_vulkan_stream_discard(kiln_vulkan_stream *st);
/* Counts the stream in ctx->streams.busy, or no longer. */
void kiln_vulkan_stream_set_busy(kiln_vulkan_stream *st, bool busy);

/* A graph's recording (graph.c) on the core's building stream: commands
 * then go into `cmd` (begun by the caller), the first behind a barrier
 * and the others behind one only where graph.c asks (st->dirty), and no
 * batch is submitted; end_recording adds the barrier to the host and ends
 * `cmd`. */
void kiln_vulkan_stream_record_into(kiln_vulkan_stream *st,
                                    VkCommandBuffer cmd);
kiln_status kiln_vulkan_stream_end_recording(kiln_vulkan_stream *st);
/* Submits `cmd`, which the caller owns and keeps, with the stream's
 * pending waits, as the stream's next submission; flush first. */
kiln_status kiln_vulkan_stream_submit_external(kiln_vulkan_stream *st,
                                               VkCommandBuffer cmd);

/* ---- Kept batches of one launch (solo.c) ---------------------------------- */

/* The kept batch of exactly `key`'s launch, or VK_NULL_HANDLE; drops the
 * kept batches of an older pipeline_epoch on the way. The stream's lock
 * held, the stream idle. */
VkCommandBuffer kiln_vulkan_solo_find(kiln_vulkan_stream *st,
                                      const kiln_vulkan_solo_key *key);
/* Keeps `cmd`, the batch of st->solo.pending's launch just submitted, in
 * place of the least recently used (its command buffer back to the
 * compute lane's spares). The stream's lock held. */
void kiln_vulkan_solo_keep(kiln_vulkan_stream *st, VkCommandBuffer cmd);

/* A timeline at 0 with one reference. */
kiln_status kiln_vulkan_timeline_create(kiln_vulkan_context *ctx,
                                        kiln_vulkan_timeline **out);
void kiln_vulkan_timeline_release(kiln_vulkan_context *ctx,
                                  kiln_vulkan_timeline *timeline);

/* ---- KILN_TRACE=nvtx's debug labels (labels.c) ----------------------------- */

/* The labels table's ops: the commands the calling thread records until
 * the end are called `name` (the core's, valid until then), inside the
 * labels it had already. No lock: a stack per thread. */
void kiln_vulkan_stream_label_begin(kiln_stream *s, const char *name);
void kiln_vulkan_stream_label_end(kiln_stream *s);

/* The functions below need the stream's lock; submit.c calls them. */

/* A command goes into st->cmd next, before its barrier: on the compute
 * lane, ends the labels open there that the thread no longer has and
 * begins those it has; on the transfer lane, marks the batch for queue
 * labels. Nothing for a graph's build. */
void kiln_vulkan_label_command(kiln_vulkan_stream *st);
/* Whether the calling thread is issuing a labelled command (its batch
 * would carry the label: solo.c keeps no such batch). */
bool kiln_vulkan_label_issuing(void);
/* The stream's next submission is the thread's command's own (a transfer
 * batch, a graph's replay): marks it for queue labels. */
void kiln_vulkan_label_submission(kiln_vulkan_stream *st);
/* st->cmd is about to end (`recorded`: the labels still open are ended in
 * it) or is dropped (what is open or marked is forgotten). */
void kiln_vulkan_label_close(kiln_vulkan_stream *st, bool recorded);
/* Around the submission of the stream's batch to `queue`, its lock held:
 * queue labels for a submission marked by kiln_vulkan_label_submission,
 * while the thread that marked it submits it. begin answers how many it
 * began, which end then ends. */
uint32_t kiln_vulkan_label_queue_begin(kiln_vulkan_stream *st,
                                       VkQueue queue);
void kiln_vulkan_label_queue_end(VkQueue queue, uint32_t count);

/* ---- KILN_DEBUG=reorder (reorder.c) ---------------------------------------- */

/* Keeps a submission of `cmd` (may be VK_NULL_HANDLE) to `queue`, waiting
 * for the semaphores and values given and signalling `signal` with
 * `value`, instead of making it. */
kiln_status kiln_vulkan_hold(kiln_vulkan_context *ctx, kiln_vulkan_queue *queue,
                             VkCommandBuffer cmd, const VkSemaphore *waits,
                             const uint64_t *wait_values, uint32_t wait_count,
                             VkSemaphore signal, uint64_t value);
/* Makes the held submissions that signal `semaphore` up to `value`, after
 * the held ones they need: for a wait of the host. */
kiln_status kiln_vulkan_release(kiln_vulkan_context *ctx, VkSemaphore semaphore,
                                uint64_t value);
/* Makes every held submission, the stream held last first. */
kiln_status kiln_vulkan_release_all(kiln_vulkan_context *ctx);
/* Drops the held submissions that signal `semaphore` unmade: its stream is
 * destroyed after a wait for them failed. */
void kiln_vulkan_forget_held(kiln_vulkan_context *ctx, VkSemaphore semaphore);

/* ---- Staging (staging.c)
 * -------------------------------------------------------- */

/* The ring's size: large enough for transfers to run at full speed, small
 * enough to keep per stream; transfers go through it in chunks of a
 * quarter, so two chunks in flight always fit whatever the ring's
 * fragmentation. */
#define KILN_VULKAN_STAGING_BYTES ((size_t)32 << 20)
#define KILN_VULKAN_STAGING_CHUNK (KILN_VULKAN_STAGING_BYTES / 4)

/* The functions below need the stream's lock. */

/* Forgets staging ranges whose submissions completed. */
void kiln_vulkan_staging_retire(kiln_vulkan_stream *st);
void kiln_vulkan_staging_release(kiln_vulkan_stream *st);
/* Allocates the ring at its first use. */
kiln_status kiln_vulkan_staging_ready(kiln_vulkan_stream *st);
/* Takes n <= KILN_VULKAN_STAGING_CHUNK bytes of the ring at *out if they
 * are free, for the batch being recorded, or until released with `hold`;
 * *out_until is then 0. Otherwise *out_until is the stream's value at
 * which the oldest range frees up, KILN_VULKAN_HELD while a read still
 * holds it. */
kiln_status kiln_vulkan_staging_try(kiln_vulkan_stream *st, size_t n,
                                    bool hold, size_t *out,
                                    uint64_t *out_until);
/* Releases the range at `at` taken with `hold`. */
void kiln_vulkan_staging_unhold(kiln_vulkan_stream *st, size_t at);

/* ---- Buffers (buffer.c, host_buffer.c)
 * ------------------------------------------- */

typedef struct kiln_vulkan_buffer {
  kiln_buffer base;
  kiln_vulkan_allocation alloc;
  /* Where byte 0 of the buffer lies in alloc.buffer: 0 for kiln's own,
   * the caller's vk_offset for an imported one (interop.c). */
  VkDeviceSize offset;
} kiln_vulkan_buffer;

typedef struct kiln_vulkan_host_buffer {
  kiln_host_buffer base;
  kiln_vulkan_allocation alloc;
} kiln_vulkan_host_buffer;

KILN_BACKEND_CAST(kiln_vulkan_buffer, kiln_buffer, kiln_vulkan_buffer_cast)
KILN_BACKEND_CAST(kiln_vulkan_host_buffer, kiln_host_buffer,
                  kiln_vulkan_host_buffer_cast)

kiln_status kiln_vulkan_buffer_init(kiln_buffer *buf, uint32_t flags);
void kiln_vulkan_buffer_deinit(kiln_buffer *buf);

/* Copies `size` bytes out of mapped memory that the device wrote, once a
 * wait has ordered the write before this call (memory.c). */
void kiln_vulkan_copy_from_device(void *dst, const void *src, size_t size);

/* Memory in stream order (pool.c): the memory table's ops. */
kiln_status kiln_vulkan_pool_supported(kiln_context *ctx);
kiln_status kiln_vulkan_buffer_init_async(kiln_buffer *buf, kiln_stream *s,
                                          uint32_t flags);
kiln_status kiln_vulkan_buffer_deinit_async(kiln_buffer *buf, kiln_stream *s);
kiln_status kiln_vulkan_pool_trim(kiln_context *ctx, size_t keep_bytes);
kiln_status kiln_vulkan_pool_usage(kiln_context *ctx, size_t *out_reserved,
                                   size_t *out_used);
kiln_status kiln_vulkan_pool_set_keep(kiln_context *ctx, size_t keep_bytes);
size_t kiln_vulkan_buffer_pool_bytes(const kiln_buffer *buf);

kiln_status kiln_vulkan_buffer_write(kiln_stream *s, kiln_buffer *dst,
                                     size_t off, const void *src, size_t size);
kiln_status kiln_vulkan_buffer_read(kiln_stream *s, const kiln_buffer *src,
                                    size_t off, void *dst, size_t size);
kiln_status kiln_vulkan_buffer_copy(kiln_stream *s, kiln_buffer *dst,
                                    size_t dst_off, const kiln_buffer *src,
                                    size_t src_off, size_t size);
kiln_status kiln_vulkan_buffer_fill(kiln_stream *s, kiln_buffer *dst,
                                    size_t off, size_t size, uint64_t pattern,
                                    size_t pattern_size);
/* Records a copy between two VkBuffers on a locked stream's `lane`. */
kiln_status kiln_vulkan_record_copy(kiln_vulkan_stream *st,
                                    kiln_vulkan_lane lane, VkBuffer dst,
                                    size_t dst_off, VkBuffer src,
                                    size_t src_off, size_t size);

kiln_status kiln_vulkan_host_buffer_init(kiln_host_buffer *hb, uint32_t flags);
void kiln_vulkan_host_buffer_deinit(kiln_host_buffer *hb);
kiln_status kiln_vulkan_buffer_write_async(kiln_stream *s, kiln_buffer *dst,
                                           size_t dst_off,
                                           const kiln_host_buffer *src,
                                           size_t src_off, size_t size);
kiln_status kiln_vulkan_buffer_read_async(kiln_stream *s,
                                          const kiln_buffer *src,
                                          size_t src_off, kiln_host_buffer *dst,
                                          size_t dst_off, size_t size);
/* Copies between contexts (peer.c). */
kiln_status kiln_vulkan_buffer_copy_peer(kiln_stream *dst_s, kiln_buffer *dst,
                                         size_t dst_off, kiln_stream *src_s,
                                         const kiln_buffer *src,
                                         size_t src_off, size_t size);

/* Frees the memory (host or shared device memory) kept for copies between
 * `ctx` and other contexts, and the imports of its memory and into it
 * (kiln_vulkan_imports_forget), before its device goes (peer.c). */
void kiln_vulkan_peer_forget(kiln_vulkan_context *ctx);

/* ---- Exporting contexts and imports of their blocks (imports.c) --------- */

/* Whether a's blocks can be imported by b: a exports blocks at all
 * (memory.export_blocks) and b can import what a exports. */
bool kiln_vulkan_can_import(const kiln_vulkan_context *a,
                            const kiln_vulkan_context *b);
/* Counts ctx among the live contexts, and sets `exporting` on it and on
 * the others that share its GPU; at its creation. */
void kiln_vulkan_imports_join(kiln_vulkan_context *ctx);
/* Takes ctx out of the live contexts and frees every import of its blocks
 * and into its device, waiting for such frees other threads are making;
 * before its device goes. */
void kiln_vulkan_imports_forget(kiln_vulkan_context *ctx);
/* Frees other contexts' imports of `block`, ctx's, before it is freed:
 * called with its pool's lock held, through memory.exported_block_gone
 * (blocks.c). */
void kiln_vulkan_imports_forget_block(
    kiln_vulkan_context *ctx, const struct kiln_vulkan_suballoc_block *block);

/* An import of a source block into a destination context. */
typedef struct kiln_vulkan_import kiln_vulkan_import;
/* The block `in` lies in (exported: KILN_VULKAN_BLOCK_EXPORTED), imported
 * into `to`, made if not yet; give it back with
 * kiln_vulkan_import_give. */
kiln_status kiln_vulkan_import_take(kiln_vulkan_context *from,
                                    const kiln_vulkan_allocation *in,
                                    kiln_vulkan_context *to,
                                    kiln_vulkan_import **out);
/* The VkBuffer over the whole imported block, on the destination. */
const kiln_vulkan_allocation *
kiln_vulkan_import_allocation(const kiln_vulkan_import *imp);
void kiln_vulkan_import_give(kiln_vulkan_import *imp);
/* Whether copies between a and b go device to device: where the two
 * contexts share device memory (kiln_vulkan_can_share_memory). */
kiln_status kiln_vulkan_peer_direct(const kiln_context *a,
                                    const kiln_context *b, bool *out_direct);

/* ---- SPIR-V reflection (spirv.c, spirv_layout.c) and validation
 * (spirv_tools.c) ------------------------------------------------------- */

/* Specialization constant ids of the launch ABI. */
#define KILN_VULKAN_SPEC_SHARED_BYTES 3

typedef struct kiln_vulkan_spirv_entry_point {
  char *name;
  /* The push-constant block's extent: the largest member offset + size;
   * 0 when the entry point uses none. */
  uint32_t push_constant_bytes;
  /* The block's members as kernel parameters, for the core's checks
   * (malloc'd; 0 without a block). KILN_PARAMS_UNKNOWN when they are not
   * a list of 4- and 8-byte scalars and addresses where kiln packs them
   * (a matrix, a 16-bit member, padding between members). */
  size_t param_count;
  kiln_param_info *params;
  /* The block size compiled in, for dimensions not specialized. */
  uint32_t local_size[3];
  /* The SpecId that sets each block dimension, or -1. */
  int32_t local_size_spec_id[3];
} kiln_vulkan_spirv_entry_point;

/* One node of an array length as a function of constant_id 3: op is
 * KILN_VULKAN_EXPR_LITERAL (value), KILN_VULKAN_EXPR_SHARED (the
 * constant), or the OpSpecConstantOp opcode applied to nodes a and b. */
typedef struct kiln_vulkan_spec_expr {
  uint32_t op, a, b, value;
} kiln_vulkan_spec_expr;

#define KILN_VULKAN_EXPR_LITERAL 0u
#define KILN_VULKAN_EXPR_SHARED 1u
#define KILN_VULKAN_EXPR_UNKNOWN UINT32_MAX

typedef struct kiln_vulkan_spirv_info {
  kiln_vulkan_spirv_entry_point *entry_points; /* GLCompute ones only */
  size_t entry_point_count;
  bool has_shared_bytes_spec; /* SpecId 3 is declared */
  uint32_t shared_bytes_default;
  /* The arrays whose length follows from SpecId 3 (dynamic shared
   * memory): each one's length as node shared_roots[i] of shared_exprs, or
   * KILN_VULKAN_EXPR_UNKNOWN where kiln cannot evaluate it. */
  uint32_t *shared_roots;
  size_t shared_root_count;
  kiln_vulkan_spec_expr *shared_exprs;
  size_t shared_expr_count;
} kiln_vulkan_spirv_info;

/* Checks the image's header and structure and reflects what launches need.
 * KILN_ERROR_INVALID_IMAGE naming image `index` when malformed. */
kiln_status kiln_vulkan_spirv_reflect(const void *data, size_t size,
                                      size_t index,
                                      kiln_vulkan_spirv_info *out);
void kiln_vulkan_spirv_free(kiln_vulkan_spirv_info *info);
/* Whether every array sized by SpecId 3 has at least one element when the
 * constant is `bytes` (one kiln cannot evaluate: when bytes > 0). */
bool kiln_vulkan_spirv_shared_fits(const kiln_vulkan_spirv_info *info,
                                   uint32_t bytes);
/* Whether SPIRV-Tools' validator loads here (KILN_SPIRV_TOOLS_LIBRARY,
 * libSPIRV-Tools-shared.so, kiln's shaderc bundle); loads it if so. */
bool kiln_vulkan_spirv_validator_loads(void);
/* KILN_ERROR_UNSUPPORTED when SPIR-V image `index` declares a capability
 * whose device feature the context does not have enabled. */
kiln_status kiln_vulkan_check_capabilities(const kiln_vulkan_context *vc,
                                           const uint32_t *words, size_t count,
                                           size_t index);
/* Validates image `index` with SPIRV-Tools for the context's device, where
 * the library loads (KILN_SPIRV_VALIDATOR, KILN_SPIRV_TOOLS_LIBRARY):
 * KILN_ERROR_INVALID_IMAGE with its diagnostic when invalid. */
kiln_status kiln_vulkan_spirv_validate(const kiln_vulkan_context *vc,
                                       const uint32_t *words, size_t count,
                                       size_t index);
/* The compiler ops' image_checks: the validator and the device's options
 * it validates with, "" where images are not validated. */
void kiln_vulkan_image_checks(const kiln_context *ctx, char *out,
                              size_t size);

/* ---- Modules and kernels (module.c, launch.c)
 * --------------------------------------- */

typedef struct kiln_vulkan_image {
  VkShaderModule shader;
  kiln_vulkan_spirv_info info;
} kiln_vulkan_image;

typedef struct kiln_vulkan_module {
  kiln_module base;
  kiln_vulkan_image *images;
  size_t image_count;
} kiln_vulkan_module;

KILN_BACKEND_CAST(kiln_vulkan_module, kiln_module, kiln_vulkan_module_cast)

/* One specialization of a kernel. */
typedef struct kiln_vulkan_pipeline {
  uint32_t block[3];
  uint32_t shared_bytes;
  VkPipeline handle;
} kiln_vulkan_pipeline;

typedef struct kiln_vulkan_kernel {
  kiln_kernel base;
  VkShaderModule shader; /* the module's */
  const kiln_vulkan_spirv_entry_point *entry;
  const kiln_vulkan_spirv_info *info; /* of the entry's image */
  VkPipelineLayout layout;
  uint32_t push_bytes;  /* the push range: the block rounded up to 4 */
  pthread_mutex_t lock; /* guards pipelines */
  kiln_vulkan_pipeline *pipelines;
  size_t pipeline_count, pipeline_cap;
} kiln_vulkan_kernel;

KILN_BACKEND_CAST(kiln_vulkan_kernel, kiln_kernel, kiln_vulkan_kernel_cast)

kiln_status kiln_vulkan_module_init(kiln_module *m,
                                    const kiln_module_image *images,
                                    size_t count);
void kiln_vulkan_module_deinit(kiln_module *m);
kiln_status kiln_vulkan_kernel_init(kiln_kernel *k);
/* Creates the kernel's pipeline for its smallest block size, so that an
 * image the driver cannot compile fails when the kernel is looked up,
 * with KILN_ERROR_INVALID_IMAGE, not at its first launch. */
kiln_status kiln_vulkan_kernel_precompile(kiln_vulkan_context *vc,
                                          kiln_vulkan_kernel *vk);
void kiln_vulkan_kernel_deinit(kiln_kernel *k);
kiln_status kiln_vulkan_launch(kiln_stream *s, kiln_kernel *k,
                               const kiln_launch_config *config,
                               const kiln_packed_args *args);
/* attributes.c */
kiln_status kiln_vulkan_kernel_attributes(kiln_kernel *k,
                                          kiln_kernel_attributes *out);
kiln_status kiln_vulkan_suggest_block(kiln_kernel *k,
                                      size_t dynamic_shared_bytes,
                                      uint32_t *out_block,
                                      uint32_t *out_min_grid);

/* ---- Events (event.c)
 * ---------------------------------------------------------------- */

typedef struct kiln_vulkan_event {
  kiln_event base;
  VkQueryPool queries; /* one timestamp; VK_NULL_HANDLE without timers */
  kiln_vulkan_timeline *timeline; /* of the stream it was last recorded on */
  uint64_t value;
} kiln_vulkan_event;

KILN_BACKEND_CAST(kiln_vulkan_event, kiln_event, kiln_vulkan_event_cast)

kiln_status kiln_vulkan_event_init(kiln_event *e);
void kiln_vulkan_event_deinit(kiln_event *e);
kiln_status kiln_vulkan_event_record(kiln_event *e, kiln_stream *s);
kiln_status kiln_vulkan_stream_wait_event(kiln_stream *s, kiln_event *e);
kiln_status kiln_vulkan_event_synchronize(kiln_event *e, uint64_t timeout_ns);
kiln_status kiln_vulkan_event_query(kiln_event *e);
kiln_status kiln_vulkan_event_elapsed_ms(kiln_event *start, kiln_event *end,
                                         float *out_ms);

/* ---- Compiler (compiler.c)
 * ------------------------------------------------------- */

/* GLSL compute shaders through shaderc, loaded at run time: the ops'
 * compiler_load, compile_target and compile (see core/backend.h). */
kiln_status kiln_vulkan_compiler_load(char *description,
                                      size_t description_size);
kiln_status kiln_vulkan_compile_target(const kiln_context *ctx, char *target,
                                       size_t target_size);
kiln_status kiln_vulkan_compile(const kiln_compile_job *job,
                                kiln_compiled *out);

/* A copy of the SPIR-V `words` (native byte order) in which every
 * OpEntryPoint called `from` is called `to`, into *out_words (malloc'd)
 * and *out_count. KILN_ERROR_NOT_FOUND when no entry point is called
 * `from`, KILN_ERROR_INVALID_IMAGE when the words are not SPIR-V
 * (spirv_rename.c). */
kiln_status kiln_vulkan_spirv_rename_entry_point(const uint32_t *words,
                                                 size_t count,
                                                 const char *from,
                                                 const char *to,
                                                 uint32_t **out_words,
                                                 size_t *out_count);

/* ---- Graphs (graph.c) ------------------------------------------------------ */

typedef struct kiln_vulkan_graph {
  kiln_graph base;
  VkCommandPool pool;
  VkCommandBuffer cmd;
  kiln_event **waits, **records;
  size_t wait_count, record_count, event_cap;
  /* The last replay on each timeline (a reference each), for waits. */
  kiln_vulkan_wait *replays;
  size_t replay_count, replay_cap;
  /* Under KILN_VULKAN_VALIDATION=printf: its kernels' names, "a, b", for
   * the text a replay prints; else NULL. */
  char *printing;
} kiln_vulkan_graph;

kiln_status kiln_vulkan_graph_begin(kiln_graph *g, kiln_stream *s);
kiln_status kiln_vulkan_graph_end(kiln_graph *g, kiln_stream *s, bool keep);
kiln_status kiln_vulkan_graph_level(kiln_graph *g, kiln_stream *s);
kiln_status kiln_vulkan_graph_launch(kiln_graph *g, kiln_stream *s);
void kiln_vulkan_graph_deinit(kiln_graph *g);
/* Under printf: notes that the graph being built launches `kernel`. */
kiln_status kiln_vulkan_graph_note_kernel(kiln_graph *g, const char *kernel);
/* An event record or wait issued on the stream building a graph. */
kiln_status kiln_vulkan_graph_note_event(kiln_stream *s, kiln_event *e,
                                         bool record);

/* ---- Native handles (interop.c) -------------------------------------------- */

kiln_status kiln_vulkan_context_native(kiln_context *ctx,
                                       kiln_native_context *out);
kiln_status kiln_vulkan_context_import_device(const kiln_native_context *native,
                                        size_t *out_index);
kiln_status kiln_vulkan_context_import(kiln_context *ctx,
                                const kiln_native_context *native, bool adopt);
kiln_status kiln_vulkan_buffer_native(const kiln_buffer *buf,
                                      kiln_native_buffer *out);
kiln_status kiln_vulkan_buffer_import(kiln_buffer *buf,
                                      const kiln_native_buffer *native,
                                      bool adopt);
kiln_status kiln_vulkan_stream_import(kiln_stream *s,
                                const kiln_native_stream *native, bool adopt);
kiln_status kiln_vulkan_stream_native(kiln_stream *s, kiln_native_stream *out);
kiln_status kiln_vulkan_stream_wait_native(kiln_stream *s, uint64_t handle,
                                           uint64_t value);

#endif /* KILN_VULKAN_VULKAN_H */
