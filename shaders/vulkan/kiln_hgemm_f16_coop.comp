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
// ceil(n / 128) x ceil(m / 128) x 1 (x over columns of C).
//
// Each workgroup computes a 128 x 128 tile of C, walking k in slices of 32.
// A slice of A (128 x 32) and of B (32 x 128) is staged in shared memory in
// two stages, as uvec4s of 8 halves, rows padded by one uvec4 so that the
// matrix loads of a subgroup spread over the banks: while the workgroup
// multiplies one stage, each invocation has its two uvec4s of A and two of
// B for the next slice in flight from global memory, and stores them into
// the other stage afterwards (one barrier per slice). Subgroups sit on a
// 2 x 4 grid, each owning 64 x 32 of C: 4 x 2 accumulator matrices.
//
// Edges: a uvec4 is loaded whole when it lies inside its matrix and is
// 16-byte aligned (the matrix's address, and its leading dimension a
// multiple of 8); otherwise its halves are read one by one through the
// 32-bit words that hold them, zeros outside. The result goes through
// shared memory one 16 x 16 matrix at a time and is written with bounds
// checks, so any m, n, k >= 1 and lda >= k, ldb >= n, ldc >= n are correct.
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

const uint BM = 128u, BN = 128u, BK = 32u;
const uint A_LD = BK / 8u + 1u; // uvec4s per staged row of A
const uint B_LD = BN / 8u + 1u; // and of B
const uint A_STAGE = BM * A_LD, B_STAGE = BK * B_LD;

shared uvec4 a_tile[2 * A_STAGE];
shared uvec4 b_tile[2 * B_STAGE];
shared float c_tile[8 * 256]; // 16 x 16 floats per subgroup

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

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID;
  const uint lane = gl_SubgroupInvocationID;
  const uint row0 = gl_WorkGroupID.y * BM, col0 = gl_WorkGroupID.x * BN;
  const uint warp_m = (sg >> 2) * 64u, warp_n = (sg & 3u) * 32u;
  const uint64_t a = uint64_t(args.a), b = uint64_t(args.b);
  const bool a_aligned = (a & 15ul) == 0ul && (args.lda & 7u) == 0u;
  const bool b_aligned = (b & 15ul) == 0ul && (args.ldb & 7u) == 0u;
  const uint slices = (args.k + BK - 1u) / BK;

  // This invocation stages A rows a_r and a_r + 64 at uvec4 a_q of the
  // slice, and B rows b_r and b_r + 16 at uvec4 b_q.
  const uint a_r = tid >> 2, a_q = tid & 3u;
  const uint b_r = tid >> 4, b_q = tid & 15u;
  uvec4 next[4];

  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[4][2];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    [[unroll]] for (uint j = 0u; j < 2u; ++j) {
      acc[i][j] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    }
  }

  for (uint s = 0u; s <= slices; ++s) {
    if (s < slices) {
      const uint k0 = s * BK;
      [[unroll]] for (uint h = 0u; h < 2u; ++h) {
        next[h] = piece(a, row0 + a_r + h * 64u, args.m, k0 + a_q * 8u,
                        args.k, args.lda, a_aligned);
        next[2u + h] = piece(b, k0 + b_r + h * 16u, args.k, col0 + b_q * 8u,
                             args.n, args.ldb, b_aligned);
      }
    }
    if (s > 0u) {
      const uint sa = ((s - 1u) & 1u) * A_STAGE;
      const uint sb = ((s - 1u) & 1u) * B_STAGE;
      [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[4];
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fb[2];
        [[unroll]] for (uint i = 0u; i < 4u; ++i) {
          coopMatLoadNV(fa[i], a_tile,
                        sa + (warp_m + i * 16u) * A_LD + kk / 8u, A_LD,
                        false);
        }
        [[unroll]] for (uint j = 0u; j < 2u; ++j) {
          coopMatLoadNV(fb[j], b_tile,
                        sb + kk * B_LD + (warp_n + j * 16u) / 8u, B_LD,
                        false);
        }
        [[unroll]] for (uint i = 0u; i < 4u; ++i) {
          [[unroll]] for (uint j = 0u; j < 2u; ++j) {
            acc[i][j] = coopMatMulAddNV(fa[i], fb[j], acc[i][j]);
          }
        }
      }
    }
    // The stage written here was last read while multiplying slice s - 2,
    // which every subgroup finished before the barrier of step s - 1.
    if (s < slices) {
      const uint sa = (s & 1u) * A_STAGE, sb = (s & 1u) * B_STAGE;
      [[unroll]] for (uint h = 0u; h < 2u; ++h) {
        a_tile[sa + (a_r + h * 64u) * A_LD + a_q] = next[h];
        b_tile[sb + (b_r + h * 16u) * B_LD + b_q] = next[2u + h];
      }
    }
    barrier();
  }

  // Lane l writes row l / 2, columns (l % 2) * 8 on, of each 16 x 16.
  const uint lr = lane >> 1, lc = (lane & 1u) * 8u;
  const uint base = sg * 256u;
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    [[unroll]] for (uint j = 0u; j < 2u; ++j) {
      coopMatStoreNV(acc[i][j], c_tile, base, 16u, false);
      subgroupMemoryBarrierShared();
      subgroupBarrier();
      const uint r = row0 + warp_m + i * 16u + lr;
      const uint col = col0 + warp_n + j * 16u + lc;
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
