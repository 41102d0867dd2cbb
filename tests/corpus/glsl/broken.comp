#version 460
// A compile error on purpose: the statement on line 7 lacks its semicolon,
// which glslang reports on line 8 (tests/corpus/corpus.h).
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer Out { float y[]; };
void main() {
  const float v = 1.0
  y[0] = v;
}
