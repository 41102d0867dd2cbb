/*
 * libkiln-shaderc: a whole shaderc, built from the static archives of the
 * machine that builds kiln (shaderc, glslang and SPIRV-Tools), for machines
 * whose libshaderc.so.1 cannot be loaded. Debian 12's libshaderc1 is such a
 * library: it was linked against static glslang and SPIRV-Tools and left
 * their symbols undefined, and Debian ships those only as archives.
 *
 * Everything from the archives stays hidden inside this library
 * (-Wl,--exclude-libs,ALL): its glslang and SPIRV-Tools never meet the
 * copies that a Vulkan driver or the validation layer carry. What it
 * exports is a lookup of shaderc's entry points by name, which compiler.c
 * uses instead of dlsym, and the versions it was built from. It is loaded
 * with dlopen like any shaderc, never linked to kiln.
 *
 * The same lookup hands out SPIRV-Tools' validator (spirv_tools.c), which
 * the archives hold anyway: wherever kiln's GLSL compiler is, its SPIR-V
 * validator is too, also on Debian 12, whose spirv-tools package ships no
 * shared library.
 */
#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>
#include <stddef.h>
#include <string.h>

#include "backends/vulkan/shaderc_symbols.h"

typedef void (*kiln_shaderc_entry)(void);

static const struct {
  const char *name;
  kiln_shaderc_entry entry;
} entries[] = {
#define KILN_SHADERC_ENTRY(ret, name, params) {#name, (kiln_shaderc_entry)name},
    KILN_SHADERC_SYMBOLS(KILN_SHADERC_ENTRY)
        KILN_SPIRV_TOOLS_SYMBOLS(KILN_SHADERC_ENTRY)
#undef KILN_SHADERC_ENTRY
};

/* spirv_tools.c declares these of libspirv.h itself. */
_Static_assert(SPV_ENV_VULKAN_1_2 == KILN_SPV_ENV_VULKAN_1_2,
               "spv_target_env changed");
_Static_assert(offsetof(spv_diagnostic_t, error) == 3 * sizeof(size_t),
               "spv_diagnostic_t changed");

kiln_shaderc_entry kiln_shaderc_bundle_symbol(const char *name);
const char *kiln_shaderc_bundle_version(void);

/* shaderc's or SPIRV-Tools' entry point `name`, or NULL. */
kiln_shaderc_entry kiln_shaderc_bundle_symbol(const char *name) {
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++)
    if (strcmp(entries[i].name, name) == 0) return entries[i].entry;
  return NULL;
}

/* "shaderc 2023.2-1, glslang 12.0.0-2, spirv-tools 2023.1-2": the
 * packages of the archives, part of every cache key through compiler.c's
 * description. */
const char *kiln_shaderc_bundle_version(void) {
  return KILN_SHADERC_BUNDLE_VERSION;
}
