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
 */
#include <shaderc/shaderc.h>
#include <string.h>

#include "backends/vulkan/shaderc_symbols.h"

typedef void (*kiln_shaderc_entry)(void);

static const struct {
  const char *name;
  kiln_shaderc_entry entry;
} entries[] = {
#define KILN_SHADERC_ENTRY(ret, name, params) {#name, (kiln_shaderc_entry)name},
    KILN_SHADERC_SYMBOLS(KILN_SHADERC_ENTRY)
#undef KILN_SHADERC_ENTRY
};

kiln_shaderc_entry kiln_shaderc_bundle_symbol(const char *name);
const char *kiln_shaderc_bundle_version(void);

/* shaderc's entry point `name`, or NULL. */
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
