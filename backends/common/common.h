/*
 * What the CUDA and HIP backends share without being one backend: the
 * words of a vendor's failed call, a message built piece by piece, and the
 * opening of a library at run time and the resolving of its entry points. Each backend keeps its own
 * names (kiln_cuda_error, kiln_hip_error) as thin wrappers of these, so
 * that both say the same thing the same way. Nothing here knows a vendor's
 * header; the image constants and checks both backends use are the core's
 * (core/images/params.h), since the core reads images too.
 */
#ifndef KILN_BACKENDS_COMMON_H
#define KILN_BACKENDS_COMMON_H

#include <stdarg.h>
#include <stddef.h>

#include "core/backend.h"

/* ---- A vendor's errors (vendor.c) ------------------------------------------ */

/* What a vendor's error codes (CUresult, hipError_t, as int) mean to kiln. */
typedef struct kiln_vendor {
  const char *name; /* "cuda": the prefix of its warnings */
  /* The kiln status for a code: the specific one where the code has one,
   * else `fallback`. */
  kiln_status (*status)(int code, kiln_status fallback);
  /* The code's name and the vendor's description of it, into buf. */
  void (*describe)(int code, char *buf, size_t size);
} kiln_vendor;

/* Records "<what> failed: <name> (<description>)" as the thread's error,
 * <what> formatted from fmt and ap, and returns the code's status, or
 * `fallback` where it has none: a specific status (a lost device above
 * all) is never hidden by the call's own. */
kiln_status kiln_vendor_error(const kiln_vendor *vendor, int code,
                              kiln_status fallback, const char *fmt,
                              va_list ap);

/* Logs "<vendor>: <what> failed: <name> (<description>)" as a warning: for
 * failures that cannot be reported, in the deinit ops. */
void kiln_vendor_warn(const kiln_vendor *vendor, int code, const char *fmt,
                      va_list ap);

/* ---- Text (text.c) ---------------------------------------------------------- */

/* A message built piece by piece, cut short where it outgrows the 1 KiB
 * that kiln's error message holds. Starts as {"", 0}. */
typedef struct kiln_text {
  char buf[1024];
  size_t used;
} kiln_text;

void kiln_text_add(kiln_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- Libraries opened at run time (library.c) ------------------------------ */

/* dlopen(path, RTLD_NOW | RTLD_LOCAL | extra_flags) (RTLD_NOLOAD, say);
 * NULL when it does not open, with dlerror's words noted in `why` by
 * kiln_dl_note_error (the most telling of several tries is kept) where why
 * is not NULL. dlerror is left clear either way. */
void *kiln_library_open(const char *path, int extra_flags, char *why,
                        size_t why_size);

/* Resolves `name` in a dlopen'd library into the function pointer at
 * out_fn (fn_size bytes) by copying the bits of dlsym's void *, since ISO
 * C allows no cast between object and function pointers. Returns the
 * symbol (for dladdr), or NULL, and the pointer NULL, when it is missing. */
void *kiln_library_symbol(void *library, const char *name, void *out_fn,
                          size_t fn_size);

#endif /* KILN_BACKENDS_COMMON_H */
