/* A small SPIR-V reflection: what kiln needs to launch a kernel without
 * descriptor sets — its GLCompute entry points, the extent of the
 * push-constant block each one uses (the packed argument list), how its
 * block size is set, and whether it takes dynamic shared memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

enum {
  SPV_MAGIC = 0x07230203,
  OP_ENTRY_POINT = 15,
  OP_EXECUTION_MODE = 16,
  OP_TYPE_BOOL = 20,
  OP_TYPE_INT = 21,
  OP_TYPE_FLOAT = 22,
  OP_TYPE_VECTOR = 23,
  OP_TYPE_MATRIX = 24,
  OP_TYPE_ARRAY = 28,
  OP_TYPE_STRUCT = 30,
  OP_TYPE_POINTER = 32,
  OP_CONSTANT = 43,
  OP_CONSTANT_COMPOSITE = 44,
  OP_SPEC_CONSTANT = 50,
  OP_SPEC_CONSTANT_COMPOSITE = 51,
  OP_FUNCTION = 54,
  OP_FUNCTION_END = 56,
  OP_FUNCTION_CALL = 57,
  OP_VARIABLE = 59,
  OP_LOAD = 61,
  OP_COPY_MEMORY = 63,
  OP_COPY_MEMORY_SIZED = 64,
  OP_ACCESS_CHAIN = 65,
  OP_IN_BOUNDS_ACCESS_CHAIN = 66,
  OP_PTR_ACCESS_CHAIN = 67,
  OP_IN_BOUNDS_PTR_ACCESS_CHAIN = 70,
  OP_DECORATE = 71,
  OP_MEMBER_DECORATE = 72,
  OP_EXECUTION_MODE_ID = 331,
  DEC_SPEC_ID = 1,
  DEC_ROW_MAJOR = 4,
  DEC_ARRAY_STRIDE = 6,
  DEC_MATRIX_STRIDE = 7,
  DEC_BUILTIN = 11,
  DEC_OFFSET = 35,
  BUILTIN_WORKGROUP_SIZE = 25,
  MODEL_GLCOMPUTE = 5,
  MODE_LOCAL_SIZE = 17,
  MODE_LOCAL_SIZE_ID = 38,
  STORAGE_PUSH_CONSTANT = 9,
};

/* What is known about one result id. */
typedef struct spv_id {
  uint32_t at;     /* word offset of its defining instruction, or 0 */
  int32_t spec_id; /* SpecId decoration, or -1 */
  uint32_t array_stride;
  bool workgroup_size; /* decorated BuiltIn WorkgroupSize */
  uint32_t function;   /* for OpFunction: index into funcs */
  /* A struct's extent once computed: nested structs are shared, and
   * walking them again for every use could take exponential time. */
  bool struct_known;
  uint64_t struct_size;
} spv_id;

typedef struct spv_member_dec {
  uint32_t type, member, decoration, value;
} spv_member_dec;

typedef struct spv_function {
  uint32_t push_var; /* push-constant variable used directly, or 0 */
  /* The one it or its callees use, once visited (2), or being visited
   * (1): each function is walked once however many call it. */
  uint8_t visit;
  uint32_t reached_var;
  uint32_t *callees;
  size_t callee_count, callee_cap;
} spv_function;

typedef struct spv {
  const uint32_t *w;
  size_t words;
  uint32_t bound;
  size_t index; /* the image's place in the caller's list */
  spv_id *ids;
  spv_member_dec *mdecs;
  size_t mdec_count, mdec_cap;
  spv_function *funcs;
  size_t func_count;
} spv;

static kiln_status bad(const spv *m, const char *what) {
  return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                        "SPIR-V image %zu is malformed: %s", m->index, what);
}

static bool add_member_dec(spv *m, const uint32_t *ins) {
  if (m->mdec_count == m->mdec_cap) {
    size_t cap = m->mdec_cap ? m->mdec_cap * 2 : 32;
    spv_member_dec *p = realloc(m->mdecs, cap * sizeof *p);
    if (!p) return false;
    m->mdecs = p;
    m->mdec_cap = cap;
  }
  m->mdecs[m->mdec_count++] =
      (spv_member_dec){ins[1], ins[2], ins[3], (ins[0] >> 16) > 4 ? ins[4] : 0};
  return true;
}

static bool find_member_dec(const spv *m, uint32_t type, uint32_t member,
                            uint32_t decoration, uint32_t *value) {
  for (size_t i = 0; i < m->mdec_count; i++) {
    const spv_member_dec *d = &m->mdecs[i];
    if (d->type == type && d->member == member && d->decoration == decoration) {
      if (value) *value = d->value;
      return true;
    }
  }
  return false;
}

static const uint32_t *def(const spv *m, uint32_t id) {
  return id < m->bound && m->ids[id].at ? &m->w[m->ids[id].at] : NULL;
}

static uint32_t opcode(const uint32_t *ins) { return ins[0] & 0xffffu; }
static uint32_t word_count(const uint32_t *ins) { return ins[0] >> 16; }

/* The value of a 32-bit constant (a spec constant's default), or 0. */
static uint32_t constant_value(const spv *m, uint32_t id) {
  const uint32_t *ins = def(m, id);
  if (ins && (opcode(ins) == OP_CONSTANT || opcode(ins) == OP_SPEC_CONSTANT) &&
      word_count(ins) > 3)
    return ins[3];
  return 0;
}

/* Bytes a value of `type` spans in an explicitly laid out block, as the
 * members of a struct reach: an array's last element counted in full. */
static uint64_t type_size(spv *m, uint32_t type, uint32_t matrix_stride,
                          bool row_major, int depth) {
  const uint32_t *ins = def(m, type);
  if (!ins || depth > 32) return 0;
  uint32_t n = word_count(ins);
  switch (opcode(ins)) {
  case OP_TYPE_BOOL: return 4;
  case OP_TYPE_INT:
  case OP_TYPE_FLOAT: return n > 2 ? ins[2] / 8 : 0;
  case OP_TYPE_POINTER: return 8; /* a physical buffer address */
  case OP_TYPE_VECTOR:
    return n > 3 ? ins[3] * type_size(m, ins[2], 0, false, depth + 1) : 0;
  case OP_TYPE_MATRIX: {
    if (n <= 3) return 0;
    const uint32_t *col = def(m, ins[2]);
    uint32_t rows = col && word_count(col) > 3 ? col[3] : 0;
    uint32_t columns = ins[3];
    if (matrix_stride == 0)
      return columns * type_size(m, ins[2], 0, false, depth + 1);
    return (uint64_t)(row_major ? rows : columns) * matrix_stride;
  }
  case OP_TYPE_ARRAY: {
    if (n <= 3) return 0;
    uint64_t len = constant_value(m, ins[3]);
    uint64_t stride = m->ids[type].array_stride;
    if (stride == 0)
      stride = type_size(m, ins[2], matrix_stride, row_major, depth + 1);
    return len * stride;
  }
  case OP_TYPE_STRUCT: {
    if (m->ids[type].struct_known) return m->ids[type].struct_size;
    uint64_t extent = 0;
    for (uint32_t i = 0; i + 2 < n; i++) {
      uint32_t offset = 0, stride = 0;
      if (!find_member_dec(m, type, i, DEC_OFFSET, &offset)) continue;
      find_member_dec(m, type, i, DEC_MATRIX_STRIDE, &stride);
      bool rm = find_member_dec(m, type, i, DEC_ROW_MAJOR, NULL);
      uint64_t end = offset + type_size(m, ins[2 + i], stride, rm, depth + 1);
      if (end > extent) extent = end;
    }
    m->ids[type].struct_known = true;
    m->ids[type].struct_size = extent;
    return extent;
  }
  default: return 0;
  }
}

/* The push-constant block's extent for variable `var`. */
static uint32_t push_block_bytes(spv *m, uint32_t var) {
  const uint32_t *v = def(m, var);
  const uint32_t *ptr = v ? def(m, v[1]) : NULL;
  if (!ptr || opcode(ptr) != OP_TYPE_POINTER || word_count(ptr) < 4) return 0;
  uint64_t size = type_size(m, ptr[3], 0, false, 0);
  return size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
}

static bool is_push_var(const spv *m, uint32_t id) {
  const uint32_t *ins = def(m, id);
  return ins && opcode(ins) == OP_VARIABLE && word_count(ins) > 3 &&
         ins[3] == STORAGE_PUSH_CONSTANT;
}

/* First pass: ids, decorations, functions with what they use and call. */
static kiln_status scan(spv *m) {
  spv_function *fn = NULL;
  for (size_t at = 5; at < m->words;) {
    const uint32_t *ins = &m->w[at];
    uint32_t n = word_count(ins), op = opcode(ins);
    if (n == 0 || n > m->words - at)
      return bad(m, "an instruction's word count runs past the end");
    switch (op) {
    case OP_DECORATE:
      if (n < 3) return bad(m, "an OpDecorate is too short");
      if (ins[1] >= m->bound) return bad(m, "a decorated id exceeds the bound");
      if (ins[2] == DEC_SPEC_ID && n > 3)
        m->ids[ins[1]].spec_id = (int32_t)ins[3];
      if (ins[2] == DEC_ARRAY_STRIDE && n > 3)
        m->ids[ins[1]].array_stride = ins[3];
      if (ins[2] == DEC_BUILTIN && n > 3 && ins[3] == BUILTIN_WORKGROUP_SIZE)
        m->ids[ins[1]].workgroup_size = true;
      break;
    case OP_MEMBER_DECORATE:
      if (n < 4) return bad(m, "an OpMemberDecorate is too short");
      if (!add_member_dec(m, ins))
        return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                              "out of host memory reflecting SPIR-V");
      break;
    case OP_FUNCTION:
      if (n < 5) return bad(m, "an OpFunction is too short");
      if (ins[2] >= m->bound) return bad(m, "a function id exceeds the bound");
      m->ids[ins[2]].at = (uint32_t)at;
      m->ids[ins[2]].function = (uint32_t)m->func_count;
      fn = &m->funcs[m->func_count++];
      break;
    case OP_FUNCTION_END: fn = NULL; break;
    case OP_FUNCTION_CALL:
      if (fn && n > 3) {
        if (fn->callee_count == fn->callee_cap) {
          size_t cap = fn->callee_cap ? fn->callee_cap * 2 : 4;
          uint32_t *p = realloc(fn->callees, cap * sizeof *p);
          if (!p)
            return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                                  "out of host memory reflecting SPIR-V");
          fn->callees = p;
          fn->callee_cap = cap;
        }
        fn->callees[fn->callee_count++] = ins[3];
      }
      break;
    default: break;
    }
    /* Result ids: types and OpVariable/OpConstant* (results in word 1 for
     * types, word 2 for the rest) are what the reflection looks up. */
    if ((op >= OP_TYPE_BOOL && op <= OP_TYPE_POINTER) && n > 1) {
      if (ins[1] >= m->bound) return bad(m, "a type id exceeds the bound");
      m->ids[ins[1]].at = (uint32_t)at;
    } else if ((op == OP_CONSTANT || op == OP_CONSTANT_COMPOSITE ||
                op == OP_SPEC_CONSTANT || op == OP_SPEC_CONSTANT_COMPOSITE ||
                op == OP_VARIABLE) &&
               n > 2) {
      if (ins[2] >= m->bound) return bad(m, "a result id exceeds the bound");
      m->ids[ins[2]].at = (uint32_t)at;
    }
    at += n;
  }
  return KILN_OK;
}

/* Second pass, once variables are known: which push-constant block each
 * function touches directly. */
static void scan_uses(spv *m) {
  spv_function *fn = NULL;
  for (size_t at = 5; at < m->words; at += word_count(&m->w[at])) {
    const uint32_t *ins = &m->w[at];
    uint32_t n = word_count(ins), op = opcode(ins);
    if (op == OP_FUNCTION) fn = &m->funcs[m->ids[ins[2]].function];
    if (op == OP_FUNCTION_END) fn = NULL;
    if (!fn || fn->push_var) continue;
    uint32_t first = 0, last = 0; /* operand words that may name it */
    switch (op) {
    case OP_LOAD:
    case OP_ACCESS_CHAIN:
    case OP_IN_BOUNDS_ACCESS_CHAIN:
    case OP_PTR_ACCESS_CHAIN:
    case OP_IN_BOUNDS_PTR_ACCESS_CHAIN: first = last = 3; break;
    case OP_COPY_MEMORY:
    case OP_COPY_MEMORY_SIZED: first = last = 2; break;
    case OP_FUNCTION_CALL:
      first = 4;
      last = n - 1;
      break;
    default: continue;
    }
    for (uint32_t i = first; i <= last && i < n; i++)
      if (is_push_var(m, ins[i])) fn->push_var = ins[i];
  }
}

static uint32_t entry_push_var(spv *m, uint32_t fn_id, int depth) {
  const uint32_t *ins = def(m, fn_id);
  if (!ins || opcode(ins) != OP_FUNCTION || depth > 64) return 0;
  spv_function *fn = &m->funcs[m->ids[fn_id].function];
  if (fn->visit) return fn->reached_var; /* done, or a (malformed) cycle */
  fn->visit = 1;
  uint32_t var = fn->push_var;
  for (size_t i = 0; i < fn->callee_count && !var; i++)
    var = entry_push_var(m, fn->callees[i], depth + 1);
  fn->visit = 2;
  fn->reached_var = var;
  return var;
}

/* How each block dimension is set: a WorkgroupSize built-in wins over the
 * execution modes; components that are spec constants are specializable. */
static void local_size(const spv *m, const uint32_t *mode, uint32_t size[3],
                       int32_t spec[3]) {
  for (int d = 0; d < 3; d++) {
    size[d] = 1;
    spec[d] = -1;
  }
  if (mode && opcode(mode) == OP_EXECUTION_MODE) {
    for (int d = 0; d < 3; d++) size[d] = mode[3 + d];
  } else if (mode) {
    for (int d = 0; d < 3; d++) {
      size[d] = constant_value(m, mode[3 + d]);
      spec[d] = def(m, mode[3 + d]) ? m->ids[mode[3 + d]].spec_id : -1;
    }
  }
  for (uint32_t id = 1; id < m->bound; id++) {
    const uint32_t *c = def(m, id);
    if (!m->ids[id].workgroup_size || !c || word_count(c) < 6 ||
        (opcode(c) != OP_CONSTANT_COMPOSITE &&
         opcode(c) != OP_SPEC_CONSTANT_COMPOSITE))
      continue;
    for (int d = 0; d < 3; d++) {
      size[d] = constant_value(m, c[3 + d]);
      spec[d] = def(m, c[3 + d]) ? m->ids[c[3 + d]].spec_id : -1;
    }
  }
}

static bool is_compute_entry(const uint32_t *ins) {
  return opcode(ins) == OP_ENTRY_POINT && word_count(ins) >= 4 &&
         ins[1] == MODEL_GLCOMPUTE;
}

static kiln_status entry_points(spv *m, kiln_vulkan_spirv_info *out) {
  size_t count = 0;
  for (size_t at = 5; at < m->words; at += word_count(&m->w[at]))
    if (is_compute_entry(&m->w[at])) count++;
  out->entry_points = calloc(count ? count : 1, sizeof *out->entry_points);
  if (!out->entry_points)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory reflecting SPIR-V");
  for (size_t at = 5; at < m->words; at += word_count(&m->w[at])) {
    const uint32_t *ins = &m->w[at];
    uint32_t n = word_count(ins);
    if (!is_compute_entry(ins)) continue;
    const char *name = (const char *)&ins[3];
    size_t max = (n - 3) * 4;
    size_t len = strnlen(name, max);
    if (len == max) return bad(m, "an entry point name is not terminated");
    kiln_vulkan_spirv_entry_point *e =
        &out->entry_points[out->entry_point_count];
    e->name = malloc(len + 1);
    if (!e->name)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "out of host memory reflecting SPIR-V");
    memcpy(e->name, name, len + 1);
    out->entry_point_count++;
    uint32_t fn = ins[2];
    const uint32_t *mode = NULL;
    for (size_t a = 5; a < m->words; a += word_count(&m->w[a])) {
      const uint32_t *x = &m->w[a];
      if ((opcode(x) == OP_EXECUTION_MODE ||
           opcode(x) == OP_EXECUTION_MODE_ID) &&
          word_count(x) >= 6 && x[1] == fn &&
          (x[2] == MODE_LOCAL_SIZE || x[2] == MODE_LOCAL_SIZE_ID) &&
          (opcode(x) == OP_EXECUTION_MODE) == (x[2] == MODE_LOCAL_SIZE))
        mode = x;
    }
    local_size(m, mode, e->local_size, e->local_size_spec_id);
    uint32_t var = entry_push_var(m, fn, 0);
    e->push_constant_bytes = var ? push_block_bytes(m, var) : 0;
  }
  return KILN_OK;
}

kiln_status kiln_vulkan_spirv_reflect(const void *data, size_t size,
                                      size_t index,
                                      kiln_vulkan_spirv_info *out) {
  memset(out, 0, sizeof *out);
  spv m = {.index = index};
  if (size % 4 != 0 || size < 20)
    return bad(&m, size < 20 ? "shorter than a SPIR-V header (20 bytes)"
                             : "its size is not a multiple of 4 bytes");
  if (size / 4 > UINT32_MAX) return bad(&m, "larger than SPIR-V allows");
  m.w = data;
  m.words = size / 4;
  if (m.w[0] != SPV_MAGIC) {
    if (m.w[0] == 0x03022307u)
      return bad(&m, "its words are byte-swapped (big-endian SPIR-V)");
    return bad(&m, "no SPIR-V magic number (0x07230203) at the start");
  }
  m.bound = m.w[3];
  if (m.bound == 0 || m.bound > (1u << 22))
    return bad(&m, "its id bound is out of range");
  m.ids = calloc(m.bound, sizeof *m.ids);
  size_t max_funcs = m.words / 5 + 1;
  m.funcs = calloc(max_funcs, sizeof *m.funcs);
  kiln_status st = KILN_OK;
  if (!m.ids || !m.funcs) {
    st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                        "out of host memory reflecting SPIR-V");
  } else {
    for (uint32_t i = 0; i < m.bound; i++) m.ids[i].spec_id = -1;
    st = scan(&m);
  }
  if (st == KILN_OK) {
    scan_uses(&m);
    for (uint32_t i = 0; i < m.bound; i++)
      if (m.ids[i].spec_id == KILN_VULKAN_SPEC_SHARED_BYTES && def(&m, i))
        out->has_shared_bytes_spec = true;
    st = entry_points(&m, out);
  }
  if (st == KILN_OK && out->entry_point_count == 0)
    st = kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                        "SPIR-V image %zu has no GLCompute entry point (is "
                        "it a compute shader?)",
                        index);
  if (m.funcs)
    for (size_t i = 0; i < m.func_count; i++) free(m.funcs[i].callees);
  free(m.funcs);
  free(m.ids);
  free(m.mdecs);
  if (st != KILN_OK) kiln_vulkan_spirv_free(out);
  return st;
}

void kiln_vulkan_spirv_free(kiln_vulkan_spirv_info *info) {
  for (size_t i = 0; i < info->entry_point_count; i++)
    free(info->entry_points[i].name);
  free(info->entry_points);
  memset(info, 0, sizeof *info);
}
