/*
 * What the conformance tests of timing, waits and threads share: a gate
 * that holds a stream's work until the host opens it, so that a test knows
 * the work is unfinished while it waits; and threads and children joined
 * with a deadline, past which the stacks of the stuck process are written
 * to stderr. A header of its own, beside conformance.h, because only these
 * tests use it; defined in timing.c.
 */
#ifndef KILN_TESTS_CONFORMANCE_TIMING_H
#define KILN_TESTS_CONFORMANCE_TIMING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "kiln/kiln.h"

/* How long a thread or a child of the suite may take before it counts as
 * stuck: minutes more than the slowest of them needs under a sanitizer on
 * two loaded cores, and well within meson's limit for the whole run, so
 * that the stacks are written before meson kills the suite. */
#define CONF_DEADLINE_S 240

/* Host time, CLOCK_MONOTONIC, in nanoseconds. */
uint64_t conf_now_ns(void);

/* ---- A gate on a stream -------------------------------------------------- */

typedef struct conf_gate conf_gate;

/* NULL where a gate can hold a stream of ctx, else why not in words: CUDA
 * or HIP streams that share one queue, where the flag's write would wait
 * behind the kernel spinning on it. */
const char *conf_gate_why_not(kiln_context *ctx);

/* Closes a gate on `stream` of `ctx`: work queued on the stream from now
 * on waits, on the device, until the gate opens. Vulkan: a wait on a
 * timeline semaphore of the test's (kiln_stream_wait_native) that the host
 * signals; CUDA and HIP: conf_fault_spin on the stream, spinning until a
 * flag is written on a stream of the gate's own. The gate opens by itself
 * `open_after_ms` after this call, from a thread of its own, unless
 * conf_gate_open opened it first: so a test that fails while work waits
 * behind it does not leave the device held for ever. Fails the test where
 * conf_gate_why_not has a reason. */
conf_gate *conf_gate_close(kiln_context *ctx, kiln_stream *stream,
                           uint32_t open_after_ms);

/* How many streams conf_gate_hold_also may add to one gate. */
#define CONF_GATE_MORE 4

/* Holds `stream` (of the gate's context) behind the same closed gate, so
 * that the streams' work is released at one moment: on Vulkan the same
 * semaphore value, on CUDA and HIP a second kernel spinning on the same
 * flag. Work on `stream` that the test wants held is queued after this. */
void conf_gate_hold_also(conf_gate *g, kiln_stream *stream);

/* Opens the gate now, from any thread; false if it was open already. */
bool conf_gate_open(conf_gate *g);

/* Has the gate's thread open it `ms` from now instead, unless it is open
 * by then. */
void conf_gate_open_in(conf_gate *g, uint32_t ms);

/* When the gate began to open (conf_now_ns), or 0 while it is closed: no
 * work behind it can end before that. */
uint64_t conf_gate_opened_at(conf_gate *g);

/* Opens the gate if it is still closed, waits for the held streams' work
 * and frees the gate; before the held stream is destroyed. Fails the test
 * if opening the gate went wrong on the device's side. */
void conf_gate_free(conf_gate *g);

/* ---- Threads and children with a deadline -------------------------------- */

typedef struct conf_thread conf_thread;

/* Runs fn(arg) on a new thread, for conf_thread_join. */
conf_thread *conf_thread_start(void *(*fn)(void *), void *arg);

/* Waits for the thread until CONF_DEADLINE_S seconds after its start. Past
 * that it prints that `what` is stuck, has every thread of the process
 * write its stack to stderr, and ends the process with a failure: the
 * stuck thread still uses the test's memory, which failing the test alone
 * would free under it. */
void conf_thread_join(conf_thread *t, const char *what);

/* Starts this program again as a child, its environment this one's
 * without the variables `dropped` names ("NAME"), and with each of `set`
 * ("NAME=value", replacing a variable of that name); both lists
 * NULL-terminated, or NULL. Fails the test where it cannot. */
pid_t conf_spawn(const char *const *dropped, const char *const *set);
/* conf_spawn of a child in `mode` (KILN_CONF_CHILD; main.c hands it to
 * the group that asked), with `name=value` set where name is not NULL. */
pid_t conf_spawn_child(const char *mode, const char *name, const char *value);

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
