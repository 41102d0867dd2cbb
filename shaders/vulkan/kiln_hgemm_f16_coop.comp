#version 460
// kiln_hgemm_f16_coop(float *c, const f16 *a, const f16 *b, u32 m, u32 n,
// u32 k, u32 lda, u32 ldb, u32 ldc, float alpha, float beta): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// with A and B in binary16 and C in float32, on the matrix units through
// GL_NV_cooperative_matrix (Debian 12's glslang predates the KHR
// extension): 16 x 16 x 16 products of halves summed in float32. beta == 0
// does not read C. It lives in the matrix module (core/backend.h says why)
// and is used only where subgroups are 32 wide.
//
// The launch shape: workgroup = 256 x 1 x 1 (8 subgroups), grid =
// ceil(n / 128) x ceil(m / 128) x 1 (x over columns of C); no dynamic
// shared memory (44,032 bytes of static shared memory).
//
// Each workgroup computes a 128 x 128 tile of C, walking k in slices of 64.
// Subgroups sit on a 2 x 4 grid, each owning 64 x 32 of C: 4 x 2
// accumulator matrices. A slice of A (128 x 64) and of B (64 x 128) is
// staged in shared memory as uvec4s of 8 halves, rows padded by one uvec4
// so that the eight 16-byte rows a matrix load reads fall in different
// banks. There is one stage (two would not fit the 48 KiB NVIDIA's Vulkan
// driver gives a workgroup): while the workgroup multiplies a slice, each
// invocation has its 4 uvec4s of A and 4 of B for the next one in flight
// from global memory, and stores them after a barrier; a second barrier
// publishes them. Slices of 64 halve the barriers per k of slices of 32,
// which is what mattered on the H100: the NVIDIA driver gives the kernel
// 178 registers, so one workgroup per SM, whose subgroups all wait at each
// barrier. The fast loads use one 64-bit address per operand, advanced per
// slice, and whole tiles of C are written with matrix stores.
//
// Edges: a uvec4 is loaded whole when it lies inside its matrix and is
// 16-byte aligned (the matrix's address, and its leading dimension a
// multiple of 8); otherwise its halves are read one by one through the
// 32-bit words that hold them, zeros outside. A whole tile of C, 16-byte
// aligned with ldc a multiple of 4, is read (beta != 0) and written with
// matrix loads and stores straight to global memory; any other tile goes
// through shared memory one 16 x 16 matrix at a time and is written with
// bounds checks, so any m, n, k >= 1 and lda >= k, ldb >= n, ldc >= n are
// correct.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_NV_cooperative_matrix : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 {
  float v;
};
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer
    Word {
  uint v;
};
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer
    Quad {
  uvec4 v;
};
// A piece of C for the matrix loads and stores: floats as bits, 16 bytes
// at a time (the extension loads no float vectors).
layout(buffer_reference, std430, buffer_reference_align = 16) buffer Quads {
  uvec4 v[];
};

layout(push_constant, std430) uniform Args {
  F32 c;
  Word a; // halves, at any even address
  Word b;
  uint m;
  uint n;
  uint k;
  uint lda;
  uint ldb;
  uint ldc;
  float alpha;
  float beta;
} args;

const uint BM = 128u, BN = 128u, BK = 64u; // the tile and the k slice
const uint WM = 64u, WN = 32u;             // a subgroup's piece of C
const uint FM = WM / 16u, FN = WN / 16u;   // its accumulators
const uint SGN = BN / WN;                  // subgroups across the tile
const uint THREADS = (BM / WM) * SGN * 32u;
const uint A_Q = BK / 8u, B_Q = BN / 8u;     // uvec4s per row of a slice
const uint A_LD = A_Q + 1u, B_LD = B_Q + 1u; // staged rows, padded
const uint A_PER = BM * A_Q / THREADS;       // uvec4s each invocation stages
const uint B_PER = BK * B_Q / THREADS;
const uint A_RS = THREADS / A_Q, B_RS = THREADS / B_Q; // rows between them

shared uvec4 a_tile[BM * A_LD];
shared uvec4 b_tile[BK * B_LD];
shared float c_tile[(THREADS / 32u) * 256u]; // 16 x 16 floats per subgroup

// The bits of half e of the halves at address base.
uint half_bits(uint64_t base, uint64_t e) {
  const uint64_t byte = base + 2ul * e;
  const uint w = Word(byte & ~3ul).v;
  return (byte & 2ul) != 0ul ? w >> 16 : w & 0xffffu;
}

// Halves col..col+7 of row `row` of a rows x cols matrix at base.
uvec4 piece(uint64_t base, uint row, uint rows, uint col, uint cols, uint ld,
            bool aligned) {
  const uint64_t e = uint64_t(row) * ld + col;
  if (aligned && row < rows && col + 8u <= cols) return Quad(base + 2ul * e).v;
  uint h[8];
  [[unroll]] for (uint j = 0u; j < 8u; ++j) {
    h[j] = row < rows && col + j < cols ? half_bits(base, e + j) : 0u;
  }
  return uvec4(h[0] | (h[1] << 16), h[2] | (h[3] << 16), h[4] | (h[5] << 16),
               h[6] | (h[7] << 16));
}

// Loads slice k0.. of A and B into ra and rb (in main).
#define FETCH(K0)                                                             \
  {                                                                           \
    const uint k0_ = (K0);                                                    \
    const bool kin_ = k0_ + BK <= args.k;                                     \
    if (a_fast && kin_) {                                                     \
      [[unroll]] for (uint i = 0u; i < A_PER; ++i)                           \
        ra[i] = Quad(a_base + 2ul * k0_ + uint64_t(i) * a_rstep).v;          \
    } else {                                                                  \
      [[unroll]] for (uint i = 0u; i < A_PER; ++i)                           \
        ra[i] = piece(a, row0 + a_r + i * A_RS, args.m, k0_ + a_q * 8u,      \
                      args.k, args.lda, a_aligned);                          \
    }                                                                         \
    if (b_fast && kin_) {                                                     \
      const uint64_t pb_ = b_base + uint64_t(k0_) * b_kstep;                 \
      [[unroll]] for (uint i = 0u; i < B_PER; ++i)                           \
        rb[i] = Quad(pb_ + uint64_t(i) * b_rstep).v;                         \
    } else {                                                                  \
      [[unroll]] for (uint i = 0u; i < B_PER; ++i)                           \
        rb[i] = piece(b, k0_ + b_r + i * B_RS, args.k, col0 + b_q * 8u,      \
                      args.n, args.ldb, b_aligned);                          \
    }                                                                         \
  }

// Stores ra and rb into the staged slice.
#define STORE()                                                               \
  {                                                                           \
    [[unroll]] for (uint i = 0u; i < A_PER; ++i)                             \
      a_tile[(a_r + i * A_RS) * A_LD + a_q] = ra[i];                          \
    [[unroll]] for (uint i = 0u; i < B_PER; ++i)                             \
      b_tile[(b_r + i * B_RS) * B_LD + b_q] = rb[i];                          \
  }

// Adds the staged slice's products into this subgroup's accumulators.
#define COMPUTE()                                                             \
  {                                                                           \
    [[unroll]] for (uint kk = 0u; kk < BK / 16u; ++kk) {                     \
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[FM];                        \
      fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fb[FN];                        \
      [[unroll]] for (uint i = 0u; i < FM; ++i)                              \
        coopMatLoadNV(fa[i], a_tile, (warp_m + i * 16u) * A_LD + kk * 2u,    \
                      A_LD, false);                                           \
      [[unroll]] for (uint j = 0u; j < FN; ++j)                              \
        coopMatLoadNV(fb[j], b_tile, kk * 16u * B_LD + warp_n / 8u + j * 2u, \
                      B_LD, false);                                           \
      [[unroll]] for (uint i = 0u; i < FM; ++i)                              \
        [[unroll]] for (uint j = 0u; j < FN; ++j)                            \
          acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);              \
    }                                                                         \
  }

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID;
  const uint lane = gl_SubgroupInvocationID;
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  const uint warp_m = (sg / SGN) * WM, warp_n = (sg % SGN) * WN;
  const uint64_t a = uint64_t(args.a), b = uint64_t(args.b);
  const bool a_aligned = (a & 15ul) == 0ul && (args.lda & 7u) == 0u;
  const bool b_aligned = (b & 15ul) == 0ul && (args.ldb & 7u) == 0u;
  // Whole uvec4 loads with no checks: the tile's rows of A (columns of B)
  // inside the matrix; the slice must also lie inside k.
  const bool a_fast = a_aligned && row0 + BM <= args.m;
  const bool b_fast = b_aligned && col0 + BN <= args.n;
  const uint slices = (args.k + BK - 1u) / BK;

  // This invocation stages A rows a_r + i * A_RS at uvec4 a_q of a slice,
  // and B rows b_r + i * B_RS at uvec4 b_q.
  const uint a_r = tid / A_Q, a_q = tid % A_Q;
  const uint b_r = tid / B_Q, b_q = tid % B_Q;
  const uint64_t a_base =
      a + 2ul * (uint64_t(row0 + a_r) * args.lda + a_q * 8u);
  const uint64_t a_rstep = 2ul * uint64_t(A_RS) * args.lda;
  const uint64_t b_base =
      b + 2ul * (uint64_t(b_r) * args.ldb + col0 + b_q * 8u);
  const uint64_t b_kstep = 2ul * uint64_t(args.ldb);
  const uint64_t b_rstep = 2ul * uint64_t(B_RS) * args.ldb;

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[FM][FN];
  [[unroll]] for (uint i = 0u; i < FM; ++i) {
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    }
  }

  // Slice 0 is staged first; step s then fetches slice s + 1 into
  // registers, multiplies slice s, and after a barrier stores slice s + 1.
  uvec4 ra[A_PER], rb[B_PER];
  FETCH(0u);
  STORE();
  barrier();
  for (uint s = 0u; s < slices; ++s) {
    const bool more = s + 1u < slices;
    if (more) FETCH((s + 1u) * BK);
    COMPUTE();
    barrier(); // every subgroup is done with slice s
    if (more) {
      STORE();
    }
    barrier(); // slice s + 1 is in shared memory
  }

  const uint wr = row0 + warp_m, wc = col0 + warp_n;
  if ((uint64_t(args.c) & 15ul) == 0ul && (args.ldc & 3u) == 0u &&
      row0 + BM <= args.m && col0 + BN <= args.n) {
    // A whole, aligned tile: straight to C.
    const uint ld4 = args.ldc / 4u;
    const uint64_t c0 =
        uint64_t(args.c) + 4ul * (uint64_t(wr) * args.ldc + wc);
    [[unroll]] for (uint i = 0u; i < FM; ++i) {
      [[unroll]] for (uint j = 0u; j < FN; ++j) {
        Quads p = Quads(c0 + 4ul * (uint64_t(i * 16u) * args.ldc + j * 16u));
        fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> r = acc[i][j] * args.alpha;
        if (args.beta != 0.0) {
          fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> old;
          coopMatLoadNV(old, p.v, 0u, ld4, false);
          r = r + old * args.beta;
        }
        coopMatStoreNV(r, p.v, 0u, ld4, false);
      }
    }
    return;
  }
  // Lane l writes row l / 2, columns (l % 2) * 8 on, of each 16 x 16.
  const uint lr = lane >> 1, lc = (lane & 1u) * 8u;
  const uint base = sg * 256u;
  [[unroll]] for (uint i = 0u; i < FM; ++i) {
    [[unroll]] for (uint j = 0u; j < FN; ++j) {
      coopMatStoreNV(acc[i][j], c_tile, base, 16u, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      const uint r = wr + i * 16u + lr;
      const uint col = wc + j * 16u + lc;
      if (r < args.m) {
        const uint64_t row = uint64_t(args.c) + 4ul * uint64_t(r) * args.ldc;
        [[unroll]] for (uint e = 0u; e < 8u; ++e) {
          if (col + e < args.n) {
            F32 p = F32(row + 4ul * (col + e));
            const float v = args.alpha * c_tile[base + lr * 16u + lc + e];
            p.v = args.beta != 0.0 ? fma(args.beta, p.v, v) : v;
          }
        }
      }
      subgroupBarrier();
    }
  }
}
