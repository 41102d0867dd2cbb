/* Structs that grow (kiln.h's conventions): a caller's struct comes with
 * its size as the caller's kiln.h has it, and kiln reads and writes only
 * that much. */
#include <string.h>

#include "core/internal.h"

static kiln_status check_size(const char *fn, const char *what,
                              size_t caller_size, size_t min_size) {
  if (caller_size >= min_size) return KILN_OK;
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "%s: %s is said to be %zu bytes, fewer than any "
                        "kiln.h has it (%zu): kiln.h's inline function "
                        "passes sizeof; a direct call of the _sized one "
                        "passes the size of its copy of the struct",
                        fn, what, caller_size, min_size);
}

kiln_status kiln_struct_in(const char *fn, const char *what, void *full,
                           size_t full_size, size_t min_size,
                           const void *caller, size_t caller_size) {
  memset(full, 0, full_size);
  if (!caller) return KILN_OK;
  kiln_status st = check_size(fn, what, caller_size, min_size);
  if (st != KILN_OK) return st;
  if (caller_size > full_size) {
    /* A newer kiln.h's struct: its fields past this kiln's must be left
     * at zero, their default, since this kiln cannot do what they ask. */
    const unsigned char *extra = (const unsigned char *)caller + full_size;
    for (size_t i = 0; i < caller_size - full_size; i++)
      if (extra[i])
        return kiln_set_error(
            KILN_ERROR_UNSUPPORTED,
            "%s: %s sets a field at byte %zu, past the %zu bytes this "
            "libkiln (%s) knows: the program was built against a newer "
            "kiln.h; nothing was done",
            fn, what, full_size + i, full_size, kiln_version_string());
  }
  memcpy(full, caller, caller_size < full_size ? caller_size : full_size);
  return KILN_OK;
}

void kiln_struct_out(void *caller, size_t caller_size, const void *full,
                     size_t full_size) {
  if (caller_size > full_size) {
    memset((unsigned char *)caller + full_size, 0, caller_size - full_size);
    caller_size = full_size;
  }
  memcpy(caller, full, caller_size);
}

kiln_status kiln_struct_out_check(const char *fn, const char *what,
                                  const void *caller, size_t caller_size,
                                  size_t min_size) {
  if (!caller)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn,
                          what);
  return check_size(fn, what, caller_size, min_size);
}
