/* What a kernel needs of the device, as the runtime tells it
 * (kiln_kernel_get_attributes), and the block size that gives it the most
 * occupancy (kiln_kernel_suggest_block_size). */
#include "backends/hip/hip.h"

/* Attribute `what` of the kernel into *out; `name` for the message. */
static kiln_status attribute(const kiln_hip_kernel *k,
                             hipFunction_attribute what, const char *name,
                             size_t *out) {
  int value = 0;
  hipError_t err = kiln_hip_api.hipFuncGetAttribute(&value, what, k->function);
  if (err != hipSuccess)
    return kiln_hip_error(err, "hipFuncGetAttribute(%s) of kernel '%.64s'",
                          name, k->base.name);
  *out = value < 0 ? 0 : (size_t)value;
  return KILN_OK;
}

kiln_status kiln_hip_kernel_attributes(kiln_kernel *base,
                                       kiln_kernel_attributes *out) {
  const kiln_hip_kernel *k = kiln_hip_kernel_cast(base);
  kiln_hip_device_scope scope;
  kiln_status st = kiln_hip_device_enter(base->base.context, &scope);
  if (st != KILN_OK) return st;
  st = attribute(k, HIP_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS", &out->registers);
  if (st == KILN_OK)
    st = attribute(k, HIP_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                   "SHARED_SIZE_BYTES", &out->static_shared_bytes);
  if (st == KILN_OK)
    st = attribute(k, HIP_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES",
                   &out->local_bytes);
  if (st == KILN_OK)
    st = attribute(k, HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                   "MAX_THREADS_PER_BLOCK", &out->max_block_threads);
  kiln_hip_device_leave(&scope);
  return st;
}

kiln_status kiln_hip_suggest_block(kiln_kernel *base,
                                   size_t dynamic_shared_bytes,
                                   uint32_t *out_block,
                                   uint32_t *out_min_grid) {
  kiln_hip_kernel *k = kiln_hip_kernel_cast(base);
  /* The calculator counts only what the kernel may have: its limit is
   * raised as a launch would raise it. */
  kiln_status st = kiln_hip_need_shared(k, dynamic_shared_bytes);
  if (st != KILN_OK) return st;
  kiln_hip_device_scope scope;
  if ((st = kiln_hip_device_enter(base->base.context, &scope)) != KILN_OK)
    return st;
  int grid = 0, block = 0;
  hipError_t err = kiln_hip_api.hipModuleOccupancyMaxPotentialBlockSize(
      &grid, &block, k->function, dynamic_shared_bytes, 0);
  kiln_hip_device_leave(&scope);
  if (err != hipSuccess)
    return kiln_hip_error(err,
                          "hipModuleOccupancyMaxPotentialBlockSize of kernel "
                          "'%.64s' with %zu bytes of dynamic shared memory",
                          base->name, dynamic_shared_bytes);
  if (block <= 0)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "kernel '%.64s' cannot run a block with %zu bytes "
                          "of dynamic shared memory on %s (the runtime's "
                          "occupancy calculator found no block size)",
                          base->name, dynamic_shared_bytes,
                          base->base.context->properties.name);
  *out_block = (uint32_t)block;
  *out_min_grid = grid > 0 ? (uint32_t)grid : 1u;
  return KILN_OK;
}
