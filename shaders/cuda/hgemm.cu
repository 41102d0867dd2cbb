// kiln_hgemm_f16_mma, kiln_hgemm_f16_mma_k32 and kiln_hgemm_f16
// (docs/kernels.md): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// with A and B in binary16 and C in float32, on the tensor cores: products
// of f16 pairs summed in f32 (mma.sync m16n8k16; two m16n8k8 on sm_75).
// beta == 0 does not read C.
//
// The launch shape is this kernel's own, and kiln_hgemm_f16() uses it:
//   block = 256 x 1 x 1 threads (8 warps),
//   grid  = ceil(n / 256) x ceil(m / 128) x 1   (x over columns of C),
//   dynamic shared memory = 156,672 bytes (kiln_hgemm_f16_mma) or 81,408
//   (kiln_hgemm_f16_mma_k32), above the 48 KiB default: kiln raises the
//   kernel's limit. core/builtins/hgemm.c takes the first where the device gives
//   that much shared memory to a block, else the second (sm_86, sm_89),
//   else the portable kernel (sm_75's 64 KiB).
//
// Each block computes a 128 x 256 tile of C, walking k in slices of 64 (32
// for the _k32 kernel). A slice of A (128 x 64) and of B (64 x 256) is
// staged in shared memory in three stages: on sm_80 and newer the copies of
// the next two slices are in flight (cp.async) while the warps multiply the
// current one. On the H100 slices of 64 gave 10% more than slices of 32,
// and a fourth stage nothing. Rows are
// padded by 8 halves, so that the eight 16-byte rows an ldmatrix reads fall
// in different banks. Warps sit on a 2 x 4 grid, each owning a 64 x 64
// piece of C: per 16 of k it loads 4 A and 8 B fragments (ldmatrix; B
// transposed on the way, as mma wants it) for 32 mma instructions, and keeps
// 128 sums per thread in registers.
//
// Edges: a 16-byte piece of a tile row is copied whole when it lies inside
// its matrix and is 16-byte aligned (the matrix's address, and its leading
// dimension a multiple of 8); otherwise its halves are read one by one
// with bounds checks, zeros outside. The sums are written with bounds
// checks, in float2s where C allows, so any m, n, k >= 1 and lda >= k,
// ldb >= n, ldc >= n are correct.

#include "hgemm_shared.cuh"

enum {
  kiln_hgemm_bm = 128,
  kiln_hgemm_bn = 256,
  kiln_hgemm_threads = 256,
  kiln_hgemm_stages = 3,
  kiln_hgemm_b_ld = kiln_hgemm_bn + 8,  // halves per staged row of B
};

typedef unsigned short kiln_half_bits;

// Copies 16 bytes from global to shared memory: asynchronously where the
// architecture can (completion is awaited with kiln_hgemm_wait), else now.
__device__ static void kiln_hgemm_copy16(kiln_half_bits *dst,
                                         const kiln_half_bits *src) {
#if __CUDA_ARCH__ >= 800
  unsigned int s = (unsigned int)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s),
               "l"(src));
#else
  *(uint4 *)dst = *(const uint4 *)src;
#endif
}

__device__ static void kiln_hgemm_commit() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}

// Waits until at most `pending` groups of copies are still in flight.
template <int pending>
__device__ static void kiln_hgemm_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending));
#endif
}

// Stages 8 halves of row `row` (of `rows`), from column `col` (of `cols`),
// of a row-major matrix with leading dimension ld.
__device__ static void kiln_hgemm_piece(kiln_half_bits *dst,
                                        const kiln_half_bits *m,
                                        unsigned int row, unsigned int rows,
                                        unsigned int col, unsigned int cols,
                                        unsigned int ld, bool aligned) {
  const kiln_half_bits *src = m + (unsigned long long)row * ld + col;
  if (aligned && row < rows && col + 8u <= cols) {
    kiln_hgemm_copy16(dst, src);
    return;
  }
  kiln_half_bits v[8];
#pragma unroll
  for (unsigned int j = 0; j < 8u; ++j) {
    v[j] = row < rows && col + j < cols ? src[j] : (kiln_half_bits)0;
  }
  *(uint4 *)dst = *(const uint4 *)v;
}

// Four 8 x 8 matrices of halves from shared memory, one row address per
// lane; `trans` transposes each on the way.
template <bool trans>
__device__ static void kiln_hgemm_ldmatrix(unsigned int (&r)[4],
                                           const kiln_half_bits *p) {
  unsigned int s = (unsigned int)__cvta_generic_to_shared(p);
  if (trans) {
    asm volatile(
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, "
        "[%4];\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(s));
  } else {
    asm volatile(
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(s));
  }
}

// d += a (16 x 16, row-major fragment) * b (16 x 8, column fragment).
__device__ static void kiln_hgemm_mma(float (&d)[4], const unsigned int (&a)[4],
                                      unsigned int b0, unsigned int b1) {
#if __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(b0));
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[2]), "r"(a[3]), "r"(b1));
#endif
}

extern __shared__ __align__(128) kiln_half_bits kiln_hgemm_smem[];

// The kernel, for slices of kiln_hgemm_bk halves of k.
template <unsigned int kiln_hgemm_bk>
__device__ static void kiln_hgemm_body(float *c, const kiln_half_bits *a,
                                       const kiln_half_bits *b, unsigned int m,
                                       unsigned int n, unsigned int k,
                                       unsigned int lda, unsigned int ldb,
                                       unsigned int ldc, float alpha,
                                       float beta) {
  enum : unsigned int {
    kiln_hgemm_a_ld = kiln_hgemm_bk + 8,  // halves per staged row of A
    kiln_hgemm_a_halves = kiln_hgemm_bm * kiln_hgemm_a_ld,
    kiln_hgemm_stage_halves =
        kiln_hgemm_a_halves + kiln_hgemm_bk * kiln_hgemm_b_ld,
  };

  const unsigned int tid = threadIdx.x;
  const unsigned int warp = tid >> 5;
  const unsigned int lane = tid & 31u;
  unsigned int row0, col0;
  kiln_hgemm_tile(kiln_hgemm_bm, kiln_hgemm_bn, &row0, &col0);
  const unsigned int warp_m = (warp >> 2) * 64u;  // 2 warps down
  const unsigned int warp_n = (warp & 3u) * 64u;  // 4 across
  const bool a_aligned = ((unsigned long long)a & 15u) == 0 && (lda & 7u) == 0;
  const bool b_aligned = ((unsigned long long)b & 15u) == 0 && (ldb & 7u) == 0;
  const unsigned int slices = (k + kiln_hgemm_bk - 1u) / kiln_hgemm_bk;

  // Each thread stages 8-half pieces: of A, rows tid / 4 + 64 h, column
  // (tid % 4) * 8 (with BK = 32); of B, rows tid / 32 + 8 h, column
  // (tid % 32) * 8.
  enum {
    a_per_row = kiln_hgemm_bk / 8,
    a_rows_step = kiln_hgemm_threads / a_per_row,
    a_pieces = kiln_hgemm_bm / a_rows_step,
    b_rows_step = kiln_hgemm_threads / (kiln_hgemm_bn / 8),
    b_pieces = kiln_hgemm_bk / b_rows_step,
  };
  const unsigned int a_r = tid / a_per_row, a_c = (tid % a_per_row) * 8u;
  const unsigned int b_r = tid >> 5, b_c = (tid & 31u) * 8u;
  const bool a_inside = a_aligned && row0 + kiln_hgemm_bm <= m;
  const bool b_inside = b_aligned && col0 + kiln_hgemm_bn <= n;
  const kiln_half_bits *a_src = a + (unsigned long long)(row0 + a_r) * lda + a_c;
  const kiln_half_bits *b_src = b + (unsigned long long)b_r * ldb + col0 + b_c;
  auto stage = [&](unsigned int slice, unsigned int buf) {
    kiln_half_bits *sa = kiln_hgemm_smem + buf * kiln_hgemm_stage_halves;
    kiln_half_bits *sb = sa + kiln_hgemm_a_halves;
    const unsigned int k0 = slice * kiln_hgemm_bk;
    const bool whole_k = k0 + kiln_hgemm_bk <= k;
    if (a_inside && whole_k) {
#pragma unroll
      for (unsigned int h = 0; h < a_pieces; ++h) {
        kiln_hgemm_copy16(
            sa + (a_r + h * a_rows_step) * kiln_hgemm_a_ld + a_c,
            a_src + (unsigned long long)h * a_rows_step * lda + k0);
      }
    } else {
#pragma unroll
      for (unsigned int h = 0; h < a_pieces; ++h) {
        const unsigned int r = a_r + h * a_rows_step;
        kiln_hgemm_piece(sa + r * kiln_hgemm_a_ld + a_c, a, row0 + r, m,
                         k0 + a_c, k, lda, a_aligned);
      }
    }
    if (b_inside && whole_k) {
      const kiln_half_bits *src = b_src + (unsigned long long)k0 * ldb;
#pragma unroll
      for (unsigned int h = 0; h < b_pieces; ++h) {
        kiln_hgemm_copy16(
            sb + (b_r + h * b_rows_step) * kiln_hgemm_b_ld + b_c,
            src + (unsigned long long)h * b_rows_step * ldb);
      }
    } else {
#pragma unroll
      for (unsigned int h = 0; h < b_pieces; ++h) {
        const unsigned int kr = b_r + h * b_rows_step;
        kiln_hgemm_piece(sb + kr * kiln_hgemm_b_ld + b_c, b, k0 + kr, k,
                         col0 + b_c, n, ldb, b_aligned);
      }
    }
  };

  // acc[i][j]: rows warp_m + 16 i + {g, g + 8}, columns warp_n + 8 j +
  // {2 t, 2 t + 1}, with g = lane / 4 and t = lane % 4.
  float acc[4][8][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
    }
  }

#pragma unroll
  for (unsigned int s = 0; s < kiln_hgemm_stages - 1u; ++s) {
    if (s < slices) stage(s, s);
    kiln_hgemm_commit();
  }
  // The rows (A: m, B: k) and the column each lane points ldmatrix at.
  const unsigned int ld_row = lane & 15u, ld_col = (lane >> 4) * 8u;
  for (unsigned int s = 0; s < slices; ++s) {
    // Slice s has landed, and every warp is done with slice s - 1, whose
    // stage the copy issued next overwrites.
    kiln_hgemm_wait<kiln_hgemm_stages - 2>();
    __syncthreads();
    const unsigned int ahead = s + kiln_hgemm_stages - 1u;
    if (ahead < slices) stage(ahead, ahead % kiln_hgemm_stages);
    kiln_hgemm_commit();

    const kiln_half_bits *sa =
        kiln_hgemm_smem + (s % kiln_hgemm_stages) * kiln_hgemm_stage_halves;
    const kiln_half_bits *sb = sa + kiln_hgemm_a_halves;
#pragma unroll
    for (unsigned int kk = 0; kk < kiln_hgemm_bk; kk += 16u) {
      unsigned int fa[4][4], fb[4][4];
#pragma unroll
      for (unsigned int i = 0; i < 4u; ++i) {
        kiln_hgemm_ldmatrix<false>(
            fa[i],
            sa + (warp_m + i * 16u + ld_row) * kiln_hgemm_a_ld + kk + ld_col);
      }
      // fb[j] holds the columns 16 j .. 16 j + 15 of the warp's piece:
      // {b0, b1} of the first 8 columns, then of the next 8.
#pragma unroll
      for (unsigned int j = 0; j < 4u; ++j) {
        kiln_hgemm_ldmatrix<true>(
            fb[j],
            sb + (kk + ld_row) * kiln_hgemm_b_ld + warp_n + j * 16u + ld_col);
      }
#pragma unroll
      for (unsigned int i = 0; i < 4u; ++i) {
#pragma unroll
        for (unsigned int j = 0; j < 8u; ++j) {
          kiln_hgemm_mma(acc[i][j], fa[i], fb[j >> 1][(j & 1u) * 2u],
                         fb[j >> 1][(j & 1u) * 2u + 1u]);
        }
      }
    }
  }
  kiln_hgemm_wait<0>();

  const bool c_vec = ((unsigned long long)c & 7u) == 0 && (ldc & 1u) == 0;
  const unsigned int g = lane >> 2, t = lane & 3u;
#pragma unroll
  for (unsigned int i = 0; i < 4u; ++i) {
#pragma unroll
    for (unsigned int h = 0; h < 2u; ++h) {
      const unsigned int r = row0 + warp_m + i * 16u + g + h * 8u;
      if (r >= m) continue;
      float *row = c + (unsigned long long)r * ldc;
#pragma unroll
      for (unsigned int j = 0; j < 8u; ++j) {
        kiln_hgemm_store_pair(row, col0 + warp_n + j * 8u + t * 2u, n,
                              alpha * acc[i][j][h * 2u],
                              alpha * acc[i][j][h * 2u + 1u], beta, c_vec);
      }
    }
  }
}

// The shared memory each takes; core/builtins/hgemm.c launches with the same.
#define KILN_HGEMM_SHARED(bk) \
  (kiln_hgemm_stages * (kiln_hgemm_bm * ((bk) + 8) + (bk) * kiln_hgemm_b_ld) * 2)

extern "C" __global__ void __launch_bounds__(kiln_hgemm_threads, 1)
    kiln_hgemm_f16_mma(float *c, const kiln_half_bits *a,
                       const kiln_half_bits *b, unsigned int m, unsigned int n,
                       unsigned int k, unsigned int lda, unsigned int ldb,
                       unsigned int ldc, float alpha, float beta) {
  kiln_hgemm_body<64>(c, a, b, m, n, k, lda, ldb, ldc, alpha, beta);
}

extern "C" __global__ void __launch_bounds__(kiln_hgemm_threads, 1)
    kiln_hgemm_f16_mma_k32(float *c, const kiln_half_bits *a,
                           const kiln_half_bits *b, unsigned int m,
                           unsigned int n, unsigned int k, unsigned int lda,
                           unsigned int ldb, unsigned int ldc, float alpha,
                           float beta) {
  kiln_hgemm_body<32>(c, a, b, m, n, k, lda, ldb, ldc, alpha, beta);
}

// kiln_hgemm_f16: the same product on the ordinary cores, for devices
// without the shared memory the matrix kernels need. Launch shape:
//   block = 256 x 1 x 1, grid = ceil(n / 64) x ceil(m / 64) x 1.
// Each block computes a 64 x 64 tile of C in slices of 16 of k, staged in
// shared memory as floats (A transposed); each thread owns 4 x 4 elements,
// rows ty * 4.., columns tx * 4.. on a 16 x 16 grid. Every load is one
// half with bounds checks, so any shape, offset and leading dimension is
// correct; it is a fallback, not fast.
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
