// The one translation unit compiled into kiln's built-in HIP module (hipcc
// --genco, or nvcc --fatbin for the HIP-on-CUDA tests, takes one input); each
// kernel family keeps its own file. Like them, this includes no HIP header:
// the build passes -include hip/hip_runtime.h to hipcc, and nvcc brings in
// its own runtime header, so the same text compiles as HIP and as CUDA.
#include "fill.hip"
#include "axpy.hip"
#include "reduce.hip"
#include "stream.hip"
#include "sgemm.hip"
#include "sgemm_tiled.hip"
#include "hgemm.hip"
