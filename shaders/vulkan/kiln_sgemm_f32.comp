#version 460
// kiln_sgemm_f32(float *c, const float *a, const float *b, u32 m, u32 n,
// u32 k, u32 lda, u32 ldb, u32 ldc, float alpha, float beta): row-major
//   C[m x n] = alpha * A[m x k] * B[k x n] + beta * C
// in float32 FMAs; beta == 0 does not read C.
//
// The launch shape is this kernel's own, and kiln_sgemm_f32() must use it:
//   workgroup = 128 x 1 x 1 invocations (not 256: the tiling below is
//               written for 128, each invocation computing 8 x 16 of C),
//   grid      = ceil(n / 128) x ceil(m / 128) x 1   (x over columns of C),
//   shared    = 16 KiB declared below (two stages of a 8-deep k slice).
//
// Each workgroup computes a 128 x 128 tile of C, walking k in slices of 8.
// A slice of A (128 x 8) and of B (8 x 128) is staged in shared memory as
// vec4s, A transposed so that both are read along m and n a vec4 at a time.
// There are two stages: while the workgroup multiplies one, each invocation
// already has its part of the next slice in flight from global memory (two
// vec4s of A, two of B) and stores it into the other stage afterwards, so
// there is one barrier per slice.
//
// Each invocation owns 8 x 16 elements of C: rows ty*4 + {0..3} (lo) and
// 64 + ty*4 + {0..3} (hi), columns h*32 + tx*4 + {0..3} for h = 0..3, with
// (tx, ty) on an 8 x 16 grid, a subgroup of 32 spanning 8 tx by 4 ty. Per k
// row an invocation reads 2 vec4s of A and 4 of B from shared memory (each
// read by a subgroup: 4 or 8 distinct vec4s, broadcast, no bank conflicts)
// and does 128 FMAs. No subgroup operation is used, so any subgroup size
// is correct.
//
// Why (H100, NVIDIA Vulkan 580; docs/performance.md, "SGEMM on Vulkan",
// has the measurements): the 8 x 8 / 256-invocation design must fit
// 128 registers for two workgroups per SM, and the driver met that only by
// spilling (24,064 bytes of shared memory for 16,384 declared, 31 TFLOP/s).
// At 128 invocations anything up to 255 registers keeps two workgroups (8
// subgroups) per SM; this kernel takes 241, keeps nothing in shared memory
// beyond what it declares (the driver reports the same size as for every
// spill-free variant), and does a third more FMAs per shared-memory read
// (128 per 6 vec4s against 64 per 4): 39.2 TFLOP/s at 4096 against 31.1
// for the 8 x 8 kernel in the same run.
// Every loop over registers is written out by the macros below and every
// register is a named variable (no private arrays): glslang's plain output
// then runs exactly as fast as after spirv-opt -O.
// A's transposed rows are XOR-swizzled (swz below), so its transposing
// stores are conflict-free.
// The same design with slices of 16 of k in 32 KiB ran at 40.6 TFLOP/s,
// but lavapipe (Mesa 22.3) crashes in its compiled code, and Vulkan
// promises only 16 KiB a workgroup.
// Bounds are compared as differences from the tile's corner and from the
// slice's first k, so none wraps for any m, n, k < 2^32.
//
// Edges: a workgroup whose tile lies inside C, with 16-byte aligned
// matrices and leading dimensions that are multiples of 4, moves vec4s
// everywhere; other workgroups, and the last slice when k % 8 != 0, load
// and store one float at a time with bounds checks, padding the tiles with
// zeros. So any m, n, k >= 1 and any lda >= k, ldb >= n, ldc >= n are
// correct.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

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

const uint NT = 128u;
const uint BM = 128u;
const uint BN = 128u;
const uint BK = 8u;
const uint TXN = NT / 16u;           // invocations along n (16 along m)
const uint AQ = BK / 4u;             // vec4s per row of an A slice
const uint AROWS = NT / AQ;          // A rows between an invocation's vec4s
const uint BQ = BN / 4u;             // vec4s per row of a B slice
const uint BROWS = NT / BQ;          // B rows between them
const uint SWQ = 32u / AQ / 4u;      // swizzle unit in vec4s

// The loops over registers, written out: h = 0..3 (vec4 column
// groups), j (the vec4s of A and of B fetched per slice), the k rows of
// a slice, and i = 0..3 with the vec4 component it names (FOR_IC2 is
// FOR_IC again, for use inside an expansion of FOR_IC).
#define FOR_H(X, p, q) X(p, q, 0) X(p, q, 1) X(p, q, 2) X(p, q, 3)
#define FOR_H1(X) X(0) X(1) X(2) X(3)
#define FOR_J(X) X(0) X(1)
#define FOR_KK(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define FOR_IC(X, p) X(p, 0, x) X(p, 1, y) X(p, 2, z) X(p, 3, w)
#define FOR_IC2(X, p) X(p, 0, x) X(p, 1, y) X(p, 2, z) X(p, 3, w)

shared vec4 a_tile[2][BK][BM / 4u];
shared vec4 b_tile[2][BK][BQ];

#define swz(kk) (((kk) >> 2) * SWQ)

// Bounds as differences from the workgroup's corner (row0 < m, col0 < n)
// and from the slice's first k (k0 < k), which cannot wrap.
#define A_K_IN(i) (a_col + i < k - k0)
#define A_ROW_IN(j) (a_row + j * AROWS < m - row0)
#define B_K_IN(j) (b_row + j * BROWS < k - k0)
#define B_COL_IN(i) (b_c4 * 4u + i < n - col0)
#define WHOLE_SLICE (k - k0 >= BK)
#define C_ROW_IN(ROWOFF) ((ROWOFF) < m - row0)
#define C_COL_IN(j) (col - col0 + j < n - col0)
// (TILE_IN is only ever the last operand of &&.)
#define TILE_IN m - row0 >= BM && n - col0 >= BN

bool vec4_rows(uint64_t address, uint ld) {
  return (address & 15ul) == 0ul && (ld & 3u) == 0u;
}

// --- fetch of slice s into na<j> / nb<j> ---
#define FETCH_A_FAST(j) na##j = V4R(pa + uint64_t(j) * pa_j).v;
#define FETCH_B_FAST(j) nb##j = V4R(pb + uint64_t(j) * pb_j).v;
#define FETCH_A_EL(j, i, c)                                            \
  na##j.c = 0.0;                                                       \
  if (a_in && A_K_IN(i))                                               \
    na##j.c = F32R(pa + uint64_t(j) * pa_j + uint64_t(4 * i)).v;
#define FETCH_B_EL(j, i, c)                                            \
  nb##j.c = 0.0;                                                       \
  if (b_in && B_COL_IN(i))                                             \
    nb##j.c = F32R(pb + uint64_t(j) * pb_j + uint64_t(4 * i)).v;
#define FETCH_A_CHECKED(j)                                             \
  {                                                                    \
    const bool a_in = A_ROW_IN(j);                                     \
    FOR_IC(FETCH_A_EL, j)                                              \
  }
#define FETCH_B_CHECKED(j)                                             \
  {                                                                    \
    const bool b_in = B_K_IN(j);                                       \
    FOR_IC(FETCH_B_EL, j)                                              \
  }
#define FETCH_A(s, FAST)                                               \
  {                                                                    \
    const uint k0 = (s) * BK;                                          \
    if (FAST && WHOLE_SLICE) {                                         \
      FOR_J(FETCH_A_FAST)                                              \
    } else {                                                           \
      FOR_J(FETCH_A_CHECKED)                                           \
    }                                                                  \
    pa += uint64_t(BK * 4u);                                           \
  }
#define FETCH_B(s, FAST)                                               \
  {                                                                    \
    const uint k0 = (s) * BK;                                          \
    if (FAST && WHOLE_SLICE) {                                         \
      FOR_J(FETCH_B_FAST)                                              \
    } else {                                                           \
      FOR_J(FETCH_B_CHECKED)                                           \
    }                                                                  \
    pb += pb_step;                                                     \
  }

// --- store of na<j> / nb<j> into stage buf (A transposed) ---
#define STAGE_A_EL(j, i, c)                                            \
  a_tile[buf][a_col + i][((a_row + j * AROWS) >> 2) ^ swz(a_col + i)]  \
        [a_row & 3u] = na##j.c;
#define STAGE_J(j)                                                     \
  FOR_IC(STAGE_A_EL, j)                                                \
  b_tile[buf][b_row + j * BROWS][b_c4] = nb##j;
#define STAGE(BUF)                                                     \
  {                                                                    \
    const uint buf = (BUF);                                            \
    FOR_J(STAGE_J)                                                     \
  }

// --- one k row of the current stage ---
#define LOAD_B(h) fb##h = b_tile[cur][kk][h * TXN + tx];
#define MUL_ICH(i, c, h)                                               \
  lo##i##_##h = fma(vec4(fa0.c), fb##h, lo##i##_##h);                  \
  hi##i##_##h = fma(vec4(fa1.c), fb##h, hi##i##_##h);
#define MUL_IC(_, i, c) FOR_H(MUL_ICH, i, c)
#define KSTEP(KK)                                                      \
  {                                                                    \
    const uint kk = (KK);                                              \
    const uint q = ty ^ swz(kk);                                       \
    fa0 = a_tile[cur][kk][q];                                          \
    fa1 = a_tile[cur][kk][16u + q];                                    \
    FOR_H1(LOAD_B)                                                     \
    FOR_IC(MUL_IC, 0)                                                  \
  }
#define SLICE FOR_KK(KSTEP)
#define FETCH(s, FAST) FETCH_A(s, FAST) FETCH_B(s, FAST)

// --- the main loop: fetch s + 1, multiply s, stage s + 1, barrier ---
#define MAINLOOP(FAST)                                                 \
  {                                                                    \
    FETCH(0u, FAST)                                                    \
    STAGE(0u)                                                          \
    barrier();                                                         \
    for (uint s = 0u; s < slices; ++s) {                               \
      const bool more = s + 1u < slices;                               \
      if (more) FETCH(s + 1u, FAST)                                    \
      const uint cur = s & 1u;                                         \
      SLICE                                                            \
      if (more) {                                                      \
        STAGE(cur ^ 1u)                                                \
        barrier();                                                     \
      }                                                                \
    }                                                                  \
  }

#define DECL_ACC(i, c, h) vec4 lo##i##_##h = vec4(0.0), hi##i##_##h = vec4(0.0);
#define DECL_ACC_I(_, i, c) FOR_H(DECL_ACC, i, c)
#define DECL_J(j) vec4 na##j, nb##j;
#define DECL_FB(h) vec4 fb##h;

// --- C = alpha * sums + beta * C ---
#define STORE_C_EL(_, j, c)                                            \
  if (C_COL_IN(j)) {                                                   \
    F32 p = F32(cp + ((at + j) << 2));                                 \
    p.v = beta != 0.0 ? fma(beta, p.v, v.c) : v.c;                     \
  }
#define STORE_C(ROWOFF, VAL, h)                                        \
  {                                                                    \
    const uint r = row0 + (ROWOFF);                                    \
    const uint col = col0 + h * 4u * TXN + tx * 4u;                    \
    const uint64_t at = uint64_t(r) * args.ldc + col;                  \
    vec4 v = alpha * VAL;                                              \
    if (c_fast) {                                                      \
      V4 p = V4(cp + (at << 2));                                       \
      if (beta != 0.0) v = fma(vec4(beta), p.v, v);                    \
      p.v = v;                                                         \
    } else if (C_ROW_IN(ROWOFF)) {                                     \
      FOR_IC2(STORE_C_EL, 0)                                           \
    }                                                                  \
  }
#define STORE_ICH(i, c, h)                                             \
  STORE_C(ty * 4u + i, lo##i##_##h, h)                                 \
  STORE_C(64u + ty * 4u + i, hi##i##_##h, h)
#define STORE_IC(_, i, c) FOR_H(STORE_ICH, i, c)

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.y * BM;
  const uint col0 = gl_WorkGroupID.x * BN;
  const uint m = args.m, n = args.n, k = args.k;
  const uint64_t a = uint64_t(args.a), b = uint64_t(args.b);

  const uint a_row = tid / AQ;
  const uint a_col = (tid % AQ) * 4u;
  const uint b_row = tid / BQ;
  const uint b_c4 = tid % BQ;
  const uint a_m = row0 + a_row;
  const uint b_n = col0 + b_c4 * 4u;
  uint64_t pa = a + ((uint64_t(a_m) * args.lda + a_col) << 2);
  const uint64_t pa_j = (uint64_t(AROWS) * args.lda) << 2;
  uint64_t pb = b + ((uint64_t(b_row) * args.ldb + b_n) << 2);
  const uint64_t pb_j = (uint64_t(BROWS) * args.ldb) << 2;
  const uint64_t pb_step = (uint64_t(BK) * args.ldb) << 2;

  // 16 (ty) x TXN (tx) invocations; each subgroup of 32 spans 8 tx by 4 ty.
  const uint w = tid >> 5u;
  const uint tx = (w % (TXN / 8u)) * 8u + (tid & 7u);
  const uint ty = (w / (TXN / 8u)) * 4u + ((tid >> 3u) & 3u);

  FOR_IC(DECL_ACC_I, 0)
  FOR_J(DECL_J)
  vec4 fa0, fa1;
  FOR_H1(DECL_FB)

  // (A grid wider than the launch shape's leaves nothing to do here.)
  if (row0 >= m || col0 >= n) return;
  const uint slices = (k - 1u) / BK + 1u;
  const bool fast = vec4_rows(a, args.lda) && vec4_rows(b, args.ldb) &&
                    TILE_IN;
  MAINLOOP(fast)

  const uint64_t cp = uint64_t(args.c);
  const bool c_fast = vec4_rows(cp, args.ldc) && TILE_IN;
  const float alpha = args.alpha, beta = args.beta;
  FOR_IC(STORE_IC, 0)
}
