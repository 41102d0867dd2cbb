// A compile error: the statement on line 5 lacks its semicolon, which
// NVRTC reports on line 6, at the token after it.
extern "C" __global__ void broken(float *y) {
  const float v = 1.0f;
  y[0] = v
}
