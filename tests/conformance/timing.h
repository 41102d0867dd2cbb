/*
 * What the conformance tests of timing, waits and threads share: threads
 * and children joined with a deadline, past which the stacks of the stuck
 * process are written to stderr. A header of its own, beside
 * conformance.h, because only these tests use it; defined in
 * test_threads.c.
 */
#ifndef KILN_TESTS_CONFORMANCE_TIMING_H
#define KILN_TESTS_CONFORMANCE_TIMING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* How long a thread or a child of the suite may take before it counts as
 * stuck: minutes more than the slowest of them needs under a sanitizer on
 * two loaded cores, and well within meson's limit for the whole run, so
 * that the stacks are written before meson kills the suite. */
#define CONF_DEADLINE_S 240

/* Host time, CLOCK_MONOTONIC, in nanoseconds. */
uint64_t conf_now_ns(void);

/* ---- Threads and children with a deadline --------------------------------- */

typedef struct conf_thread conf_thread;

/* Runs fn(arg) on a new thread, for conf_thread_join. */
conf_thread *conf_thread_start(void *(*fn)(void *), void *arg);

/* Waits for the thread until CONF_DEADLINE_S seconds after its start. Past
 * that it prints that `what` is stuck, has every thread of the process
 * write its stack to stderr, and ends the process with a failure: the
 * stuck thread still uses the test's memory, which failing the test alone
 * would free under it. */
void conf_thread_join(conf_thread *t, const char *what);

/* Waits for child `pid` until CONF_DEADLINE_S seconds from now and returns
 * its status as waitpid gives it. Past that it prints that `what` is
 * stuck, has the child's threads write their stacks, kills it and fails
 * the test. */
int conf_wait_child(pid_t pid, const char *what);

/* Has every thread of process `pid` write its stack to stderr: SIGUSR2 to
 * each (main.c's handler, in the suite and its children), then a pause
 * for them to write. */
void conf_dump_stacks(pid_t pid);

#endif /* KILN_TESTS_CONFORMANCE_TIMING_H */
