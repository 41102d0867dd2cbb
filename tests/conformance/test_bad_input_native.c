/* The bad-input suite's cases for native handles, export and import (see
 * bad_input.h; test_bad_input.c runs them). */
#include <stdio.h>

#include "bad_input.h"

static void context_and_buffer_exports(void) {
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_context_get_native(NULL, &out.nctx));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_get_native(fx.dead_ctx, &out.nctx));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_context_get_native(AS(kiln_context, fx.stream), &out.nctx));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_context_get_native(fx.ctx, NULL));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_buffer_get_native(NULL, &out.nbuf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_get_native(fx.dead_buf, &out.nbuf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_get_native(AS(kiln_buffer, fx.hb), &out.nbuf));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_buffer_get_native(fx.buf, NULL));
}

static void context_imports(void) {
  kiln_native_context good;
  if (kiln_context_get_native(fx.ctx, &good) != KILN_OK)
    fail_msg("kiln_context_get_native: %s", kiln_last_error());
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_create_from_native(NULL, 0, &out.ctx));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_create_from_native(&good, 0, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_create_from_native(&good, 2, &out.ctx));
  kiln_native_context n = good;
  n.backend = KILN_BACKEND_AUTO;
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_create_from_native(&n, 0, &out.ctx));
  n.backend = (kiln_backend)77;
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_context_create_from_native(&n, 0, &out.ctx));
  switch (good.backend) {
  case KILN_BACKEND_CUDA:
    n = good;
    n.cuda_context = NULL;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_context_create_from_native(&n, 0, &out.ctx));
    break;
  case KILN_BACKEND_HIP:
    n = good;
    n.hip_device = -1;
    BAD(KILN_ERROR_NOT_FOUND,
        kiln_context_create_from_native(&n, 0, &out.ctx));
    n.hip_device = 1 << 20;
    BAD(KILN_ERROR_NOT_FOUND,
        kiln_context_create_from_native(&n, 0, &out.ctx));
    break;
  default:
    n = good;
    n.vk_device = NULL;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_context_create_from_native(&n, 0, &out.ctx));
    n = good;
    n.vk_instance = NULL;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_context_create_from_native(&n, 0, &out.ctx));
    n = good;
    n.vk_api_version = (1u << 22) | (1u << 12); /* 1.1 */
    BAD(KILN_ERROR_UNSUPPORTED,
        kiln_context_create_from_native(&n, 0, &out.ctx));
    n = good;
    n.vk_queue_family = 1000;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_context_create_from_native(&n, 0, &out.ctx));
    n = good;
    n.vk_queue_count = 0;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_context_create_from_native(&n, 0, &out.ctx));
    n.vk_queue_count = 1000;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_context_create_from_native(&n, 0, &out.ctx));
    n = good;
    n.vk_enabled_features = NULL; /* nothing said enabled */
    BAD(KILN_ERROR_UNSUPPORTED,
        kiln_context_create_from_native(&n, 0, &out.ctx));
    break;
  }
}

static void buffer_imports(void) {
  kiln_native_buffer good;
  if (kiln_buffer_get_native(fx.buf, &good) != KILN_OK)
    fail_msg("kiln_buffer_get_native: %s", kiln_last_error());
  kiln_native_buffer n = good;
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_create_from_native(NULL, &good, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_create_from_native(fx.dead_ctx, &good, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_buffer_create_from_native(AS(kiln_context, fx.buf), &good, 0,
                                     &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_create_from_native(fx.ctx, NULL, 0, &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_create_from_native(fx.ctx, &good, 0, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_create_from_native(fx.ctx, &good, 2, &out.buf));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_create_from_native(fx.ctx, &good, 0x80000000u, &out.buf));
  const kiln_backend others[] = {KILN_BACKEND_AUTO, KILN_BACKEND_CUDA,
                                 KILN_BACKEND_HIP, KILN_BACKEND_VULKAN,
                                 (kiln_backend)77};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    if (others[i] == good.backend) continue;
    n = good;
    n.backend = others[i];
    snprintf(bad_detail, sizeof bad_detail, "native.backend = %d",
             (int)others[i]);
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_buffer_create_from_native(fx.ctx, &n, 0, &out.buf));
  }
  n = good;
  n.size = 0;
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_buffer_create_from_native(fx.ctx, &n, 0, &out.buf));
  n = good;
  n.device_address = UINT64_MAX - 8;
  BAD(KILN_ERROR_OVERFLOW,
      kiln_buffer_create_from_native(fx.ctx, &n, 0, &out.buf));
  /* Past the end of the allocation under it. */
  n = good;
  n.size = good.size * 2;
  BAD(KILN_ERROR_OUT_OF_RANGE,
      kiln_buffer_create_from_native(fx.ctx, &n, 0, &out.buf));
  if (good.backend == KILN_BACKEND_VULKAN) {
    n = good;
    n.vk_buffer = 0;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_buffer_create_from_native(fx.ctx, &n, 0, &out.buf));
    n = good;
    n.vk_offset += 2;
    n.device_address += 2;
    n.size -= 4;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_buffer_create_from_native(fx.ctx, &n, 0, &out.buf));
    n = good;
    n.device_address += 4;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_buffer_create_from_native(fx.ctx, &n, 0, &out.buf));
  } else {
    /* Host memory is no device allocation. */
    static uint64_t host[16];
    n = good;
    n.device_address = (uint64_t)(uintptr_t)host;
    n.size = sizeof host;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_buffer_create_from_native(fx.ctx, &n, 0, &out.buf));
    /* Adopting needs the allocation's start: it is what the free takes. */
    n = good;
    n.device_address += 4;
    n.size -= 4;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_buffer_create_from_native(fx.ctx, &n, KILN_NATIVE_ADOPT,
                                       &out.buf));
  }
}

static void stream_imports(void) {
  kiln_native_stream good;
  if (kiln_stream_get_native(fx.stream, &good) != KILN_OK)
    fail_msg("kiln_stream_get_native: %s", kiln_last_error());
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_create_from_native(NULL, &good, 0, &out.stream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_create_from_native(fx.dead_ctx, &good, 0, &out.stream));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_stream_create_from_native(fx.ctx, NULL, 0, &out.stream));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_stream_create_from_native(fx.ctx, &good, 0, NULL));
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_stream_create_from_native(fx.ctx, &good, 4, &out.stream));
  kiln_native_stream n = good;
  n.backend = good.backend == KILN_BACKEND_VULKAN ? KILN_BACKEND_CUDA
                                                  : KILN_BACKEND_VULKAN;
  BAD(KILN_ERROR_INVALID_ARGUMENT,
      kiln_stream_create_from_native(fx.ctx, &n, 0, &out.stream));
  n = good;
  if (good.backend == KILN_BACKEND_VULKAN) {
    static uint64_t not_a_queue[4];
    n.vk_queue = not_a_queue;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_stream_create_from_native(fx.ctx, &n, 0, &out.stream));
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_stream_create_from_native(fx.ctx, &good, KILN_NATIVE_ADOPT,
                                       &out.stream));
  } else {
    n.stream = NULL;
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_stream_create_from_native(fx.ctx, &n, 0, &out.stream));
  }
}

static void stream_exports_and_waits(void) {
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_get_native(NULL, &out.nstream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_get_native(fx.dead_stream, &out.nstream));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_get_native(AS(kiln_stream, fx.ev), &out.nstream));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_stream_get_native(fx.stream, NULL));
  const bool vulkan = conf.backend == KILN_BACKEND_VULKAN;
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_wait_native(NULL, 1, 0));
  BAD(KILN_ERROR_INVALID_HANDLE, kiln_stream_wait_native(fx.dead_stream, 1, 0));
  BAD(KILN_ERROR_INVALID_HANDLE,
      kiln_stream_wait_native(AS(kiln_stream, fx.buf), 1, 0));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_stream_wait_native(fx.stream, 0, 0));
  BAD(KILN_ERROR_INVALID_ARGUMENT, kiln_stream_wait_native(fx.stream, 0, 5));
  if (!vulkan)
    BAD(KILN_ERROR_INVALID_ARGUMENT,
        kiln_stream_wait_native(fx.stream, 1, 1));
  /* Foreign work would land in no graph. */
  kiln_stream *capturing;
  if (kiln_stream_create(fx.ctx, &capturing) != KILN_OK ||
      kiln_stream_begin_capture(capturing) != KILN_OK)
    fail_msg("making a capturing stream: %s", kiln_last_error());
  BAD(KILN_ERROR_INVALID_STATE,
      kiln_stream_get_native(capturing, &out.nstream));
  BAD(KILN_ERROR_INVALID_STATE, kiln_stream_wait_native(capturing, 1, 0));
  kiln_graph *g = NULL;
  if (kiln_stream_end_capture(capturing, &g) != KILN_OK ||
      kiln_graph_destroy(g) != KILN_OK ||
      kiln_stream_destroy(capturing) != KILN_OK)
    fail_msg("ending the capture: %s", kiln_last_error());
}

void bad_native_calls(void **state) {
  (void)state;
  bad_fixture_init();
  int before = bad_failures();
  context_and_buffer_exports();
  context_imports();
  buffer_imports();
  stream_exports_and_waits();
  stream_imports();
  bad_finish(before);
}
