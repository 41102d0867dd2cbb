#version 460
// kiln_fill(u32 *words, u64 start, u64 end, u64 pattern): writes byte
// (p - start) % 8 of `pattern` to every byte p of [start, end) counted from
// `words`. One invocation owns one 32-bit word; the partial words at either
// end are merged with atomics so that bytes outside the range, which other
// work may be writing at the same time, keep their values.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 {
  uint v;
};

layout(push_constant, std430) uniform Args {
  U32 words;
  uint64_t start;
  uint64_t end;
  uint64_t pattern;
} args;

void main() {
  uint64_t first = args.start >> 2;
  uint64_t last = (args.end + 3ul) >> 2; // one past the last word touched
  uint64_t stride = uint64_t(gl_NumWorkGroups.x) * gl_WorkGroupSize.x;
  uint64_t w = first + uint64_t(gl_WorkGroupID.x) * gl_WorkGroupSize.x +
               gl_LocalInvocationID.x;
  for (; w < last; w += stride) {
    uint64_t p = w << 2;
    // The pattern rotated so that its byte for position p comes first;
    // unsigned wrap-around keeps (p - start) mod 8 right when p < start.
    uint rot = uint(p - args.start) & 7u;
    uint64_t r = rot == 0u ? args.pattern
                           : (args.pattern >> (8u * rot)) |
                                 (args.pattern << (64u - 8u * rot));
    uint value = uint(r);
    U32 word = U32(uint64_t(args.words) + p);
    if (p >= args.start && p + 4ul <= args.end) {
      word.v = value;
    } else {
      uint mask = 0u;
      for (uint b = 0u; b < 4u; b++) {
        uint64_t q = p + b;
        if (q >= args.start && q < args.end) mask |= 0xffu << (8u * b);
      }
      atomicAnd(word.v, ~mask);
      atomicOr(word.v, value & mask);
    }
  }
}
