/* Reading the environment, strictly: a value that is not exactly of the
 * documented shape is reported, never silently read as something close to
 * it. These readers report nothing themselves (the logger uses them);
 * core/base/settings.c words the errors of numeric settings. */
#include <stdlib.h>
#include <strings.h>

#include "core/internal.h"

const char *kiln_getenv(const char *name) {
  const char *v = getenv(name);
  return (v && *v) ? v : NULL;
}

bool kiln_env_flag(const char *name, bool fallback, bool *out_valid) {
  const char *v = kiln_getenv(name);
  *out_valid = true;
  if (!v) return fallback;
  static const char *const on[] = {"1", "on", "yes", "true"};
  static const char *const off[] = {"0", "off", "no", "false"};
  for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
    if (strcasecmp(v, on[i]) == 0) return true;
    if (strcasecmp(v, off[i]) == 0) return false;
  }
  *out_valid = false;
  return fallback;
}
