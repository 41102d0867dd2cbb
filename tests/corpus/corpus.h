/*
 * The kernel corpus (issue 30): CUDA sources written the way real CUDA code
 * is written, one file each here, compiled from source and checked against
 * the CPU by tests/conformance/test_corpus.c on CUDA and the HIP shim, and
 * compiled with NVRTC alone, no GPU, by tests/cuda/test_corpus_compile.c.
 *
 * X(file, kernel, needs_toolkit): the file, the kernel (or the name
 * expression) the tests look up, and whether the source includes the CUDA
 * toolkit's headers (cuda_fp16.h, cooperative groups, CUB, libcu++), which
 * a HIP source spells otherwise (hip_fp16.h, hipCUB), so the HIP run skips
 * it saying so. broken.cu, the compile error, is apart.
 *
 * glsl/ holds the counterparts in GLSL, for Vulkan, where the language
 * allows (same kernel names, same arguments): test_corpus.c says for each
 * of the others why it has none.
 */
#ifndef KILN_TESTS_CORPUS_H
#define KILN_TESTS_CORPUS_H

#define KILN_CORPUS(X)                                 \
  X("fp16_axpy.cu", "fp16_axpy", true)                 \
  X("fp16_dot.cu", "fp16_dot", true)                   \
  X("cg_reduce.cu", "cg_sum", true)                    \
  X("warp_sums.cu", "warp_sums", false)                \
  X("templates.cu", "scale_add<int, 3>", false)        \
  X("constant_poly.cu", "poly", false)                 \
  X("reverse_blocks.cu", "reverse_blocks", false)      \
  X("cub_scan.cu", "block_prefix_sums", true)          \
  X("double_bins.cu", "double_bins", false)            \
  X("namespaced.cu", "corpus::saxpy", false)           \
  X("mix64.cu", "mix64", true)                         \
  X("transpose.cu", "transpose", false)

/* The name expressions of the files that need them. */
#define KILN_CORPUS_TEMPLATE_NAMES "scale_add<int, 3>", "scale_add<double, 2>"
#define KILN_CORPUS_NAMESPACED_NAMES "corpus::saxpy"

/* broken.cu's error, as NVRTC reports it: the line after the statement
 * that lacks its semicolon. glsl/broken.comp's, as glslang does. */
#define KILN_CORPUS_BROKEN_AT "broken.cu(6)"
#define KILN_CORPUS_GLSL_BROKEN_AT "broken.comp:8"

#endif /* KILN_TESTS_CORPUS_H */
