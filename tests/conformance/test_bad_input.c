/* The bad-input suite: every public function of kiln.h called with every
 * class of bad input that applies to it — NULL for each pointer, handles of
 * the wrong type, of another context or destroyed, offsets and sizes out of
 * range or wrapping, misaligned fills, absurd allocations, argument lists
 * that do not match the kernel, launch shapes beyond the device's limits,
 * unknown names, broken and foreign images, bad compile options, missing
 * files and bad environment values. Each case states the status kiln.h
 * documents for it; kiln must answer with that status and a message that
 * names the function, leave out-parameters untouched, and the context must
 * then still run a launch whose result is checked. Every case runs and
 * every failing one is listed; the last test checks that the cases called
 * every function kiln.h declares, and the total is printed per backend
 * ("bad-input: N cases, all answered").
 *
 * This file holds the checks, the objects the cases use, the cases of
 * backends, devices, contexts (and the environment read at their
 * creation), streams and events, and the runner; test_bad_input_buffers.c
 * and test_bad_input_kernels.c the others.
 *
 * Over 600 lines: the checks and objects every case uses sit here, beside
 * the runner, rather than in a header of their own. */
#include <ctype.h>
#include <stdio.h>

#include "bad_input.h"

bad_fixture fx;
bad_outs out, bad_untouched;
char bad_detail[128];

/* ---- Running a case ------------------------------------------------------ */

static int case_count, failure_count;
static uint32_t probe_round;

/* The functions the cases called (see every_function_has_cases). */
static char seen[128][48];
static size_t seen_count;

static void note_function(const char *fn) {
  for (size_t i = 0; i < seen_count; i++)
    if (strcmp(seen[i], fn) == 0) return;
  if (seen_count < sizeof seen / sizeof seen[0])
    snprintf(seen[seen_count++], sizeof seen[0], "%s", fn);
}

/* The first kiln_ identifier of a call's text: the function it calls. */
static void function_of(const char *call, char *fn, size_t size) {
  const char *p = strstr(call, "kiln_");
  size_t n = 0;
  while (p && n + 1 < size && (isalnum((unsigned char)p[n]) || p[n] == '_'))
    n++;
  if (p) memcpy(fn, p, n);
  fn[n] = '\0';
}

static void failed(const char *what, const char *why) {
  failure_count++;
  printf("  bad-input FAILED: %s%s%s\n    %s\n", what,
         bad_detail[0] ? " with " : "", bad_detail, why);
}

/* A launch whose result is checked: the context must still work. */
static void probe(const char *after) {
  enum { N = 64 };
  uint32_t data[N], got[N];
  const uint32_t add = ++probe_round;
  for (uint32_t i = 0; i < N; i++) data[i] = i * 2654435761u;
  const kiln_launch_config c = {{1, 1, 1}, {N, 1, 1}, 0};
  const kiln_arg args[3] = {kiln_arg_buffer(fx.probe, 0), kiln_arg_u32(N),
                            kiln_arg_u32(add)};
  kiln_status st = kiln_buffer_write(NULL, fx.probe, 0, data, sizeof data);
  if (st == KILN_OK) st = kiln_launch(NULL, fx.add, &c, args, 3);
  if (st == KILN_OK) st = kiln_buffer_read(NULL, fx.probe, 0, got, sizeof got);
  bool right = st == KILN_OK;
  for (size_t i = 0; right && i < N; i++) right = got[i] == data[i] + add;
  if (right) return;
  char why[1200];
  snprintf(why, sizeof why,
           "afterwards the context no longer runs a correct launch: %s%s%s",
           st ? kiln_status_name(st) : "wrong result", st ? ": " : "",
           st ? kiln_last_error() : "");
  failed(after, why);
}

/* Releases what a call that should have failed created. */
static void release_outs(void) {
  if (out.buf != bad_untouched.buf) kiln_buffer_destroy(out.buf);
  if (out.hb != bad_untouched.hb) kiln_host_buffer_destroy(out.hb);
  if (out.mod != bad_untouched.mod) kiln_module_destroy(out.mod);
  if (out.stream != bad_untouched.stream) kiln_stream_destroy(out.stream);
  if (out.event != bad_untouched.event) kiln_event_destroy(out.event);
  if (out.graph != bad_untouched.graph) kiln_graph_destroy(out.graph);
  if (out.ctx != bad_untouched.ctx) kiln_context_destroy(out.ctx);
}

void bad_verdict(const char *call, const char *fn_given, kiln_status want,
                 kiln_status got) {
  char fn[48];
  if (fn_given)
    snprintf(fn, sizeof fn, "%s", fn_given);
  else
    function_of(call, fn, sizeof fn);
  note_function(fn);
  case_count++;
  const char *msg = kiln_last_error();
  char why[1400] = "";
  if (got != want)
    snprintf(why, sizeof why, "returned %s, kiln.h says %s (message: \"%s\")",
             kiln_status_name(got), kiln_status_name(want), msg);
  else if (want != KILN_OK && !msg[0])
    snprintf(why, sizeof why, "answered %s with no message",
             kiln_status_name(got));
  else if (want != KILN_OK && !strstr(msg, fn))
    snprintf(why, sizeof why,
             "answered %s, but the message does not name %s: \"%s\"",
             kiln_status_name(got), fn, msg);
  else if (want != KILN_OK && memcmp(&out, &bad_untouched, sizeof out) != 0)
    snprintf(why, sizeof why, "answered %s but wrote an out-parameter",
             kiln_status_name(got));
  if (why[0]) failed(call, why);
  if (got == KILN_OK && want != KILN_OK) release_outs();
  probe(call);
  bad_detail[0] = '\0';
}

void bad_value(const char *fn, const char *what, bool right) {
  note_function(fn);
  case_count++;
  if (!right) failed(what, "does not hold");
  probe(what);
  bad_detail[0] = '\0';
}

int bad_failures(void) { return failure_count; }

void bad_finish(int before) {
  if (failure_count > before)
    fail_msg("%d case(s) above were not answered as kiln.h documents",
             failure_count - before);
}

bool bad_own_format(kiln_image_format f) {
  switch (conf.backend) {
  case KILN_BACKEND_VULKAN: return f == KILN_IMAGE_SPIRV;
  case KILN_BACKEND_CUDA:
    return f == KILN_IMAGE_PTX || f == KILN_IMAGE_CUBIN ||
           f == KILN_IMAGE_FATBIN;
  default: return f == KILN_IMAGE_HIP_CODE_OBJECT;
  }
}

kiln_status bad_compile_error(void) {
  const char *d;
  return kiln_compiler_available(conf.backend, &d) == KILN_OK
             ? KILN_ERROR_COMPILE
             : KILN_ERROR_UNAVAILABLE;
}

/* ---- The objects the cases use --------------------------------------------- */

static kiln_module *load(kiln_context *ctx) {
  size_t n;
  const kiln_module_image *images = conf_images(&n);
  kiln_module *m = NULL;
  check_ok(kiln_module_create(ctx, images, n, &m));
  return m;
}

static void recorded_event(kiln_context *ctx, kiln_event **e) {
  check_ok(kiln_event_create(ctx, e));
  check_ok(kiln_event_record(*e, NULL));
  check_ok(kiln_event_synchronize(*e));
}

void bad_fixture_init(void) {
  if (fx.ready) return;
  fx.ctx = conf.ctx;
  kiln_context_options o = {conf.backend, KILN_DEVICE_FROM_ENV,
                            KILN_SYNC_DEFAULT};
  check_ok(kiln_context_create(&o, &fx.other));
  check_ok(kiln_context_create(&o, &fx.dead_ctx));
  check_ok(kiln_context_destroy(fx.dead_ctx));
  fx.mod = conf_module();
  check_ok(kiln_module_get_kernel(fx.mod, "conf_add_u32", &fx.add));
  check_ok(kiln_module_get_kernel(fx.mod, "conf_scalars", &fx.scalars));
  check_ok(kiln_module_get_kernel(fx.mod, "conf_shared_rotate", &fx.rotate));
  check_ok(kiln_context_builtin_module(fx.ctx, &fx.builtin));
  check_ok(kiln_buffer_create(fx.ctx, 1024, KILN_BUFFER_ZERO, &fx.buf));
  check_ok(kiln_buffer_create(fx.ctx, 1024, KILN_BUFFER_ZERO, &fx.buf2));
  check_ok(kiln_buffer_create(fx.ctx, 256, 0, &fx.probe));
  check_ok(kiln_host_buffer_create(fx.ctx, 1024, 0, &fx.hb));
  check_ok(kiln_stream_create(fx.ctx, &fx.stream));
  check_ok(kiln_context_default_stream(fx.ctx, &fx.def));
  recorded_event(fx.ctx, &fx.ev);
  check_ok(kiln_event_create(fx.ctx, &fx.unrecorded));
  check_ok(kiln_buffer_create(fx.other, 1024, KILN_BUFFER_ZERO, &fx.other_buf));
  check_ok(kiln_host_buffer_create(fx.other, 1024, 0, &fx.other_hb));
  fx.other_mod = load(fx.other);
  check_ok(
      kiln_module_get_kernel(fx.other_mod, "conf_add_u32", &fx.other_kernel));
  check_ok(kiln_stream_create(fx.other, &fx.other_stream));
  recorded_event(fx.other, &fx.other_ev);
  check_ok(kiln_buffer_create(fx.ctx, 64, 0, &fx.dead_buf));
  check_ok(kiln_buffer_destroy(fx.dead_buf));
  check_ok(kiln_host_buffer_create(fx.ctx, 64, 0, &fx.dead_hb));
  check_ok(kiln_host_buffer_destroy(fx.dead_hb));
  fx.dead_mod = load(fx.ctx);
  check_ok(
      kiln_module_get_kernel(fx.dead_mod, "conf_add_u32", &fx.dead_kernel));
  check_ok(kiln_module_destroy(fx.dead_mod));
  check_ok(kiln_stream_create(fx.ctx, &fx.dead_stream));
  check_ok(kiln_stream_destroy(fx.dead_stream));
  recorded_event(fx.ctx, &fx.dead_ev);
  check_ok(kiln_event_destroy(fx.dead_ev));
  fx.ready = true;
}

static void keep_first(kiln_status *first, kiln_status st) {
  if (*first == KILN_OK) *first = st;
}

static int fixture_release(void **state) {
  (void)state;
  if (fx.ready) {
    kiln_status st = KILN_OK;
    keep_first(&st, kiln_event_destroy(fx.ev));
    keep_first(&st, kiln_event_destroy(fx.unrecorded));
    keep_first(&st, kiln_stream_destroy(fx.stream));
    keep_first(&st, kiln_host_buffer_destroy(fx.hb));
    keep_first(&st, kiln_buffer_destroy(fx.buf));
    keep_first(&st, kiln_buffer_destroy(fx.buf2));
    keep_first(&st, kiln_buffer_destroy(fx.probe));
    keep_first(&st, kiln_event_destroy(fx.other_ev));
    keep_first(&st, kiln_stream_destroy(fx.other_stream));
    keep_first(&st, kiln_module_destroy(fx.other_mod));
    keep_first(&st, kiln_host_buffer_destroy(fx.other_hb));
    keep_first(&st, kiln_buffer_destroy(fx.other_buf));
    keep_first(&st, kiln_context_destroy(fx.other));
    bad_kernel_fixture_release();
    memset(&fx, 0, sizeof fx);
    if (st != KILN_OK) {
      printf("bad-input: releasing the suite's objects: %s: %s\n",
             kiln_status_name(st), kiln_last_error());
      return -1;
    }
  }
  if (failure_count == 0)
    printf("bad-input: %d cases, all answered (%s on %s)\n", case_count,
           kiln_backend_name(conf.backend), conf.props.name);
  else
    printf(
        "bad-input: %d cases, %d not answered as kiln.h documents (%s on "
        "%s; listed above)\n",
        case_count, failure_count, kiln_backend_name(conf.backend),
        conf.props.name);
  return 0;
}

/* ---- Status, logging, backends and devices ------------------------------- */

static void bad_backend_and_device_calls(void **state) {
  (void)state;
  bad_fixture_init();
  int before = bad_failures();
  VALUE("kiln_status_name",
        strcmp(kiln_status_name((kiln_status)-1), "KILN_STATUS_UNKNOWN") == 0);
  VALUE("kiln_status_name", strcmp(kiln_status_name((kiln_status)1000),
                                   "KILN_STATUS_UNKNOWN") == 0);
  kiln_log_level level = kiln_get_log_level();
  kiln_set_log_level((kiln_log_level)99);
  const kiln_log_level level_99 = kiln_get_log_level();
  kiln_set_log_level((kiln_log_level)-1);
  const kiln_log_level level_minus_1 = kiln_get_log_level();
  kiln_set_log_level(level);
  VALUE("kiln_set_log_level", level_99 == KILN_LOG_DEBUG);
  VALUE("kiln_set_log_level", level_minus_1 <= KILN_LOG_DEBUG);
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_set_trace_handler_ex(NULL, 1u << 31, NULL));

  VALUE("kiln_backend_name",
        strcmp(kiln_backend_name((kiln_backend)-1), "unknown") == 0);
  VALUE("kiln_backend_name",
        strcmp(kiln_backend_name((kiln_backend)KILN_BACKEND_COUNT),
               "unknown") == 0);
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_backend_from_name(NULL, &out.backend));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_backend_from_name("vulkan", NULL));
  BAD(KILN_ERROR_NOT_FOUND, kiln_backend_from_name("", &out.backend));
  BAD(KILN_ERROR_NOT_FOUND, kiln_backend_from_name("vulkan ", &out.backend));
  BAD(KILN_ERROR_NOT_FOUND, kiln_backend_from_name(" cuda", &out.backend));
  BAD(KILN_ERROR_NOT_FOUND, kiln_backend_from_name("opencl", &out.backend));
  VALUE("kiln_backend_compiled", !kiln_backend_compiled(KILN_BACKEND_AUTO));
  VALUE("kiln_backend_compiled", !kiln_backend_compiled((kiln_backend)-1));
  VALUE("kiln_backend_compiled", !kiln_backend_compiled((kiln_backend)99));
  const char *reason;
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_backend_available(KILN_BACKEND_AUTO, &reason));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_backend_available((kiln_backend)99, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_backend_available((kiln_backend)-1, &reason));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_device_count(KILN_BACKEND_AUTO, &out.count));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_device_count((kiln_backend)99, &out.count));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_device_count(conf.backend, NULL));
  VALUE("kiln_device_type_name",
        strcmp(kiln_device_type_name((kiln_device_type)99), "other") == 0);
  VALUE("kiln_device_type_name",
        strcmp(kiln_device_type_name((kiln_device_type)-1), "other") == 0);
  size_t devices = 0;
  check_ok(kiln_device_count(conf.backend, &devices));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_device_get_properties(KILN_BACKEND_AUTO, 0, &out.props));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_device_get_properties((kiln_backend)99, 0, &out.props));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_device_get_properties(conf.backend, 0, NULL));
  BAD(KILN_ERROR_NOT_FOUND,
      kiln_device_get_properties(conf.backend, devices, &out.props));
  BAD(KILN_ERROR_NOT_FOUND,
      kiln_device_get_properties(conf.backend, SIZE_MAX, &out.props));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_compiler_available(KILN_BACKEND_AUTO, &reason));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_compiler_available((kiln_backend)99, &reason));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_compiler_available(conf.backend, NULL));
  /* Backends that cannot run here (none, on a machine with every one). */
  for (int b = KILN_BACKEND_CUDA; b <= KILN_BACKEND_VULKAN; b++) {
    const kiln_backend be = (kiln_backend)b;
    if (kiln_backend_available(be, NULL) == KILN_OK) continue;
    snprintf(bad_detail, sizeof bad_detail, "backend %s",
             kiln_backend_name(be));
    BAD(KILN_ERROR_UNAVAILABLE, kiln_backend_available(be, &reason));
    snprintf(bad_detail, sizeof bad_detail, "backend %s",
             kiln_backend_name(be));
    BAD(KILN_ERROR_UNAVAILABLE, kiln_device_get_properties(be, 0, &out.props));
    snprintf(bad_detail, sizeof bad_detail, "backend %s",
             kiln_backend_name(be));
    BAD(KILN_ERROR_UNAVAILABLE,
        kiln_context_create(&(kiln_context_options){be, 0, KILN_SYNC_DEFAULT},
                            &out.ctx));
    size_t none = 1;
    VALUE("kiln_device_count",
          kiln_device_count(be, &none) == KILN_OK && none == 0);
    if (kiln_backend_compiled(be)) continue;
    snprintf(bad_detail, sizeof bad_detail, "backend %s",
             kiln_backend_name(be));
    BAD(KILN_ERROR_UNAVAILABLE, kiln_compiler_available(be, &reason));
  }

  VALUE("kiln_image_format_name",
        strcmp(kiln_image_format_name((kiln_image_format)0), "unknown") == 0);
  VALUE("kiln_image_format_name",
        strcmp(kiln_image_format_name((kiln_image_format)99), "unknown") == 0);
  VALUE("kiln_source_language_name",
        strcmp(kiln_source_language_name((kiln_source_language)0), "unknown") ==
            0);
  VALUE("kiln_source_language_name",
        strcmp(kiln_source_language_name((kiln_source_language)-1),
               "unknown") == 0);
  bad_finish(before);
}

/* ---- Contexts, and the environment read when one is created ---------------- */

/* kiln_context_create(options, ...) with variable `name` set to `value`,
 * restored afterwards. */
static kiln_status create_with_env(const char *name, const char *value,
                                   const kiln_context_options *options) {
  const char *old = getenv(name);
  char *saved = old ? strdup(old) : NULL;
  setenv(name, value, 1);
  kiln_status st = kiln_context_create(options, &out.ctx);
  if (saved)
    setenv(name, saved, 1);
  else
    unsetenv(name);
  free(saved);
  return st;
}

#define ENV(expected, name, value)                                     \
  do {                                                                 \
    snprintf(bad_detail, sizeof bad_detail, "%s=\"%s\"", name, value); \
    BAD_AS("kiln_context_create", expected,                            \
           create_with_env(name, value, NULL));                        \
  } while (0)

static void bad_context_calls(void **state) {
  (void)state;
  bad_fixture_init();
  int before = bad_failures();
  size_t devices = 0;
  check_ok(kiln_device_count(conf.backend, &devices));
  char count[32];
  snprintf(count, sizeof count, "%zu", devices);
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_context_create(NULL, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_create(
          &(kiln_context_options){(kiln_backend)99, KILN_DEVICE_FROM_ENV,
                                  KILN_SYNC_DEFAULT},
          &out.ctx));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_create(
          &(kiln_context_options){(kiln_backend)-1, 0, KILN_SYNC_DEFAULT},
          &out.ctx));
  BAD(KILN_ERROR_NOT_FOUND,
      kiln_context_create(
          &(kiln_context_options){conf.backend, devices, KILN_SYNC_DEFAULT},
          &out.ctx));
  BAD(KILN_ERROR_NOT_FOUND,
      kiln_context_create(&(kiln_context_options){conf.backend, SIZE_MAX - 1,
                                                  KILN_SYNC_DEFAULT},
                          &out.ctx));
  ENV(KILN_ERROR_NOT_FOUND, "KILN_BACKEND", "bogus");
  ENV(KILN_ERROR_NOT_FOUND, "KILN_BACKEND", " vulkan");
  ENV(KILN_ERROR_NOT_FOUND, "KILN_BACKEND", "vulkan,cuda");
  static const char *const not_indices[] = {"x",
                                            " 0",
                                            "0 ",
                                            "-1",
                                            "+0",
                                            "0x0",
                                            "1e2",
                                            "18446744073709551615",
                                            "99999999999999999999999"};
  for (size_t i = 0; i < sizeof not_indices / sizeof not_indices[0]; i++)
    ENV(KILN_ERROR_INVALID_ARGUMENT, "KILN_DEVICE", not_indices[i]);
  ENV(KILN_ERROR_NOT_FOUND, "KILN_DEVICE", count);
  ENV(KILN_ERROR_NOT_FOUND, "KILN_DEVICE", "4294967296");
  static const char *const not_times[] = {
      "soon", "-1", " 5", "5ms", "1.5", "0x10", "18446744073709551615"};
  for (size_t i = 0; i < sizeof not_times / sizeof not_times[0]; i++)
    ENV(KILN_ERROR_INVALID_ARGUMENT, "KILN_SYNC_TIMEOUT_MS", not_times[i]);
  ENV(KILN_ERROR_INVALID_ARGUMENT, "KILN_DEBUG", "bogus");
  ENV(KILN_ERROR_INVALID_ARGUMENT, "KILN_DEBUG", "guard,bogus");
  static const char *const not_policies[] = {"busy",       " spin", "block ",
                                             "spin,block", "0",     "blocking"};
  for (size_t i = 0; i < sizeof not_policies / sizeof not_policies[0]; i++)
    ENV(KILN_ERROR_INVALID_ARGUMENT, "KILN_SYNC", not_policies[i]);
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_create(
          &(kiln_context_options){conf.backend, KILN_DEVICE_FROM_ENV,
                                  (kiln_sync_policy)5},
          &out.ctx));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_create(
          &(kiln_context_options){conf.backend, KILN_DEVICE_FROM_ENV,
                                  (kiln_sync_policy)-1},
          &out.ctx));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_get_sync_policy(NULL, &out.policy));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_get_sync_policy(fx.dead_ctx, &out.policy));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_get_sync_policy(AS(kiln_context, fx.buf), &out.policy));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_context_get_sync_policy(fx.ctx, NULL));

  BAD(KILN_OK, kiln_context_destroy(NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_context_destroy(fx.dead_ctx));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_destroy(AS(kiln_context, fx.buf)));
  BAD(KILN_ERROR_INVALID_HANDLE, AUTO_OR(kiln_context_backend(NULL)));
  BAD(KILN_ERROR_INVALID_HANDLE, AUTO_OR(kiln_context_backend(fx.dead_ctx)));
  BAD(KILN_ERROR_INVALID_HANDLE,
      AUTO_OR(kiln_context_backend(AS(kiln_context, fx.stream))));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_context_get_properties(NULL, &out.props));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_context_get_properties(fx.ctx, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_get_properties(fx.dead_ctx, &out.props));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_get_properties(AS(kiln_context, fx.ev), &out.props));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_context_synchronize(NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_context_synchronize(fx.dead_ctx));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_synchronize(AS(kiln_context, fx.mod)));

  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_set_limit(NULL, KILN_LIMIT_STACK_BYTES, 1024));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_set_limit(fx.dead_ctx, KILN_LIMIT_STACK_BYTES, 1024));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_set_limit(AS(kiln_context, fx.hb), KILN_LIMIT_STACK_BYTES,
                             1024));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_set_limit(fx.ctx, (kiln_limit)0, 1024));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_set_limit(fx.ctx, (kiln_limit)4, 1024));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_set_limit(fx.ctx, (kiln_limit)-1, 1024));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_get_limit(NULL, KILN_LIMIT_STACK_BYTES, &out.count));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_get_limit(fx.dead_ctx, KILN_LIMIT_STACK_BYTES, &out.count));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_get_limit(fx.ctx, KILN_LIMIT_STACK_BYTES, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_get_limit(fx.ctx, (kiln_limit)0, &out.count));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_get_limit(fx.ctx, (kiln_limit)99, &out.count));
  if (conf.backend == KILN_BACKEND_VULKAN) {
    BAD(KILN_ERROR_UNSUPPORTED,
        kiln_context_set_limit(fx.ctx, KILN_LIMIT_STACK_BYTES, SIZE_MAX));
    BAD(KILN_ERROR_UNSUPPORTED,
        kiln_context_get_limit(fx.ctx, KILN_LIMIT_MALLOC_HEAP_BYTES,
                               &out.count));
  }
  bad_finish(before);
}

/* ---- Streams and events -------------------------------------------------- */

static void bad_stream_and_event_calls(void **state) {
  (void)state;
  bad_fixture_init();
  int before = bad_failures();
  kiln_stream *other_default;
  check_ok(kiln_context_default_stream(fx.other, &other_default));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_default_stream(NULL, &out.stream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_default_stream(fx.dead_ctx, &out.stream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_default_stream(AS(kiln_context, fx.ev), &out.stream));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_context_default_stream(fx.ctx, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_create(NULL, &out.stream));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_create(fx.dead_ctx, &out.stream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_create(AS(kiln_context, fx.stream), &out.stream));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_stream_create(fx.ctx, NULL));
  kiln_device_properties props;
  check_ok(kiln_context_get_properties(fx.ctx, &props));
  const kiln_stream_options beyond = {props.max_stream_priority + 1};
  const kiln_stream_options most = {UINT32_MAX};
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_create_with_options(NULL, NULL, &out.stream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_create_with_options(fx.dead_ctx, NULL, &out.stream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_create_with_options(AS(kiln_context, fx.ev), NULL,
                                      &out.stream));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_stream_create_with_options(fx.ctx, NULL, NULL));
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_stream_create_with_options(fx.ctx, &beyond, &out.stream));
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_stream_create_with_options(fx.ctx, &most, &out.stream));
  BAD(KILN_OK, kiln_stream_destroy(NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_stream_destroy(fx.def));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_stream_destroy(other_default));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_destroy(fx.dead_stream));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_destroy(AS(kiln_stream, fx.ev)));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_synchronize(NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_synchronize(fx.dead_stream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_synchronize(AS(kiln_stream, fx.buf)));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_synchronize_timeout(NULL, 0));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_synchronize_timeout(fx.dead_stream, UINT64_MAX));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_synchronize_timeout(AS(kiln_stream, fx.hb), 1000));
  BAD(KILN_OK, kiln_stream_synchronize_timeout(fx.stream, 0));

  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_create(NULL, &out.event));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_create(fx.dead_ctx, &out.event));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_event_create(AS(kiln_context, fx.buf), &out.event));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_event_create(fx.ctx, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_event_create_with_flags(NULL, 0, &out.event));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_event_create_with_flags(fx.dead_ctx, 0, &out.event));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_event_create_with_flags(AS(kiln_context, fx.stream), 0, &out.event));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_event_create_with_flags(fx.ctx, KILN_EVENT_NO_TIMING, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_event_create_with_flags(fx.ctx, 1u << 2, &out.event));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_event_create_with_flags(fx.ctx, KILN_EVENT_BLOCKING | 1u << 31,
                                   &out.event));
  BAD(KILN_OK, kiln_event_destroy(NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_destroy(fx.dead_ev));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_destroy(AS(kiln_event, fx.stream)));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_record(NULL, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_record(fx.dead_ev, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_event_record(AS(kiln_event, fx.stream), NULL));
  BAD(KILN_ERROR_WRONG_CONTEXT, kiln_event_record(fx.ev, fx.other_stream));
  BAD(KILN_ERROR_WRONG_CONTEXT, kiln_event_record(fx.other_ev, fx.stream));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_record(fx.ev, fx.dead_stream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_event_record(fx.ev, AS(kiln_stream, fx.buf)));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_wait_event(fx.stream, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_wait_event(fx.stream, fx.dead_ev));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_wait_event(fx.stream, AS(kiln_event, fx.stream)));
  BAD(KILN_ERROR_INVALID_STATE,
      kiln_stream_wait_event(fx.stream, fx.unrecorded));
  BAD(KILN_ERROR_WRONG_CONTEXT, kiln_stream_wait_event(fx.stream, fx.other_ev));
  BAD(KILN_ERROR_WRONG_CONTEXT, kiln_stream_wait_event(fx.other_stream, fx.ev));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_wait_event(fx.dead_stream, fx.ev));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_wait_event(AS(kiln_stream, fx.hb), fx.ev));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_synchronize(NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_synchronize(fx.dead_ev));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_event_synchronize(AS(kiln_event, fx.mod)));
  BAD(KILN_ERROR_INVALID_STATE, kiln_event_synchronize(fx.unrecorded));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_query(NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_query(fx.dead_ev));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_query(AS(kiln_event, fx.def)));
  BAD(KILN_ERROR_INVALID_STATE, kiln_event_query(fx.unrecorded));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_elapsed_ms(NULL, fx.ev, &out.ms));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_event_elapsed_ms(fx.ev, NULL, &out.ms));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_event_elapsed_ms(fx.ev, fx.ev, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_event_elapsed_ms(fx.dead_ev, fx.ev, &out.ms));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_event_elapsed_ms(fx.ev, fx.dead_ev, &out.ms));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_event_elapsed_ms(AS(kiln_event, fx.buf), fx.ev, &out.ms));
  BAD(KILN_ERROR_INVALID_STATE,
      kiln_event_elapsed_ms(fx.unrecorded, fx.ev, &out.ms));
  BAD(KILN_ERROR_INVALID_STATE,
      kiln_event_elapsed_ms(fx.ev, fx.unrecorded, &out.ms));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_event_elapsed_ms(fx.ev, fx.other_ev, &out.ms));
  bad_finish(before);
}

/* ---- Every function of kiln.h ------------------------------------------------ */

/* The functions that take nothing a caller can get wrong: no handle, no
 * pointer that kiln follows, no value with a range (a log handler of NULL
 * restores stderr, a trace handler of NULL turns tracing off). */
static const char *const no_bad_input[] = {
    "kiln_version",
    "kiln_version_string",
    "kiln_last_error",
    "kiln_clear_error",
    "kiln_get_log_level",
    "kiln_set_log_handler",
    "kiln_set_trace_handler",
    "kiln_last_compile_log",
};

/* The tests that run cases, and how many of them ran (a filter may leave
 * some out): every_function_has_cases can judge only a full run. */
#define CASE_TESTS 11
static int tests_run;

static int count_run(void **state) {
  (void)state;
  tests_run++;
  return 0;
}

#define CASE_TEST(fn) \
  cmocka_unit_test_setup_teardown(fn, count_run, conf_check_validation)

static bool has_cases(const char *name) {
  for (size_t i = 0; i < seen_count; i++)
    if (strcmp(seen[i], name) == 0) return true;
  for (size_t i = 0; i < sizeof no_bad_input / sizeof no_bad_input[0]; i++)
    if (strcmp(no_bad_input[i], name) == 0) return true;
  return false;
}

/* Reads the functions kiln.h declares: each of them must have cases, so
 * that a function added to the API gets them too. */
static void every_function_has_cases(void **state) {
  (void)state;
  if (tests_run < CASE_TESTS)
    kiln_skip("%d of the %d tests of cases ran (KILN_CONF_FILTER or "
              "KILN_CONF_SKIP), so the functions of kiln.h cannot be counted",
              tests_run, CASE_TESTS);
  FILE *f = fopen(CONF_KILN_HEADER, "r");
  if (!f) fail_msg("cannot read %s to list kiln's functions", CONF_KILN_HEADER);
  char line[512];
  size_t listed = 0, missing = 0;
  while (fgets(line, sizeof line, f)) {
    char *paren = strchr(line, '(');
    if (strncmp(line, "KILN_API ", 9) != 0 || !paren) continue;
    char *name = paren;
    while (name > line && (isalnum((unsigned char)name[-1]) || name[-1] == '_'))
      name--;
    *paren = '\0';
    /* X_sized is called through kiln.h's inline X, which passes the
     * struct's size (kiln.h, "Structs that grow"): X's cases are its. */
    const size_t len = strlen(name), suffix = strlen("_sized");
    if (len > suffix && strcmp(name + len - suffix, "_sized") == 0)
      name[len - suffix] = '\0';
    listed++;
    if (has_cases(name)) continue;
    printf("  bad-input: %s (kiln.h) has no case\n", name);
    missing++;
  }
  fclose(f);
  printf(
      "bad-input: the cases call %zu of the %zu functions of kiln.h; the "
      "other %zu take no input that can be wrong\n",
      listed - missing - sizeof no_bad_input / sizeof no_bad_input[0], listed,
      sizeof no_bad_input / sizeof no_bad_input[0]);
  if (missing) fail_msg("%zu function(s) of kiln.h have no case", missing);
}

int conf_run_bad_input_tests(void) {
  const struct CMUnitTest tests[] = {
      CASE_TEST(bad_backend_and_device_calls),
      CASE_TEST(bad_context_calls),
      CASE_TEST(bad_buffer_calls),
      CASE_TEST(bad_native_calls),
      CASE_TEST(bad_host_buffer_calls),
      CASE_TEST(bad_module_calls),
      CASE_TEST(bad_compile_calls),
      CASE_TEST(bad_launch_calls),
      CASE_TEST(bad_builtin_calls),
      CASE_TEST(bad_stream_and_event_calls),
      CASE_TEST(bad_graph_calls),
      CONF_TEST(every_function_has_cases),
  };
  _Static_assert(sizeof tests / sizeof tests[0] == CASE_TESTS + 1,
                 "CASE_TESTS counts the tests of cases");
  return cmocka_run_group_tests_name("bad-input", tests, NULL, fixture_release);
}
