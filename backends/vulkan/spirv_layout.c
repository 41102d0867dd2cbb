/* What the reflection reads of types: the push-constant block's extent and
 * its members as kernel parameters, and the arrays whose length follows
 * from constant_id 3 (dynamic shared memory) with that length as an
 * expression kiln evaluates at launch. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/spirv_reader.h"

static uint64_t add_sat(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
static uint64_t mul_sat(uint64_t a, uint64_t b) {
  return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

int kiln_spv_member_dec_order(const void *a, const void *b) {
  const spv_member_dec *x = a, *y = b;
  if (x->type != y->type) return x->type < y->type ? -1 : 1;
  if (x->member != y->member) return x->member < y->member ? -1 : 1;
  if (x->decoration != y->decoration)
    return x->decoration < y->decoration ? -1 : 1;
  return 0;
}

/* The member decoration, looked up in the list spirv.c sorted. */
static bool find_member_dec(const spv *m, uint32_t type, uint32_t member,
                            uint32_t decoration, uint32_t *value) {
  const spv_member_dec key = {type, member, decoration, 0};
  const spv_member_dec *d = m->mdec_count
                                ? bsearch(&key, m->mdecs, m->mdec_count,
                                          sizeof key, kiln_spv_member_dec_order)
                                : NULL;
  if (d && value) *value = d->value;
  return d != NULL;
}

/* ---- The push-constant block ------------------------------------------ */

/* Bytes a value of `type` spans in an explicitly laid out block, as the
 * members of a struct reach: an array's last element counted in full. */
static uint64_t type_size(spv *m, uint32_t type, uint32_t matrix_stride,
                          bool row_major, int depth) {
  const uint32_t *ins = spv_def(m, type);
  if (!ins || depth > 32) return 0;
  uint32_t n = spv_words(ins);
  switch (spv_opcode(ins)) {
  case OP_TYPE_BOOL: return 4;
  case OP_TYPE_INT:
  case OP_TYPE_FLOAT: return ins[2] / 8;
  case OP_TYPE_POINTER: return 8; /* a physical buffer address */
  case OP_TYPE_VECTOR:
    return mul_sat(ins[3], type_size(m, ins[2], 0, false, depth + 1));
  case OP_TYPE_MATRIX: {
    const uint32_t *col = spv_def(m, ins[2]);
    uint32_t rows = col && spv_opcode(col) == OP_TYPE_VECTOR ? col[3] : 0;
    uint32_t columns = ins[3];
    if (matrix_stride == 0)
      return mul_sat(columns, type_size(m, ins[2], 0, false, depth + 1));
    return (uint64_t)(row_major ? rows : columns) * matrix_stride;
  }
  case OP_TYPE_ARRAY: {
    uint64_t len = kiln_spv_constant_value(m, ins[3]);
    uint64_t stride = m->ids[type].array_stride;
    if (stride == 0)
      stride = type_size(m, ins[2], matrix_stride, row_major, depth + 1);
    return mul_sat(len, stride);
  }
  case OP_TYPE_STRUCT: {
    if (m->ids[type].struct_known) return m->ids[type].struct_size;
    uint64_t extent = 0;
    for (uint32_t i = 0; i + 2 < n; i++) {
      uint32_t offset = 0, stride = 0;
      if (!find_member_dec(m, type, i, DEC_OFFSET, &offset)) continue;
      find_member_dec(m, type, i, DEC_MATRIX_STRIDE, &stride);
      bool rm = find_member_dec(m, type, i, DEC_ROW_MAJOR, NULL);
      uint64_t end =
          add_sat(offset, type_size(m, ins[2 + i], stride, rm, depth + 1));
      if (end > extent) extent = end;
    }
    m->ids[type].struct_known = true;
    m->ids[type].struct_size = extent;
    return extent;
  }
  default: return 0;
  }
}

/* The block's scalars and addresses in order, as kernel parameters. */
typedef struct param_list {
  kiln_param_info items[KILN_MAX_KERNEL_ARGS];
  size_t count;
  bool unknown; /* not a list of 4- and 8-byte scalars and addresses */
} param_list;

static void add_param(param_list *l, uint64_t offset, uint32_t size,
                      kiln_param_kind kind) {
  if (l->count == KILN_MAX_KERNEL_ARGS || offset > UINT32_MAX ||
      (size != 4 && size != 8)) {
    l->unknown = true;
    return;
  }
  l->items[l->count++] = (kiln_param_info){(uint32_t)offset, size, kind};
}

/* Adds the scalars of a value of `type` at `offset`. Matrices, booleans,
 * runtime or specialized arrays and empty aggregates are not argument
 * lists kiln packs: the list is then unknown, and the block's extent is
 * all that is checked. Every step adds at least one parameter or gives
 * up, so the walk ends within KILN_MAX_KERNEL_ARGS parameters. */
static void add_params(spv *m, uint32_t type, uint64_t offset, int depth,
                       param_list *l) {
  const uint32_t *ins = spv_def(m, type);
  if (!ins || depth > 16 || l->unknown) {
    l->unknown = true;
    return;
  }
  uint32_t n = spv_words(ins);
  switch (spv_opcode(ins)) {
  case OP_TYPE_INT:
    add_param(l, offset, ins[2] / 8,
              ins[3] ? KILN_PARAM_SINT : KILN_PARAM_UINT);
    return;
  case OP_TYPE_FLOAT:
    add_param(l, offset, ins[2] / 8, KILN_PARAM_FLOAT);
    return;
  case OP_TYPE_POINTER:
    if (ins[2] == STORAGE_PHYSICAL_STORAGE_BUFFER)
      add_param(l, offset, 8, KILN_PARAM_POINTER);
    else
      l->unknown = true;
    return;
  case OP_TYPE_VECTOR:
  case OP_TYPE_ARRAY: {
    bool vector = spv_opcode(ins) == OP_TYPE_VECTOR;
    const uint32_t *len = vector ? NULL : spv_def(m, ins[3]);
    uint32_t count = vector                                  ? ins[3]
                     : len && spv_opcode(len) == OP_CONSTANT ? len[3]
                                                             : 0;
    uint64_t stride = vector ? type_size(m, ins[2], 0, false, depth + 1)
                             : m->ids[type].array_stride;
    if (count == 0 || count > KILN_MAX_KERNEL_ARGS || stride == 0) {
      l->unknown = true;
      return;
    }
    for (uint32_t i = 0; i < count && !l->unknown; i++)
      add_params(m, ins[2], offset + i * stride, depth + 1, l);
    return;
  }
  case OP_TYPE_STRUCT:
    if (n < 3) l->unknown = true;
    for (uint32_t i = 0; i + 2 < n && !l->unknown; i++) {
      uint32_t member = 0;
      if (!find_member_dec(m, type, i, DEC_OFFSET, &member))
        l->unknown = true;
      else
        add_params(m, ins[2 + i], offset + member, depth + 1, l);
    }
    return;
  default: l->unknown = true; return;
  }
}

/* The parameters are known only when they lie exactly where kiln packs an
 * argument list (each at the next multiple of its own size), so that a
 * launch that matches them is one that fills the block. */
kiln_status kiln_spv_push_block(spv *m, uint32_t block,
                                kiln_vulkan_spirv_entry_point *e) {
  uint64_t size = type_size(m, block, 0, false, 0);
  e->push_constant_bytes = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
  param_list *l = calloc(1, sizeof *l);
  if (!l) return kiln_spv_no_memory();
  add_params(m, block, 0, 0, l);
  uint64_t end = 0;
  for (size_t i = 0; i < l->count && !l->unknown; i++) {
    uint32_t size = l->items[i].size;
    uint64_t at = (end + size - 1) & ~(uint64_t)(size - 1);
    if (l->items[i].offset != at) l->unknown = true;
    end = at + size;
  }
  e->param_count = KILN_PARAMS_UNKNOWN;
  if (!l->unknown && l->count > 0) {
    e->params = malloc(l->count * sizeof *e->params);
    if (!e->params) {
      free(l);
      return kiln_spv_no_memory();
    }
    memcpy(e->params, l->items, l->count * sizeof *e->params);
    e->param_count = l->count;
  }
  free(l);
  return KILN_OK;
}

/* ---- Arrays sized by dynamic shared memory ---------------------------- */

/* Operand `id` of the instruction that defines `user`, if it is defined
 * before it, as SPIR-V requires of constants: the walks below then follow
 * no cycle. */
static const uint32_t *operand(const spv *m, uint32_t id, uint32_t user) {
  const uint32_t *ins = spv_def(m, id);
  return ins && m->ids[id].at < m->ids[user].at ? ins : NULL;
}

/* Whether the value of constant `id` follows from constant_id 3. */
static bool depends_on_shared(spv *m, uint32_t id) {
  const uint32_t *ins = spv_def(m, id);
  if (!ins) return false;
  if (m->ids[id].shared) return m->ids[id].shared == 2;
  bool yes = false;
  if (spv_opcode(ins) == OP_SPEC_CONSTANT)
    yes = m->ids[id].spec_id == KILN_VULKAN_SPEC_SHARED_BYTES;
  else if (spv_opcode(ins) == OP_SPEC_CONSTANT_OP)
    for (uint32_t i = 4; i < spv_words(ins) && !yes; i++)
      yes = operand(m, ins[i], id) && depends_on_shared(m, ins[i]);
  m->ids[id].shared = yes ? 2 : 1;
  return yes;
}

/* The integer operations of OpSpecConstantOp that kiln evaluates, with
 * how many operands each takes. */
static int spec_operands(uint32_t op) {
  switch (op) {
  case 113: /* UConvert */
  case 114: /* SConvert */
  case 126: /* SNegate */
  case 200: /* Not */ return 1;
  case 128: /* IAdd */
  case 130: /* ISub */
  case 132: /* IMul */
  case 134: /* UDiv */
  case 135: /* SDiv */
  case 137: /* UMod */
  case 138: /* SRem */
  case 139: /* SMod */
  case 194: /* ShiftRightLogical */
  case 195: /* ShiftRightArithmetic */
  case 196: /* ShiftLeftLogical */
  case 197: /* BitwiseOr */
  case 198: /* BitwiseXor */
  case 199: /* BitwiseAnd */ return 2;
  default: return 0;
  }
}

#define MAX_SHARED_EXPRS 256

/* Appends the expression of 32-bit constant `id` to info's list: its
 * index, or KILN_VULKAN_EXPR_UNKNOWN when it is not one kiln evaluates. */
static uint32_t build_expr(spv *m, uint32_t id, int depth,
                           kiln_vulkan_spirv_info *out) {
  const uint32_t *ins = spv_def(m, id);
  if (!ins || depth > 16 || out->shared_expr_count == MAX_SHARED_EXPRS ||
      !kiln_spv_is_int32(m, ins[1]))
    return KILN_VULKAN_EXPR_UNKNOWN;
  kiln_vulkan_spec_expr e = {KILN_VULKAN_EXPR_LITERAL, 0, 0, 0};
  switch (spv_opcode(ins)) {
  case OP_CONSTANT: e.value = ins[3]; break;
  case OP_SPEC_CONSTANT:
    /* Another spec constant keeps its default, unless kiln sets it. */
    if (m->ids[id].spec_id == KILN_VULKAN_SPEC_SHARED_BYTES)
      e.op = KILN_VULKAN_EXPR_SHARED;
    else if (m->ids[id].spec_id >= 0 && m->ids[id].spec_id <= 2)
      return KILN_VULKAN_EXPR_UNKNOWN;
    e.value = ins[3];
    break;
  case OP_SPEC_CONSTANT_OP: {
    int count = spec_operands(ins[3]);
    if (count == 0 || spv_words(ins) < 4u + (uint32_t)count)
      return KILN_VULKAN_EXPR_UNKNOWN;
    for (int i = 0; i < count; i++)
      if (!operand(m, ins[4 + i], id)) return KILN_VULKAN_EXPR_UNKNOWN;
    e.op = ins[3];
    e.a = build_expr(m, ins[4], depth + 1, out);
    if (e.a == KILN_VULKAN_EXPR_UNKNOWN) return KILN_VULKAN_EXPR_UNKNOWN;
    e.b = count > 1 ? build_expr(m, ins[5], depth + 1, out) : 0;
    if (e.b == KILN_VULKAN_EXPR_UNKNOWN) return KILN_VULKAN_EXPR_UNKNOWN;
    break;
  }
  default: return KILN_VULKAN_EXPR_UNKNOWN;
  }
  if (out->shared_expr_count == MAX_SHARED_EXPRS)
    return KILN_VULKAN_EXPR_UNKNOWN;
  out->shared_exprs[out->shared_expr_count] = e;
  return (uint32_t)out->shared_expr_count++;
}

/* Every array whose length follows from constant_id 3, with its length
 * as an expression over it where kiln can evaluate that. */
kiln_status kiln_spv_shared_arrays(spv *m, kiln_vulkan_spirv_info *out) {
  size_t count = 0;
  for (uint32_t id = 1; id < m->bound; id++) {
    const uint32_t *ins = spv_def(m, id);
    if (ins && spv_opcode(ins) == OP_TYPE_ARRAY && depends_on_shared(m, ins[3]))
      count++;
  }
  if (count == 0) return KILN_OK;
  out->shared_roots = malloc(count * sizeof *out->shared_roots);
  out->shared_exprs = malloc(MAX_SHARED_EXPRS * sizeof *out->shared_exprs);
  if (!out->shared_roots || !out->shared_exprs) return kiln_spv_no_memory();
  for (uint32_t id = 1; id < m->bound; id++) {
    const uint32_t *ins = spv_def(m, id);
    if (ins && spv_opcode(ins) == OP_TYPE_ARRAY && depends_on_shared(m, ins[3]))
      out->shared_roots[out->shared_root_count++] =
          build_expr(m, ins[3], 0, out);
  }
  return KILN_OK;
}

static bool eval(const kiln_vulkan_spirv_info *info, uint32_t node,
                 uint32_t bytes, uint32_t *out) {
  const kiln_vulkan_spec_expr *e = &info->shared_exprs[node];
  uint32_t a = 0, b = 0;
  /* Operands come before the node that uses them, so this ends. */
  if (e->op != KILN_VULKAN_EXPR_LITERAL && e->op != KILN_VULKAN_EXPR_SHARED &&
      (!eval(info, e->a, bytes, &a) ||
       (spec_operands(e->op) > 1 && !eval(info, e->b, bytes, &b))))
    return false;
  int32_t sa = (int32_t)a, sb = (int32_t)b;
  bool signed_bad = sb == 0 || (sa == INT32_MIN && sb == -1);
  switch (e->op) {
  case KILN_VULKAN_EXPR_LITERAL: *out = e->value; return true;
  case KILN_VULKAN_EXPR_SHARED: *out = bytes; return true;
  case 113:
  case 114: *out = a; return true;
  case 126: *out = 0u - a; return true;
  case 200: *out = ~a; return true;
  case 128: *out = a + b; return true;
  case 130: *out = a - b; return true;
  case 132: *out = a * b; return true;
  case 134: *out = b ? a / b : 0; return b != 0;
  case 135: *out = signed_bad ? 0 : (uint32_t)(sa / sb); return !signed_bad;
  case 137: *out = b ? a % b : 0; return b != 0;
  case 138:
  case 139:
    *out = signed_bad ? 0 : (uint32_t)(sa % sb);
    if (!signed_bad && e->op == 139 && *out && ((sa < 0) != (sb < 0)))
      *out += b;
    return !signed_bad;
  case 194: *out = b < 32 ? a >> b : 0; return b < 32;
  case 195: *out = b < 32 ? (uint32_t)(sa >> b) : 0; return b < 32;
  case 196: *out = b < 32 ? a << b : 0; return b < 32;
  case 197: *out = a | b; return true;
  case 198: *out = a ^ b; return true;
  case 199: *out = a & b; return true;
  default: return false;
  }
}

bool kiln_vulkan_spirv_shared_fits(const kiln_vulkan_spirv_info *info,
                                   uint32_t bytes) {
  for (size_t i = 0; i < info->shared_root_count; i++) {
    uint32_t root = info->shared_roots[i], len = 0;
    if (root == KILN_VULKAN_EXPR_UNKNOWN) {
      if (bytes == 0) return false;
    } else if (!eval(info, root, bytes, &len) || len == 0) {
      return false;
    }
  }
  return true;
}
