// The one translation unit nvcc compiles into kiln's built-in fatbin (nvcc
// --fatbin takes a single input); each kernel family keeps its own file.
#include "fill.cu"
#include "axpy.cu"
#include "reduce.cu"
#include "stream.cu"
#include "sgemm.cu"
#include "sgemm_tiled.cu"
#include "hgemm.cu"
