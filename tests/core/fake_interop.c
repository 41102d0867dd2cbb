/* The fake backend's native-handle ops (see fake_interop_ops). */
#include <stdint.h>

#include "fake_objects.h"

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

void fake_interop_ops(kiln_backend_ops *o) {
  o->buffer_native = buffer_native;
  o->buffer_import = buffer_import;
  o->stream_native = stream_native;
  o->stream_import = stream_import;
  o->stream_wait_native = stream_wait_native;
}
