/*
 * CUDA C++ compiled at run time by NVRTC. Like the driver, NVRTC is never
 * linked: it is dlopen'd when first asked for and its entry points resolved
 * into a table, so a build of kiln runs where the CUDA toolkit is missing
 * and says why it cannot compile. Past 600 lines: finding NVRTC and its
 * toolkit's headers, choosing the target and compiling all read the state
 * that loading writes once (the table, the version, the architectures,
 * the header directories); split, they would share it through a header
 * for this file alone. Its twins in backends/hip and backends/vulkan are
 * the same one job.
 *
 * Where NVRTC is looked for: KILN_NVRTC_LIBRARY alone when set; else the
 * newest soname first on the library search path, then in the directory of
 * the CUDA driver already loaded, $CUDA_PATH/lib64, $CUDA_HOME/lib64, the
 * toolkit kiln was built against (-Dcuda-path) and the usual toolkit
 * directories, which the search path seldom holds.
 *
 * How kiln's options become NVRTC's (documented in nvrtc.h, "Supported
 * Compile Options"):
 *   target sm_XX          -arch=sm_XX: a cubin, machine code for that arch
 *   target compute_XX     -arch=compute_XX: PTX, which the driver compiles
 *   defines, include dirs -D<def>, -I<dir>; in-memory headers go to
 *                         nvrtcCreateProgram, which searches them first
 *   KILN_OPTIMIZE_NONE    --device-debug (-G): NVRTC has no -O for its
 *                         front end; -G is its documented way to turn every
 *                         device optimisation off, and it adds debug info
 *   KILN_OPTIMIZE_SIZE    --ptxas-options=-O2 (ptxas is where NVRTC's code
 *   KILN_OPTIMIZE_SPEED   --ptxas-options=-O3  generation level is set; -O3
 *                         is its default, so SPEED equals DEFAULT; neither
 *                         matters for PTX, which the driver compiles)
 *   KILN_COMPILE_FAST_MATH --use_fast_math
 *   toolkit headers       -I<toolkit>/include and -I<toolkit>/include/cccl
 *                         (CUDA 13's CCCL: cuda/std, cub), after the
 *                         caller's directories, unless
 *                         KILN_COMPILE_NO_TOOLKIT_HEADERS
 *   the source's name     given to NVRTC under SOURCE_ROOT, a directory
 *                         that cannot exist: NVRTC searches the directory
 *                         of the source's name (the working directory for
 *                         "saxpy.cu"), which is not in the cache key, and
 *                         --no-source-include, which would stop that,
 *                         also stops a header's own directory from being
 *                         searched, which the toolkit's headers need; the
 *                         log gets the caller's name back
 * then options->cuda_options, verbatim. Each of options->name_expressions
 * goes to nvrtcAddNameExpression, and its lowered name comes back from
 * nvrtcGetLoweredName after the compile.
 *
 * The device's target: its own sm_XX (a cubin) when NVRTC knows it, else
 * PTX for the newest architecture NVRTC knows below it, which the driver
 * compiles on load; and nothing from an NVRTC of a newer major version
 * than the driver's, which would not load.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/common/common.h"
#include "backends/cuda/cuda.h"

/* ---- NVRTC's API, as kiln declares it ------------------------------------- */

/* The codes kiln tells apart, as nvrtc.h numbers them (stable since CUDA 7). */
typedef enum nvrtcResult {
  NVRTC_SUCCESS = 0,
  NVRTC_ERROR_OUT_OF_MEMORY = 1,
  NVRTC_ERROR_INVALID_OPTION = 5,
  NVRTC_ERROR_COMPILATION = 6,
} nvrtcResult;

typedef struct _nvrtcProgram *nvrtcProgram;

/* Every one of these must resolve. nvrtcGetCUBIN came with CUDA 11.1. */
#define KILN_NVRTC_SYMBOLS(X)                                                 \
  X(const char *, nvrtcGetErrorString, (nvrtcResult result))                  \
  X(nvrtcResult, nvrtcVersion, (int *major, int *minor))                      \
  X(nvrtcResult, nvrtcCreateProgram,                                          \
    (nvrtcProgram * program, const char *source, const char *name,            \
     int header_count, const char *const *headers,                            \
     const char *const *include_names))                                       \
  X(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram * program))               \
  X(nvrtcResult, nvrtcCompileProgram,                                         \
    (nvrtcProgram program, int option_count, const char *const *options))    \
  X(nvrtcResult, nvrtcGetProgramLogSize, (nvrtcProgram program, size_t *size)) \
  X(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram program, char *log))       \
  X(nvrtcResult, nvrtcAddNameExpression,                                      \
    (nvrtcProgram program, const char *name_expression))                      \
  X(nvrtcResult, nvrtcGetLoweredName,                                         \
    (nvrtcProgram program, const char *name_expression,                       \
     const char **lowered_name))                                              \
  X(nvrtcResult, nvrtcGetPTXSize, (nvrtcProgram program, size_t *size))       \
  X(nvrtcResult, nvrtcGetPTX, (nvrtcProgram program, char *ptx))              \
  X(nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram program, size_t *size))     \
  X(nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram program, char *cubin))

/* CUDA 11.2 and newer list the architectures they compile for. */
#define KILN_NVRTC_OPTIONAL_SYMBOLS(X)                  \
  X(nvrtcResult, nvrtcGetNumSupportedArchs, (int *count)) \
  X(nvrtcResult, nvrtcGetSupportedArchs, (int *archs))

typedef struct nvrtc_table {
#define KILN_NVRTC_FIELD(ret, name, params) ret(*name) params;
  KILN_NVRTC_SYMBOLS(KILN_NVRTC_FIELD)
  KILN_NVRTC_OPTIONAL_SYMBOLS(KILN_NVRTC_FIELD)
#undef KILN_NVRTC_FIELD
} nvrtc_table;

/* The end of every reason; the parts before it are bounded so that the
 * whole fits the core's 512-byte buffer. */
#define NVRTC_PACKAGE                                                        \
  "it comes with the CUDA toolkit (Debian: nvidia-cuda-toolkit; NVIDIA: "     \
  "cuda-nvrtc-13-0, or your version's); set KILN_NVRTC_LIBRARY to its path"

/* Written once by the first compiler_load that succeeds (under the core's
 * compiler lock) and read-only afterwards; a failed load leaves them as
 * they were, so the next call tries again. */
static nvrtc_table nvrtc;
static bool loaded;
static char description[1024];
/* The toolkit's include directory and its CCCL directory ("" where there
 * is none), and where kiln looked, for the note a failed compile gets. */
static char toolkit_include[PATH_MAX];
static char toolkit_cccl[PATH_MAX];
static char toolkit_searched[512];
static int nvrtc_major, nvrtc_minor;
/* The architectures NVRTC compiles for, ascending; none when it cannot
 * tell (then the device's own is asked for). */
static int archs[128];
static int arch_count;

/* ---- Loading -------------------------------------------------------------- */

/* Newest first: a machine with several toolkits compiles with the newest. */
static const char *const sonames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                      "libnvrtc.so.11"};
#define SONAME_COUNT (sizeof sonames / sizeof sonames[0])

/* Whether dir/name is a file kiln can read. */
static bool has_file(const char *dir, const char *name) {
  char path[PATH_MAX];
  return snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path &&
         access(path, R_OK) == 0;
}

/* The toolkit's headers, for sources that include cuda_fp16.h,
 * cooperative_groups.h or CCCL's: the include directory of the toolkit
 * the NVRTC in use came with (beside its library directory), else of
 * $CUDA_PATH, $CUDA_HOME, the toolkit kiln was built against and
 * /usr/local/cuda; the first that holds cuda_fp16.h. Never /usr/include,
 * whose C library headers NVRTC cannot compile. */
static bool listed(const char *list, const char *item);

static void find_toolkit_headers(const char *nvrtc_file) {
  char nvrtc_dir[PATH_MAX];
  kiln_strlcpy(nvrtc_dir, nvrtc_file, sizeof nvrtc_dir);
  char *slash = strrchr(nvrtc_dir, '/');
  if (slash) *slash = '\0';
  const char *const dirs[][2] = {
      {slash ? nvrtc_dir : NULL, "/../include"},
      {slash ? nvrtc_dir : NULL, "/../../include"},
      {kiln_getenv("CUDA_PATH"), "/include"},
      {kiln_getenv("CUDA_HOME"), "/include"},
#if defined(KILN_CUDA_TOOLKIT)
      {KILN_CUDA_TOOLKIT, "/include"},
#endif
      {"/usr/local/cuda/include", ""},
  };
  toolkit_include[0] = toolkit_cccl[0] = toolkit_searched[0] = '\0';
  for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
    char dir[PATH_MAX], real[PATH_MAX];
    if (!dirs[d][0] || !dirs[d][0][0] ||
        snprintf(dir, sizeof dir, "%s%s", dirs[d][0], dirs[d][1]) >=
            (int)sizeof dir)
      continue;
    const bool exists = kiln_real_directory(dir, real, sizeof real);
    const char *shown = exists ? real : dir;
    size_t used = strlen(toolkit_searched);
    if (!listed(toolkit_searched, shown) &&
        snprintf(toolkit_searched + used, sizeof toolkit_searched - used,
                 "%s%s", used ? ", " : "", shown) >=
            (int)(sizeof toolkit_searched - used))
      kiln_strlcpy(toolkit_searched + sizeof toolkit_searched - 4, "...", 4);
    if (!exists || !has_file(real, "cuda_fp16.h")) continue;
    kiln_strlcpy(toolkit_include, real, sizeof toolkit_include);
    if (snprintf(toolkit_cccl, sizeof toolkit_cccl, "%s/cccl", real) >=
            (int)sizeof toolkit_cccl ||
        !has_file(toolkit_cccl, "cuda/std/cstdint"))
      toolkit_cccl[0] = '\0';
    return;
  }
}

/* "NVRTC 13.0 (<path>); headers <dir> (cuda.h: <size> bytes, <mtime>)":
 * what changes the compiler's output, so that the cache key changes when
 * any of it does. The toolkit's headers are named by their directory and
 * the stamp of its cuda.h rather than read: hashing the ~1,400 files of
 * the directory would cost each cache hit milliseconds. */
static void describe(const char *file, int major, int minor) {
  int n = snprintf(description, sizeof description, "NVRTC %d.%d (%s)",
                   major, minor, file);
  struct stat st;
  char cuda_h[PATH_MAX];
  if (n > 0 && (size_t)n < sizeof description && toolkit_include[0] &&
      snprintf(cuda_h, sizeof cuda_h, "%s/cuda.h", toolkit_include) <
          (int)sizeof cuda_h &&
      stat(cuda_h, &st) == 0)
    n += snprintf(description + n, sizeof description - (size_t)n,
                  "; headers %s%s (cuda.h: %lld bytes, modified %lld)",
                  toolkit_include, toolkit_cccl[0] ? " and its cccl" : "",
                  (long long)st.st_size, (long long)st.st_mtime);
  if (n < 0 || (size_t)n >= sizeof description)
    kiln_log(KILN_LOG_DEBUG, "cuda: NVRTC's description is shortened");
}

/* NVRTC opens libnvrtc-builtins.so.X.Y by its soname when it compiles,
 * which finds only what the search path has; loaded beside an NVRTC found
 * in a directory first, the later open finds it loaded. */
static void preload_builtins(const char *file, int major, int minor) {
  char path[PATH_MAX];
  const char *slash = strrchr(file, '/');
  if (!slash ||
      snprintf(path, sizeof path, "%.*s/libnvrtc-builtins.so.%d.%d",
               (int)(slash - file), file, major, minor) >= (int)sizeof path ||
      !kiln_library_open(path, 0, NULL, 0))
    return;
  kiln_log(KILN_LOG_DEBUG, "cuda: loaded %s", path);
}

/* Opens `path` and resolves the table from it; false with the reason noted
 * in `why` when it is no NVRTC kiln can use. */
static bool open_nvrtc(const char *path, char *why, size_t why_size) {
  void *handle = kiln_library_open(path, 0, why, why_size);
  if (!handle) return false;
  nvrtc_table table;
  memset(&table, 0, sizeof table);
  void *sym = NULL, *first = NULL;
#define KILN_NVRTC_RESOLVE(ret, name, params)                 \
  if (!(sym = kiln_library_symbol(handle, #name, &table.name, \
                                  sizeof table.name))) {      \
    snprintf(why, why_size,                                   \
             "%s is not an NVRTC kiln can use: it lacks %s "  \
             "(NVRTC from CUDA 11.1 or newer is needed)",     \
             path, #name);                                    \
    dlclose(handle);                                          \
    return false;                                             \
  }                                                           \
  if (!first) first = sym;
  KILN_NVRTC_SYMBOLS(KILN_NVRTC_RESOLVE)
#undef KILN_NVRTC_RESOLVE
#define KILN_NVRTC_OPTIONAL(ret, name, params) \
  kiln_library_symbol(handle, #name, &table.name, sizeof table.name);
  KILN_NVRTC_OPTIONAL_SYMBOLS(KILN_NVRTC_OPTIONAL)
#undef KILN_NVRTC_OPTIONAL

  int major = 0, minor = 0;
  if (table.nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) {
    snprintf(why, why_size, "nvrtcVersion failed in %s", path);
    dlclose(handle);
    return false;
  }
  int count = 0;
  if (table.nvrtcGetNumSupportedArchs && table.nvrtcGetSupportedArchs &&
      table.nvrtcGetNumSupportedArchs(&count) == NVRTC_SUCCESS && count > 0 &&
      (size_t)count <= sizeof archs / sizeof archs[0] &&
      table.nvrtcGetSupportedArchs(archs) == NVRTC_SUCCESS)
    arch_count = count;
  else
    arch_count = 0;

  char file[PATH_MAX];
  kiln_dl_library_path(first, path, file, sizeof file);
  if (strchr(path, '/')) preload_builtins(file, major, minor);
  find_toolkit_headers(file);
  describe(file, major, minor);
  nvrtc = table;
  nvrtc_major = major;
  nvrtc_minor = minor;
  /* NVRTC stays loaded for the life of the process, as the driver does. */
  return true;
}

/* The directory of the CUDA driver if the process has one loaded (kiln's
 * own, KILN_CUDA_LIBRARY, or the application's): the toolkit that came
 * with it often sits beside it. RTLD_NOLOAD asks without loading it. */
static void driver_directory(char *out, size_t out_size) {
  const char *name = kiln_getenv("KILN_CUDA_LIBRARY");
  void *handle = dlopen(name ? name : "libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!handle) {
    dlerror();
    return;
  }
  void *sym = dlsym(handle, "cuInit");
  char path[PATH_MAX];
  bool found = sym != NULL;
  if (found) kiln_dl_library_path(sym, "", path, sizeof path);
  dlclose(handle);
  char *slash = found ? strrchr(path, '/') : NULL;
  if (!slash) return;
  *slash = '\0';
  kiln_strlcpy(out, path, out_size);
}

/* Whether `item` is one of the ", "-separated entries of `list`. */
static bool listed(const char *list, const char *item) {
  size_t n = strlen(item);
  for (const char *p = list; (p = strstr(p, item)) != NULL; p++)
    if ((p == list || (p >= list + 2 && p[-2] == ',' && p[-1] == ' ')) &&
        (p[n] == '\0' || p[n] == ','))
      return true;
  return false;
}

static kiln_status load_library(char *reason, size_t reason_size) {
  char why[512] = "";
  const char *chosen = kiln_getenv("KILN_NVRTC_LIBRARY");
  if (chosen) {
    if (open_nvrtc(chosen, why, sizeof why)) return KILN_OK;
    snprintf(reason, reason_size,
             "NVRTC could not be loaded from KILN_NVRTC_LIBRARY: %.280s; "
             NVRTC_PACKAGE, why);
    return KILN_ERROR_UNAVAILABLE;
  }
  for (size_t i = 0; i < SONAME_COUNT; i++)
    if (open_nvrtc(sonames[i], why, sizeof why)) return KILN_OK;

  /* The toolkit's own directories, which the search path seldom has. */
  char driver_dir[PATH_MAX] = "";
  driver_directory(driver_dir, sizeof driver_dir);
  const char *const dirs[][2] = {
      {driver_dir, ""},
      {kiln_getenv("CUDA_PATH"), "/lib64"},
      {kiln_getenv("CUDA_HOME"), "/lib64"},
#if defined(KILN_CUDA_TOOLKIT)
      {KILN_CUDA_TOOLKIT, "/lib64"},
#endif
      {"/usr/local/cuda/lib64", ""},
#if defined(__aarch64__)
      {"/usr/local/cuda/targets/sbsa-linux/lib", ""},
#else
      {"/usr/local/cuda/targets/x86_64-linux/lib", ""},
#endif
  };
  char looked[1024] = "";
  for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++) {
    char dir[PATH_MAX];
    if (!dirs[d][0] || !dirs[d][0][0] ||
        snprintf(dir, sizeof dir, "%s%s", dirs[d][0], dirs[d][1]) >=
            (int)sizeof dir ||
        listed(looked, dir))
      continue;
    size_t used = strlen(looked);
    if (snprintf(looked + used, sizeof looked - used, "%s%s",
                 used ? ", " : "", dir) >= (int)(sizeof looked - used))
      kiln_strlcpy(looked + sizeof looked - 4, "...", 4);
    for (size_t i = 0; i < SONAME_COUNT; i++) {
      char path[PATH_MAX];
      if (snprintf(path, sizeof path, "%s/%s", dir, sonames[i]) <
              (int)sizeof path &&
          access(path, F_OK) == 0 && open_nvrtc(path, why, sizeof why))
        return KILN_OK;
    }
  }
  snprintf(reason, reason_size,
           "NVRTC could not be loaded: none of libnvrtc.so.13, .12, .11 on "
           "the library search path or in %.110s (%.170s); " NVRTC_PACKAGE,
           looked, why[0] ? why : "not found");
  return KILN_ERROR_UNAVAILABLE;
}

kiln_status kiln_cuda_compiler_load(char *out_description,
                                    size_t description_size) {
  if (!loaded) {
    kiln_status st = load_library(out_description, description_size);
    if (st != KILN_OK) return st;
    loaded = true;
    kiln_log(KILN_LOG_DEBUG, "cuda: loaded %s", description);
  }
  kiln_strlcpy(out_description, description, description_size);
  return KILN_OK;
}

/* ---- Targets -------------------------------------------------------------- */

/* Whether `target` is sm_XX (cubin) or compute_XX (PTX), with NVRTC's
 * optional a/f suffix; sets *format. */
static bool parse_target(const char *target, kiln_image_format *format) {
  const char *digits;
  if (strncmp(target, "sm_", 3) == 0) {
    *format = KILN_IMAGE_CUBIN;
    digits = target + 3;
  } else if (strncmp(target, "compute_", 8) == 0) {
    *format = KILN_IMAGE_PTX;
    digits = target + 8;
  } else {
    return false;
  }
  size_t n = strspn(digits, "0123456789");
  return n > 0 && n <= 4 &&
         (digits[n] == '\0' ||
          ((digits[n] == 'a' || digits[n] == 'f') && digits[n + 1] == '\0'));
}

kiln_status kiln_cuda_compile_target(const kiln_context *ctx, char *target,
                                     size_t target_size) {
  const char *arch = ctx->properties.architecture;
  int device = 0;
  if (sscanf(arch, "sm_%d", &device) != 1 || device <= 0)
    return kiln_set_error(KILN_ERROR_BACKEND,
                          "cuda: the device's architecture \"%s\" is not "
                          "sm_XX",
                          arch);
  /* CUDA's compatibility holds within a major version: code from a newer
   * major NVRTC than the driver's does not load. The driver is loaded
   * (there is a context), so its version is known. */
  int driver = kiln_cuda_api.driver_version;
  if (driver > 0 && nvrtc_major > driver / 1000)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "cuda: %s is from CUDA %d.%d, newer than the CUDA "
                          "%d.%d driver, which would not load its code; "
                          "update the NVIDIA driver or point "
                          "KILN_NVRTC_LIBRARY at libnvrtc.so.%d",
                          description, nvrtc_major, nvrtc_minor,
                          driver / 1000, driver % 1000 / 10, driver / 1000);
  if (arch_count == 0) {
    snprintf(target, target_size, "sm_%d", device);
    return KILN_OK;
  }
  /* Machine code when NVRTC knows the device, else PTX for the newest
   * architecture it knows below it, which the driver compiles on load. */
  int best = 0;
  for (int i = 0; i < arch_count; i++) {
    if (archs[i] == device) {
      snprintf(target, target_size, "sm_%d", device);
      return KILN_OK;
    }
    if (archs[i] < device && archs[i] > best) best = archs[i];
  }
  if (best == 0)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "cuda: %s compiles for sm_%d and newer, and the "
                          "device is %s; point KILN_NVRTC_LIBRARY at an "
                          "older NVRTC that still supports it",
                          description, archs[0], arch);
  snprintf(target, target_size, "compute_%d", best);
  return KILN_OK;
}

/* ---- Compiling ------------------------------------------------------------ */

static void build_options(const kiln_compile_job *job, kiln_option_list *l) {
  const kiln_compile_options *o = job->options;
  kiln_option_add(l, "-arch=", job->target);
  for (size_t i = 0; i < o->define_count; i++)
    kiln_option_add(l, "-D", o->defines[i]);
  for (size_t i = 0; i < o->include_dir_count; i++)
    kiln_option_add(l, "-I", o->include_dirs[i]);
  if (!(o->flags & KILN_COMPILE_NO_TOOLKIT_HEADERS) && toolkit_include[0]) {
    kiln_option_add(l, "-I", toolkit_include);
    if (toolkit_cccl[0]) kiln_option_add(l, "-I", toolkit_cccl);
  }
  switch (o->optimization) {
  case KILN_OPTIMIZE_DEFAULT: break;
  case KILN_OPTIMIZE_NONE: kiln_option_add(l, "--device-debug", ""); break;
  case KILN_OPTIMIZE_SIZE:
    kiln_option_add(l, "--ptxas-options=-O2", "");
    break;
  case KILN_OPTIMIZE_SPEED:
    kiln_option_add(l, "--ptxas-options=-O3", "");
    break;
  }
  if (o->flags & KILN_COMPILE_FAST_MATH)
    kiln_option_add(l, "--use_fast_math", "");
  for (size_t i = 0; i < o->cuda_option_count; i++)
    kiln_option_add(l, "", o->cuda_options[i]);
}

/* The program's log, malloc'd; NULL when NVRTC said nothing (its size
 * counts the terminating NUL) or memory ran out. */
static char *take_log(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtc.nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS ||
      size <= 1)
    return NULL;
  char *log = malloc(size);
  if (log && nvrtc.nvrtcGetProgramLog(program, log) != NVRTC_SUCCESS) {
    free(log);
    return NULL;
  }
  if (log) log[size - 1] = '\0';
  return log;
}

static kiln_status nvrtc_error(nvrtcResult r, const char *what,
                               const kiln_compile_job *job) {
  if (r == NVRTC_ERROR_OUT_OF_MEMORY)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "NVRTC ran out of memory in %s (compiling %s)",
                          what, job->name);
  const char *name = nvrtc.nvrtcGetErrorString(r);
  return kiln_set_error(KILN_ERROR_BACKEND, "%s failed for %s: %s", what,
                        job->name, name ? name : "unknown NVRTC error");
}

/* Copies the compiled image out of `program` into *out. */
static kiln_status take_image(nvrtcProgram program,
                              const kiln_compile_job *job,
                              kiln_image_format format, kiln_compiled *out) {
  bool cubin = format == KILN_IMAGE_CUBIN;
  size_t size = 0;
  nvrtcResult r = cubin ? nvrtc.nvrtcGetCUBINSize(program, &size)
                        : nvrtc.nvrtcGetPTXSize(program, &size);
  if (r != NVRTC_SUCCESS)
    return nvrtc_error(r, cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize",
                       job);
  if (size == 0)
    return kiln_set_error(KILN_ERROR_BACKEND,
                          "NVRTC produced no %s for %s (target %s)",
                          cubin ? "cubin" : "PTX", job->name, job->target);
  char *image = malloc(size);
  if (!image)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "cuda: no memory for the %zu-byte image of %s", size,
                          job->name);
  r = cubin ? nvrtc.nvrtcGetCUBIN(program, image)
            : nvrtc.nvrtcGetPTX(program, image);
  if (r != NVRTC_SUCCESS) {
    free(image);
    return nvrtc_error(r, cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX", job);
  }
  /* PTX's size counts its NUL, which the driver wants. */
  out->format = format;
  out->image = image;
  out->image_size = size;
  return KILN_OK;
}

/* NVRTC's lowered name of a name expression (kiln_take_lowered_names). */
static bool lowered_name(void *program, const char *expression,
                         const char **out, const char **why) {
  nvrtcResult r = nvrtc.nvrtcGetLoweredName(program, expression, out);
  if (r != NVRTC_SUCCESS) *why = nvrtc.nvrtcGetErrorString(r);
  return r == NVRTC_SUCCESS;
}

/* Where the source's name is put for NVRTC (see the top of this file):
 * /proc takes no new directories, so nothing can be found there. */
#define SOURCE_ROOT "/proc/kiln-nvrtc-source"

/* The log with each SOURCE_ROOT-ed name given back as the caller's. */
static void restore_names(char *log, const char *shown, const char *name) {
  const size_t shown_len = strlen(shown), name_len = strlen(name);
  for (char *p = log; log && (p = strstr(p, shown)) != NULL; p += name_len) {
    memmove(p + name_len, p + shown_len, strlen(p + shown_len) + 1);
    memcpy(p, name, name_len);
  }
}

/* A failed compile's log, with a last line saying that no toolkit headers
 * were found and where kiln looked: an #include of cuda_fp16.h then fails
 * for that reason. */
static char *note_no_toolkit(char *log) {
  static const char note[] =
      "\nkiln: no CUDA toolkit include directory was found (none of %s "
      "holds cuda_fp16.h), so the toolkit's headers cannot be included; set "
      "CUDA_PATH to the toolkit\n";
  size_t have = log ? strlen(log) : 0;
  size_t size = have + sizeof note + strlen(toolkit_searched);
  char *more = realloc(log, size);
  if (!more) return log;
  snprintf(more + have, size - have, note, toolkit_searched);
  return more;
}

kiln_status kiln_cuda_compile(const kiln_compile_job *job,
                              kiln_compiled *out) {
  kiln_image_format format;
  if (!parse_target(job->target, &format))
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "cuda: \"%s\" is not a CUDA target: give sm_XX for "
                          "a cubin or compute_XX for PTX (e.g. sm_90, "
                          "compute_90)",
                          job->target);
  const kiln_compile_options *o = job->options;
  kiln_option_list options = {0};
  build_options(job, &options);
  const char **header_texts =
      o->header_count ? calloc(o->header_count, sizeof *header_texts) : NULL;
  const char **header_names =
      o->header_count ? calloc(o->header_count, sizeof *header_names) : NULL;
  if (options.failed || options.count > INT_MAX || o->header_count > INT_MAX ||
      (o->header_count && (!header_texts || !header_names))) {
    kiln_option_list_free(&options);
    free(header_texts);
    free(header_names);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "cuda: no memory for the options of %s", job->name);
  }
  for (size_t i = 0; i < o->header_count; i++) {
    header_texts[i] = o->headers[i].text;
    header_names[i] = o->headers[i].name;
  }

  char shown[PATH_MAX + 64];
  if (snprintf(shown, sizeof shown, "%s%s%s", SOURCE_ROOT,
               job->name[0] == '/' ? "" : "/", job->name) >= (int)sizeof shown)
    kiln_strlcpy(shown, job->name, sizeof shown);
  nvrtcProgram program = NULL;
  kiln_status st = KILN_OK;
  nvrtcResult r = nvrtc.nvrtcCreateProgram(&program, job->text, shown,
                                           (int)o->header_count, header_texts,
                                           header_names);
  free(header_texts);
  free(header_names);
  if (r != NVRTC_SUCCESS) {
    kiln_option_list_free(&options);
    return nvrtc_error(r, "nvrtcCreateProgram", job);
  }
  for (size_t i = 0; i < o->name_expression_count; i++)
    if ((r = nvrtc.nvrtcAddNameExpression(program, o->name_expressions[i])) !=
        NVRTC_SUCCESS) {
      kiln_option_list_free(&options);
      nvrtc.nvrtcDestroyProgram(&program);
      return nvrtc_error(r, "nvrtcAddNameExpression", job);
    }
  r = nvrtc.nvrtcCompileProgram(program, (int)options.count,
                                (const char *const *)options.items);
  kiln_option_list_free(&options);
  char *log = take_log(program);
  restore_names(log, shown, job->name);
  const char *said = log ? log : "(NVRTC gave no log)";
  if (r == NVRTC_ERROR_COMPILATION)
    st = kiln_set_error(KILN_ERROR_COMPILE,
                        "NVRTC could not compile %s for %s: %.*s", job->name,
                        job->target, kiln_log_head(said), said);
  else if (r == NVRTC_ERROR_INVALID_OPTION)
    st = kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "NVRTC rejected an option compiling %s for %s: %.*s",
                        job->name, job->target, kiln_log_head(said), said);
  else if (r == NVRTC_ERROR_OUT_OF_MEMORY)
    st = nvrtc_error(r, "nvrtcCompileProgram", job);
  else if (r != NVRTC_SUCCESS)
    st = kiln_set_error(KILN_ERROR_BACKEND,
                        "nvrtcCompileProgram failed for %s: %s: %.*s",
                        job->name, nvrtc.nvrtcGetErrorString(r),
                        kiln_log_head(said), said);
  else if ((st = take_image(program, job, format, out)) == KILN_OK)
    st = kiln_take_lowered_names(job, "NVRTC", lowered_name, program, out);
  nvrtc.nvrtcDestroyProgram(&program);
  if (st == KILN_ERROR_COMPILE && !toolkit_include[0] &&
      !(o->flags & KILN_COMPILE_NO_TOOLKIT_HEADERS))
    log = note_no_toolkit(log);
  out->log = log;
  return st;
}
