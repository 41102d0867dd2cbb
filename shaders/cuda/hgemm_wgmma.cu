// kiln_hgemm_f16_wgmma (docs/kernels.md): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// with A and B in binary16 and C in float32, on Hopper's warpgroup tensor
// cores: wgmma.mma_async m64n256k16, products of f16 pairs summed in f32.
// sm_90a only (wgmma and setmaxnreg do not exist on plain sm_90), so it is
// built alone into the fatbin of kiln_cuda_builtin_matrix_images, which
// only a Hopper GPU loads (meson.build). beta == 0 does not read C.
//
// The launch shape is this kernel's own:
//   block = 384 x 1 x 1 threads (3 warpgroups),
//   grid  = ceil(n / 256) x ceil(m / 128) x 1   (x over columns of C),
//   dynamic shared memory = KILN_HGEMM_WGMMA_SHARED = 197,696 bytes (four
//   48 KiB stages, 1 KiB of alignment slack, 64 bytes of mbarriers), above
//   the 48 KiB default: the caller raises the kernel's limit.
// Preconditions, which core/builtins/hgemm.c checks (it takes another kernel
// otherwise): a and b 16-byte aligned, and k, n, lda, ldb multiples of 8,
// so that every 16-byte piece of a row of A or B lies wholly inside the
// row or wholly past its end. Then any m >= 1, n, k >= 8 and any ldc >= n
// (C only 4-byte aligned) are correct.
//
// Each block computes a 128 x 256 tile of C, walking k in slices of 64. A
// slice of A (128 x 64) and of B (64 x 256) is staged in shared memory, four
// stages deep, in the 128-byte-swizzled layouts that wgmma's shared-memory
// descriptors read (the swizzle is a function of address bits 4..9, so
// every stage starts on a 1024-byte boundary):
//   A, K-major: row r of the slice is 128 bytes at r * 128, its 16-byte
//     piece c (8 halves of k) stored at piece c ^ (r % 8). Descriptor:
//     stride byte offset 1024 (8 rows); the start moves 32 bytes per 16 of
//     k; each consumer's 64 rows start 8 KiB apart.
//   B, N-major (row-major k x n: wgmma's transpose-B immediate is 1): four
//     blocks of 64 columns, 8 KiB each; in a block, row kr (of k) is 128
//     bytes at kr * 128, piece c at c ^ (kr % 8). Descriptor: leading byte
//     offset 8192 (the next 64 columns), stride byte offset 1024 (the next
//     8 rows of k); the start moves 2048 bytes per 16 of k.
//
// Warpgroup 0 is the producer (setmaxnreg: 40 registers). Its 128 threads
// copy each slice with cp.async.cg, 16-byte pieces (8 of A and 16 of B per
// thread); pieces past the matrix edges are zero-filled through the
// source-size operand (0 bytes read, from the matrix's first piece, so no
// address outside it is named), so edges need no separate path. A piece
// that the edge cuts in two would need a source size below 16, which
// compute-sanitizer counts as a 16-byte read past the matrix; the
// preconditions rule it out.
// Then each thread's cp.async.mbarrier.arrive.noinc makes the stage's
// "full" mbarrier (128 arrivals) see it once its copies have landed; it
// runs up to four slices ahead, waiting on the stage's "empty" mbarrier
// before refilling it.
// Warpgroups 1 and 2 are the consumers (232 registers), rows 0..63 and
// 64..127 of the tile, 128 f32 sums per thread. Per slice each waits for
// the stage to be full, fences the async proxy (fence.proxy.async: the
// copies were generic-proxy writes, wgmma reads through the async proxy),
// issues 4 wgmma over it as one group, then waits until only that group is
// in flight (wgmma.wait_group 1): the previous slice's stage is then no
// longer read, and each warp's lane 0 arrives on its "empty" mbarrier (8
// arrivals). So one slice's wgmmas run while the next is awaited.
//
// Blocks are renumbered so that consecutive blocks walk down a band of 8
// tile rows before moving right (as kiln_hgemm_f16_mma): the band's tiles
// of A and the shared tiles of B are read from L2 while still there. The
// sums are scaled by alpha (plus beta * C where beta != 0) and written from
// the registers with bounds checks, in float2s where C allows.
//
// Measured on an H100 80GB HBM3 (prototype harness, against cublasGemmEx
// f16 in, f32 out, CUBLAS_COMPUTE_32F): 4096^3 about 560 TFLOP/s (0.78 to
// 0.80 of cuBLAS), 8192^3 about 600 (0.81 to 0.83). Small problems fill few
// SMs with 128 x 256 tiles: 1024^3 about 110.

#include "hgemm_shared.cuh"

enum : unsigned int {
  kiln_wg_bm = 128,      // rows of C per block
  kiln_wg_bn = 256,      // columns of C per block
  kiln_wg_bk = 64,       // k per slice: a 128-byte row of halves
  kiln_wg_threads = 384, // producer + 2 consumer warpgroups
  kiln_wg_stages = 4,
  kiln_wg_a_bytes = kiln_wg_bm * 128u, // 16 KiB
  kiln_wg_b_bytes = kiln_wg_bn * 128u, // 32 KiB
  kiln_wg_stage_bytes = kiln_wg_a_bytes + kiln_wg_b_bytes,
};

// The shared memory the kernel takes; the caller launches with the same.
#define KILN_HGEMM_WGMMA_SHARED (1024 + 4 * (128 * 128 + 256 * 128) + 64)

// Copies 16 bytes from global to shared memory, asynchronously; `bytes` is
// 16, or 0 for 16 zeros (nothing is read).
__device__ static __forceinline__ void kiln_wg_copy16(unsigned int dst,
                                                      const void *src,
                                                      unsigned int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst),
               "l"(src), "r"(bytes)
               : "memory");
}

__device__ static __forceinline__ void kiln_wg_bar_init(unsigned int bar,
                                                        unsigned int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar),
               "r"(count)
               : "memory");
}

__device__ static __forceinline__ void kiln_wg_bar_arrive(unsigned int bar) {
  asm volatile(
      "{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::
          "r"(bar)
      : "memory");
}

// The barrier's arrival, once all the cp.async this thread issued so far
// have landed (noinc: counted among the barrier's expected arrivals).
__device__ static __forceinline__ void kiln_wg_bar_arrive_copies(
    unsigned int bar) {
  asm volatile(
      "cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar)
      : "memory");
}

// Waits until the barrier's phase of the given parity has completed.
__device__ static __forceinline__ void kiln_wg_bar_wait(unsigned int bar,
                                                        unsigned int parity) {
  unsigned int done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

// A shared-memory matrix descriptor with the 128-byte swizzle (base offset
// 0: the swizzle pattern starts on a 1024-byte boundary).
__device__ static __forceinline__ unsigned long long kiln_wg_desc(
    unsigned int addr, unsigned int lbo, unsigned int sbo) {
  return (unsigned long long)((addr & 0x3ffffu) >> 4) |
         ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}

// d (64 x 256 per warpgroup, f32) += A (64 x 16, K-major) * B (16 x 256,
// N-major: the transpose-B immediate is 1), both read from shared memory
// through the descriptors; scale-d 1 (accumulate), no negation.
__device__ static __forceinline__ void kiln_wg_mma(float (&d)[128],
                                                   unsigned long long da,
                                                   unsigned long long db) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, "
      "%30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
      "%46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "
      "%62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, "
      "%78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, "
      "%94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
      "%108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, "
      "%124, %125, %126, %127"
      "}, %128, %129, 1, 1, 1, 0, 1;\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
        "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]),
        "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
        "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
        "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),
        "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]),
        "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),
        "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]),
        "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]),
        "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]),
        "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]),
        "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]),
        "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]),
        "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]),
        "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]),
        "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]),
        "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]),
        "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]),
        "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db)
      : "memory");
}

// Keeps the compiler from moving uses of the sums across a wgmma wait.
__device__ static __forceinline__ void kiln_wg_fence_acc(float (&d)[128]) {
#pragma unroll
  for (unsigned int j = 0; j < 128u; ++j)
    asm volatile("" : "+f"(d[j])::"memory");
}

extern __shared__ unsigned char kiln_wg_smem[];

extern "C" __global__ void __launch_bounds__(kiln_wg_threads, 1)
    kiln_hgemm_f16_wgmma(float *c, const unsigned short *a,
                         const unsigned short *b, unsigned int m,
                         unsigned int n, unsigned int k, unsigned int lda,
                         unsigned int ldb, unsigned int ldc, float alpha,
                         float beta) {
  const unsigned int tid = threadIdx.x;
  const unsigned int wg = tid >> 7;
  // Stages from the first 1024-byte boundary; the barriers after them.
  const unsigned int smem =
      ((unsigned int)__cvta_generic_to_shared(kiln_wg_smem) + 1023u) & ~1023u;
  const unsigned int full_bar = smem + kiln_wg_stages * kiln_wg_stage_bytes;
  const unsigned int empty_bar = full_bar + kiln_wg_stages * 8u;

  unsigned int row0, col0;
  kiln_hgemm_tile(kiln_wg_bm, kiln_wg_bn, &row0, &col0);
  const unsigned int slices = (k + kiln_wg_bk - 1u) / kiln_wg_bk;

  if (tid == 0) {
#pragma unroll
    for (unsigned int s = 0; s < kiln_wg_stages; ++s) {
      kiln_wg_bar_init(full_bar + s * 8u, 128u); // the producer's threads
      kiln_wg_bar_init(empty_bar + s * 8u, 8u);  // the consumers' warps
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  if (wg == 0) {
    // ---- producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    // A: this thread copies piece ac (of 8) of rows ar + 16 h, h < 8.
    const unsigned int ac = tid & 7u, ar = tid >> 3;
    const unsigned int a_dst = ar * 128u + ((ac ^ (ar & 7u)) << 4);
    unsigned int a_rows = 0; // bit h: row ar + 16 h lies inside m
#pragma unroll
    for (unsigned int h = 0; h < 8u; ++h)
      a_rows |= (row0 + ar + 16u * h < m ? 1u : 0u) << h;
    const unsigned short *a_src =
        a + (unsigned long long)(row0 + ar) * lda + ac * 8u;
    const unsigned long long a_step = 16ull * lda;
    // B: this thread copies piece bj (of 32; in the 64-column block bj / 8)
    // of k rows br + 4 h, h < 16. Row br + 4 h swizzles with (br % 8) ^ 4
    // for odd h, as br < 4.
    const unsigned int bj = tid & 31u, br = tid >> 5;
    const unsigned int b_dst =
        (bj >> 3) * 8192u + br * 128u + (((bj & 7u) ^ br) << 4);
    const unsigned int b_col = col0 + bj * 8u;
    const unsigned int b_bytes = b_col < n ? 16u : 0u;
    const unsigned short *b_src = b + (unsigned long long)br * ldb + b_col;
    const unsigned long long b_step = 4ull * ldb;

    for (unsigned int s = 0; s < slices; ++s) {
      const unsigned int st = s % kiln_wg_stages;
      // The consumers are done with the slice this stage held before.
      if (s >= kiln_wg_stages)
        kiln_wg_bar_wait(empty_bar + st * 8u, ((s / kiln_wg_stages) - 1u) & 1u);
      const unsigned int sa = smem + st * kiln_wg_stage_bytes;
      const unsigned int sb = sa + kiln_wg_a_bytes;
      const unsigned int k0 = s * kiln_wg_bk;
      {
        const unsigned int bytes = k0 + ac * 8u < k ? 16u : 0u;
        const unsigned short *p = a_src + k0;
#pragma unroll
        for (unsigned int h = 0; h < 8u; ++h) {
          const bool in = (a_rows >> h) & 1u;
          kiln_wg_copy16(sa + a_dst + h * 2048u, in ? (const void *)p : a,
                         in ? bytes : 0u);
          p += a_step;
        }
      }
      {
        const unsigned short *p = b_src + (unsigned long long)k0 * ldb;
#pragma unroll
        for (unsigned int h = 0; h < 16u; ++h) {
          const bool in = k0 + br + 4u * h < k && b_bytes != 0u;
          kiln_wg_copy16(sb + (b_dst ^ ((h & 1u) << 6)) + h * 512u,
                         in ? (const void *)p : b, in ? b_bytes : 0u);
          p += b_step;
        }
      }
      kiln_wg_bar_arrive_copies(full_bar + st * 8u);
    }
  } else {
    // ---- consumers ----
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const unsigned int cw = wg - 1u; // rows cw * 64 .. cw * 64 + 63
    const unsigned int lane = tid & 31u;
    float d[128];
#pragma unroll
    for (unsigned int j = 0; j < 128u; ++j) d[j] = 0.0f;

    for (unsigned int s = 0; s < slices; ++s) {
      const unsigned int st = s % kiln_wg_stages;
      kiln_wg_bar_wait(full_bar + st * 8u, (s / kiln_wg_stages) & 1u);
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
      const unsigned int sa =
          smem + st * kiln_wg_stage_bytes + cw * (64u * 128u);
      const unsigned int sb = smem + st * kiln_wg_stage_bytes + kiln_wg_a_bytes;
      const unsigned long long da = kiln_wg_desc(sa, 16u, 1024u);
      const unsigned long long db = kiln_wg_desc(sb, 8192u, 1024u);
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
      for (unsigned int kk = 0; kk < 4u; ++kk)
        kiln_wg_mma(d, da + 2u * kk, db + 128u * kk); // +32 B, +2048 B
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
      kiln_wg_fence_acc(d);
      asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
      kiln_wg_fence_acc(d);
      if (s > 0u) {
        __syncwarp();
        if (lane == 0u)
          kiln_wg_bar_arrive(empty_bar + ((s - 1u) % kiln_wg_stages) * 8u);
      }
    }
    kiln_wg_fence_acc(d);
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    kiln_wg_fence_acc(d);

    // d[4 j + 2 h + e]: row 16 w + g + 8 h, column 8 j + 2 t + e of this
    // warpgroup's 64 x 256, with w the warp in the warpgroup, g = lane / 4,
    // t = lane % 4.
    const unsigned int w = (tid >> 5) & 3u, g = lane >> 2, t = lane & 3u;
    const bool c_vec = ((unsigned long long)c & 7u) == 0 && (ldc & 1u) == 0;
#pragma unroll
    for (unsigned int h = 0; h < 2u; ++h) {
      const unsigned int r = row0 + cw * 64u + w * 16u + g + 8u * h;
      if (r >= m) continue;
      float *row = c + (unsigned long long)r * ldc;
#pragma unroll
      for (unsigned int j = 0; j < 32u; ++j) {
        kiln_hgemm_store_pair(row, col0 + 8u * j + 2u * t, n,
                              alpha * d[4u * j + 2u * h],
                              alpha * d[4u * j + 2u * h + 1u], beta, c_vec);
      }
    }
  }
}
