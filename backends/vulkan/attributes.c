/* What a kernel needs of the device (kiln_kernel_get_attributes), as far as
 * Vulkan tells it: the block size a GLSL kernel fixes (local_size given as
 * numbers, not by constant_id), and the device's limit on a block. Vulkan
 * has no query of a pipeline's registers, shared or local memory but
 * VK_KHR_pipeline_executable_properties, whose statistics each driver
 * names as it likes; kiln reports those as unknown rather than guess. Nor
 * has it an occupancy calculator: kiln_kernel_suggest_block_size answers
 * only for a kernel whose block is fixed. */
#include "backends/vulkan/vulkan.h"

kiln_status kiln_vulkan_kernel_attributes(kiln_kernel *base,
                                          kiln_kernel_attributes *out) {
  const kiln_vulkan_kernel *k = kiln_vulkan_kernel_cast(base);
  const kiln_vulkan_spirv_entry_point *e = k->entry;
  size_t threads = 1;
  bool fixed = true;
  for (int d = 0; d < 3; d++) {
    const bool literal = e->local_size_spec_id[d] < 0;
    out->fixed_block[d] = literal ? e->local_size[d] : 0;
    fixed = fixed && literal;
    threads *= e->local_size[d];
  }
  out->max_block_threads =
      fixed ? threads : base->base.context->properties.max_threads_per_block;
  return KILN_OK;
}

kiln_status kiln_vulkan_suggest_block(kiln_kernel *base,
                                      size_t dynamic_shared_bytes,
                                      uint32_t *out_block,
                                      uint32_t *out_min_grid) {
  (void)dynamic_shared_bytes;
  kiln_kernel_attributes a = {0, 0, 0, 0, {0, 0, 0}};
  kiln_status st = kiln_vulkan_kernel_attributes(base, &a);
  if (st != KILN_OK) return st;
  if (!a.fixed_block[0] || !a.fixed_block[1] || !a.fixed_block[2])
    return kiln_set_error(
        KILN_ERROR_UNSUPPORTED,
        "kernel '%s' leaves its block size to the launch (local_size_x_id), "
        "and Vulkan has no occupancy calculator to choose one: pick a "
        "multiple of the device's subgroup size (kiln_device_properties)",
        base->name);
  const uint32_t units = base->base.context->properties.compute_units;
  *out_block = a.fixed_block[0] * a.fixed_block[1] * a.fixed_block[2];
  *out_min_grid = units ? units : 1u;
  return KILN_OK;
}
