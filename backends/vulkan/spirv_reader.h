/*
 * The SPIR-V reader that spirv.c (structure, entry points) and
 * spirv_layout.c (the push-constant block, arrays sized by dynamic shared
 * memory) share: the opcodes and enumerants they read, and what they know
 * of one image while reflecting it. Private to those two files.
 */
#ifndef KILN_VULKAN_SPIRV_READER_H
#define KILN_VULKAN_SPIRV_READER_H

#include "backends/vulkan/vulkan.h"

enum {
  SPV_MAGIC = 0x07230203,
  /* SPIR-V's universal limit on the id bound. */
  SPV_MAX_BOUND = 0x3fffff,
  OP_ENTRY_POINT = 15,
  OP_EXECUTION_MODE = 16,
  OP_CAPABILITY = 17,
  OP_TYPE_VOID = 19,
  OP_TYPE_BOOL = 20,
  OP_TYPE_INT = 21,
  OP_TYPE_FLOAT = 22,
  OP_TYPE_VECTOR = 23,
  OP_TYPE_MATRIX = 24,
  OP_TYPE_ARRAY = 28,
  OP_TYPE_RUNTIME_ARRAY = 29,
  OP_TYPE_STRUCT = 30,
  OP_TYPE_POINTER = 32,
  OP_TYPE_FUNCTION = 33,
  OP_TYPE_PIPE = 38,
  OP_TYPE_FORWARD_POINTER = 39,
  OP_TYPE_COOPERATIVE_MATRIX_KHR = 4456,
  OP_TYPE_COOPERATIVE_MATRIX_NV = 5358,
  OP_CONSTANT_TRUE = 41,
  OP_CONSTANT = 43,
  OP_CONSTANT_COMPOSITE = 44,
  OP_SPEC_CONSTANT_TRUE = 48,
  OP_SPEC_CONSTANT = 50,
  OP_SPEC_CONSTANT_COMPOSITE = 51,
  OP_SPEC_CONSTANT_OP = 52,
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
  STORAGE_INPUT = 1,
  STORAGE_OUTPUT = 3,
  STORAGE_PUSH_CONSTANT = 9,
  STORAGE_PHYSICAL_STORAGE_BUFFER = 5349,
};

/* What is known about one result id. */
typedef struct spv_id {
  uint32_t at;     /* word offset of its defining instruction, or 0 */
  int32_t spec_id; /* SpecId decoration, or -1 */
  uint32_t array_stride;
  uint32_t mode;       /* an entry function's LocalSize(Id) mode, or 0 */
  uint32_t function;   /* for OpFunction: index into funcs */
  bool builtin;        /* decorated BuiltIn */
  bool forward;        /* named by an OpTypeForwardPointer */
  /* Whether it depends on constant_id 3, once known: 0 not yet, 1 no, 2
   * yes. */
  uint8_t shared;
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
  uint32_t workgroup_size; /* the WorkgroupSize built-in's constant, or 0 */
} spv;

/* Accessors of an image that spirv.c's structural pass has accepted: every
 * instruction lies inside the image and has the operands these read. */
static inline uint32_t spv_opcode(const uint32_t *ins) {
  return ins[0] & 0xffffu;
}
static inline uint32_t spv_words(const uint32_t *ins) { return ins[0] >> 16; }
/* The instruction that defines `id`, or NULL. */
static inline const uint32_t *spv_def(const spv *m, uint32_t id) {
  return id < m->bound && m->ids[id].at ? &m->w[m->ids[id].at] : NULL;
}

/* spirv_reader.c */
/* Sets KILN_ERROR_INVALID_IMAGE, "SPIR-V image <index> is malformed: ...". */
kiln_status kiln_spv_bad(const spv *m, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
kiln_status kiln_spv_no_memory(void);
bool kiln_spv_is_int32(const spv *m, uint32_t type);
/* The value of a 32-bit constant (a spec constant's default), or 0. */
uint32_t kiln_spv_constant_value(const spv *m, uint32_t id);

/* spirv_layout.c */
/* The order of spv.mdecs (by type, member, decoration) once spirv.c has
 * sorted them, for lookups by binary search. */
int kiln_spv_member_dec_order(const void *a, const void *b);
/* The extent of push-constant block type `block`, and its members as
 * kernel parameters in e->params (KILN_PARAMS_UNKNOWN when they are not an
 * argument list kiln packs). */
kiln_status kiln_spv_push_block(spv *m, uint32_t block,
                                kiln_vulkan_spirv_entry_point *e);
/* Fills info's arrays sized by constant_id 3. */
kiln_status kiln_spv_shared_arrays(spv *m, kiln_vulkan_spirv_info *info);

#endif /* KILN_VULKAN_SPIRV_READER_H */
