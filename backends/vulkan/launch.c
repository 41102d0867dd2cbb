/* Launches: a compute pipeline per kernel and block size (specialization
 * constants 0-2, and 3 for dynamic shared memory), created on first use
 * (the first when the kernel is looked up); arguments as push constants;
 * one dispatch (submitted at once under KILN_VULKAN_VALIDATION=printf). */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

/* Adds (id, value) to the specialization unless the id is there already:
 * a constant of one id is set once (an image may give two block
 * dimensions one id). */
static void specialize(VkSpecializationMapEntry *entries, uint32_t *values,
                       uint32_t *n, uint32_t id, uint32_t value) {
  for (uint32_t i = 0; i < *n; i++)
    if (entries[i].constantID == id) return;
  entries[*n] = (VkSpecializationMapEntry){id, *n * 4, 4};
  values[(*n)++] = value;
}

/* `failed` is the status of a pipeline the driver refuses: LAUNCH_FAILED
 * for a launch, INVALID_IMAGE for a kernel being looked up. */
static kiln_status create_pipeline(kiln_vulkan_context *vc,
                                   kiln_vulkan_kernel *vk,
                                   const uint32_t block[3],
                                   uint32_t shared_bytes, kiln_status failed,
                                   VkPipeline *out) {
  VkSpecializationMapEntry entries[4];
  uint32_t values[4];
  uint32_t n = 0;
  for (int d = 0; d < 3; d++)
    if (vk->entry->local_size_spec_id[d] >= 0)
      specialize(entries, values, &n,
                 (uint32_t)vk->entry->local_size_spec_id[d], block[d]);
  if (vk->info->has_shared_bytes_spec)
    specialize(entries, values, &n, KILN_VULKAN_SPEC_SHARED_BYTES,
               shared_bytes);
  VkSpecializationInfo spec = {
      .mapEntryCount = n,
      .pMapEntries = entries,
      .dataSize = n * sizeof *values,
      .pData = values,
  };
  VkComputePipelineCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage =
          {
              .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
              .stage = VK_SHADER_STAGE_COMPUTE_BIT,
              .module = vk->shader,
              .pName = vk->entry->name,
              .pSpecializationInfo = n ? &spec : NULL,
          },
      .layout = vk->layout,
  };
  VkResult r = vc->vk.vkCreateComputePipelines(
      vc->device, vc->pipeline_cache.handle, 1, &info, NULL, out);
  if (r == VK_SUCCESS) return KILN_OK;
  return kiln_vulkan_error_as(r, failed,
                              "vkCreateComputePipelines for kernel '%s' with "
                              "block %ux%ux%u",
                              vk->base.name, block[0], block[1], block[2]);
}

/* The kernel's pipeline for (block, shared), from its cache or created and
 * added to it. */
static kiln_status cached_pipeline(kiln_vulkan_context *vc,
                                   kiln_vulkan_kernel *vk,
                                   const uint32_t block[3], uint32_t shared,
                                   kiln_status failed, VkPipeline *out) {
  pthread_mutex_lock(&vk->lock);
  kiln_status st = KILN_OK;
  for (size_t i = 0; i < vk->pipeline_count; i++) {
    const kiln_vulkan_pipeline *p = &vk->pipelines[i];
    if (p->block[0] == block[0] && p->block[1] == block[1] &&
        p->block[2] == block[2] && p->shared_bytes == shared) {
      *out = p->handle;
      pthread_mutex_unlock(&vk->lock);
      return KILN_OK;
    }
  }
  /* Checked here rather than on every launch: a size that was cached
   * passed it. */
  if (!kiln_vulkan_spirv_shared_fits(vk->info, shared))
    st = kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "kiln_launch: with shared_memory_bytes = %u, an "
                        "array that kernel '%s' sizes by constant_id 3 has "
                        "no elements; give at least the bytes the kernel "
                        "uses",
                        shared, vk->base.name);
  if (st == KILN_OK && vk->pipeline_count == vk->pipeline_cap) {
    size_t cap = vk->pipeline_cap ? vk->pipeline_cap * 2 : 4;
    kiln_vulkan_pipeline *p = realloc(vk->pipelines, cap * sizeof *p);
    if (!p)
      st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory caching a pipeline");
    else {
      vk->pipelines = p;
      vk->pipeline_cap = cap;
    }
  }
  VkPipeline handle = VK_NULL_HANDLE;
  if (st == KILN_OK)
    st = create_pipeline(vc, vk, block, shared, failed, &handle);
  if (st == KILN_OK) {
    kiln_vulkan_pipeline *p = &vk->pipelines[vk->pipeline_count++];
    memcpy(p->block, block, sizeof p->block);
    p->shared_bytes = shared;
    p->handle = handle;
    *out = handle;
  }
  pthread_mutex_unlock(&vk->lock);
  return st;
}

kiln_status kiln_vulkan_kernel_precompile(kiln_vulkan_context *vc,
                                          kiln_vulkan_kernel *vk) {
  uint32_t block[3];
  for (int d = 0; d < 3; d++)
    block[d] =
        vk->entry->local_size_spec_id[d] < 0 ? vk->entry->local_size[d] : 1;
  const VkPhysicalDeviceLimits *l = &vc->phys->limits;
  if (block[0] > l->maxComputeWorkGroupSize[0] ||
      block[1] > l->maxComputeWorkGroupSize[1] ||
      block[2] > l->maxComputeWorkGroupSize[2] ||
      (uint64_t)block[0] * block[1] * block[2] >
          l->maxComputeWorkGroupInvocations)
    return kiln_set_error(
        KILN_ERROR_UNSUPPORTED,
        "kernel '%s' has its block size fixed at %ux%ux%u, "
        "beyond this Vulkan device's limits (%ux%ux%u, "
        "%u threads)",
        vk->base.name, block[0], block[1], block[2],
        l->maxComputeWorkGroupSize[0], l->maxComputeWorkGroupSize[1],
        l->maxComputeWorkGroupSize[2], l->maxComputeWorkGroupInvocations);
  /* The fewest shared bytes that give every array sized by constant 3 an
   * element: its default if the device has that many, else a power of
   * two. A kernel without such an array is always launched with 0. */
  uint32_t shared = 0;
  if (vk->info->shared_root_count > 0) {
    uint32_t limit = l->maxComputeSharedMemorySize;
    shared = vk->info->shared_bytes_default;
    bool fits =
        shared <= limit && kiln_vulkan_spirv_shared_fits(vk->info, shared);
    for (uint64_t b = 4; !fits && b <= limit; b *= 2) {
      shared = (uint32_t)b;
      fits = kiln_vulkan_spirv_shared_fits(vk->info, shared);
    }
    if (!fits)
      return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                            "kernel '%s' sizes a shared array by "
                            "constant_id 3 such that no dynamic shared "
                            "memory size up to the device's %u bytes gives "
                            "it an element",
                            vk->base.name, limit);
  }
  VkPipeline unused;
  return cached_pipeline(vc, vk, block, shared, KILN_ERROR_INVALID_IMAGE,
                         &unused);
}

/* The kernel's pipeline for this launch, created on first use. */
static kiln_status pipeline_for(kiln_vulkan_context *vc, kiln_vulkan_kernel *vk,
                                const kiln_launch_config *config,
                                VkPipeline *out) {
  const uint32_t block[3] = {config->block.x, config->block.y, config->block.z};
  for (int d = 0; d < 3; d++)
    if (vk->entry->local_size_spec_id[d] < 0 &&
        block[d] != vk->entry->local_size[d])
      return kiln_set_error(
          KILN_ERROR_LAUNCH_FAILED,
          "kernel '%s' has its block size fixed at %ux%ux%u (declare "
          "layout(local_size_x_id = 0, local_size_y_id = 1, "
          "local_size_z_id = 2) in; to choose it at launch), but the launch "
          "asks for %ux%ux%u",
          vk->base.name, vk->entry->local_size[0], vk->entry->local_size[1],
          vk->entry->local_size[2], block[0], block[1], block[2]);
  /* An array sized by constant 3 with no bytes has no elements, which no
   * driver compiles; bytes for a kernel without one would be ignored. */
  bool sized = vk->info->shared_root_count > 0;
  if (sized && config->shared_memory_bytes == 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_launch: kernel '%s' sizes a shared array by "
                          "constant_id 3 (dynamic shared memory), so the "
                          "launch must give its size in shared_memory_bytes, "
                          "which is 0",
                          vk->base.name);
  if (!sized && config->shared_memory_bytes > 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_launch: kernel '%s' declares no shared array "
                          "sized by constant_id 3, so it takes no dynamic "
                          "shared memory, but the launch asks for %zu bytes",
                          vk->base.name, config->shared_memory_bytes);
  /* Without constant_id 3 its value does not distinguish pipelines. */
  uint32_t shared = vk->info->has_shared_bytes_spec
                        ? (uint32_t)config->shared_memory_bytes
                        : 0;
  return cached_pipeline(vc, vk, block, shared, KILN_ERROR_LAUNCH_FAILED, out);
}

/* A launch that will be a batch of its own (nothing recorded, the stream
 * idle, no label to carry) is looked up among the batches the stream
 * kept (solo.c): *out is the one to submit again, or, none kept,
 * st->solo.pending is set for the flush to keep the batch recorded now.
 * The stream's lock held. */
static kiln_status find_kept(kiln_vulkan_stream *st, VkPipeline pipeline,
                             const kiln_vulkan_kernel *vk,
                             const kiln_launch_config *config,
                             const kiln_packed_args *args,
                             VkCommandBuffer *out) {
  *out = VK_NULL_HANDLE;
  st->solo.pending_set = false;
  if (st->cmd || vk->push_bytes > KILN_VULKAN_SOLO_PUSH ||
      kiln_vulkan_label_issuing())
    return KILN_OK;
  kiln_status s = kiln_vulkan_stream_poll(st);
  if (s != KILN_OK || st->completed < st->submitted) return s;
  kiln_vulkan_solo_key *key = &st->solo.pending;
  key->pipeline = pipeline;
  key->epoch = atomic_load(&st->ctx->pipeline_epoch);
  key->grid[0] = config->grid.x;
  key->grid[1] = config->grid.y;
  key->grid[2] = config->grid.z;
  key->push_bytes = vk->push_bytes;
  memcpy(key->push, args->data, vk->push_bytes);
  *out = kiln_vulkan_solo_find(st, key);
  st->solo.pending_set = *out == VK_NULL_HANDLE;
  return KILN_OK;
}

kiln_status kiln_vulkan_launch(kiln_stream *s, kiln_kernel *k,
                               const kiln_launch_config *config,
                               const kiln_packed_args *args) {
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_kernel *vk = kiln_vulkan_kernel_cast(k);
  kiln_vulkan_context *vc = st->ctx;
  VkPipeline pipeline = VK_NULL_HANDLE;
  kiln_status status = pipeline_for(vc, vk, config, &pipeline);
  if (status != KILN_OK) return status;
  /* Under printf the layer hands a submission's text over inside its
   * vkQueueSubmit, naming no kernel: each launch is submitted alone (the
   * stream may submit it as it is recorded), so the text is known to be
   * this kernel's; a graph's replay names all of the graph's. */
  const bool printf_on = kiln_vulkan_printf_on();
  const bool printing = printf_on && !s->building;
  kiln_vulkan_stream_lock(st);
  if (!printf_on && !s->building) {
    VkCommandBuffer kept;
    status = find_kept(st, pipeline, vk, config, args, &kept);
    if (status == KILN_OK && kept)
      status = kiln_vulkan_stream_submit_external(st, kept);
    if (status != KILN_OK || kept) {
      kiln_vulkan_stream_unlock(st);
      return status;
    }
  }
  if (printing) kiln_vulkan_printf_source(vk->base.name);
  VkCommandBuffer cmd;
  status = kiln_vulkan_stream_command(st, KILN_VULKAN_LANE_COMPUTE, &cmd);
  if (status == KILN_OK) {
    if (st->bound != pipeline) {
      vc->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
      st->bound = pipeline;
    }
    /* The range is the block rounded up to whole words; the packed list
     * has room for those bytes. */
    if (vk->push_bytes)
      vc->vk.vkCmdPushConstants(cmd, vk->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                vk->push_bytes, args->data);
    vc->vk.vkCmdDispatch(cmd, config->grid.x, config->grid.y, config->grid.z);
    status = kiln_vulkan_stream_recorded(st);
  }
  if (printing) {
    if (status == KILN_OK) status = kiln_vulkan_stream_flush(st);
    kiln_vulkan_printf_source(NULL);
  } else if (status == KILN_OK && printf_on) {
    status = kiln_vulkan_graph_note_kernel(s->building, vk->base.name);
  }
  /* Kept only by the flush of this launch's own batch. */
  st->solo.pending_set = false;
  kiln_vulkan_stream_unlock(st);
  return status;
}
