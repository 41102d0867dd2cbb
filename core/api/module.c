/* Modules (a set of images, one or more per backend) and their kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

static bool known_format(kiln_image_format f) {
  return f >= KILN_IMAGE_SPIRV && f <= KILN_IMAGE_HIP_CODE_OBJECT;
}

static const char *loadable_formats(const kiln_backend_ops *ops, char *buf,
                                    size_t size) {
  buf[0] = '\0';
  for (int f = KILN_IMAGE_SPIRV; f <= KILN_IMAGE_HIP_CODE_OBJECT; f++) {
    if (!(ops->image_formats & (1u << f))) continue;
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
             kiln_image_format_name((kiln_image_format)f));
  }
  return buf;
}

kiln_status kiln_module_create_checked(kiln_context *ctx,
                                       const kiln_module_image *images,
                                       const bool *checked, size_t count,
                                       bool internal, kiln_module **out) {
  static const char fn[] = "kiln_module_create";
  const kiln_backend_ops *ops = ctx->ops;
  kiln_module_image *mine = malloc(count * sizeof *mine);
  bool *mine_checked = checked ? malloc(count * sizeof *mine_checked) : NULL;
  if (!mine || (checked && !mine_checked)) {
    free(mine);
    free(mine_checked);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory", fn);
  }
  size_t n = 0;
  for (size_t i = 0; i < count; i++)
    if (ops->image_formats & (1u << images[i].format)) {
      if (mine_checked) mine_checked[n] = checked[i];
      mine[n++] = images[i];
    }
  kiln_status st = KILN_OK;
  kiln_module *m = NULL;
  if (n == 0) {
    char want[128];
    st = kiln_set_error(KILN_ERROR_NO_IMAGE,
                        "%s: none of the %zu image%s is for the %s backend, "
                        "which loads %s",
                        fn, count, count == 1 ? "" : "s", ops->name,
                        loadable_formats(ops, want, sizeof want));
  } else if (!(m = kiln_object_alloc(ctx, KILN_OBJECT_MODULE,
                                     ops->module_size, internal))) {
    st = KILN_ERROR_OUT_OF_HOST_MEMORY;
  } else {
    m->checked = mine_checked;
    st = kiln_context_result(ctx,
                             kiln_error_in(fn, ops->module_init(m, mine, n)));
    m->checked = NULL;
    if (st != KILN_OK) kiln_object_free(m);
  }
  free(mine);
  free(mine_checked);
  if (st != KILN_OK) return st;
  if (m->prints) atomic_fetch_add(&ctx->printing_modules, 1);
  *out = m;
  return KILN_OK;
}

kiln_status kiln_module_create(kiln_context *ctx,
                               const kiln_module_image *images,
                               size_t image_count, kiln_module **out_module) {
  static const char fn[] = "kiln_module_create";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!out_module)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_module is NULL",
                          fn);
  if (!images || image_count == 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: no images given (images is %s, image_count is "
                          "%zu)",
                          fn, images ? "set" : "NULL", image_count);
  for (size_t i = 0; i < image_count; i++) {
    if (!known_format(images[i].format))
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: image %zu has unknown format %d", fn, i,
                            (int)images[i].format);
    if (!images[i].data || images[i].size == 0)
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: image %zu (%s) is empty", fn, i,
                            kiln_image_format_name(images[i].format));
  }
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  return kiln_module_create_checked(ctx, images, NULL, image_count, false,
                                    out_module);
}

void kiln_module_release(kiln_module *m) {
  const kiln_backend_ops *ops = m->base.context->ops;
  kiln_module_release_globals(m);
  for (kiln_kernel *k = m->kernels, *next; k; k = next) {
    next = k->next;
    ops->kernel_deinit(k);
    free(k->params);
    free(k->name);
    kiln_object_free(k);
  }
  ops->module_deinit(m);
  if (m->prints) atomic_fetch_sub(&m->base.context->printing_modules, 1);
  free(m->build_log);
  kiln_name_pairs_free(m->aliases, m->alias_count);
  kiln_object_free(m);
}

kiln_status kiln_module_destroy(kiln_module *m) {
  static const char fn[] = "kiln_module_destroy";
  if (!m) return KILN_OK;
  kiln_status st = kiln_object_check(m, KILN_OBJECT_MODULE, fn, "module");
  if (st != KILN_OK) return st;
  kiln_context *ctx = m->base.context;
  if (m == ctx->builtin_module)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: the built-in module belongs to its context "
                          "and is released with it",
                          fn);
  if ((st = kiln_check_not_held(m, fn, "module")) != KILN_OK) return st;
  /* Queued launches may still run the module's code. */
  if (!atomic_load(&ctx->lost) &&
      (st = kiln_context_wait(ctx, fn,
                              "the module was not destroyed: destroy it "
                              "again once its work is done, or destroy the "
                              "context")) == KILN_ERROR_TIMEOUT)
    return st;
  kiln_module_release(m);
  return st;
}

/* The lowered name of a name expression the module was compiled with,
 * else `name` itself. */
static const char *symbol_of(const kiln_module *m, const char *name) {
  for (size_t i = 0; i < m->alias_count; i++)
    if (strcmp(m->aliases[i].expression, name) == 0)
      return m->aliases[i].lowered;
  return name;
}

/* A kernel that was not found: the message names the module's name
 * expressions too, where it has any. */
static kiln_status not_found(const kiln_module *m, kiln_status st) {
  if (st != KILN_ERROR_NOT_FOUND || !m->alias_count) return st;
  char names[512] = "";
  for (size_t i = 0; i < m->alias_count; i++) {
    size_t used = strlen(names);
    if (snprintf(names + used, sizeof names - used, "%s\"%s\"",
                 i ? ", " : "", m->aliases[i].expression) >=
        (int)(sizeof names - used)) {
      kiln_strlcpy(names + sizeof names - 4, "...", 4);
      break;
    }
  }
  char said[1024];
  kiln_strlcpy(said, kiln_last_error(), sizeof said);
  return kiln_set_error(st, "%s; the module was compiled with the name "
                            "expressions %s",
                        said, names);
}

kiln_status kiln_module_get_kernel(kiln_module *m, const char *name,
                                   kiln_kernel **out_kernel) {
  static const char fn[] = "kiln_module_get_kernel";
  kiln_status st = kiln_object_check(m, KILN_OBJECT_MODULE, fn, "module");
  if (st != KILN_OK) return st;
  if (!name || !name[0] || !out_kernel)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: %s", fn,
                          !out_kernel ? "out_kernel is NULL"
                                      : "the kernel name is NULL or empty");
  kiln_context *ctx = m->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;

  name = symbol_of(m, name);
  pthread_mutex_lock(&ctx->lock);
  for (kiln_kernel *k = m->kernels; k; k = k->next) {
    if (strcmp(k->name, name) == 0) {
      pthread_mutex_unlock(&ctx->lock);
      *out_kernel = k;
      return KILN_OK;
    }
  }
  kiln_kernel *k =
      kiln_object_alloc(ctx, KILN_OBJECT_KERNEL, ctx->ops->kernel_size, false);
  char *copy = k ? strdup(name) : NULL;
  if (!copy) {
    pthread_mutex_unlock(&ctx->lock);
    if (k) kiln_object_free(k);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory", fn);
  }
  k->module = m;
  k->name = copy;
  k->arg_bytes = KILN_ARG_BYTES_UNKNOWN;
  k->param_count = KILN_PARAMS_UNKNOWN;
  st = kiln_context_result(
      ctx, not_found(m, kiln_error_in(fn, ctx->ops->kernel_init(k))));
  if (st != KILN_OK) {
    pthread_mutex_unlock(&ctx->lock);
    free(k->params);
    free(copy);
    kiln_object_free(k);
    return st;
  }
  k->next = m->kernels;
  m->kernels = k;
  pthread_mutex_unlock(&ctx->lock);
  *out_kernel = k;
  return KILN_OK;
}

const char *kiln_kernel_name(const kiln_kernel *k) {
  if (kiln_object_check(k, KILN_OBJECT_KERNEL, "kiln_kernel_name", "kernel") !=
      KILN_OK)
    return "";
  return k->name;
}

kiln_status kiln_module_get_build_info_sized(const kiln_module *m,
                                             size_t info_size,
                                             kiln_module_build_info *out_info) {
  static const char fn[] = "kiln_module_get_build_info";
  kiln_status st = kiln_object_check(m, KILN_OBJECT_MODULE, fn, "module");
  if (st == KILN_OK)
    st = kiln_struct_out_check(fn, "out_info", out_info, info_size,
                               KILN_MODULE_BUILD_INFO_0_1);
  if (st != KILN_OK) return st;
  const kiln_module_build_info info = {
      .source_count = m->source_count,
      .cache_hits = m->cache_hits,
      .compile_ms = m->compile_ms,
      .log = m->build_log ? m->build_log : "",
  };
  kiln_struct_out(out_info, info_size, &info, sizeof info);
  return KILN_OK;
}

kiln_status kiln_kernel_get_attributes_sized(kiln_kernel *k,
                                             size_t attributes_size,
                                             kiln_kernel_attributes *out) {
  static const char fn[] = "kiln_kernel_get_attributes";
  kiln_status st = kiln_object_check(k, KILN_OBJECT_KERNEL, fn, "kernel");
  if (st == KILN_OK)
    st = kiln_struct_out_check(fn, "out_attributes", out, attributes_size,
                               sizeof(kiln_kernel_attributes));
  if (st != KILN_OK) return st;
  const kiln_backend_ops *ops = k->base.context->ops;
  if (!ops->kernel_info)
    return kiln_unsupported(ops, fn, "report of a kernel's needs", NULL);
  kiln_kernel_attributes a = {KILN_ATTRIBUTE_UNKNOWN, KILN_ATTRIBUTE_UNKNOWN,
                              KILN_ATTRIBUTE_UNKNOWN, KILN_ATTRIBUTE_UNKNOWN,
                              {0, 0, 0}};
  st = kiln_context_result(k->base.context,
                           ops->kernel_info->kernel_attributes(k, &a));
  if (st != KILN_OK) return kiln_error_in(fn, st);
  kiln_struct_out(out, attributes_size, &a, sizeof a);
  return KILN_OK;
}

kiln_status kiln_kernel_suggest_block_size(kiln_kernel *k,
                                           size_t dynamic_shared_bytes,
                                           uint32_t *out_block,
                                           uint32_t *out_min_grid) {
  static const char fn[] = "kiln_kernel_suggest_block_size";
  kiln_status st = kiln_object_check(k, KILN_OBJECT_KERNEL, fn, "kernel");
  if (st != KILN_OK) return st;
  if (!out_block)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: out_block_threads is NULL", fn);
  kiln_context *ctx = k->base.context;
  const size_t most = ctx->properties.max_shared_memory_per_block_optin;
  if (dynamic_shared_bytes > most)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: %zu bytes of dynamic shared memory, more than "
                          "one block may have on %s (%zu)",
                          fn, dynamic_shared_bytes, ctx->properties.name, most);
  const kiln_backend_ops *ops = ctx->ops;
  if (!ops->kernel_info)
    return kiln_unsupported(ops, fn, "occupancy calculator", NULL);
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  uint32_t block = 0, grid = 0;
  st = kiln_context_result(ctx, ops->kernel_info->suggest_block(
                                    k, dynamic_shared_bytes, &block, &grid));
  if (st != KILN_OK) return kiln_error_in(fn, st);
  *out_block = block;
  if (out_min_grid) *out_min_grid = grid;
  return KILN_OK;
}
