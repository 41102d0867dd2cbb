/*
 * GLSL compute shaders compiled to SPIR-V at run time by shaderc. Like the
 * Vulkan loader, shaderc is never linked: it is dlopen'd when first asked
 * for and its entry points resolved into a table. Past 600 lines for the
 * reason its CUDA twin gives: loading, the options, the includes and the
 * compile share the state loading writes once.
 *
 * Where shaderc is looked for: KILN_SHADERC_LIBRARY alone when set; else
 * libshaderc.so.1 (Debian's and Ubuntu's libshaderc1), then
 * libshaderc_shared.so.1 and libshaderc_shared.so (the Vulkan SDK).
 * Debian 12's libshaderc1 cannot be loaded: it was built against static
 * glslang and SPIRV-Tools and leaves their symbols undefined. kiln then
 * takes libkiln-shaderc.so (shaderc_bundle.c), a whole shaderc that its
 * build made from those static archives where they are installed, with
 * their symbols hidden; it hands out its entry points by name through
 * kiln_shaderc_bundle_symbol instead of dlsym. Without one, the reason
 * says what is wrong.
 *
 * shaderc has no version call. The description holds the newest SPIR-V it
 * writes (shaderc_get_spv_version) and its file's resolved path, size and
 * modification time, so that the cache key changes when the library does.
 *
 * How kiln's options become shaderc's:
 *   target spv1.X        target environment Vulkan (the oldest Vulkan that
 *                        takes SPIR-V 1.X: 1.0 for 1.0, 1.1 for 1.1 to 1.3,
 *                        1.2 for 1.4 and 1.5, 1.3 for 1.6) and SPIR-V 1.X
 *   defines              shaderc_compile_options_add_macro_definition;
 *                        "NAME" alone defines NAME as 1, as -D does for C
 *   #include "x"         the include callbacks: options->headers by name,
 *                        then beside the including file if that came from
 *                        a directory, then the include directories in
 *                        order (<x> skips the second step)
 *   KILN_OPTIMIZE_NONE/SIZE/SPEED   optimization level zero / size /
 *                        performance (default: none, as glslc)
 *   KILN_COMPILE_FAST_MATH   nothing: GLSL has no such switch
 *   glsl_options         "-g" debug info, "-w" no warnings, "-Werror"
 * The shader is compiled as a compute shader named by the source's name,
 * so the log reads "saxpy.comp:3: error: ...". shaderc names a GLSL entry
 * point "main" whatever it is asked (measured with shaderc 2023.2), so
 * the OpEntryPoint is renamed in the SPIR-V afterwards
 * (kiln_vulkan_spirv_rename_entry_point).
 *
 * The device's target is the newest SPIR-V its Vulkan version takes (1.0
 * for 1.0, 1.3 for 1.1, 1.5 for 1.2, 1.6 for 1.3), capped at 1.5 because
 * kiln's instance asks for Vulkan 1.2 (the validation layer rejects 1.6
 * under it, measured on lavapipe), and at what shaderc writes.
 *
 * One shaderc compiler serves every thread: shaderc.h documents
 * shaderc_compile_into_spv as safe to call on one compiler from several
 * threads at once without synchronisation.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "backends/vulkan/vulkan.h"

/* ---- shaderc's API, as kiln declares it ----------------------------------- */

typedef struct shaderc_compiler *shaderc_compiler_t;
typedef struct shaderc_compile_options *shaderc_compile_options_t;
typedef struct shaderc_compilation_result *shaderc_compilation_result_t;

/* Values from shaderc.h, env.h and status.h (stable since shaderc 2019). */
enum {
  SHADERC_SOURCE_GLSL = 0,
  SHADERC_COMPUTE_SHADER = 2,
  SHADERC_TARGET_ENV_VULKAN = 0,
  SHADERC_OPTIMIZE_ZERO = 0,
  SHADERC_OPTIMIZE_SIZE = 1,
  SHADERC_OPTIMIZE_PERFORMANCE = 2,
  SHADERC_INCLUDE_RELATIVE = 0,
  SHADERC_STATUS_SUCCESS = 0,
  SHADERC_STATUS_COMPILATION_ERROR = 2,
};

typedef struct shaderc_include_result {
  const char *source_name; /* "" for a failed include */
  size_t source_name_length;
  const char *content; /* the text, or the error message */
  size_t content_length;
  void *user_data;
} shaderc_include_result;

typedef shaderc_include_result *(*shaderc_include_resolve_fn)(
    void *user_data, const char *requested_source, int type,
    const char *requesting_source, size_t include_depth);
typedef void (*shaderc_include_result_release_fn)(
    void *user_data, shaderc_include_result *include_result);

#include "backends/vulkan/shaderc_symbols.h"

typedef struct shaderc_table {
#define KILN_SHADERC_FIELD(ret, name, params) ret(*name) params;
  KILN_SHADERC_SYMBOLS(KILN_SHADERC_FIELD)
#undef KILN_SHADERC_FIELD
} shaderc_table;

/* The end of every reason; the parts before it are bounded so that the
 * whole fits the core's 512-byte buffer. */
#define SHADERC_PACKAGE                                                      \
  "it comes with libshaderc1 (Debian, Ubuntu) or the Vulkan SDK (Debian "     \
  "12's libshaderc1 lacks glslang: there kiln builds its own "              \
  "libkiln-shaderc.so when libshaderc-dev, glslang-dev and spirv-tools are " \
  "installed); set KILN_SHADERC_LIBRARY to its path"

/* The Vulkan API version that instance.c's instance asks for: no device is
 * used beyond it, so no SPIR-V newer than it takes (1.5) is either. Under
 * KILN_VULKAN_VALIDATION=printf the instance asks for 1.3, yet images stay
 * 1.5: the disk cache serves them to runs without printf too. */
#define KILN_VULKAN_INSTANCE_API VK_API_VERSION_1_2

#define MAX_INCLUDE_DEPTH 64

/* Written once by the first compiler_load that succeeds (under the core's
 * compiler lock) and read-only afterwards; a failed load leaves them as
 * they were, so the next call tries again. */
static shaderc_table shaderc;
static shaderc_compiler_t compiler;
static char description[512];
/* The newest SPIR-V 1.x that this shaderc writes: x. */
static unsigned spirv_minor_max;

/* ---- Loading -------------------------------------------------------------- */

static const char *const sonames[] = {"libshaderc.so.1",
                                      "libshaderc_shared.so.1",
                                      "libshaderc_shared.so"};
#define SONAME_COUNT (sizeof sonames / sizeof sonames[0])

/* "shaderc, SPIR-V 1.6 (<path>, <size> bytes, <mtime>)", and for kiln's
 * own bundle the packages it was built from. */
static void describe(const char *file, unsigned spirv_minor,
                     const char *bundle) {
  struct stat sb;
  long long bytes = -1;
  char when[32] = "unknown time";
  if (stat(file, &sb) == 0) {
    struct tm tm;
    bytes = (long long)sb.st_size;
    gmtime_r(&sb.st_mtime, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  }
  if (snprintf(description, sizeof description,
               "shaderc, SPIR-V 1.%u (%s%s%s%s, %lld bytes, %s)", spirv_minor,
               bundle ? "kiln's own, from " : "", bundle ? bundle : "",
               bundle ? ": " : "", file, bytes, when) >= (int)sizeof description)
    kiln_log(KILN_LOG_DEBUG, "vulkan: shaderc's description is shortened");
}

/* Where backends/vulkan/meson.build put libkiln-shaderc: the build tree's,
 * then the installed one. */
static const char *const bundle_paths[] = {
#if defined(KILN_SHADERC_BUNDLE_BUILD)
    KILN_SHADERC_BUNDLE_BUILD,
#endif
#if defined(KILN_SHADERC_BUNDLE_INSTALLED)
    KILN_SHADERC_BUNDLE_INSTALLED,
#endif
    NULL,
};

typedef void (*shaderc_entry)(void);

/* Opens `path` and resolves the table from it: through dlsym, or through
 * its own lookup when it is kiln's bundle (it exports
 * kiln_shaderc_bundle_symbol, wherever it was found, KILN_SHADERC_LIBRARY
 * included); false with the reason noted in `why` when it is no shaderc
 * kiln can use. */
static bool open_shaderc(const char *path, char *why, size_t why_size) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    kiln_dl_note_error(why, why_size, dlerror());
    return false;
  }
  shaderc_entry (*lookup)(const char *) = NULL;
  const char *(*bundle_version)(void) = NULL;
  void *sym = NULL, *first = NULL;
  void *l = dlsym(handle, "kiln_shaderc_bundle_symbol");
  void *v = dlsym(handle, "kiln_shaderc_bundle_version");
  if (l && v) {
    memcpy(&lookup, &l, sizeof lookup);
    memcpy(&bundle_version, &v, sizeof bundle_version);
  }
  shaderc_table table;
  /* Copying the bits turns a void * into a function pointer without the
   * cast ISO C does not allow. */
#define KILN_SHADERC_RESOLVE(ret, name, params)                               \
  if (lookup) {                                                               \
    shaderc_entry entry = lookup(#name);                                      \
    table.name = (ret(*) params)entry;                                        \
    sym = entry ? (void *)&table.name : NULL;                                 \
  } else if ((sym = dlsym(handle, #name)) != NULL) {                          \
    memcpy(&table.name, &sym, sizeof table.name);                             \
  }                                                                           \
  if (!sym) {                                                                 \
    snprintf(why, why_size, "%s is not a shaderc kiln can use: it lacks %s "  \
             "(shaderc 2019.1 or newer is needed)", path, #name);             \
    dlclose(handle);                                                          \
    return false;                                                             \
  }                                                                           \
  if (!first && !lookup) first = sym;
  KILN_SHADERC_SYMBOLS(KILN_SHADERC_RESOLVE)
#undef KILN_SHADERC_RESOLVE
  if (lookup) memcpy(&first, &lookup, sizeof first);

  shaderc_compiler_t made = table.shaderc_compiler_initialize();
  if (!made) {
    snprintf(why, why_size, "shaderc_compiler_initialize failed in %s", path);
    dlclose(handle);
    return false;
  }
  unsigned version = 0, revision = 0;
  table.shaderc_get_spv_version(&version, &revision);
  unsigned minor = version >> 8 & 0xff;
  /* kiln knows which Vulkan takes SPIR-V up to 1.6. */
  spirv_minor_max = version >> 16 != 1 ? 0 : minor > 6 ? 6 : minor;
  char file[PATH_MAX];
  kiln_dl_library_path(first, path, file, sizeof file);
  describe(file, spirv_minor_max, bundle_version ? bundle_version() : NULL);
  shaderc = table;
  /* The compiler and the library stay for the life of the process. */
  compiler = made;
  return true;
}

static kiln_status load_library(char *reason, size_t reason_size) {
  char why[1024] = "";
  const char *chosen = kiln_getenv("KILN_SHADERC_LIBRARY");
  if (chosen) {
    if (open_shaderc(chosen, why, sizeof why)) return KILN_OK;
    snprintf(reason, reason_size,
             "shaderc could not be loaded from KILN_SHADERC_LIBRARY: %.320s; "
             SHADERC_PACKAGE, why);
    return KILN_ERROR_UNAVAILABLE;
  }
  for (size_t i = 0; i < SONAME_COUNT; i++)
    if (open_shaderc(sonames[i], why, sizeof why)) return KILN_OK;
  for (size_t i = 0; bundle_paths[i]; i++)
    if (open_shaderc(bundle_paths[i], why, sizeof why)) return KILN_OK;
  snprintf(reason, reason_size,
           "shaderc could not be loaded: none of libshaderc.so.1, "
           "libshaderc_shared.so.1, .so on the library search path%s "
           "(%.300s); " SHADERC_PACKAGE,
           bundle_paths[0] ? ", nor kiln's libkiln-shaderc.so" : "",
           why[0] ? why : "not found");
  return KILN_ERROR_UNAVAILABLE;
}

kiln_status kiln_vulkan_compiler_load(char *out_description,
                                      size_t description_size) {
  if (!compiler) {
    kiln_status st = load_library(out_description, description_size);
    if (st != KILN_OK) return st;
    kiln_log(KILN_LOG_DEBUG, "vulkan: loaded %s", description);
  }
  kiln_strlcpy(out_description, description, description_size);
  return KILN_OK;
}

/* ---- Targets -------------------------------------------------------------- */

/* The SPIR-V version of "spv1.X": X, or -1 for anything else. */
static int parse_target(const char *target) {
  if (strncmp(target, "spv1.", 5) != 0 || target[5] < '0' ||
      target[5] > '6' || target[6] != '\0')
    return -1;
  return target[5] - '0';
}

kiln_status kiln_vulkan_compile_target(const kiln_context *ctx, char *target,
                                       size_t target_size) {
  const kiln_vulkan_context *vc = kiln_vulkan_context_cast_const(ctx);
  uint32_t api = vc->phys->api_version;
  if (api > KILN_VULKAN_INSTANCE_API) api = KILN_VULKAN_INSTANCE_API;
  /* The newest SPIR-V each Vulkan version takes in its core. */
  unsigned minor = api >= VK_API_VERSION_1_3   ? 6
                   : api >= VK_API_VERSION_1_2 ? 5
                   : api >= VK_API_VERSION_1_1 ? 3
                                               : 0;
  if (minor > spirv_minor_max) minor = spirv_minor_max;
  snprintf(target, target_size, "spv1.%u", minor);
  return KILN_OK;
}

/* ---- Includes ------------------------------------------------------------- */

/* A result handed to shaderc, with what it points at. */
typedef struct include_result {
  shaderc_include_result result; /* first: shaderc hands this pointer back */
  char *name, *text;             /* owned; text is NULL for a header's */
} include_result;

/* What a resolver returns when even its result cannot be allocated;
 * never written, so shared by every thread. */
static include_result no_memory = {
    {"", 0, "out of host memory", sizeof "out of host memory" - 1, NULL},
    NULL,
    NULL};

/* The whole of a regular file, NUL-terminated; NULL when it cannot be
 * read. */
static char *read_file(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct stat sb;
  char *text = NULL;
  if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) &&
      (text = malloc((size_t)sb.st_size + 1)) != NULL) {
    size_t size = fread(text, 1, (size_t)sb.st_size, f);
    text[size] = '\0';
    *out_size = size;
  }
  fclose(f);
  return text;
}

/* "<dir>/<name>", malloc'd; `dir_len` bytes of `dir` are used. */
static char *join(const char *dir, size_t dir_len, const char *name) {
  size_t name_len = strlen(name);
  char *path = malloc(dir_len + 1 + name_len + 1);
  if (path) {
    memcpy(path, dir, dir_len);
    path[dir_len] = '/';
    memcpy(path + dir_len + 1, name, name_len + 1);
  }
  return path;
}

static bool is_header(const kiln_compile_options *o, const char *name) {
  for (size_t i = 0; i < o->header_count; i++)
    if (strcmp(o->headers[i].name, name) == 0) return true;
  return false;
}

/* Fills `r` from the file at `path` (taking `path`); false, freeing it,
 * when there is no such file. */
static bool take_file(include_result *r, char *path) {
  size_t size = 0;
  char *text = path ? read_file(path, &size) : NULL;
  if (!text) {
    free(path);
    return false;
  }
  r->name = path;
  r->text = text;
  r->result = (shaderc_include_result){path, strlen(path), text, size, NULL};
  return true;
}

/* Fills `r` with the message that `requested` was not found. */
static void not_found(include_result *r, const kiln_compile_options *o,
                      const char *requested, const char *beside) {
  size_t size = strlen(requested) + 128 + (beside ? strlen(beside) : 0);
  for (size_t i = 0; i < o->include_dir_count; i++)
    size += strlen(o->include_dirs[i]) + 2;
  char *text = malloc(size);
  if (!text) {
    r->result = no_memory.result;
    return;
  }
  int n = snprintf(text, size, "cannot find %s (looked in %zu in-memory "
                   "header%s", requested, o->header_count,
                   o->header_count == 1 ? "" : "s");
  if (beside) n += snprintf(text + n, size - (size_t)n, ", %s", beside);
  for (size_t i = 0; i < o->include_dir_count; i++)
    n += snprintf(text + n, size - (size_t)n, ", %s", o->include_dirs[i]);
  snprintf(text + n, size - (size_t)n, ")");
  r->text = text;
  r->result = (shaderc_include_result){"", 0, text, strlen(text), NULL};
}

static shaderc_include_result *resolve_include(void *user_data,
                                               const char *requested,
                                               int type,
                                               const char *requesting,
                                               size_t depth) {
  const kiln_compile_job *job = user_data;
  const kiln_compile_options *o = job->options;
  include_result *r = calloc(1, sizeof *r);
  if (!r) return &no_memory.result;
  if (depth > MAX_INCLUDE_DEPTH) {
    static const char deep[] =
        "#include nested too deeply (a header that includes itself?)";
    r->result = (shaderc_include_result){"", 0, deep, sizeof deep - 1, NULL};
    return &r->result;
  }
  for (size_t i = 0; i < o->header_count; i++)
    if (strcmp(o->headers[i].name, requested) == 0) {
      const kiln_header *h = &o->headers[i];
      r->result = (shaderc_include_result){h->name, strlen(h->name), h->text,
                                           strlen(h->text), NULL};
      return &r->result;
    }
  if (requested[0] == '/') {
    if (!take_file(r, strdup(requested))) not_found(r, o, requested, NULL);
    return &r->result;
  }
  /* Beside the including file when it came from a directory: not the
   * source itself, nor an in-memory header. */
  const char *slash = strrchr(requesting, '/');
  char *beside_dir = NULL;
  if (type == SHADERC_INCLUDE_RELATIVE && slash &&
      strcmp(requesting, job->name) != 0 && !is_header(o, requesting)) {
    size_t len = (size_t)(slash - requesting);
    beside_dir = malloc(len + 1);
    if (beside_dir) {
      memcpy(beside_dir, requesting, len);
      beside_dir[len] = '\0';
      if (take_file(r, join(beside_dir, len, requested))) {
        free(beside_dir);
        return &r->result;
      }
    }
  }
  for (size_t i = 0; i < o->include_dir_count; i++) {
    const char *dir = o->include_dirs[i];
    if (take_file(r, join(dir, strlen(dir), requested))) {
      free(beside_dir);
      return &r->result;
    }
  }
  not_found(r, o, requested, beside_dir);
  free(beside_dir);
  return &r->result;
}

static void release_include(void *user_data, shaderc_include_result *result) {
  (void)user_data;
  include_result *r = (include_result *)result;
  if (r == &no_memory) return;
  free(r->name);
  free(r->text);
  free(r);
}

/* Applies options->glsl_options; KILN_ERROR_INVALID_ARGUMENT naming an
 * option that is not one of the three. */
static kiln_status apply_glsl_options(const kiln_compile_job *job,
                                      shaderc_compile_options_t options) {
  const kiln_compile_options *o = job->options;
  for (size_t i = 0; i < o->glsl_option_count; i++) {
    const char *opt = o->glsl_options[i];
    if (strcmp(opt, "-g") == 0)
      shaderc.shaderc_compile_options_set_generate_debug_info(options);
    else if (strcmp(opt, "-w") == 0)
      shaderc.shaderc_compile_options_set_suppress_warnings(options);
    else if (strcmp(opt, "-Werror") == 0)
      shaderc.shaderc_compile_options_set_warnings_as_errors(options);
    else
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "vulkan: options->glsl_options[%zu] \"%s\" is not "
                            "a GLSL option kiln takes: the accepted ones are "
                            "-g (debug information), -w (no warnings) and "
                            "-Werror (warnings as errors)",
                            i, opt);
  }
  return KILN_OK;
}

/* The options for `job` and SPIR-V 1.`minor` into *out. */
static kiln_status make_options(const kiln_compile_job *job, unsigned minor,
                                shaderc_compile_options_t *out) {
  const kiln_compile_options *o = job->options;
  shaderc_compile_options_t options =
      shaderc.shaderc_compile_options_initialize();
  if (!options)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "vulkan: shaderc_compile_options_initialize failed "
                          "(out of host memory)");
  kiln_status st = apply_glsl_options(job, options);
  if (st != KILN_OK) {
    shaderc.shaderc_compile_options_release(options);
    return st;
  }
  /* The oldest Vulkan that takes SPIR-V 1.minor in its core. */
  uint32_t vulkan = minor >= 6   ? VK_API_VERSION_1_3
                    : minor >= 4 ? VK_API_VERSION_1_2
                    : minor >= 1 ? VK_API_VERSION_1_1
                                 : VK_API_VERSION_1_0;
  shaderc.shaderc_compile_options_set_source_language(options,
                                                      SHADERC_SOURCE_GLSL);
  shaderc.shaderc_compile_options_set_target_env(
      options, SHADERC_TARGET_ENV_VULKAN, vulkan);
  shaderc.shaderc_compile_options_set_target_spirv(options,
                                                   0x10000u | minor << 8);
  for (size_t i = 0; i < o->define_count; i++) {
    const char *def = o->defines[i];
    const char *eq = strchr(def, '=');
    if (eq)
      shaderc.shaderc_compile_options_add_macro_definition(
          options, def, (size_t)(eq - def), eq + 1, strlen(eq + 1));
    else
      shaderc.shaderc_compile_options_add_macro_definition(
          options, def, strlen(def), "1", 1);
  }
  switch (o->optimization) {
  case KILN_OPTIMIZE_DEFAULT: break;
  case KILN_OPTIMIZE_NONE:
    shaderc.shaderc_compile_options_set_optimization_level(
        options, SHADERC_OPTIMIZE_ZERO);
    break;
  case KILN_OPTIMIZE_SIZE:
    shaderc.shaderc_compile_options_set_optimization_level(
        options, SHADERC_OPTIMIZE_SIZE);
    break;
  case KILN_OPTIMIZE_SPEED:
    shaderc.shaderc_compile_options_set_optimization_level(
        options, SHADERC_OPTIMIZE_PERFORMANCE);
    break;
  }
  shaderc.shaderc_compile_options_set_include_callbacks(
      options, resolve_include, release_include, (void *)job);
  *out = options;
  return KILN_OK;
}

/* Copies the SPIR-V out of `result`, with the entry point renamed. */
static kiln_status take_image(shaderc_compilation_result_t result,
                              const kiln_compile_job *job,
                              kiln_compiled *out) {
  size_t size = shaderc.shaderc_result_get_length(result);
  const char *bytes = shaderc.shaderc_result_get_bytes(result);
  if (!bytes || size < 20 || size % 4 != 0)
    return kiln_set_error(KILN_ERROR_BACKEND,
                          "vulkan: shaderc produced no SPIR-V for %s",
                          job->name);
  uint32_t *words = malloc(size);
  if (!words)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "vulkan: no memory for the %zu-byte SPIR-V of %s",
                          size, job->name);
  memcpy(words, bytes, size);
  size_t count = size / 4;
  if (strcmp(job->entry_point, "main") != 0) {
    uint32_t *renamed = NULL;
    kiln_status st = kiln_vulkan_spirv_rename_entry_point(
        words, count, "main", job->entry_point, &renamed, &count);
    free(words);
    if (st != KILN_OK) return st;
    words = renamed;
  }
  out->format = KILN_IMAGE_SPIRV;
  out->image = words;
  out->image_size = count * 4;
  return KILN_OK;
}

/* The text after leading white space and comments. */
static const char *skip_blank(const char *p) {
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' ||
           *p == '\v')
      p++;
    if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') p++;
    } else if (p[0] == '/' && p[1] == '*') {
      const char *end = strstr(p + 2, "*/");
      if (!end) return p + strlen(p);
      p = end + 2;
    } else {
      return p;
    }
  }
}

/* A compute shader needs GLSL 430 or later, or 310 es, named by a #version
 * before any other line of code. Without one glslang takes version 100
 * ES, which has no compute shaders, and fails parsing its own built-ins:
 * it then prints its whole built-in table to the process's standard output,
 * which a library must not do. So the source is refused in words first. */
static kiln_status check_version(const kiln_compile_job *job, char **log) {
  const char *p = skip_blank(job->text);
  unsigned version = 0;
  bool es = false;
  if (*p == '#') {
    p++;
    while (*p == ' ' || *p == '\t') p++;
    if (strncmp(p, "version", 7) == 0 && (p[7] == ' ' || p[7] == '\t')) {
      p += 7;
      while (*p == ' ' || *p == '\t') p++;
      while (*p >= '0' && *p <= '9' && version < 100000)
        version = version * 10 + (unsigned)(*p++ - '0');
      while (*p == ' ' || *p == '\t') p++;
      es = strncmp(p, "es", 2) == 0;
    }
  }
  if (version >= (es ? 310u : 430u)) return KILN_OK;
  char said[160];
  if (version)
    snprintf(said, sizeof said, "#version %u%s has no compute shaders", version,
             es ? " es" : "");
  else
    snprintf(said, sizeof said, "no #version directive comes first");
  char message[400];
  snprintf(message, sizeof message,
           "%s: %s; a compute shader needs #version 430 or later (or 310 "
           "es) before any other line of code, e.g. #version 450",
           job->name, said);
  *log = strdup(message);
  return kiln_set_error(KILN_ERROR_COMPILE,
                        "shaderc could not compile %s for %s: %s", job->name,
                        job->target, message);
}

kiln_status kiln_vulkan_compile(const kiln_compile_job *job,
                                kiln_compiled *out) {
  int minor = parse_target(job->target);
  if (minor < 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "vulkan: \"%s\" is not a SPIR-V target: give "
                          "spv1.0 to spv1.6 (e.g. spv1.5)",
                          job->target);
  if ((unsigned)minor > spirv_minor_max)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "vulkan: %s writes SPIR-V up to 1.%u, not %s",
                          description, spirv_minor_max, job->target);
  kiln_status st = check_version(job, &out->log);
  if (st != KILN_OK) return st;
  shaderc_compile_options_t options = NULL;
  st = make_options(job, (unsigned)minor, &options);
  if (st != KILN_OK) return st;
  shaderc_compilation_result_t result = shaderc.shaderc_compile_into_spv(
      compiler, job->text, strlen(job->text), SHADERC_COMPUTE_SHADER,
      job->name, "main", options);
  shaderc.shaderc_compile_options_release(options);
  if (!result)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "vulkan: shaderc could not allocate a result "
                          "compiling %s",
                          job->name);
  const char *message = shaderc.shaderc_result_get_error_message(result);
  char *log = message && message[0] ? strdup(message) : NULL;
  const char *said = log ? log : "(shaderc gave no log)";
  int status = shaderc.shaderc_result_get_compilation_status(result);
  if (status == SHADERC_STATUS_SUCCESS)
    st = take_image(result, job, out);
  else if (status == SHADERC_STATUS_COMPILATION_ERROR)
    st = kiln_set_error(KILN_ERROR_COMPILE,
                        "shaderc could not compile %s for %s: %.*s",
                        job->name, job->target, kiln_log_head(said), said);
  else
    st = kiln_set_error(KILN_ERROR_BACKEND,
                        "shaderc failed compiling %s for %s (status %d): "
                        "%.*s",
                        job->name, job->target, status, kiln_log_head(said),
                        said);
  shaderc.shaderc_result_release(result);
  out->log = log;
  return st;
}
