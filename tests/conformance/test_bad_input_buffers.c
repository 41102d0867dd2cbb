/* The bad-input suite's cases for device and host buffers: creation,
 * transfers, copies and fills (see bad_input.h; test_bad_input.c runs
 * them). */
#include <stdio.h>

#include "bad_input.h"

/* ---- Device buffers ------------------------------------------------------ */

/* Byte ranges of a 1024-byte buffer. `small` rows fit a buffer at offset
 * 0, so that the other side of a copy does not fail first. */
static const struct range {
  size_t offset, size;
  kiln_status want;
  bool small;
} ranges[] = {
    {1024, 1, KILN_ERROR_OUT_OF_RANGE, true},
    {1020, 8, KILN_ERROR_OUT_OF_RANGE, true},
    {1028, 0, KILN_ERROR_OUT_OF_RANGE, true},
    {0, 1028, KILN_ERROR_OUT_OF_RANGE, false},
    {0, SIZE_MAX, KILN_ERROR_OUT_OF_RANGE, false},
    {SIZE_MAX, 0, KILN_ERROR_OUT_OF_RANGE, true},
    {SIZE_MAX, 1, KILN_ERROR_OVERFLOW, true},
    {SIZE_MAX - 1, 2, KILN_ERROR_OVERFLOW, true},
    {SIZE_MAX - 3, 8, KILN_ERROR_OVERFLOW, true},
    {8, SIZE_MAX - 7, KILN_ERROR_OVERFLOW, false},
    {1024, 0, KILN_OK, true},
};
#define RANGES(first_side, ...)                                           \
  for (size_t ri_ = 0; ri_ < sizeof ranges / sizeof ranges[0]; ri_++) {   \
    const size_t off = ranges[ri_].offset, size = ranges[ri_].size;       \
    if (!(first_side) && !ranges[ri_].small) continue;                    \
    snprintf(bad_detail, sizeof bad_detail, "off = %zu, size = %zu", off, \
             size);                                                       \
    BAD(ranges[ri_].want, __VA_ARGS__);                                   \
  }

static uint64_t junk[8]; /* memory that kiln never handed out */

/* A context of the suite's backend with KILN_DEBUG=guard, the variable put
 * back as it was (the context keeps what it read). */
static kiln_context *guard_context(void) {
  const char *was = getenv("KILN_DEBUG");
  char *saved = was ? conf_alloc(strlen(was) + 1) : NULL;
  if (saved) strcpy(saved, was);
  setenv("KILN_DEBUG", "guard", 1);
  kiln_context_options o = {conf.backend, KILN_DEVICE_FROM_ENV,
                            KILN_SYNC_DEFAULT};
  kiln_context *ctx = NULL;
  kiln_status st = kiln_context_create(&o, &ctx);
  if (saved)
    setenv("KILN_DEBUG", saved, 1);
  else
    unsetenv("KILN_DEBUG");
  free(saved);
  check_ok(st);
  return ctx;
}

void bad_buffer_calls(void **state) {
  (void)state;
  bad_fixture_init();
  int before = bad_failures();
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_buffer_create(NULL, 16, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_create(fx.dead_ctx, 16, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_create(AS(kiln_context, fx.stream), 16, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_buffer_create(fx.ctx, 16, 0, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_buffer_create(fx.ctx, 0, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_buffer_create(fx.ctx, 16, 2, &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_create(fx.ctx, 16, 0x80000000u, &out.buf));
  /* Absurd sizes: the device cannot hold them. The largest are those that
   * wrap when kiln adds to them: the guard bytes in the core, the rounding
   * to whole words in the Vulkan backend. A context of KILN_DEBUG=guard
   * adds 8 KiB to each, so there the core's check must see all but the
   * last. */
  const size_t absurd[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 2, SIZE_MAX - 3,
                           (size_t)1 << 62};
  kiln_context *guarded = guard_context();
  for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; i++) {
    for (int g = 0; g < 2; g++) {
      snprintf(bad_detail, sizeof bad_detail, "size = %zu%s", absurd[i],
               g ? " under KILN_DEBUG=guard" : "");
      BAD(KILN_ERROR_OUT_OF_DEVICE_MEMORY,
          kiln_buffer_create(g ? guarded : fx.ctx, absurd[i],
                             i % 2 ? KILN_BUFFER_ZERO : 0, &out.buf));
    }
  }
  check_ok(kiln_context_destroy(guarded));
  if (conf.props.memory_bytes < SIZE_MAX) {
    snprintf(bad_detail, sizeof bad_detail, "the device's %llu bytes + 1",
             (unsigned long long)conf.props.memory_bytes);
    BAD(KILN_ERROR_OUT_OF_DEVICE_MEMORY,
        kiln_buffer_create(fx.ctx, (size_t)conf.props.memory_bytes + 1, 0,
                           &out.buf));
  }
  BAD(KILN_OK, kiln_buffer_destroy(NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_buffer_destroy(fx.dead_buf));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_buffer_destroy(AS(kiln_buffer, fx.hb)));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_buffer_destroy(AS(kiln_buffer, junk)));
  /* Memory in stream order. */
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_create_async(NULL, 16, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_create_async(fx.dead_stream, 16, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_create_async(AS(kiln_stream, fx.ev), 16, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_create_async(fx.stream, 16, 0, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_create_async(fx.stream, 0, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_create_async(fx.stream, 16, 2, &out.buf));
  BAD(KILN_ERROR_OUT_OF_DEVICE_MEMORY,
      kiln_buffer_create_async(fx.stream, SIZE_MAX, 0, &out.buf));
  kiln_buffer *pooled;
  check_ok(kiln_buffer_create_async(fx.stream, 64, 0, &pooled));
  BAD(KILN_OK, kiln_buffer_destroy_async(fx.stream, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_destroy_async(fx.stream, fx.dead_buf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_destroy_async(fx.stream, AS(kiln_buffer, fx.hb)));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_buffer_destroy_async(fx.stream, fx.buf));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_destroy_async(fx.other_stream, pooled));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_destroy_async(fx.dead_stream, pooled));
  BAD(KILN_OK, kiln_buffer_destroy_async(NULL, pooled));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_buffer_destroy_async(NULL, pooled));
  size_t bytes_of_pool;
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_pool_usage(NULL, &bytes_of_pool, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_pool_usage(fx.dead_ctx, NULL, &bytes_of_pool));
  BAD(KILN_OK, kiln_context_pool_usage(fx.ctx, NULL, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_context_set_pool_keep(NULL, 0));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_set_pool_keep(AS(kiln_context, fx.stream), 0));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_context_trim_pool(NULL, 0));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_context_trim_pool(fx.dead_ctx, 0));

  BAD(KILN_ERROR_INVALID_HANDLE, ZERO_OR(kiln_buffer_size(NULL)));
  BAD(KILN_ERROR_INVALID_HANDLE, ZERO_OR(kiln_buffer_size(fx.dead_buf)));
  BAD(KILN_ERROR_INVALID_HANDLE,
      ZERO_OR(kiln_buffer_size(AS(kiln_buffer, fx.ev))));

  unsigned char bytes[64] = {0};
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_buffer_write(NULL, NULL, 0, bytes, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_write(NULL, fx.dead_buf, 0, bytes, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_write(NULL, AS(kiln_buffer, fx.hb), 0, bytes, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_write(fx.other_stream, fx.buf, 0, bytes, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_write(fx.dead_stream, fx.buf, 0, bytes, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_write(AS(kiln_stream, fx.ev), fx.buf, 0, bytes, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_buffer_write(NULL, fx.buf, 0, NULL, 4));
  BAD(KILN_OK, kiln_buffer_write(NULL, fx.buf, 0, NULL, 0));
  RANGES(true, kiln_buffer_write(NULL, fx.buf, off, bytes, size));

  BAD(KILN_ERROR_INVALID_HANDLE, kiln_buffer_read(NULL, NULL, 0, bytes, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_read(NULL, fx.dead_buf, 0, bytes, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_read(NULL, AS(kiln_buffer, fx.stream), 0, bytes, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_read(fx.stream, fx.other_buf, 0, bytes, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_read(fx.dead_stream, fx.buf, 0, bytes, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_buffer_read(NULL, fx.buf, 0, NULL, 4));
  RANGES(true, kiln_buffer_read(NULL, fx.buf, off, bytes, size));

  BAD(KILN_ERROR_INVALID_HANDLE, kiln_buffer_copy(NULL, NULL, 0, fx.buf, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_buffer_copy(NULL, fx.buf, 0, NULL, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy(NULL, fx.dead_buf, 0, fx.buf, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy(NULL, fx.buf, 0, fx.dead_buf, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy(NULL, fx.buf, 0, AS(kiln_buffer, fx.hb), 0, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_copy(NULL, fx.buf, 0, fx.other_buf, 0, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_copy(NULL, fx.other_buf, 0, fx.buf, 0, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_copy(fx.other_stream, fx.buf, 0, fx.buf2, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy(fx.dead_stream, fx.buf, 0, fx.buf2, 0, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_copy(NULL, fx.buf, 0, fx.buf, 8, 16));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_copy(NULL, fx.buf, 8, fx.buf, 0, 16));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_copy(NULL, fx.buf, 4, fx.buf, 4, 4));
  BAD(KILN_OK, kiln_buffer_copy(NULL, fx.buf, 4, fx.buf, 4, 0));
  RANGES(true, kiln_buffer_copy(NULL, fx.buf, off, fx.buf2, 0, size));
  RANGES(false, kiln_buffer_copy(NULL, fx.buf2, 0, fx.buf, off, size));

  /* Between contexts: fx.other is a second context on the same device. */
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy_peer(NULL, NULL, 0, NULL, fx.other_buf, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy_peer(NULL, fx.buf, 0, NULL, NULL, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy_peer(NULL, fx.dead_buf, 0, NULL, fx.other_buf, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy_peer(NULL, fx.buf, 0, NULL, fx.dead_buf, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy_peer(NULL, fx.buf, 0, NULL, AS(kiln_buffer, fx.other_hb),
                            0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy_peer(NULL, AS(kiln_buffer, fx.other_stream), 0, NULL,
                            fx.buf, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy_peer(NULL, AS(kiln_buffer, junk), 0, NULL, fx.buf, 0,
                            4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_copy_peer(fx.other_stream, fx.buf, 0, NULL, fx.other_buf, 0,
                            4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_copy_peer(NULL, fx.buf, 0, fx.stream, fx.other_buf, 0, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_copy_peer(fx.stream, fx.buf, 0, fx.stream, fx.other_buf, 0,
                            4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy_peer(fx.dead_stream, fx.buf, 0, NULL, fx.other_buf, 0,
                            4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy_peer(NULL, fx.buf, 0, fx.dead_stream, fx.other_buf, 0,
                            4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_copy_peer(NULL, fx.buf, 0, AS(kiln_stream, fx.other_ev),
                            fx.other_buf, 0, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_copy_peer(NULL, fx.buf, 0, NULL, fx.buf, 8, 16));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_copy_peer(fx.stream, fx.buf, 8, NULL, fx.buf, 0, 16));
  BAD(KILN_OK, kiln_buffer_copy_peer(NULL, fx.buf, 4, NULL, fx.buf, 4, 0));
  BAD(KILN_OK,
      kiln_buffer_copy_peer(NULL, fx.buf, 0, NULL, fx.other_buf, 1024, 0));
  RANGES(true,
         kiln_buffer_copy_peer(NULL, fx.buf, off, NULL, fx.other_buf, 0, size));
  RANGES(false,
         kiln_buffer_copy_peer(NULL, fx.other_buf, 0, NULL, fx.buf, off, size));

  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_can_copy_peer(NULL, fx.other, &out.capturing));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_can_copy_peer(fx.ctx, NULL, &out.capturing));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_can_copy_peer(fx.dead_ctx, fx.ctx, &out.capturing));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_can_copy_peer(fx.ctx, fx.dead_ctx, &out.capturing));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_can_copy_peer(fx.ctx, AS(kiln_context, fx.other_buf),
                                 &out.capturing));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_can_copy_peer(fx.ctx, fx.other, NULL));
  BAD(KILN_OK, kiln_context_can_copy_peer(fx.ctx, fx.other, &out.capturing));

  const uint64_t pattern = 0x0123456789abcdefull;
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_fill(NULL, NULL, 0, 4, &pattern, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_fill(NULL, fx.dead_buf, 0, 4, &pattern, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_fill(NULL, AS(kiln_buffer, fx.mod), 0, 4, &pattern, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_fill(fx.other_stream, fx.buf, 0, 4, &pattern, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_fill(NULL, fx.buf, 0, 4, NULL, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_fill(NULL, fx.buf, 0, 0, NULL, 4));
  const size_t pattern_sizes[] = {0, 3, 5, 16, SIZE_MAX};
  for (size_t i = 0; i < sizeof pattern_sizes / sizeof pattern_sizes[0]; i++) {
    snprintf(bad_detail, sizeof bad_detail, "pattern_size = %zu",
             pattern_sizes[i]);
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_buffer_fill(NULL, fx.buf, 0, 16, &pattern, pattern_sizes[i]));
  }
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_fill(NULL, fx.buf, 2, 4, &pattern, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_fill(NULL, fx.buf, 0, 6, &pattern, 4));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_fill(NULL, fx.buf, 4, 8, &pattern, 8));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_fill(NULL, fx.buf, 1, 2, &pattern, 2));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_fill(NULL, fx.buf, 2, 0, &pattern, 4));
  RANGES(true, kiln_buffer_fill(NULL, fx.buf, off, size, &pattern, 4));
  bad_finish(before);
}

/* ---- Host buffers -------------------------------------------------------- */

void bad_host_buffer_calls(void **state) {
  (void)state;
  bad_fixture_init();
  int before = bad_failures();
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_host_buffer_create(NULL, 16, 0, &out.hb));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_host_buffer_create(fx.dead_ctx, 16, 0, &out.hb));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_host_buffer_create(AS(kiln_context, fx.buf), 16, 0, &out.hb));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_host_buffer_create(fx.ctx, 16, 0, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_host_buffer_create(fx.ctx, 0, 0, &out.hb));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_host_buffer_create(fx.ctx, 16, 1, &out.hb));
  const size_t absurd[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 2, SIZE_MAX - 3,
                           (size_t)1 << 62};
  for (size_t i = 0; i < sizeof absurd / sizeof absurd[0]; i++) {
    snprintf(bad_detail, sizeof bad_detail, "size = %zu", absurd[i]);
    BAD(KILN_ERROR_OUT_OF_HOST_MEMORY,
        kiln_host_buffer_create(fx.ctx, absurd[i], 0, &out.hb));
  }
  BAD(KILN_OK, kiln_host_buffer_destroy(NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_host_buffer_destroy(fx.dead_hb));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_host_buffer_destroy(AS(kiln_host_buffer, fx.buf)));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_host_buffer_data(NULL) ? KILN_OK : KILN_ERROR_INVALID_HANDLE);
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_host_buffer_data(fx.dead_hb) ? KILN_OK : KILN_ERROR_INVALID_HANDLE);
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_host_buffer_data(AS(kiln_host_buffer, fx.buf))
          ? KILN_OK
          : KILN_ERROR_INVALID_HANDLE);
  BAD(KILN_ERROR_INVALID_HANDLE, ZERO_OR(kiln_host_buffer_size(NULL)));
  BAD(KILN_ERROR_INVALID_HANDLE, ZERO_OR(kiln_host_buffer_size(fx.dead_hb)));
  BAD(KILN_ERROR_INVALID_HANDLE,
      ZERO_OR(kiln_host_buffer_size(AS(kiln_host_buffer, fx.ev))));

  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_write_async(NULL, NULL, 0, fx.hb, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_write_async(NULL, fx.buf, 0, NULL, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_write_async(NULL, fx.dead_buf, 0, fx.hb, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_write_async(NULL, fx.buf, 0, fx.dead_hb, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_write_async(NULL, fx.buf, 0, AS(kiln_host_buffer, fx.buf2), 0,
                              4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_write_async(NULL, fx.buf, 0, fx.other_hb, 0, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_write_async(NULL, fx.other_buf, 0, fx.hb, 0, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_write_async(fx.other_stream, fx.buf, 0, fx.hb, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_write_async(fx.dead_stream, fx.buf, 0, fx.hb, 0, 4));
  RANGES(true, kiln_buffer_write_async(NULL, fx.buf, off, fx.hb, 0, size));
  RANGES(false, kiln_buffer_write_async(NULL, fx.buf, 0, fx.hb, off, size));

  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_read_async(NULL, NULL, 0, fx.hb, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_read_async(NULL, fx.buf, 0, NULL, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_read_async(NULL, fx.dead_buf, 0, fx.hb, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_read_async(NULL, fx.buf, 0, fx.dead_hb, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_read_async(NULL, AS(kiln_buffer, fx.hb), 0, fx.hb, 0, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_read_async(NULL, fx.buf, 0, fx.other_hb, 0, 4));
  BAD(KILN_ERROR_WRONG_CONTEXT,
      kiln_buffer_read_async(fx.other_stream, fx.buf, 0, fx.hb, 0, 4));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_read_async(AS(kiln_stream, fx.hb), fx.buf, 0, fx.hb, 0, 4));
  RANGES(true, kiln_buffer_read_async(NULL, fx.buf, off, fx.hb, 0, size));
  RANGES(false, kiln_buffer_read_async(NULL, fx.buf, 0, fx.hb, off, size));
  bad_finish(before);
}
