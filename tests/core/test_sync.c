/* The core's part of synchronisation and stream/event options, on a fake
 * backend: KILN_SYNC parsed strictly and overridden by the options, stream
 * priorities checked against the device's range before the backend sees
 * them, event flags checked and an untimed event never timed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

static int setup(void **state) {
  fake_backend *fb = calloc(1, sizeof *fb);
  if (!fb) return -1;
  fake_init(fb, KILN_BACKEND_VULKAN);
  fb->devices[0].max_stream_priority = 3;
  fake_backend *list[] = {fb};
  fake_install(list, 1);
  unsetenv("KILN_SYNC");
  *state = fb;
  return 0;
}

static int teardown(void **state) {
  unsetenv("KILN_SYNC");
  kiln_registry_override(NULL, 0);
  free(*state);
  return 0;
}

/* The policy a context created with `asked` gets. */
static kiln_sync_policy policy_of(kiln_sync_policy asked) {
  kiln_context_options o = kiln_context_options_default();
  o.sync = asked;
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_sync_policy got = KILN_SYNC_DEFAULT;
  check_ok(kiln_context_get_sync_policy(ctx, &got));
  /* The backend's init sees the same policy. */
  assert_int_equal(ctx->sync, got);
  check_ok(kiln_context_destroy(ctx));
  return got;
}

static void sync_policy_from_env(void **state) {
  (void)state;
  assert_int_equal(policy_of(KILN_SYNC_DEFAULT), KILN_SYNC_AUTO);
  setenv("KILN_SYNC", "", 1);
  assert_int_equal(policy_of(KILN_SYNC_DEFAULT), KILN_SYNC_AUTO);
  static const struct {
    const char *value;
    kiln_sync_policy policy;
  } good[] = {{"auto", KILN_SYNC_AUTO},   {"spin", KILN_SYNC_SPIN},
              {"yield", KILN_SYNC_YIELD}, {"block", KILN_SYNC_BLOCK},
              {"SPIN", KILN_SYNC_SPIN},   {"Block", KILN_SYNC_BLOCK}};
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    setenv("KILN_SYNC", good[i].value, 1);
    assert_int_equal(policy_of(KILN_SYNC_DEFAULT), good[i].policy);
  }
}

static void bad_sync_values_are_rejected(void **state) {
  (void)state;
  static const char *const bad[] = {"busy", " spin", "spin ",    "spin,block",
                                    "0",    "1",     "blocking", "autox"};
  kiln_context *ctx = NULL;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("KILN_SYNC", bad[i], 1);
    check_fails(kiln_context_create(NULL, &ctx), KILN_ERROR_INVALID_ARGUMENT);
    assert_null(ctx);
    check_message_has("kiln_context_create");
    char quoted[64];
    snprintf(quoted, sizeof quoted, "KILN_SYNC=\"%s\"", bad[i]);
    check_message_has(quoted);
    /* Checked even when the options choose. */
    kiln_context_options o = kiln_context_options_default();
    o.sync = KILN_SYNC_SPIN;
    check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_INVALID_ARGUMENT);
  }
  unsetenv("KILN_SYNC");
  kiln_context_options o = kiln_context_options_default();
  o.sync = (kiln_sync_policy)(KILN_SYNC_BLOCK + 1);
  check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("options->sync");
  assert_null(ctx);
}

static void options_win_over_env(void **state) {
  (void)state;
  assert_int_equal(kiln_context_options_default().sync, KILN_SYNC_DEFAULT);
  setenv("KILN_SYNC", "block", 1);
  assert_int_equal(policy_of(KILN_SYNC_SPIN), KILN_SYNC_SPIN);
  assert_int_equal(policy_of(KILN_SYNC_YIELD), KILN_SYNC_YIELD);
  assert_int_equal(policy_of(KILN_SYNC_AUTO), KILN_SYNC_AUTO);
  assert_int_equal(policy_of(KILN_SYNC_DEFAULT), KILN_SYNC_BLOCK);
}

static void stream_priorities_are_checked(void **state) {
  fake_backend *fb = *state;
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(NULL, &ctx));
  unsigned inits = fb->calls[FAKE_OP_STREAM_INIT];
  kiln_stream *s = NULL;
  for (uint32_t p = 0; p <= 3; p++) {
    check_ok(
        kiln_stream_create_with_options(ctx, &(kiln_stream_options){p}, &s));
    assert_int_equal(s->priority, p);
    check_ok(kiln_stream_destroy(s));
  }
  check_ok(kiln_stream_create_with_options(ctx, NULL, &s));
  assert_int_equal(s->priority, 0);
  check_ok(kiln_stream_destroy(s));
  assert_int_equal(fb->calls[FAKE_OP_STREAM_INIT], inits + 5);
  s = NULL;
  check_fails(
      kiln_stream_create_with_options(ctx, &(kiln_stream_options){4}, &s),
      KILN_ERROR_OUT_OF_RANGE);
  check_message_has("kiln_stream_create_with_options");
  check_message_has("0 to 3");
  assert_null(s);
  assert_int_equal(fb->calls[FAKE_OP_STREAM_INIT], inits + 5);
  check_ok(kiln_context_destroy(ctx));

  fb->devices[0].max_stream_priority = 0;
  check_ok(kiln_context_create(NULL, &ctx));
  check_fails(
      kiln_stream_create_with_options(ctx, &(kiln_stream_options){1}, &s),
      KILN_ERROR_OUT_OF_RANGE);
  check_message_has("no stream priorities");
  check_ok(kiln_context_destroy(ctx));
}

static void event_flags(void **state) {
  fake_backend *fb = *state;
  kiln_context *ctx = NULL;
  check_ok(kiln_context_create(NULL, &ctx));
  kiln_event *timed = NULL, *untimed = NULL, *blocking = NULL;
  check_ok(kiln_event_create(ctx, &timed));
  assert_int_equal(timed->flags, 0);
  check_ok(kiln_event_create_with_flags(ctx, KILN_EVENT_NO_TIMING, &untimed));
  assert_int_equal(untimed->flags, KILN_EVENT_NO_TIMING);
  check_ok(kiln_event_create_with_flags(
      ctx, KILN_EVENT_BLOCKING | KILN_EVENT_NO_TIMING, &blocking));
  kiln_event *e = NULL;
  check_fails(kiln_event_create_with_flags(ctx, 4, &e),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("kiln_event_create_with_flags");
  assert_null(e);
  check_ok(kiln_event_record(timed, NULL));
  check_ok(kiln_event_record(untimed, NULL));
  check_ok(kiln_event_record(blocking, NULL));
  check_ok(kiln_event_synchronize(blocking));
  unsigned elapsed = fb->calls[FAKE_OP_EVENT_ELAPSED];
  float ms = 0;
  check_fails(kiln_event_elapsed_ms(timed, untimed, &ms),
              KILN_ERROR_INVALID_STATE);
  check_message_has("end event");
  check_message_has("KILN_EVENT_NO_TIMING");
  check_fails(kiln_event_elapsed_ms(untimed, timed, &ms),
              KILN_ERROR_INVALID_STATE);
  check_message_has("start event");
  assert_int_equal(fb->calls[FAKE_OP_EVENT_ELAPSED], elapsed);
  check_ok(kiln_event_elapsed_ms(timed, timed, &ms));
  check_ok(kiln_event_destroy(timed));
  check_ok(kiln_event_destroy(untimed));
  check_ok(kiln_event_destroy(blocking));
  check_ok(kiln_context_destroy(ctx));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(sync_policy_from_env, setup, teardown),
      cmocka_unit_test_setup_teardown(bad_sync_values_are_rejected, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(options_win_over_env, setup, teardown),
      cmocka_unit_test_setup_teardown(stream_priorities_are_checked, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(event_flags, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
