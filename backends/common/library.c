/* Entry points of libraries opened at run time: see common.h. */
#include <dlfcn.h>
#include <string.h>

#include "backends/common/common.h"

void *kiln_library_symbol(void *library, const char *name, void *out_fn,
                          size_t fn_size) {
  void *sym = dlsym(library, name);
  memcpy(out_fn, &sym, fn_size);
  return sym;
}
