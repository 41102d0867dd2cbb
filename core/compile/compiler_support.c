/* What the three backends' compilers (NVRTC, HIPRTC, shaderc) share: finding
 * the library they loaded, keeping the most telling dlopen error, building
 * an option list, and trimming a log for a message. */
#define _GNU_SOURCE /* dladdr: the file a soname resolved to */
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/backend.h"

void kiln_dl_note_error(char *why, size_t why_size, const char *error) {
  if (!error) return;
  /* A library that exists but cannot be loaded says more than one that is
   * not there. */
  if (!why[0] ||
      (strstr(why, "No such file") && !strstr(error, "No such file")))
    kiln_strlcpy(why, error, why_size);
}

void kiln_dl_library_path(const void *symbol, const char *fallback,
                          char *out, size_t out_size) {
  Dl_info info;
  char resolved[PATH_MAX];
  const char *path = fallback;
  if (dladdr(symbol, &info) && info.dli_fname && info.dli_fname[0])
    path = info.dli_fname;
  if (realpath(path, resolved)) path = resolved;
  kiln_strlcpy(out, path, out_size);
}

bool kiln_real_directory(const char *path, char *out, size_t out_size) {
  char resolved[PATH_MAX];
  struct stat st;
  if (!realpath(path, resolved) || stat(resolved, &st) != 0 ||
      !S_ISDIR(st.st_mode) || strlen(resolved) >= out_size)
    return false;
  kiln_strlcpy(out, resolved, out_size);
  return true;
}

kiln_status kiln_take_lowered_names(const kiln_compile_job *job,
                                    const char *compiler,
                                    kiln_lowered_name_fn lowered,
                                    void *program, kiln_compiled *out) {
  const kiln_compile_options *o = job->options;
  if (!o->name_expression_count) return KILN_OK;
  out->names = calloc(o->name_expression_count, sizeof *out->names);
  if (!out->names)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: no memory for the names of %s", compiler,
                          job->name);
  for (size_t i = 0; i < o->name_expression_count; i++) {
    const char *name = NULL, *why = "none";
    if (!lowered(program, o->name_expressions[i], &name, &why) || !name)
      return kiln_set_error(KILN_ERROR_COMPILE,
                            "%s gave no lowered name for the name expression "
                            "\"%s\" compiling %s: %s (is it a __global__ "
                            "function of the source, with its template "
                            "arguments?)",
                            compiler, o->name_expressions[i], job->name, why);
    kiln_name_pair *n = &out->names[out->name_count++];
    n->expression = strdup(o->name_expressions[i]);
    n->lowered = strdup(name);
    if (!n->expression || !n->lowered)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "%s: no memory for the names of %s", compiler,
                            job->name);
  }
  return KILN_OK;
}

void kiln_option_add(kiln_option_list *l, const char *prefix,
                     const char *value) {
  if (l->failed) return;
  if (l->count == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    char **items = realloc(l->items, cap * sizeof *items);
    if (!items) {
      l->failed = true;
      return;
    }
    l->items = items;
    l->cap = cap;
  }
  size_t a = strlen(prefix), b = strlen(value);
  char *item = malloc(a + b + 1);
  if (!item) {
    l->failed = true;
    return;
  }
  memcpy(item, prefix, a);
  memcpy(item + a, value, b + 1);
  l->items[l->count++] = item;
}

void kiln_option_list_free(kiln_option_list *l) {
  for (size_t i = 0; i < l->count; i++) free(l->items[i]);
  free(l->items);
  l->items = NULL;
  l->count = l->cap = 0;
}

int kiln_log_head(const char *log) {
  size_t n = strlen(log);
  while (n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' ')) n--;
  return n > KILN_LOG_HEAD_MAX ? KILN_LOG_HEAD_MAX : (int)n;
}
