/* Launches: a compute pipeline per kernel and block size (specialization
 * constants 0-2, and 3 for dynamic shared memory), created on first use;
 * arguments as push constants; one dispatch. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

static kiln_status create_pipeline(kiln_vulkan_context *vc,
                                   kiln_vulkan_kernel *vk,
                                   const uint32_t block[3],
                                   uint32_t shared_bytes, VkPipeline *out) {
  VkSpecializationMapEntry entries[4];
  uint32_t values[4];
  uint32_t n = 0;
  for (int d = 0; d < 3; d++) {
    if (vk->entry->local_size_spec_id[d] < 0) continue;
    entries[n] = (VkSpecializationMapEntry){
        (uint32_t)vk->entry->local_size_spec_id[d], n * 4, 4};
    values[n++] = block[d];
  }
  if (vk->has_shared_bytes_spec) {
    entries[n] =
        (VkSpecializationMapEntry){KILN_VULKAN_SPEC_SHARED_BYTES, n * 4, 4};
    values[n++] = shared_bytes;
  }
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
  VkResult r = vc->vk.vkCreateComputePipelines(vc->device, vc->pipeline_cache,
                                               1, &info, NULL, out);
  if (r == VK_SUCCESS) return KILN_OK;
  kiln_status st = kiln_vulkan_status(r);
  if (st != KILN_ERROR_OUT_OF_HOST_MEMORY &&
      st != KILN_ERROR_OUT_OF_DEVICE_MEMORY && st != KILN_ERROR_DEVICE_LOST)
    st = KILN_ERROR_LAUNCH_FAILED;
  return kiln_set_error(st,
                        "vkCreateComputePipelines failed for kernel '%s' "
                        "with block %ux%ux%u: %s",
                        vk->base.name, block[0], block[1], block[2],
                        kiln_vulkan_result_name(r));
}

/* The kernel's pipeline for this block size, created on first use. */
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
  /* Without constant_id 3 the kernel cannot use dynamic shared memory, and
   * its size does not distinguish pipelines. */
  uint32_t shared =
      vk->has_shared_bytes_spec ? (uint32_t)config->shared_memory_bytes : 0;
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
  if (vk->pipeline_count == vk->pipeline_cap) {
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
  if (st == KILN_OK) st = create_pipeline(vc, vk, block, shared, &handle);
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

kiln_status kiln_vulkan_launch(kiln_stream *s, kiln_kernel *k,
                               const kiln_launch_config *config,
                               const kiln_packed_args *args) {
  kiln_vulkan_stream *st = kiln_vulkan_stream_cast(s);
  kiln_vulkan_kernel *vk = kiln_vulkan_kernel_cast(k);
  kiln_vulkan_context *vc = st->ctx;
  VkPipeline pipeline = VK_NULL_HANDLE;
  kiln_status status = pipeline_for(vc, vk, config, &pipeline);
  if (status != KILN_OK) return status;
  kiln_vulkan_stream_lock(st);
  VkCommandBuffer cmd;
  status = kiln_vulkan_stream_command(st, &cmd);
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
  kiln_vulkan_stream_unlock(st);
  return status;
}
