/* shim_rtc.h declares HIPRTC's and NVRTC's API itself. This file holds
 * those declarations against the vendors' headers, each part built where
 * its header is installed (SHIM_CHECK_HIPRTC: ROCm's hip/hiprtc.h;
 * SHIM_CHECK_NVRTC: CUDA's nvrtc.h): every value and every prototype must
 * agree, or it does not compile. */
#include <stddef.h>

#ifdef SHIM_CHECK_HIPRTC
#include <hip/hiprtc.h>
#endif
#ifdef SHIM_CHECK_NVRTC
#include <nvrtc.h>
#endif

#define SHIM_RTC_LISTS_ONLY
#include "tests/hip/shim/shim_rtc.h"

#define SHIM_CHECK_PROTOTYPE(ret, name, params)                      \
  _Static_assert(                                                    \
      __builtin_types_compatible_p(__typeof__(&name), ret(*) params), \
      #name "'s prototype differs from the vendor's");

#ifdef SHIM_CHECK_HIPRTC
#define SHIM_CHECK_VALUE(name, value) \
  _Static_assert((long long)(name) == (value), #name " differs from ROCm's");
SHIM_HIPRTC_RESULTS(SHIM_CHECK_VALUE)
#undef SHIM_CHECK_VALUE
SHIM_HIPRTC_SYMBOLS(SHIM_CHECK_PROTOTYPE)
_Static_assert(__builtin_types_compatible_p(hiprtcProgram,
                                            struct _hiprtcProgram *),
               "hiprtcProgram differs from ROCm's");
_Static_assert(sizeof(hiprtcResult) == sizeof(int),
               "hiprtcResult's size differs from ROCm's");
#endif

#ifdef SHIM_CHECK_NVRTC
#define SHIM_CHECK_VALUE(name, value) \
  _Static_assert((long long)(name) == (value), #name " differs from CUDA's");
SHIM_NVRTC_RESULTS(SHIM_CHECK_VALUE)
#undef SHIM_CHECK_VALUE
SHIM_NVRTC_SYMBOLS(SHIM_CHECK_PROTOTYPE)
_Static_assert(__builtin_types_compatible_p(nvrtcProgram,
                                            struct _nvrtcProgram *),
               "nvrtcProgram differs from CUDA's");
#endif

int main(void) { return 0; }
