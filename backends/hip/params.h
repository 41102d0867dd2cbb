/*
 * Kernel parameter lists read from the images the HIP backend loads
 * (params.c), for the core's argument checks: an AMDGPU code object's
 * metadata note (NT_AMDGPU_METADATA, MessagePack), alone or in a clang
 * offload bundle; under HIP on NVIDIA, the CUDA images the CUDA backend's
 * reader knows (backends/cuda/params.h). A pure function of the image's
 * bytes, with every length checked, so that tests feed it code objects
 * without a GPU. This header needs no HIP header.
 */
#ifndef KILN_BACKENDS_HIP_PARAMS_H
#define KILN_BACKENDS_HIP_PARAMS_H

#include "backends/cuda/params.h"

/* Reads the parameter lists of a HIP image into *out (zeroed first): from
 * a bundle, the code object for `target` ("gfx90a", the device's
 * architecture without features), else its first AMDGPU one. Hidden
 * arguments (.value_kind "hidden_...") are not parameters. What cannot be
 * read leaves kernels out, as kiln_cuda_params_read does (a compressed
 * bundle, a code object older than MessagePack metadata). Fails only for
 * lack of host memory, leaving *out empty. */
kiln_status kiln_hip_params_read(const void *data, size_t size,
                                 const char *target, kiln_param_table *out);

#endif /* KILN_BACKENDS_HIP_PARAMS_H */
