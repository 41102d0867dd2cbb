/* A small SPIR-V reader: the structural checks kiln makes on every image
 * whatever else validates it, and the reflection that launches need
 * without descriptor sets — each GLCompute entry point, the push-constant
 * block it uses (its extent and its members as kernel parameters), how its
 * block size is set, and which arrays dynamic shared memory sizes.
 *
 * The checks are the ones that keep this reader, and what kiln hands the
 * driver, inside the image: every instruction's word count nonzero and
 * within the image, every id it reads below the bound, a bound that the
 * image could use, types declared before use (so no type contains itself),
 * functions ended, entry points that name a function, one name per kernel,
 * and the specialization constants kiln sets being 32-bit integers. The
 * full rules are SPIRV-Tools' (spirv_tools.c), where it is installed. */
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/spirv_reader.h"

static bool add_member_dec(spv *m, const uint32_t *ins) {
  if (m->mdec_count == m->mdec_cap) {
    size_t cap = m->mdec_cap ? m->mdec_cap * 2 : 32;
    spv_member_dec *p = realloc(m->mdecs, cap * sizeof *p);
    if (!p) return false;
    m->mdecs = p;
    m->mdec_cap = cap;
  }
  m->mdecs[m->mdec_count++] =
      (spv_member_dec){ins[1], ins[2], ins[3], spv_words(ins) > 4 ? ins[4] : 0};
  return true;
}

static bool is_type_op(uint32_t op) {
  return (op >= OP_TYPE_VOID && op <= OP_TYPE_PIPE) ||
         op == OP_TYPE_COOPERATIVE_MATRIX_KHR ||
         op == OP_TYPE_COOPERATIVE_MATRIX_NV;
}

/* ---- The structural pass ---------------------------------------------- */

/* The fewest words each instruction that this reader looks into has, so
 * that the operands it reads are inside it; 0 for the others. */
static uint32_t min_words(uint32_t op) {
  switch (op) {
  case OP_ENTRY_POINT: return 4;
  case OP_EXECUTION_MODE:
  case OP_EXECUTION_MODE_ID:
  case OP_DECORATE:
  case OP_TYPE_FLOAT:
  case OP_TYPE_RUNTIME_ARRAY:
  case OP_TYPE_FUNCTION:
  case OP_TYPE_FORWARD_POINTER: return 3;
  case OP_MEMBER_DECORATE:
  case OP_TYPE_INT:
  case OP_TYPE_VECTOR:
  case OP_TYPE_MATRIX:
  case OP_TYPE_ARRAY:
  case OP_TYPE_POINTER:
  case OP_CONSTANT:
  case OP_SPEC_CONSTANT:
  case OP_SPEC_CONSTANT_OP:
  case OP_VARIABLE:
  case OP_FUNCTION_CALL:
  case OP_LOAD: return 4;
  case OP_FUNCTION: return 5;
  default:
    if (is_type_op(op)) return 2;
    if (op >= OP_CONSTANT_TRUE && op <= OP_SPEC_CONSTANT_COMPOSITE) return 3;
    return 0;
  }
}

/* Whether `id` names a type declared before this point, or a pointer
 * declared ahead by OpTypeForwardPointer. */
static bool type_before(const spv *m, uint32_t id) {
  const uint32_t *t = spv_def(m, id);
  return (t && is_type_op(spv_opcode(t))) ||
         (id < m->bound && m->ids[id].forward);
}

/* Records the result id `id` of the instruction at `at`. */
static kiln_status define(spv *m, uint32_t id, size_t at) {
  if (id == 0 || id >= m->bound)
    return kiln_spv_bad(m, "result id %u is outside the id bound", id);
  if (m->ids[id].at) return kiln_spv_bad(m, "id %u is defined twice", id);
  m->ids[id].at = (uint32_t)at;
  return KILN_OK;
}

/* The type operands of a type instruction must be types declared before
 * it: that keeps every type acyclic (a struct cannot contain itself) but
 * through pointers, which this reader never follows. */
static kiln_status check_type(spv *m, const uint32_t *ins) {
  uint32_t op = spv_opcode(ins), n = spv_words(ins);
  uint32_t first = 0, last = 0;
  switch (op) {
  case OP_TYPE_VECTOR:
  case OP_TYPE_MATRIX:
  case OP_TYPE_ARRAY:
  case OP_TYPE_RUNTIME_ARRAY:
  /* The component type; the scope, rows and columns (and KHR's use) are
   * constants. */
  case OP_TYPE_COOPERATIVE_MATRIX_KHR:
  case OP_TYPE_COOPERATIVE_MATRIX_NV: first = last = 2; break;
  case OP_TYPE_STRUCT:
  case OP_TYPE_FUNCTION:
    first = 2;
    last = n - 1;
    break;
  case OP_TYPE_POINTER: first = last = 3; break;
  default: return KILN_OK;
  }
  for (uint32_t i = first; i <= last && i < n; i++)
    if (!type_before(m, ins[i]))
      return kiln_spv_bad(
          m,
          "a type refers to id %u, which is not a type declared "
          "before it",
          ins[i]);
  if (op == OP_TYPE_ARRAY && !spv_def(m, ins[3]))
    return kiln_spv_bad(
        m, "an array's length %u is not a constant declared before it", ins[3]);
  return KILN_OK;
}

static kiln_status add_callee(spv_function *fn, uint32_t callee) {
  if (fn->callee_count == fn->callee_cap) {
    size_t cap = fn->callee_cap ? fn->callee_cap * 2 : 4;
    uint32_t *p = realloc(fn->callees, cap * sizeof *p);
    if (!p) return kiln_spv_no_memory();
    fn->callees = p;
    fn->callee_cap = cap;
  }
  fn->callees[fn->callee_count++] = callee;
  return KILN_OK;
}

/* The capabilities of OpenCL kernels, which no Vulkan environment allows
 * (SPIR-V's client API appendix): an image declaring one was built for
 * OpenCL, and drivers have crashed on such images where SPIRV-Tools'
 * validator was not there to refuse them first. */
static bool opencl_only(uint32_t capability) {
  switch (capability) {
  case 4:  /* Addresses */
  case 5:  /* Linkage */
  case 6:  /* Kernel */
  case 7:  /* Vector16 */
  case 8:  /* Float16Buffer */
  case 13: /* ImageBasic */
  case 14: /* ImageReadWrite */
  case 15: /* ImageMipmap */
  case 17: /* Pipes */
  case 19: /* DeviceEnqueue */
  case 20: /* LiteralSampler */
  case 38: /* GenericPointer */
  case 58: /* SubgroupDispatch */
  case 59: /* NamedBarrier */
  case 60: /* PipeStorage */
    return true;
  default: return false;
  }
}

/* One instruction's capabilities, decorations and modes. */
static kiln_status note(spv *m, const uint32_t *ins, size_t at) {
  uint32_t n = spv_words(ins);
  switch (spv_opcode(ins)) {
  case OP_CAPABILITY:
    if (n > 1 && opencl_only(ins[1]))
      return kiln_spv_bad(m,
                          "it declares capability %u, which only OpenCL "
                          "kernels have (a Vulkan compute shader declares "
                          "Shader)",
                          ins[1]);
    return KILN_OK;
  case OP_DECORATE:
    if (ins[1] >= m->bound)
      return kiln_spv_bad(m, "decorated id %u exceeds the bound", ins[1]);
    /* kiln sets only small ids: a larger one keeps its default. */
    if (ins[2] == DEC_SPEC_ID && n > 3)
      m->ids[ins[1]].spec_id = ins[3] <= INT32_MAX ? (int32_t)ins[3] : -1;
    if (ins[2] == DEC_ARRAY_STRIDE && n > 3)
      m->ids[ins[1]].array_stride = ins[3];
    if (ins[2] == DEC_BUILTIN) m->ids[ins[1]].builtin = true;
    if (ins[2] == DEC_BUILTIN && n > 3 && ins[3] == BUILTIN_WORKGROUP_SIZE)
      m->workgroup_size = ins[1];
    return KILN_OK;
  case OP_MEMBER_DECORATE:
    return add_member_dec(m, ins) ? KILN_OK : kiln_spv_no_memory();
  case OP_EXECUTION_MODE:
  case OP_EXECUTION_MODE_ID: {
    bool id_form = spv_opcode(ins) == OP_EXECUTION_MODE_ID;
    if (ins[1] >= m->bound)
      return kiln_spv_bad(m, "an execution mode names id %u, beyond the bound",
                          ins[1]);
    if ((ins[2] == MODE_LOCAL_SIZE && !id_form) ||
        (ins[2] == MODE_LOCAL_SIZE_ID && id_form)) {
      if (n < 6)
        return kiln_spv_bad(m, "a LocalSize mode has %u words, not 6", n);
      m->ids[ins[1]].mode = (uint32_t)at;
    }
    return KILN_OK;
  }
  case OP_TYPE_FORWARD_POINTER:
    if (ins[1] >= m->bound)
      return kiln_spv_bad(m, "a forward pointer id %u exceeds the bound",
                          ins[1]);
    m->ids[ins[1]].forward = true;
    return KILN_OK;
  default: return KILN_OK;
  }
}

/* First pass: every instruction inside the image, ids, decorations, and
 * the functions with what they call. */
static kiln_status scan(spv *m) {
  spv_function *fn = NULL;
  kiln_status st = KILN_OK;
  for (size_t at = 5; at < m->words && st == KILN_OK;) {
    const uint32_t *ins = &m->w[at];
    uint32_t n = spv_words(ins), op = spv_opcode(ins);
    if (n == 0 || n > m->words - at)
      return kiln_spv_bad(m,
                          "the instruction at word %u runs past the end of the "
                          "image (or has a word count of 0)",
                          (unsigned)at);
    if (n < min_words(op))
      return kiln_spv_bad(m, "the instruction at word %u is too short",
                          (unsigned)at);
    if ((st = note(m, ins, at)) != KILN_OK) return st;
    if (is_type_op(op)) {
      if ((st = check_type(m, ins)) == KILN_OK) st = define(m, ins[1], at);
    } else if ((op >= OP_CONSTANT_TRUE && op <= OP_SPEC_CONSTANT_OP) ||
               op == OP_VARIABLE) {
      if (!type_before(m, ins[1]))
        return kiln_spv_bad(
            m,
            "a constant or variable has type %u, which is not a "
            "type declared before it",
            ins[1]);
      st = define(m, ins[2], at);
    } else if (op == OP_FUNCTION) {
      if (fn)
        return kiln_spv_bad(m, "function %u begins inside another", ins[2]);
      if ((st = define(m, ins[2], at)) != KILN_OK) return st;
      m->ids[ins[2]].function = (uint32_t)m->func_count;
      fn = &m->funcs[m->func_count++];
    } else if (op == OP_FUNCTION_END) {
      if (!fn)
        return kiln_spv_bad(m, "an OpFunctionEnd at word %u ends no function",
                            (unsigned)at);
      fn = NULL;
    } else if (op == OP_FUNCTION_CALL && fn && n > 3) {
      st = add_callee(fn, ins[3]);
    }
    at += n;
  }
  if (st == KILN_OK && fn)
    return kiln_spv_bad(
        m, "its last function has no OpFunctionEnd (is the image cut "
           "short?)");
  return st;
}

/* A compute kernel's only inputs are built-ins (its ids), and it has no
 * outputs: a driver reads anything else from where there is nothing. */
static kiln_status check_interface(const spv *m) {
  for (uint32_t id = 1; id < m->bound; id++) {
    const uint32_t *ins = spv_def(m, id);
    if (ins && spv_opcode(ins) == OP_VARIABLE &&
        (ins[3] == STORAGE_INPUT || ins[3] == STORAGE_OUTPUT) &&
        !m->ids[id].builtin)
      return kiln_spv_bad(m,
                          "%s variable %u is not a built-in; a compute "
                          "kernel has no other inputs or outputs",
                          ins[3] == STORAGE_INPUT ? "input" : "output", id);
  }
  return KILN_OK;
}

static bool is_push_var(const spv *m, uint32_t id) {
  const uint32_t *ins = spv_def(m, id);
  return ins && spv_opcode(ins) == OP_VARIABLE &&
         ins[3] == STORAGE_PUSH_CONSTANT;
}

/* Second pass, once variables are known: which push-constant block each
 * function touches directly. */
static void scan_uses(spv *m) {
  spv_function *fn = NULL;
  for (size_t at = 5; at < m->words; at += spv_words(&m->w[at])) {
    const uint32_t *ins = &m->w[at];
    uint32_t n = spv_words(ins), op = spv_opcode(ins);
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
  const uint32_t *ins = spv_def(m, fn_id);
  if (!ins || spv_opcode(ins) != OP_FUNCTION || depth > 64) return 0;
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

/* ---- Entry points ----------------------------------------------------- */

/* How each block dimension is set: a WorkgroupSize built-in wins over the
 * execution modes; components that are spec constants are specializable. */
static void local_size(const spv *m, const uint32_t *mode, uint32_t size[3],
                       int32_t spec[3]) {
  for (int d = 0; d < 3; d++) {
    size[d] = 1;
    spec[d] = -1;
  }
  if (mode && spv_opcode(mode) == OP_EXECUTION_MODE) {
    for (int d = 0; d < 3; d++) size[d] = mode[3 + d];
  } else if (mode) {
    for (int d = 0; d < 3; d++) {
      size[d] = kiln_spv_constant_value(m, mode[3 + d]);
      spec[d] = spv_def(m, mode[3 + d]) ? m->ids[mode[3 + d]].spec_id : -1;
    }
  }
  const uint32_t *c = spv_def(m, m->workgroup_size);
  if (!c || spv_words(c) < 6 ||
      (spv_opcode(c) != OP_CONSTANT_COMPOSITE &&
       spv_opcode(c) != OP_SPEC_CONSTANT_COMPOSITE))
    return;
  for (int d = 0; d < 3; d++) {
    size[d] = kiln_spv_constant_value(m, c[3 + d]);
    spec[d] = spv_def(m, c[3 + d]) ? m->ids[c[3 + d]].spec_id : -1;
  }
}

static bool is_compute_entry(const uint32_t *ins) {
  return spv_opcode(ins) == OP_ENTRY_POINT && ins[1] == MODEL_GLCOMPUTE;
}

static int compare_entry_names(const void *a, const void *b) {
  const kiln_vulkan_spirv_entry_point *x = a, *y = b;
  return strcmp(x->name, y->name);
}

static kiln_status entry_point(spv *m, const uint32_t *ins,
                               kiln_vulkan_spirv_entry_point *e) {
  uint32_t n = spv_words(ins);
  const char *name = (const char *)&ins[3];
  size_t max = (size_t)(n - 3) * 4;
  size_t len = strnlen(name, max);
  if (len == max)
    return kiln_spv_bad(m, "an entry point's name is not terminated");
  const uint32_t *fn = spv_def(m, ins[2]);
  if (!fn || spv_opcode(fn) != OP_FUNCTION)
    return kiln_spv_bad(m, "an entry point names id %u, which is no function",
                        ins[2]);
  e->name = malloc(len + 1);
  if (!e->name) return kiln_spv_no_memory();
  memcpy(e->name, name, len + 1);
  const uint32_t *mode =
      m->ids[ins[2]].mode ? &m->w[m->ids[ins[2]].mode] : NULL;
  if (!mode && !spv_def(m, m->workgroup_size))
    return kiln_spv_bad(
        m,
        "entry point '%.64s' declares no block size (a LocalSize "
        "or LocalSizeId mode, or a WorkgroupSize constant)",
        e->name);
  local_size(m, mode, e->local_size, e->local_size_spec_id);
  for (int d = 0; d < 3; d++)
    if (e->local_size_spec_id[d] < 0 && e->local_size[d] == 0)
      return kiln_spv_bad(m, "entry point '%.64s' has a block dimension of 0",
                          e->name);
  uint32_t var = entry_push_var(m, ins[2], 0);
  const uint32_t *v = spv_def(m, var);
  const uint32_t *ptr = v ? spv_def(m, v[1]) : NULL;
  e->param_count = 0;
  if (!ptr || spv_opcode(ptr) != OP_TYPE_POINTER) return KILN_OK;
  return kiln_spv_push_block(m, ptr[3], e);
}

static kiln_status entry_points(spv *m, kiln_vulkan_spirv_info *out) {
  size_t count = 0;
  for (size_t at = 5; at < m->words; at += spv_words(&m->w[at]))
    if (is_compute_entry(&m->w[at])) count++;
  out->entry_points = calloc(count ? count : 1, sizeof *out->entry_points);
  if (!out->entry_points) return kiln_spv_no_memory();
  for (size_t at = 5; at < m->words; at += spv_words(&m->w[at])) {
    if (!is_compute_entry(&m->w[at])) continue;
    kiln_vulkan_spirv_entry_point *e =
        &out->entry_points[out->entry_point_count++];
    kiln_status st = entry_point(m, &m->w[at], e);
    if (st != KILN_OK) return st;
  }
  /* A kernel is looked up by name: two of one name could not both be. */
  kiln_vulkan_spirv_entry_point *sorted =
      malloc((count ? count : 1) * sizeof *sorted);
  if (!sorted) return kiln_spv_no_memory();
  memcpy(sorted, out->entry_points, count * sizeof *sorted);
  qsort(sorted, count, sizeof *sorted, compare_entry_names);
  const char *twice = NULL;
  for (size_t i = 1; i < count && !twice; i++)
    if (strcmp(sorted[i - 1].name, sorted[i].name) == 0) twice = sorted[i].name;
  kiln_status st = KILN_OK;
  if (twice)
    st = kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                        "SPIR-V image %zu is malformed: two GLCompute entry "
                        "points are called '%.64s'",
                        m->index, twice);
  free(sorted);
  return st;
}

static int compare_ints(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* kiln sets constant_id 3 and the ids of specializable block dimensions
 * with 32-bit values: any constant of such an id must be a 32-bit integer
 * (the validation layer requires the sizes to agree). */
static kiln_status check_spec_ids(spv *m, const kiln_vulkan_spirv_info *info) {
  size_t count = 0;
  int32_t *set = malloc((info->entry_point_count * 3 + 1) * sizeof *set);
  if (!set) return kiln_spv_no_memory();
  set[count++] = KILN_VULKAN_SPEC_SHARED_BYTES;
  for (size_t i = 0; i < info->entry_point_count; i++)
    for (int d = 0; d < 3; d++)
      if (info->entry_points[i].local_size_spec_id[d] >= 0)
        set[count++] = info->entry_points[i].local_size_spec_id[d];
  qsort(set, count, sizeof *set, compare_ints);
  kiln_status st = KILN_OK;
  for (uint32_t id = 1; id < m->bound && st == KILN_OK; id++) {
    int32_t spec = m->ids[id].spec_id;
    const uint32_t *ins = spv_def(m, id);
    if (spec < 0 || !ins ||
        !bsearch(&spec, set, count, sizeof *set, compare_ints))
      continue;
    if (!(spv_opcode(ins) == OP_SPEC_CONSTANT && kiln_spv_is_int32(m, ins[1])))
      st = kiln_spv_bad(
          m,
          "constant_id %d, which kiln sets at launch (to the block "
          "size, or for 3 the dynamic shared memory), is not a "
          "32-bit integer constant",
          (int)spec);
  }
  free(set);
  return st;
}

/* ---- The whole image -------------------------------------------------- */

static kiln_status check_header(spv *m) {
  if (m->w[0] != SPV_MAGIC) {
    if (m->w[0] == 0x03022307u)
      return kiln_spv_bad(m, "its words are byte-swapped (big-endian SPIR-V)");
    return kiln_spv_bad(m, "no SPIR-V magic number (0x%08x) at the start",
                        SPV_MAGIC);
  }
  uint32_t version = m->w[1];
  if ((version & 0xff0000ffu) != 0 || (version >> 16) != 1 ||
      ((version >> 8) & 0xff) > 6)
    return kiln_spv_bad(
        m, "its version word 0x%08x is no SPIR-V version 1.0 to 1.6", version);
  if (m->w[4] != 0)
    return kiln_spv_bad(m, "its reserved header word is 0x%08x, not 0",
                        m->w[4]);
  m->bound = m->w[3];
  /* Every id is defined by an instruction of at least two words; a bound
   * far beyond what the image can define only costs memory here and in
   * the driver. */
  if (m->bound == 0 || m->bound > SPV_MAX_BOUND ||
      m->bound > m->words * 4 + 1024)
    return kiln_spv_bad(m,
                        "its id bound is out of range: %u, where SPIR-V "
                        "allows at most 4194303 and an image of %zu words "
                        "uses far fewer",
                        m->bound, m->words);
  return KILN_OK;
}

kiln_status kiln_vulkan_spirv_reflect(const void *data, size_t size,
                                      size_t index,
                                      kiln_vulkan_spirv_info *out) {
  memset(out, 0, sizeof *out);
  spv m = {.index = index};
  if (size < 20)
    return kiln_spv_bad(&m, "shorter than a SPIR-V header (20 bytes)");
  if (size % 4 != 0)
    return kiln_spv_bad(&m, "its size is not a multiple of 4 bytes");
  if (size / 4 > UINT32_MAX)
    return kiln_spv_bad(&m, "larger than SPIR-V allows");
  m.w = data;
  m.words = size / 4;
  kiln_status st = check_header(&m);
  if (st != KILN_OK) return st;
  m.ids = calloc(m.bound, sizeof *m.ids);
  size_t max_funcs = m.words / 5 + 1;
  m.funcs = calloc(max_funcs, sizeof *m.funcs);
  if (!m.ids || !m.funcs) {
    st = kiln_spv_no_memory();
  } else {
    for (uint32_t i = 0; i < m.bound; i++) m.ids[i].spec_id = -1;
    st = scan(&m);
  }
  if (st == KILN_OK) {
    if (m.mdec_count)
      qsort(m.mdecs, m.mdec_count, sizeof *m.mdecs, kiln_spv_member_dec_order);
    scan_uses(&m);
    st = check_interface(&m);
  }
  if (st == KILN_OK) {
    st = entry_points(&m, out);
  }
  if (st == KILN_OK && out->entry_point_count == 0)
    st = kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                        "SPIR-V image %zu has no GLCompute entry point (is "
                        "it a compute shader?)",
                        index);
  if (st == KILN_OK) st = check_spec_ids(&m, out);
  if (st == KILN_OK) {
    for (uint32_t i = 0; i < m.bound; i++) {
      const uint32_t *c = spv_def(&m, i);
      if (c && spv_opcode(c) == OP_SPEC_CONSTANT &&
          m.ids[i].spec_id == KILN_VULKAN_SPEC_SHARED_BYTES) {
        out->has_shared_bytes_spec = true;
        out->shared_bytes_default = c[3];
      }
    }
    st = kiln_spv_shared_arrays(&m, out);
  }
  if (m.funcs)
    for (size_t i = 0; i < m.func_count; i++) free(m.funcs[i].callees);
  free(m.funcs);
  free(m.ids);
  free(m.mdecs);
  if (st != KILN_OK) kiln_vulkan_spirv_free(out);
  return st;
}

void kiln_vulkan_spirv_free(kiln_vulkan_spirv_info *info) {
  for (size_t i = 0; i < info->entry_point_count; i++) {
    free(info->entry_points[i].name);
    free(info->entry_points[i].params);
  }
  free(info->entry_points);
  free(info->shared_exprs);
  free(info->shared_roots);
  memset(info, 0, sizeof *info);
}
