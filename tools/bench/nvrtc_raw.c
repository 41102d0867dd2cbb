/* The raw NVRTC comparator: libnvrtc loaded and called directly. It
 * declares the few NVRTC types it needs instead of including nvrtc.h, so
 * kiln-bench builds without a CUDA toolkit and finds NVRTC at run time, as
 * kiln does. */
#include "nvrtc_raw.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvrtcResult; /* NVRTC_SUCCESS is 0 */
typedef struct _nvrtcProgram *nvrtcProgram;

/* The entry points used. */
typedef struct nvrtc_api {
  const char *(*GetErrorString)(nvrtcResult);
  nvrtcResult (*Version)(int *, int *);
  nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *,
                               int, const char *const *, const char *const *);
  nvrtcResult (*DestroyProgram)(nvrtcProgram *);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
} nvrtc_api;

static const struct {
  const char *name;
  size_t offset;
} nvrtc_symbols[] = {
#define NVRTC_SYMBOL(field) {"nvrtc" #field, offsetof(nvrtc_api, field)}
    NVRTC_SYMBOL(GetErrorString),    NVRTC_SYMBOL(Version),
    NVRTC_SYMBOL(CreateProgram),     NVRTC_SYMBOL(DestroyProgram),
    NVRTC_SYMBOL(CompileProgram),    NVRTC_SYMBOL(GetCUBINSize),
    NVRTC_SYMBOL(GetCUBIN),          NVRTC_SYMBOL(GetProgramLogSize),
    NVRTC_SYMBOL(GetProgramLog),
#undef NVRTC_SYMBOL
};

/* Where NVRTC is looked for when KILN_NVRTC_LIBRARY is not set: the
 * sonames of CUDA 13 and 12, then the toolkit's default place. */
static const char *const nvrtc_paths[] = {
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "/usr/local/cuda/lib64/libnvrtc.so.13",
    "/usr/local/cuda/lib64/libnvrtc.so.12",
};

struct nvrtc_raw {
  void *library;
  nvrtc_api api;
  char description[320];
};

/* Prints a failed NVRTC call with NVRTC's string for the error. */
static int nvrtc_failed(const nvrtc_raw *n, const char *call,
                        nvrtcResult result) {
  const char *text = n->api.GetErrorString(result);
  fprintf(stderr, "kiln-bench: raw NVRTC: %s failed: %s (%d)\n", call,
          text != NULL ? text : "unknown nvrtcResult", result);
  return -1;
}

/* Binds every entry point of the library loaded at `path`. */
static int bind_symbols(nvrtc_raw *n, const char *path, char *why,
                        size_t why_size) {
  for (size_t i = 0; i < sizeof nvrtc_symbols / sizeof nvrtc_symbols[0];
       i++) {
    void *symbol = dlsym(n->library, nvrtc_symbols[i].name);
    if (symbol == NULL) {
      snprintf(why, why_size, "%s has no %s (NVRTC too old)", path,
               nvrtc_symbols[i].name);
      return -1;
    }
    /* A data pointer into a function-pointer slot: memcpy, as ISO C has
     * no conversion between the two. */
    memcpy((char *)&n->api + nvrtc_symbols[i].offset, &symbol,
           sizeof symbol);
  }
  return 0;
}

nvrtc_raw *nvrtc_raw_open(char *why, size_t why_size) {
  nvrtc_raw *n = calloc(1, sizeof *n);
  if (n == NULL) {
    snprintf(why, why_size, "out of host memory");
    return NULL;
  }
  const char *path = getenv("KILN_NVRTC_LIBRARY");
  if (path != NULL && path[0] != '\0') {
    n->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (n->library == NULL)
      snprintf(why, why_size, "KILN_NVRTC_LIBRARY=%s cannot be loaded: %s",
               path, dlerror());
  } else {
    for (size_t i = 0; i < sizeof nvrtc_paths / sizeof nvrtc_paths[0] &&
                       n->library == NULL;
         i++) {
      path = nvrtc_paths[i];
      n->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (n->library == NULL)
      snprintf(why, why_size,
               "no NVRTC library (libnvrtc.so.13 or .12, on the library "
               "path or in /usr/local/cuda/lib64; KILN_NVRTC_LIBRARY names "
               "one)");
  }
  if (n->library == NULL || bind_symbols(n, path, why, why_size) != 0) {
    nvrtc_raw_close(n);
    return NULL;
  }
  int major = 0, minor = 0;
  n->api.Version(&major, &minor);
  snprintf(n->description, sizeof n->description, "NVRTC %d.%d (%s)", major,
           minor, path);
  return n;
}

void nvrtc_raw_close(nvrtc_raw *n) {
  if (n == NULL) return;
  /* Drops kiln-bench's reference only: kiln's CUDA backend holds its own
   * when it loaded the same library. */
  if (n->library != NULL) dlclose(n->library);
  free(n);
}

const char *nvrtc_raw_description(const nvrtc_raw *n) {
  return n->description;
}

/* Prints the program's log after a failed compile. */
static void print_log(const nvrtc_raw *n, nvrtcProgram program) {
  size_t size = 0;
  if (n->api.GetProgramLogSize(program, &size) != 0 || size <= 1) return;
  char *log = malloc(size);
  if (log != NULL && n->api.GetProgramLog(program, log) == 0)
    fprintf(stderr, "%s\n", log);
  free(log);
}

int nvrtc_raw_compile(nvrtc_raw *n, const char *text, const char *name,
                      const char *const *options, int option_count,
                      void **out_cubin, size_t *out_size) {
  nvrtcProgram program = NULL;
  nvrtcResult result =
      n->api.CreateProgram(&program, text, name, 0, NULL, NULL);
  if (result != 0) return nvrtc_failed(n, "nvrtcCreateProgram", result);
  char *cubin = NULL;
  size_t size = 0;
  int status = -1;
  if ((result = n->api.CompileProgram(program, option_count, options)) != 0) {
    nvrtc_failed(n, "nvrtcCompileProgram", result);
    print_log(n, program);
  } else if ((result = n->api.GetCUBINSize(program, &size)) != 0) {
    nvrtc_failed(n, "nvrtcGetCUBINSize", result);
  } else if (size == 0) {
    /* A virtual architecture (compute_XY) gives PTX, no CUBIN. */
    fprintf(stderr, "kiln-bench: raw NVRTC: no CUBIN for %s: the options "
                    "name no real architecture\n", name);
  } else if ((cubin = malloc(size)) == NULL) {
    fprintf(stderr, "kiln-bench: out of host memory\n");
  } else if ((result = n->api.GetCUBIN(program, cubin)) != 0) {
    nvrtc_failed(n, "nvrtcGetCUBIN", result);
  } else {
    status = 0;
  }
  n->api.DestroyProgram(&program);
  if (status != 0) {
    free(cubin);
    return -1;
  }
  *out_cubin = cubin;
  *out_size = size;
  return 0;
}
