/* The SGEMM reference: cuBLAS, loaded at run time on the raw comparator's
 * context and stream. Declares the handful of cuBLAS types it needs rather
 * than including cublas_v2.h, so kiln-bench builds without the toolkit. */
#include "cuda_raw.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus;
typedef struct cublasContext *cublasHandle;

#define CUBLAS_OP_N 0
#define CUBLAS_DEFAULT_MATH 0
/* cudaDataType and cublasComputeType_t values, and CUBLAS_GEMM_DEFAULT. */
#define CUDA_R_16F 2
#define CUDA_R_32F 0
#define CUBLAS_COMPUTE_32F 68
#define CUBLAS_GEMM_DEFAULT (-1)

struct cublas {
  void *library;
  cublasHandle handle;
  cublasStatus (*Create)(cublasHandle *);
  cublasStatus (*Destroy)(cublasHandle);
  cublasStatus (*SetStream)(cublasHandle, void *);
  cublasStatus (*SetMathMode)(cublasHandle, int);
  cublasStatus (*GetVersion)(cublasHandle, int *);
  const char *(*GetStatusName)(cublasStatus); /* optional */
  cublasStatus (*Sgemm)(cublasHandle, int, int, int, int, int, const float *,
                        const float *, int, const float *, int, const float *,
                        float *, int);
  /* Optional: the half-precision comparator. */
  cublasStatus (*GemmEx)(cublasHandle, int, int, int, int, int, const void *,
                         const void *, int, int, const void *, int, int,
                         const void *, void *, int, int, int, int);
  char description[320];
};

static const char *const cublas_names[] = {
    "libcublas.so.13",
    "libcublas.so.12",
    "libcublas.so",
    "/usr/local/cuda/lib64/libcublas.so.13",
    "/usr/local/cuda/lib64/libcublas.so.12",
    "/usr/local/cuda/lib64/libcublas.so",
};

static const char *status_name(const cublas *c, cublasStatus status) {
  const char *name = c->GetStatusName ? c->GetStatusName(status) : NULL;
  return name ? name : "cublasStatus_t";
}

/* Resolves `name` into the function-pointer slot `slot` (memcpy: ISO C
 * has no conversion from void * to a function pointer). */
static int resolve(cublas *c, const char *name, void *slot, char *why,
                   size_t why_size) {
  void *symbol = dlsym(c->library, name);
  if (symbol == NULL) {
    snprintf(why, why_size, "cuBLAS has no %s", name);
    return -1;
  }
  memcpy(slot, &symbol, sizeof symbol);
  return 0;
}

static int open_library(cublas *c, const char **out_path, char *why,
                        size_t why_size) {
  const char *chosen = getenv("KILN_BENCH_CUBLAS");
  if (chosen != NULL && chosen[0] != '\0') {
    c->library = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
    if (c->library == NULL) {
      snprintf(why, why_size, "KILN_BENCH_CUBLAS=%s cannot be loaded: %s",
               chosen, dlerror());
      return -1;
    }
    *out_path = chosen;
    return 0;
  }
  for (size_t i = 0; i < sizeof cublas_names / sizeof cublas_names[0]; i++) {
    c->library = dlopen(cublas_names[i], RTLD_NOW | RTLD_LOCAL);
    if (c->library != NULL) {
      *out_path = cublas_names[i];
      return 0;
    }
  }
  snprintf(why, why_size,
           "no cuBLAS found (libcublas.so.13, .so.12, libcublas.so, also "
           "in /usr/local/cuda/lib64; KILN_BENCH_CUBLAS names one)");
  return -1;
}

cublas *cublas_open(cuda_raw *r, char *why, size_t why_size) {
  cublas *c = calloc(1, sizeof *c);
  if (c == NULL) {
    snprintf(why, why_size, "out of host memory");
    return NULL;
  }
  const char *path = NULL;
  if (open_library(c, &path, why, why_size) != 0 ||
      resolve(c, "cublasCreate_v2", &c->Create, why, why_size) != 0 ||
      resolve(c, "cublasDestroy_v2", &c->Destroy, why, why_size) != 0 ||
      resolve(c, "cublasSetStream_v2", &c->SetStream, why, why_size) != 0 ||
      resolve(c, "cublasSetMathMode", &c->SetMathMode, why, why_size) != 0 ||
      resolve(c, "cublasGetVersion_v2", &c->GetVersion, why, why_size) != 0 ||
      resolve(c, "cublasSgemm_v2", &c->Sgemm, why, why_size) != 0)
    goto fail;
  if (resolve(c, "cublasGetStatusName", &c->GetStatusName, why, why_size))
    c->GetStatusName = NULL;
  if (resolve(c, "cublasGemmEx", &c->GemmEx, why, why_size))
    c->GemmEx = NULL;

  if (cuda_raw_enter(r) != 0) {
    snprintf(why, why_size, "cannot make the CUDA context current");
    goto fail;
  }
  cublasStatus status = c->Create(&c->handle);
  if (status == 0) status = c->SetStream(c->handle, cuda_raw_stream(r));
  if (status == 0) status = c->SetMathMode(c->handle, CUBLAS_DEFAULT_MATH);
  int version = 0;
  if (status == 0) status = c->GetVersion(c->handle, &version);
  cuda_raw_leave(r);
  if (status != 0) {
    snprintf(why, why_size, "%s: setting up a handle failed: %s (%d)", path,
             status_name(c, status), status);
    goto fail;
  }
  snprintf(c->description, sizeof c->description,
           "cuBLAS %d.%d.%d (%s), CUBLAS_DEFAULT_MATH", version / 10000,
           version / 100 % 100, version % 100, path);
  return c;
fail:
  cublas_close(c, r);
  return NULL;
}

void cublas_close(cublas *c, cuda_raw *r) {
  if (c == NULL) return;
  if (c->handle != NULL && cuda_raw_enter(r) == 0) {
    c->Destroy(c->handle);
    cuda_raw_leave(r);
  }
  /* cuBLAS stays loaded: it registers exit handlers of its own. */
  free(c);
}

const char *cublas_description(const cublas *c) { return c->description; }

int cublas_set_stream(cublas *c, cuda_raw *r, void *stream) {
  cublasStatus status =
      c->SetStream(c->handle, stream ? stream : cuda_raw_stream(r));
  if (status != 0) {
    fprintf(stderr, "kiln-bench: cublasSetStream_v2 failed: %s (%d)\n",
            status_name(c, status), status);
    return -1;
  }
  return 0;
}

int cublas_sgemm(cublas *c, unsigned m, unsigned n, unsigned k, raw_ptr a,
                 unsigned lda, raw_ptr b, unsigned ldb, raw_ptr cm,
                 unsigned ldc) {
  /* Row-major C = A B is column-major C^T = B^T A^T: the same memory with
   * the operands swapped, no transposition. */
  const float one = 1.0f, zero = 0.0f;
  cublasStatus status = c->Sgemm(
      c->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one,
      (const float *)(uintptr_t)b, (int)ldb, (const float *)(uintptr_t)a,
      (int)lda, &zero, (float *)(uintptr_t)cm, (int)ldc);
  if (status != 0) {
    fprintf(stderr, "kiln-bench: cublasSgemm_v2 failed: %s (%d)\n",
            status_name(c, status), status);
    return -1;
  }
  return 0;
}

bool cublas_has_hgemm(const cublas *c) { return c->GemmEx != NULL; }

int cublas_hgemm(cublas *c, unsigned m, unsigned n, unsigned k, raw_ptr a,
                 unsigned lda, raw_ptr b, unsigned ldb, raw_ptr cm,
                 unsigned ldc) {
  /* Row-major as in cublas_sgemm: the operands swapped. */
  const float one = 1.0f, zero = 0.0f;
  cublasStatus status = c->GemmEx(
      c->handle, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one,
      (const void *)(uintptr_t)b, CUDA_R_16F, (int)ldb,
      (const void *)(uintptr_t)a, CUDA_R_16F, (int)lda, &zero,
      (void *)(uintptr_t)cm, CUDA_R_32F, (int)ldc, CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  if (status != 0) {
    fprintf(stderr, "kiln-bench: cublasGemmEx failed: %s (%d)\n",
            status_name(c, status), status);
    return -1;
  }
  return 0;
}
