#version 460
// kiln_hgemm_f16(float *c, const f16 *a, const f16 *b, u32 m, u32 n, u32 k,
// u32 lda, u32 ldb, u32 ldc, float alpha, float beta): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// with A and B in binary16 and C in float32, summed in float32 on the
// ordinary cores: the kernel for devices without cooperative matrices
// (kiln_hgemm_f16_coop.comp is the other). beta == 0 does not read C.
//
// The launch shape: workgroup = 256 x 1 x 1, grid = ceil(n / 64) x
// ceil(m / 64) x 1. Each workgroup computes a 64 x 64 tile of C in slices
// of 16 of k, staged in shared memory as floats (A transposed); each
// invocation owns 4 x 4 elements, rows ty * 4.., columns tx * 4.. on a
// 16 x 16 grid.
//
// Halves are read through the 32-bit word that holds them, so the kernel
// needs neither 16-bit storage nor 16-bit arithmetic from the device, and
// any offset that is a multiple of 2 works: a word never crosses the end
// of an allocation, whose size Vulkan rounds up to at least 4 bytes. Every
// load is checked against the matrix's bounds: a fallback, not fast.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 {
  float v;
};
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer
    Word {
  uint v;
};

layout(push_constant, std430) uniform Args {
  F32 c;
  Word a; // halves, at any even address: only ever read by half_at
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

shared float a_tile[16][64 + 4];
shared float b_tile[16][64];

// Element e of the halves at address base.
float half_at(uint64_t base, uint64_t e) {
  const uint64_t byte = base + 2ul * e;
  const vec2 pair = unpackHalf2x16(Word(byte & ~3ul).v);
  return (byte & 2ul) != 0ul ? pair.y : pair.x;
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tx = tid & 15u, ty = tid >> 4;
  const uint row0 = gl_WorkGroupID.y * 64u, col0 = gl_WorkGroupID.x * 64u;
  const uint a_r = tid >> 2, a_k = (tid & 3u) * 4u;
  const uint b_k = tid >> 4, b_c = (tid & 15u) * 4u;
  const uint64_t a = uint64_t(args.a), b = uint64_t(args.b);
  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0u; k0 < args.k; k0 += 16u) {
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      const uint r = row0 + a_r, kk = k0 + a_k + j;
      a_tile[a_k + j][a_r] =
          r < args.m && kk < args.k
              ? half_at(a, uint64_t(r) * args.lda + kk)
              : 0.0;
      const uint kr = k0 + b_k, col = col0 + b_c + j;
      b_tile[b_k][b_c + j] =
          kr < args.k && col < args.n
              ? half_at(b, uint64_t(kr) * args.ldb + col)
              : 0.0;
    }
    barrier();
    [[unroll]] for (uint kk = 0u; kk < 16u; ++kk) {
      float ar[4], br[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        ar[i] = a_tile[kk][ty * 4u + i];
        br[i] = b_tile[kk][tx * 4u + i];
      }
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          acc[i][j] = fma(ar[i], br[j], acc[i][j]);
        }
      }
    }
    barrier();
  }
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const uint r = row0 + ty * 4u + i;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      const uint col = col0 + tx * 4u + j;
      if (r < args.m && col < args.n) {
        F32 p = F32(uint64_t(args.c) + 4ul * (uint64_t(r) * args.ldc + col));
        const float v = args.alpha * acc[i][j];
        p.v = args.beta != 0.0 ? fma(args.beta, p.v, v) : v;
      }
    }
  }
}
