/* Opens the HIP runtime at run time and resolves the entry points listed in
 * symbols.h, so one build of kiln runs with or without ROCm installed. */
#include <stdio.h>
#include <string.h>

#include "backends/common/common.h"
#include "backends/hip/hip.h"

kiln_hip_api_table kiln_hip_api;

/* A library stays open for the life of the process once opened, even one
 * kiln then rejects: a HIP runtime's static constructors have started
 * threads and registered exit handlers, and unloading it under them is not
 * safe. */
static void *library;
static char library_name[4096];

static const char *const default_names[] = {KILN_HIP_RUNTIME_NAMES};

static void *open_library(const char **out_name, char *reason,
                          size_t reason_size) {
  const char *chosen = kiln_getenv("KILN_HIP_LIBRARY");
  if (chosen) {
    char why[512] = "";
    void *handle = kiln_library_open(chosen, 0, why, sizeof why);
    if (!handle) {
      snprintf(reason, reason_size,
               "cannot load the HIP runtime %s named by KILN_HIP_LIBRARY: %s",
               chosen, why[0] ? why : "unknown dlopen error");
      return NULL;
    }
    *out_name = chosen;
    return handle;
  }
  char first_error[256] = "";
  for (size_t i = 0; i < sizeof default_names / sizeof default_names[0];
       i++) {
    void *handle =
        kiln_library_open(default_names[i], 0, first_error, sizeof first_error);
    if (handle) {
      *out_name = default_names[i];
      return handle;
    }
  }
  snprintf(reason, reason_size,
           "the HIP runtime is not installed: none of libamdhip64.so.6, "
           "libamdhip64.so.5, libamdhip64.so could be loaded (%s); set "
           "KILN_HIP_LIBRARY to name it",
           first_error[0] ? first_error : "not found");
  return NULL;
}

kiln_status kiln_hip_load(char *reason, size_t reason_size,
                          const char **out_library) {
  if (library) {
    /* A probe after one that failed on this runtime (no device), because
     * KILN_HIP_LIBRARY changed: say why the new one is not tried rather
     * than probe the old one again under the new name. */
    const char *chosen = kiln_getenv("KILN_HIP_LIBRARY");
    if (chosen && strcmp(chosen, library_name) != 0) {
      snprintf(reason, reason_size,
               "KILN_HIP_LIBRARY names %s, but this process already loaded "
               "the HIP runtime %s, which cannot be unloaded: set "
               "KILN_HIP_LIBRARY before kiln first looks for HIP",
               chosen, library_name);
      return KILN_ERROR_UNAVAILABLE;
    }
    *out_library = library_name;
    return KILN_OK;
  }
  const char *name = NULL;
  void *handle = open_library(&name, reason, reason_size);
  if (!handle) return KILN_ERROR_UNAVAILABLE;

  kiln_hip_api_table api;
  memset(&api, 0, sizeof api);
#define KILN_HIP_X(ret, sym_name, params)                                   \
  if (!kiln_library_symbol(handle, #sym_name, &api.sym_name,                \
                           sizeof api.sym_name)) {                          \
    snprintf(reason, reason_size,                                           \
             "%s is not a HIP runtime kiln can use: it lacks %s (not HIP, " \
             "or older than ROCm 5.0)",                                     \
             name, #sym_name);                                              \
    return KILN_ERROR_UNAVAILABLE;                                          \
  }
  KILN_HIP_SYMBOLS(KILN_HIP_X)
#undef KILN_HIP_X
#define KILN_HIP_X(ret, sym_name, params) \
  kiln_library_symbol(handle, #sym_name, &api.sym_name, sizeof api.sym_name);
  KILN_HIP_OPTIONAL_SYMBOLS(KILN_HIP_X)
#undef KILN_HIP_X

  kiln_hip_api = api;
  library = handle;
  kiln_strlcpy(library_name, name, sizeof library_name);
  *out_library = library_name;
  kiln_log(KILN_LOG_DEBUG, "hip: loaded %s", name);
  return KILN_OK;
}
