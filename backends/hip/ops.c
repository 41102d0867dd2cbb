/* The HIP backend's ops table. */
#include "backends/hip/hip.h"

#if defined(KILN_HIP_HAVE_BUILTINS)
/* shaders/hip: the built-in kernels' offload bundle, embedded by
 * tools/kiln-embed. */
extern const kiln_module_image kiln_hip_builtin_images[];
#define KILN_HIP_BUILTIN_IMAGES kiln_hip_builtin_images
#else
#define KILN_HIP_BUILTIN_IMAGES NULL
#endif

/* The abilities a backend may lack, each whole (core/backend.h, "The ops
 * table"). */
static const kiln_host_buffer_ops hip_host_buffers = {
    .host_buffer_size = sizeof(kiln_host_buffer),
    .host_buffer_init = kiln_hip_host_buffer_init,
    .host_buffer_deinit = kiln_hip_host_buffer_deinit,
};

static const kiln_async_transfer_ops hip_async_transfers = {
    .buffer_write_async = kiln_hip_buffer_write_async,
    .buffer_read_async = kiln_hip_buffer_read_async,
};

static const kiln_fill_ops hip_fills = {
    .fill_sizes = 1 | 2 | 4,
    .buffer_fill = kiln_hip_buffer_fill,
};

static const kiln_peer_ops hip_peers = {
    .buffer_copy_peer = kiln_hip_buffer_copy_peer,
    .peer_direct = kiln_hip_peer_direct,
};

static const kiln_event_wait_ops hip_event_waits = {
    .stream_wait_event = kiln_hip_stream_wait_event,
};

static const kiln_timing_ops hip_timing = {
    .event_elapsed_ms = kiln_hip_event_elapsed_ms,
};

static const kiln_limit_ops hip_limits = {
    .context_set_limit = kiln_hip_context_set_limit,
    .context_get_limit = kiln_hip_context_get_limit,
};

static const kiln_global_ops hip_globals = {
    .module_global = kiln_hip_module_global,
};

static const kiln_interop_ops hip_interop = {
    .context_native = kiln_hip_context_native,
    .context_import_device = kiln_hip_context_import_device,
    .context_import = kiln_hip_context_import,
    .buffer_native = kiln_hip_buffer_native,
    .stream_native = kiln_hip_stream_native,
    .stream_wait_native = kiln_hip_stream_wait_native,
    .buffer_import = kiln_hip_buffer_import,
    .stream_import = kiln_hip_stream_import,
};

static const kiln_graph_ops hip_graphs = {
    .graph_size = sizeof(kiln_hip_graph),
    .graph_begin = kiln_hip_graph_begin,
    .graph_end = kiln_hip_graph_end,
    .graph_launch = kiln_hip_graph_launch,
    .graph_deinit = kiln_hip_graph_deinit,
    .graph_mark = kiln_hip_graph_mark,
    .graph_wait_mark = kiln_hip_graph_wait_mark,
};

static const kiln_graph_update_ops hip_graph_updates = {
    .graph_launched = kiln_hip_graph_launched,
    .graph_update = kiln_hip_graph_update,
};

static const kiln_compiler_ops hip_compiler = {
    .languages = {KILN_SOURCE_HIP, KILN_SOURCE_CUDA, 0},
    .compiler_load = kiln_hip_compiler_load,
    .compile_target = kiln_hip_compile_target,
    .compile = kiln_hip_compile,
};

static const kiln_memory_ops hip_memory = {
    .supported = kiln_hip_pool_supported,
    .buffer_init_async = kiln_hip_buffer_init_async,
    .buffer_deinit_async = kiln_hip_buffer_deinit_async,
    .trim = kiln_hip_pool_trim,
    .usage = kiln_hip_pool_usage,
    .set_keep = kiln_hip_pool_set_keep,
    .buffer_pool_bytes = kiln_hip_buffer_pool_bytes,
};

static const kiln_kernel_info_ops hip_kernel_info = {
    .kernel_attributes = kiln_hip_kernel_attributes,
    .suggest_block = kiln_hip_suggest_block,
};

const kiln_backend_ops kiln_hip_ops = {
    .kind = KILN_BACKEND_HIP,
    .name = "hip",

    .probe = kiln_hip_probe,
    .device_count = kiln_hip_device_count,
    .device_properties = kiln_hip_device_properties,

    .context_size = sizeof(kiln_hip_context),
    .buffer_size = sizeof(kiln_buffer),
    .module_size = sizeof(kiln_hip_module),
    .kernel_size = sizeof(kiln_hip_kernel),
    .stream_size = sizeof(kiln_hip_stream),
    .event_size = sizeof(kiln_hip_event),

    .context_init = kiln_hip_context_init,
    .context_deinit = kiln_hip_context_deinit,
    .context_synchronize = kiln_hip_context_synchronize,

    .buffer_init = kiln_hip_buffer_init,
    .buffer_deinit = kiln_hip_buffer_deinit,

    .buffer_write = kiln_hip_buffer_write,
    .buffer_read = kiln_hip_buffer_read,
    .buffer_copy = kiln_hip_buffer_copy,

    .image_formats = 1u << KILN_IMAGE_HIP_CODE_OBJECT,
    .module_init = kiln_hip_module_init,
    .module_deinit = kiln_hip_module_deinit,
    .kernel_init = kiln_hip_kernel_init,
    .kernel_deinit = kiln_hip_kernel_deinit,
    .launch = kiln_hip_launch,

    .stream_init = kiln_hip_stream_init,
    .stream_deinit = kiln_hip_stream_deinit,
    .stream_synchronize = kiln_hip_stream_synchronize,

    .event_init = kiln_hip_event_init,
    .event_deinit = kiln_hip_event_deinit,
    .event_record = kiln_hip_event_record,
    .event_synchronize = kiln_hip_event_synchronize,
    .event_query = kiln_hip_event_query,

    .host_buffers = &hip_host_buffers,
    .async_transfers = &hip_async_transfers,
    .fills = &hip_fills,
    .peers = &hip_peers,
    .event_waits = &hip_event_waits,
    .timing = &hip_timing,
    .kernel_info = &hip_kernel_info,
    .limits = &hip_limits,
    .globals = &hip_globals,
    .interop = &hip_interop,
    .graphs = &hip_graphs,
    .graph_updates = &hip_graph_updates,
    .compiler = &hip_compiler,
    .memory = &hip_memory,

    .builtin_images = KILN_HIP_BUILTIN_IMAGES,
};
