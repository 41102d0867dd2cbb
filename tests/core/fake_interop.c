/* The fake backend's native-handle ops (see fake_interop_ops). */
#include <stdint.h>

#include "fake_objects.h"

/* A context's native handles name the fake's device: vk_physical_device
 * points at its properties (for every kind: the fake has one rule), and
 * vk_device is the context. */
static kiln_status context_native(kiln_context *ctx, kiln_native_context *out) {
  fake_backend *fb = (fake_backend *)ctx->ops;
  out->vk_physical_device = &fb->devices[ctx->device_index];
  out->vk_device = ctx;
  return KILN_OK;
}

static kiln_status context_import_device(const kiln_native_context *native,
                                         size_t *out_index) {
  const fake_backend *fb = fake_installed(native->backend);
  for (size_t i = 0; fb && i < fb->device_count && i < FAKE_MAX_DEVICES; i++)
    if (native->vk_physical_device == &fb->devices[i]) {
      *out_index = i;
      return KILN_OK;
    }
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                        "fake: native->vk_physical_device names no device of "
                        "the fake %s backend",
                        kiln_backend_name(native->backend));
}

/* The fake's device is its own, so there is nothing of the caller's to
 * keep or, adopted, to free: an import is a context_init. */
static kiln_status context_import(kiln_context *ctx,
                                  const kiln_native_context *native,
                                  bool adopt) {
  (void)native;
  (void)adopt;
  return ctx->ops->context_init(ctx);
}

/* Native handles: device memory is host memory, so an imported buffer is
 * the caller's malloc'd block, which deinit frees only when adopted. */
static kiln_status buffer_import(kiln_buffer *buf,
                                 const kiln_native_buffer *native,
                                 bool adopt) {
  fake_buffer *b = (fake_buffer *)buf;
  b->mem = adopt ? (unsigned char *)(uintptr_t)native->device_address : NULL;
  buf->device_address = native->device_address;
  b->tag = FAKE_TAG;
  fake_owner(buf)->live[KILN_OBJECT_BUFFER]++;
  return KILN_OK;
}

static kiln_status buffer_native(const kiln_buffer *buf,
                                 kiln_native_buffer *out) {
  (void)buf;
  (void)out;
  return KILN_OK;
}

static kiln_status stream_native(kiln_stream *s, kiln_native_stream *out) {
  out->stream = s;
  return KILN_OK;
}

static kiln_status stream_import(kiln_stream *s,
                                 const kiln_native_stream *native,
                                 bool adopt) {
  (void)native;
  (void)adopt;
  ((fake_stream *)s)->tag = FAKE_TAG;
  fake_owner(s)->live[KILN_OBJECT_STREAM]++;
  return KILN_OK;
}

static kiln_status stream_wait_native(kiln_stream *s, uint64_t handle,
                                      uint64_t value) {
  fake_backend *fb = fake_owner(s);
  fb->last_wait_handle = handle;
  fb->last_wait_value = value;
  return KILN_OK;
}

static const kiln_interop_ops interop = {
    .context_native = context_native,
    .buffer_native = buffer_native,
    .stream_native = stream_native,
    .stream_wait_native = stream_wait_native,
    .buffer_import = buffer_import,
    .context_import_device = context_import_device,
    .context_import = context_import,
    .stream_import = stream_import,
};

void fake_interop_ops(kiln_backend_ops *o) { o->interop = &interop; }
