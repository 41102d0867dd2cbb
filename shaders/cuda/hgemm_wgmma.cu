// kiln_hgemm_f16_wgmma (docs/kernels.md): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// with A and B in binary16 and C in float32, on Hopper's warpgroup tensor
// cores: wgmma.mma_async m64n256k16, products of f16 pairs summed in f32,
// fed by the Tensor Memory Accelerator (TMA). sm_90a only (wgmma and
// setmaxnreg do not exist on plain sm_90), so it is built alone into the
// fatbin of kiln_cuda_builtin_matrix_images, which only a Hopper GPU loads
// (meson.build). beta == 0 does not read C.
//
// The launch is this kernel's own:
//   parameters = the GEMM's eleven, then two tensor maps (CUtensorMap, 128
//     bytes each) that the CUDA backend appends itself (backends/cuda/
//     launch.c, kiln_cuda_params_of): A as k x m halves (k fastest, row pitch
//     lda), boxes of 64 x 128; B as n x k halves (pitch ldb), boxes of
//     64 x 64; both with the 128-byte swizzle, zeros past the edges;
//   block = 384 x 1 x 1 threads (3 warpgroups);
//   grid  = any number of blocks, 1-D: each block takes tiles t = x,
//     x + grid, ... of the ceil(n / 256) * ceil(m / 128) tiles of C; kiln
//     launches min(tiles, SMs), one block an SM (persistent blocks);
//   dynamic shared memory = KILN_HGEMM_WGMMA_SHARED = 197,696 bytes (four
//     48 KiB stages, 1 KiB of alignment slack, 64 bytes of mbarriers), above
//     the 48 KiB default: the caller raises the kernel's limit.
// Preconditions, which core/builtins/hgemm.c checks (it takes another kernel
// otherwise): a and b 16-byte aligned, lda and ldb multiples of 8 (a tensor
// map's address and row pitch are multiples of 16 bytes), and m, n, k below
// 2^31 (the TMA's coordinates are signed 32-bit); hgemm.c asks k and n to be
// multiples of 8 too, the class of call the kernel before this one needed.
// Then any m, n, k >= 1 and any ldc >= n (C only 4-byte aligned) are
// correct: the TMA fills a box's part past the matrix with zeros.
//
// Each tile of C is 128 x 256, computed walking k in slices of 64. A slice
// of A (128 x 64) and of B (64 x 256) is staged in shared memory, four
// stages deep, in the 128-byte-swizzled layouts that the TMA writes and
// wgmma's shared-memory descriptors read (the swizzle is a function of
// address bits 4..9, so every stage starts on a 1024-byte boundary):
//   A, K-major: row r of the slice is 128 bytes at r * 128, its 16-byte
//     piece c (8 halves of k) stored at piece c ^ (r % 8). Descriptor:
//     stride byte offset 1024 (8 rows); the start moves 32 bytes per 16 of
//     k; each consumer's 64 rows start 8 KiB apart.
//   B, N-major (row-major k x n: wgmma's transpose-B immediate is 1): four
//     boxes of 64 columns, 8 KiB each; in a box, row kr (of k) is 128
//     bytes at kr * 128, piece c at c ^ (kr % 8). Descriptor: leading byte
//     offset 8192 (the next 64 columns), stride byte offset 1024 (the next
//     8 rows of k); the start moves 2048 bytes per 16 of k.
//
// Warpgroup 0 is the producer (setmaxnreg: 40 registers); one thread of it
// issues, per slice, the stage's five TMA copies (A's box, B's four), which
// complete on the stage's "full" mbarrier with the byte count it expects
// (48 KiB: a box's zeros count as bytes). It runs up to four slices
// ahead, into the next tile's slices while the consumers write C, waiting
// on the stage's "empty" mbarrier before refilling it. No thread copies:
// an earlier producer of 128 threads issuing cp.async moved the same bytes
// at 0.86-0.92 of cuBLAS where this one reaches 0.96-1.01 (H200).
// Warpgroups 1 and 2 are the consumers (232 registers), rows 0..63 and
// 64..127 of the tile, 128 f32 sums per thread. Per slice each waits for
// the stage to be full, issues 4 wgmma over it as one group, then waits
// until only that group is in flight (wgmma.wait_group 1): the previous
// slice's stage is then no longer read, and each warp's lane 0 arrives on
// its "empty" mbarrier (8 arrivals). After a tile's last slice they wait
// for all, give its stage back, and write the sums, scaled by alpha (plus
// beta * C where beta != 0), from the registers with bounds checks, in
// float2s where C allows. The TMA writes and wgmma reads both go through
// the async proxy, so the full barrier alone orders them.
//
// Tiles are numbered so that consecutive ones walk down a band of 8 tile
// rows before moving right (kiln_hgemm_tile_of): the tiles the blocks work
// on at once share the band's rows of A and the columns of B in L2.

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

// Arrives on the barrier, telling it to expect `bytes` more from copies.
__device__ static __forceinline__ void kiln_wg_bar_expect(unsigned int bar,
                                                          unsigned int bytes) {
  asm volatile(
      "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar),
      "r"(bytes)
      : "memory");
}

// A tensor map (CUtensorMap): opaque, 128 bytes, 64-byte aligned.
struct __align__(64) kiln_wg_map {
  unsigned long long bits[16];
};

// Copies the box of `map` at element (x, y) to shared memory at dst,
// completing `bar`'s expected bytes.
__device__ static __forceinline__ void kiln_wg_load(unsigned int dst,
                                                    const kiln_wg_map *map,
                                                    unsigned int bar, int x,
                                                    int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile"
      ".mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(dst),
      "l"((unsigned long long)map), "r"(bar), "r"(x), "r"(y)
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

// Gives slice `it`'s stage back to the producer: lane 0 of each consumer
// warp arrives on the stage's "empty" mbarrier once its warp is past the
// wait that ended the warp's reads of it.
__device__ static __forceinline__ void kiln_wg_release(unsigned int empty_bar,
                                                       unsigned int it,
                                                       unsigned int lane) {
  __syncwarp();
  if (lane == 0u) kiln_wg_bar_arrive(empty_bar + (it % kiln_wg_stages) * 8u);
}

extern __shared__ unsigned char kiln_wg_smem[];

extern "C" __global__ void __launch_bounds__(kiln_wg_threads, 1)
    kiln_hgemm_f16_wgmma(float *c, const unsigned short *a,
                         const unsigned short *b, unsigned int m,
                         unsigned int n, unsigned int k, unsigned int lda,
                         unsigned int ldb, unsigned int ldc, float alpha,
                         float beta, const __grid_constant__ kiln_wg_map map_a,
                         const __grid_constant__ kiln_wg_map map_b) {
  // A and B are read through their maps; their addresses and pitches stay
  // in the list for the GEMM kernels' one ABI.
  (void)a, (void)b, (void)lda, (void)ldb;
  const unsigned int tid = threadIdx.x;
  const unsigned int wg = tid >> 7;
  // Stages from the first 1024-byte boundary; the barriers after them.
  const unsigned int smem =
      ((unsigned int)__cvta_generic_to_shared(kiln_wg_smem) + 1023u) & ~1023u;
  const unsigned int full_bar = smem + kiln_wg_stages * kiln_wg_stage_bytes;
  const unsigned int empty_bar = full_bar + kiln_wg_stages * 8u;
  const unsigned int tiles_x = (n + kiln_wg_bn - 1u) / kiln_wg_bn;
  const unsigned int tiles_y = (m + kiln_wg_bm - 1u) / kiln_wg_bm;
  const unsigned int tiles = tiles_x * tiles_y;
  const unsigned int slices = (k + kiln_wg_bk - 1u) / kiln_wg_bk;

  if (tid == 0) {
#pragma unroll
    for (unsigned int s = 0; s < kiln_wg_stages; ++s) {
      kiln_wg_bar_init(full_bar + s * 8u, 1u);  // the producer's expect
      kiln_wg_bar_init(empty_bar + s * 8u, 8u); // the consumers' warps
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();

  // Slices are numbered across the block's tiles: slice `it` has stage
  // it % 4, in the phase (it / 4) of its barriers.
  if (wg == 0) {
    // ---- producer ----
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    if (tid != 0) return;
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(
                     (unsigned long long)&map_a)
                 : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(
                     (unsigned long long)&map_b)
                 : "memory");
    unsigned int it = 0;
    for (unsigned int t = blockIdx.x; t < tiles; t += gridDim.x) {
      unsigned int row0, col0;
      kiln_hgemm_tile_of(t, tiles_x, tiles_y, kiln_wg_bm, kiln_wg_bn, &row0,
                         &col0);
      for (unsigned int s = 0; s < slices; ++s, ++it) {
        const unsigned int st = it % kiln_wg_stages;
        // The consumers are done with the slice this stage held before.
        if (it >= kiln_wg_stages)
          kiln_wg_bar_wait(empty_bar + st * 8u,
                           ((it / kiln_wg_stages) - 1u) & 1u);
        const unsigned int sa = smem + st * kiln_wg_stage_bytes;
        const unsigned int sb = sa + kiln_wg_a_bytes;
        const unsigned int bar = full_bar + st * 8u;
        const int k0 = (int)(s * kiln_wg_bk);
        kiln_wg_bar_expect(bar, kiln_wg_stage_bytes);
        kiln_wg_load(sa, &map_a, bar, k0, (int)row0);
#pragma unroll
        for (unsigned int j = 0; j < 4u; ++j)
          kiln_wg_load(sb + j * 8192u, &map_b, bar, (int)(col0 + 64u * j), k0);
      }
    }
  } else {
    // ---- consumers ----
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    const unsigned int cw = wg - 1u; // rows cw * 64 .. cw * 64 + 63
    const unsigned int lane = tid & 31u;
    // d[4 j + 2 h + e]: row 16 w + g + 8 h, column 8 j + 2 t + e of this
    // warpgroup's 64 x 256, with w the warp in the warpgroup, g = lane / 4,
    // t = t4 = lane % 4.
    const unsigned int w = (tid >> 5) & 3u, g = lane >> 2, t4 = lane & 3u;
    const bool c_vec = ((unsigned long long)c & 7u) == 0 && (ldc & 1u) == 0;
    unsigned int it = 0;
    for (unsigned int t = blockIdx.x; t < tiles; t += gridDim.x) {
      unsigned int row0, col0;
      kiln_hgemm_tile_of(t, tiles_x, tiles_y, kiln_wg_bm, kiln_wg_bn, &row0,
                         &col0);
      float d[128];
#pragma unroll
      for (unsigned int j = 0; j < 128u; ++j) d[j] = 0.0f;
      for (unsigned int s = 0; s < slices; ++s, ++it) {
        const unsigned int st = it % kiln_wg_stages;
        kiln_wg_bar_wait(full_bar + st * 8u, (it / kiln_wg_stages) & 1u);
        const unsigned int sa =
            smem + st * kiln_wg_stage_bytes + cw * (64u * 128u);
        const unsigned int sb =
            smem + st * kiln_wg_stage_bytes + kiln_wg_a_bytes;
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
        if (s > 0u) kiln_wg_release(empty_bar, it - 1u, lane);
      }
      kiln_wg_fence_acc(d);
      asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
      kiln_wg_fence_acc(d);
      // The tile's last slice is read: its stage goes back before C is
      // written, so the producer fills it with the next tile's meanwhile.
      if (slices > 0u) kiln_wg_release(empty_bar, it - 1u, lane);
#pragma unroll
      for (unsigned int h = 0; h < 2u; ++h) {
        const unsigned int r = row0 + cw * 64u + w * 16u + g + 8u * h;
        if (r >= m) continue;
        float *row = c + (unsigned long long)r * ldc;
#pragma unroll
        for (unsigned int j = 0; j < 32u; ++j) {
          kiln_hgemm_store_pair(row, col0 + 8u * j + 2u * t4, n,
                                alpha * d[4u * j + 2u * h],
                                alpha * d[4u * j + 2u * h + 1u], beta, c_vec);
        }
      }
    }
  }
}
