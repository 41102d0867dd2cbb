/* Messages built piece by piece: see common.h. */
#include <stdio.h>

#include "backends/common/common.h"

void kiln_text_add(kiln_text *t, const char *fmt, ...) {
  if (t->used + 1 >= sizeof t->buf) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->buf + t->used, sizeof t->buf - t->used, fmt, ap);
  va_end(ap);
  if (n > 0) t->used += (size_t)n;
  if (t->used >= sizeof t->buf) t->used = sizeof t->buf - 1;
}
