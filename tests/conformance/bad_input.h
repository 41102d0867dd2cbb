/*
 * The bad-input suite's cases and their checks, shared by its files:
 * test_bad_input.c (the checks, the objects, the cases of backends,
 * devices, contexts, streams and events, and the runner),
 * test_bad_input_buffers.c, test_bad_input_kernels.c (modules,
 * compiling, launches, built-in kernels), test_bad_input_graphs.c and
 * test_bad_input_native.c (native handles).
 *
 * A case is one call with one bad input and the status kiln.h documents
 * for it, BAD(expected, call): kiln must answer with that status and a
 * message that names the function, leave every out-parameter untouched,
 * and the context must then still run a launch whose result is checked.
 */
#ifndef KILN_TESTS_CONFORMANCE_BAD_INPUT_H
#define KILN_TESTS_CONFORMANCE_BAD_INPUT_H

#include "conformance.h"
#include "core/backend.h" /* what a kernel's parameter list tells (kind_expect) */

/* A live handle passed as another type. */
#define AS(type, handle) ((type *)(void *)(handle))

/* The objects the cases use, made once (bad_fixture_init): live ones of
 * conf.ctx, ones of a second context on the same backend, and destroyed
 * ones. */
typedef struct bad_fixture {
  bool ready;
  kiln_context *ctx, *other, *dead_ctx;
  kiln_buffer *buf, *buf2, *probe, *other_buf, *dead_buf; /* 1024 bytes */
  kiln_host_buffer *hb, *other_hb, *dead_hb;              /* 1024 bytes */
  kiln_module *mod, *builtin, *other_mod, *dead_mod;
  kiln_kernel *add, *scalars, *rotate, *other_kernel, *dead_kernel;
  kiln_stream *stream, *def, *other_stream, *dead_stream;
  /* ev and other_ev are recorded and complete; unrecorded never is. */
  kiln_event *ev, *unrecorded, *other_ev, *dead_ev;
} bad_fixture;

extern bad_fixture fx;

/* Every out-parameter the cases pass: filled with a sentinel before each
 * case, and compared with `bad_untouched` after a failure. */
typedef struct bad_outs {
  kiln_context *ctx;
  kiln_buffer *buf;
  kiln_host_buffer *hb;
  kiln_module *mod;
  kiln_kernel *kernel;
  kiln_stream *stream;
  kiln_event *event;
  kiln_graph *graph;
  bool capturing;
  kiln_backend backend;
  kiln_sync_policy policy;
  size_t count;
  float ms;
  kiln_device_properties props;
  kiln_module_build_info info;
  kiln_native_context nctx;
  kiln_native_buffer nbuf;
  kiln_native_stream nstream;
  kiln_kernel_attributes attrs;
  uint32_t block, grid;
} bad_outs;

extern bad_outs out, bad_untouched;

/* What a failing case's text does not show (a table row's values); printed
 * with the failure and cleared after each case. */
extern char bad_detail[128];

/* Makes the fixture on first use (inside a test). */
void bad_fixture_init(void);

/* Judges one case (see BAD) and then checks the context still works. */
void bad_verdict(const char *call, const char *fn, kiln_status expected,
                 kiln_status got);

/* A function that answers a value instead of a status: `right` says
 * whether it was the documented one. */
void bad_value(const char *fn, const char *what, bool right);

/* The number of failed cases so far; bad_finish fails the test if any
 * failed since `before`. */
int bad_failures(void);
void bad_finish(int before);

/* One case: `call` must answer `expected`, for function `fn` (NULL: the
 * first kiln_ function the call's text names). `expected` is evaluated
 * before the call: it may call kiln (bad_compile_error does), which would
 * overwrite the call's message before bad_verdict reads it. */
#define BAD_AS(fn, expected, ...)                       \
  do {                                                  \
    const kiln_status bad_want_ = (expected);           \
    memset(&out, 0xa5, sizeof out);                     \
    memcpy(&bad_untouched, &out, sizeof out);           \
    kiln_clear_error();                                 \
    const kiln_status bad_st_ = (__VA_ARGS__);          \
    bad_verdict(#__VA_ARGS__, fn, bad_want_, bad_st_);  \
  } while (0)
#define BAD(expected, ...) BAD_AS(NULL, expected, __VA_ARGS__)

#define VALUE(fn, ...) bad_value(fn, #__VA_ARGS__, (__VA_ARGS__))

/* Value-returning calls as statuses: the neutral value (and a message,
 * which BAD checks) for a bad handle. */
#define ZERO_OR(x) ((x) == 0 ? KILN_ERROR_INVALID_HANDLE : KILN_OK)
#define EMPTY_OR(x) ((x)[0] == '\0' ? KILN_ERROR_INVALID_HANDLE : KILN_OK)
#define AUTO_OR(x) \
  ((x) == KILN_BACKEND_AUTO ? KILN_ERROR_INVALID_HANDLE : KILN_OK)

/* Whether the backend loads images of format f (kiln.h). */
bool bad_own_format(kiln_image_format f);

/* The status of a compile that fails: KILN_ERROR_COMPILE, or
 * KILN_ERROR_UNAVAILABLE where the backend's compiler cannot be loaded.
 * It calls kiln_compiler_available, which replaces kiln_last_error: use it
 * only as BAD's `expected`. */
kiln_status bad_compile_error(void);

/* Releases what test_bad_input_kernels.c made for its cases. */
void bad_kernel_fixture_release(void);

/* The tests of the other files, run in test_bad_input.c's group. */
void bad_buffer_calls(void **state);
void bad_host_buffer_calls(void **state);
void bad_module_calls(void **state);
void bad_compile_calls(void **state);
void bad_launch_calls(void **state);
void bad_builtin_calls(void **state);
void bad_graph_calls(void **state);
void bad_native_calls(void **state);

#endif /* KILN_TESTS_CONFORMANCE_BAD_INPUT_H */
