/* Kernel parameter lists from HIP images: see core/images/params.h.
 *
 * An AMDGPU code object describes its kernels in an ELF note of type
 * NT_AMDGPU_METADATA (32, owner "AMDGPU"): a MessagePack map whose
 * "amdhsa.kernels" is an array of maps, each with ".name", ".symbol"
 * ("<name>.kd") and ".args", an array of maps with ".offset", ".size",
 * ".value_kind" (global_buffer for a pointer, by_value for a scalar or
 * struct, hidden_* for what the runtime adds) and, in older code objects,
 * ".value_type" ("f32", "i32", ...). */
#include <stdlib.h>
#include <string.h>

#include "core/images/params.h"

/* ---- MessagePack, the part this note uses ---------------------------------- */

typedef enum mp_type {
  MP_NIL,
  MP_BOOL,
  MP_INT, /* signed or unsigned: `u` holds the value's bits */
  MP_FLOAT,
  MP_STR,
  MP_BIN, /* bin and ext */
  MP_ARRAY,
  MP_MAP,
} mp_type;

/* One value's head: a scalar's value, a string's bytes, or an array's or
 * map's count (its elements follow it). */
typedef struct mp_value {
  mp_type type;
  uint64_t u;
  const unsigned char *bytes; /* MP_STR and MP_BIN: u bytes */
} mp_value;

typedef struct mp_reader {
  const unsigned char *p, *end;
} mp_reader;

static uint64_t read_be(const unsigned char *p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; i++) v = v << 8 | p[i];
  return v;
}

/* Takes `bytes` bytes from the reader into *at; false past the end. */
static bool take(mp_reader *r, size_t bytes, const unsigned char **at) {
  if ((size_t)(r->end - r->p) < bytes) return false;
  *at = r->p;
  r->p += bytes;
  return true;
}

/* Reads the head of the next value; false if it is cut short or is the
 * one byte MessagePack never uses (0xc1). */
static bool mp_next(mp_reader *r, mp_value *v) {
  const unsigned char *b, *n;
  if (!take(r, 1, &b)) return false;
  unsigned c = *b;
  v->bytes = NULL;
  v->u = 0;
  if (c <= 0x7f || c >= 0xe0) { /* positive and negative fixint */
    v->type = MP_INT;
    v->u = c <= 0x7f ? c : (uint64_t)(int64_t)(int8_t)c;
    return true;
  }
  size_t length_bytes = 0;
  if (c >= 0x80 && c <= 0x9f) {
    v->type = c <= 0x8f ? MP_MAP : MP_ARRAY;
    v->u = c & 0x0f;
    return true;
  }
  if (c >= 0xa0 && c <= 0xbf) {
    v->type = MP_STR;
    v->u = c & 0x1f;
    return take(r, (size_t)v->u, &v->bytes);
  }
  switch (c) {
  case 0xc0: v->type = MP_NIL; return true;
  case 0xc2:
  case 0xc3: v->type = MP_BOOL; v->u = c == 0xc3; return true;
  case 0xc4: case 0xc5: case 0xc6:
    v->type = MP_BIN;
    length_bytes = (size_t)1 << (c - 0xc4);
    break;
  case 0xd9: case 0xda: case 0xdb:
    v->type = MP_STR;
    length_bytes = (size_t)1 << (c - 0xd9);
    break;
  case 0xc7: case 0xc8: case 0xc9: /* ext: length, type byte, data */
    if (!take(r, (size_t)1 << (c - 0xc7), &n)) return false;
    v->type = MP_BIN;
    v->u = read_be(n, (size_t)1 << (c - 0xc7));
    return take(r, 1, &n) && v->u <= (uint64_t)(r->end - r->p) &&
           take(r, (size_t)v->u, &v->bytes);
  case 0xd4: case 0xd5: case 0xd6: case 0xd7: case 0xd8: /* fixext */
    v->type = MP_BIN;
    v->u = (uint64_t)1 << (c - 0xd4);
    return take(r, 1, &n) && take(r, (size_t)v->u, &v->bytes);
  case 0xca: case 0xcb:
    v->type = MP_FLOAT;
    return take(r, c == 0xca ? 4 : 8, &n);
  case 0xcc: case 0xcd: case 0xce: case 0xcf:
  case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
    size_t bytes = (size_t)1 << ((c - 0xcc) & 3);
    if (!take(r, bytes, &n)) return false;
    v->type = MP_INT;
    v->u = read_be(n, bytes);
    if (c >= 0xd0 && bytes < 8 && (v->u >> (8 * bytes - 1)))
      v->u |= ~(uint64_t)0 << (8 * bytes);
    return true;
  }
  case 0xdc: case 0xdd: case 0xde: case 0xdf: {
    size_t bytes = c == 0xdc || c == 0xde ? 2 : 4;
    if (!take(r, bytes, &n)) return false;
    v->type = c <= 0xdd ? MP_ARRAY : MP_MAP;
    v->u = read_be(n, bytes);
    return true;
  }
  default: return false; /* 0xc1 */
  }
  if (!take(r, length_bytes, &n)) return false;
  v->u = read_be(n, length_bytes);
  return v->u <= (uint64_t)(r->end - r->p) &&
         take(r, (size_t)v->u, &v->bytes);
}

/* Skips the elements of an array or map whose head v was just read,
 * nested at most `depth` deep. Each element takes at least a byte, so a
 * count larger than what is left fails as soon as the bytes run out. */
static bool mp_skip_elements(mp_reader *r, const mp_value *v, int depth);

static bool mp_skip(mp_reader *r, int depth) {
  mp_value v;
  return mp_next(r, &v) && mp_skip_elements(r, &v, depth);
}

static bool mp_skip_elements(mp_reader *r, const mp_value *v, int depth) {
  if (v->type != MP_ARRAY && v->type != MP_MAP) return true;
  if (depth == 0) return false;
  uint64_t n = v->type == MP_MAP ? 2 * v->u : v->u;
  for (uint64_t i = 0; i < n; i++)
    if (!mp_skip(r, depth - 1)) return false;
  return true;
}

static bool str_is(const mp_value *v, const char *s) {
  size_t n = strlen(s);
  return v->type == MP_STR && v->u == n && memcmp(v->bytes, s, n) == 0;
}

static bool str_starts(const mp_value *v, const char *s) {
  size_t n = strlen(s);
  return v->type == MP_STR && v->u >= n && memcmp(v->bytes, s, n) == 0;
}

/* ---- The metadata ---------------------------------------------------------- */

#define MP_DEPTH 16

/* One map of ".args": a parameter, or (false in *is_param) a hidden
 * argument. False if it is not a map of what kiln needs. */
static bool read_arg(mp_reader *r, kiln_param_info *out, bool *is_param) {
  mp_value map, key, v;
  if (!mp_next(r, &map) || map.type != MP_MAP) return false;
  bool have_offset = false, have_size = false, have_kind = false;
  bool by_value = false;
  kiln_param_kind value_type = KILN_PARAM_BITS;
  out->kind = KILN_PARAM_BITS;
  *is_param = true;
  for (uint64_t i = 0; i < map.u; i++) {
    if (!mp_next(r, &key) || !mp_next(r, &v)) return false;
    bool offset = str_is(&key, ".offset"), size = str_is(&key, ".size");
    if (offset || size) {
      if (v.type != MP_INT || v.u > UINT32_MAX) return false;
      *(offset ? &out->offset : &out->size) = (uint32_t)v.u;
      have_offset |= offset;
      have_size |= size;
    } else if (str_is(&key, ".value_kind")) {
      if (v.type != MP_STR) return false;
      have_kind = true;
      *is_param = !str_starts(&v, "hidden_");
      by_value = str_is(&v, "by_value");
      if (str_is(&v, "global_buffer")) out->kind = KILN_PARAM_POINTER;
    } else if (str_is(&key, ".value_type")) {
      /* LLVM's type: "f32", "i32", "u32", "struct"... An integer's sign
       * here is not its C type's, so it says an integer only. */
      if (v.type != MP_STR) return false;
      if (v.u > 0 && v.bytes[0] == 'f') value_type = KILN_PARAM_FLOAT;
      if (v.u > 0 && (v.bytes[0] == 'i' || v.bytes[0] == 'u'))
        value_type = KILN_PARAM_INT;
    } else if (!mp_skip_elements(r, &v, MP_DEPTH)) {
      return false;
    }
  }
  if (by_value && (out->size == 4 || out->size == 8)) out->kind = value_type;
  return have_offset && have_size && have_kind && out->size > 0;
}

/* The name hipModuleGetFunction takes: .symbol without its ".kd", else
 * .name. */
static void kernel_name(const mp_value *name, const mp_value *symbol,
                        const char **out, size_t *out_length) {
  if (symbol->type == MP_STR && symbol->u > 3 &&
      memcmp(symbol->bytes + symbol->u - 3, ".kd", 3) == 0) {
    *out = (const char *)symbol->bytes;
    *out_length = (size_t)symbol->u - 3;
  } else if (name->type == MP_STR) {
    *out = (const char *)name->bytes;
    *out_length = (size_t)name->u;
  } else {
    *out = NULL;
  }
}

typedef struct arg_list {
  kiln_param_info *items;
  size_t count, capacity;
} arg_list;

/* One kernel's map: its parameters into t. False when the metadata stops
 * parsing (the rest is not read); *oom on lack of memory. */
static bool read_kernel(mp_reader *r, kiln_param_table *t, arg_list *l,
                        bool *oom) {
  mp_value map, key, v, name = {MP_NIL, 0, NULL}, symbol = {MP_NIL, 0, NULL};
  if (!mp_next(r, &map) || map.type != MP_MAP) return false;
  bool have_args = false, usable = true;
  l->count = 0;
  for (uint64_t i = 0; i < map.u; i++) {
    if (!mp_next(r, &key)) return false;
    if (!str_is(&key, ".args")) {
      if (!mp_next(r, &v) || !mp_skip_elements(r, &v, MP_DEPTH)) return false;
      if (str_is(&key, ".name")) name = v;
      if (str_is(&key, ".symbol")) symbol = v;
      continue;
    }
    mp_value args;
    if (!mp_next(r, &args)) return false;
    if (args.type != MP_ARRAY) {
      if (!mp_skip_elements(r, &args, MP_DEPTH)) return false;
      usable = false;
      continue;
    }
    have_args = true;
    for (uint64_t a = 0; a < args.u; a++) {
      mp_reader at = *r;
      kiln_param_info info;
      bool is_param;
      if (!read_arg(r, &info, &is_param)) {
        /* Not a parameter kiln can describe: skip it whole, and the
         * kernel with it. */
        *r = at;
        if (!mp_skip(r, MP_DEPTH)) return false;
        usable = false;
        continue;
      }
      if (!is_param) continue;
      if (l->count == l->capacity) {
        size_t capacity = l->capacity ? 2 * l->capacity : 16;
        kiln_param_info *items = realloc(l->items, capacity * sizeof *items);
        if (!items) {
          *oom = true;
          return false;
        }
        l->items = items;
        l->capacity = capacity;
      }
      l->items[l->count++] = info;
    }
  }
  const char *n;
  size_t n_length = 0;
  kernel_name(&name, &symbol, &n, &n_length);
  /* A name with a NUL in it would be filed under its first part, which
   * may be another kernel's. */
  if (usable && have_args && n && n_length > 0 &&
      !memchr(n, '\0', n_length) &&
      !kiln_param_table_add(t, n, n_length, l->items, l->count))
    *oom = true;
  return !*oom;
}

/* The metadata map: each kernel of "amdhsa.kernels" into t. */
static kiln_status read_metadata(const unsigned char *p, size_t size,
                                 kiln_param_table *t) {
  mp_reader r = {p, p + size};
  mp_value map, key, v;
  arg_list l = {NULL, 0, 0};
  bool oom = false;
  if (!mp_next(&r, &map) || map.type != MP_MAP) return KILN_OK;
  for (uint64_t i = 0; i < map.u && !oom; i++) {
    if (!mp_next(&r, &key)) break;
    if (!str_is(&key, "amdhsa.kernels")) {
      if (!mp_skip(&r, MP_DEPTH)) break;
      continue;
    }
    if (!mp_next(&r, &v)) break;
    if (v.type != MP_ARRAY) {
      if (!mp_skip_elements(&r, &v, MP_DEPTH)) break;
      continue;
    }
    bool ok = true;
    for (uint64_t k = 0; k < v.u && ok; k++) ok = read_kernel(&r, t, &l, &oom);
    if (!ok) break;
  }
  free(l.items);
  if (oom)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "kiln_module_create: out of host memory reading "
                          "the kernels' parameter lists");
  return KILN_OK;
}

/* ---- Code objects and bundles ---------------------------------------------- */

enum { SHT_NOTE = 7, NT_AMDGPU_METADATA = 32 };

/* The AMDGPU metadata notes of a code object's note sections: namesz,
 * descsz, type, then the name and the description, each padded to 4. */
static kiln_status read_code_object(const unsigned char *data, size_t size,
                                    kiln_param_table *t) {
  kiln_elf elf;
  if (!kiln_elf_open(&elf, data, size)) return KILN_OK;
  for (uint64_t i = 0; i < elf.shnum; i++) {
    const unsigned char *p;
    size_t n;
    if (kiln_elf_section_type(&elf, i) != SHT_NOTE ||
        !kiln_elf_section_data(&elf, i, &p, &n))
      continue;
    size_t at = 0;
    while (n - at >= 12) {
      uint64_t name_size = kiln_read_le(p + at, 4);
      uint64_t desc_size = kiln_read_le(p + at + 4, 4);
      uint64_t type = kiln_read_le(p + at + 8, 4);
      uint64_t name_at = at + 12, desc_at = name_at + ((name_size + 3) & ~3u);
      if (!kiln_within(name_at, name_size, n) ||
          !kiln_within(desc_at, desc_size, n))
        break;
      if (type == NT_AMDGPU_METADATA && name_size == 7 &&
          memcmp(p + name_at, "AMDGPU", 7) == 0) {
        kiln_status st = read_metadata(p + desc_at, (size_t)desc_size, t);
        if (st != KILN_OK) return st;
      }
      at = (size_t)(desc_at + ((desc_size + 3) & ~3u));
      if (at > n) break;
    }
  }
  return KILN_OK;
}

/* Whether a bundle entry's id ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-")
 * names `target`: what follows its last "--", up to any ':'. */
static bool names_target(const unsigned char *id, size_t length,
                         const char *target) {
  size_t start = 0;
  for (size_t i = 0; i + 1 < length; i++)
    if (id[i] == '-' && id[i + 1] == '-') start = i + 2;
  size_t end = start;
  while (end < length && id[end] != ':') end++;
  return start > 0 && end - start == strlen(target) &&
         memcmp(id + start, target, end - start) == 0;
}

/* From a bundle, the code object for `target`, else the first AMDGPU one:
 * every entry is checked to lie within the image before any is chosen. */
static kiln_status read_bundle(const unsigned char *p, size_t size,
                               const char *target, kiln_param_table *t) {
  size_t magic = KILN_BUNDLE_MAGIC_SIZE;
  if (size < magic + 8) return KILN_OK;
  uint64_t entries = kiln_read_le(p + magic, 8), at = magic + 8;
  const unsigned char *first = NULL, *chosen = NULL;
  size_t first_size = 0, chosen_size = 0;
  for (uint64_t e = 0; e < entries && !chosen; e++) {
    if (!kiln_within(at, 24, size)) return KILN_OK;
    uint64_t offset = kiln_read_le(p + at, 8), bytes = kiln_read_le(p + at + 8, 8);
    uint64_t id_length = kiln_read_le(p + at + 16, 8);
    at += 24;
    if (!kiln_within(at, id_length, size) || !kiln_within(offset, bytes, size))
      return KILN_OK;
    const unsigned char *id = p + at;
    at += id_length;
    static const char amdgcn[] = "-amdgcn-";
    bool amd = false;
    for (uint64_t i = 0; i + sizeof amdgcn - 1 <= id_length && !amd; i++)
      amd = memcmp(id + i, amdgcn, sizeof amdgcn - 1) == 0;
    if (!amd || bytes == 0) continue;
    if (!first) {
      first = p + offset;
      first_size = (size_t)bytes;
    }
    if (target && names_target(id, (size_t)id_length, target)) {
      chosen = p + offset;
      chosen_size = (size_t)bytes;
    }
  }
  if (!chosen) {
    chosen = first;
    chosen_size = first_size;
  }
  return chosen ? read_code_object(chosen, chosen_size, t) : KILN_OK;
}

kiln_status kiln_params_read_hip(const void *data, size_t size,
                                 const char *target, kiln_param_table *out) {
  const unsigned char *p = data;
  memset(out, 0, sizeof *out);
  /* HIP on NVIDIA loads what the CUDA driver does. */
  if (size >= 4 && kiln_read_le(p, 4) == KILN_FATBIN_MAGIC)
    return kiln_params_read_cuda(KILN_IMAGE_FATBIN, data, size, out);
  bool elf = size >= 64 && memcmp(p, "\177ELF", 4) == 0;
  if (elf && kiln_read_le(p + 18, 2) == KILN_EM_CUDA)
    return kiln_params_read_cuda(KILN_IMAGE_CUBIN, data, size, out);
  /* A compressed bundle (clang-offload-bundler --compress): its code
   * objects cannot be read, and may call printf. */
  if (size >= 4 && memcmp(p, "CCOB", 4) == 0) {
    out->may_printf = true;
    return KILN_OK;
  }
  kiln_status st = KILN_OK;
  if (size >= KILN_BUNDLE_MAGIC_SIZE &&
      memcmp(p, KILN_BUNDLE_MAGIC, KILN_BUNDLE_MAGIC_SIZE) == 0)
    st = read_bundle(p, size, target, out);
  else if (elf && kiln_read_le(p + 18, 2) == KILN_EM_AMDGPU)
    st = read_code_object(p, size, out);
  else if (!elf)
    return kiln_params_read_cuda(KILN_IMAGE_PTX, data, size, out);
  if (st != KILN_OK) {
    kiln_param_table_free(out);
    return st;
  }
  kiln_param_table_finish(out);
  /* Device printf on AMD GPUs calls the device library's __ockl_printf_*
   * functions. */
  out->may_printf = kiln_bytes_contain(p, size, "__ockl_printf");
  return KILN_OK;
}
