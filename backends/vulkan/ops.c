/* The Vulkan backend's operations table. */
#include "backends/vulkan/vulkan.h"

#ifdef KILN_VULKAN_HAVE_BUILTINS
extern const kiln_module_image kiln_vulkan_builtin_images[];
extern const kiln_module_image kiln_vulkan_builtin_matrix_images[];
#endif

/* The abilities a backend may lack, each whole (core/backend.h, "The ops
 * table"). */
static const kiln_host_buffer_ops vulkan_host_buffers = {
    .host_buffer_size = sizeof(kiln_vulkan_host_buffer),
    .host_buffer_init = kiln_vulkan_host_buffer_init,
    .host_buffer_deinit = kiln_vulkan_host_buffer_deinit,
};

static const kiln_async_transfer_ops vulkan_async_transfers = {
    .buffer_write_async = kiln_vulkan_buffer_write_async,
    .buffer_read_async = kiln_vulkan_buffer_read_async,
};

static const kiln_fill_ops vulkan_fills = {
    .fill_sizes = 4,
    .buffer_fill = kiln_vulkan_buffer_fill,
};

static const kiln_peer_ops vulkan_peers = {
    .buffer_copy_peer = kiln_vulkan_buffer_copy_peer,
    .peer_copy_waits = true,
    .peer_direct = kiln_vulkan_peer_direct,
};

static const kiln_event_wait_ops vulkan_event_waits = {
    .stream_wait_event = kiln_vulkan_stream_wait_event,
};

static const kiln_timing_ops vulkan_timing = {
    .event_elapsed_ms = kiln_vulkan_event_elapsed_ms,
};

static const kiln_interop_ops vulkan_interop = {
    .context_native = kiln_vulkan_context_native,
    .context_import_device = kiln_vulkan_context_import_device,
    .context_import = kiln_vulkan_context_import,
    .buffer_native = kiln_vulkan_buffer_native,
    .stream_native = kiln_vulkan_stream_native,
    .stream_wait_native = kiln_vulkan_stream_wait_native,
    .buffer_import = kiln_vulkan_buffer_import,
    .stream_import = kiln_vulkan_stream_import,
};

static const kiln_graph_ops vulkan_graphs = {
    .graph_size = sizeof(kiln_vulkan_graph),
    .graph_begin = kiln_vulkan_graph_begin,
    .graph_end = kiln_vulkan_graph_end,
    .graph_launch = kiln_vulkan_graph_launch,
    .graph_deinit = kiln_vulkan_graph_deinit,
    .graph_level = kiln_vulkan_graph_level,
};

static const kiln_memory_ops vulkan_memory = {
    .supported = kiln_vulkan_pool_supported,
    .buffer_init_async = kiln_vulkan_buffer_init_async,
    .buffer_deinit_async = kiln_vulkan_buffer_deinit_async,
    .trim = kiln_vulkan_pool_trim,
    .usage = kiln_vulkan_pool_usage,
    .set_keep = kiln_vulkan_pool_set_keep,
    .buffer_pool_bytes = kiln_vulkan_buffer_pool_bytes,
};

static const kiln_compiler_ops vulkan_compiler = {
    .languages = {KILN_SOURCE_GLSL, 0},
    .compiler_load = kiln_vulkan_compiler_load,
    .compile_target = kiln_vulkan_compile_target,
    .compile = kiln_vulkan_compile,
    .image_checks = kiln_vulkan_image_checks,
};

static const kiln_label_ops vulkan_labels = {
    .stream_label_begin = kiln_vulkan_stream_label_begin,
    .stream_label_end = kiln_vulkan_stream_label_end,
};

static const kiln_kernel_info_ops vulkan_kernel_info = {
    .kernel_attributes = kiln_vulkan_kernel_attributes,
    .suggest_block = kiln_vulkan_suggest_block,
};

const kiln_backend_ops kiln_vulkan_ops = {
    .kind = KILN_BACKEND_VULKAN,
    .name = "vulkan",
    .probe = kiln_vulkan_probe,
    .device_count = kiln_vulkan_device_count,
    .device_properties = kiln_vulkan_device_properties,

    .context_size = sizeof(kiln_vulkan_context),
    .buffer_size = sizeof(kiln_vulkan_buffer),
    .module_size = sizeof(kiln_vulkan_module),
    .kernel_size = sizeof(kiln_vulkan_kernel),
    .stream_size = sizeof(kiln_vulkan_stream),
    .event_size = sizeof(kiln_vulkan_event),

    .context_init = kiln_vulkan_context_init,
    .context_deinit = kiln_vulkan_context_deinit,
    .context_synchronize = kiln_vulkan_context_synchronize,

    .buffer_init = kiln_vulkan_buffer_init,
    .buffer_deinit = kiln_vulkan_buffer_deinit,

    .buffer_write = kiln_vulkan_buffer_write,
    .buffer_read = kiln_vulkan_buffer_read,
    .buffer_copy = kiln_vulkan_buffer_copy,
    /* vkCmdCopyBuffer between device buffers reaches 0.28 of the H100's
     * memory bandwidth on either NVIDIA queue (docs/performance.md). */
    .copy_kernel_bytes = (size_t)256 << 10,

    .image_formats = 1u << KILN_IMAGE_SPIRV,
    .module_init = kiln_vulkan_module_init,
    .module_deinit = kiln_vulkan_module_deinit,
    .kernel_init = kiln_vulkan_kernel_init,
    .kernel_deinit = kiln_vulkan_kernel_deinit,
    .launch = kiln_vulkan_launch,

    .stream_init = kiln_vulkan_stream_init,
    .stream_deinit = kiln_vulkan_stream_deinit,
    .stream_synchronize = kiln_vulkan_stream_synchronize,

    .event_init = kiln_vulkan_event_init,
    .event_deinit = kiln_vulkan_event_deinit,
    .event_record = kiln_vulkan_event_record,
    .event_synchronize = kiln_vulkan_event_synchronize,
    .event_query = kiln_vulkan_event_query,

    /* No limits (its kernels have no device-side stack, printf or malloc
     * for kiln to size), no globals (GLSL has no variables the host can
     * reach) and no graph_updates (the core builds a graph again to change
     * a launch's arguments). */
    .host_buffers = &vulkan_host_buffers,
    .async_transfers = &vulkan_async_transfers,
    .fills = &vulkan_fills,
    .peers = &vulkan_peers,
    .event_waits = &vulkan_event_waits,
    .timing = &vulkan_timing,
    .kernel_info = &vulkan_kernel_info,
    .interop = &vulkan_interop,
    .graphs = &vulkan_graphs,
    .compiler = &vulkan_compiler,
    .memory = &vulkan_memory,
    .labels = &vulkan_labels,

#ifdef KILN_VULKAN_HAVE_BUILTINS
    .builtin_images = kiln_vulkan_builtin_images,
    .builtin_matrix_images = kiln_vulkan_builtin_matrix_images,
#else
    .builtin_images = NULL,
    .builtin_matrix_images = NULL,
#endif
};
