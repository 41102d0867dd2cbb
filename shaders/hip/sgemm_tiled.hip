// kiln_sgemm_f32_mid, kiln_sgemm_f32_small and kiln_sgemm_f32_split
// (docs/kernels.md): the same product as kiln_sgemm_f32 (sgemm.cu), with the
// same parameters, in smaller tiles for problems that give the 128 x 128
// kernel too few blocks to fill the GPU. All are kiln_sgemm_tiled below
// with other shapes:
//
//   kernel                tile of C  per thread  k groups x rows  stages
//   kiln_sgemm_f32_mid    64 x 64    8 x 8       4 x 4            2
//   kiln_sgemm_f32_small  32 x 64    4 x 8       4 x 16           1
//   kiln_sgemm_f32_split  64 x 64    8 x 8       4 x 4            2
//
// Each has 256 threads.
//
// grid = ceil(n / BN) x ceil(m / BM) x 1 (x over columns of C), no dynamic
// shared memory; kiln_sgemm_f32() picks the kernel and this shape.
//
// kiln_sgemm_f32_split takes three more parameters, (float *parts,
// unsigned int *tickets, unsigned int k_split), and grid.z = ceil(k /
// k_split) blocks per tile, block z multiplying k rows z * k_split ..
// (z + 1) * k_split - 1 (k_split a multiple of the 16 rows of k of one
// step): a problem with fewer 64 x 64 tiles than SMs (4096 x 64 x 4096)
// gets blocks enough to fill them, and keeps the larger tile's fewer loads
// per FMA (on the H100 31 TFLOP/s there against 25 for the 32 x 64 tile
// split the same way). Each block writes its tile's sums to parts, at (z *
// tiles + tile) * BM * BN, and takes a ticket from tickets[tile]; the last
// of a tile's blocks adds the parts in the order of z and writes C, and
// puts the counter back to 0 for the next call on the stream. Which block
// comes last changes nothing: the result is the same run to run.
//
// A block walks k in steps of KS = KG * BK. Each step's slice of A (BM x
// KS, stored transposed) and of B (KS x BN) is staged in shared memory, the
// next step's float4s in flight from global memory while the block
// multiplies the current one. With two stages, as in sgemm.cu, that takes
// one barrier per step; with one, two barriers, but the same shared memory
// holds twice the k per step: a small grid on a long k (4096 x 64 x 4096)
// waits on the latency of each step's loads, so fewer, larger steps are
// faster there (24.2 against 21.9 TFLOP/s on the H100). The threads
// form KG groups and group g multiplies rows g*BK .. g*BK + BK - 1 of every
// slice: the tile's k range is split between the groups of one block, which
// gives a small grid more warps per SM without a second launch or a
// workspace. At the end group 0 adds the others' sums through shared
// memory in a fixed order, ((g0 + g1) + g2) + g3, and alone writes C, so
// the result does not depend on timing.
//
// In a group, thread (tx, ty) of the BN/TN x BM/TM grid (tx fastest) owns
// rows q * 4 * (BM/TM) + ty*4 + {0..3} for q < TM/4, and columns likewise:
// each k row costs TM/4 + TN/4 LDS.128 of neighbouring float4s and TM * TN
// FFMAs, without bank conflicts.
//
// Edges as in sgemm.cu: a block whose tile lies inside C, with 16-byte
// aligned matrices and leading dimensions that are multiples of 4, moves
// float4s; other blocks, and the last step when k % KS != 0, load and
// store one float at a time with bounds checks and zero padding. So any m,
// n, k >= 1 and any lda >= k, ldb >= n, ldc >= n are correct.
//
// It uses sgemm.hip's kiln_sgemm_aligned and kiln_sgemm_store_tile
// (builtins.hip includes sgemm.hip first). The text is the common subset of
// HIP and CUDA with no #include (hipcc gets hip_runtime.h from the command
// line), the same as sgemm_tiled.cu but for __launch_bounds__, whose second
// argument HIP reads otherwise. In every kernel here a wavefront of 64 spans
// 8 tx by 8 ty: its LDS reads of a k row are 8 neighbouring float4s of B
// and 8 of A, each broadcast to 8 lanes.

// Where kiln_sgemm_f32_split's blocks meet (above); all 0 for the others.
struct kiln_sgemm_split {
  float *parts;
  unsigned int *tickets;
  unsigned int k_split;
};

// kiln_sgemm_f32_split's meeting of a tile's blocks (see the top): the
// holders of the sums (`writer`, TM x TN each, element e = i * TN + j of
// thread t at part[e * GT + t]) store them, the block takes a ticket, and
// the last block's holders load every block's part into `acc`, added in
// the order of z. Returns whether this block is the last (it then writes
// C).
template <unsigned int TILE, unsigned int GT, unsigned int TM, unsigned int TN>
__device__ __forceinline__ bool kiln_sgemm_split_sum(float (&acc)[TM][TN],
                                                     kiln_sgemm_split split,
                                                     bool writer) {
  __shared__ bool last;
  const unsigned int tile = blockIdx.y * gridDim.x + blockIdx.x;
  const unsigned long long tiles = (unsigned long long)gridDim.x * gridDim.y;
  const unsigned int t = threadIdx.x % GT;
  if (writer) {
    float *part = split.parts + (blockIdx.z * tiles + tile) * TILE;
#pragma unroll
    for (unsigned int e = 0; e < TM * TN; ++e) {
      part[e * GT + t] = acc[e / TN][e % TN];
    }
    // The part is seen by every block before the ticket is.
    __threadfence();
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    // atomicInc wraps the counter to 0 at the last ticket: ready for the
    // stream's next call.
    last = atomicInc(&split.tickets[tile], gridDim.z - 1) == gridDim.z - 1;
    // The last ticket's holder sees every part after taking it.
    __threadfence();
  }
  __syncthreads();
  if (!last) {
    return false;
  }
  if (writer) {
    const volatile float *part = split.parts + (unsigned long long)tile * TILE;
#pragma unroll
    for (unsigned int e = 0; e < TM * TN; ++e) {
      acc[e / TN][e % TN] = part[e * GT + t];
    }
    for (unsigned int z = 1; z < gridDim.z; ++z) {
      part += tiles * TILE;
#pragma unroll
      for (unsigned int e = 0; e < TM * TN; ++e) {
        acc[e / TN][e % TN] += part[e * GT + t];
      }
    }
  }
  return true;
}

template <unsigned int BM, unsigned int BN, unsigned int TM, unsigned int TN,
          unsigned int KG, unsigned int BK, unsigned int STAGES, bool SPLIT>
__device__ __forceinline__ void kiln_sgemm_tiled(
    float *c, const float *a, const float *b, unsigned int m, unsigned int n,
    unsigned int k, unsigned int lda, unsigned int ldb, unsigned int ldc,
    float alpha, float beta, kiln_sgemm_split split) {
  constexpr unsigned int TX = BN / TN, TY = BM / TM; // a group's grid
  constexpr unsigned int GT = TX * TY;               // threads per group
  constexpr unsigned int T = GT * KG;
  constexpr unsigned int KS = KG * BK; // k per step
  constexpr unsigned int RM = TM / 4, RN = TN / 4;
  // Padding the transposed A rows by 4 floats spreads a warp's transposing
  // stores over the banks and keeps rows 16-byte aligned.
  constexpr unsigned int AS = BM + 4;
  constexpr unsigned int A_VECS = BM * KS / 4, B_VECS = KS * BN / 4;
  constexpr unsigned int A_LOADS = (A_VECS + T - 1) / T;
  constexpr unsigned int B_LOADS = (B_VECS + T - 1) / T;
  constexpr unsigned int STAGE = KS * (AS + BN);
  constexpr unsigned int SMEM =
      STAGES * STAGE > BM * BN ? STAGES * STAGE : BM * BN; // sums reuse it
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BM % TM == 0 && BN % TN == 0,
                "whole float4s per thread");
  static_assert(KS % 4 == 0 && BN % 4 == 0, "whole float4s per slice row");
  __shared__ __align__(16) float smem[SMEM];

  if (SPLIT) {
    // This block's rows of k, as a product of its own.
    const unsigned int k0 = blockIdx.z * split.k_split;
    a += k0;
    b += (unsigned long long)k0 * ldb;
    k = k - k0 < split.k_split ? k - k0 : split.k_split;
  }
  const unsigned int tid = threadIdx.x;
  const unsigned int group = tid / GT;
  const unsigned int tx = tid % GT % TX;
  const unsigned int ty = tid % GT / TX;
  const unsigned int row0 = blockIdx.y * BM;
  const unsigned int col0 = blockIdx.x * BN;
  const bool a_fast = kiln_sgemm_aligned(a, lda) && row0 + BM <= m;
  const bool b_fast = kiln_sgemm_aligned(b, ldb) && col0 + BN <= n;

  const unsigned int steps = (k + KS - 1u) / KS;
  float4 next_a[A_LOADS], next_b[B_LOADS];
  float acc[TM][TN];
#pragma unroll
  for (unsigned int i = 0; i < TM; ++i) {
#pragma unroll
    for (unsigned int j = 0; j < TN; ++j) {
      acc[i][j] = 0.0f;
    }
  }

  for (unsigned int s = 0; s <= steps; ++s) {
    // Fetch step s (ahead of the multiplication of step s - 1 below).
    if (s < steps) {
      const unsigned int k0 = s * KS;
      const bool whole_k = k0 + KS <= k;
#pragma unroll
      for (unsigned int l = 0; l < A_LOADS; ++l) {
        const unsigned int f = tid + l * T;
        const unsigned int r = row0 + f / (KS / 4u);
        const unsigned int kk = k0 + f % (KS / 4u) * 4u;
        const float *p = a + (unsigned long long)r * lda + kk;
        if (A_VECS % T != 0 && f >= A_VECS) {
          continue;
        } else if (a_fast && whole_k) {
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
        if (B_VECS % T != 0 && f >= B_VECS) {
          continue;
        } else if (b_fast && whole_k) {
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
    }

    if (s > 0) {
      const float *at = smem + (s - 1u) % STAGES * STAGE;
      const float *bt = at + KS * AS;
#pragma unroll
      for (unsigned int kk = group * BK; kk < group * BK + BK; ++kk) {
        float ar[TM], br[TN];
#pragma unroll
        for (unsigned int q = 0; q < RM; ++q) {
          float4 v = *(const float4 *)&at[kk * AS + q * 4u * TY + ty * 4u];
          ar[q * 4u] = v.x;
          ar[q * 4u + 1u] = v.y;
          ar[q * 4u + 2u] = v.z;
          ar[q * 4u + 3u] = v.w;
        }
#pragma unroll
        for (unsigned int q = 0; q < RN; ++q) {
          float4 v = *(const float4 *)&bt[kk * BN + q * 4u * TX + tx * 4u];
          br[q * 4u] = v.x;
          br[q * 4u + 1u] = v.y;
          br[q * 4u + 2u] = v.z;
          br[q * 4u + 3u] = v.w;
        }
#pragma unroll
        for (unsigned int i = 0; i < TM; ++i) {
#pragma unroll
          for (unsigned int j = 0; j < TN; ++j) {
            acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
          }
        }
      }
    }

    // Stage step s. Its buffer was last read while multiplying step s -
    // STAGES: with two stages every thread finished that before the barrier
    // of step s - 1; with one, the barrier here waits for it.
    if (STAGES == 1) {
      __syncthreads();
    }
    if (s < steps) {
      float *at = smem + s % STAGES * STAGE;
      float *bt = at + KS * AS;
#pragma unroll
      for (unsigned int l = 0; l < A_LOADS; ++l) {
        const unsigned int f = tid + l * T;
        if (A_VECS % T == 0 || f < A_VECS) {
          const unsigned int r = f / (KS / 4u);
          const unsigned int kk = f % (KS / 4u) * 4u;
          at[(kk + 0u) * AS + r] = next_a[l].x;
          at[(kk + 1u) * AS + r] = next_a[l].y;
          at[(kk + 2u) * AS + r] = next_a[l].z;
          at[(kk + 3u) * AS + r] = next_a[l].w;
        }
      }
#pragma unroll
      for (unsigned int l = 0; l < B_LOADS; ++l) {
        const unsigned int f = tid + l * T;
        if (B_VECS % T == 0 || f < B_VECS) {
          *(float4 *)&bt[f * 4u] = next_b[l];
        }
      }
    }
    __syncthreads();
  }

  // Group 0 adds the other groups' sums, one group at a time, element e of
  // thread t at smem[e * GT + t] (consecutive threads, consecutive banks).
  // The loop's last barrier has ended every read of the stages.
  const unsigned int t = tid % GT;
#pragma unroll 1
  for (unsigned int g = 1; g < KG; ++g) {
    if (group == g) {
#pragma unroll
      for (unsigned int i = 0; i < TM; ++i) {
#pragma unroll
        for (unsigned int j = 0; j < TN; ++j) {
          smem[(i * TN + j) * GT + t] = acc[i][j];
        }
      }
    }
    __syncthreads();
    if (group == 0) {
#pragma unroll
      for (unsigned int i = 0; i < TM; ++i) {
#pragma unroll
        for (unsigned int j = 0; j < TN; ++j) {
          acc[i][j] += smem[(i * TN + j) * GT + t];
        }
      }
    }
    __syncthreads();
  }
  if (SPLIT && !kiln_sgemm_split_sum<BM * BN, GT>(acc, split, group == 0)) {
    return;
  }
  if (group != 0) {
    return;
  }

  kiln_sgemm_store_tile<BM, BN, TM, TN>(c, ldc, m, n, row0, col0, tx, ty, acc,
                                        alpha, beta);
}

extern "C" __global__ void __launch_bounds__(256)
    kiln_sgemm_f32_mid(float *c, const float *a, const float *b, unsigned int m,
                       unsigned int n, unsigned int k, unsigned int lda,
                       unsigned int ldb, unsigned int ldc, float alpha,
                       float beta) {
  kiln_sgemm_tiled<64, 64, 8, 8, 4, 4, 2, false>(
      c, a, b, m, n, k, lda, ldb, ldc, alpha, beta, kiln_sgemm_split());
}

extern "C" __global__ void __launch_bounds__(256)
    kiln_sgemm_f32_small(float *c, const float *a, const float *b,
                         unsigned int m, unsigned int n, unsigned int k,
                         unsigned int lda, unsigned int ldb, unsigned int ldc,
                         float alpha, float beta) {
  kiln_sgemm_tiled<32, 64, 4, 8, 4, 16, 1, false>(
      c, a, b, m, n, k, lda, ldb, ldc, alpha, beta, kiln_sgemm_split());
}

extern "C" __global__ void __launch_bounds__(256)
    kiln_sgemm_f32_split(float *c, const float *a, const float *b,
                         unsigned int m, unsigned int n, unsigned int k,
                         unsigned int lda, unsigned int ldb, unsigned int ldc,
                         float alpha, float beta, float *parts,
                         unsigned int *tickets, unsigned int k_split) {
  kiln_sgemm_tiled<64, 64, 8, 8, 4, 4, 2, true>(
      c, a, b, m, n, k, lda, ldb, ldc, alpha, beta,
      kiln_sgemm_split{parts, tickets, k_split});
}
