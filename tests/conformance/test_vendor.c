/* A vendor library on kiln's objects: cuBLAS SGEMM on kiln buffers, queued
 * on a kiln stream through the exported CUstream and CUdeviceptrs, between
 * kiln work before it (a copy that makes its input, a kiln SGEMM) and after
 * it (a kiln SGEMM that reads its output). Each side's order shows in the
 * numbers: cuBLAS running before the copy would read zeros, the later kiln
 * SGEMM running before cuBLAS would read zeros too. cuBLAS is loaded at run
 * time (KILN_CUBLAS_LIBRARY, else libcublas.so.13, .12, .11); the test
 * runs in the CUDA suite, and is skipped, saying why, where there is no
 * cuBLAS. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

typedef int cublas_status;
typedef struct cublas_context *cublas_handle;

typedef struct cublas_api {
  void *library;
  cublas_status (*create)(cublas_handle *);
  cublas_status (*destroy)(cublas_handle);
  cublas_status (*set_stream)(cublas_handle, void *);
  cublas_status (*sgemm)(cublas_handle, int, int, int, int, int, const float *,
                         const float *, int, const float *, int,
                         const float *, float *, int);
} cublas_api;

/* dlsym into a function-pointer slot (ISO C has no conversion from
 * void * to a function pointer). */
static bool resolve(void *library, const char *name, void *slot) {
  void *symbol = dlsym(library, name);
  if (!symbol) return false;
  memcpy(slot, &symbol, sizeof symbol);
  return true;
}

/* Opens cuBLAS, or says in `why` why not. */
static bool open_cublas(cublas_api *api, char *why, size_t why_size) {
  static const char *const names[] = {"libcublas.so.13", "libcublas.so.12",
                                      "libcublas.so.11", "libcublas.so"};
  const char *chosen = getenv("KILN_CUBLAS_LIBRARY");
  memset(api, 0, sizeof *api);
  if (chosen && *chosen) {
    api->library = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
  } else {
    for (size_t i = 0; !api->library && i < sizeof names / sizeof names[0];
         i++)
      api->library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  }
  if (!api->library) {
    snprintf(why, why_size,
             "no cuBLAS here (%s; KILN_CUBLAS_LIBRARY names one): %s",
             chosen && *chosen ? chosen : "libcublas.so.13, .12, .11",
             dlerror());
    return false;
  }
  if (!resolve(api->library, "cublasCreate_v2", &api->create) ||
      !resolve(api->library, "cublasDestroy_v2", &api->destroy) ||
      !resolve(api->library, "cublasSetStream_v2", &api->set_stream) ||
      !resolve(api->library, "cublasSgemm_v2", &api->sgemm)) {
    snprintf(why, why_size, "the cuBLAS found lacks a v2 entry point");
    dlclose(api->library);
    return false;
  }
  return true;
}

enum { M = 384, N = 320, K = 512 };

static void cublas_sgemm_on_kiln_buffers(void **state) {
  (void)state;
  cublas_api api;
  char why[512];
  if (!open_cublas(&api, why, sizeof why)) kiln_skip("%s", why);
  conf_rng r = conf_rng_for(__func__);
  float *a = conf_alloc(sizeof(float) * M * K);
  float *b = conf_alloc(sizeof(float) * K * N);
  float *eye = conf_alloc(sizeof(float) * N * N);
  float *want = conf_alloc(sizeof(float) * M * N);
  float *got = conf_alloc(sizeof(float) * M * N);
  for (size_t i = 0; i < (size_t)M * K; i++) a[i] = conf_uniform(&r, -1, 1);
  for (size_t i = 0; i < (size_t)K * N; i++) b[i] = conf_uniform(&r, -1, 1);
  memset(eye, 0, sizeof(float) * N * N);
  for (size_t i = 0; i < N; i++) eye[i * N + i] = 1.0f;

  kiln_stream *s;
  kiln_buffer *a0, *da, *db, *dc_kiln, *dc_blas, *di, *de;
  check_ok(kiln_stream_create(conf.ctx, &s));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * M * K, 0, &a0));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * M * K,
                              KILN_BUFFER_ZERO, &da));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * K * N, 0, &db));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * M * N, 0, &dc_kiln));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * M * N,
                              KILN_BUFFER_ZERO, &dc_blas));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * N * N, 0, &di));
  check_ok(kiln_buffer_create(conf.ctx, sizeof(float) * M * N, 0, &de));
  check_ok(kiln_buffer_write(s, a0, 0, a, sizeof(float) * M * K));
  check_ok(kiln_buffer_write(s, db, 0, b, sizeof(float) * K * N));
  check_ok(kiln_buffer_write(s, di, 0, eye, sizeof(float) * N * N));
  check_ok(kiln_stream_synchronize(s));

  kiln_native_stream ns;
  kiln_native_buffer na, nb, nc;
  check_ok(kiln_stream_get_native(s, &ns));
  check_ok(kiln_buffer_get_native(da, &na));
  check_ok(kiln_buffer_get_native(db, &nb));
  check_ok(kiln_buffer_get_native(dc_blas, &nc));
  cublas_handle h = NULL;
  assert_int_equal(api.create(&h), 0);
  assert_int_equal(api.set_stream(h, ns.stream), 0);

  /* Before: kiln makes cuBLAS's input, and its own product. */
  check_ok(kiln_buffer_copy(s, da, 0, a0, 0, sizeof(float) * M * K));
  check_ok(kiln_sgemm_f32(s, M, N, K, 1.0f, da, 0, K, db, 0, N, 0.0f, dc_kiln,
                          0, N));
  /* Row-major C = A B is column-major C^T = B^T A^T. */
  const float one = 1.0f, zero = 0.0f;
  const float *pa = (const float *)(uintptr_t)na.device_address;
  const float *pb = (const float *)(uintptr_t)nb.device_address;
  float *pc = (float *)(uintptr_t)nc.device_address;
  assert_int_equal(api.sgemm(h, 0, 0, N, M, K, &one, pb, N, pa, K, &zero, pc,
                             N),
                   0);
  /* After: kiln reads cuBLAS's output (E = C I is C exactly). */
  check_ok(kiln_sgemm_f32(s, M, N, N, 1.0f, dc_blas, 0, N, di, 0, N, 0.0f, de,
                          0, N));
  check_ok(kiln_buffer_read(s, dc_kiln, 0, want, sizeof(float) * M * N));
  check_ok(kiln_buffer_read(s, de, 0, got, sizeof(float) * M * N));
  assert_int_equal(api.destroy(h), 0);

  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < (size_t)M * N; i++) {
    /* Both sum K products of numbers in [-1, 1] in float; their orders
     * differ, so they may differ by a few ulps of the sum's size. */
    const double d = fabs((double)got[i] - (double)want[i]);
    const double bound = 1e-5 * K;
    if (d > worst) worst = d;
    if (!(d <= bound) && bad++ == 0) first = i;
  }
  print_message("cuBLAS SGEMM %dx%dx%d on kiln buffers, on a kiln stream "
                "between kiln work: largest difference from kiln's own "
                "SGEMM %.3g\n",
                M, N, K, worst);
  if (bad)
    fail_msg("%zu of %d elements differ from kiln's SGEMM, the first at "
             "(%zu, %zu): %g against %g (a read of zeros means cuBLAS or "
             "the kiln SGEMM after it ran out of order)",
             bad, M * N, first / N, first % N, (double)got[first],
             (double)want[first]);
  check_ok(kiln_buffer_destroy(a0));
  check_ok(kiln_buffer_destroy(da));
  check_ok(kiln_buffer_destroy(db));
  check_ok(kiln_buffer_destroy(dc_kiln));
  check_ok(kiln_buffer_destroy(dc_blas));
  check_ok(kiln_buffer_destroy(di));
  check_ok(kiln_buffer_destroy(de));
  check_ok(kiln_stream_destroy(s));
  free(a);
  free(b);
  free(eye);
  free(want);
  free(got);
  dlclose(api.library);
}

int conf_run_vendor_tests(void) {
  /* cuBLAS: the CUDA suite's only. */
  if (conf.backend != KILN_BACKEND_CUDA) return 0;
  const struct CMUnitTest tests[] = {
      CONF_TEST(cublas_sgemm_on_kiln_buffers),
  };
  return cmocka_run_group_tests_name("vendor", tests, NULL, NULL);
}
