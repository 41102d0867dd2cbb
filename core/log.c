/* Logging: off unless KILN_LOG or kiln_set_log_level asks for it. */
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include "core/internal.h"

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static _Atomic int level = KILN_LOG_OFF;
static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static kiln_log_handler handler;
static void *handler_data;

static void read_env(void) {
  const char *v = kiln_getenv("KILN_LOG");
  if (!v) return;
  static const char *const names[] = {"off", "error", "warn", "info", "debug"};
  for (int i = 0; i < 5; i++) {
    if (strcasecmp(v, names[i]) == 0) {
      atomic_store(&level, i);
      return;
    }
  }
  /* An unknown word still asks for logs; give the most useful level. */
  atomic_store(&level, KILN_LOG_DEBUG);
}

void kiln_set_log_level(kiln_log_level l) {
  pthread_once(&env_once, read_env);
  if (l < KILN_LOG_OFF) l = KILN_LOG_OFF;
  if (l > KILN_LOG_DEBUG) l = KILN_LOG_DEBUG;
  atomic_store(&level, (int)l);
}

kiln_log_level kiln_get_log_level(void) {
  pthread_once(&env_once, read_env);
  return (kiln_log_level)atomic_load(&level);
}

void kiln_set_log_handler(kiln_log_handler h, void *user_data) {
  pthread_mutex_lock(&handler_lock);
  handler = h;
  handler_data = user_data;
  pthread_mutex_unlock(&handler_lock);
}

void kiln_log(kiln_log_level l, const char *fmt, ...) {
  if (l == KILN_LOG_OFF || l > kiln_get_log_level()) return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  static const char *const tags[] = {"", "error", "warn", "info", "debug"};
  /* Call outside the lock: a handler may itself call into kiln. */
  pthread_mutex_lock(&handler_lock);
  kiln_log_handler h = handler;
  void *data = handler_data;
  pthread_mutex_unlock(&handler_lock);
  if (h)
    h(l, msg, data);
  else
    fprintf(stderr, "kiln %s: %s\n", tags[l], msg);
}
