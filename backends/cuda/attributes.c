/* What a kernel needs of the device, as the driver tells it
 * (kiln_kernel_get_attributes), and the block size that gives it the most
 * occupancy (kiln_kernel_suggest_block_size). */
#include <limits.h>

#include "backends/cuda/cuda.h"

/* Attribute `what` of the kernel into *out; `name` for the message. */
static kiln_status attribute(const kiln_cuda_kernel *k,
                             CUfunction_attribute what, const char *name,
                             size_t *out) {
  int value = 0;
  CUresult r = kiln_cuda_api.cuFuncGetAttribute(&value, what, k->handle);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r, "cuFuncGetAttribute(%s) of kernel '%s'", name,
                           k->base.name);
  *out = value < 0 ? 0 : (size_t)value;
  return KILN_OK;
}

kiln_status kiln_cuda_kernel_attributes(kiln_kernel *base,
                                        kiln_kernel_attributes *out) {
  const kiln_cuda_kernel *k = kiln_cuda_kernel_cast(base);
  kiln_status st = kiln_cuda_make_current(base->base.context);
  if (st == KILN_OK)
    st = attribute(k, CU_FUNC_ATTRIBUTE_NUM_REGS, "NUM_REGS", &out->registers);
  if (st == KILN_OK)
    st = attribute(k, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "SHARED_SIZE_BYTES",
                   &out->static_shared_bytes);
  if (st == KILN_OK)
    st = attribute(k, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "LOCAL_SIZE_BYTES",
                   &out->local_bytes);
  if (st == KILN_OK)
    st = attribute(k, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                   "MAX_THREADS_PER_BLOCK", &out->max_block_threads);
  return st;
}

kiln_status kiln_cuda_suggest_block(kiln_kernel *base,
                                    size_t dynamic_shared_bytes,
                                    uint32_t *out_block,
                                    uint32_t *out_min_grid) {
  kiln_cuda_kernel *k = kiln_cuda_kernel_cast(base);
  const kiln_context *ctx = base->base.context;
  kiln_status st = kiln_cuda_make_current(ctx);
  if (st != KILN_OK) return st;
  /* The calculator counts only what the kernel may have: its limit is
   * raised as a launch would raise it. */
  if ((st = kiln_cuda_need_shared(k, ctx, dynamic_shared_bytes,
                                  "kiln_kernel_suggest_block_size")) !=
      KILN_OK)
    return st;
  int grid = 0, block = 0;
  CUresult r = kiln_cuda_api.cuOccupancyMaxPotentialBlockSize(
      &grid, &block, k->handle, NULL, dynamic_shared_bytes, 0);
  if (r != CUDA_SUCCESS)
    return kiln_cuda_error(r,
                           "cuOccupancyMaxPotentialBlockSize of kernel '%s' "
                           "with %zu bytes of dynamic shared memory",
                           base->name, dynamic_shared_bytes);
  if (block <= 0)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "kernel '%s' cannot run a block with %zu bytes of "
                          "dynamic shared memory on %s (the driver's "
                          "occupancy calculator found no block size)",
                          base->name, dynamic_shared_bytes,
                          ctx->properties.name);
  *out_block = (uint32_t)block;
  *out_min_grid = grid > 0 ? (uint32_t)grid : 1u;
  return KILN_OK;
}
