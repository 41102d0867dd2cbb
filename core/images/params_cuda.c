/* Kernel parameter lists from PTX, cubin and fatbin images: see core/images/params.h.
 *
 * Everything here reads bytes that the driver has accepted but kiln has
 * not: each offset and length is checked against the image's size before
 * it is followed, and anything unexpected leaves a kernel out rather than
 * failing the module. */
#include <stdlib.h>
#include <string.h>

#include "core/images/params.h"

/* ---- Reading ------------------------------------------------------------- */

/* A list being read, grown as parameters are found. */
typedef struct param_list {
  kiln_param_info *items;
  size_t count, capacity;
  bool broken; /* something kiln cannot describe: leave the kernel out */
} param_list;

static bool list_push(param_list *l, kiln_param_info info) {
  if (l->count == l->capacity) {
    size_t capacity = l->capacity ? 2 * l->capacity : 16;
    kiln_param_info *items = realloc(l->items, capacity * sizeof *items);
    if (!items) return false;
    l->items = items;
    l->capacity = capacity;
  }
  l->items[l->count++] = info;
  return true;
}

static kiln_status no_memory(void) {
  return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                        "kiln_module_create: out of host memory reading the "
                        "kernels' parameter lists");
}

/* ---- Cubins: .nv.info.<kernel> -------------------------------------------- */

/* The attributes of an .nv.info section: a byte of format, a byte of
 * attribute, then a 16-bit value (formats 1 to 3) or a 16-bit length and
 * that many bytes (format 4). */
enum { EIFMT_SVAL = 4, EIATTR_KPARAM_INFO = 0x17 };

/* Walks the attributes of an .nv.info section, calling back on each
 * EIATTR_KPARAM_INFO value (at least 12 bytes); false if the section does
 * not parse to its end. */
static bool each_kparam(const unsigned char *p, size_t size,
                        void (*fn)(const unsigned char *value, void *data),
                        void *data) {
  size_t at = 0;
  while (size - at >= 4) {
    unsigned format = p[at], attribute = p[at + 1];
    size_t length = 0;
    if (format == EIFMT_SVAL) {
      length = (size_t)kiln_read_le(p + at + 2, 2);
      if (length > size - at - 4) return false;
    } else if (format < 1 || format > 3) {
      return false;
    }
    if (attribute == EIATTR_KPARAM_INFO && format == EIFMT_SVAL) {
      if (length < 12) return false;
      fn(p + at + 4, data);
    }
    at += 4 + length;
  }
  return at == size;
}

static void count_kparam(const unsigned char *value, void *data) {
  (void)value;
  ++*(size_t *)data;
}

/* Puts the parameter at its ordinal (16 bits at 4) with its offset (16
 * bits at 6) and size (the top 14 bits of the word at 8); a second one at
 * an ordinal, or one past the count, breaks the list. */
static void place_kparam(const unsigned char *value, void *data) {
  param_list *l = data;
  uint64_t ordinal = kiln_read_le(value + 4, 2);
  if (ordinal >= l->count || l->items[ordinal].size != 0) {
    l->broken = true;
    return;
  }
  l->items[ordinal].offset = (uint32_t)kiln_read_le(value + 6, 2);
  l->items[ordinal].size = (uint32_t)(kiln_read_le(value + 8, 4) >> 18);
}

/* Reads one kernel's EIATTR_KPARAM_INFO attributes into l, in ordinal
 * order; ordinals that do not run 0..n-1 once each, or a section that
 * does not parse, mark the list broken. Kinds are unknown: a cubin tells
 * sizes only. False for lack of memory. */
static bool read_nv_info(const unsigned char *p, size_t size, param_list *l) {
  size_t n = 0;
  l->count = 0;
  l->broken = !each_kparam(p, size, count_kparam, &n);
  if (l->broken) return true;
  const kiln_param_info unset = {0, 0, KILN_PARAM_BITS};
  for (size_t i = 0; i < n; i++)
    if (!list_push(l, unset)) return false;
  each_kparam(p, size, place_kparam, l);
  for (size_t i = 0; i < n; i++)
    if (l->items[i].size == 0) l->broken = true;
  return true;
}

static kiln_status read_cubin(const unsigned char *data, size_t size,
                              kiln_param_table *t) {
  static const char prefix[] = ".nv.info.";
  const size_t prefix_length = sizeof prefix - 1;
  kiln_elf elf;
  if (!kiln_elf_open(&elf, data, size)) return KILN_OK;
  param_list l = {NULL, 0, 0, false};
  kiln_status st = KILN_OK;
  for (uint64_t i = 0; i < elf.shnum && st == KILN_OK; i++) {
    size_t length;
    const char *name = kiln_elf_section_name(&elf, i, &length);
    const unsigned char *info;
    size_t info_size;
    if (!name || length <= prefix_length ||
        memcmp(name, prefix, prefix_length) != 0 ||
        !kiln_elf_section_data(&elf, i, &info, &info_size))
      continue;
    if (!read_nv_info(info, info_size, &l) ||
        (!l.broken &&
         !kiln_param_table_add(t, name + prefix_length,
                               length - prefix_length, l.items, l.count)))
      st = no_memory();
  }
  free(l.items);
  return st;
}

/* ---- PTX: .entry name ( .param ... ) --------------------------------------- */

typedef struct ptx_lexer {
  const char *p, *end;
  const char *token;
  size_t length;
} ptx_lexer;

static bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '%';
}

/* The next token: a directive (".param", one dot), an identifier or
 * number, a string, or one other character. False, with an empty token,
 * at the end. */
static bool next_token(ptx_lexer *x) {
  for (;;) {
    while (x->p < x->end && (*x->p == ' ' || *x->p == '\t' ||
                             *x->p == '\n' || *x->p == '\r'))
      x->p++;
    if (x->end - x->p >= 2 && x->p[0] == '/' && x->p[1] == '/') {
      while (x->p < x->end && *x->p != '\n') x->p++;
    } else if (x->end - x->p >= 2 && x->p[0] == '/' && x->p[1] == '*') {
      x->p += 2;
      while (x->end - x->p >= 2 && !(x->p[0] == '*' && x->p[1] == '/')) x->p++;
      x->p = x->end - x->p >= 2 ? x->p + 2 : x->end;
    } else {
      break;
    }
  }
  if (x->p >= x->end) {
    x->token = x->end;
    x->length = 0;
    return false;
  }
  const char *s = x->p++;
  if (*s == '"') {
    while (x->p < x->end && *x->p != '"') x->p++;
    if (x->p < x->end) x->p++;
  } else if (*s == '.' || ident_char(*s)) {
    while (x->p < x->end && ident_char(*x->p)) x->p++;
  }
  x->token = s;
  x->length = (size_t)(x->p - s);
  return true;
}

static bool is(const ptx_lexer *x, const char *word) {
  size_t n = strlen(word);
  return x->length == n && memcmp(x->token, word, n) == 0;
}

/* A number token's value; false if it is not a (decimal) number. */
static bool token_number(const ptx_lexer *x, uint64_t *v) {
  *v = 0;
  for (size_t i = 0; i < x->length; i++) {
    if (x->token[i] < '0' || x->token[i] > '9' || *v > UINT32_MAX) return false;
    *v = *v * 10 + (uint64_t)(x->token[i] - '0');
  }
  return x->length > 0;
}

/* The kind and size of a PTX fundamental type. nvcc declares every
 * integer parameter .u (int too) and pointers .u64, so .u tells no sign:
 * an integer that may hold an address. .b (bit-size) types take any value
 * of their size. */
static bool ptx_type(const ptx_lexer *x, kiln_param_kind *kind,
                     uint32_t *size) {
  static const struct {
    const char *name;
    kiln_param_kind kind;
    uint32_t size;
  } types[] = {
      {".b8", KILN_PARAM_BITS, 1},     {".b16", KILN_PARAM_BITS, 2},
      {".b32", KILN_PARAM_BITS, 4},    {".b64", KILN_PARAM_BITS, 8},
      {".b128", KILN_PARAM_BITS, 16},  {".u8", KILN_PARAM_INT, 1},
      {".u16", KILN_PARAM_INT, 2},     {".u32", KILN_PARAM_INT, 4},
      {".u64", KILN_PARAM_INT, 8},     {".s8", KILN_PARAM_SINT, 1},
      {".s16", KILN_PARAM_SINT, 2},    {".s32", KILN_PARAM_SINT, 4},
      {".s64", KILN_PARAM_SINT, 8},    {".f16", KILN_PARAM_FLOAT, 2},
      {".bf16", KILN_PARAM_FLOAT, 2},  {".f32", KILN_PARAM_FLOAT, 4},
      {".f64", KILN_PARAM_FLOAT, 8},   {".f16x2", KILN_PARAM_BITS, 4},
      {".bf16x2", KILN_PARAM_BITS, 4},
  };
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (is(x, types[i].name)) {
      *kind = types[i].kind;
      *size = types[i].size;
      return true;
    }
  return false;
}

/* One `.param` of an entry's list, the lexer on the token after ".param":
 * `.type [.ptr [.space] [.align N]] name` or `[.align N] .type name[N]`.
 * Leaves the lexer on the "," or ")" after it; false (list broken) on
 * anything else. */
static bool ptx_param(ptx_lexer *x, uint32_t at, kiln_param_info *out) {
  uint64_t align = 0, count = 1;
  uint32_t size = 0;
  kiln_param_kind kind = KILN_PARAM_BITS;
  bool typed = false, pointer = false;
  for (; x->length && x->token[0] == '.'; next_token(x)) {
    if (ptx_type(x, &kind, &size)) {
      if (typed) return false;
      typed = true;
    } else if (is(x, ".ptr")) {
      pointer = true;
    } else if (is(x, ".align")) {
      /* After .ptr it is the alignment of what the pointer points to
       * (LLVM writes `.ptr .global .align 1`): the parameter keeps its
       * own. */
      uint64_t n;
      if (!next_token(x) || !token_number(x, &n) || n == 0 || (n & (n - 1)))
        return false;
      if (!pointer) align = n;
    } else if (!is(x, ".global") && !is(x, ".const") && !is(x, ".local") &&
               !is(x, ".shared")) {
      return false; /* .texref, .samplerref, ... */
    }
  }
  if (!typed || !x->length || !ident_char(x->token[0]) || !next_token(x))
    return false;
  if (is(x, "[")) {
    if (!next_token(x) || !token_number(x, &count) || count == 0 ||
        !next_token(x) || !is(x, "]") || !next_token(x))
      return false;
  }
  if (!is(x, ",") && !is(x, ")")) return false;
  /* ptxas aligns to at least the element's size, whatever .align says. */
  if (align < size) align = size;
  uint64_t offset = (at + align - 1) & ~(align - 1);
  /* The list's end must fit the 32 bits the next offset is counted in. */
  if (count > UINT32_MAX / size || offset + size * count > UINT32_MAX)
    return false;
  out->offset = (uint32_t)offset;
  out->size = (uint32_t)(size * count);
  out->kind = pointer ? KILN_PARAM_POINTER : count > 1 ? KILN_PARAM_BITS : kind;
  return true;
}

/* The list after ".entry name", the lexer on the token after the name.
 * An entry without "(" has no parameters. False for lack of memory. */
static bool ptx_entry(ptx_lexer *x, param_list *l) {
  if (!is(x, "(")) return true;
  if (!next_token(x)) {
    l->broken = true;
    return true;
  }
  uint32_t at = 0;
  while (!is(x, ")")) {
    kiln_param_info info;
    if (!is(x, ".param") || !next_token(x) || !ptx_param(x, at, &info)) {
      l->broken = true;
      return true;
    }
    if (!list_push(l, info)) return false;
    at = info.offset + info.size;
    if (is(x, ",") && !next_token(x)) l->broken = true;
  }
  return true;
}

static kiln_status read_ptx(const char *text, size_t size,
                            kiln_param_table *t) {
  const char *nul = memchr(text, '\0', size);
  ptx_lexer x = {text, nul ? nul : text + size, NULL, 0};
  param_list l = {NULL, 0, 0, false};
  kiln_status st = KILN_OK;
  while (st == KILN_OK && next_token(&x)) {
    if (!is(&x, ".entry") || !next_token(&x) || !ident_char(x.token[0]))
      continue;
    const char *name = x.token;
    size_t name_length = x.length;
    l.count = 0;
    l.broken = false;
    if (!next_token(&x)) break;
    if (!ptx_entry(&x, &l) ||
        (!l.broken &&
         !kiln_param_table_add(t, name, name_length, l.items, l.count)))
      st = no_memory();
  }
  free(l.items);
  return st;
}

/* ---- Fatbins -------------------------------------------------------------- */

/* nvcc --fatbin output: a 16-byte header (magic, version, header size,
 * size of the entries), then entries of a header (kind: 1 PTX, 2 ELF; its
 * own size at 4; the payload's size at 8; flags at 40) and a payload,
 * compressed where the flags say so, which kiln does not read. */
enum {
  FATBIN_PTX = 1,
  FATBIN_ELF = 2,
  FATBIN_COMPRESSED = 0x2000 | 0x8000, /* LZ4 (CUDA 11+), Zstandard (12.8+) */
};

/* Also sets *plain when some entry is stored uncompressed (entries hold
 * one source's code for several GPUs, so one kiln can read tells whether
 * the source calls printf). */
static kiln_status read_fatbin(const unsigned char *data, size_t size,
                               kiln_param_table *t, bool *plain) {
  if (size < 16 || kiln_read_le(data, 4) != KILN_FATBIN_MAGIC) return KILN_OK;
  uint64_t at = kiln_read_le(data + 6, 2);
  uint64_t end = at + kiln_read_le(data + 8, 8);
  if (end > size || end < at) end = size;
  kiln_status st = KILN_OK;
  /* PTX first, for its kinds; a kernel's first list is the one kept. */
  for (int pass = 0; pass < 2 && st == KILN_OK; pass++) {
    for (uint64_t e = at; st == KILN_OK && kiln_within(e, 48, end);) {
      const unsigned char *h = data + e;
      uint64_t kind = kiln_read_le(h, 2), header = kiln_read_le(h + 4, 4);
      uint64_t payload = kiln_read_le(h + 8, 8);
      uint64_t flags = kiln_read_le(h + 40, 8);
      if (header < 48 || header > end - e || payload > end - e - header)
        break;
      const unsigned char *p = data + e + header;
      if (!(flags & FATBIN_COMPRESSED)) {
        *plain = true;
        if (pass == 0 && kind == FATBIN_PTX)
          st = read_ptx((const char *)p, (size_t)payload, t);
        else if (pass == 1 && kind == FATBIN_ELF)
          st = read_cubin(p, (size_t)payload, t);
      }
      e += header + payload;
    }
  }
  return st;
}

kiln_status kiln_params_read_cuda(kiln_image_format format, const void *data,
                                  size_t size, kiln_param_table *out) {
  memset(out, 0, sizeof *out);
  kiln_status st = KILN_OK;
  bool plain = false;
  if (format == KILN_IMAGE_PTX)
    st = read_ptx(data, size, out);
  else if (format == KILN_IMAGE_CUBIN)
    st = read_cubin(data, size, out);
  else if (format == KILN_IMAGE_FATBIN)
    st = read_fatbin(data, size, out, &plain);
  if (st != KILN_OK) {
    kiln_param_table_free(out);
    return st;
  }
  kiln_param_table_finish(out);
  /* A fatbin none of whose entries kiln can read may print. */
  out->may_printf = kiln_bytes_contain(data, size, "vprintf") ||
                    (format == KILN_IMAGE_FATBIN && !plain);
  return KILN_OK;
}
