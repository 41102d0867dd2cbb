/* kiln's own kernels (docs/kernels.md): the built-in modules, loaded on
 * first use, and the launch shapes of the helpers that run them. */
#include <string.h>

#include "core/internal.h"

/* The number of images in a list ended by an entry of format 0 (none for
 * NULL). */
static size_t image_count(const kiln_module_image *images) {
  size_t n = 0;
  while (images && images[n].format != 0) n++;
  return n;
}

static kiln_status builtin_module(kiln_context *ctx, kiln_module **out) {
  const kiln_backend_ops *ops = ctx->ops;
  pthread_mutex_lock(&ctx->lock);
  kiln_status st = KILN_OK;
  if (!ctx->builtin_module) {
    const size_t n = image_count(ops->builtin_images);
    if (n == 0)
      st = kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "this build of kiln has no built-in kernels for "
                          "the %s backend (its kernel compiler was missing "
                          "at build time; see the meson summary)",
                          ops->name);
    else
      st = kiln_module_create_checked(ctx, ops->builtin_images, NULL, n,
                                      true, &ctx->builtin_module);
  }
  if (st == KILN_OK) *out = ctx->builtin_module;
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

kiln_status kiln_builtin_matrix_kernel(kiln_context *ctx, const char *name,
                                       kiln_kernel **out_kernel) {
  const kiln_module_image *images = ctx->ops->builtin_matrix_images;
  const size_t n = image_count(images);
  if (n == 0) return KILN_ERROR_NOT_FOUND;
  pthread_mutex_lock(&ctx->lock);
  kiln_status st = KILN_OK;
  if (!ctx->builtin_matrix_module) {
    st = kiln_module_create_checked(ctx, images, NULL, n, true,
                                    &ctx->builtin_matrix_module);
    if (st != KILN_OK)
      kiln_log(KILN_LOG_INFO,
               "the %s device refuses the module of matrix kernels (%s)",
               ctx->ops->name, kiln_last_error());
  }
  if (st == KILN_OK)
    st = kiln_module_get_kernel(ctx->builtin_matrix_module, name, out_kernel);
  pthread_mutex_unlock(&ctx->lock);
  return st;
}

kiln_status kiln_context_builtin_module(kiln_context *ctx,
                                        kiln_module **out_module) {
  static const char fn[] = "kiln_context_builtin_module";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!out_module)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_module is NULL",
                          fn);
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  return builtin_module(ctx, out_module);
}

kiln_status kiln_builtin_kernel(kiln_context *ctx, const char *name,
                                kiln_kernel **out_kernel) {
  kiln_module *m;
  kiln_status st = builtin_module(ctx, &m);
  if (st != KILN_OK) return st;
  return kiln_module_get_kernel(m, name, out_kernel);
}

kiln_launch_config kiln_helper_config(size_t n, size_t per_block,
                                      uint32_t max_blocks) {
  kiln_launch_config c;
  memset(&c, 0, sizeof c);
  c.block.x = KILN_HELPER_BLOCK;
  c.block.y = c.block.z = 1;
  const size_t blocks = (n + per_block - 1) / per_block;
  c.grid.x = blocks == 0           ? 1
             : blocks > max_blocks ? max_blocks
                                   : (uint32_t)blocks;
  c.grid.y = c.grid.z = 1;
  return c;
}

kiln_launch_config kiln_copy_kernel_config(size_t size) {
  /* A thread per vec4 of the words, in blocks of KILN_HELPER_BLOCK. */
  return kiln_helper_config((size / 4 + 3) / 4, KILN_HELPER_BLOCK, 65535u);
}
