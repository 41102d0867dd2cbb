/*
 * The HIPRTC part of kiln's HIP-on-CUDA test shim (shim_rtc.c): the HIPRTC
 * entry points that libamdhip64 carries in ROCm 5 and that kiln's HIP
 * backend takes from the runtime when it finds no libhiprtc.so, with
 * ROCm's prototypes and values, and the NVRTC entry points they are built
 * on. Needs no vendor header: the shim's tests include it to call the shim,
 * and rtc_api_check.c holds the lists against hip/hiprtc.h and nvrtc.h
 * wherever those are installed.
 *
 * Defining SHIM_RTC_LISTS_ONLY first leaves out the HIPRTC types, for a
 * file that has them from hip/hiprtc.h.
 */
#ifndef KILN_TESTS_HIP_SHIM_RTC_H
#define KILN_TESTS_HIP_SHIM_RTC_H

#include <stddef.h>

/* hiprtcResult, numbered as since ROCm 5.0 (ROCm 5.5 added
 * HIPRTC_ERROR_LINKING = 100, which nothing here returns). */
#define SHIM_HIPRTC_RESULTS(X)                           \
  X(HIPRTC_SUCCESS, 0)                                   \
  X(HIPRTC_ERROR_OUT_OF_MEMORY, 1)                       \
  X(HIPRTC_ERROR_PROGRAM_CREATION_FAILURE, 2)            \
  X(HIPRTC_ERROR_INVALID_INPUT, 3)                       \
  X(HIPRTC_ERROR_INVALID_PROGRAM, 4)                     \
  X(HIPRTC_ERROR_INVALID_OPTION, 5)                      \
  X(HIPRTC_ERROR_COMPILATION, 6)                         \
  X(HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE, 7)           \
  X(HIPRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION, 8) \
  X(HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION, 9) \
  X(HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID, 10)          \
  X(HIPRTC_ERROR_INTERNAL_ERROR, 11)

/* X(return type, name, (parameters)), as ROCm 5 declares them. */
#define SHIM_HIPRTC_SYMBOLS(X)                                                \
  X(const char *, hiprtcGetErrorString, (hiprtcResult result))                \
  X(hiprtcResult, hiprtcVersion, (int *major, int *minor))                    \
  X(hiprtcResult, hiprtcCreateProgram,                                        \
    (hiprtcProgram *prog, const char *src, const char *name,                 \
     int numHeaders, const char **headers, const char **includeNames))        \
  X(hiprtcResult, hiprtcDestroyProgram, (hiprtcProgram *prog))               \
  X(hiprtcResult, hiprtcCompileProgram,                                       \
    (hiprtcProgram prog, int numOptions, const char **options))               \
  X(hiprtcResult, hiprtcGetProgramLogSize,                                    \
    (hiprtcProgram prog, size_t *logSizeRet))                                 \
  X(hiprtcResult, hiprtcGetProgramLog, (hiprtcProgram prog, char *log))       \
  X(hiprtcResult, hiprtcGetCodeSize, (hiprtcProgram prog, size_t *codeSizeRet)) \
  X(hiprtcResult, hiprtcGetCode, (hiprtcProgram prog, char *code))           \
  X(hiprtcResult, hiprtcAddNameExpression,                                    \
    (hiprtcProgram prog, const char *name_expression))                        \
  X(hiprtcResult, hiprtcGetLoweredName,                                       \
    (hiprtcProgram prog, const char *name_expression,                         \
     const char **lowered_name))

/* nvrtcResult up to the last code that HIPRTC shares (newer NVRTCs have
 * more, which shim_rtc.c takes as internal errors). */
#define SHIM_NVRTC_RESULTS(X)                           \
  X(NVRTC_SUCCESS, 0)                                   \
  X(NVRTC_ERROR_OUT_OF_MEMORY, 1)                       \
  X(NVRTC_ERROR_PROGRAM_CREATION_FAILURE, 2)            \
  X(NVRTC_ERROR_INVALID_INPUT, 3)                       \
  X(NVRTC_ERROR_INVALID_PROGRAM, 4)                     \
  X(NVRTC_ERROR_INVALID_OPTION, 5)                      \
  X(NVRTC_ERROR_COMPILATION, 6)                         \
  X(NVRTC_ERROR_BUILTIN_OPERATION_FAILURE, 7)           \
  X(NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION, 8) \
  X(NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION, 9) \
  X(NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID, 10)          \
  X(NVRTC_ERROR_INTERNAL_ERROR, 11)

/* The NVRTC entry points shim_rtc.c resolves, as nvrtc.h declares them
 * (nvrtcGetCUBIN since CUDA 11.1). */
#define SHIM_NVRTC_SYMBOLS(X)                                                 \
  X(nvrtcResult, nvrtcVersion, (int *major, int *minor))                      \
  X(nvrtcResult, nvrtcCreateProgram,                                          \
    (nvrtcProgram *prog, const char *src, const char *name, int numHeaders,  \
     const char *const *headers, const char *const *includeNames))            \
  X(nvrtcResult, nvrtcDestroyProgram, (nvrtcProgram *prog))                  \
  X(nvrtcResult, nvrtcCompileProgram,                                         \
    (nvrtcProgram prog, int numOptions, const char *const *options))          \
  X(nvrtcResult, nvrtcGetProgramLogSize,                                      \
    (nvrtcProgram prog, size_t *logSizeRet))                                  \
  X(nvrtcResult, nvrtcGetProgramLog, (nvrtcProgram prog, char *log))          \
  X(nvrtcResult, nvrtcGetCUBINSize, (nvrtcProgram prog, size_t *cubinSizeRet)) \
  X(nvrtcResult, nvrtcGetCUBIN, (nvrtcProgram prog, char *cubin))             \
  X(nvrtcResult, nvrtcGetPTXSize, (nvrtcProgram prog, size_t *ptxSizeRet))    \
  X(nvrtcResult, nvrtcGetPTX, (nvrtcProgram prog, char *ptx))                \
  X(nvrtcResult, nvrtcAddNameExpression,                                      \
    (nvrtcProgram prog, const char *name_expression))                         \
  X(nvrtcResult, nvrtcGetLoweredName,                                         \
    (nvrtcProgram prog, const char *name_expression,                          \
     const char **lowered_name))

#ifndef SHIM_RTC_LISTS_ONLY
#define SHIM_RTC_ENUMERATOR(name, value) name = value,
typedef enum hiprtcResult {
  SHIM_HIPRTC_RESULTS(SHIM_RTC_ENUMERATOR)
} hiprtcResult;
#undef SHIM_RTC_ENUMERATOR

/* ROCm's spelling: opaque to callers; the shim's wraps an nvrtcProgram. */
typedef struct _hiprtcProgram *hiprtcProgram;
#endif

#endif /* KILN_TESTS_HIP_SHIM_RTC_H */
