/*
 * cmocka checks of kiln statuses, shared by tests/core and
 * tests/conformance. Include after <cmocka.h>.
 */
#ifndef KILN_TESTS_KILN_CHECK_H
#define KILN_TESTS_KILN_CHECK_H

#include <string.h>

#include "kiln/kiln.h"

/* The call must succeed. */
#define check_ok(call)                                                         \
  do {                                                                         \
    kiln_status check_st_ = (call);                                            \
    if (check_st_ != KILN_OK)                                                  \
      fail_msg("%s failed with %s: %s", #call, kiln_status_name(check_st_),    \
               kiln_last_error());                                             \
  } while (0)

/* The call must fail with `expected` and leave a message saying why. */
#define check_fails(call, expected)                                            \
  do {                                                                         \
    kiln_clear_error();                                                        \
    kiln_status check_st_ = (call);                                            \
    if (check_st_ != (expected))                                               \
      fail_msg("%s returned %s, expected %s (message: \"%s\")", #call,         \
               kiln_status_name(check_st_), kiln_status_name(expected),        \
               kiln_last_error());                                             \
    if (kiln_last_error()[0] == '\0')                                          \
      fail_msg("%s failed with %s but left no message", #call,                 \
               kiln_status_name(check_st_));                                   \
  } while (0)

/* The last error message must contain `needle`. */
#define check_message_has(needle)                                              \
  do {                                                                         \
    if (!strstr(kiln_last_error(), (needle)))                                  \
      fail_msg("the message \"%s\" does not mention \"%s\"",                   \
               kiln_last_error(), (needle));                                   \
  } while (0)

/* Skips the running test, saying why, in one line that scripts/test.sh
 * collects at the end of a run (every line starting "kiln-skip: " in the
 * test logs): a skip is counted and explained, never a silent pass. The
 * reason is a printf format. Use it only where the backend or the machine
 * lacks what the test needs. */
#define kiln_skip(...)                                                         \
  do {                                                                         \
    print_message("kiln-skip: %s: ", __func__);                                \
    print_message(__VA_ARGS__);                                                \
    print_message("\n");                                                       \
    skip();                                                                    \
  } while (0)

#endif /* KILN_TESTS_KILN_CHECK_H */
