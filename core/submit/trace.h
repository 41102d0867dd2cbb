/* What core/submit/trace.c asks of its helper trace_nvtx.c (the profiler
 * ranges of KILN_TRACE=nvtx). Private to the two. */
#ifndef KILN_CORE_SUBMIT_TRACE_H
#define KILN_CORE_SUBMIT_TRACE_H

#include "core/internal.h"

/* Whether a command of this kind has bytes to report: all but launches,
 * event records and waits. trace.c. */
bool kiln_command_moves_bytes(kiln_command_kind kind);

/* ---- trace_nvtx.c ---------------------------------------------------------- */

/* Readies the ranges, once per process: NVTX's domain "kiln", and rocTX
 * where its library loads. KILN_ERROR_INVALID_ARGUMENT, saying why, where
 * this kiln has neither. */
kiln_status kiln_ranges_open(void);
/* Opens a range named for c on the calling thread; closes the thread's
 * innermost. */
void kiln_ranges_push(const kiln_command *c);
void kiln_ranges_pop(void);

#endif /* KILN_CORE_SUBMIT_TRACE_H */
