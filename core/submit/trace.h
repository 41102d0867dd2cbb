/* What core/submit/trace.c asks of its two helpers, trace_nvtx.c (the
 * profiler ranges of KILN_TRACE=nvtx) and trace_timing.c (the completions
 * of kiln_set_trace_handler_ex). Private to the three. */
#ifndef KILN_CORE_SUBMIT_TRACE_H
#define KILN_CORE_SUBMIT_TRACE_H

#include "core/internal.h"

/* ---- trace_nvtx.c ---------------------------------------------------------- */

/* Readies the ranges, once per process: NVTX's domain "kiln", and rocTX
 * where its library loads. KILN_ERROR_INVALID_ARGUMENT, saying why, where
 * this kiln has neither and they are `required` (the backend has no debug
 * labels of its own to show instead). */
kiln_status kiln_ranges_open(bool required);
/* What c's range and debug label say: the kernel's name for a launch,
 * "<function> <bytes> B" for a command that moves bytes, else the
 * function; in `text` (of `size` bytes) where it is made up. */
const char *kiln_range_name(const kiln_command *c, char *text, size_t size);
/* Opens a range called `name` (kiln_range_name's for c) on the calling
 * thread; closes the thread's innermost. */
void kiln_ranges_push(const kiln_command *c, const char *name);
void kiln_ranges_pop(void);

/* ---- trace_timing.c -------------------------------------------------------- */

/* A command's timing start: an event recorded on s, or NULL where that
 * failed (logged once per context). */
kiln_event *kiln_timing_start(kiln_stream *s);
/* The command went to the backend: records its end on s and keeps t
 * (copied, its kernel name too) until a wait reports it; `recorded` is
 * the user's event of a record. True when the context's commands not yet
 * reported reach another 1024: time to look for completions. */
bool kiln_timing_end(kiln_stream *s, kiln_event *start,
                     const kiln_trace_command *t, const kiln_event *recorded);
/* The command failed: its start goes back to the pool. */
void kiln_timing_drop(kiln_stream *s, kiln_event *start);
/* Takes out the completed commands that kiln_trace_completed(ctx, s, e)
 * covers, in their order, with their times, into *out (its own memory, 0
 * commands: none); kiln_timing_free releases it. */
size_t kiln_timing_collect(kiln_context *ctx, const kiln_stream *s,
                           const kiln_event *e, kiln_trace_command **out);
void kiln_timing_free(kiln_trace_command *list, size_t count);
/* Forgets what is still kept of stream s's commands (it is going). */
void kiln_timing_forget_stream(const kiln_stream *s);
/* Frees the context's timing state; its events are the context's internal
 * objects, which the context releases (or keeps, abandoned). */
void kiln_timing_close(kiln_context *ctx);

#endif /* KILN_CORE_SUBMIT_TRACE_H */
