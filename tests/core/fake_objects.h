/* The fake backend's objects (fake_backend.c), shared with the files that
 * fill parts of its table (fake_interop.c). Private to tests/core. */
#ifndef KILN_TESTS_FAKE_OBJECTS_H
#define KILN_TESTS_FAKE_OBJECTS_H

#include "fake_backend.h"

/* Written by every init into the bytes past the core's struct and checked by
 * every deinit: a core that allocated less than ops->X_size, or handed one
 * object's deinit another's block, trips it (or AddressSanitizer). */
#define FAKE_TAG 0x66616b65u

typedef struct fake_context {
  kiln_context base;
  uint32_t tag;
} fake_context;

typedef struct fake_buffer {
  kiln_buffer base;
  unsigned char *mem;
  uint32_t tag;
} fake_buffer;

typedef struct fake_host_buffer {
  kiln_host_buffer base;
  uint32_t tag;
} fake_host_buffer;

typedef struct fake_module {
  kiln_module base;
  char *text; /* every image's text, joined by spaces */
  uint32_t tag;
} fake_module;

typedef struct fake_kernel {
  kiln_kernel base;
  uint32_t tag;
} fake_kernel;

typedef struct fake_stream {
  kiln_stream base;
  uint32_t tag;
} fake_stream;

typedef struct fake_event {
  kiln_event base;
  uint64_t ns; /* CLOCK_MONOTONIC at the last record */
  uint32_t tag;
} fake_event;

/* The fake that owns an object: ops is the fake's first member. */
static inline fake_backend *fake_owner(const void *obj) {
  return (fake_backend *)((const kiln_object *)obj)->context->ops;
}

#endif /* KILN_TESTS_FAKE_OBJECTS_H */
