// kiln_hgemm_f16 (docs/kernels.md): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// with A and B in binary16 and C in float32, summed in f32 on the ordinary
// cores; beta == 0 does not read C. AMD's matrix instructions differ by
// architecture and kiln has no AMD GPU to verify them on, so HIP has only
// this kernel (the CUDA file's portable one); kiln_hgemm_f16() launches it
// for every HIP device.
//
// The launch shape:
//   block = 256 x 1 x 1, grid = ceil(n / 64) x ceil(m / 64) x 1.
// Each block computes a 64 x 64 tile of C in slices of 16 of k, staged in
// shared memory as floats (A transposed); each thread owns 4 x 4 elements,
// rows ty * 4.., columns tx * 4.. on a 16 x 16 grid. Every load is one
// half with bounds checks, so any shape, offset and leading dimension is
// correct; it is a fallback, not fast.
typedef unsigned short kiln_half_bits;

__device__ static float kiln_half_to_float(kiln_half_bits h) {
  const unsigned int sign = (unsigned int)(h & 0x8000u) << 16;
  const unsigned int exp = (h >> 10) & 0x1fu;
  const unsigned int mant = h & 0x3ffu;
  if (exp == 0u) {  // zero and subnormals: mant * 2^-24
    const float v = (float)mant * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  const unsigned int bits =
      exp == 31u ? sign | 0x7f800000u | (mant << 13)
                 : sign | ((exp + 112u) << 23) | (mant << 13);
  return __uint_as_float(bits);
}

extern "C" __global__ void __launch_bounds__(256)
    kiln_hgemm_f16(float *c, const kiln_half_bits *a, const kiln_half_bits *b,
                   unsigned int m, unsigned int n, unsigned int k,
                   unsigned int lda, unsigned int ldb, unsigned int ldc,
                   float alpha, float beta) {
  __shared__ float a_tile[16][64 + 4];
  __shared__ float b_tile[16][64];
  const unsigned int tid = threadIdx.x;
  const unsigned int tx = tid & 15u, ty = tid >> 4;
  const unsigned int row0 = blockIdx.y * 64u, col0 = blockIdx.x * 64u;
  const unsigned int a_r = tid >> 2, a_k = (tid & 3u) * 4u;
  const unsigned int b_k = tid >> 4, b_c = (tid & 15u) * 4u;
  float acc[4][4] = {};
  for (unsigned int k0 = 0; k0 < k; k0 += 16u) {
#pragma unroll
    for (unsigned int j = 0; j < 4u; ++j) {
      const unsigned int r = row0 + a_r, kk = k0 + a_k + j;
      a_tile[a_k + j][a_r] =
          r < m && kk < k
              ? kiln_half_to_float(a[(unsigned long long)r * lda + kk])
              : 0.0f;
      const unsigned int kr = k0 + b_k, col = col0 + b_c + j;
      b_tile[b_k][b_c + j] =
          kr < k && col < n
              ? kiln_half_to_float(b[(unsigned long long)kr * ldb + col])
              : 0.0f;
    }
    __syncthreads();
#pragma unroll
    for (unsigned int kk = 0; kk < 16u; ++kk) {
      float ar[4], br[4];
#pragma unroll
      for (unsigned int i = 0; i < 4u; ++i) {
        ar[i] = a_tile[kk][ty * 4u + i];
        br[i] = b_tile[kk][tx * 4u + i];
      }
#pragma unroll
      for (unsigned int i = 0; i < 4u; ++i) {
#pragma unroll
        for (unsigned int j = 0; j < 4u; ++j) {
          acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (unsigned int i = 0; i < 4u; ++i) {
    const unsigned int r = row0 + ty * 4u + i;
#pragma unroll
    for (unsigned int j = 0; j < 4u; ++j) {
      const unsigned int col = col0 + tx * 4u + j;
      if (r < m && col < n) {
        float *p = c + (unsigned long long)r * ldc + col;
        const float v = alpha * acc[i][j];
        *p = beta != 0.0f ? fmaf(beta, *p, v) : v;
      }
    }
  }
}
