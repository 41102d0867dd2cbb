/*
 * HIP C++, and CUDA C++, compiled at run time by HIPRTC. Like the runtime,
 * HIPRTC is never linked: it is dlopen'd when first asked for and its entry
 * points resolved into a table. Past 600 lines for the reason its CUDA twin
 * gives: loading, the targets and the compile share the state loading
 * writes once.
 *
 * Where HIPRTC is looked for: KILN_HIPRTC_LIBRARY alone when set; else
 * libhiprtc.so.6, .so.5 and .so (ROCm 5.3 on ship it on its own); else the
 * HIP runtime (KILN_HIP_LIBRARY, else libamdhip64.so.6 and .so.5, the one
 * the process already has first), which carried HIPRTC in ROCm 5 (Debian
 * 12's HIP 5.2 still does).
 *
 * How kiln's options become HIPRTC's (clang's):
 *   target gfxNNN[:feature+-]   --offload-arch=<target>; a code object
 *   defines, include dirs       -D<def>, -I<dir>; in-memory headers go to
 *                               hiprtcCreateProgram, searched first
 *   KILN_OPTIMIZE_NONE/SIZE/SPEED   -O0 / -O2 / -O3 (default: HIPRTC's -O3)
 *   KILN_COMPILE_FAST_MATH      -ffast-math
 * then options->hip_options, verbatim. CUDA C++ goes in unchanged: HIPRTC
 * takes the CUDA spellings that HIP shares (__global__, threadIdx,
 * __shared__, __syncthreads, atomicAdd, extern "C", ...), but not the CUDA
 * runtime's headers, and it defines __HIPCC__, not __CUDACC__.
 *
 * HIPRTC's quirks that this file hides:
 *  - HIPRTC before ROCm 5.3 names the source ".../comgr-XXXXXX/input/
 *    CompileSource" in its log, whatever the program's name, and in-memory
 *    headers ".../comgr-XXXXXX/include/<name>"; the log is rewritten to the
 *    names the caller knows (kiln_hip_log_with_names).
 *  - hiprtcVersion answers 9.0 in every ROCm release; the version comes from
 *    the library's file name (libamdhip64.so.5.2.21153 is HIP 5.2).
 *  - A gfx target that its code-object manager (libamd_comgr) does not
 *    know crashes HIPRTC 5.2 (a bad free inside comgr), so a gfx target is
 *    first checked against comgr's list of ISAs when comgr can be loaded.
 *  - Options clang rejects come back as HIPRTC_ERROR_COMPILATION with
 *    "error: unknown argument: '-fbogus'"; those are reported as invalid
 *    arguments.
 *  - Compiles are serialised: comgr before ROCm 6 is not safe to enter from
 *    several threads, and HIPRTC compiles one program at a time anyway.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backends/common/common.h"
#include "backends/hip/hip.h"

/* ---- HIPRTC's API, as kiln declares it ------------------------------------ */

/* The codes kiln tells apart, numbered as since ROCm 5.0. */
typedef enum hiprtcResult {
  HIPRTC_SUCCESS = 0,
  HIPRTC_ERROR_OUT_OF_MEMORY = 1,
  HIPRTC_ERROR_INVALID_OPTION = 5,
  HIPRTC_ERROR_COMPILATION = 6,
} hiprtcResult;

typedef struct _hiprtcProgram *hiprtcProgram;

#define KILN_HIPRTC_SYMBOLS(X)                                                \
  X(const char *, hiprtcGetErrorString, (hiprtcResult result))                \
  X(hiprtcResult, hiprtcVersion, (int *major, int *minor))                    \
  X(hiprtcResult, hiprtcCreateProgram,                                        \
    (hiprtcProgram * program, const char *source, const char *name,           \
     int header_count, const char **headers, const char **include_names))     \
  X(hiprtcResult, hiprtcDestroyProgram, (hiprtcProgram * program))            \
  X(hiprtcResult, hiprtcCompileProgram,                                       \
    (hiprtcProgram program, int option_count, const char **options))          \
  X(hiprtcResult, hiprtcGetProgramLogSize,                                    \
    (hiprtcProgram program, size_t *size))                                    \
  X(hiprtcResult, hiprtcGetProgramLog, (hiprtcProgram program, char *log))    \
  X(hiprtcResult, hiprtcGetCodeSize, (hiprtcProgram program, size_t *size))   \
  X(hiprtcResult, hiprtcGetCode, (hiprtcProgram program, char *code))     \
  X(hiprtcResult, hiprtcAddNameExpression,                                    \
    (hiprtcProgram program, const char *name_expression))                     \
  X(hiprtcResult, hiprtcGetLoweredName,                                       \
    (hiprtcProgram program, const char *name_expression,                      \
     const char **lowered_name))

typedef struct hiprtc_table {
#define KILN_HIPRTC_FIELD(ret, name, params) ret(*name) params;
  KILN_HIPRTC_SYMBOLS(KILN_HIPRTC_FIELD)
#undef KILN_HIPRTC_FIELD
} hiprtc_table;

/* The code-object manager's list of ISAs ("amdgcn-amd-amdhsa--gfx90a"),
 * as amd_comgr.h declares it (stable since comgr 1.x). */
typedef int (*comgr_isa_count_fn)(size_t *count);
typedef int (*comgr_isa_name_fn)(size_t index, const char **name);

/* The end of every reason; the parts before it are bounded so that the
 * whole fits the core's 512-byte buffer. */
#define HIPRTC_PACKAGE                                                       \
  "it comes with the HIP runtime (Debian/Ubuntu: libamdhip64-5, which "      \
  "carries it; ROCm: hip-runtime-amd); set KILN_HIPRTC_LIBRARY to its path"

/* Written once by the first compiler_load that succeeds (under the core's
 * compiler lock) and read-only afterwards; a failed load leaves them as
 * they were, so the next call tries again. */
static hiprtc_table hiprtc;
static bool loaded;
static char description[512];
/* The gfx names comgr compiles for, without "amdgcn-amd-amdhsa--" or
 * features; none when comgr could not be asked (targets go unchecked). */
static char isas[128][24];
static size_t isa_count;

static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- Loading -------------------------------------------------------------- */

static const char *const hiprtc_sonames[] = {"libhiprtc.so.6",
                                             "libhiprtc.so.5", "libhiprtc.so"};
static const char *const runtime_sonames[] = {"libamdhip64.so.6",
                                              "libamdhip64.so.5"};
static const char *const comgr_sonames[] = {"libamd_comgr.so.3",
                                            "libamd_comgr.so.2"};
#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* "5.2" from ".../libamdhip64.so.5.2.21153"; false when the file name
 * carries no version. */
static bool version_of(const char *path, char *out, size_t out_size) {
  const char *base = strrchr(path, '/');
  const char *so = strstr(base ? base : path, ".so.");
  unsigned major = 0, minor = 0;
  if (!so) return false;
  int n = sscanf(so + 4, "%u.%u", &major, &minor);
  if (n < 1) return false;
  if (n == 1)
    snprintf(out, out_size, "%u", major);
  else
    snprintf(out, out_size, "%u.%u", major, minor);
  return true;
}

/* Reads comgr's ISA list, from the library beside HIPRTC's if there is
 * one (where HIPRTC finds it too), else from the search path, and writes
 * comgr's path to `comgr_path` (left as it is when comgr cannot be asked).
 * comgr stays loaded: HIPRTC uses it. */
static void load_isas(const char *hiprtc_path, char *comgr_path,
                      size_t comgr_path_size) {
  char dir[PATH_MAX];
  kiln_strlcpy(dir, hiprtc_path, sizeof dir);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = '\0';
  void *handle = NULL;
  for (size_t pass = slash ? 0 : 1; pass < 2 && !handle; pass++)
    for (size_t i = 0; i < COUNT(comgr_sonames) && !handle; i++) {
      char path[PATH_MAX];
      if (snprintf(path, sizeof path, "%s%s%s", pass ? "" : dir,
                   pass ? "" : "/", comgr_sonames[i]) >= (int)sizeof path)
        continue;
      handle = kiln_library_open(path, 0, NULL, 0);
    }
  if (!handle) return;
  comgr_isa_count_fn get_count;
  comgr_isa_name_fn get_name;
  void *count_sym = kiln_library_symbol(handle, "amd_comgr_get_isa_count",
                                        &get_count, sizeof get_count);
  if (!count_sym || !kiln_library_symbol(handle, "amd_comgr_get_isa_name",
                                         &get_name, sizeof get_name))
    return;
  size_t count = 0;
  if (get_count(&count) != 0) return;
  for (size_t i = 0; i < count && isa_count < COUNT(isas); i++) {
    const char *name = NULL;
    if (get_name(i, &name) != 0 || !name) continue;
    const char *gfx = strstr(name, "--gfx");
    if (!gfx) continue;
    size_t len = strcspn(gfx + 2, ":");
    if (len >= sizeof isas[0]) continue;
    memcpy(isas[isa_count], gfx + 2, len);
    isas[isa_count++][len] = '\0';
  }
  kiln_dl_library_path(count_sym, "libamd_comgr", comgr_path, comgr_path_size);
}

/* "HIPRTC 5.2 (<path>, comgr <path>)": the version in the library's file
 * name, else the file's size and time, which tell builds apart. */
static void describe(const char *file, const char *comgr,
                     const hiprtc_table *table) {
  char version[32];
  int n;
  if (version_of(file, version, sizeof version)) {
    n = snprintf(description, sizeof description, "HIPRTC %s (%s%s%s)",
                 version, file, comgr[0] ? ", comgr " : "", comgr);
  } else {
    /* hiprtcVersion is all there is to print; it says 9.0 on AMD. */
    int major = 0, minor = 0;
    struct stat sb;
    long long bytes = -1;
    char when[32] = "unknown time";
    table->hiprtcVersion(&major, &minor);
    if (stat(file, &sb) == 0) {
      struct tm tm;
      bytes = (long long)sb.st_size;
      gmtime_r(&sb.st_mtime, &tm);
      strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    n = snprintf(description, sizeof description,
                 "HIPRTC, hiprtcVersion %d.%d (%s, %lld bytes, %s%s%s)", major,
                 minor, file, bytes, when, comgr[0] ? ", comgr " : "", comgr);
  }
  if (n >= (int)sizeof description)
    kiln_log(KILN_LOG_DEBUG, "hip: HIPRTC's description is shortened");
}

/* Resolves the table from `handle` (opened from `path`) and describes it;
 * false with the reason noted in `why` when it has no HIPRTC. */
static bool take_hiprtc(void *handle, const char *path, char *why,
                        size_t why_size) {
  hiprtc_table table;
  void *sym = NULL, *first = NULL;
#define KILN_HIPRTC_RESOLVE(ret, name, params)                                \
  if (!(sym = kiln_library_symbol(handle, #name, &table.name,                 \
                                  sizeof table.name))) {                      \
    char missing[512];                                                        \
    snprintf(missing, sizeof missing, "%s has no HIPRTC (it lacks %s)", path, \
             #name);                                                          \
    kiln_dl_note_error(why, why_size, missing);                               \
    return false;                                                             \
  }                                                                           \
  if (!first) first = sym;
  KILN_HIPRTC_SYMBOLS(KILN_HIPRTC_RESOLVE)
#undef KILN_HIPRTC_RESOLVE

  char file[PATH_MAX], comgr[PATH_MAX] = "";
  kiln_dl_library_path(first, path, file, sizeof file);
  /* Only AMD's HIPRTC runs on comgr (the HIP-on-CUDA test shim's does
   * not). */
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  isa_count = 0;
  if (strncmp(base, "libhiprtc", 9) == 0 ||
      strncmp(base, "libamdhip64", 11) == 0)
    load_isas(file, comgr, sizeof comgr);
  describe(file, comgr, &table);
  hiprtc = table;
  return true;
}

/* Opens `path` and takes HIPRTC from it. A library that loaded stays
 * loaded even when it has no HIPRTC: a HIP runtime may have started
 * threads, and unloading it under them is not safe (see loader.c). */
static bool open_hiprtc(const char *path, int extra_flags, char *why,
                        size_t why_size) {
  void *handle = kiln_library_open(
      path, extra_flags, (extra_flags & RTLD_NOLOAD) ? NULL : why, why_size);
  if (!handle) return false;
  return take_hiprtc(handle, path, why, why_size);
}

static kiln_status load_library(char *reason, size_t reason_size) {
  char why[512] = "";
  const char *chosen = kiln_getenv("KILN_HIPRTC_LIBRARY");
  if (chosen) {
    if (open_hiprtc(chosen, 0, why, sizeof why)) return KILN_OK;
    snprintf(reason, reason_size,
             "HIPRTC could not be loaded from KILN_HIPRTC_LIBRARY: %.280s; "
             HIPRTC_PACKAGE, why);
    return KILN_ERROR_UNAVAILABLE;
  }
  for (size_t i = 0; i < COUNT(hiprtc_sonames); i++)
    if (open_hiprtc(hiprtc_sonames[i], 0, why, sizeof why)) return KILN_OK;

  /* The runtime kiln or the application already opened first, so that
   * HIPRTC comes from the same ROCm as the runtime that loads its code. */
  const char *runtime = kiln_getenv("KILN_HIP_LIBRARY");
  const char *const *names = runtime ? &runtime : runtime_sonames;
  size_t count = runtime ? 1 : COUNT(runtime_sonames);
  for (size_t i = 0; i < count; i++)
    if (open_hiprtc(names[i], RTLD_NOLOAD, why, sizeof why)) return KILN_OK;
  for (size_t i = 0; i < count; i++)
    if (open_hiprtc(names[i], 0, why, sizeof why)) return KILN_OK;
  snprintf(reason, reason_size,
           "HIPRTC could not be loaded: none of libhiprtc.so.6, .so.5, .so, "
           "nor the HIP runtime %.80s with HIPRTC in it (%.170s); "
           HIPRTC_PACKAGE,
           runtime ? runtime : "libamdhip64.so.6 or .so.5",
           why[0] ? why : "not found");
  return KILN_ERROR_UNAVAILABLE;
}

kiln_status kiln_hip_compiler_load(char *out_description,
                                   size_t description_size) {
  if (!loaded) {
    kiln_status st = load_library(out_description, description_size);
    if (st != KILN_OK) return st;
    loaded = true;
    kiln_log(KILN_LOG_DEBUG, "hip: loaded %s", description);
  }
  kiln_strlcpy(out_description, description, description_size);
  return KILN_OK;
}

/* ---- Targets -------------------------------------------------------------- */

/* gfxNNN with optional features (":xnack-", ":sramecc+"); or, for the
 * HIP-on-CUDA test shim's HIPRTC, an NVIDIA sm_XX or compute_XX. */
static bool valid_target(const char *t) {
  if (strncmp(t, "sm_", 3) == 0 || strncmp(t, "compute_", 8) == 0) {
    const char *d = t + (t[0] == 's' ? 3 : 8);
    size_t n = strspn(d, "0123456789");
    return n > 0 && (d[n] == '\0' ||
                     ((d[n] == 'a' || d[n] == 'f') && d[n + 1] == '\0'));
  }
  if (strncmp(t, "gfx", 3) != 0) return false;
  /* gfx90a, gfx1100, and ROCm 6's generic ones (gfx9-generic). */
  size_t n = strspn(t + 3, "0123456789abcdefghijklmnopqrstuvwxyz-");
  if (n == 0) return false;
  for (t += 3 + n; *t == ':'; t += n + 2) {
    n = strspn(t + 1, "abcdefghijklmnopqrstuvwxyz0123456789");
    if (n == 0 || (t[1 + n] != '+' && t[1 + n] != '-')) return false;
  }
  return *t == '\0';
}

/* Whether comgr knows the gfx target (or cannot be asked). */
static bool known_isa(const char *target) {
  if (isa_count == 0 || strncmp(target, "gfx", 3) != 0) return true;
  size_t len = strcspn(target, ":");
  for (size_t i = 0; i < isa_count; i++)
    if (strlen(isas[i]) == len && strncmp(isas[i], target, len) == 0)
      return true;
  return false;
}

/* "gfx900, gfx906, ..." */
static void isa_list(char *out, size_t size) {
  out[0] = '\0';
  for (size_t i = 0; i < isa_count; i++) {
    size_t used = strlen(out);
    if (snprintf(out + used, size - used, "%s%s", i ? ", " : "", isas[i]) >=
        (int)(size - used))
      break;
  }
}

kiln_status kiln_hip_compile_target(const kiln_context *ctx, char *target,
                                    size_t target_size) {
  const char *arch = ctx->properties.architecture;
  if (!valid_target(arch))
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "hip: HIPRTC cannot compile for the device's "
                          "architecture \"%s\"",
                          arch);
  if (!known_isa(arch)) {
    char list[1024];
    isa_list(list, sizeof list);
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "hip: %s does not know the device's architecture "
                          "%s (it compiles for %s); install a newer ROCm or "
                          "point KILN_HIPRTC_LIBRARY at one",
                          description, arch, list);
  }
  kiln_strlcpy(target, arch, target_size);
  return KILN_OK;
}

/* ---- The log -------------------------------------------------------------- */

char *kiln_hip_log_with_names(const char *log, const char *name) {
  static const char marker[] = "/comgr-";
  static const char source[] = "CompileSource";
  size_t len = strlen(log), name_len = strlen(name);
  /* Each rewrite of a comgr path is no longer than the name. */
  size_t cap = len + 1;
  for (const char *p = log; (p = strstr(p, marker)) != NULL; p++)
    cap += name_len;
  char *out = malloc(cap);
  if (!out) return NULL;
  size_t o = 0;
  const char *p = log;
  for (const char *m; (m = strstr(p, marker)) != NULL;) {
    /* The path starts after the last space, quote or line start; comgr's
     * part of it is <tmp>/comgr-XXXXXX/<its folder>/ (input, include, or
     * another in newer releases), and what follows is the file's own
     * name, except the main source, which HIPRTC 5.2 calls
     * CompileSource. */
    const char *start = m;
    while (start > p && !strchr(" \t\n'\"(", start[-1])) start--;
    size_t path = strcspn(m, " \t\n'\":)");
    const char *end = memchr(m + 1, '/', path - 1);
    const char *folder_end =
        end ? memchr(end + 1, '/', path - (size_t)(end + 1 - m)) : NULL;
    size_t keep = (size_t)(start - p);
    memcpy(out + o, p, keep);
    o += keep;
    if (folder_end) {
      p = folder_end + 1;
      if (strncmp(p, source, sizeof source - 1) == 0) {
        memcpy(out + o, name, name_len);
        o += name_len;
        p += sizeof source - 1;
      }
    } else {
      size_t n = (size_t)(m + sizeof marker - 1 - start);
      memcpy(out + o, start, n);
      o += n;
      p = m + sizeof marker - 1;
    }
  }
  memcpy(out + o, p, strlen(p) + 1);
  return out;
}

/* The program's log with the caller's names, malloc'd; NULL when HIPRTC
 * said nothing or memory ran out. */
static char *take_log(hiprtcProgram program, const char *name) {
  size_t size = 0;
  if (hiprtc.hiprtcGetProgramLogSize(program, &size) != HIPRTC_SUCCESS ||
      size == 0)
    return NULL;
  /* Some releases count the terminating NUL, some do not. */
  char *raw = calloc(1, size + 1);
  if (!raw) return NULL;
  if (hiprtc.hiprtcGetProgramLog(program, raw) != HIPRTC_SUCCESS ||
      !raw[0]) {
    free(raw);
    return NULL;
  }
  char *log = kiln_hip_log_with_names(raw, name);
  free(raw);
  return log;
}

/* The raw option that clang's driver rejected, named in a diagnostic with
 * no source location ("error: unknown argument: '-fbogus'"); NULL when the
 * failure is the source's. */
static const char *rejected_option(const char *log,
                                   const kiln_compile_options *o) {
  for (const char *line = log; line && *line;) {
    const char *next = strchr(line, '\n');
    size_t len = next ? (size_t)(next - line) : strlen(line);
    bool driver = strncmp(line, "error: ", 7) == 0 ||
                  strncmp(line, "clang: error: ", 14) == 0;
    for (size_t i = 0; driver && i < o->hip_option_count; i++) {
      /* clang quotes what it rejects: '-fbogus', '-std=c++99'. */
      const char *opt = o->hip_options[i];
      size_t n = strlen(opt);
      for (size_t at = 0; at + n + 2 <= len; at++)
        if (line[at] == '\'' && strncmp(line + at + 1, opt, n) == 0 &&
            line[at + n + 1] == '\'')
          return opt;
    }
    line = next ? next + 1 : NULL;
  }
  return NULL;
}

/* ---- Compiling ------------------------------------------------------------ */

static void build_options(const kiln_compile_job *job, kiln_option_list *l) {
  const kiln_compile_options *o = job->options;
  kiln_option_add(l, "--offload-arch=", job->target);
  for (size_t i = 0; i < o->define_count; i++)
    kiln_option_add(l, "-D", o->defines[i]);
  for (size_t i = 0; i < o->include_dir_count; i++)
    kiln_option_add(l, "-I", o->include_dirs[i]);
  switch (o->optimization) {
  case KILN_OPTIMIZE_DEFAULT: break;
  case KILN_OPTIMIZE_NONE: kiln_option_add(l, "-O0", ""); break;
  case KILN_OPTIMIZE_SIZE: kiln_option_add(l, "-O2", ""); break;
  case KILN_OPTIMIZE_SPEED: kiln_option_add(l, "-O3", ""); break;
  }
  if (o->flags & KILN_COMPILE_FAST_MATH) kiln_option_add(l, "-ffast-math", "");
  for (size_t i = 0; i < o->hip_option_count; i++)
    kiln_option_add(l, "", o->hip_options[i]);
}

static kiln_status hiprtc_error(hiprtcResult r, const char *what,
                                const kiln_compile_job *job) {
  if (r == HIPRTC_ERROR_OUT_OF_MEMORY)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "HIPRTC ran out of memory in %s (compiling %s)",
                          what, job->name);
  const char *name = hiprtc.hiprtcGetErrorString(r);
  return kiln_set_error(KILN_ERROR_BACKEND, "%s failed for %s: %s", what,
                        job->name, name ? name : "unknown HIPRTC error");
}

static kiln_status take_image(hiprtcProgram program,
                              const kiln_compile_job *job,
                              kiln_compiled *out) {
  size_t size = 0;
  hiprtcResult r = hiprtc.hiprtcGetCodeSize(program, &size);
  if (r != HIPRTC_SUCCESS) return hiprtc_error(r, "hiprtcGetCodeSize", job);
  if (size == 0)
    return kiln_set_error(KILN_ERROR_BACKEND,
                          "HIPRTC produced no code for %s (target %s)",
                          job->name, job->target);
  char *image = malloc(size);
  if (!image)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "hip: no memory for the %zu-byte image of %s", size,
                          job->name);
  r = hiprtc.hiprtcGetCode(program, image);
  if (r != HIPRTC_SUCCESS) {
    free(image);
    return hiprtc_error(r, "hiprtcGetCode", job);
  }
  out->format = KILN_IMAGE_HIP_CODE_OBJECT;
  out->image = image;
  out->image_size = size;
  return KILN_OK;
}

/* HIPRTC's lowered name of a name expression (kiln_take_lowered_names). */
static bool lowered_name(void *program, const char *expression,
                         const char **out, const char **why) {
  hiprtcResult r = hiprtc.hiprtcGetLoweredName(program, expression, out);
  if (r != HIPRTC_SUCCESS) *why = hiprtc.hiprtcGetErrorString(r);
  return r == HIPRTC_SUCCESS;
}

/* Compiles with the lock held; the program is destroyed on every path. */
static kiln_status compile_locked(const kiln_compile_job *job,
                                  const char **options, size_t option_count,
                                  const char **texts, const char **names,
                                  kiln_compiled *out) {
  const kiln_compile_options *o = job->options;
  hiprtcProgram program = NULL;
  hiprtcResult r = hiprtc.hiprtcCreateProgram(
      &program, job->text, job->name, (int)o->header_count, texts, names);
  if (r != HIPRTC_SUCCESS) return hiprtc_error(r, "hiprtcCreateProgram", job);
  for (size_t i = 0; i < o->name_expression_count; i++)
    if ((r = hiprtc.hiprtcAddNameExpression(program, o->name_expressions[i])) !=
        HIPRTC_SUCCESS) {
      hiprtc.hiprtcDestroyProgram(&program);
      return hiprtc_error(r, "hiprtcAddNameExpression", job);
    }
  r = hiprtc.hiprtcCompileProgram(program, (int)option_count, options);
  char *log = take_log(program, job->name);
  const char *said = log ? log : "(HIPRTC gave no log)";
  const char *option =
      r == HIPRTC_ERROR_COMPILATION ? rejected_option(said, o) : NULL;
  kiln_status st;
  if (option)
    st = kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "HIPRTC rejected the option \"%s\" compiling %s: %.*s",
                        option, job->name, kiln_log_head(said), said);
  else if (r == HIPRTC_ERROR_COMPILATION)
    st = kiln_set_error(KILN_ERROR_COMPILE,
                        "HIPRTC could not compile %s for %s: %.*s", job->name,
                        job->target, kiln_log_head(said), said);
  else if (r == HIPRTC_ERROR_INVALID_OPTION)
    st = kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "HIPRTC rejected an option compiling %s for %s: %.*s",
                        job->name, job->target, kiln_log_head(said), said);
  else if (r != HIPRTC_SUCCESS)
    st = hiprtc_error(r, "hiprtcCompileProgram", job);
  else if ((st = take_image(program, job, out)) == KILN_OK)
    st = kiln_take_lowered_names(job, "HIPRTC", lowered_name, program, out);
  hiprtc.hiprtcDestroyProgram(&program);
  out->log = log;
  return st;
}

kiln_status kiln_hip_compile(const kiln_compile_job *job, kiln_compiled *out) {
  if (!valid_target(job->target))
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "hip: \"%s\" is not a HIP target: give an AMD gfx "
                          "name, with features if wanted (e.g. gfx90a, "
                          "gfx90a:xnack-)",
                          job->target);
  if (!known_isa(job->target)) {
    char list[1024];
    isa_list(list, sizeof list);
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "hip: %s does not compile for %s; it knows %s",
                          description, job->target, list);
  }
  const kiln_compile_options *o = job->options;
  kiln_option_list options = {0};
  build_options(job, &options);
  const char **texts =
      o->header_count ? calloc(o->header_count, sizeof *texts) : NULL;
  const char **names =
      o->header_count ? calloc(o->header_count, sizeof *names) : NULL;
  kiln_status st;
  if (options.failed || options.count > INT_MAX || o->header_count > INT_MAX ||
      (o->header_count && (!texts || !names))) {
    st = kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                        "hip: no memory for the options of %s", job->name);
  } else {
    for (size_t i = 0; i < o->header_count; i++) {
      texts[i] = o->headers[i].text;
      names[i] = o->headers[i].name;
    }
    pthread_mutex_lock(&compile_lock);
    st = compile_locked(job, (const char **)options.items, options.count,
                        texts, names, out);
    pthread_mutex_unlock(&compile_lock);
  }
  kiln_option_list_free(&options);
  free(texts);
  free(names);
  return st;
}
