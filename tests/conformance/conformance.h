/*
 * The conformance suite: every call of kiln.h against a CPU reference, on
 * the backend KILN_BACKEND names. main.c opens one context on it for all
 * tests (conf.ctx); each test releases what it creates.
 */
#ifndef KILN_TESTS_CONFORMANCE_H
#define KILN_TESTS_CONFORMANCE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kiln/kiln.h"
#include "kiln_check.h"

typedef struct conf_suite {
  kiln_backend backend;
  kiln_context *ctx;
  kiln_device_properties props;
  uint64_t seed;
} conf_suite;

extern conf_suite conf;

/* ---- Random data, reproducible from the printed seed --------------------- */

typedef struct conf_rng {
  uint64_t state;
} conf_rng;

/* A generator for one test: the suite's seed mixed with the test's name, so
 * a test's data does not depend on which tests ran before it. */
conf_rng conf_rng_for(const char *test);
uint64_t conf_next(conf_rng *r);
/* Uniform in [0, n). */
size_t conf_below(conf_rng *r, size_t n);
/* Uniform in [lo, hi). */
float conf_uniform(conf_rng *r, float lo, float hi);
void conf_random_bytes(conf_rng *r, void *dst, size_t size);

/* malloc that fails the test instead of returning NULL. */
void *conf_alloc(size_t size);

/* ---- Device buffers with guard bytes ------------------------------------- */

/* Bytes before and after every checked range; a multiple of 256 so that
 * the payload keeps any alignment a test gives it. */
#define CONF_GUARD 256

/* A device buffer of CONF_GUARD + size + CONF_GUARD bytes, all of it
 * written with a random canary at creation. Tests work on the payload
 * [CONF_GUARD, CONF_GUARD + size) and check that the guards kept the
 * canary. */
typedef struct conf_guarded {
  kiln_buffer *buf;
  size_t size;
  unsigned char *canary; /* the whole buffer's initial bytes */
} conf_guarded;

void conf_guarded_create(conf_guarded *g, size_t size, conf_rng *r);
void conf_guarded_destroy(conf_guarded *g);
/* A buffer argument for the payload at `offset` within it. */
kiln_arg conf_guarded_arg(const conf_guarded *g, size_t offset);
/* The payload's initial bytes. */
const unsigned char *conf_guarded_initial(const conf_guarded *g);
/* Reads the whole buffer (on `stream`) and fails the test, naming `what`,
 * unless the payload equals `expected` and both guards hold the canary. */
void conf_guarded_check(const conf_guarded *g, kiln_stream *stream,
                        const void *expected, const char *what);

/* ---- GEMM kernels launched directly --------------------------------------- */

/* A GEMM call's shape: C = alpha A B + beta C, row-major, offsets in bytes
 * (c_off counted from the payload of a conf_guarded C). */
typedef struct conf_gemm_case {
  uint32_t m, n, k, lda, ldb, ldc;
  size_t a_off, b_off, c_off;
  float alpha, beta;
} conf_gemm_case;

/* C of a GEMM case in a guarded buffer (its first element at byte
 * CONF_GUARD + t->c_off): C's elements start as NaN where beta is 0 (it
 * must not be read), else as value(r); the offset, the padding between
 * rows and the guards keep the canary, and gc->canary holds all of it as
 * written. Returns the bytes from CONF_GUARD to C's end. */
size_t conf_gemm_c_create(conf_guarded *gc, const conf_gemm_case *t,
                          conf_rng *r, float (*value)(conf_rng *r));

/* Launches the built-in kernel `name`, of the GEMM argument list (c, a, b,
 * m, n, k, lda, ldb, ldc, alpha, beta), in its own shape: `threads` a
 * block, one block per tile_m x tile_n tile of C, x across its columns;
 * C at byte c_off of c. A k_split above 0 launches kiln_sgemm_f32_split's
 * list, with ceil(k / k_split) blocks per tile and a workspace of its own. */
void conf_gemm_launch(const char *name, uint32_t tile_m, uint32_t tile_n,
                      uint32_t threads, size_t shared_bytes, uint32_t k_split,
                      const conf_gemm_case *t, kiln_buffer *a, kiln_buffer *b,
                      kiln_buffer *c, size_t c_off);

/* Fails the test with the first differing byte unless a == b. */
void conf_check_bytes(const void *got, const void *want, size_t size,
                      const char *what);

/* ---- Test kernels -------------------------------------------------------- */

/* Every test-kernel image of every backend this build compiled them for,
 * in one list (kiln picks the context's). *out_count may be 0. */
const kiln_module_image *conf_images(size_t *out_count);

/* The images to load `kernel` from in ctx: on Vulkan the one SPIR-V image
 * that has it (found by loading each alone), which needs none of the
 * optional features other kernels use and takes one pipeline's time to
 * load; CUDA and HIP images hold every kernel at once, so all of them. */
const kiln_module_image *conf_images_with(kiln_context *ctx, const char *kernel,
                                          size_t *out_count);

/* The test kernels' module in conf.ctx (created on first use, released by
 * main). Fails the test loudly when the build could not compile them for
 * this backend. */
kiln_module *conf_module(void);
kiln_kernel *conf_kernel(const char *name);
/* conf_add_u32 over b's words [offset / 4, offset / 4 + n): each += value;
 * conf_busy over b's first n words: `rounds` steps of conf_lcg each. */
void conf_add_u32(kiln_stream *s, kiln_buffer *b, size_t offset, uint32_t n,
                  uint32_t value);
void conf_busy(kiln_stream *s, kiln_buffer *b, uint32_t n, uint32_t rounds);
/* v after `steps` steps of the LCG that conf_busy runs. */
uint32_t conf_lcg(uint32_t v, uint64_t steps);
/* Destroys the module, if it was created (main, at the end). */
kiln_status conf_release_module(void);

/* ---- More contexts ------------------------------------------------------- */

/* A second context on conf.ctx's backend: on the next device where the
 * backend has several, so that copies cross from one GPU to another; on
 * the same device otherwise, as on a machine with one GPU. */
kiln_context *conf_second_context(void);
/* Two more such contexts, made under KILN_VULKAN_PEER=`peer` (Vulkan's way
 * of copying between them; other backends ignore it). */
void conf_contexts_with_peer(const char *peer, kiln_context **a,
                             kiln_context **b);

/* ---- Validation messages ------------------------------------------------- */

/* A cmocka teardown that fails the test if the Vulkan validation layer
 * reported anything during it, and prints how long the test took when
 * that was CONF_SLOW_TEST_NS or more (CONF_TEST's tests, timed from the
 * previous one's teardown or from conf_test_clock_start). */
int conf_check_validation(void **state);
#define CONF_SLOW_TEST_NS UINT64_C(5000000000)
/* Starts the clock of a group's first test (main.c, before each group). */
void conf_test_clock_start(void);
void conf_install_log_handler(void);
int conf_validation_messages(void);
/* While `message` is not NULL, a validation message of exactly that text
 * is printed but not counted: a Mesa driver reports through the layer's
 * messenger the VkResult of every call that fails, also of one a test
 * makes fail on purpose. */
void conf_expect_validation(const char *message);
/* Counts kiln's messages that hold `first` or `second` (either may be
 * NULL), from 0, with the debug log on and kept off stderr, until
 * conf_count_log_end gives the level back; the suite's handler still
 * watches the validation layer meanwhile. Backends say in their debug log
 * what tests could not otherwise see (an import made, a batch kept). */
#define CONF_LOG_NEEDLES 2
void conf_count_log_begin(const char *first, const char *second);
/* The counts so far: counts[0] of `first`, counts[1] of `second`. */
void conf_count_log_read(unsigned counts[CONF_LOG_NEEDLES]);
void conf_count_log_end(void);

/* ---- The groups, one per file -------------------------------------------- */

int conf_run_device_tests(void);
int conf_run_buffer_tests(void);
int conf_run_suballoc_tests(void);
int conf_run_stream_memory_tests(void);
int conf_run_kernel_tests(void);
int conf_run_builtin_tests(void);
int conf_run_hgemm_tests(void);
int conf_run_stream_tests(void);
int conf_run_sync_tests(void);
int conf_run_error_tests(void);
int conf_run_compile_tests(void);
int conf_run_bad_input_tests(void);
int conf_run_thread_tests(void);
int conf_run_guard_tests(void);
int conf_run_global_tests(void);
int conf_run_fault_tests(void);
int conf_run_graph_tests(void);
int conf_run_branch_tests(void);
int conf_run_peer_tests(void);
int conf_run_peer_memory_tests(void);
int conf_run_interop_tests(void);
int conf_run_vendor_tests(void);
int conf_run_trace_tests(void);
int conf_run_printf_tests(void);
int conf_run_attribute_tests(void);
int conf_run_corpus_tests(void);

/* The suite started again as a child process (KILN_CONF_CHILD=mode, set by
 * test_compile.c): runs that mode on conf.ctx and returns the exit code. */
int conf_compile_child(const char *mode);
/* The same for the fault tests' modes, "fault-..." (test_faults.c), which
 * first destroy conf.ctx. */
int conf_fault_child(const char *mode);
/* The same for the printf group's, "printf-..." (test_printf.c); such a
 * child that cannot make its context for want of what it asked for exits
 * with CONF_CHILD_UNAVAILABLE. */
int conf_printf_child(const char *mode);
#define CONF_CHILD_UNAVAILABLE 77

#define CONF_TEST(fn) cmocka_unit_test_teardown(fn, conf_check_validation)

#endif /* KILN_TESTS_CONFORMANCE_H */
