#version 460
// conf_index3d(u32 *out, u32 nx, u32 ny, u32 nz): see conformance.cu.
#extension GL_EXT_buffer_reference : require

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32 {
  uint v[];
};

layout(push_constant, std430) uniform Args {
  U32 out_;
  uint nx;
  uint ny;
  uint nz;
} args;

void main() {
  uvec3 g = gl_GlobalInvocationID;
  if (g.x >= args.nx || g.y >= args.ny || g.z >= args.nz) return;
  uvec3 b = gl_WorkGroupID, n = gl_NumWorkGroups, t = gl_LocalInvocationID;
  uvec3 size = gl_WorkGroupSize;
  uint block = (b.z * n.y + b.y) * n.x + b.x;
  uint local = (t.z * size.y + t.y) * size.x + t.x;
  uint i = 4u * ((g.z * args.ny + g.y) * args.nx + g.x);
  args.out_.v[i + 0u] = g.x;
  args.out_.v[i + 1u] = g.y;
  args.out_.v[i + 2u] = g.z;
  args.out_.v[i + 3u] = block * (size.x * size.y * size.z) + local;
}
