/* The fake backend of tests/core: see fake_backend.h. Past 600 lines
 * for a reason: it is the fake's whole ops table, which a reader follows
 * op by op; its graphs, held work, compiler and native handles are in
 * files of their own. */
#include "fake_backend.h"
#include "fake_objects.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

static const char *const op_names[FAKE_OP_COUNT] = {
    "context_init",
    "context_synchronize",
    "buffer_init",
    "host_buffer_init",
    "buffer_write",
    "buffer_read",
    "buffer_copy",
    "buffer_fill",
    "buffer_write_async",
    "buffer_read_async",
    "module_init",
    "kernel_init",
    "launch",
    "stream_init",
    "stream_synchronize",
    "event_init",
    "event_record",
    "stream_wait_event",
    "event_synchronize",
    "event_query",
    "event_elapsed_ms",
    "graph_begin",
    "graph_launch",
    "graph_update",
};

/* The installed fakes by kind, for the ops that get no object. */
static fake_backend *installed[KILN_BACKEND_COUNT];

/* The built-in kernels with their parameters and the packed sizes of their
 * lists (docs/kernels.md): natural alignment, no tail padding. */
static const char builtin_text[] =
    "kiln_fill(p,u8,u8,u8):32 kiln_axpy_f32(p,p,f,u):24 "
    "kiln_reduce_sum_f32(p,p,p,p,u):36 kiln_dot_f32(p,p,p,p,p,u):44 "
    "kiln_sgemm_f32(p,p,p,u,u,u,u,u,u,f,f):56 "
    "kiln_sgemm_f32_mid(p,p,p,u,u,u,u,u,u,f,f):56 "
    "kiln_sgemm_f32_small(p,p,p,u,u,u,u,u,u,f,f):56";
static const kiln_module_image builtin_images[] = {
    {KILN_IMAGE_SPIRV, builtin_text, sizeof builtin_text - 1},
    {(kiln_image_format)0, NULL, 0},
};

static fake_backend *fake_of(const kiln_context *ctx) {
  /* ops is the fake's first member. */
  return (fake_backend *)ctx->ops;
}

static fake_backend *fake_of_object(const void *obj) {
  return fake_of(((const kiln_object *)obj)->context);
}

static kiln_status enter(fake_backend *fb, fake_op op) {
  fb->calls[op]++;
  if (fb->fail_status != KILN_OK && fb->fail_op == op) {
    kiln_status st = fb->fail_status;
    fb->fail_status = KILN_OK;
    return kiln_set_error(st, "fake %s: injected failure of %s", fb->name,
                          op_names[op]);
  }
  return KILN_OK;
}

kiln_status fake_enter(fake_backend *fb, fake_op op) { return enter(fb, op); }

static void *addr(uint64_t device_address) {
  return (void *)(uintptr_t)device_address;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- Probe and devices --------------------------------------------------- */

static kiln_status probe_of(fake_backend *fb, char *reason, size_t size) {
  fb->probe_calls++;
  if (fb->available) return KILN_OK;
  kiln_strlcpy(reason, fb->reason, size);
  return KILN_ERROR_UNAVAILABLE;
}

static kiln_status properties_of(fake_backend *fb, size_t index,
                                 kiln_device_properties *out) {
  kiln_backend kind = out->backend;
  *out = fb->devices[index];
  /* The contract says the core sets this field; keep what it had. */
  out->backend = kind;
  return KILN_OK;
}

#define FAKE_KIND_OPS(lower, KIND)                                             \
  static kiln_status probe_##lower(char *reason, size_t size) {                \
    return probe_of(installed[KIND], reason, size);                            \
  }                                                                            \
  static size_t device_count_##lower(void) {                                   \
    return installed[KIND]->device_count;                                      \
  }                                                                            \
  static kiln_status properties_##lower(size_t index,                          \
                                        kiln_device_properties *out) {         \
    return properties_of(installed[KIND], index, out);                         \
  }
FAKE_KIND_OPS(cuda, KILN_BACKEND_CUDA)
FAKE_KIND_OPS(hip, KILN_BACKEND_HIP)
FAKE_KIND_OPS(vulkan, KILN_BACKEND_VULKAN)

/* ---- Contexts ------------------------------------------------------------ */

static kiln_status context_init(kiln_context *ctx) {
  fake_backend *fb = fake_of(ctx);
  kiln_status st = enter(fb, FAKE_OP_CONTEXT_INIT);
  if (st == KILN_OK) st = fake_queue_init(ctx);
  if (st != KILN_OK) return st;
  ((fake_context *)ctx)->tag = FAKE_TAG;
  fb->live[KILN_OBJECT_CONTEXT]++;
  return KILN_OK;
}

static void context_deinit(kiln_context *ctx) {
  fake_context *c = (fake_context *)ctx;
  fake_queue_deinit(ctx);
  if (c->tag == FAKE_TAG) fake_of(ctx)->live[KILN_OBJECT_CONTEXT]--;
  if (ctx->abandoned) fake_of(ctx)->abandoned++;
  c->tag = 0;
}

static kiln_status work_done(void *fb) {
  return atomic_load(&((fake_backend *)fb)->hung) ? KILN_ERROR_NOT_READY
                                                  : KILN_OK;
}

/* Work is done when its call returns (or, under KILN_DEBUG=reorder, once
 * the wait has run what was held), so the waits never wait, unless the
 * fake is hung. */
static kiln_status wait_for_work(kiln_context *ctx, fake_op op,
                                 uint64_t timeout_ns) {
  fake_backend *fb = fake_of(ctx);
  kiln_status st = enter(fb, op);
  fb->last_timeout_ns = timeout_ns;
  if (st == KILN_OK) st = fake_flush(ctx);
  if (st != KILN_OK) return st;
  return kiln_poll_until(work_done, fb, timeout_ns);
}

static kiln_status context_synchronize(kiln_context *ctx, uint64_t timeout_ns) {
  return wait_for_work(ctx, FAKE_OP_CONTEXT_SYNCHRONIZE, timeout_ns);
}

/* ---- Buffers ------------------------------------------------------------- */

static kiln_status buffer_init(kiln_buffer *buf, uint32_t flags) {
  fake_backend *fb = fake_of_object(buf);
  kiln_status st = enter(fb, FAKE_OP_BUFFER_INIT);
  if (st != KILN_OK) return st;
  if (buf->size > buf->base.context->properties.memory_bytes)
    return kiln_set_error(KILN_ERROR_OUT_OF_DEVICE_MEMORY,
                          "fake: %zu bytes do not fit in the device",
                          buf->size);
  fake_buffer *b = (fake_buffer *)buf;
  b->mem = malloc(buf->size);
  if (!b->mem)
    return kiln_set_error(KILN_ERROR_OUT_OF_DEVICE_MEMORY,
                          "fake: malloc(%zu) failed", buf->size);
  /* Not zero unless asked, so that tests notice a missing KILN_BUFFER_ZERO. */
  memset(b->mem, (flags & KILN_BUFFER_ZERO) ? 0 : 0xcd, buf->size);
  buf->device_address = (uint64_t)(uintptr_t)b->mem;
  b->tag = FAKE_TAG;
  fb->live[KILN_OBJECT_BUFFER]++;
  return KILN_OK;
}

static void buffer_deinit(kiln_buffer *buf) {
  fake_buffer *b = (fake_buffer *)buf;
  fake_flush(buf->base.context);
  if (b->tag == FAKE_TAG) fake_of_object(buf)->live[KILN_OBJECT_BUFFER]--;
  b->tag = 0;
  free(b->mem);
  b->mem = NULL;
}

static kiln_status host_buffer_init(kiln_host_buffer *hb, uint32_t flags) {
  fake_backend *fb = fake_of_object(hb);
  kiln_status st = enter(fb, FAKE_OP_HOST_BUFFER_INIT);
  if (st != KILN_OK) return st;
  hb->data = malloc(hb->size);
  if (!hb->data)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "fake: malloc(%zu) failed", hb->size);
  memset(hb->data, (flags & KILN_BUFFER_ZERO) ? 0 : 0xcd, hb->size);
  ((fake_host_buffer *)hb)->tag = FAKE_TAG;
  fb->live[KILN_OBJECT_HOST_BUFFER]++;
  return KILN_OK;
}

static void host_buffer_deinit(kiln_host_buffer *hb) {
  fake_host_buffer *h = (fake_host_buffer *)hb;
  fake_flush(hb->base.context);
  if (h->tag == FAKE_TAG) fake_of_object(hb)->live[KILN_OBJECT_HOST_BUFFER]--;
  h->tag = 0;
  free(hb->data);
  hb->data = NULL;
}

/* A MOVE of `size` bytes from src to dst. */
static fake_cmd move(void *dst, const void *src, size_t size) {
  fake_cmd c = {.kind = FAKE_CMD_MOVE, .dst = dst, .src = src, .size = size};
  return c;
}

static kiln_status buffer_write(kiln_stream *s, kiln_buffer *dst, size_t off,
                                const void *src, size_t size) {
  kiln_status st = enter(fake_of_object(s), FAKE_OP_WRITE);
  if (st != KILN_OK) return st;
  fake_cmd c = move((char *)addr(dst->device_address) + off, src, size);
  return fake_submit(s, &c, true);
}

/* Blocking: a host wait, so what is held runs first. */
static kiln_status buffer_read(kiln_stream *s, const kiln_buffer *src,
                               size_t off, void *dst, size_t size) {
  kiln_status st = enter(fake_of_object(s), FAKE_OP_READ);
  if (st == KILN_OK) st = fake_flush(s->base.context);
  if (st == KILN_OK) memcpy(dst, (char *)addr(src->device_address) + off, size);
  return st;
}

static kiln_status buffer_copy(kiln_stream *s, kiln_buffer *dst, size_t dst_off,
                               const kiln_buffer *src, size_t src_off,
                               size_t size) {
  kiln_status st = enter(fake_of_object(s), FAKE_OP_COPY);
  if (st != KILN_OK) return st;
  if (s->building) {
    fake_node n = {.op = KILN_GRAPH_COPY,
                   .cmd = SIZE_MAX,
                   .dst = dst,
                   .src = src,
                   .dst_offset = dst_off,
                   .src_offset = src_off,
                   .size = size};
    return fake_graph_add(s, &n);
  }
  fake_cmd c = move((char *)addr(dst->device_address) + dst_off,
                    (char *)addr(src->device_address) + src_off, size);
  return fake_submit(s, &c, false);
}

static void fill_bytes(unsigned char *p, size_t size, uint64_t pattern,
                       size_t pattern_size) {
  unsigned char bytes[8];
  memcpy(bytes, &pattern, sizeof bytes);
  for (size_t i = 0; i < size; i++) p[i] = bytes[i % pattern_size];
}

static kiln_status buffer_fill(kiln_stream *s, kiln_buffer *dst, size_t off,
                               size_t size, uint64_t pattern,
                               size_t pattern_size) {
  fake_backend *fb = fake_of_object(s);
  kiln_status st = enter(fb, FAKE_OP_FILL);
  if (st != KILN_OK) return st;
  if (!s->building) {
    fb->last_fill_pattern = pattern;
    fb->last_fill_pattern_size = pattern_size;
  }
  /* As a device without a fill of its own, in a graph's build too. */
  if (fb->fill_with_kernel)
    return kiln_fill_with_kernel(s, dst, off, size, pattern, pattern_size);
  if (s->building) {
    fake_node n = {.op = KILN_GRAPH_FILL,
                   .cmd = SIZE_MAX,
                   .dst = dst,
                   .dst_offset = off,
                   .size = size,
                   .pattern = pattern,
                   .pattern_size = pattern_size};
    return fake_graph_add(s, &n);
  }
  fake_cmd c = {.kind = FAKE_CMD_FILL,
                .dst = (unsigned char *)addr(dst->device_address) + off,
                .size = size,
                .pattern = pattern,
                .pattern_size = pattern_size};
  return fake_submit(s, &c, false);
}

static kiln_status buffer_write_async(kiln_stream *s, kiln_buffer *dst,
                                      size_t dst_off,
                                      const kiln_host_buffer *src,
                                      size_t src_off, size_t size) {
  kiln_status st = enter(fake_of_object(s), FAKE_OP_WRITE_ASYNC);
  if (st != KILN_OK) return st;
  fake_cmd c = move((char *)addr(dst->device_address) + dst_off,
                    (const char *)src->data + src_off, size);
  return fake_submit(s, &c, false);
}

static kiln_status buffer_read_async(kiln_stream *s, const kiln_buffer *src,
                                     size_t src_off, kiln_host_buffer *dst,
                                     size_t dst_off, size_t size) {
  kiln_status st = enter(fake_of_object(s), FAKE_OP_READ_ASYNC);
  if (st != KILN_OK) return st;
  fake_cmd c = move((char *)dst->data + dst_off,
                    (const char *)addr(src->device_address) + src_off, size);
  return fake_submit(s, &c, false);
}

/* ---- Modules and kernels ------------------------------------------------- */

/* Splits the next word off *text: [*start, *start + *len). */
static bool next_word(const char **text, const char **start, size_t *len) {
  const char *p = *text;
  while (*p && isspace((unsigned char)*p)) p++;
  if (!*p) return false;
  const char *e = p;
  while (*e && !isspace((unsigned char)*e)) e++;
  *start = p;
  *len = (size_t)(e - p);
  *text = e;
  return true;
}

/* A kernel's parameters as its word declares them. */
typedef struct fake_params {
  size_t count; /* KILN_PARAMS_UNKNOWN without a list */
  kiln_param_info list[KILN_MAX_KERNEL_ARGS];
} fake_params;

/* Reads the digits at *p into *v; false if there are none. */
static bool parse_number(const char **p, const char *end, uint32_t *v) {
  const char *q = *p;
  for (*v = 0; q < end && isdigit((unsigned char)*q) && *v < 100000; q++)
    *v = *v * 10 + (uint32_t)(*q - '0');
  bool any = q != *p;
  *p = q;
  return any;
}

/* One parameter of a list at *p, "<kind>[size][@offset]", the kind a
 * letter of "bpisuf" (in kiln_param_kind's order); advances *p past it.
 * Without an offset it follows `at` with natural alignment: the largest
 * power of two dividing its size, at most 16 (a float4 in CUDA). */
static bool parse_param(const char **p, const char *end, uint32_t at,
                        kiln_param_info *out) {
  static const char letters[] = "bpisuf";
  const char *kind = *p < end && **p ? strchr(letters, **p) : NULL;
  if (!kind) return false;
  out->kind = (kiln_param_kind)(kind - letters);
  ++*p;
  if (!parse_number(p, end, &out->size))
    out->size = out->kind == KILN_PARAM_POINTER ? 8 : 4;
  uint32_t align = out->size & (~out->size + 1);
  if (align > 16) align = 16;
  out->offset = (at + align - 1) & ~(align - 1);
  if (*p < end && **p == '@') {
    ++*p;
    if (!parse_number(p, end, &out->offset)) return false;
  }
  return out->size > 0;
}

/* "name", "name:N" or "name(kinds)" / "name(kinds):N": the name's length,
 * N in *arg_bytes (or unknown) and the parameters in *params (if not NULL;
 * count unknown without a list); 0 if the word is malformed. */
static size_t parse_word(const char *w, size_t len, size_t *arg_bytes,
                         fake_params *params) {
  size_t n = 0;
  while (n < len && (isalnum((unsigned char)w[n]) || w[n] == '_')) n++;
  if (n == 0) return 0;
  *arg_bytes = KILN_ARG_BYTES_UNKNOWN;
  if (params) params->count = KILN_PARAMS_UNKNOWN;
  const char *p = w + n, *end = w + len;
  if (p < end && *p == '(') {
    size_t count = 0;
    uint32_t at = 0;
    kiln_param_info scratch;
    for (p++; p < end && *p != ')'; count++) {
      if (count > 0 && (*p++ != ',' || count == KILN_MAX_KERNEL_ARGS))
        return 0;
      kiln_param_info *info = params ? &params->list[count] : &scratch;
      if (!parse_param(&p, end, at, info)) return 0;
      at = info->offset + info->size;
    }
    if (p == end) return 0;
    p++;
    if (params) params->count = count;
  }
  if (p == end) return n;
  if (*p != ':' || p + 1 == end) return 0;
  size_t v = 0;
  for (p++; p < end; p++) {
    if (!isdigit((unsigned char)*p)) return 0;
    v = v * 10 + (size_t)(*p - '0');
  }
  *arg_bytes = v;
  return n;
}

static kiln_status module_init(kiln_module *m, const kiln_module_image *images,
                               size_t count) {
  fake_backend *fb = fake_of_object(m);
  kiln_status st = enter(fb, FAKE_OP_MODULE_INIT);
  if (st != KILN_OK) return st;
  fb->checked_images = 0;
  for (size_t i = 0; m->checked && i < count; i++)
    fb->checked_images += m->checked[i];
  size_t total = 1;
  for (size_t i = 0; i < count; i++) total += images[i].size + 1;
  char *text = malloc(total);
  if (!text)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY, "fake: no memory");
  size_t used = 0;
  for (size_t i = 0; i < count; i++) {
    if (memchr(images[i].data, '\0', images[i].size)) {
      free(text);
      return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                            "fake: image %zu is not text", i);
    }
    memcpy(text + used, images[i].data, images[i].size);
    used += images[i].size;
    text[used++] = ' ';
  }
  text[used] = '\0';
  const char *p = text, *w;
  size_t len, bytes, words = 0;
  while (next_word(&p, &w, &len)) {
    words++;
    if (parse_word(w, len, &bytes, NULL) == 0) {
      kiln_status e =
          kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                         "fake: '%.*s' is not a kernel entry", (int)len, w);
      free(text);
      return e;
    }
  }
  if (words == 0) {
    free(text);
    return kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                          "fake: the images name no kernel");
  }
  fake_module *fm = (fake_module *)m;
  fm->text = text;
  fm->tag = FAKE_TAG;
  fb->live[KILN_OBJECT_MODULE]++;
  return KILN_OK;
}

static void module_deinit(kiln_module *m) {
  fake_module *fm = (fake_module *)m;
  fake_flush(m->base.context);
  if (fm->tag == FAKE_TAG) fake_of_object(m)->live[KILN_OBJECT_MODULE]--;
  fm->tag = 0;
  free(fm->text);
  fm->text = NULL;
}

static kiln_status kernel_init(kiln_kernel *k) {
  fake_backend *fb = fake_of_object(k);
  kiln_status st = enter(fb, FAKE_OP_KERNEL_INIT);
  if (st != KILN_OK) return st;
  const char *p = ((fake_module *)k->module)->text, *w;
  size_t len, bytes;
  fake_params params;
  while (next_word(&p, &w, &len)) {
    size_t n = parse_word(w, len, &bytes, &params);
    if (n == strlen(k->name) && memcmp(w, k->name, n) == 0) {
      if (params.count != KILN_PARAMS_UNKNOWN && params.count > 0) {
        k->params = malloc(params.count * sizeof *k->params);
        if (!k->params)
          return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                                "fake: no memory");
        memcpy(k->params, params.list, params.count * sizeof *k->params);
      }
      k->param_count = params.count;
      k->arg_bytes = bytes;
      ((fake_kernel *)k)->tag = FAKE_TAG;
      fb->live[KILN_OBJECT_KERNEL]++;
      return KILN_OK;
    }
  }
  return kiln_set_error(KILN_ERROR_NOT_FOUND, "fake: no kernel '%s'", k->name);
}

static void kernel_deinit(kiln_kernel *k) {
  fake_kernel *fk = (fake_kernel *)k;
  fake_flush(k->base.context);
  if (fk->tag == FAKE_TAG) fake_of_object(k)->live[KILN_OBJECT_KERNEL]--;
  fk->tag = 0;
}

/* ---- The built-in kernels, run on the host ------------------------------- */

static void arg(const kiln_packed_args *a, size_t i, void *out, size_t size) {
  memcpy(out, a->data + a->offsets[i], size);
}

static uint64_t arg_u64(const kiln_packed_args *a, size_t i) {
  uint64_t v;
  arg(a, i, &v, sizeof v);
  return v;
}

static uint32_t arg_u32(const kiln_packed_args *a, size_t i) {
  uint32_t v;
  arg(a, i, &v, sizeof v);
  return v;
}

static kiln_status run_fill(const kiln_packed_args *a) {
  unsigned char *p = addr(arg_u64(a, 0));
  uint64_t start = arg_u64(a, 1), end = arg_u64(a, 2);
  fill_bytes(p + start, (size_t)(end - start), arg_u64(a, 3), 8);
  return KILN_OK;
}

static kiln_status run_axpy(const kiln_packed_args *a) {
  float *y = addr(arg_u64(a, 0));
  const float *x = addr(arg_u64(a, 1));
  float alpha;
  arg(a, 2, &alpha, sizeof alpha);
  uint32_t n = arg_u32(a, 3);
  for (uint32_t i = 0; i < n; i++) y[i] = alpha * x[i] + y[i];
  return KILN_OK;
}

/* kiln_reduce_sum_f32 (y NULL) and kiln_dot_f32, visiting elements in the
 * order docs/kernels.md gives each block; the last block's sum of the
 * blocks' sums goes to *result. The slots and the ticket counter must be 0
 * before and after, as the kernels leave them. */
static kiln_status run_reduce(const kiln_launch_config *c, uint32_t *slots,
                              const float *x, const float *y, float *result,
                              uint32_t *tickets, uint32_t n) {
  uint32_t b = c->block.x, g = c->grid.x;
  if (b < 32 || b > 1024 || (b & (b - 1)) || c->block.y != 1 ||
      c->block.z != 1 || c->grid.y != 1 || c->grid.z != 1)
    return kiln_set_error(KILN_ERROR_LAUNCH_FAILED,
                          "fake: reductions need a 1-D launch with a "
                          "power-of-two block of 32..1024, got %u",
                          b);
  if (*tickets != 0)
    return kiln_set_error(KILN_ERROR_LAUNCH_FAILED,
                          "fake: a reduction's ticket counter is %u, not 0",
                          *tickets);
  for (uint32_t blk = 0; blk < g; blk++)
    if (slots[blk] != 0)
      return kiln_set_error(KILN_ERROR_LAUNCH_FAILED,
                            "fake: a reduction's slot %u is 0x%x, not 0", blk,
                            slots[blk]);
  float total = 0.0f;
  for (uint64_t blk = 0; blk < g; blk++) {
    float sum = 0.0f;
    for (uint64_t t = 0; t < b; t++)
      for (uint64_t i = blk * b + t; i < n; i += (uint64_t)g * b)
        sum += y ? x[i] * y[i] : x[i];
    total += sum;
  }
  *result = total;
  return KILN_OK;
}

/* kiln_sgemm_f32(c, a, b, m, n, k, lda, ldb, ldc, alpha, beta), row-major;
 * beta == 0 does not read C. */
static kiln_status run_sgemm(const kiln_packed_args *p) {
  float *c = addr(arg_u64(p, 0));
  const float *a = addr(arg_u64(p, 1)), *b = addr(arg_u64(p, 2));
  uint32_t m = arg_u32(p, 3), n = arg_u32(p, 4), k = arg_u32(p, 5);
  uint32_t lda = arg_u32(p, 6), ldb = arg_u32(p, 7), ldc = arg_u32(p, 8);
  float alpha, beta;
  arg(p, 9, &alpha, sizeof alpha);
  arg(p, 10, &beta, sizeof beta);
  for (uint64_t i = 0; i < m; i++)
    for (uint64_t j = 0; j < n; j++) {
      float sum = 0.0f;
      for (uint64_t l = 0; l < k; l++) sum += a[i * lda + l] * b[l * ldb + j];
      float *out = &c[i * ldc + j];
      *out = beta == 0.0f ? alpha * sum : alpha * sum + beta * *out;
    }
  return KILN_OK;
}

static kiln_status run_builtin(const char *name, const kiln_launch_config *c,
                               const kiln_packed_args *a) {
  if (strcmp(name, "kiln_fill") == 0) return run_fill(a);
  if (strcmp(name, "kiln_axpy_f32") == 0) return run_axpy(a);
  /* Every SGEMM kernel computes the same product, in its own tiles. */
  if (strncmp(name, "kiln_sgemm_f32", 14) == 0) return run_sgemm(a);
  if (strcmp(name, "kiln_reduce_sum_f32") == 0)
    return run_reduce(c, addr(arg_u64(a, 0)), addr(arg_u64(a, 1)), NULL,
                      addr(arg_u64(a, 2)), addr(arg_u64(a, 3)),
                      arg_u32(a, 4));
  if (strcmp(name, "kiln_dot_f32") == 0)
    return run_reduce(c, addr(arg_u64(a, 0)), addr(arg_u64(a, 1)),
                      addr(arg_u64(a, 2)), addr(arg_u64(a, 3)),
                      addr(arg_u64(a, 4)), arg_u32(a, 5));
  return KILN_OK;
}

static kiln_status launch(kiln_stream *s, kiln_kernel *k,
                          const kiln_launch_config *config,
                          const kiln_packed_args *args) {
  fake_backend *fb = fake_of_object(s);
  kiln_status st = enter(fb, FAKE_OP_LAUNCH);
  if (st != KILN_OK) return st;
  if (s->building) {
    fake_node n = {.op = KILN_GRAPH_LAUNCH,
                   .cmd = SIZE_MAX,
                   .kernel = k,
                   .config = *config,
                   .packed = *args};
    return fake_graph_add(s, &n);
  }
  fake_launch *l = &fb->launches[fb->launch_count % FAKE_LAUNCH_LOG];
  fb->launch_count++;
  kiln_strlcpy(l->kernel, k->name, sizeof l->kernel);
  l->kernel_arg_bytes = k->arg_bytes;
  l->config = *config;
  l->args = *args;
  fake_cmd c = {.kind = FAKE_CMD_LAUNCH, .config = *config, .args = *args};
  kiln_strlcpy(c.kernel, k->name, sizeof c.kernel);
  return fake_submit(s, &c, false);
}

kiln_status fake_run(const fake_cmd *c) {
  switch (c->kind) {
  case FAKE_CMD_MOVE: memmove(c->dst, c->src, c->size); break;
  case FAKE_CMD_FILL:
    fill_bytes(c->dst, c->size, c->pattern, c->pattern_size);
    break;
  case FAKE_CMD_LAUNCH: return run_builtin(c->kernel, &c->config, &c->args);
  case FAKE_CMD_RECORD: c->event->ns = now_ns(); break;
  case FAKE_CMD_WAIT: break;
  }
  return KILN_OK;
}

/* ---- Streams and events -------------------------------------------------- */

static kiln_status stream_init(kiln_stream *s) {
  fake_backend *fb = fake_of_object(s);
  kiln_status st = enter(fb, FAKE_OP_STREAM_INIT);
  if (st != KILN_OK) return st;
  ((fake_stream *)s)->tag = FAKE_TAG;
  fb->live[KILN_OBJECT_STREAM]++;
  return KILN_OK;
}

static void stream_deinit(kiln_stream *s) {
  fake_stream *fs = (fake_stream *)s;
  fake_flush(s->base.context);
  if (fs->tag == FAKE_TAG) fake_of_object(s)->live[KILN_OBJECT_STREAM]--;
  fs->tag = 0;
}

static kiln_status stream_synchronize(kiln_stream *s, uint64_t timeout_ns) {
  return wait_for_work(s->base.context, FAKE_OP_STREAM_SYNCHRONIZE,
                       timeout_ns);
}

static kiln_status event_init(kiln_event *e) {
  fake_backend *fb = fake_of_object(e);
  kiln_status st = enter(fb, FAKE_OP_EVENT_INIT);
  if (st != KILN_OK) return st;
  ((fake_event *)e)->tag = FAKE_TAG;
  fb->live[KILN_OBJECT_EVENT]++;
  return KILN_OK;
}

static void event_deinit(kiln_event *e) {
  fake_event *fe = (fake_event *)e;
  fake_flush(e->base.context);
  if (fe->tag == FAKE_TAG) fake_of_object(e)->live[KILN_OBJECT_EVENT]--;
  fe->tag = 0;
}

/* A record or a wait: on the building stream a node of the graph, else a
 * command of the stream. */
static kiln_status event_cmd(kiln_stream *s, kiln_event *e, fake_op op) {
  kiln_status st = enter(fake_of_object(s), op);
  if (st != KILN_OK) return st;
  bool record = op == FAKE_OP_EVENT_RECORD;
  if (s->building) {
    fake_node n = {.op = record ? KILN_GRAPH_RECORD : KILN_GRAPH_WAIT,
                   .cmd = SIZE_MAX,
                   .event = e};
    return fake_graph_add(s, &n);
  }
  fake_cmd c = {.kind = record ? FAKE_CMD_RECORD : FAKE_CMD_WAIT,
                .event = (fake_event *)e};
  return fake_submit(s, &c, false);
}

static kiln_status event_record(kiln_event *e, kiln_stream *s) {
  return event_cmd(s, e, FAKE_OP_EVENT_RECORD);
}

static kiln_status stream_wait_event(kiln_stream *s, kiln_event *e) {
  return event_cmd(s, e, FAKE_OP_STREAM_WAIT_EVENT);
}

static kiln_status event_synchronize(kiln_event *e, uint64_t timeout_ns) {
  return wait_for_work(e->base.context, FAKE_OP_EVENT_SYNCHRONIZE,
                       timeout_ns);
}

/* A host wait: under KILN_DEBUG=reorder what is held runs first, so the
 * answer is that of a device that has done the work. */
static kiln_status event_query(kiln_event *e) {
  fake_backend *fb = fake_of_object(e);
  kiln_status st = enter(fb, FAKE_OP_EVENT_QUERY);
  if (st == KILN_OK) st = fake_flush(e->base.context);
  if (st == KILN_OK && (fb->events_pending || atomic_load(&fb->hung)))
    return KILN_ERROR_NOT_READY;
  return st;
}

static kiln_status event_elapsed_ms(kiln_event *start, kiln_event *end,
                                    float *out_ms) {
  kiln_status st = enter(fake_of_object(start), FAKE_OP_EVENT_ELAPSED);
  if (st != KILN_OK) return st;
  /* As a device answers for a record it has not reached. */
  if (fake_event_pending(start) || fake_event_pending(end))
    return KILN_ERROR_NOT_READY;
  uint64_t a = ((fake_event *)start)->ns, b = ((fake_event *)end)->ns;
  /* Signed, as kiln.h says: negative when the end was recorded first. */
  *out_ms = (float)((double)(int64_t)(b - a) / 1e6);
  return KILN_OK;
}

/* ---- Set-up -------------------------------------------------------------- */

/* The fake's abilities kept in this file (core/backend.h, "The ops
 * table"); tests switch one off by clearing its pointer in fb->ops. */
static const kiln_host_buffer_ops host_buffers = {
    .host_buffer_size = sizeof(fake_host_buffer),
    .host_buffer_init = host_buffer_init,
    .host_buffer_deinit = host_buffer_deinit,
};

static const kiln_async_transfer_ops async_transfers = {
    .buffer_write_async = buffer_write_async,
    .buffer_read_async = buffer_read_async,
};

static const kiln_fill_ops fills = {
    .fill_sizes = 1 | 2 | 4 | 8,
    .buffer_fill = buffer_fill,
};

static const kiln_event_wait_ops event_waits = {
    .stream_wait_event = stream_wait_event,
};

static const kiln_timing_ops timing = {
    .event_elapsed_ms = event_elapsed_ms,
};

void fake_set_devices(fake_backend *fb, size_t count,
                      const kiln_device_type *types) {
  fb->device_count = count;
  for (size_t i = 0; i < count && i < FAKE_MAX_DEVICES; i++) {
    kiln_device_properties *p = &fb->devices[i];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "fake %s %s %zu",
             kiln_backend_name(fb->ops.kind), kiln_device_type_name(types[i]),
             i);
    kiln_strlcpy(p->vendor, "kiln tests", sizeof p->vendor);
    p->type = types[i];
    kiln_strlcpy(p->architecture, "fake", sizeof p->architecture);
    p->memory_bytes = (uint64_t)1 << 30;
    p->compute_units = 4;
    p->max_threads_per_block = 1024;
    p->max_block_size[0] = 1024;
    p->max_block_size[1] = 1024;
    p->max_block_size[2] = 64;
    p->max_grid_size[0] = 0x7fffffffu;
    p->max_grid_size[1] = 65535;
    p->max_grid_size[2] = 65535;
    p->max_shared_memory_per_block = 48 * 1024;
    p->max_shared_memory_per_block_optin = 96 * 1024;
    p->subgroup_size = 32;
    p->max_kernel_argument_bytes = 256;
    kiln_strlcpy(p->api_version, "1.0", sizeof p->api_version);
    kiln_strlcpy(p->driver_version, "fake", sizeof p->driver_version);
    p->uuid[0] = (uint8_t)fb->ops.kind;
    p->uuid[1] = (uint8_t)i;
  }
}

void fake_set_unavailable(fake_backend *fb, const char *reason) {
  fb->available = false;
  kiln_strlcpy(fb->reason, reason, sizeof fb->reason);
}

void fake_init(fake_backend *fb, kiln_backend kind) {
  memset(fb, 0, sizeof *fb);
  kiln_strlcpy(fb->name, kiln_backend_name(kind), sizeof fb->name);
  fb->available = true;
  kiln_backend_ops *o = &fb->ops;
  o->kind = kind;
  o->name = fb->name;
  switch (kind) {
  case KILN_BACKEND_CUDA:
    o->probe = probe_cuda;
    o->device_count = device_count_cuda;
    o->device_properties = properties_cuda;
    break;
  case KILN_BACKEND_HIP:
    o->probe = probe_hip;
    o->device_count = device_count_hip;
    o->device_properties = properties_hip;
    break;
  default:
    o->probe = probe_vulkan;
    o->device_count = device_count_vulkan;
    o->device_properties = properties_vulkan;
    break;
  }
  o->context_size = sizeof(fake_context);
  o->buffer_size = sizeof(fake_buffer);
  o->module_size = sizeof(fake_module);
  o->kernel_size = sizeof(fake_kernel);
  o->stream_size = sizeof(fake_stream);
  o->event_size = sizeof(fake_event);
  o->context_init = context_init;
  o->context_deinit = context_deinit;
  o->context_synchronize = context_synchronize;
  o->buffer_init = buffer_init;
  o->buffer_deinit = buffer_deinit;
  o->buffer_write = buffer_write;
  o->buffer_read = buffer_read;
  o->buffer_copy = buffer_copy;
  o->image_formats = 1u << KILN_IMAGE_SPIRV;
  o->module_init = module_init;
  o->module_deinit = module_deinit;
  o->kernel_init = kernel_init;
  o->kernel_deinit = kernel_deinit;
  o->launch = launch;
  o->stream_init = stream_init;
  o->stream_deinit = stream_deinit;
  o->stream_synchronize = stream_synchronize;
  o->event_init = event_init;
  o->event_deinit = event_deinit;
  o->event_record = event_record;
  o->event_synchronize = event_synchronize;
  o->event_query = event_query;
  o->host_buffers = &host_buffers;
  o->async_transfers = &async_transfers;
  o->fills = &fills;
  o->event_waits = &event_waits;
  o->timing = &timing;
  fake_graph_ops(o);
  fake_interop_ops(o);
  o->builtin_images = builtin_images;
  fake_compiler_enable(fb);
  kiln_device_type discrete = KILN_DEVICE_TYPE_DISCRETE_GPU;
  fake_set_devices(fb, 1, &discrete);
}

fake_backend *fake_installed(kiln_backend kind) {
  return kind > KILN_BACKEND_AUTO && kind < KILN_BACKEND_COUNT ? installed[kind]
                                                              : NULL;
}

void fake_install(fake_backend *const *fakes, size_t count) {
  const kiln_backend_ops *ops[KILN_BACKEND_COUNT];
  memset(installed, 0, sizeof installed);
  for (size_t i = 0; i < count && i < KILN_BACKEND_COUNT; i++) {
    installed[fakes[i]->ops.kind] = fakes[i];
    ops[i] = &fakes[i]->ops;
  }
  kiln_registry_override(ops, count < KILN_BACKEND_COUNT ? count
                                                         : KILN_BACKEND_COUNT);
}

const fake_launch *fake_launch_back(const fake_backend *fb, size_t n) {
  if (n >= fb->launch_count || n >= FAKE_LAUNCH_LOG) return NULL;
  return &fb->launches[(fb->launch_count - 1 - n) % FAKE_LAUNCH_LOG];
}

kiln_module_image fake_image(const char *text) {
  kiln_module_image img;
  img.format = KILN_IMAGE_SPIRV;
  img.data = text;
  img.size = strlen(text);
  return img;
}

long fake_live_objects(const fake_backend *fb) {
  long n = 0;
  for (size_t i = 0; i <= KILN_OBJECT_EVENT; i++) n += fb->live[i];
  return n;
}

int fake_fixture_setup(void **state) {
  return fake_fixture_setup_with(state, NULL);
}

int fake_fixture_setup_with(void **state, void (*configure)(fake_backend *)) {
  fake_fixture *f = calloc(1, sizeof *f);
  if (!f) return -1;
  fake_init(&f->fb, KILN_BACKEND_VULKAN);
  if (configure) configure(&f->fb);
  fake_backend *list[] = {&f->fb};
  fake_install(list, 1);
  kiln_context_options o = {KILN_BACKEND_VULKAN, 0, KILN_SYNC_DEFAULT};
  if (kiln_context_create(&o, &f->ctx) != KILN_OK) {
    print_error("fixture: kiln_context_create failed: %s\n", kiln_last_error());
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

int fake_fixture_teardown(void **state) {
  fake_fixture *f = *state;
  int rc = 0;
  kiln_status st = kiln_context_destroy(f->ctx);
  if (st != KILN_OK) {
    print_error("fixture: kiln_context_destroy returned %s: %s\n",
                kiln_status_name(st), kiln_last_error());
    rc = -1;
  }
  if (fake_live_objects(&f->fb) != 0) {
    print_error("fixture: the fake backend still holds %ld objects after "
                "the context was destroyed\n",
                fake_live_objects(&f->fb));
    rc = -1;
  }
  free(f);
  return rc;
}
