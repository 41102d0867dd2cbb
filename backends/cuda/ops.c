/* The CUDA backend's ops table, the one thing the core sees of it. */
#include "backends/cuda/cuda.h"

#if defined(KILN_CUDA_HAVE_BUILTINS)
/* shaders/cuda: the built-in kernels' fatbin, embedded by tools/kiln-embed. */
extern const kiln_module_image kiln_cuda_builtin_images[];
#define KILN_CUDA_BUILTINS kiln_cuda_builtin_images
#else
#define KILN_CUDA_BUILTINS NULL
#endif
#if defined(KILN_CUDA_HAVE_MATRIX_BUILTINS)
/* shaders/cuda: the kernels only Hopper's sm_90a target has (wgmma). */
extern const kiln_module_image kiln_cuda_builtin_matrix_images[];
#define KILN_CUDA_MATRIX_BUILTINS kiln_cuda_builtin_matrix_images
#else
#define KILN_CUDA_MATRIX_BUILTINS NULL
#endif

/* The abilities a backend may lack, each whole (core/backend.h, "The ops
 * table"). */
static const kiln_host_buffer_ops cuda_host_buffers = {
    .host_buffer_size = sizeof(kiln_host_buffer),
    .host_buffer_init = kiln_cuda_host_buffer_init,
    .host_buffer_deinit = kiln_cuda_host_buffer_deinit,
};

static const kiln_async_transfer_ops cuda_async_transfers = {
    .buffer_write_async = kiln_cuda_buffer_write_async,
    .buffer_read_async = kiln_cuda_buffer_read_async,
};

static const kiln_fill_ops cuda_fills = {
    .fill_sizes = 1 | 2 | 4,
    .buffer_fill = kiln_cuda_buffer_fill,
};

static const kiln_peer_ops cuda_peers = {
    .buffer_copy_peer = kiln_cuda_buffer_copy_peer,
    .peer_direct = kiln_cuda_peer_direct,
};

static const kiln_event_wait_ops cuda_event_waits = {
    .stream_wait_event = kiln_cuda_stream_wait_event,
};

static const kiln_timing_ops cuda_timing = {
    .event_elapsed_ms = kiln_cuda_event_elapsed_ms,
};

static const kiln_limit_ops cuda_limits = {
    .context_set_limit = kiln_cuda_context_set_limit,
    .context_get_limit = kiln_cuda_context_get_limit,
};

static const kiln_global_ops cuda_globals = {
    .module_global = kiln_cuda_module_global,
};

static const kiln_interop_ops cuda_interop = {
    .context_native = kiln_cuda_context_native,
    .context_import_device = kiln_cuda_context_import_device,
    .context_import = kiln_cuda_context_import,
    .buffer_native = kiln_cuda_buffer_native,
    .stream_native = kiln_cuda_stream_native,
    .stream_wait_native = kiln_cuda_stream_wait_native,
    .buffer_import = kiln_cuda_buffer_import,
    .stream_import = kiln_cuda_stream_import,
};

static const kiln_graph_ops cuda_graphs = {
    .graph_size = sizeof(kiln_cuda_graph),
    .graph_begin = kiln_cuda_graph_begin,
    .graph_end = kiln_cuda_graph_end,
    .graph_launch = kiln_cuda_graph_launch,
    .graph_deinit = kiln_cuda_graph_deinit,
    .graph_mark = kiln_cuda_graph_mark,
    .graph_wait_mark = kiln_cuda_graph_wait_mark,
};

static const kiln_graph_update_ops cuda_graph_updates = {
    .graph_launched = kiln_cuda_graph_launched,
    .graph_update = kiln_cuda_graph_update,
};

static const kiln_compiler_ops cuda_compiler = {
    .languages = {KILN_SOURCE_CUDA, 0},
    .compiler_load = kiln_cuda_compiler_load,
    .compile_target = kiln_cuda_compile_target,
    .compile = kiln_cuda_compile,
};

static const kiln_memory_ops cuda_memory = {
    .supported = kiln_cuda_pool_supported,
    .buffer_init_async = kiln_cuda_buffer_init_async,
    .buffer_deinit_async = kiln_cuda_buffer_deinit_async,
    .trim = kiln_cuda_pool_trim,
    .usage = kiln_cuda_pool_usage,
    .set_keep = kiln_cuda_pool_set_keep,
    .buffer_pool_bytes = kiln_cuda_buffer_pool_bytes,
};

static const kiln_kernel_info_ops cuda_kernel_info = {
    .kernel_attributes = kiln_cuda_kernel_attributes,
    .suggest_block = kiln_cuda_suggest_block,
};

const kiln_backend_ops kiln_cuda_ops = {
    .kind = KILN_BACKEND_CUDA,
    .name = "cuda",

    .probe = kiln_cuda_probe,
    .device_count = kiln_cuda_device_count,
    .device_properties = kiln_cuda_device_properties,

    .context_size = sizeof(kiln_cuda_context),
    .buffer_size = sizeof(kiln_buffer),
    .module_size = sizeof(kiln_cuda_module),
    .kernel_size = sizeof(kiln_cuda_kernel),
    .stream_size = sizeof(kiln_cuda_stream),
    .event_size = sizeof(kiln_cuda_event),

    .context_init = kiln_cuda_context_init,
    .context_deinit = kiln_cuda_context_deinit,
    .context_synchronize = kiln_cuda_context_synchronize,

    .buffer_init = kiln_cuda_buffer_init,
    .buffer_deinit = kiln_cuda_buffer_deinit,

    .buffer_write = kiln_cuda_buffer_write,
    .buffer_read = kiln_cuda_buffer_read,
    .buffer_copy = kiln_cuda_buffer_copy,

    .image_formats = (1u << KILN_IMAGE_PTX) | (1u << KILN_IMAGE_CUBIN) |
                     (1u << KILN_IMAGE_FATBIN),
    .module_init = kiln_cuda_module_init,
    .module_deinit = kiln_cuda_module_deinit,
    .kernel_init = kiln_cuda_kernel_init,
    .kernel_deinit = kiln_cuda_kernel_deinit,
    .launch = kiln_cuda_launch,

    .stream_init = kiln_cuda_stream_init,
    .stream_deinit = kiln_cuda_stream_deinit,
    .stream_synchronize = kiln_cuda_stream_synchronize,

    .event_init = kiln_cuda_event_init,
    .event_deinit = kiln_cuda_event_deinit,
    .event_record = kiln_cuda_event_record,
    .event_synchronize = kiln_cuda_event_synchronize,
    .event_query = kiln_cuda_event_query,

    .host_buffers = &cuda_host_buffers,
    .async_transfers = &cuda_async_transfers,
    .fills = &cuda_fills,
    .peers = &cuda_peers,
    .event_waits = &cuda_event_waits,
    .timing = &cuda_timing,
    .kernel_info = &cuda_kernel_info,
    .limits = &cuda_limits,
    .globals = &cuda_globals,
    .interop = &cuda_interop,
    .graphs = &cuda_graphs,
    .graph_updates = &cuda_graph_updates,
    .compiler = &cuda_compiler,
    .memory = &cuda_memory,

    .builtin_images = KILN_CUDA_BUILTINS,
    .builtin_matrix_images = KILN_CUDA_MATRIX_BUILTINS,
};
