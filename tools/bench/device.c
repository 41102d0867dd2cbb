/* Which device of a backend the bench runs on, for the sections that
 * start processes or contexts of their own on the same device; apart from
 * main.c, which calls the sections, so that they do not call back into it. */
#include <string.h>

#include "bench.h"

int bench_device_index(const bench *b, kiln_backend backend, size_t *out) {
  static const uint8_t zero[16];
  bool by_uuid = memcmp(b->props.uuid, zero, sizeof zero) != 0;
  size_t count = 0;
  if (kiln_device_count(backend, &count) != KILN_OK) return -1;
  for (size_t i = 0; i < count; i++) {
    kiln_device_properties p;
    if (kiln_device_get_properties(backend, i, &p) != KILN_OK)
      continue;
    if (by_uuid ? memcmp(p.uuid, b->props.uuid, sizeof p.uuid) == 0
                : strcmp(p.name, b->props.name) == 0) {
      *out = i;
      return 0;
    }
  }
  return -1;
}
