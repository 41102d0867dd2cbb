#version 460
// kiln_sgemm_f32(float *c, const float *a, const float *b, u32 m, u32 n,
// u32 k, u32 lda, u32 ldb, u32 ldc, float alpha, float beta): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// in float32 FMAs; beta == 0 does not read C.
//
// The launch shape is this kernel's own, and kiln_sgemm_f32() uses it:
//   workgroup = 256 x 1 x 1 invocations,
//   grid      = ceil(n / 128) x ceil(m / 128) x 1   (x over columns of C).
// The workgroup size is specialized at launch as for every kiln kernel, but
// the tiling below is written for 256.
//
// Each workgroup computes a 128 x 128 tile of C, walking k in slices of 8.
// A slice of A (128 x 8) and of B (8 x 128) is staged in shared memory as
// vec4s, A transposed so that both are read along m and n a vec4 at a time.
// There are two stages: while the workgroup multiplies one, each invocation
// already has its part of the next slice in flight from global memory (one
// vec4 of A, one of B) and stores it into the other stage afterwards, so
// there is one barrier per slice. The two stages take 16 KiB of shared
// memory, the least every Vulkan implementation offers.
//
// Each invocation owns 8 x 8 elements of C: rows ty*4 + {0..3} and 64 +
// ty*4 + {0..3}, columns tx*4 + {0..3} and 64 + tx*4 + {0..3}, with (tx, ty)
// on a 16 x 16 grid laid out per 32 invocations as 8 tx by 4 ty. With
// 32-wide subgroups (NVIDIA) a subgroup's shared reads of a k row are 128
// contiguous bytes of B and 64 of A, each broadcast: no bank conflicts. No
// subgroup operation is needed, so any subgroup size is correct.
//
// Edges: a workgroup whose tile lies inside C, with 16-byte aligned
// matrices and leading dimensions that are multiples of 4, moves vec4s
// everywhere; other workgroups, and the last slice when k % 8 != 0, load
// and store one float at a time with bounds checks, padding the tiles with
// zeros. So any m, n, k >= 1 and any lda >= k, ldb >= n, ldc >= n are
// correct.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_control_flow_attributes : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32 {
  float v;
};
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer
    F32R {
  float v;
};
layout(buffer_reference, std430, buffer_reference_align = 16) buffer V4 {
  vec4 v;
};
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer
    V4R {
  vec4 v;
};

layout(push_constant, std430) uniform Args {
  F32 c;
  F32R a;
  F32R b;
  uint m;
  uint n;
  uint k;
  uint lda;
  uint ldb;
  uint ldc;
  float alpha;
  float beta;
} args;

const uint BM = 128u; // rows of C per workgroup
const uint BN = 128u; // columns of C per workgroup
const uint BK = 8u;   // k per shared-memory slice

// a_tile[stage][kk][q] holds rows 4q..4q+3 of A's slice at k = kk, except
// that q is swizzled: the vec4 of rows 4q.. is stored at q ^ (kk & 4). Then
// the transposing stores of 32 neighbouring invocations (16 rows, k and k +
// 4) fall in 32 different banks without padding, so the stages fit in
// 16 KiB; the reads still fetch one whole vec4.
shared vec4 a_tile[2][BK][BM / 4u];
shared vec4 b_tile[2][BK][BN / 4u];

// Whether a matrix allows vec4 accesses along its rows.
bool vec4_rows(uint64_t address, uint ld) {
  return (address & 15ul) == 0ul && (ld & 3u) == 0u;
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.y * BM;
  const uint col0 = gl_WorkGroupID.x * BN;
  const uint m = args.m, n = args.n, k = args.k;
  const uint64_t a = uint64_t(args.a), b = uint64_t(args.b);
  const uint64_t c = uint64_t(args.c);

  // What this invocation stages: A row a_row of the tile, k columns
  // a_col..+3; B k row b_row, columns b_col..+3.
  const uint a_row = tid >> 1;
  const uint a_col = (tid & 1u) * 4u;
  const uint b_row = tid >> 5;
  const uint b_col = (tid & 31u) * 4u;
  const uint a_m = row0 + a_row; // global row of A
  const uint b_n = col0 + b_col; // global column of B
  // The byte addresses this invocation fetches from next, each advanced by
  // a fixed step per slice. Recomputing them from element offsets every
  // slice kept more values live: NVIDIA's Vulkan compiler then gave the
  // kernel 143 registers, one workgroup per SM instead of two at 128, and
  // 25 instead of 33 TFLOP/s on the H100 (VK_KHR_pipeline_executable_
  // properties statistics; see docs/performance.md).
  uint64_t pa = a + ((uint64_t(a_m) * args.lda + a_col) << 2);
  uint64_t pb = b + ((uint64_t(b_row) * args.ldb + b_n) << 2);
  const uint64_t pb_step = (uint64_t(BK) * args.ldb) << 2;
  const bool a_fast = vec4_rows(a, args.lda) && row0 + BM <= m;
  const bool b_fast = vec4_rows(b, args.ldb) && col0 + BN <= n;

  // The 16 x 16 grid of invocations that compute, as described above.
  const uint tx = ((tid >> 5) & 1u) * 8u + (tid & 7u);
  const uint ty = (tid >> 6) * 4u + ((tid >> 3) & 3u);

  const uint slices = (k + BK - 1u) / BK;
  vec4 next_a = vec4(0.0), next_b = vec4(0.0);
  // acc[i][h]: row i as above, columns h * 64 + tx * 4 + {0..3}.
  vec4 acc[8][2];
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    acc[i][0] = vec4(0.0);
    acc[i][1] = vec4(0.0);
  }

  for (uint s = 0u; s <= slices; ++s) {
    // Fetch slice s (ahead of the multiplication of slice s - 1 below).
    if (s < slices) {
      const uint k0 = s * BK;
      const bool whole_k = k0 + BK <= k;
      if (a_fast && whole_k) {
        next_a = V4R(pa).v;
      } else {
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          next_a[j] = 0.0;
          if (a_m < m && k0 + a_col + j < k)
            next_a[j] = F32R(pa + uint64_t(4u * j)).v;
        }
      }
      if (b_fast && whole_k) {
        next_b = V4R(pb).v;
      } else {
        const bool row_in = k0 + b_row < k;
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          next_b[j] = 0.0;
          if (row_in && b_n + j < n)
            next_b[j] = F32R(pb + uint64_t(4u * j)).v;
        }
      }
      pa += uint64_t(BK * 4u);
      pb += pb_step;
    }

    if (s > 0u) {
      const uint cur = (s - 1u) & 1u;
      [[unroll]] for (uint kk = 0u; kk < BK; ++kk) {
        const uint q = ty ^ (kk & 4u);
        const vec4 a0 = a_tile[cur][kk][q];
        const vec4 a1 = a_tile[cur][kk][16u + q];
        const vec4 b0 = b_tile[cur][kk][tx];
        const vec4 b1 = b_tile[cur][kk][16u + tx];
        [[unroll]] for (uint i = 0u; i < 4u; ++i) {
          acc[i][0] = fma(vec4(a0[i]), b0, acc[i][0]);
          acc[i][1] = fma(vec4(a0[i]), b1, acc[i][1]);
          acc[4u + i][0] = fma(vec4(a1[i]), b0, acc[4u + i][0]);
          acc[4u + i][1] = fma(vec4(a1[i]), b1, acc[4u + i][1]);
        }
      }
    }

    // Stage slice s. Its buffer was last read while multiplying slice
    // s - 2, which every invocation finished before the barrier of step
    // s - 1.
    if (s < slices) {
      const uint buf = s & 1u;
      [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        const uint kk = a_col + j;
        a_tile[buf][kk][(a_row >> 2) ^ (kk & 4u)][a_row & 3u] = next_a[j];
      }
      b_tile[buf][b_row][tid & 31u] = next_b;
    }
    barrier();
  }

  const bool c_fast = vec4_rows(c, args.ldc) && row0 + BM <= m &&
                      col0 + BN <= n;
  const float alpha = args.alpha, beta = args.beta;
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    const uint r = row0 + (i >> 2) * 64u + ty * 4u + (i & 3u);
    [[unroll]] for (uint h = 0u; h < 2u; ++h) {
      const uint col = col0 + h * 64u + tx * 4u;
      const uint64_t at = uint64_t(r) * args.ldc + col;
      vec4 v = alpha * acc[i][h];
      if (c_fast) {
        V4 p = V4(c + (at << 2));
        if (beta != 0.0) v = fma(vec4(beta), p.v, v);
        p.v = v;
      } else if (r < m) {
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          if (col + j < n) {
            F32 p = F32(c + ((at + j) << 2));
            p.v = beta != 0.0 ? fma(beta, p.v, v[j]) : v[j];
          }
        }
      }
    }
  }
}
