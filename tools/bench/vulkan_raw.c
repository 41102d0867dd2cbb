/* The raw Vulkan comparator: kiln's VkDevice driven directly. Its entry
 * points come from the vkGetInstanceProcAddr kiln exports, so that they
 * reach the same loader (KILN_VULKAN_LIBRARY included), and the same
 * validation layer, as kiln's own calls; its pipeline is built as kiln
 * builds a kernel's (backends/vulkan/module.c, launch.c), so the two
 * dispatch the same thing. */
#include "vulkan_raw.h"

#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "bench.h"

/* How long kiln's AUTO sync policy spins, and polls yielding the core,
 * before it sleeps (kiln.h). */
#define AUTO_SPIN_S 100e-6
#define AUTO_YIELD_S 1e-3

/* The device entry points used, without their "vk". */
#define VULKAN_RAW_ENTRY_POINTS(X) \
  X(CreateShaderModule)            \
  X(DestroyShaderModule)           \
  X(CreatePipelineLayout)          \
  X(DestroyPipelineLayout)         \
  X(CreateComputePipelines)        \
  X(DestroyPipeline)               \
  X(CreateCommandPool)             \
  X(DestroyCommandPool)            \
  X(AllocateCommandBuffers)        \
  X(BeginCommandBuffer)            \
  X(EndCommandBuffer)              \
  X(CmdBindPipeline)               \
  X(CmdPipelineBarrier)            \
  X(CmdPushConstants)              \
  X(CmdDispatch)                   \
  X(CreateSemaphore)               \
  X(DestroySemaphore)              \
  X(QueueSubmit)                   \
  X(GetSemaphoreCounterValue)      \
  X(WaitSemaphores)

typedef struct vulkan_api {
#define VULKAN_RAW_SLOT(name) PFN_vk##name name;
  VULKAN_RAW_ENTRY_POINTS(VULKAN_RAW_SLOT)
#undef VULKAN_RAW_SLOT
} vulkan_api;

struct vulkan_raw {
  vulkan_api vk;
  VkDevice device;
  VkQueue queue;
  kiln_sync_policy policy; /* kiln's context's, for the host's wait */
  VkShaderModule shader;
  VkPipelineLayout layout;
  VkPipeline pipeline;
  VkCommandPool pool;
  VkCommandBuffer cmd[VULKAN_RAW_ORDERS];
  /* kiln's stream batch (vulkan_raw_batch_run): recorded once, in `pool`;
   * and recorded at each run into a buffer its begin resets, of a pool of
   * its own made for that. */
  VkCommandBuffer batch;
  VkCommandBuffer tail; /* VULKAN_RAW_BATCH_TAIL's, recorded once too */
  VkCommandPool again_pool;
  VkCommandBuffer again;
  VkSemaphore timeline;   /* signalled once per submission */
  uint64_t submitted;     /* the value the last submission signals */
  const char *failed;     /* the entry point that failed last */
  /* What every command buffer records (record). */
  unsigned level, dispatches;
  uint32_t grid_x, arg_bytes;
  unsigned char args[128];
};

/* Calls vk<name>`args`; if it fails, notes the entry point in r->failed
 * and returns its VkResult from the calling function. */
#define VK_TRY(r, name, args)             \
  do {                                    \
    VkResult vk_try_ = (r)->vk.name args; \
    if (vk_try_ != VK_SUCCESS) {          \
      (r)->failed = "vk" #name;           \
      return vk_try_;                     \
    }                                     \
  } while (0)

static int load_entry_points(vulkan_raw *r, const kiln_native_context *n,
                             char *why, size_t why_size) {
  PFN_vkGetInstanceProcAddr gipa =
      (PFN_vkGetInstanceProcAddr)n->vk_get_instance_proc_addr;
  PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(
      (VkInstance)n->vk_instance, "vkGetDeviceProcAddr");
  if (gdpa == NULL) {
    snprintf(why, why_size,
             "kiln's Vulkan instance has no vkGetDeviceProcAddr");
    return -1;
  }
#define VULKAN_RAW_LOAD(name)                                   \
  r->vk.name = (PFN_vk##name)gdpa(r->device, "vk" #name);       \
  if (r->vk.name == NULL) {                                     \
    snprintf(why, why_size, "kiln's VkDevice has no vk" #name); \
    return -1;                                                  \
  }
  VULKAN_RAW_ENTRY_POINTS(VULKAN_RAW_LOAD)
#undef VULKAN_RAW_LOAD
  return 0;
}

/* kiln's pipeline for `entry` at block (block_x, 1, 1): arguments in one
 * push-constant range, no descriptor sets, the block size in
 * specialization constants 0-2. kiln adds constant 3, the dynamic shared
 * memory size, only for a kernel that declares it; kiln_bench_empty does
 * not. */
static VkResult create_pipeline(vulkan_raw *r, const kiln_module_image *image,
                                const char *entry, uint32_t block_x,
                                uint32_t arg_bytes) {
  VkShaderModuleCreateInfo shader = {
      .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
      .codeSize = image->size,
      .pCode = image->data, /* kiln-embed aligns its images to 16 bytes */
  };
  VK_TRY(r, CreateShaderModule, (r->device, &shader, NULL, &r->shader));
  VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, arg_bytes};
  VkPipelineLayoutCreateInfo layout = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .pushConstantRangeCount = 1,
      .pPushConstantRanges = &range,
  };
  VK_TRY(r, CreatePipelineLayout, (r->device, &layout, NULL, &r->layout));
  const uint32_t block[3] = {block_x, 1, 1};
  const VkSpecializationMapEntry entries[3] = {{0, 0, 4}, {1, 4, 4}, {2, 8, 4}};
  VkSpecializationInfo spec = {3, entries, sizeof block, block};
  VkComputePipelineCreateInfo pipeline = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage =
          {
              .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
              .stage = VK_SHADER_STAGE_COMPUTE_BIT,
              .module = r->shader,
              .pName = entry,
              .pSpecializationInfo = &spec,
          },
      .layout = r->layout,
  };
  VK_TRY(r, CreateComputePipelines,
         (r->device, VK_NULL_HANDLE, 1, &pipeline, NULL, &r->pipeline));
  return VK_SUCCESS;
}

/* The dispatches, each with its arguments pushed as kiln pushes a launch's;
 * ordered, each after the first behind the barrier that kiln's
 * device_barrier (backends/vulkan/submit.c) records between two commands
 * of a stream, the very same, so that the difference between the command
 * buffers is what kiln's stream order costs the driver; in levels, that
 * barrier before every `level`-th dispatch only; in levels as kiln's graph
 * has them, behind that barrier first and ending with the barrier to the
 * host stage, as kiln records a graph or a stream's batch; or, `tail`,
 * in levels with no barrier first and one at the end whose second scope
 * holds the compute and transfer stages too, every later submission's
 * commands. Begun with `usage`: how the buffer will be submitted. */
static VkResult record(vulkan_raw *r, VkCommandBuffer cmd,
                       vulkan_raw_order order, VkCommandBufferUsageFlags usage,
                       bool tail) {
  const unsigned level = r->level;
  const VkMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask =
          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
      .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT,
  };
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  const bool as_kiln = order == VULKAN_RAW_LEVELS_AS_KILN;
  const bool lead = as_kiln && !tail;
  const unsigned every = order == VULKAN_RAW_ORDERED ? 1
                         : order == VULKAN_RAW_LEVELS || as_kiln ? level
                                                                  : 0;
  VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = usage,
  };
  VK_TRY(r, BeginCommandBuffer, (cmd, &begin));
  r->vk.CmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, r->pipeline);
  for (unsigned i = 0; i < r->dispatches; i++) {
    if (every && (i % every == 0) && (i > 0 || lead))
      r->vk.CmdPipelineBarrier(cmd, stages, stages, 0, 1, &barrier, 0, NULL, 0,
                               NULL);
    r->vk.CmdPushConstants(cmd, r->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           r->arg_bytes, r->args);
    r->vk.CmdDispatch(cmd, r->grid_x, 1, 1);
  }
  if (as_kiln) {
    const VkMemoryBarrier to_host = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = barrier.srcAccessMask,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_HOST_WRITE_BIT |
                         (tail ? barrier.dstAccessMask : 0),
    };
    r->vk.CmdPipelineBarrier(cmd, stages,
                             VK_PIPELINE_STAGE_HOST_BIT | (tail ? stages : 0),
                             0, 1, &to_host, 0, NULL, 0, NULL);
  }
  VK_TRY(r, EndCommandBuffer, (cmd));
  return VK_SUCCESS;
}

static VkResult set_up(vulkan_raw *r, uint32_t queue_family,
                       const kiln_module_image *image, const char *entry,
                       uint32_t block_x) {
  VkResult result = create_pipeline(r, image, entry, block_x, r->arg_bytes);
  if (result != VK_SUCCESS) return result;
  VkCommandPoolCreateInfo pool = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .queueFamilyIndex = queue_family,
  };
  VK_TRY(r, CreateCommandPool, (r->device, &pool, NULL, &r->pool));
  /* As kiln's streams make theirs: each buffer may be begun again. */
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  VK_TRY(r, CreateCommandPool, (r->device, &pool, NULL, &r->again_pool));
  VkCommandBufferAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = r->pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = VULKAN_RAW_ORDERS,
  };
  VK_TRY(r, AllocateCommandBuffers, (r->device, &alloc, r->cmd));
  alloc.commandBufferCount = 1;
  VK_TRY(r, AllocateCommandBuffers, (r->device, &alloc, &r->batch));
  VK_TRY(r, AllocateCommandBuffers, (r->device, &alloc, &r->tail));
  alloc.commandPool = r->again_pool;
  VK_TRY(r, AllocateCommandBuffers, (r->device, &alloc, &r->again));
  /* A graph's buffer is begun for simultaneous use (a replay may be
   * submitted while earlier ones run); the others wait for each run. */
  for (int order = 0; order < VULKAN_RAW_ORDERS; order++)
    if ((result = record(r, r->cmd[order], (vulkan_raw_order)order,
                         order == VULKAN_RAW_LEVELS_AS_KILN
                             ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT
                             : 0,
                         false)) != VK_SUCCESS)
      return result;
  if ((result = record(r, r->batch, VULKAN_RAW_LEVELS_AS_KILN, 0, false)) !=
          VK_SUCCESS ||
      (result = record(r, r->tail, VULKAN_RAW_LEVELS_AS_KILN, 0, true)) !=
          VK_SUCCESS)
    return result;
  VkSemaphoreTypeCreateInfo type = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
  };
  VkSemaphoreCreateInfo semaphore = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO,
      .pNext = &type,
  };
  VK_TRY(r, CreateSemaphore, (r->device, &semaphore, NULL, &r->timeline));
  return VK_SUCCESS;
}

vulkan_raw *vulkan_raw_open(kiln_context *ctx, kiln_stream *stream,
                            const kiln_module_image *images, size_t count,
                            const char *entry, uint32_t grid_x,
                            uint32_t block_x, const void *args,
                            uint32_t arg_bytes,
                            unsigned dispatches, unsigned level, char *why,
                            size_t why_size) {
  const kiln_module_image *image = NULL;
  for (size_t i = 0; i < count && image == NULL; i++)
    if (images[i].format == KILN_IMAGE_SPIRV) image = &images[i];
  if (image == NULL) {
    snprintf(why, why_size, "kiln-bench has no SPIR-V of %s", entry);
    return NULL;
  }
  kiln_native_context nc;
  kiln_native_stream ns;
  kiln_sync_policy policy;
  if (kiln_context_get_native(ctx, &nc) != KILN_OK ||
      kiln_stream_get_native(stream, &ns) != KILN_OK ||
      kiln_context_get_sync_policy(ctx, &policy) != KILN_OK) {
    snprintf(why, why_size, "kiln's native handles: %s", kiln_last_error());
    return NULL;
  }
  if (arg_bytes > sizeof ((vulkan_raw *)NULL)->args) {
    snprintf(why, why_size, "%u bytes of arguments, more than the %zu kept",
             (unsigned)arg_bytes, sizeof ((vulkan_raw *)NULL)->args);
    return NULL;
  }
  vulkan_raw *r = calloc(1, sizeof *r);
  if (r == NULL) {
    snprintf(why, why_size, "out of host memory");
    return NULL;
  }
  r->level = level ? level : 1;
  r->dispatches = dispatches;
  r->grid_x = grid_x;
  r->arg_bytes = arg_bytes;
  memcpy(r->args, args, arg_bytes);
  r->device = (VkDevice)nc.vk_device;
  r->queue = (VkQueue)ns.vk_queue;
  r->policy = policy;
  /* Nothing is made until every entry point is there to destroy it. */
  if (load_entry_points(r, &nc, why, why_size) != 0) {
    free(r);
    return NULL;
  }
  VkResult result = set_up(r, ns.vk_queue_family, image, entry, block_x);
  if (result != VK_SUCCESS) {
    snprintf(why, why_size, "%s failed: VkResult %d", r->failed, (int)result);
    vulkan_raw_close(r);
    return NULL;
  }
  return r;
}

void vulkan_raw_close(vulkan_raw *r) {
  if (r == NULL) return;
  /* A run that failed while waiting may have left its work running. */
  if (r->submitted > 0) {
    VkSemaphoreWaitInfo info = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
        .semaphoreCount = 1,
        .pSemaphores = &r->timeline,
        .pValues = &r->submitted,
    };
    r->vk.WaitSemaphores(r->device, &info, UINT64_MAX);
  }
  /* Destroying the pool frees its command buffers. */
  r->vk.DestroyCommandPool(r->device, r->pool, NULL);
  r->vk.DestroyCommandPool(r->device, r->again_pool, NULL);
  r->vk.DestroySemaphore(r->device, r->timeline, NULL);
  r->vk.DestroyPipeline(r->device, r->pipeline, NULL);
  r->vk.DestroyPipelineLayout(r->device, r->layout, NULL);
  r->vk.DestroyShaderModule(r->device, r->shader, NULL);
  free(r);
}

/* Waits for the timeline to reach `value` as kiln waits for a stream under
 * the context's policy (kiln.h, kiln_sync_policy): polled, polled with a
 * yield, polled for AUTO_SPIN_S, then with a yield until AUTO_YIELD_S and
 * then slept, or slept. kiln's replay figure includes its wait; the raw
 * ones include the same. */
static VkResult wait_for(vulkan_raw *r, uint64_t value) {
  if (r->policy != KILN_SYNC_BLOCK) {
    const double start = bench_now();
    for (;;) {
      uint64_t reached = 0;
      VK_TRY(r, GetSemaphoreCounterValue, (r->device, r->timeline, &reached));
      if (reached >= value) return VK_SUCCESS;
      const double waited = bench_now() - start;
      if (r->policy == KILN_SYNC_AUTO && waited >= AUTO_YIELD_S) break;
      if (r->policy == KILN_SYNC_YIELD ||
          (r->policy == KILN_SYNC_AUTO && waited >= AUTO_SPIN_S))
        sched_yield();
    }
  }
  VkSemaphoreWaitInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .semaphoreCount = 1,
      .pSemaphores = &r->timeline,
      .pValues = &value,
  };
  VK_TRY(r, WaitSemaphores, (r->device, &info, UINT64_MAX));
  return VK_SUCCESS;
}

static VkResult submit_and_wait(vulkan_raw *r, VkCommandBuffer cmd) {
  const uint64_t value = r->submitted + 1;
  VkTimelineSemaphoreSubmitInfo timeline = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .signalSemaphoreValueCount = 1,
      .pSignalSemaphoreValues = &value,
  };
  VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .pNext = &timeline,
      .commandBufferCount = 1,
      .pCommandBuffers = &cmd,
      .signalSemaphoreCount = 1,
      .pSignalSemaphores = &r->timeline,
  };
  VK_TRY(r, QueueSubmit, (r->queue, 1, &submit, VK_NULL_HANDLE));
  r->submitted = value;
  return wait_for(r, value);
}

/* 0, or -1 with the failure printed. */
static int reported(const vulkan_raw *r, VkResult result) {
  if (result == VK_SUCCESS) return 0;
  fprintf(stderr, "kiln-bench: raw Vulkan: %s failed: VkResult %d\n", r->failed,
          (int)result);
  return -1;
}

int vulkan_raw_run(vulkan_raw *r, vulkan_raw_order order) {
  return reported(r, submit_and_wait(r, r->cmd[order]));
}

int vulkan_raw_batch_run(vulkan_raw *r, vulkan_raw_batch how) {
  /* Recorded for one submission, each begun as kiln begins a batch. */
  const VkCommandBufferUsageFlags once =
      VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VkCommandBuffer cmd = how == VULKAN_RAW_BATCH_ONCE   ? r->batch
                        : how == VULKAN_RAW_BATCH_TAIL ? r->tail
                                                       : r->again;
  VkResult result = VK_SUCCESS;
  if (how == VULKAN_RAW_BATCH_AGAIN)
    result = record(r, cmd, VULKAN_RAW_LEVELS_AS_KILN, once, false);
  if (result == VK_SUCCESS) result = submit_and_wait(r, cmd);
  return reported(r, result);
}

/* Written by tools/kiln-embed at build time: kiln_bench_empty per backend. */
extern const kiln_module_image kiln_bench_images[];
extern const size_t kiln_bench_images_count;

/* kiln_bench_empty's push-constant block (std430), as kiln packs the
 * launch's arguments: the buffer's device address, then n. */
typedef struct empty_args {
  uint64_t dst;
  uint32_t n;
} empty_args;

vulkan_raw *vulkan_raw_open_empty(bench *b, const kiln_buffer *buf,
                                  uint32_t block_x, unsigned dispatches,
                                  unsigned level, const char *section) {
  kiln_native_buffer nb;
  char why[512];
  vulkan_raw *r = NULL;
  if (kiln_buffer_get_native(buf, &nb) != KILN_OK) {
    snprintf(why, sizeof why, "kiln_buffer_get_native: %s", kiln_last_error());
  } else {
    const empty_args args = {nb.device_address, 0};
    r = vulkan_raw_open(b->ctx, b->stream, kiln_bench_images,
                        kiln_bench_images_count, "kiln_bench_empty", 1,
                        block_x, &args, offsetof(empty_args, n) + sizeof args.n,
                        dispatches, level, why, sizeof why);
  }
  if (r == NULL)
    fprintf(stderr, "kiln-bench: %s: no raw Vulkan comparator: %s\n", section,
            why);
  return r;
}
