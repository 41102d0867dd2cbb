/* Libraries opened at run time, and their entry points: see common.h. */
#include <dlfcn.h>
#include <string.h>

#include "backends/common/common.h"

void *kiln_library_open(const char *path, int extra_flags, char *why,
                        size_t why_size) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL | extra_flags);
  if (!handle) {
    const char *error = dlerror();
    if (why) kiln_dl_note_error(why, why_size, error);
  }
  return handle;
}

void *kiln_library_symbol(void *library, const char *name, void *out_fn,
                          size_t fn_size) {
  void *sym = dlsym(library, name);
  memcpy(out_fn, &sym, fn_size);
  return sym;
}
