/* Opens the Vulkan loader at run time and resolves the entry points listed
 * in symbols.h, so one build of kiln runs with or without Vulkan
 * installed. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

kiln_vulkan_library kiln_vulkan_lib;

/* dlsym gives a void *; converting that to a function pointer by a cast is
 * not valid C, copying the bits is. */
static PFN_vkVoidFunction to_function(void *symbol) {
  PFN_vkVoidFunction fn;
  memcpy(&fn, &symbol, sizeof fn);
  return fn;
}

/* PFN_vkVoidFunction to the entry point's own pointer type. */
#define KILN_VULKAN_ASSIGN(dst, fn) memcpy(&(dst), &(fn), sizeof(dst))

/* The name the loader in kiln_vulkan_lib was opened by. */
static char loaded_name[4096];

kiln_status kiln_vulkan_load_library(char *reason, size_t reason_size) {
  const char *name = kiln_getenv("KILN_VULKAN_LIBRARY");
  if (!name) name = "libvulkan.so.1";
  if (kiln_vulkan_lib.handle) {
    if (strcmp(name, loaded_name) == 0) return KILN_OK;
    /* The probe failed after this loader was opened (no driver, no usable
     * device), and KILN_VULKAN_LIBRARY now names another: no instance
     * exists while the probe runs, so nothing of the old one is in use. */
    dlclose(kiln_vulkan_lib.handle);
    memset(&kiln_vulkan_lib, 0, sizeof kiln_vulkan_lib);
  }
  void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    snprintf(reason, reason_size, "cannot load the Vulkan loader %s: %s", name,
             why ? why : "unknown dlopen error");
    return KILN_ERROR_UNAVAILABLE;
  }
  dlerror();
  void *sym = dlsym(handle, "vkGetInstanceProcAddr");
  if (!sym) {
    const char *why = dlerror();
    snprintf(reason, reason_size,
             "%s has no vkGetInstanceProcAddr (not a Vulkan loader?): %s", name,
             why ? why : "symbol not found");
    dlclose(handle);
    return KILN_ERROR_UNAVAILABLE;
  }
  kiln_vulkan_library lib;
  memset(&lib, 0, sizeof lib);
  lib.handle = handle;
  PFN_vkVoidFunction gipa = to_function(sym);
  KILN_VULKAN_ASSIGN(lib.vkGetInstanceProcAddr, gipa);
  PFN_vkVoidFunction fn;
#define KILN_VULKAN_X(sym_name)                                          \
  fn = lib.vkGetInstanceProcAddr(VK_NULL_HANDLE, #sym_name);             \
  if (!fn) {                                                             \
    snprintf(reason, reason_size, "the Vulkan loader %s lacks %s", name, \
             #sym_name);                                                 \
    dlclose(handle);                                                     \
    return KILN_ERROR_UNAVAILABLE;                                       \
  }                                                                      \
  KILN_VULKAN_ASSIGN(lib.sym_name, fn);
  KILN_VULKAN_GLOBAL_SYMBOLS(KILN_VULKAN_X)
#undef KILN_VULKAN_X
  fn = lib.vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkEnumerateInstanceVersion");
  KILN_VULKAN_ASSIGN(lib.vkEnumerateInstanceVersion, fn);
  kiln_vulkan_lib = lib;
  kiln_strlcpy(loaded_name, name, sizeof loaded_name);
  return KILN_OK;
}

kiln_status kiln_vulkan_load_instance(VkInstance instance, char *reason,
                                      size_t reason_size) {
  kiln_vulkan_library *lib = &kiln_vulkan_lib;
  PFN_vkVoidFunction fn;
#define KILN_VULKAN_X(sym_name)                                               \
  fn = lib->vkGetInstanceProcAddr(instance, #sym_name);                       \
  if (!fn) {                                                                  \
    snprintf(reason, reason_size, "the Vulkan instance lacks %s", #sym_name); \
    return KILN_ERROR_UNAVAILABLE;                                            \
  }                                                                           \
  KILN_VULKAN_ASSIGN(lib->sym_name, fn);
  KILN_VULKAN_INSTANCE_SYMBOLS(KILN_VULKAN_X)
#undef KILN_VULKAN_X
  fn = lib->vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT");
  KILN_VULKAN_ASSIGN(lib->vkCreateDebugUtilsMessengerEXT, fn);
  fn = lib->vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT");
  KILN_VULKAN_ASSIGN(lib->vkDestroyDebugUtilsMessengerEXT, fn);
  return KILN_OK;
}

kiln_status kiln_vulkan_load_device(VkDevice device,
                                    kiln_vulkan_device_fns *fns) {
  PFN_vkVoidFunction fn;
#define KILN_VULKAN_X(sym_name)                                            \
  fn = kiln_vulkan_lib.vkGetDeviceProcAddr(device, #sym_name);             \
  if (!fn)                                                                 \
    return kiln_set_error(KILN_ERROR_UNAVAILABLE,                          \
                          "the Vulkan device lacks %s (driver older than " \
                          "Vulkan 1.2?)",                                  \
                          #sym_name);                                      \
  KILN_VULKAN_ASSIGN(fns->sym_name, fn);
  KILN_VULKAN_DEVICE_SYMBOLS(KILN_VULKAN_X)
#undef KILN_VULKAN_X
  return KILN_OK;
}
