// libcu++'s <cuda/std/...> headers under NVRTC: splitmix64 on
// cuda::std::uint64_t, its constants checked with numeric_limits.
#include <cuda/std/cstdint>
#include <cuda/std/limits>

extern "C" __global__ void mix64(cuda::std::uint64_t *v, unsigned n) {
  static_assert(cuda::std::numeric_limits<cuda::std::uint64_t>::digits == 64,
                "64-bit words");
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  cuda::std::uint64_t z = v[i] + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  v[i] = z ^ (z >> 31);
}
