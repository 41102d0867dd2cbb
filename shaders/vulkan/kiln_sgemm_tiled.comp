#version 460
// kiln_sgemm_f32_mid, kiln_sgemm_f32_small and kiln_sgemm_f32_split(float *c,
// const float *a, const float *b, u32 m, u32 n, u32 k, u32 lda, u32 ldb,
// u32 ldc, float alpha, float beta): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// in float32 FMAs; beta == 0 does not read C. One text, built once per
// kernel with KILN_SGEMM_MID, _SMALL or _SPLIT defined (meson.build).
// kiln_sgemm_f32() picks them for problems with too few 128 x 128 tiles
// (mid) or 64 x 64 tiles (split, small where k is short) to fill the GPU:
//   workgroup = 128 x 1 x 1 invocations (mid, split), 256 (small),
//   grid      = ceil(n / 64) x ceil(m / BM) x 1   (x over columns of C),
// and for kiln_sgemm_f32_split, with three more parameters (float *parts,
// u32 *tickets, u32 k_split), grid.z = ceil(k / k_split).
//
// The algorithm of shaders/cuda/sgemm_tiled.cu, whose comment says more: a
// BM x BN tile of C per workgroup, TM x TN per invocation, k split between
// KG groups of invocations that each multiply BK rows of every step's
// shared slice, their sums added in a fixed order by group 0. The split
// kernel also splits k between the workgroups of one tile (grid.z); the
// last to finish adds their sums in the order of z, so the result does not
// depend on timing. The mid and split kernels take 16896 bytes of shared
// memory, the small one 25600, more than the 16 KiB every Vulkan
// implementation offers: kiln_sgemm_f32() launches them only where the
// device has that much. No subgroup operation is used, so any subgroup
// size is correct; edges are handled as in kiln_sgemm_f32.comp, so any m,
// n, k >= 1 and lda >= k, ldb >= n, ldc >= n are correct.

// The 64 x 64 kernels differ from CUDA's: two groups of 64 invocations
// that each multiply 16 rows of a 32-row step, where CUDA's have four
// groups of 4 rows and two shared stages. The NVIDIA driver gives them 227
// registers (two workgroups per SM) against 128 for CUDA's shape, and a
// step twice as long covers more of the latency of its loads, which is
// what the split kernel's long k waits on (H100: 4096 x 64 x 4096 19.1 ->
// 32.1 TFLOP/s, 1024^3 26.4 -> 32.3; docs/performance.md). On CUDA the
// same shape gains nothing. Every Vulkan kernel here stages its slices in
// one buffer.
#if defined(KILN_SGEMM_MID) || defined(KILN_SGEMM_SPLIT)
const uint BM = 64u, BN = 64u; // the tile of C
const uint TM = 8u, TN = 8u;   // per invocation
const uint KG = 2u, BK = 16u;  // k groups, and k rows per group per step
#elif defined(KILN_SGEMM_SMALL)
const uint BM = 32u, BN = 64u;
const uint TM = 4u, TN = 8u;
const uint KG = 4u, BK = 16u;
#else
#error define KILN_SGEMM_MID, KILN_SGEMM_SMALL or KILN_SGEMM_SPLIT
#endif

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
// The split kernel's parts and tickets, which other workgroups read and
// write while this one runs.
layout(buffer_reference, std430, buffer_reference_align = 16) coherent buffer
    V4C {
  vec4 v;
};
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer
    U32C {
  uint v;
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
#if defined(KILN_SGEMM_SPLIT)
  V4C parts;
  U32C tickets;
  uint k_split;
#endif
} args;

const uint TX = BN / TN, TY = BM / TM; // a group's grid of invocations
const uint GT = TX * TY;               // invocations per group
const uint T = GT * KG;
const uint KS = KG * BK; // k per step
const uint RM = TM / 4u, RN = TN / 4u;
// In vec4s: a transposed A row of the slice, padded by one vec4 so that the
// transposing stores spread over the banks; a B row; where B's rows start
// in the staged slice; the whole slice.
const uint AS = BM / 4u + 1u;
const uint BS = BN / 4u;
const uint BT = KS * AS;
const uint STAGE = KS * (AS + BS);
const uint A_VECS = BM * KS / 4u, B_VECS = KS * BN / 4u;
const uint A_LOADS = (A_VECS + T - 1u) / T, B_LOADS = (B_VECS + T - 1u) / T;
// The groups' sums reuse the staged slice at the end.
const uint SMEM = STAGE > BM * BN / 4u ? STAGE : BM * BN / 4u;
shared vec4 smem[SMEM];

// Whether a matrix allows vec4 accesses along its rows.
bool vec4_rows(uint64_t address, uint ld) {
  return (address & 15ul) == 0ul && (ld & 3u) == 0u;
}

#if defined(KILN_SGEMM_SPLIT)
shared bool last;

// The split kernel's meeting of a tile's workgroups (in main): group 0
// stores its sums as this workgroup's part (vec4 e of invocation t at
// part[e * GT + t]); then here the workgroup takes a ticket, and learns
// whether it is the last of its tile, whose group 0 then adds every part
// in the order of z and writes C. The last one puts the counter back to 0
// for the stream's next call. (The sums stay in main: passing them to a
// function costs the NVIDIA driver 21 more registers, and the kernel its
// second workgroup per SM.)
bool last_of_tile(uint tile) {
  // The part is seen by every workgroup before the ticket is.
  memoryBarrierBuffer();
  barrier();
  U32C ticket = U32C(uint64_t(args.tickets) + (uint64_t(tile) << 2));
  if (gl_LocalInvocationID.x == 0u) {
    last = atomicAdd(ticket.v, 1u) == gl_NumWorkGroups.z - 1u;
    if (last) ticket.v = 0u;
    // The last ticket's holder sees every part after taking it.
    memoryBarrierBuffer();
  }
  barrier();
  return last;
}
#endif

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint group = tid / GT;
  const uint t = tid % GT;
  const uint tx = t % TX, ty = t / TX;
  const uint row0 = gl_WorkGroupID.y * BM;
  const uint col0 = gl_WorkGroupID.x * BN;
  const uint m = args.m, n = args.n;
  uint k = args.k;
  uint64_t a = uint64_t(args.a), b = uint64_t(args.b);
  const uint64_t c = uint64_t(args.c);
#if defined(KILN_SGEMM_SPLIT)
  // This workgroup's rows of k, as a product of its own.
  const uint k0 = gl_WorkGroupID.z * args.k_split;
  a += uint64_t(k0) << 2;
  b += (uint64_t(k0) * args.ldb) << 2;
  k = min(k - k0, args.k_split);
#endif
  const bool a_fast = vec4_rows(a, args.lda) && row0 + BM <= m;
  const bool b_fast = vec4_rows(b, args.ldb) && col0 + BN <= n;

  // The byte addresses this invocation fetches from next, each advanced by
  // a fixed step: fewer live values than offsets recomputed every step
  // (see kiln_sgemm_f32.comp).
  uint64_t pa[A_LOADS], pb[B_LOADS];
  [[unroll]] for (uint l = 0u; l < A_LOADS; ++l) {
    const uint f = tid + l * T;
    pa[l] = a + ((uint64_t(row0 + f / (KS / 4u)) * args.lda +
                  f % (KS / 4u) * 4u) << 2);
  }
  [[unroll]] for (uint l = 0u; l < B_LOADS; ++l) {
    const uint f = tid + l * T;
    pb[l] = b + ((uint64_t(f / BS) * args.ldb + col0 + f % BS * 4u) << 2);
  }
  const uint64_t pb_step = (uint64_t(KS) * args.ldb) << 2;

  const uint steps = (k + KS - 1u) / KS;
  vec4 next_a[A_LOADS], next_b[B_LOADS];
  // acc[i][q]: row i as described above, columns q * 4 * TX + tx * 4 + 0..3.
  vec4 acc[TM][RN];
  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    [[unroll]] for (uint q = 0u; q < RN; ++q) acc[i][q] = vec4(0.0);
  }

  for (uint s = 0u; s <= steps; ++s) {
    // Fetch step s (ahead of the multiplication of step s - 1 below).
    if (s < steps) {
      const uint k0 = s * KS;
      const bool whole_k = k0 + KS <= k;
      [[unroll]] for (uint l = 0u; l < A_LOADS; ++l) {
        const uint f = tid + l * T;
        const uint r = row0 + f / (KS / 4u);
        const uint kk = k0 + f % (KS / 4u) * 4u;
        if (A_VECS % T != 0u && f >= A_VECS) {
          // past the slice: this invocation stages nothing here
        } else if (a_fast && whole_k) {
          next_a[l] = V4R(pa[l]).v;
        } else {
          [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            next_a[l][j] = 0.0;
            if (r < m && kk + j < k)
              next_a[l][j] = F32R(pa[l] + uint64_t(4u * j)).v;
          }
        }
        pa[l] += uint64_t(KS * 4u);
      }
      [[unroll]] for (uint l = 0u; l < B_LOADS; ++l) {
        const uint f = tid + l * T;
        const uint kk = k0 + f / BS;
        const uint col = col0 + f % BS * 4u;
        if (B_VECS % T != 0u && f >= B_VECS) {
          // past the slice
        } else if (b_fast && whole_k) {
          next_b[l] = V4R(pb[l]).v;
        } else {
          [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            next_b[l][j] = 0.0;
            if (kk < k && col + j < n)
              next_b[l][j] = F32R(pb[l] + uint64_t(4u * j)).v;
          }
        }
        pb[l] += pb_step;
      }
    }

    if (s > 0u) {
      [[unroll]] for (uint kk = group * BK; kk < group * BK + BK; ++kk) {
        vec4 av[RM], bv[RN];
        [[unroll]] for (uint q = 0u; q < RM; ++q)
          av[q] = smem[kk * AS + q * TY + ty];
        [[unroll]] for (uint q = 0u; q < RN; ++q)
          bv[q] = smem[BT + kk * BS + q * TX + tx];
        [[unroll]] for (uint i = 0u; i < TM; ++i) {
          [[unroll]] for (uint q = 0u; q < RN; ++q)
            acc[i][q] = fma(vec4(av[i >> 2][i & 3u]), bv[q], acc[i][q]);
        }
      }
    }

    // Stage step s, once every invocation has multiplied step s - 1.
    barrier();
    if (s < steps) {
      [[unroll]] for (uint l = 0u; l < A_LOADS; ++l) {
        const uint f = tid + l * T;
        if (A_VECS % T == 0u || f < A_VECS) {
          const uint r = f / (KS / 4u);
          const uint kk = f % (KS / 4u) * 4u;
          [[unroll]] for (uint j = 0u; j < 4u; ++j)
            smem[(kk + j) * AS + (r >> 2)][r & 3u] = next_a[l][j];
        }
      }
      [[unroll]] for (uint l = 0u; l < B_LOADS; ++l) {
        const uint f = tid + l * T;
        if (B_VECS % T == 0u || f < B_VECS) smem[BT + f] = next_b[l];
      }
    }
    barrier();
  }

  // Group 0 adds the other groups' sums, one group at a time, vec4 e of
  // invocation t at smem[e * GT + t]. The loop's last barrier has ended
  // every read of the staged slice.
  for (uint g = 1u; g < KG; ++g) {
    if (group == g) {
      [[unroll]] for (uint i = 0u; i < TM; ++i) {
        [[unroll]] for (uint q = 0u; q < RN; ++q)
          smem[(i * RN + q) * GT + t] = acc[i][q];
      }
    }
    barrier();
    if (group == 0u) {
      [[unroll]] for (uint i = 0u; i < TM; ++i) {
        [[unroll]] for (uint q = 0u; q < RN; ++q)
          acc[i][q] += smem[(i * RN + q) * GT + t];
      }
    }
    barrier();
  }
#if defined(KILN_SGEMM_SPLIT)
  {
    const uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    const uint64_t stride = uint64_t(gl_NumWorkGroups.x) * gl_NumWorkGroups.y *
                            (BM * BN * 4u); // bytes between the parts of z's
    const uint64_t parts = uint64_t(args.parts) +
                           uint64_t(tile) * (BM * BN * 4u) + (uint64_t(t) << 4);
    if (group == 0u) {
      const uint64_t part = parts + gl_WorkGroupID.z * stride;
      [[unroll]] for (uint i = 0u; i < TM; ++i) {
        [[unroll]] for (uint q = 0u; q < RN; ++q)
          V4C(part + (uint64_t((i * RN + q) * GT) << 4)).v = acc[i][q];
      }
    }
    if (!last_of_tile(tile)) return;
    if (group == 0u) {
      [[unroll]] for (uint i = 0u; i < TM; ++i) {
        [[unroll]] for (uint q = 0u; q < RN; ++q)
          acc[i][q] = V4C(parts + (uint64_t((i * RN + q) * GT) << 4)).v;
      }
      for (uint z = 1u; z < gl_NumWorkGroups.z; ++z) {
        [[unroll]] for (uint i = 0u; i < TM; ++i) {
          [[unroll]] for (uint q = 0u; q < RN; ++q)
            acc[i][q] += V4C(parts + z * stride +
                             (uint64_t((i * RN + q) * GT) << 4)).v;
        }
      }
    }
  }
#endif
  if (group != 0u) return;

  const bool c_fast = vec4_rows(c, args.ldc) && row0 + BM <= m &&
                      col0 + BN <= n;
  const float alpha = args.alpha, beta = args.beta;
  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    const uint r = row0 + (i >> 2) * 4u * TY + ty * 4u + (i & 3u);
    [[unroll]] for (uint q = 0u; q < RN; ++q) {
      const uint col = col0 + q * 4u * TX + tx * 4u;
      const uint64_t at = uint64_t(r) * args.ldc + col;
      vec4 v = alpha * acc[i][q];
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
