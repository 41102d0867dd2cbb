/*
 * Child processes with a deadline, for the core tests that fork: a child
 * still running at its deadline writes its stack to stderr and is killed,
 * and the test fails in words instead of hanging until meson's timeout.
 * Include after <cmocka.h>.
 */
#ifndef KILN_TESTS_CHILD_H
#define KILN_TESTS_CHILD_H

#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline uint64_t child_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* When a child started now must have ended, `seconds` from now: many
 * times what it takes on a loaded machine under a sanitizer, so that only
 * a stuck child meets it; best below meson's limit for the test (30 s, or
 * 120 s with test.sh's --timeout-multiplier 4), so that the stack shows. */
static inline uint64_t child_deadline(unsigned seconds) {
  return child_now_ns() + (uint64_t)seconds * 1000000000u;
}

/* backtrace_symbols_fd only writes, and the child is killed right after:
 * its stack as addresses, for addr2line. */
static inline void child_stack_to_stderr(int sig) {
  (void)sig;
  static const char head[] = "== the stuck child's stack\n";
  void *frames[48];
  if (write(STDERR_FILENO, head, sizeof head - 1) < 0) return;
  backtrace_symbols_fd(frames, backtrace(frames, 48), STDERR_FILENO);
}

/* For the child to call first: SIGUSR2 writes its stack. */
static inline void child_dumps_its_stack(void) {
  struct sigaction dump = {.sa_handler = child_stack_to_stderr};
  sigemptyset(&dump.sa_mask);
  sigaction(SIGUSR2, &dump, NULL);
}

/* The status of child `pid` once it exits, by `deadline` (child_now_ns's
 * clock); a child still running then writes its stack (SIGUSR2) and is
 * killed, and the test fails. */
static inline int wait_child(pid_t pid, uint64_t deadline) {
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    assert_int_equal(r, 0);
    if (child_now_ns() >= deadline) break;
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

#endif /* KILN_TESTS_CHILD_H */
