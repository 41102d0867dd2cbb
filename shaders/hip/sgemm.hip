// kiln_sgemm_f32 (docs/kernels.md): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// in float32 FMAs, no tensor cores; beta == 0 does not read C.
//
// The launch shape is this kernel's own, and kiln_sgemm_f32() uses it:
//   block = 256 x 1 x 1 threads, no dynamic shared memory,
//   grid  = ceil(n / 128) x ceil(m / 128) x 1   (x over columns of C).
//
// Each block computes a 128 x 128 tile of C, walking k in slices of 8. A
// slice of A (128 x 8) and of B (8 x 128) is staged in shared memory, A
// transposed so that both are read along m and n with 128-bit loads. There
// are two stages: while the block multiplies one, each thread already has
// its part of the next slice in flight from global memory (one float4 of A,
// one of B) and stores it into the other stage afterwards, so there is one
// barrier per slice.
//
// Each thread owns 8 x 8 elements of C: rows ty*4 + {0..3} and 64 + ty*4 +
// {0..3}, columns tx*4 + {0..3} and 64 + tx*4 + {0..3}, with (tx, ty) on a
// 16 x 16 grid. The grid is laid out for 64-wide wavefronts: a wavefront
// spans all 16 tx by 4 ty, so its LDS reads of a k row are 256 contiguous
// bytes of B and 64 of A (4 addresses, each broadcast to 16 lanes). Per k
// step a thread does 4 ds_read_b128 and 64 v_fma_f32. Under nvcc (32-wide
// warps) the same layout gives each warp 16 tx by 2 ty, also free of bank
// conflicts, so nothing depends on the width for correctness or for speed.
//
// The text is the common subset of HIP and CUDA with no #include (hipcc gets
// hip_runtime.h from the command line) so that nvcc compiles it too.
//
// Edges: a block whose tile lies inside C, with 16-byte aligned matrices and
// leading dimensions that are multiples of 4, moves float4s everywhere;
// other blocks, and the last slice when k % 8 != 0, load and store one
// float at a time with bounds checks, padding the tiles with zeros. So any
// m, n, k >= 1 and any lda >= k, ldb >= n, ldc >= n are correct.

enum {
  kiln_sgemm_bm = 128,  // rows of C per block
  kiln_sgemm_bn = 128,  // columns of C per block
  kiln_sgemm_bk = 8,    // k per shared-memory slice
  kiln_sgemm_threads = 256,
  // The transposed A slice is stored with rows of 128 + 4 floats: the
  // transposing stores of 32 neighbouring lanes then fall in 32 different
  // banks, and rows stay 16-byte aligned for the float4 reads.
  kiln_sgemm_a_stride = kiln_sgemm_bm + 4,
};

// Whether a matrix allows float4 accesses along its rows. The tiled
// kernels (sgemm_tiled.*) use it too.
__device__ static bool kiln_sgemm_aligned(const float *p, unsigned int ld) {
  return ((unsigned long long)p & 15u) == 0 && (ld & 3u) == 0;
}

// Writes four neighbouring sums of C, v = alpha times them, at row r,
// columns col..col + 3, adding beta * C where beta != 0 (C is not read
// otherwise): one float4 where the caller knows its tile lies inside C and
// C allows it (fast), else each float with its bounds check.
__device__ static __forceinline__ void kiln_sgemm_store4(
    float *c, unsigned int ldc, unsigned int m, unsigned int n,
    unsigned int r, unsigned int col, float (&v)[4], float beta, bool fast) {
  if (fast) {
    float4 *p = (float4 *)(c + (unsigned long long)r * ldc + col);
    if (beta != 0.0f) {
      float4 old = *p;
      v[0] = fmaf(beta, old.x, v[0]);
      v[1] = fmaf(beta, old.y, v[1]);
      v[2] = fmaf(beta, old.z, v[2]);
      v[3] = fmaf(beta, old.w, v[3]);
    }
    *p = make_float4(v[0], v[1], v[2], v[3]);
  } else if (r < m) {
#pragma unroll
    for (unsigned int j = 0; j < 4u; ++j) {
      if (col + j < n) {
        float *p = c + (unsigned long long)r * ldc + col + j;
        *p = beta != 0.0f ? fmaf(beta, *p, v[j]) : v[j];
      }
    }
  }
}

// Writes a thread's TM x TN sums of C, alpha times them, for a BM x BN
// tile at (row0, col0) whose threads form a TX x TY grid (TX = BN / TN,
// TY = BM / TM): the thread (tx, ty) holds rows row0 + (i / 4) * 4 * TY +
// ty * 4 + i % 4, and the q-th float4 of a row starts at column
// col0 + q * 4 * TX + tx * 4. float4s throughout where the tile lies
// inside C and C allows them. The tiled kernels (sgemm_tiled.*) write C
// through it too.
template <unsigned int BM, unsigned int BN, unsigned int TM, unsigned int TN>
__device__ static __forceinline__ void kiln_sgemm_store_tile(
    float *c, unsigned int ldc, unsigned int m, unsigned int n,
    unsigned int row0, unsigned int col0, unsigned int tx, unsigned int ty,
    const float (&acc)[TM][TN], float alpha, float beta) {
  constexpr unsigned int TX = BN / TN, TY = BM / TM;
  const bool fast =
      kiln_sgemm_aligned(c, ldc) && row0 + BM <= m && col0 + BN <= n;
#pragma unroll
  for (unsigned int i = 0; i < TM; ++i) {
    const unsigned int r = row0 + (i >> 2) * 4u * TY + ty * 4u + (i & 3u);
#pragma unroll
    for (unsigned int q = 0; q < TN / 4u; ++q) {
      const unsigned int col = col0 + q * 4u * TX + tx * 4u;
      float v[4];
#pragma unroll
      for (unsigned int j = 0; j < 4u; ++j) {
        v[j] = alpha * acc[i][q * 4u + j];
      }
      kiln_sgemm_store4(c, ldc, m, n, r, col, v, beta, fast);
    }
  }
}

// HIP's second __launch_bounds__ argument is not CUDA's (blocks per
// multiprocessor), so only the block size is given.
extern "C" __global__ void __launch_bounds__(kiln_sgemm_threads)
    kiln_sgemm_f32(float *c, const float *a, const float *b, unsigned int m,
                   unsigned int n, unsigned int k, unsigned int lda,
                   unsigned int ldb, unsigned int ldc, float alpha,
                   float beta) {
  __shared__ __align__(16) float a_tile[2][kiln_sgemm_bk][kiln_sgemm_a_stride];
  __shared__ float4 b_tile[2][kiln_sgemm_bk][kiln_sgemm_bn / 4];

  const unsigned int tid = threadIdx.x;
  const unsigned int row0 = blockIdx.y * kiln_sgemm_bm;
  const unsigned int col0 = blockIdx.x * kiln_sgemm_bn;

  // What this thread stages: A row a_row of the tile, k columns a_col..+3;
  // B k row b_row, columns b_col..+3. A wavefront reads 32 rows x 32 bytes
  // of A and 2 rows x 512 contiguous bytes of B.
  const unsigned int a_row = tid >> 1;
  const unsigned int a_col = (tid & 1u) * 4u;
  const unsigned int b_row = tid >> 5;
  const unsigned int b_col = (tid & 31u) * 4u;
  const unsigned int a_m = row0 + a_row;  // global row of A
  const unsigned int b_n = col0 + b_col;  // global column of B
  const unsigned long long a_base = (unsigned long long)a_m * lda + a_col;
  const unsigned long long b_step = (unsigned long long)kiln_sgemm_bk * ldb;
  unsigned long long b_off = (unsigned long long)b_row * ldb + b_n;
  const bool a_fast =
      kiln_sgemm_aligned(a, lda) && row0 + kiln_sgemm_bm <= m;
  const bool b_fast =
      kiln_sgemm_aligned(b, ldb) && col0 + kiln_sgemm_bn <= n;

  // The 16 x 16 grid of threads that compute, laid out per wavefront as
  // above.
  const unsigned int tx = tid & 15u;
  const unsigned int ty = tid >> 4;

  const unsigned int slices = (k + kiln_sgemm_bk - 1u) / kiln_sgemm_bk;
  float4 next_a, next_b;
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      acc[i][j] = 0.0f;
    }
  }

  for (unsigned int s = 0; s <= slices; ++s) {
    // Fetch slice s (ahead of the multiplication of slice s - 1 below).
    if (s < slices) {
      const unsigned int k0 = s * kiln_sgemm_bk;
      const bool whole_k = k0 + kiln_sgemm_bk <= k;
      if (a_fast && whole_k) {
        next_a = *(const float4 *)(a + a_base + k0);
      } else {
        float v[4];
#pragma unroll
        for (unsigned int j = 0; j < 4u; ++j) {
          unsigned int kk = k0 + a_col + j;
          v[j] = a_m < m && kk < k ? a[a_base + k0 + j] : 0.0f;
        }
        next_a = make_float4(v[0], v[1], v[2], v[3]);
      }
      if (b_fast && whole_k) {
        next_b = *(const float4 *)(b + b_off);
      } else {
        float v[4];
        bool row_in = k0 + b_row < k;
#pragma unroll
        for (unsigned int j = 0; j < 4u; ++j) {
          v[j] = row_in && b_n + j < n ? b[b_off + j] : 0.0f;
        }
        next_b = make_float4(v[0], v[1], v[2], v[3]);
      }
      b_off += b_step;
    }

    if (s > 0) {
      const unsigned int cur = (s - 1u) & 1u;
#pragma unroll
      for (int kk = 0; kk < kiln_sgemm_bk; ++kk) {
        float4 a0 = *(const float4 *)&a_tile[cur][kk][ty * 4u];
        float4 a1 = *(const float4 *)&a_tile[cur][kk][64u + ty * 4u];
        float4 b0 = b_tile[cur][kk][tx];
        float4 b1 = b_tile[cur][kk][16u + tx];
        const float ar[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        const float br[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int i = 0; i < 8; ++i) {
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
          }
        }
      }
    }

    // Stage slice s. Its buffer was last read while multiplying slice
    // s - 2, which every thread finished before the barrier of step s - 1.
    if (s < slices) {
      const unsigned int buf = s & 1u;
      a_tile[buf][a_col + 0u][a_row] = next_a.x;
      a_tile[buf][a_col + 1u][a_row] = next_a.y;
      a_tile[buf][a_col + 2u][a_row] = next_a.z;
      a_tile[buf][a_col + 3u][a_row] = next_a.w;
      b_tile[buf][b_row][tid & 31u] = next_b;
    }
    __syncthreads();
  }

  kiln_sgemm_store_tile<kiln_sgemm_bm, kiln_sgemm_bn, 8, 8>(
      c, ldc, m, n, row0, col0, tx, ty, acc, alpha, beta);
}
