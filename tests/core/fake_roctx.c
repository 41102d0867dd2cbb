/* A stand-in for ROCm's libroctx64.so (KILN_ROCTX_LIBRARY points kiln at
 * it): the two calls KILN_TRACE=nvtx makes, recorded one line each, which
 * the test reads back through fake_roctx_text():
 *   push kiln_buffer_write 64 B
 *   pop */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char text[1 << 16];
static size_t length;
static int depth;

/* Records a line and moves the depth by `step`, answering the depth
 * before it. */
static int add(const char *what, const char *message, int step) {
  pthread_mutex_lock(&lock);
  int n = snprintf(text + length, sizeof text - length, "%s%s%s\n", what,
                   message ? " " : "", message ? message : "");
  if (n > 0 && (size_t)n < sizeof text - length) length += (size_t)n;
  int before = depth;
  depth += step;
  pthread_mutex_unlock(&lock);
  return before;
}

/* Both answer the 0-based level of the range they open or close, as
 * rocTX does. */
EXPORT int roctxRangePushA(const char *message) {
  return add("push", message, 1);
}

EXPORT int roctxRangePop(void) { return add("pop", NULL, -1) - 1; }

/* What was recorded since the last call, which clears it; the caller
 * frees the copy. */
EXPORT char *fake_roctx_text(void) {
  pthread_mutex_lock(&lock);
  char *copy = strdup(text);
  length = 0;
  text[0] = '\0';
  pthread_mutex_unlock(&lock);
  return copy;
}
