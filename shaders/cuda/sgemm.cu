// kiln_sgemm_f32 (docs/kernels.md): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// in float32 FMAs, no tensor cores; beta == 0 does not read C.
//
// The launch shape is this kernel's own, and kiln_sgemm_f32() uses it:
//   block = 256 x 1 x 1 threads, no dynamic shared memory (24,832 bytes
//   static), one block per SM,
//   grid  = ceil(n / 256) x ceil(m / 128) x 1   (x over columns of C).
// A block covers as much of C as two blocks of the 128 x 128 kernels of
// the other backends, so core/builtins/gemm.c's choice of kernel by size holds.
//
// Each block computes a 128 x 256 tile of C, walking k in slices of 8. A
// slice of A (128 x 8) and of B (8 x 256) is staged in shared memory, A
// transposed so that both are read along m and n with 128-bit loads, in two
// stages: while the block multiplies one, each thread already has its part
// of the next slice in flight from global memory (one float4 of A, two of
// B).
//
// Each thread owns 8 x 16 sums of C: rows ty*4 + {0..3} and 64 + ty*4 +
// {0..3}, columns q*64 + tx*4 + {0..3} for q < 4, with (tx, ty) on a 16 x 16
// grid. A warp spans 8 tx by 4 ty, so its shared-memory reads of a k row
// are 128 contiguous bytes of B and 64 of A (4 addresses, each broadcast):
// no bank conflicts. Per k row a thread does 6 LDS.128 and 128 FFMA, where
// 8 x 8 sums per thread took 4 and 64: the shared-memory pipe, which an
// LDS.128 keeps busy for about 3 wavefronts on the H100, is no longer as
// loaded as the FMA pipe. The price is registers (about 250): one block,
// 8 warps, per SM.
//
// With one block per SM nothing hides a barrier, so the loop is arranged
// as in CUTLASS's pipelined kernels: the fragments (this thread's part of
// one k row of A and B, in registers) are double-buffered; the next slice
// is stored into the other stage and the barrier taken before the last k
// row of the slice is multiplied, and that row's FMAs then cover the loads
// of the next slice's first fragments. One barrier per slice, 1024 FMAs per
// thread between barriers. (H100, 4096^3, against cuBLAS FP32 in the same
// run: 0.79 for the previous 128 x 128, 8 x 8, two-blocks-per-SM kernel,
// 0.90 to 0.91 for this one, docs/performance.md. Three to six cp.async
// stages instead of the registers gave nothing: the barrier, not the
// memory's latency, was what the old kernel waited on.)
//
// Edges: a block whose tile lies inside C, with 16-byte aligned matrices and
// leading dimensions that are multiples of 4, moves float4s everywhere;
// other blocks, and the last slice when k % 8 != 0, load and store one
// float at a time with bounds checks, padding the tiles with zeros. So any
// m, n, k >= 1 and any lda >= k, ldb >= n, ldc >= n are correct.

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

// The kernel's body for a BM x BN tile, TM x TN sums per thread, slices of
// BK rows of k; kiln_sgemm_f32 is <128, 256, 8, 16, 8>. Threads per block:
// (BM / TM) * (BN / TN).
template <unsigned int BM, unsigned int BN, unsigned int TM, unsigned int TN,
          unsigned int BK>
__device__ __forceinline__ void kiln_sgemm_body(
    float *c, const float *a, const float *b, unsigned int m, unsigned int n,
    unsigned int k, unsigned int lda, unsigned int ldb, unsigned int ldc,
    float alpha, float beta) {
  constexpr unsigned int TX = BN / TN, TY = BM / TM;  // the threads' grid
  constexpr unsigned int T = TX * TY;
  constexpr unsigned int RM = TM / 4, RN = TN / 4;
  // The transposed A slice is stored with rows of BM + 4 floats: the
  // transposing stores of a warp then fall in (nearly) distinct banks, and
  // rows stay 16-byte aligned for the float4 reads.
  constexpr unsigned int AS = BM + 4;
  constexpr unsigned int A_STAGE = BK * AS, B_STAGE = BK * BN;
  constexpr unsigned int A_LOADS = BM * BK / 4 / T, B_LOADS = BK * BN / 4 / T;
  constexpr unsigned int SMEM = 2 * (A_STAGE + B_STAGE);
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BM % TM == 0 && BN % TN == 0,
                "whole float4s per thread");
  static_assert(TX % 8 == 0 && TY % 4 == 0 && T % 32 == 0,
                "a warp spans 8 tx by 4 ty");
  static_assert(BK >= 2 && BK % 2 == 0,
                "an even number of k rows per slice (the fragments alternate)");
  static_assert(A_LOADS * T * 4 == BM * BK && B_LOADS * T * 4 == BK * BN,
                "whole float4s per thread per slice");
  __shared__ __align__(16) float smem[SMEM];
  float *const a_tile = smem;                // [2][BK][AS]
  float *const b_tile = smem + 2 * A_STAGE;  // [2][BK][BN]

  const unsigned int tid = threadIdx.x;
  const unsigned int lane = tid & 31u, wg = tid >> 5;
  const unsigned int tx = (wg % (TX / 8u)) * 8u + (lane & 7u);
  const unsigned int ty = (wg / (TX / 8u)) * 4u + (lane >> 3);
  const unsigned int row0 = blockIdx.y * BM;
  const unsigned int col0 = blockIdx.x * BN;
  const bool a_fast = kiln_sgemm_aligned(a, lda) && row0 + BM <= m;
  const bool b_fast = kiln_sgemm_aligned(b, ldb) && col0 + BN <= n;
  const unsigned int slices = (k + BK - 1u) / BK;

  float acc[TM][TN];
#pragma unroll
  for (unsigned int i = 0; i < TM; ++i) {
#pragma unroll
    for (unsigned int j = 0; j < TN; ++j) {
      acc[i][j] = 0.0f;
    }
  }

  // Slice s from global memory into registers: float4 f = tid + l * T of A
  // is row f / (BK / 4), k columns f % (BK / 4) * 4 .. + 3; of B, k row
  // f / (BN / 4), columns f % (BN / 4) * 4 .. + 3.
  float4 next_a[A_LOADS], next_b[B_LOADS];
  auto fetch = [&](unsigned int s) {
    const unsigned int k0 = s * BK;
    const bool whole_k = k0 + BK <= k;
#pragma unroll
    for (unsigned int l = 0; l < A_LOADS; ++l) {
      const unsigned int f = tid + l * T;
      const unsigned int r = row0 + f / (BK / 4u);
      const unsigned int kk = k0 + f % (BK / 4u) * 4u;
      const float *p = a + (unsigned long long)r * lda + kk;
      if (a_fast && whole_k) {
        next_a[l] = *(const float4 *)p;
      } else {
        float v[4];
#pragma unroll
        for (unsigned int j = 0; j < 4u; ++j) {
          v[j] = r < m && kk + j < k ? p[j] : 0.0f;
        }
        next_a[l] = make_float4(v[0], v[1], v[2], v[3]);
      }
    }
#pragma unroll
    for (unsigned int l = 0; l < B_LOADS; ++l) {
      const unsigned int f = tid + l * T;
      const unsigned int kk = k0 + f / (BN / 4u);
      const unsigned int col = col0 + f % (BN / 4u) * 4u;
      const float *p = b + (unsigned long long)kk * ldb + col;
      if (b_fast && whole_k) {
        next_b[l] = *(const float4 *)p;
      } else {
        float v[4];
#pragma unroll
        for (unsigned int j = 0; j < 4u; ++j) {
          v[j] = kk < k && col + j < n ? p[j] : 0.0f;
        }
        next_b[l] = make_float4(v[0], v[1], v[2], v[3]);
      }
    }
  };
  // The fetched slice into stage buf, A transposed.
  auto stage = [&](unsigned int buf) {
    float *as = a_tile + buf * A_STAGE;
    float *bs = b_tile + buf * B_STAGE;
#pragma unroll
    for (unsigned int l = 0; l < A_LOADS; ++l) {
      const unsigned int f = tid + l * T;
      const unsigned int r = f / (BK / 4u), kk = f % (BK / 4u) * 4u;
      as[(kk + 0u) * AS + r] = next_a[l].x;
      as[(kk + 1u) * AS + r] = next_a[l].y;
      as[(kk + 2u) * AS + r] = next_a[l].z;
      as[(kk + 3u) * AS + r] = next_a[l].w;
    }
#pragma unroll
    for (unsigned int l = 0; l < B_LOADS; ++l) {
      const unsigned int f = tid + l * T;
      *(float4 *)&bs[f / (BN / 4u) * BN + f % (BN / 4u) * 4u] = next_b[l];
    }
  };
  // Fragments: this thread's part of one k row of the stage, twice.
  float4 frag_a[2][RM], frag_b[2][RN];
  auto load_frag = [&](unsigned int buf, unsigned int kk, unsigned int f) {
    const float *as = a_tile + buf * A_STAGE + kk * AS;
    const float *bs = b_tile + buf * B_STAGE + kk * BN;
#pragma unroll
    for (unsigned int q = 0; q < RM; ++q) {
      frag_a[f][q] = *(const float4 *)&as[q * TY * 4u + ty * 4u];
    }
#pragma unroll
    for (unsigned int q = 0; q < RN; ++q) {
      frag_b[f][q] = *(const float4 *)&bs[q * TX * 4u + tx * 4u];
    }
  };
  auto multiply = [&](unsigned int f) {
    float ar[TM], br[TN];
#pragma unroll
    for (unsigned int q = 0; q < RM; ++q) {
      ar[q * 4u + 0u] = frag_a[f][q].x;
      ar[q * 4u + 1u] = frag_a[f][q].y;
      ar[q * 4u + 2u] = frag_a[f][q].z;
      ar[q * 4u + 3u] = frag_a[f][q].w;
    }
#pragma unroll
    for (unsigned int q = 0; q < RN; ++q) {
      br[q * 4u + 0u] = frag_b[f][q].x;
      br[q * 4u + 1u] = frag_b[f][q].y;
      br[q * 4u + 2u] = frag_b[f][q].z;
      br[q * 4u + 3u] = frag_b[f][q].w;
    }
#pragma unroll
    for (unsigned int i = 0; i < TM; ++i) {
#pragma unroll
      for (unsigned int j = 0; j < TN; ++j) {
        acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
      }
    }
  };

  fetch(0);
  stage(0);
  __syncthreads();
  load_frag(0, 0, 0);
  for (unsigned int s = 0; s < slices; ++s) {
    const unsigned int cur = s & 1u, other = cur ^ 1u;
    const bool more = s + 1u < slices;
    if (more) {
      fetch(s + 1u);
    }
#pragma unroll
    for (unsigned int i = 0; i < BK; ++i) {
      // The next k row's fragments: this slice's, or after the barrier
      // below the next slice's first.
      if (i + 1u < BK) {
        load_frag(cur, i + 1u, (i + 1u) & 1u);
      } else if (more) {
        load_frag(other, 0, (i + 1u) & 1u);
      }
      if (i + 2u == BK) {
        // Stage `other` was last read for slice s - 1, before the barrier
        // of that step; this barrier publishes slice s + 1 in it, and
        // every read of stage `cur` has been issued (its last row is
        // already in registers), so the next step may overwrite it.
        if (more) {
          stage(other);
        }
        __syncthreads();
      }
      multiply(i & 1u);
    }
  }

  kiln_sgemm_store_tile<BM, BN, TM, TN>(c, ldc, m, n, row0, col0, tx, ty, acc,
                                        alpha, beta);
}

extern "C" __global__ void __launch_bounds__(256, 1)
    kiln_sgemm_f32(float *c, const float *a, const float *b, unsigned int m,
                   unsigned int n, unsigned int k, unsigned int lda,
                   unsigned int ldb, unsigned int ldc, float alpha,
                   float beta) {
  kiln_sgemm_body<128, 256, 8, 16, 8>(c, a, b, m, n, k, lda, ldb, ldc,
                                     alpha, beta);
}
