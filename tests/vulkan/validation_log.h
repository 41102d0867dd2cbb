/* The Vulkan tests' watch on the validation layer: kiln logs each of the
 * layer's messages with the prefix "Vulkan validation: "; installed as
 * the log handler, vk_test_on_log prints them and counts them, and the
 * tests fail on any. */
#ifndef KILN_TESTS_VULKAN_VALIDATION_LOG_H
#define KILN_TESTS_VULKAN_VALIDATION_LOG_H

#include <stddef.h>

#include "kiln/kiln.h"

extern int vk_test_validation_messages;

void vk_test_on_log(kiln_log_level level, const char *message, void *data);

/* The main of a test whose one group needs a Vulkan device: installs
 * vk_test_on_log, returns 77 (skipped) with the reason printed where
 * there is no device, else the group's result. */
struct CMUnitTest;
int vk_test_run_on_device(const char *group, const struct CMUnitTest *tests,
                          size_t count);

#endif
