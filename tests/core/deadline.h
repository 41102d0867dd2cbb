/*
 * Child processes and threads with a deadline, for the core tests that
 * fork or start threads that call kiln: one still running at its deadline
 * writes its stack to stderr and the test fails in words, instead of
 * hanging until meson's timeout with nothing said. Include after
 * <cmocka.h>.
 */
#ifndef KILN_TESTS_DEADLINE_H
#define KILN_TESTS_DEADLINE_H

#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t deadline_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* `seconds` from now: many times what the work takes on a loaded machine
 * under a sanitizer, so that only stuck work meets it; best below meson's
 * limit for the test (30 s, or 120 s with test.sh's --timeout-multiplier
 * 4), so that the stack shows. */
static inline uint64_t deadline_in(unsigned seconds) {
  return deadline_now_ns() + (uint64_t)seconds * 1000000000u;
}

/* backtrace_symbols_fd only writes, and the process ends right after: the
 * stack as addresses, for addr2line. */
static inline void deadline_write_stack(int sig) {
  (void)sig;
  static const char head[] = "== the stack of a thread past its deadline\n";
  void *frames[48];
  if (write(STDERR_FILENO, head, sizeof head - 1) < 0) return;
  backtrace_symbols_fd(frames, backtrace(frames, 48), STDERR_FILENO);
}

/* From now on SIGUSR2 makes the thread it reaches write its stack. */
static inline void deadline_dump_on_sigusr2(void) {
  struct sigaction dump = {.sa_handler = deadline_write_stack};
  sigemptyset(&dump.sa_mask);
  sigaction(SIGUSR2, &dump, NULL);
}

/* ---- Children ---------------------------------------------------------- */

/* The status of child `pid` once it exits, by `deadline`; a child still
 * running then writes its stack (if it called deadline_dump_on_sigusr2)
 * and is killed, and the test fails. */
static inline int wait_child(pid_t pid, uint64_t deadline) {
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    assert_int_equal(r, 0);
    if (deadline_now_ns() >= deadline) break;
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  }
  kill(pid, SIGUSR2);
  nanosleep(&(struct timespec){1, 0}, NULL);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  fail_msg("child %d was still running at its deadline; its stack is on "
           "stderr",
           (int)pid);
  return status;
}

/* ---- Threads ----------------------------------------------------------- */

/* A thread whose end is waited for with a deadline: start_thread, then
 * join_thread. */
typedef struct deadline_thread {
  pthread_t id;
  void *(*fn)(void *);
  void *arg, *result;
  pthread_mutex_t lock;
  pthread_cond_t ended; /* on CLOCK_MONOTONIC, deadline_now_ns's clock */
  bool done;
} deadline_thread;

static inline void *deadline_thread_main(void *arg) {
  deadline_thread *t = arg;
  void *result = t->fn(t->arg);
  pthread_mutex_lock(&t->lock);
  t->result = result;
  t->done = true;
  pthread_cond_broadcast(&t->ended);
  pthread_mutex_unlock(&t->lock);
  return NULL;
}

/* Runs fn(arg) on a thread of its own. */
static inline void start_thread(deadline_thread *t, void *(*fn)(void *),
                                void *arg) {
  deadline_dump_on_sigusr2();
  t->fn = fn;
  t->arg = arg;
  t->result = NULL;
  t->done = false;
  pthread_condattr_t attr;
  assert_int_equal(pthread_condattr_init(&attr), 0);
  assert_int_equal(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC), 0);
  assert_int_equal(pthread_cond_init(&t->ended, &attr), 0);
  pthread_condattr_destroy(&attr);
  assert_int_equal(pthread_mutex_init(&t->lock, NULL), 0);
  assert_int_equal(pthread_create(&t->id, NULL, deadline_thread_main, t), 0);
}

/* fn's result once it has returned, by `deadline`. A thread still running
 * then writes its stack and the program ends, failing: the thread still
 * uses the test's memory, so no other test may run after it. */
static inline void *join_thread(deadline_thread *t, uint64_t deadline) {
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
    fprintf(stderr, "a thread was still running at its deadline; its stack "
                    "follows, and the test program stops here\n");
    pthread_kill(t->id, SIGUSR2);
    nanosleep(&(struct timespec){1, 0}, NULL);
    _exit(1);
  }
  assert_int_equal(pthread_join(t->id, NULL), 0);
  pthread_cond_destroy(&t->ended);
  pthread_mutex_destroy(&t->lock);
  return t->result;
}

#endif /* KILN_TESTS_DEADLINE_H */
