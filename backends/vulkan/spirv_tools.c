/*
 * SPIRV-Tools' validator, run on every SPIR-V image before the driver sees
 * it: a driver may crash on invalid SPIR-V instead of failing, and kiln's
 * own checks (spirv.c) cover the structure only. Like every vendor
 * library it is loaded at run time, never linked.
 *
 * Where it is looked for: KILN_SPIRV_TOOLS_LIBRARY alone when set; else
 * libSPIRV-Tools-shared.so (Ubuntu's and Fedora's spirv-tools, the Vulkan
 * SDK), then kiln's own libkiln-shaderc.so (shaderc_bundle.c), which
 * carries the validator of the SPIRV-Tools it was built from and hands it
 * out by name. Without either, images get kiln's checks only, said at
 * debug level; a failed load is tried again at the next module, so a
 * library installed later is taken. KILN_SPIRV_VALIDATOR=off skips it.
 *
 * Images are validated for Vulkan 1.2, the version kiln's instance asks
 * for (SPIR-V up to 1.5), with the block layouts the device allows. One
 * SPIRV-Tools context per call: nothing is shared between threads.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

/* ---- SPIRV-Tools' API, as kiln declares it (libspirv.h) ----------------- */

typedef struct spv_context_t spv_context_t;
typedef spv_context_t *spv_context;
typedef struct spv_validator_options_t spv_validator_options_t;
typedef spv_validator_options_t *spv_validator_options;

typedef struct spv_const_binary_t {
  const uint32_t *code;
  const size_t wordCount;
} spv_const_binary_t;

typedef struct spv_position_t {
  size_t line, column, index;
} spv_position_t;

typedef struct spv_diagnostic_t {
  spv_position_t position;
  char *error;
  bool isTextSource;
} spv_diagnostic_t;
typedef spv_diagnostic_t *spv_diagnostic;

#include "backends/vulkan/shaderc_symbols.h"

typedef struct spirv_tools_table {
#define KILN_SPIRV_TOOLS_FIELD(ret, name, params) ret(*name) params;
  KILN_SPIRV_TOOLS_SYMBOLS(KILN_SPIRV_TOOLS_FIELD)
#undef KILN_SPIRV_TOOLS_FIELD
} spirv_tools_table;

/* Written once under `lock` by the first load that succeeds, read-only
 * once `loaded` is set. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool loaded;
static spirv_tools_table spvt;
static char description[PATH_MAX + 64];

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

typedef void (*spirv_tools_entry)(void);

/* Opens `path` and resolves the table from it, through dlsym or kiln's
 * bundle's own lookup; false with the reason in `why`. */
static bool open_library(const char *path, char *why, size_t why_size) {
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    kiln_dl_note_error(why, why_size, dlerror());
    return false;
  }
  spirv_tools_entry (*lookup)(const char *) = NULL;
  void *l = dlsym(handle, "kiln_shaderc_bundle_symbol");
  if (l) memcpy(&lookup, &l, sizeof lookup);
  spirv_tools_table table;
  void *sym = NULL;
  /* Copying the bits turns a void * into a function pointer without the
   * cast ISO C does not allow. */
#define KILN_SPIRV_TOOLS_RESOLVE(ret, name, params)                            \
  if (lookup) {                                                                \
    spirv_tools_entry entry = lookup(#name);                                   \
    table.name = (ret(*) params)entry;                                         \
    sym = entry ? (void *)&table.name : NULL;                                  \
  } else if ((sym = dlsym(handle, #name)) != NULL) {                           \
    memcpy(&table.name, &sym, sizeof table.name);                              \
  }                                                                            \
  if (!sym) {                                                                  \
    snprintf(why, why_size,                                                    \
             "%s lacks %s (SPIRV-Tools 2019.1 or newer is "                    \
             "needed)",                                                        \
             path, #name);                                                     \
    dlclose(handle);                                                           \
    return false;                                                              \
  }
  KILN_SPIRV_TOOLS_SYMBOLS(KILN_SPIRV_TOOLS_RESOLVE)
#undef KILN_SPIRV_TOOLS_RESOLVE
  void *first = NULL;
  if (lookup)
    memcpy(&first, &lookup, sizeof first);
  else
    first = dlsym(handle, "spvContextCreate");
  char file[PATH_MAX];
  kiln_dl_library_path(first, path, file, sizeof file);
  snprintf(description, sizeof description, "SPIRV-Tools %s (%s)",
           table.spvSoftwareVersionString(), file);
  spvt = table;
  return true;
}

/* Loads the validator unless it is loaded; false when none loads. */
static bool load(void) {
  if (atomic_load_explicit(&loaded, memory_order_acquire)) return true;
  pthread_mutex_lock(&lock);
  char why[1024] = "";
  bool ok = atomic_load_explicit(&loaded, memory_order_relaxed);
  const char *chosen = kiln_getenv("KILN_SPIRV_TOOLS_LIBRARY");
  if (!ok && chosen) {
    ok = open_library(chosen, why, sizeof why);
  } else if (!ok) {
    ok = open_library("libSPIRV-Tools-shared.so", why, sizeof why);
    for (size_t i = 0; !ok && bundle_paths[i]; i++)
      ok = open_library(bundle_paths[i], why, sizeof why);
  }
  if (ok && !atomic_load_explicit(&loaded, memory_order_relaxed)) {
    kiln_log(KILN_LOG_DEBUG, "vulkan: SPIR-V images are validated by %s",
             description);
    atomic_store_explicit(&loaded, true, memory_order_release);
  } else if (!ok) {
    kiln_log(KILN_LOG_DEBUG,
             "vulkan: SPIR-V images get kiln's own checks only: no "
             "SPIRV-Tools validator loads (%s%s; the spirv-tools package or "
             "the Vulkan SDK has libSPIRV-Tools-shared.so)",
             chosen ? "KILN_SPIRV_TOOLS_LIBRARY: " : "",
             why[0] ? why : "not found");
  }
  pthread_mutex_unlock(&lock);
  return ok;
}

bool kiln_vulkan_spirv_validator_loads(void) { return load(); }

/* Whether images are to be validated here: KILN_SPIRV_VALIDATOR is not
 * off, and the validator loads. */
static bool validating(void) {
  bool understood;
  if (!kiln_env_flag("KILN_SPIRV_VALIDATOR", true, &understood)) return false;
  if (!understood)
    kiln_log(KILN_LOG_WARN,
             "KILN_SPIRV_VALIDATOR=\"%s\" is neither on nor off (1, on, "
             "yes, true or 0, off, no, false); SPIR-V is validated",
             kiln_getenv("KILN_SPIRV_VALIDATOR"));
  return load();
}

void kiln_vulkan_image_checks(const kiln_context *ctx, char *out,
                              size_t size) {
  out[0] = '\0';
  if (!validating()) return;
  const VkPhysicalDeviceVulkan12Features *f =
      &kiln_vulkan_context_cast_const(ctx)->phys->features12;
  snprintf(out, size,
           "validated by %s for Vulkan 1.2, scalar block layout %d, uniform "
           "buffer standard layout %d",
           description, (int)f->scalarBlockLayout,
           (int)f->uniformBufferStandardLayout);
}

kiln_status kiln_vulkan_spirv_validate(const kiln_vulkan_context *vc,
                                       const uint32_t *words, size_t count,
                                       size_t index) {
  if (!validating()) return KILN_OK;
  spv_context context = spvt.spvContextCreate(KILN_SPV_ENV_VULKAN_1_2);
  spv_validator_options options = spvt.spvValidatorOptionsCreate();
  kiln_status st = KILN_OK;
  if (!context || !options) {
    st =
        kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                       "out of host memory validating SPIR-V image %zu", index);
  } else {
    const VkPhysicalDeviceVulkan12Features *f = &vc->phys->features12;
    spvt.spvValidatorOptionsSetScalarBlockLayout(options, f->scalarBlockLayout);
    spvt.spvValidatorOptionsSetUniformBufferStandardLayout(
        options, f->uniformBufferStandardLayout);
    const spv_const_binary_t binary = {words, count};
    spv_diagnostic diagnostic = NULL;
    if (spvt.spvValidateWithOptions(context, options, &binary, &diagnostic) !=
        0) {
      /* The diagnostic's lines (the rule, then the instruction) as one. */
      char error[400];
      kiln_strlcpy(error,
                   diagnostic && diagnostic->error ? diagnostic->error
                                                   : "invalid",
                   sizeof error);
      for (char *c = error; *c; c++)
        if (*c == '\n') *c = ' ';
      st = kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                          "SPIR-V image %zu is invalid for Vulkan 1.2: %s "
                          "(%s; KILN_SPIRV_VALIDATOR=off skips this check)",
                          index, error, description);
    }
    spvt.spvDiagnosticDestroy(diagnostic);
  }
  if (options) spvt.spvValidatorOptionsDestroy(options);
  if (context) spvt.spvContextDestroy(context);
  return st;
}
