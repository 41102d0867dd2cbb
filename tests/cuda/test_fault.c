/* A kernel that faults (a store to address 0) loses its context: the launch
 * or the next synchronization returns KILN_ERROR_DEVICE_LOST, and so does
 * every later call on that context, without touching the driver's dead
 * state; destroying the context still works. A fault poisons the whole
 * process's CUDA state, so this runs as its own executable. Needs a CUDA
 * device (exit 77, skipped, without one). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../core/kiln_check.h"

static const char fault_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry kiln_test_fault(\n"
    "    .param .u64 address)\n"
    "{\n"
    "    .reg .b32 %r1;\n"
    "    .reg .b64 %rd1;\n"
    "\n"
    "    ld.param.u64 %rd1, [address];\n"
    "    mov.u32 %r1, 1;\n"
    "    st.volatile.global.u32 [%rd1], %r1;\n"
    "    ret;\n"
    "}\n";

/* The driver's name for the fault, whichever it reports. */
static void check_fault_named(void) {
  const char *m = kiln_last_error();
  if (!strstr(m, "CUDA_ERROR_ILLEGAL_ADDRESS") &&
      !strstr(m, "CUDA_ERROR_LAUNCH_FAILED"))
    fail_msg("the message \"%s\" does not name the fault", m);
}

static void test_fault_loses_context(void **state) {
  (void)state;
  kiln_context_options o = kiln_context_options_default();
  o.backend = KILN_BACKEND_CUDA;
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_module *m;
  kiln_module_image image = {KILN_IMAGE_PTX, fault_ptx, sizeof fault_ptx};
  check_ok(kiln_module_create(ctx, &image, 1, &m));
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "kiln_test_fault", &k));
  kiln_buffer *buf;
  check_ok(kiln_buffer_create(ctx, 64, KILN_BUFFER_ZERO, &buf));
  kiln_stream *stream;
  check_ok(kiln_stream_create(ctx, &stream));

  kiln_launch_config c = kiln_launch_config_1d(1, 32);
  kiln_arg null_address = kiln_arg_u64(0);
  kiln_status st = kiln_launch(NULL, k, &c, &null_address, 1);
  if (st != KILN_OK && st != KILN_ERROR_DEVICE_LOST)
    fail_msg("the faulting launch returned %s: %s", kiln_status_name(st),
             kiln_last_error());
  if (st == KILN_OK)
    check_fails(kiln_context_synchronize(ctx), KILN_ERROR_DEVICE_LOST);
  check_fault_named();

  /* Every later call on the context reports the loss. */
  uint32_t word = 0;
  kiln_buffer *other = NULL;
  check_fails(kiln_context_synchronize(ctx), KILN_ERROR_DEVICE_LOST);
  check_fault_named();
  check_fails(kiln_stream_synchronize(stream), KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_buffer_create(ctx, 64, 0, &other), KILN_ERROR_DEVICE_LOST);
  assert_null(other);
  check_fails(kiln_buffer_write(NULL, buf, 0, &word, 4),
              KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_buffer_read(stream, buf, 0, &word, 4),
              KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_buffer_fill(NULL, buf, 0, 4, &word, 4),
              KILN_ERROR_DEVICE_LOST);
  check_fails(kiln_launch(stream, k, &c, &null_address, 1),
              KILN_ERROR_DEVICE_LOST);
  kiln_event *e = NULL;
  check_fails(kiln_event_create(ctx, &e), KILN_ERROR_DEVICE_LOST);
  kiln_module *m2 = NULL;
  check_fails(kiln_module_create(ctx, &image, 1, &m2), KILN_ERROR_DEVICE_LOST);

  /* Releasing what is left still works, and so does destroying it all. */
  check_ok(kiln_stream_destroy(stream));
  check_ok(kiln_buffer_destroy(buf));
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_context_destroy(ctx));
}

int main(void) {
  const char *reason = NULL;
  if (kiln_backend_available(KILN_BACKEND_CUDA, &reason) != KILN_OK) {
    printf("skipped: the CUDA backend is unavailable: %s\n", reason);
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fault_loses_context),
  };
  return cmocka_run_group_tests_name("cuda: fault", tests, NULL, NULL);
}
