/* Module globals: a module's __device__ and __constant__ variables, found
 * by name through the backend (module_global, in backends/<name>/module.c)
 * and handed out as buffers over the module's memory, so that every buffer
 * call (transfers, copies, fills, kernel arguments) works on them in stream
 * order with the checks it already has. The module owns them: they are
 * internal objects, released with it, never freed as buffers. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

kiln_status kiln_module_get_global(kiln_module *m, const char *name,
                                   kiln_buffer **out_buffer) {
  static const char fn[] = "kiln_module_get_global";
  kiln_status st = kiln_object_check(m, KILN_OBJECT_MODULE, fn, "module");
  if (st != KILN_OK) return st;
  if (!name || !name[0] || !out_buffer)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: %s", fn,
                          !out_buffer ? "out_buffer is NULL"
                                      : "the variable's name is NULL or "
                                        "empty");
  kiln_context *ctx = m->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  if (!ctx->ops->globals)
    return kiln_unsupported(ctx->ops, fn, "global variables the host can reach",
                            "pass such values as kernel arguments (push "
                            "constants, up to max_kernel_argument_bytes) or "
                            "in a buffer whose address is an argument");

  pthread_mutex_lock(&ctx->lock);
  for (kiln_buffer *g = m->globals; g; g = g->next_global) {
    if (strcmp(g->global_name, name) == 0) {
      pthread_mutex_unlock(&ctx->lock);
      *out_buffer = g;
      return KILN_OK;
    }
  }
  uint64_t address = 0;
  size_t size = 0;
  st = kiln_context_result(
      ctx, ctx->ops->globals->module_global(m, name, &address, &size));
  if (st != KILN_OK) {
    pthread_mutex_unlock(&ctx->lock);
    return st;
  }
  kiln_buffer *g = kiln_object_alloc(ctx, KILN_OBJECT_BUFFER,
                                     ctx->ops->buffer_size, true);
  char *copy = g ? strdup(name) : NULL;
  if (!copy) {
    pthread_mutex_unlock(&ctx->lock);
    if (g) kiln_object_free(g);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory", fn);
  }
  g->size = size;
  g->device_address = address;
  g->module = m;
  g->global_name = copy;
  g->next_global = m->globals;
  m->globals = g;
  pthread_mutex_unlock(&ctx->lock);
  *out_buffer = g;
  return KILN_OK;
}

void kiln_module_release_globals(kiln_module *m) {
  for (kiln_buffer *g = m->globals, *next; g; g = next) {
    next = g->next_global;
    free(g->global_name);
    kiln_object_free(g);
  }
  m->globals = NULL;
}
