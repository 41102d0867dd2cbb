/*
 * Helpers shared by the core's files and nothing else: handle checks, object
 * allocation, stream resolution, range checks, the registry's internals.
 */
#ifndef KILN_CORE_INTERNAL_H
#define KILN_CORE_INTERNAL_H

#include "core/backend.h"

/* Checks that `obj` is a live object of `type`, looking it up in the
 * registry of live objects before reading it: KILN_ERROR_INVALID_HANDLE
 * naming `fn` and `what` otherwise. */
kiln_status kiln_object_check(const void *obj, kiln_object_type type,
                              const char *fn, const char *what);

/* Checks `obj` as above and that it belongs to `ctx`. */
kiln_status kiln_object_check_in(const void *obj, kiln_object_type type,
                                 const kiln_context *ctx, const char *fn,
                                 const char *what);

/* KILN_ERROR_DEVICE_LOST (with the original fault's message) once the
 * context has been marked lost, else KILN_OK. */
kiln_status kiln_context_check_usable(kiln_context *ctx);

/* Passes a backend result through, marking the context lost on
 * KILN_ERROR_DEVICE_LOST. */
kiln_status kiln_context_result(kiln_context *ctx, kiln_status status);

/* Marks the context lost, `why` becoming the message of every later call,
 * unless it already is. */
void kiln_context_mark_lost(kiln_context *ctx, const char *why);

/* Allocates a zeroed object of `size` bytes with its header filled in,
 * registers it as live and links it into ctx's live list (contexts and
 * kernels excepted). NULL (and the error set) if out of memory. */
void *kiln_object_alloc(kiln_context *ctx, kiln_object_type type, size_t size,
                        bool internal);

/* Unlinks the object from its context, removes it from the registry and
 * frees it (after a spell in quarantine, see core/object.c). */
void kiln_object_free(void *obj);

/* Removes the object from the registry only: its handle is invalid from
 * now on, its memory stays (an abandoned context's objects). */
void kiln_object_forget(void *obj);

/* The core's waits for the device, through the backend's op with the
 * context's bound (KILN_SYNC_TIMEOUT_MS) and kiln_context_result.
 * KILN_ERROR_TIMEOUT gets a message naming `fn`, what was waited for, the
 * time waited and the bound, then `after`: what the timeout means for the
 * caller ("the buffer was not destroyed"), or NULL for "the context stays
 * usable". core/stream.c. */
kiln_status kiln_context_wait(kiln_context *ctx, const char *fn,
                              const char *after);
kiln_status kiln_stream_wait(kiln_stream *s, const char *fn,
                             const char *after);
kiln_status kiln_event_wait(kiln_event *e, const char *fn, const char *after);

/* Whether the context's waits are bounded: the calls whose backend ops may
 * wait without a bound of their own (reads, destroys) then wait first
 * through the functions above. */
static inline bool kiln_waits_bounded(const kiln_context *ctx) {
  return ctx->sync_timeout_ns != KILN_WAIT_FOREVER;
}

/* Resolves a stream argument: NULL means ctx's default stream; otherwise it
 * must be a live stream of ctx. */
kiln_status kiln_stream_resolve(kiln_stream *stream, kiln_context *ctx,
                                const char *fn, kiln_stream **out);

/* KILN_ERROR_OUT_OF_RANGE unless [offset, offset + size) lies within
 * `total` bytes; KILN_ERROR_OVERFLOW if offset + size wraps. */
kiln_status kiln_check_range(size_t offset, size_t size, size_t total,
                             const char *fn, const char *what);

/* Releases an object without argument checks (context destroy, and the
 * public destroy functions after theirs). */
void kiln_buffer_release(kiln_buffer *buf);
void kiln_host_buffer_release(kiln_host_buffer *hb);
void kiln_module_release(kiln_module *m);
void kiln_stream_release(kiln_stream *s);
void kiln_event_release(kiln_event *e);

/* Creates a buffer for the core's own use (not reported as alive). */
kiln_status kiln_buffer_create_internal(kiln_context *ctx, size_t size,
                                        kiln_buffer **out);

/* Creates a module from images already checked (formats known, non-empty);
 * `internal` for the built-in module. */
kiln_status kiln_module_create_checked(kiln_context *ctx,
                                       const kiln_module_image *images,
                                       size_t count, bool internal,
                                       kiln_module **out);

/* Builds a module from sources (compiled in the backend's language, or
 * taken from the disk cache; others ignored) and ready images (those of
 * other backends ignored), all checked by the caller; `fn` names the public
 * function in messages. core/compile.c. */
kiln_status kiln_module_build(kiln_context *ctx, const char *fn,
                              const kiln_source *sources, size_t source_count,
                              const kiln_module_image *images,
                              size_t image_count,
                              const kiln_compile_options *options,
                              kiln_module **out);

/* Checks compile options as kiln_module_create_from_source does. */
kiln_status kiln_compile_options_check(const char *fn,
                                       const kiln_compile_options *options);

/* Creates a stream; `is_default` marks the context's own. */
kiln_status kiln_stream_create_internal(kiln_context *ctx, bool is_default,
                                        kiln_stream **out);

/* The backend registered for `backend`, or NULL when not compiled in. */
const kiln_backend_ops *kiln_registry_get(kiln_backend backend);

/* Probes the backend once; KILN_OK or KILN_ERROR_UNAVAILABLE with
 * *out_reason (owned by the registry) saying why. */
kiln_status kiln_registry_probe(kiln_backend backend, const char **out_reason);

/* Picks the backend and device for a new context from `options` and the
 * environment (KILN_BACKEND, KILN_DEVICE), with messages that list what is
 * available when the choice cannot be met. */
kiln_status kiln_registry_select(const kiln_context_options *options,
                                 const kiln_backend_ops **out_ops,
                                 size_t *out_device);

#endif /* KILN_CORE_INTERNAL_H */
