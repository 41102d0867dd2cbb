/* The argument ABI of every launch: packing an argument list (natural
 * alignment; a buffer argument is its device address + offset), and
 * checking it against the device's limits and the kernel's parameters
 * where the backend can tell them. Messages name kiln_launch. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

static size_t arg_width(kiln_arg_type t) {
  switch (t) {
  case KILN_ARG_F16:
  case KILN_ARG_BF16: return 2;
  case KILN_ARG_I32:
  case KILN_ARG_U32:
  case KILN_ARG_F32: return 4;
  case KILN_ARG_BUFFER:
  case KILN_ARG_I64:
  case KILN_ARG_U64:
  case KILN_ARG_F64: return 8;
  }
  return 0;
}

static const char *arg_name(kiln_arg_type t) {
  switch (t) {
  case KILN_ARG_BUFFER: return "buffer";
  case KILN_ARG_I32: return "i32";
  case KILN_ARG_U32: return "u32";
  case KILN_ARG_F32: return "f32";
  case KILN_ARG_I64: return "i64";
  case KILN_ARG_U64: return "u64";
  case KILN_ARG_F64: return "f64";
  case KILN_ARG_F16: return "f16";
  case KILN_ARG_BF16: return "bf16";
  }
  return "?";
}

#define ARG_BIT(t) (1u << (t))
#define INTEGER_ARGS                                                         \
  (ARG_BIT(KILN_ARG_I32) | ARG_BIT(KILN_ARG_U32) | ARG_BIT(KILN_ARG_I64) |   \
   ARG_BIT(KILN_ARG_U64))
#define FLOAT_ARGS                                                           \
  (ARG_BIT(KILN_ARG_F32) | ARG_BIT(KILN_ARG_F64) | ARG_BIT(KILN_ARG_F16) |   \
   ARG_BIT(KILN_ARG_BF16))
#define ANY_ARG (ARG_BIT(KILN_ARG_BUFFER) | INTEGER_ARGS | FLOAT_ARGS)

/* The argument types each kind of parameter takes, a bit per
 * kiln_arg_type; sizes are compared apart. Classes must agree (address,
 * integer, float) but signedness need not: an i32 and a u32 of the same
 * value below 2^31 are the same bits, and kernels often take a count as
 * int where the caller holds it unsigned. A buffer's address also fits an
 * integer of unknown or no sign (PTX's .u64, GLSL's uint64_t). */
static const unsigned accepted[] = {
    [KILN_PARAM_BITS] = ANY_ARG,
    [KILN_PARAM_POINTER] = ARG_BIT(KILN_ARG_BUFFER),
    [KILN_PARAM_INT] = INTEGER_ARGS | ARG_BIT(KILN_ARG_BUFFER),
    [KILN_PARAM_SINT] = INTEGER_ARGS,
    [KILN_PARAM_UINT] = INTEGER_ARGS | ARG_BIT(KILN_ARG_BUFFER),
    [KILN_PARAM_FLOAT] = FLOAT_ARGS,
};

static unsigned param_accepts(const kiln_param_info *p) {
  return p->kind <= KILN_PARAM_FLOAT ? accepted[p->kind] : ANY_ARG;
}

/* "a" or "an" before the number n as it is spoken: an 8, an 11, an 18,
 * an 80-something, an 800-something (thousands as their leading group). */
static const char *article(unsigned n) {
  while (n >= 1000) n /= 1000;
  if (n >= 100) return n / 100 == 8 ? "an" : "a";
  return n == 8 || n == 11 || n == 18 || n / 10 == 8 ? "an" : "a";
}

/* "a 64-bit pointer", "a 32-bit float", "an 8-byte value". */
static void describe_param(const kiln_param_info *p, char *buf, size_t size) {
  static const char *const kinds[] = {
      [KILN_PARAM_POINTER] = "pointer",
      [KILN_PARAM_INT] = "integer",
      [KILN_PARAM_SINT] = "signed integer",
      [KILN_PARAM_UINT] = "unsigned integer",
      [KILN_PARAM_FLOAT] = "float",
  };
  unsigned bytes = (unsigned)p->size;
  if (p->kind == KILN_PARAM_BITS || p->kind > KILN_PARAM_FLOAT)
    snprintf(buf, size, "%s %u-byte value", article(bytes), bytes);
  else
    snprintf(buf, size, "%s %u-bit %s", article(bytes * 8u), bytes * 8u,
             kinds[p->kind]);
}

/* What the caller should pass for parameter p, for the message. */
static const char *suggestion(const kiln_param_info *p) {
  if (p->size == 2)
    return p->kind == KILN_PARAM_FLOAT || p->kind == KILN_PARAM_BITS
               ? "; pass kiln_arg_f16 or kiln_arg_bf16"
               : "; kiln passes 2-byte arguments only as 16-bit floats "
                 "(kiln_arg_f16, kiln_arg_bf16)";
  if (p->size != 4 && p->size != 8)
    return "; kiln passes 2-, 4- and 8-byte arguments only";
  bool wide = p->size == 8;
  switch (p->kind) {
  case KILN_PARAM_POINTER: return "; pass a buffer (kiln_arg_buffer)";
  case KILN_PARAM_FLOAT:
    return wide ? "; pass kiln_arg_f64" : "; pass kiln_arg_f32";
  case KILN_PARAM_INT:
  case KILN_PARAM_SINT:
  case KILN_PARAM_UINT:
    return wide ? "; pass kiln_arg_i64 or kiln_arg_u64"
                : "; pass kiln_arg_i32 or kiln_arg_u32";
  default:
    return wide ? "; pass an 8-byte argument" : "; pass a 4-byte argument";
  }
}

/* The message for argument i, which does not match parameter i. Kept out
 * of check_params so that the loop stays small. */
static kiln_status param_mismatch(const kiln_kernel *k, size_t i,
                                  const kiln_arg *a, size_t offset) {
  static const char fn[] = "kiln_launch";
  const kiln_param_info *p = &k->params[i];
  char what[48];
  describe_param(p, what, sizeof what);
  size_t w = arg_width(a->type);
  if (w == p->size && (param_accepts(p) & ARG_BIT(a->type)))
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: argument %zu (%s) packs at byte %zu of the "
                          "list, but parameter %zu of kernel '%s' (%s) is "
                          "at byte %u; kiln aligns each argument to its own "
                          "size",
                          fn, i, arg_name(a->type), offset, i, k->name, what,
                          (unsigned)p->offset);
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "%s: argument %zu (%s, %zu bytes) does not fit "
                        "parameter %zu of kernel '%s', %s%s",
                        fn, i, arg_name(a->type), w, i, k->name, what,
                        suggestion(p));
}

/* Checks each packed argument against the kernel's parameter of the same
 * index: offset, size, and the class of its kind. The count is checked
 * before packing. */
static kiln_status check_params(const kiln_kernel *k, const kiln_arg *args,
                                const kiln_packed_args *packed) {
  for (size_t i = 0; i < packed->count; i++) {
    const kiln_param_info *p = &k->params[i];
    kiln_arg_type t = args[i].type;
    if (p->offset != packed->offsets[i] || p->size != arg_width(t) ||
        !(param_accepts(p) & ARG_BIT(t)))
      return param_mismatch(k, i, &args[i], packed->offsets[i]);
  }
  return KILN_OK;
}

static kiln_status pack_args(kiln_context *ctx, const kiln_arg *args,
                             size_t count, kiln_packed_args *out) {
  static const char fn[] = "kiln_launch";
  size_t limit = ctx->properties.max_kernel_argument_bytes;
  if (limit == 0 || limit > KILN_MAX_ARG_BYTES) limit = KILN_MAX_ARG_BYTES;
  size_t off = 0;
  for (size_t i = 0; i < count; i++) {
    const kiln_arg *a = &args[i];
    size_t w = arg_width(a->type);
    if (w == 0)
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: argument %zu has unknown type %d", fn, i,
                            (int)a->type);
    /* Padding is zeroed, as are the bytes up to the next 8 after the
     * list: a backend may compare whole lists (Vulkan keeps a launch's
     * batch by its push constants, backends/vulkan/solo.c) and push whole
     * words past the last argument. */
    const size_t at = (off + w - 1) & ~(w - 1);
    memset(out->data + off, 0, at - off);
    off = at;
    if (off + w > limit)
      return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                            "%s: the argument list needs more than %zu bytes "
                            "(argument %zu ends at byte %zu); the %s device "
                            "takes at most %zu",
                            fn, limit, i, off + w, ctx->ops->name, limit);
    unsigned char *dst = out->data + off;
    if (a->type == KILN_ARG_BUFFER) {
      const kiln_buffer *b = a->value.buffer.buffer;
      kiln_status st =
          kiln_object_check_in(b, KILN_OBJECT_BUFFER, ctx, fn, "a buffer argument");
      if (st != KILN_OK)
        return kiln_set_error(st, "argument %zu: %s", i, kiln_last_error());
      if (a->value.buffer.offset > b->size)
        return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                              "%s: argument %zu: offset %zu is past the end "
                              "of its %zu-byte buffer",
                              fn, i, a->value.buffer.offset, b->size);
      uint64_t addr =
          b->device_address + b->guard + (uint64_t)a->value.buffer.offset;
      memcpy(dst, &addr, 8);
    } else if (w == 2) {
      /* The 16 bits kiln_arg_f16 keeps in u32's low half, which is not
       * its first two bytes on a big-endian host. */
      const uint16_t bits = (uint16_t)a->value.u32;
      memcpy(dst, &bits, 2);
    } else {
      /* Every other scalar member of the union starts at its first byte. */
      memcpy(dst, &a->value, w);
    }
    out->offsets[i] = (uint16_t)off;
    off += w;
  }
  const size_t end = (off + 7) & ~(size_t)7;
  memset(out->data + off, 0, end - off);
  out->size = off;
  out->count = count;
  return KILN_OK;
}

static kiln_status check_config(const kiln_context *ctx,
                                const kiln_launch_config *c) {
  static const char fn[] = "kiln_launch";
  const kiln_device_properties *p = &ctx->properties;
  const uint32_t block[3] = {c->block.x, c->block.y, c->block.z};
  const uint32_t grid[3] = {c->grid.x, c->grid.y, c->grid.z};
  uint64_t threads = 1;
  for (int d = 0; d < 3; d++) {
    if (block[d] == 0)
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: block dimension %c is 0; every block "
                            "dimension must be at least 1",
                            fn, "xyz"[d]);
    if (block[d] > p->max_block_size[d])
      return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                            "%s: block.%c = %u exceeds the device's limit %u",
                            fn, "xyz"[d], block[d], p->max_block_size[d]);
    if (grid[d] > p->max_grid_size[d])
      return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                            "%s: grid.%c = %u exceeds the device's limit %u",
                            fn, "xyz"[d], grid[d], p->max_grid_size[d]);
    threads *= block[d];
  }
  if (threads > p->max_threads_per_block)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: a block of %ux%ux%u = %llu threads exceeds the "
                          "device's limit of %u threads per block",
                          fn, block[0], block[1], block[2],
                          (unsigned long long)threads,
                          p->max_threads_per_block);
  size_t shared_limit = p->max_shared_memory_per_block_optin;
  if (shared_limit < p->max_shared_memory_per_block)
    shared_limit = p->max_shared_memory_per_block;
  if (c->shared_memory_bytes > shared_limit)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: %zu bytes of dynamic shared memory exceed the "
                          "device's limit of %zu bytes per block",
                          fn, c->shared_memory_bytes, shared_limit);
  return KILN_OK;
}

kiln_status kiln_launch_pack(kiln_context *ctx, kiln_kernel *kernel,
                             const kiln_launch_config *config,
                             const kiln_arg *args, size_t arg_count,
                             kiln_packed_args *packed) {
  static const char fn[] = "kiln_launch";
  if (!config)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: config is NULL",
                          fn);
  if (!args && arg_count)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: args is NULL but arg_count is %zu", fn,
                          arg_count);
  if (arg_count > KILN_MAX_KERNEL_ARGS)
    return kiln_set_error(KILN_ERROR_OUT_OF_RANGE,
                          "%s: %zu arguments; kiln takes at most %d", fn,
                          arg_count, KILN_MAX_KERNEL_ARGS);
  kiln_status st = check_config(ctx, config);
  if (st != KILN_OK) return st;
  bool described = kernel->param_count != KILN_PARAMS_UNKNOWN;
  if (described && kernel->param_count != arg_count)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: kernel '%s' takes %zu argument%s, the launch "
                          "gives %zu",
                          fn, kernel->name, kernel->param_count,
                          kernel->param_count == 1 ? "" : "s", arg_count);
  if ((st = pack_args(ctx, args, arg_count, packed)) != KILN_OK) return st;
  if (described && (st = check_params(kernel, args, packed)) != KILN_OK)
    return st;
  if (kernel->arg_bytes != KILN_ARG_BYTES_UNKNOWN &&
      kernel->arg_bytes != packed->size)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: kernel '%s' takes %zu bytes of arguments, but "
                          "the %zu given pack to %zu bytes (buffers and "
                          "64-bit scalars take 8, 32-bit scalars 4, 16-bit "
                          "floats 2, each naturally aligned)",
                          fn, kernel->name, kernel->arg_bytes, arg_count,
                          packed->size);
  return KILN_OK;
}
