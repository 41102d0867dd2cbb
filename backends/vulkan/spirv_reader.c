/* What spirv.c (the structural pass and reflection) and spirv_layout.c
 * (push-constant layouts, shared-memory arrays) both use: their errors in
 * kiln's words, and reading an integer type or a constant's value. */
#include <stdarg.h>
#include <stdio.h>

#include "backends/vulkan/spirv_reader.h"

kiln_status kiln_spv_bad(const spv *m, const char *fmt, ...) {
  char what[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                        "SPIR-V image %zu is malformed: %s", m->index, what);
}

kiln_status kiln_spv_no_memory(void) {
  return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                        "out of host memory reflecting SPIR-V");
}

bool kiln_spv_is_int32(const spv *m, uint32_t type) {
  const uint32_t *t = spv_def(m, type);
  return t && spv_opcode(t) == OP_TYPE_INT && t[2] == 32;
}

uint32_t kiln_spv_constant_value(const spv *m, uint32_t id) {
  const uint32_t *ins = spv_def(m, id);
  if (ins &&
      (spv_opcode(ins) == OP_CONSTANT || spv_opcode(ins) == OP_SPEC_CONSTANT))
    return ins[3];
  return 0;
}
