/* What the conformance tests of timing, waits and threads share
 * (timing.h): the gate that holds a stream's work until the host opens it,
 * and threads and children joined with a deadline. */
/* tgkill: SIGUSR2 to each thread of a stuck process, whose stacks main.c's
 * handler then writes (POSIX can signal only threads of its own making). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "conformance.h"
#include "timing.h"

#if CONF_VULKAN_HEADERS
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#endif

/* ---- The gate (timing.h) ------------------------------------------------- */

/* conf_fault_spin's clock cycles behind a CUDA or HIP gate: 2^36, half a
 * minute at 2 GHz, longer than any gate is held, yet the kernel ends by
 * itself should its flag never come. */
#define GATE_SPIN_CYCLES (UINT64_C(1) << 36)

struct conf_gate {
  kiln_context *ctx;
  kiln_stream *held;
  kiln_stream *also[CONF_GATE_MORE]; /* conf_gate_hold_also's */
  size_t also_count;
#if CONF_VULKAN_HEADERS
  VkDevice device;
  VkSemaphore semaphore;
  PFN_vkSignalSemaphore vkSignalSemaphore;
  PFN_vkDestroySemaphore vkDestroySemaphore;
#endif
  kiln_module *module;
  kiln_buffer *flag;
  kiln_stream *opener;
  conf_thread *timer; /* opens it at open_by */
  /* Guards the fields below; `changed` on CLOCK_MONOTONIC. */
  pthread_mutex_t lock;
  pthread_cond_t changed;
  uint64_t opened_at, open_by;
  char failure[256]; /* how opening it failed, if it did */
};

#if CONF_VULKAN_HEADERS
#if VK_USE_64_BIT_PTR_DEFINES == 1
#define GATE_U64(h) ((uint64_t)(uintptr_t)(h))
#else
#define GATE_U64(h) ((uint64_t)(h))
#endif

/* The semaphore on the context's own VkDevice, and the stream waiting for
 * it to reach 1. */
static void gate_close_vulkan(conf_gate *g) {
  kiln_native_context nc;
  check_ok(kiln_context_get_native(g->ctx, &nc));
  PFN_vkGetInstanceProcAddr gipa =
      (PFN_vkGetInstanceProcAddr)nc.vk_get_instance_proc_addr;
  PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(
      (VkInstance)nc.vk_instance, "vkGetDeviceProcAddr");
  assert_non_null(gdpa);
  g->device = (VkDevice)nc.vk_device;
  PFN_vkCreateSemaphore create =
      (PFN_vkCreateSemaphore)gdpa(g->device, "vkCreateSemaphore");
  g->vkSignalSemaphore =
      (PFN_vkSignalSemaphore)gdpa(g->device, "vkSignalSemaphore");
  g->vkDestroySemaphore =
      (PFN_vkDestroySemaphore)gdpa(g->device, "vkDestroySemaphore");
  assert_true(create && g->vkSignalSemaphore && g->vkDestroySemaphore);
  VkSemaphoreTypeCreateInfo type = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
  VkSemaphoreCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
  assert_int_equal(create(g->device, &info, NULL, &g->semaphore), VK_SUCCESS);
  check_ok(kiln_stream_wait_native(g->held, GATE_U64(g->semaphore), 1));
}
#endif

/* A kernel on `stream` that spins until the gate's flag is written. */
static void gate_spin_on(conf_gate *g, kiln_stream *stream) {
  kiln_kernel *spin = NULL;
  check_ok(kiln_module_get_kernel(g->module, "conf_fault_spin", &spin));
  const uint32_t zero = 0;
  check_ok(kiln_buffer_fill(stream, g->flag, 0, 4, &zero, 4));
  const kiln_launch_config one = {{1, 1, 1}, {1, 1, 1}, 0};
  const kiln_arg args[2] = {kiln_arg_buffer(g->flag, 0),
                            kiln_arg_u64(GATE_SPIN_CYCLES)};
  check_ok(kiln_launch(stream, spin, &one, args, 2));
}

static void gate_close_spinning(conf_gate *g) {
  size_t count = 0;
  const kiln_module_image *images =
      conf_images_with(g->ctx, "conf_fault_spin", &count);
  check_ok(kiln_module_create(g->ctx, images, count, &g->module));
  check_ok(kiln_buffer_create(g->ctx, 4, 0, &g->flag));
  check_ok(kiln_stream_create(g->ctx, &g->opener));
  gate_spin_on(g, g->held);
}

/* Opens the gate with g->lock held. The time is taken first: a wait may
 * end as soon as the device's side of it is open. */
static void gate_open_locked(conf_gate *g) {
  g->opened_at = conf_now_ns();
#if CONF_VULKAN_HEADERS
  if (g->semaphore != VK_NULL_HANDLE) {
    VkSemaphoreSignalInfo open = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
        .semaphore = g->semaphore,
        .value = 1};
    VkResult r = g->vkSignalSemaphore(g->device, &open);
    if (r != VK_SUCCESS)
      snprintf(g->failure, sizeof g->failure, "vkSignalSemaphore: %d", r);
  }
#endif
  if (g->flag) {
    const uint32_t set = 1;
    kiln_status st = kiln_buffer_write(g->opener, g->flag, 0, &set, 4);
    if (st != KILN_OK)
      snprintf(g->failure, sizeof g->failure,
               "kiln_buffer_write of the gate's flag: %s: %s",
               kiln_status_name(st), kiln_last_error());
  }
  pthread_cond_broadcast(&g->changed);
}

/* The gate's thread: opens it at g->open_by (which conf_gate_open_in may
 * move) unless it was opened before. */
static void *gate_timer(void *arg) {
  conf_gate *g = arg;
  pthread_mutex_lock(&g->lock);
  while (!g->opened_at) {
    if (conf_now_ns() >= g->open_by) {
      gate_open_locked(g);
      break;
    }
    const struct timespec until = {(time_t)(g->open_by / 1000000000u),
                                   (long)(g->open_by % 1000000000u)};
    pthread_cond_timedwait(&g->changed, &g->lock, &until);
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

const char *conf_gate_why_not(kiln_context *ctx) {
  kiln_device_properties props;
  check_ok(kiln_context_get_properties(ctx, &props));
  if (kiln_context_backend(ctx) != KILN_BACKEND_VULKAN &&
      props.stream_queues == 1)
    return "the device's streams share one queue, so a flag written on one "
           "cannot reach a kernel spinning on another";
  return NULL;
}

conf_gate *conf_gate_close(kiln_context *ctx, kiln_stream *stream,
                           uint32_t open_after_ms) {
  const char *why_not = conf_gate_why_not(ctx);
  if (why_not) fail_msg("no gate can hold a stream here: %s", why_not);
  conf_gate *g = conf_alloc(sizeof *g);
  memset(g, 0, sizeof *g);
  g->ctx = ctx;
  g->held = stream;
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&g->changed, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&g->lock, NULL);
#if CONF_VULKAN_HEADERS
  if (kiln_context_backend(ctx) == KILN_BACKEND_VULKAN)
    gate_close_vulkan(g);
  else
    gate_close_spinning(g);
#else
  gate_close_spinning(g);
#endif
  g->open_by = conf_now_ns() + (uint64_t)open_after_ms * 1000000u;
  g->timer = conf_thread_start(gate_timer, g);
  return g;
}

void conf_gate_hold_also(conf_gate *g, kiln_stream *stream) {
  if (g->also_count == CONF_GATE_MORE)
    fail_msg("a gate holds at most %d streams besides its own",
             CONF_GATE_MORE);
  pthread_mutex_lock(&g->lock);
  const bool open = g->opened_at != 0;
  pthread_mutex_unlock(&g->lock);
  if (open) fail_msg("conf_gate_hold_also on a gate that is open");
#if CONF_VULKAN_HEADERS
  if (g->semaphore != VK_NULL_HANDLE)
    check_ok(kiln_stream_wait_native(stream, GATE_U64(g->semaphore), 1));
  else
    gate_spin_on(g, stream);
#else
  gate_spin_on(g, stream);
#endif
  g->also[g->also_count++] = stream;
}

bool conf_gate_open(conf_gate *g) {
  pthread_mutex_lock(&g->lock);
  const bool was_closed = !g->opened_at;
  if (was_closed) gate_open_locked(g);
  pthread_mutex_unlock(&g->lock);
  return was_closed;
}

void conf_gate_open_in(conf_gate *g, uint32_t ms) {
  pthread_mutex_lock(&g->lock);
  g->open_by = conf_now_ns() + (uint64_t)ms * 1000000u;
  pthread_cond_broadcast(&g->changed);
  pthread_mutex_unlock(&g->lock);
}

uint64_t conf_gate_opened_at(conf_gate *g) {
  pthread_mutex_lock(&g->lock);
  const uint64_t at = g->opened_at;
  pthread_mutex_unlock(&g->lock);
  return at;
}

void conf_gate_free(conf_gate *g) {
  conf_gate_open(g);
  conf_thread_join(g->timer, "the thread that opens a gate");
  if (g->failure[0]) fail_msg("opening the gate: %s", g->failure);
  /* Unbounded whatever KILN_SYNC_TIMEOUT_MS says: the work behind the gate
   * ends once it is open. */
  check_ok(kiln_stream_synchronize_timeout(g->held, UINT64_MAX));
  for (size_t i = 0; i < g->also_count; i++)
    check_ok(kiln_stream_synchronize_timeout(g->also[i], UINT64_MAX));
#if CONF_VULKAN_HEADERS
  if (g->semaphore != VK_NULL_HANDLE)
    g->vkDestroySemaphore(g->device, g->semaphore, NULL);
#endif
  if (g->opener) {
    check_ok(kiln_stream_destroy(g->opener));
    check_ok(kiln_buffer_destroy(g->flag));
    check_ok(kiln_module_destroy(g->module));
  }
  pthread_cond_destroy(&g->changed);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

/* ---- Threads and children with a deadline (timing.h) --------------------- */

uint64_t conf_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct conf_thread {
  pthread_t id;
  void *(*fn)(void *);
  void *arg;
  uint64_t started;
  pthread_mutex_t lock;
  pthread_cond_t ended; /* on CLOCK_MONOTONIC, as the deadline is */
  bool done;
};

static void *run_and_say_done(void *arg) {
  conf_thread *t = arg;
  t->fn(t->arg);
  pthread_mutex_lock(&t->lock);
  t->done = true;
  pthread_cond_broadcast(&t->ended);
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

conf_thread *conf_thread_start(void *(*fn)(void *), void *arg) {
  conf_thread *t = conf_alloc(sizeof *t);
  *t = (conf_thread){.fn = fn, .arg = arg, .started = conf_now_ns()};
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&t->ended, &attr);
  pthread_condattr_destroy(&attr);
  pthread_mutex_init(&t->lock, NULL);
  int err = pthread_create(&t->id, NULL, run_and_say_done, t);
  if (err != 0) fail_msg("pthread_create: %s", strerror(err));
  return t;
}

void conf_dump_stacks(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/task", (long)pid);
  DIR *dir = opendir(path);
  if (!dir) {
    fprintf(stderr, "kiln-conformance: %s: %s\n", path, strerror(errno));
    return;
  }
  for (struct dirent *e; (e = readdir(dir));) {
    const pid_t tid = (pid_t)atol(e->d_name);
    if (tid > 0) tgkill(pid, tid, SIGUSR2);
  }
  closedir(dir);
  /* The handlers write when each thread next runs. */
  const struct timespec pause = {1, 0};
  nanosleep(&pause, NULL);
}

/* Whether environment entry `entry` ("NAME=value") names one of `names`
 * (each "NAME" or "NAME=value"; NULL-terminated, or NULL). */
static bool named(const char *entry, const char *const *names) {
  for (size_t i = 0; names && names[i]; i++) {
    const char *eq = strchr(names[i], '=');
    const size_t len = eq ? (size_t)(eq - names[i]) : strlen(names[i]);
    if (strncmp(entry, names[i], len) == 0 && entry[len] == '=') return true;
  }
  return false;
}

pid_t conf_spawn(const char *const *dropped, const char *const *set) {
  size_t n = 0, extra = 0;
  while (environ[n]) n++;
  while (set && set[extra]) extra++;
  char **env = conf_alloc((n + extra + 1) * sizeof *env);
  size_t used = 0;
  for (size_t i = 0; i < n; i++)
    if (!named(environ[i], dropped) && !named(environ[i], set))
      env[used++] = environ[i];
  for (size_t i = 0; i < extra; i++) env[used++] = (char *)set[i];
  env[used] = NULL;
  char *argv[] = {"kiln-conformance", NULL};
  fflush(stdout);
  fflush(stderr);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, env);
  free(env);
  if (err != 0) fail_msg("posix_spawn: %s", strerror(err));
  return pid;
}

pid_t conf_spawn_child(const char *mode, const char *name,
                       const char *value) {
  char mode_var[64], extra[256];
  snprintf(mode_var, sizeof mode_var, "KILN_CONF_CHILD=%s", mode);
  if (name) snprintf(extra, sizeof extra, "%s=%s", name, value);
  const char *const set[] = {mode_var, name ? extra : NULL, NULL};
  return conf_spawn(NULL, set);
}

int conf_wait_child(pid_t pid, const char *what) {
  const uint64_t deadline =
      conf_now_ns() + (uint64_t)CONF_DEADLINE_S * 1000000000u;
  for (;;) {
    int status = 0;
    const pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0 && errno != EINTR)
      fail_msg("waitpid for %s: %s", what, strerror(errno));
    if (conf_now_ns() > deadline) {
      fflush(stdout);
      fprintf(stderr,
              "kiln-conformance: %s (process %ld) did not end within %d s; "
              "the stacks of its threads follow\n",
              what, (long)pid, CONF_DEADLINE_S);
      conf_dump_stacks(pid);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      fail_msg("%s did not end within %d s and was killed; its output "
               "above shows how far it got",
               what, CONF_DEADLINE_S);
    }
    const struct timespec nap = {0, 20000000};
    nanosleep(&nap, NULL);
  }
}

void conf_thread_join(conf_thread *t, const char *what) {
  const uint64_t deadline =
      t->started + (uint64_t)CONF_DEADLINE_S * 1000000000u;
  const struct timespec until = {(time_t)(deadline / 1000000000u),
                                 (long)(deadline % 1000000000u)};
  pthread_mutex_lock(&t->lock);
  int err = 0;
  while (!t->done && err != ETIMEDOUT)
    err = pthread_cond_timedwait(&t->ended, &t->lock, &until);
  const bool done = t->done;
  pthread_mutex_unlock(&t->lock);
  if (!done) {
    fflush(stdout);
    fprintf(stderr,
            "kiln-conformance: %s did not end within %d s; the stacks of "
            "every thread follow, and the run stops here\n",
            what, CONF_DEADLINE_S);
    conf_dump_stacks(getpid());
    fflush(stderr);
    _Exit(1);
  }
  pthread_join(t->id, NULL);
  pthread_cond_destroy(&t->ended);
  pthread_mutex_destroy(&t->lock);
  free(t);
}
