/*
 * aot-app: y = a * x with a kernel compiled ahead of time and embedded by
 * kiln-embed, on the device the environment chooses (KILN_BACKEND,
 * KILN_DEVICE). The smallest program that builds against an installed kiln.
 *
 * Exit status: 0 when every element is right, 1 on any failure, 77 when the
 * chosen backend cannot run on this machine.
 */
#include <kiln/kiln.h>

#include <stdio.h>
#include <stdlib.h>

#include "app_images.h"

enum { N = 4096, EXIT_UNAVAILABLE = 77 };

#define CHECK(call)                                                       \
  do {                                                                    \
    kiln_status status_ = (call);                                         \
    if (status_ != KILN_OK) {                                             \
      fprintf(stderr, "aot-app: %s failed: %s: %s\n", #call,              \
              kiln_status_name(status_), kiln_last_error());              \
      if (status_ == KILN_ERROR_UNAVAILABLE) result = EXIT_UNAVAILABLE;   \
      goto out;                                                           \
    }                                                                     \
  } while (0)

int main(void) {
  static float x[N], y[N];
  const float a = 2.0f;
  int result = EXIT_FAILURE;
  kiln_context *ctx = NULL;
  kiln_module *module = NULL;
  kiln_buffer *x_buf = NULL, *y_buf = NULL;

  for (size_t i = 0; i < N; ++i) x[i] = (float)i - N / 2;

  CHECK(kiln_context_create(NULL, &ctx));
  CHECK(kiln_module_create(ctx, app_images, app_images_count, &module));
  kiln_kernel *kernel = NULL;
  CHECK(kiln_module_get_kernel(module, "scale", &kernel));
  CHECK(kiln_buffer_create(ctx, sizeof x, KILN_BUFFER_DEFAULT, &x_buf));
  CHECK(kiln_buffer_create(ctx, sizeof y, KILN_BUFFER_ZERO, &y_buf));
  CHECK(kiln_buffer_write(NULL, x_buf, 0, x, sizeof x));

  kiln_launch_config config = kiln_launch_config_1d(N, 64);
  const kiln_arg args[] = {kiln_arg_buffer(y_buf, 0), kiln_arg_buffer(x_buf, 0),
                           kiln_arg_f32(a), kiln_arg_u32(N)};
  CHECK(kiln_launch(NULL, kernel, &config, args, sizeof args / sizeof args[0]));
  CHECK(kiln_buffer_read(NULL, y_buf, 0, y, sizeof y));

  /* Doubling is exact in binary floating point: every element must match. */
  size_t wrong = 0;
  for (size_t i = 0; i < N; ++i) wrong += y[i] != a * x[i];
  printf("aot-app: kiln %s, backend %s: %s, %zu of %d elements wrong\n",
         kiln_version_string(), kiln_backend_name(kiln_context_backend(ctx)),
         wrong == 0 ? "PASS" : "FAIL", wrong, N);
  if (wrong == 0) result = EXIT_SUCCESS;

out:
  kiln_buffer_destroy(y_buf);
  kiln_buffer_destroy(x_buf);
  kiln_module_destroy(module);
  kiln_context_destroy(ctx);
  return result;
}
