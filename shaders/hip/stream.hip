// kiln_copy_f32, kiln_scale_f32, kiln_add_f32 and kiln_triad_f32: the
// BabelStream kernels on float32 (docs/kernels.md), dst[i] = f(a[i], b[i])
// for i < n.
//
// They are bound by memory bandwidth, so what matters is bytes in flight per
// thread. When dst and the inputs are all 16-byte aligned (whole buffers
// always are) every access moves a float4 (global_load_dwordx4 on AMD,
// LDG.E.128 under nvcc) and the last n % 4 elements go to the first threads
// of the grid; a sub-range at an offset that is not a multiple of 16 bytes
// takes the one-float path. Both loop grid-stride over 64-bit indices, so
// any grid is correct for any n and i + stride never wraps around.
//
// The text is the common subset of HIP and CUDA with no #include (hipcc gets
// hip_runtime.h from the command line) so that nvcc compiles it too; nothing
// here depends on the wavefront width.

struct kiln_stream_copy {
  __device__ float operator()(float a, float) const { return a; }
};

struct kiln_stream_scale {
  float s;
  __device__ float operator()(float a, float) const { return s * a; }
};

struct kiln_stream_add {
  __device__ float operator()(float a, float b) const { return a + b; }
};

struct kiln_stream_triad {
  float s;
  // One rounding, as in kiln_axpy_f32, whatever the compiler contracts.
  __device__ float operator()(float a, float b) const { return fmaf(s, b, a); }
};

// Kernels with one input pass it as both `a` and `b`; the operation ignores
// `b` and the compiler drops its loads.
template <typename Op>
__device__ static void kiln_stream_run(float *dst, const float *a,
                                       const float *b, unsigned int n, Op op) {
  unsigned long long first =
      (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long bits = (unsigned long long)dst | (unsigned long long)a |
                            (unsigned long long)b;
  if ((bits & 15u) != 0) {
    for (unsigned long long i = first; i < n; i += stride) {
      dst[i] = op(a[i], b[i]);
    }
    return;
  }
  unsigned long long n4 = n / 4u;
  float4 *dst4 = (float4 *)dst;
  const float4 *a4 = (const float4 *)a;
  const float4 *b4 = (const float4 *)b;
  for (unsigned long long i = first; i < n4; i += stride) {
    float4 x = a4[i];
    float4 y = b4[i];
    dst4[i] = make_float4(op(x.x, y.x), op(x.y, y.y), op(x.z, y.z),
                          op(x.w, y.w));
  }
  unsigned long long tail = n4 * 4u + first;
  if (tail < n) {
    dst[tail] = op(a[tail], b[tail]);
  }
}

extern "C" __global__ void kiln_copy_f32(float *dst, const float *src,
                                         unsigned int n) {
  kiln_stream_run(dst, src, src, n, kiln_stream_copy());
}

extern "C" __global__ void kiln_scale_f32(float *dst, const float *src,
                                          float s, unsigned int n) {
  kiln_stream_scale op = {s};
  kiln_stream_run(dst, src, src, n, op);
}

extern "C" __global__ void kiln_add_f32(float *dst, const float *a,
                                        const float *b, unsigned int n) {
  kiln_stream_run(dst, a, b, n, kiln_stream_add());
}

extern "C" __global__ void kiln_triad_f32(float *dst, const float *a,
                                          const float *b, float s,
                                          unsigned int n) {
  kiln_stream_triad op = {s};
  kiln_stream_run(dst, a, b, n, op);
}
