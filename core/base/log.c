/* Logging: off unless KILN_LOG or kiln_set_log_level asks for it, or
 * KILN_VULKAN_VALIDATION asks for the validation layer's messages. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static _Atomic int level = KILN_LOG_OFF;
static pthread_mutex_t handler_lock = PTHREAD_MUTEX_INITIALIZER;
static kiln_log_handler handler;
static void *handler_data;
/* A KILN_LOG value that is no level, reported once after read_env: it
 * cannot log itself, kiln_log waits for it to finish. */
static atomic_bool bad_env_pending;
static char bad_env[128];

static void read_env(void) {
  static const char *const names[] = {"off", "error", "warn", "info", "debug"};
  const char *v = kiln_getenv("KILN_LOG");
  for (int i = 0; v && i < 5; i++) {
    if (strcasecmp(v, names[i]) == 0) {
      atomic_store(&level, i);
      return;
    }
  }
  /* The validation layer's findings are logged as errors and warnings;
   * asking for the layer asks to see them. An explicit KILN_LOG (off
   * included) still wins. */
  bool valid;
  const char *layer = kiln_getenv("KILN_VULKAN_VALIDATION");
  if (kiln_env_flag("KILN_VULKAN_VALIDATION", false, &valid) ||
      (layer && (strcasecmp(layer, "core") == 0 ||
                 strcasecmp(layer, "printf") == 0)))
    atomic_store(&level, KILN_LOG_WARN);
  if (v) {
    snprintf(bad_env, sizeof bad_env, "%.100s%s", v,
             strlen(v) > 100 ? "..." : "");
    atomic_store(&bad_env_pending, true);
  }
}

static void emit(kiln_log_level l, const char *msg) {
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

static void read_env_once(void) {
  pthread_once(&env_once, read_env);
  if (!atomic_load_explicit(&bad_env_pending, memory_order_relaxed) ||
      !atomic_exchange(&bad_env_pending, false))
    return;
  /* Whatever the level: whoever set KILN_LOG wants to hear from kiln. */
  char msg[320];
  int l = atomic_load(&level);
  snprintf(msg, sizeof msg,
           "KILN_LOG=%s is not a log level (off, error, warn, info or "
           "debug, in any case); logging stays %s%s",
           bad_env, l == KILN_LOG_OFF ? "off" : "at warn",
           l == KILN_LOG_OFF ? "" : ", as KILN_VULKAN_VALIDATION asks");
  emit(KILN_LOG_WARN, msg);
}

void kiln_set_log_level(kiln_log_level l) {
  read_env_once();
  if (l < KILN_LOG_OFF) l = KILN_LOG_OFF;
  if (l > KILN_LOG_DEBUG) l = KILN_LOG_DEBUG;
  atomic_store(&level, (int)l);
}

kiln_log_level kiln_get_log_level(void) {
  read_env_once();
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
  emit(l, msg);
}

void kiln_log_always(kiln_log_level l, const char *msg) {
  read_env_once();
  emit(l, msg);
}
