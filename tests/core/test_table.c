/* The ops table's one rule (core/backend.h, "The ops table") as the core
 * keeps it: a table that lacks a required op, or has a sub-table with a
 * member missing, makes its backend unavailable before it is probed, the
 * member named; a table without a sub-table is whole, and each call that
 * needs the ability it lacks answers KILN_ERROR_UNSUPPORTED in one shape,
 * naming the call, the backend and the ability. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_backend.h"
#include "kiln_check.h"

/* Copies of the fake's const sub-tables, for the cases to break. */
static kiln_interop_ops interop;
static kiln_graph_update_ops graph_updates;
static kiln_compiler_ops compiler;
static kiln_fill_ops fills;
static kiln_host_buffer_ops host_buffers;

static void interop_lacks_stream_import(kiln_backend_ops *o) {
  interop = *o->interop;
  interop.stream_import = NULL;
  o->interop = &interop;
}

static void graph_updates_lack_graph_update(kiln_backend_ops *o) {
  graph_updates = *o->graph_updates;
  graph_updates.graph_update = NULL;
  o->graph_updates = &graph_updates;
}

static void graph_updates_without_graphs(kiln_backend_ops *o) {
  o->graphs = NULL;
}

static void compiler_lacks_languages(kiln_backend_ops *o) {
  compiler = *o->compiler;
  memset(compiler.languages, 0, sizeof compiler.languages);
  o->compiler = &compiler;
}

static void fills_lack_sizes(kiln_backend_ops *o) {
  fills = *o->fills;
  fills.fill_sizes = 0;
  o->fills = &fills;
}

static void host_buffers_lack_deinit(kiln_backend_ops *o) {
  host_buffers = *o->host_buffers;
  host_buffers.host_buffer_deinit = NULL;
  o->host_buffers = &host_buffers;
}

static void lacks_launch(kiln_backend_ops *o) { o->launch = NULL; }

static void lacks_buffer_copy(kiln_backend_ops *o) { o->buffer_copy = NULL; }

/* A fake Vulkan backend whose table `breaks` changed, installed alone. */
static void install_broken(fake_backend *fb,
                           void (*breaks)(kiln_backend_ops *o)) {
  fake_init(fb, KILN_BACKEND_VULKAN);
  if (breaks) breaks(&fb->ops);
  fake_backend *list[] = {fb};
  fake_install(list, 1);
}

/* Each half-filled table is reported, not crashed on: the backend is
 * unavailable, kiln_backend_available and kiln_context_create say which
 * member its table lacks, and the backend's own probe never runs. */
static void half_filled_tables_are_unavailable(void **state) {
  (void)state;
  static const struct {
    void (*breaks)(kiln_backend_ops *o);
    const char *reason;
  } cases[] = {
      {interop_lacks_stream_import,
       "the vulkan backend's interop table lacks stream_import"},
      {graph_updates_lack_graph_update,
       "the vulkan backend's graph_updates table lacks graph_update"},
      {graph_updates_without_graphs,
       "the vulkan backend's ops table lacks graphs"},
      {compiler_lacks_languages,
       "the vulkan backend's compiler table lacks languages[0]"},
      {fills_lack_sizes, "the vulkan backend's fills table lacks fill_sizes"},
      {host_buffers_lack_deinit,
       "the vulkan backend's host_buffers table lacks host_buffer_deinit"},
      {lacks_launch, "the vulkan backend's ops table lacks launch"},
      {lacks_buffer_copy, "the vulkan backend's ops table lacks buffer_copy"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fake_backend fb;
    install_broken(&fb, cases[i].breaks);
    const char *reason = NULL;
    check_fails(kiln_backend_available(KILN_BACKEND_VULKAN, &reason),
                KILN_ERROR_UNAVAILABLE);
    check_message_has(cases[i].reason);
    assert_non_null(reason);
    if (!strstr(reason, cases[i].reason))
      fail_msg("case %zu: the reason \"%s\" does not say \"%s\"", i, reason,
               cases[i].reason);
    kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
    kiln_context *ctx = NULL;
    check_fails(kiln_context_create(&o, &ctx), KILN_ERROR_UNAVAILABLE);
    check_message_has(cases[i].reason);
    assert_null(ctx);
    assert_int_equal(fb.probe_calls, 0);
  }
  kiln_registry_override(NULL, 0);
}

/* The fake's whole table, and one without any sub-table, are available:
 * an ability a backend lacks as a whole is no fault of its table. */
static void whole_and_bare_tables_are_available(void **state) {
  (void)state;
  fake_backend fb;
  install_broken(&fb, NULL);
  check_ok(kiln_backend_available(KILN_BACKEND_VULKAN, NULL));
  fake_init(&fb, KILN_BACKEND_VULKAN);
  kiln_backend_ops *o = &fb.ops;
  o->host_buffers = NULL;
  o->async_transfers = NULL;
  o->fills = NULL;
  o->peers = NULL;
  o->event_waits = NULL;
  o->timing = NULL;
  o->limits = NULL;
  o->globals = NULL;
  o->interop = NULL;
  o->graphs = NULL;
  o->graph_updates = NULL;
  o->compiler = NULL;
  fake_backend *list[] = {&fb};
  fake_install(list, 1);
  check_ok(kiln_backend_available(KILN_BACKEND_VULKAN, NULL));
  assert_int_equal(fb.probe_calls, 1);
  kiln_context_options opts = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  check_ok(kiln_context_create(&opts, &ctx));
  check_ok(kiln_context_destroy(ctx));
  kiln_registry_override(NULL, 0);
}

/* The call failed with KILN_ERROR_UNSUPPORTED in the one shape, naming
 * `fn`, the fake's backend and `ability`. */
static void check_unsupported(kiln_status st, const char *fn,
                              const char *ability) {
  char want[160];
  snprintf(want, sizeof want, "%s: the vulkan backend has no %s", fn, ability);
  if (st != KILN_ERROR_UNSUPPORTED)
    fail_msg(
        "%s returned %s, expected KILN_ERROR_UNSUPPORTED (message: "
        "\"%s\")",
        fn, kiln_status_name(st), kiln_last_error());
  check_message_has(want);
}

/* Without host buffers, timing, limits, globals, graphs or copies between
 * contexts, each call that needs one answers KILN_ERROR_UNSUPPORTED with
 * the backend's name in words, and the context stays usable. */
static void absent_abilities_are_unsupported(void **state) {
  (void)state;
  fake_backend fb;
  fake_init(&fb, KILN_BACKEND_VULKAN);
  fb.ops.host_buffers = NULL;
  fb.ops.timing = NULL;
  fb.ops.limits = NULL;
  fb.ops.globals = NULL;
  fb.ops.graphs = NULL;
  fb.ops.graph_updates = NULL;
  fb.ops.peers = NULL;
  fake_backend *list[] = {&fb};
  fake_install(list, 1);
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx, *other;
  check_ok(kiln_context_create(&o, &ctx));
  check_ok(kiln_context_create(&o, &other));

  kiln_host_buffer *hb = NULL;
  check_unsupported(kiln_host_buffer_create(ctx, 64, 0, &hb),
                    "kiln_host_buffer_create", "host buffers");
  assert_null(hb);

  kiln_event *start, *end;
  check_ok(kiln_event_create(ctx, &start));
  check_ok(kiln_event_create(ctx, &end));
  check_ok(kiln_event_record(start, NULL));
  check_ok(kiln_event_record(end, NULL));
  check_ok(kiln_event_synchronize(end));
  float ms = -1.0f;
  check_unsupported(kiln_event_elapsed_ms(start, end, &ms),
                    "kiln_event_elapsed_ms", "event timing");
  assert_true(ms == -1.0f);

  size_t value = 0;
  check_unsupported(kiln_context_set_limit(ctx, KILN_LIMIT_STACK_BYTES, 4096),
                    "kiln_context_set_limit", "device limits");
  check_unsupported(
      kiln_context_get_limit(ctx, KILN_LIMIT_MALLOC_HEAP_BYTES, &value),
      "kiln_context_get_limit", "device limits");

  kiln_module_image image = fake_image("k");
  kiln_module *m;
  check_ok(kiln_module_create(ctx, &image, 1, &m));
  kiln_buffer *global = NULL;
  check_unsupported(kiln_module_get_global(m, "g", &global),
                    "kiln_module_get_global",
                    "global variables the host can reach");
  assert_null(global);

  kiln_stream *s;
  check_ok(kiln_stream_create(ctx, &s));
  check_unsupported(kiln_stream_begin_capture(s), "kiln_stream_begin_capture",
                    "graphs");

  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create(ctx, 64, 0, &a));
  check_ok(kiln_buffer_create(other, 64, 0, &b));
  check_unsupported(kiln_buffer_copy_peer(NULL, b, 0, NULL, a, 0, 64),
                    "kiln_buffer_copy_peer", "copies between contexts");
  bool direct = true;
  check_unsupported(kiln_context_can_copy_peer(ctx, other, &direct),
                    "kiln_context_can_copy_peer", "copies between contexts");
  /* One context needs no peer table: the core copies within it. */
  check_ok(kiln_context_can_copy_peer(ctx, ctx, &direct));
  assert_true(direct);
  check_ok(kiln_buffer_copy_peer(s, a, 0, NULL, a, 32, 32));

  /* Still usable after each refusal. */
  check_ok(kiln_context_synchronize(ctx));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_buffer_destroy(a));
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_event_destroy(end));
  check_ok(kiln_event_destroy(start));
  check_ok(kiln_context_destroy(other));
  check_ok(kiln_context_destroy(ctx));
  assert_int_equal(fake_live_objects(&fb), 0);
  kiln_registry_override(NULL, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(half_filled_tables_are_unavailable),
      cmocka_unit_test(whole_and_bare_tables_are_available),
      cmocka_unit_test(absent_abilities_are_unsupported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
