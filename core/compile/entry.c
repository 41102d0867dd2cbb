/* A compiled image's entry in the disk cache (core/compile/cache.c keeps
 * the files): the image, the compiler's log and the lowered names of the
 * caller's name expressions, so that a cache hit gives all that a compile
 * gives. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Four little-endian u64: the format, the image's, the log's and the
 * names' sizes; then the image, the log, and each name pair as two
 * NUL-terminated strings, expression then lowered name. */
#define ENTRY_HEADER 32

/* Here, with the entries that hold name pairs, rather than in compile.c:
 * core/api/module.c frees a module's pairs too, and compile.c calls into
 * module.c, so a definition there would tie the two in a circle. */
void kiln_name_pairs_free(kiln_name_pair *names, size_t count) {
  for (size_t i = 0; i < count; i++) {
    free(names[i].expression);
    free(names[i].lowered);
  }
  free(names);
}

void kiln_entry_store(const kiln_hash *key, const kiln_compiled *c) {
  size_t log_size = c->log ? strlen(c->log) : 0, names_size = 0;
  for (size_t i = 0; i < c->name_count; i++)
    names_size += strlen(c->names[i].expression) + 1 +
                  strlen(c->names[i].lowered) + 1;
  size_t size = ENTRY_HEADER + c->image_size + log_size + names_size;
  unsigned char *entry = malloc(size);
  if (!entry) return;
  kiln_write_le(entry, (uint64_t)c->format, 8);
  kiln_write_le(entry + 8, c->image_size, 8);
  kiln_write_le(entry + 16, log_size, 8);
  kiln_write_le(entry + 24, names_size, 8);
  memcpy(entry + ENTRY_HEADER, c->image, c->image_size);
  if (log_size) memcpy(entry + ENTRY_HEADER + c->image_size, c->log, log_size);
  unsigned char *at = entry + ENTRY_HEADER + c->image_size + log_size;
  for (size_t i = 0; i < c->name_count; i++) {
    size_t e = strlen(c->names[i].expression) + 1,
           l = strlen(c->names[i].lowered) + 1;
    memcpy(at, c->names[i].expression, e);
    memcpy(at + e, c->names[i].lowered, l);
    at += e + l;
  }
  kiln_cache_store("image", key, entry, size);
  free(entry);
}

/* The name pairs of an entry's last `size` bytes into out->names; false
 * for anything but whole pairs of NUL-terminated strings. */
static bool decode_names(const unsigned char *p, size_t size,
                         kiln_compiled *out) {
  size_t count = 0;
  for (size_t i = 0; i < size; i++) count += p[i] == '\0';
  if (size && (count % 2 || p[size - 1] != '\0')) return false;
  out->name_count = 0;
  out->names = count ? calloc(count / 2, sizeof *out->names) : NULL;
  if (count && !out->names) return false;
  const char *at = (const char *)p;
  for (size_t i = 0; i < count / 2; i++) {
    kiln_name_pair *n = &out->names[i];
    n->expression = strdup(at);
    at += strlen(at) + 1;
    n->lowered = strdup(at);
    at += strlen(at) + 1;
    out->name_count++;
    if (!n->expression || !n->lowered) return false;
  }
  return true;
}

bool kiln_entry_load(const kiln_backend_ops *ops, const kiln_hash *key,
                     kiln_compiled *out) {
  void *data;
  size_t size;
  if (!kiln_cache_load("image", key, &data, &size)) return false;
  const unsigned char *p = data;
  bool ok = size >= ENTRY_HEADER;
  uint64_t format = ok ? kiln_read_le(p, 8) : 0,
           image = ok ? kiln_read_le(p + 8, 8) : 0,
           log = ok ? kiln_read_le(p + 16, 8) : 0,
           names = ok ? kiln_read_le(p + 24, 8) : 0;
  ok = ok && format < 32 && (ops->image_formats & (1u << format)) &&
       image > 0 && image <= size - ENTRY_HEADER &&
       log <= size - ENTRY_HEADER - image &&
       names == size - ENTRY_HEADER - image - log &&
       decode_names(p + ENTRY_HEADER + image + log, (size_t)names, out);
  if (ok) {
    out->format = (kiln_image_format)format;
    out->image_size = (size_t)image;
    out->image = malloc(out->image_size);
    out->log = log ? malloc((size_t)log + 1) : NULL;
    ok = out->image && (!log || out->log);
    if (ok) {
      memcpy(out->image, p + ENTRY_HEADER, out->image_size);
      if (log) {
        memcpy(out->log, p + ENTRY_HEADER + image, (size_t)log);
        out->log[log] = '\0';
      }
    } else {
      free(out->image);
      free(out->log);
    }
  }
  if (!ok) {
    kiln_name_pairs_free(out->names, out->name_count);
    out->names = NULL;
    out->name_count = 0;
    kiln_log(KILN_LOG_DEBUG, "compile: a cache entry did not decode");
  }
  free(data);
  return ok;
}

