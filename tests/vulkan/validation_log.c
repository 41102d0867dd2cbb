#include "validation_log.h"

#include <stdio.h>
#include <string.h>

int vk_test_validation_messages;

void vk_test_on_log(kiln_log_level level, const char *message, void *data) {
  (void)level;
  (void)data;
  if (strncmp(message, "Vulkan validation: ", 19) == 0) {
    vk_test_validation_messages++;
    fprintf(stderr, "%s\n", message);
  }
}
