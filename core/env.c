/* Reading kiln's settings from the environment strictly: a value that is
 * not exactly of the documented shape is an error or a warning, never
 * silently read as something close to it (strtoull would take " 0", "+0"
 * and "0x" as 0). */
#include <stdio.h>
#include <strings.h>

#include "core/internal.h"

kiln_status kiln_env_uint(const char *name, uint64_t max, const char *what,
                          bool *out_given, uint64_t *out_value) {
  const char *v = kiln_getenv(name);
  *out_given = false;
  if (!v) return KILN_OK;
  uint64_t n = 0;
  const char *p = v;
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned digit = (unsigned)(*p - '0');
    if (digit > max || n > (max - digit) / 10) break;
    n = n * 10 + digit;
  }
  if (p == v || *p != '\0')
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s=\"%s\" is not %s: a whole number from 0 to "
                          "%llu, in decimal digits only",
                          name, v, what, (unsigned long long)max);
  *out_given = true;
  *out_value = n;
  return KILN_OK;
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
