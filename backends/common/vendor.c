/* A vendor's failed call in one wording for CUDA and HIP: see common.h. */
#include "backends/common/common.h"

/* Room for the code's name and the vendor's description of it. */
#define WHY_BYTES 384

kiln_status kiln_vendor_error(const kiln_vendor *vendor, int code,
                              kiln_status fallback, const char *fmt,
                              va_list ap) {
  char why[WHY_BYTES];
  vendor->describe(code, why, sizeof why);
  return kiln_call_failed(vendor->status(code, fallback), why, fmt, ap);
}

void kiln_vendor_warn(const kiln_vendor *vendor, int code, const char *fmt,
                      va_list ap) {
  char why[WHY_BYTES];
  vendor->describe(code, why, sizeof why);
  kiln_call_warn(vendor->name, why, fmt, ap);
}
