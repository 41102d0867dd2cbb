#include "validation_log.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

int vk_test_validation_messages;

void vk_test_on_log(kiln_log_level level, const char *message, void *data) {
  (void)level;
  (void)data;
  if (strncmp(message, "Vulkan validation: ", 19) == 0) {
    vk_test_validation_messages++;
    fprintf(stderr, "%s\n", message);
  }
}

int vk_test_run_on_device(const char *group, const struct CMUnitTest *tests,
                          size_t count) {
  kiln_set_log_handler(vk_test_on_log, NULL);
  size_t devices = 0;
  if (kiln_device_count(KILN_BACKEND_VULKAN, &devices) != KILN_OK ||
      devices == 0) {
    printf("no Vulkan device: %s\n", kiln_last_error());
    return 77;
  }
  return _cmocka_run_group_tests(group, tests, count, NULL, NULL);
}
