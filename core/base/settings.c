/* kiln's numeric settings from the environment, read strictly: strtoull
 * would take " 0", "+0" and "0x" as 0, and a setting that is not exactly a
 * number is an error in words instead. */
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
