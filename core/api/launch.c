/* Kernel launches: the public calls' checks, and a launch command for the
 * door (core/submit/submit.c); the argument ABI is core/submit/args.c's. */
#include <string.h>

#include "core/internal.h"

kiln_launch_config kiln_launch_config_1d(size_t n, uint32_t block_size) {
  kiln_launch_config c;
  memset(&c, 0, sizeof c);
  if (block_size == 0) block_size = 256;
  size_t blocks = n / block_size + (n % block_size != 0);
  if (blocks > 0x7fffffffu) blocks = 0x7fffffffu;
  c.grid.x = (uint32_t)blocks;
  c.grid.y = c.grid.z = 1;
  c.block.x = block_size;
  c.block.y = c.block.z = 1;
  return c;
}

static kiln_status launch(kiln_stream *stream, kiln_kernel *kernel,
                          const kiln_launch_config *config,
                          const kiln_arg *args, size_t arg_count,
                          bool numbered) {
  static const char fn[] = "kiln_launch";
  kiln_status st = kiln_object_check(kernel, KILN_OBJECT_KERNEL, fn, "kernel");
  if (st != KILN_OK) return st;
  kiln_context *ctx = kernel->base.context;
  if ((st = kiln_context_check_usable(ctx)) != KILN_OK) return st;
  kiln_stream *s;
  if ((st = kiln_stream_resolve(stream, ctx, fn, &s)) != KILN_OK) return st;
  kiln_packed_args packed;
  st = kiln_launch_pack(ctx, kernel, config, args, arg_count, &packed);
  if (st != KILN_OK) return st;
  const kiln_command c = {.kind = KILN_COMMAND_LAUNCH,
                          .fn = fn,
                          .kernel = kernel,
                          .config = *config,
                          .args = args,
                          .arg_count = arg_count,
                          .packed = &packed,
                          .numbered = numbered};
  return kiln_submit(s, &c);
}

kiln_status kiln_launch(kiln_stream *stream, kiln_kernel *kernel,
                        const kiln_launch_config *config, const kiln_arg *args,
                        size_t arg_count) {
  return launch(stream, kernel, config, args, arg_count, true);
}

kiln_status kiln_launch_helper(kiln_stream *stream, kiln_kernel *kernel,
                               const kiln_launch_config *config,
                               const kiln_arg *args, size_t arg_count) {
  return launch(stream, kernel, config, args, arg_count, false);
}
