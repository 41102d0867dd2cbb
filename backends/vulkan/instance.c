/* The process-wide VkInstance, with the validation layer and its
 * messenger where KILN_VULKAN_VALIDATION asks for them (and the layer's
 * debug printf, routed to kiln's log, where it says printf), and
 * VK_EXT_debug_utils's labels for KILN_TRACE=nvtx (labels.c) wherever the
 * loader offers them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/vulkan/vulkan.h"

#define VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

static struct {
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  char validation_problem[320];
  uint32_t validation_version; /* the layer's specVersion, when it is on */
  uint32_t api;                /* the apiVersion the instance asked for */
  bool printf_on;
} g;

/* The kernels of the submission this thread is making, under printf. */
static _Thread_local const char *printing;

VkInstance kiln_vulkan_instance(void) { return g.instance; }

const char *kiln_vulkan_validation_problem(void) {
  return g.validation_problem[0] ? g.validation_problem : NULL;
}

uint32_t kiln_vulkan_validation_version(void) { return g.validation_version; }

uint32_t kiln_vulkan_instance_api(void) {
  return g.api ? g.api : VK_API_VERSION_1_2;
}

bool kiln_vulkan_printf_on(void) { return g.printf_on; }

void kiln_vulkan_printf_source(const char *kernels) { printing = kernels; }

bool kiln_vulkan_has_extension(const VkExtensionProperties *exts,
                               uint32_t count, const char *name) {
  for (uint32_t i = 0; i < count; i++)
    if (strcmp(exts[i].extensionName, name) == 0) return true;
  return false;
}

/* A kernel's debugPrintfEXT text comes as an INFO message whose id names
 * DEBUG-PRINTF (UNASSIGNED-DEBUG-PRINTF in layer 1.3.239, WARNING-DEBUG-
 * PRINTF in later ones) and whose text follows the layer's
 * "| MessageID = 0x... | " header. The layer names only the device, so
 * the kernel comes from the submitting thread (kiln_vulkan_printf_source).
 * Every line is said whatever the log level: who asked for printf wants
 * to read it, as CUDA's goes to stdout. */
static void on_printf(const char *message) {
  const char *text = strstr(message, "| MessageID = ");
  if (text) text = strstr(text + 14, " | ");
  text = text ? text + 3 : message;
  const size_t n = strlen(text);
  char line[2048];
  snprintf(line, sizeof line, "vulkan printf (%s): %.*s",
           printing ? printing : "kernel unknown",
           (int)(n > 0 && text[n - 1] == '\n' ? n - 1 : n), text);
  kiln_log_always(KILN_LOG_INFO, line);
}

/* Every message of the validation layer at WARNING or ERROR severity is a
 * bug in kiln or in the caller's kernels; the conformance suite fails on
 * this prefix. The loader's own messages through the same messenger are
 * about the machine (a driver manifest naming a missing library, an
 * implicit layer): worth a warning, not a failed run. */
static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity,
    VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user_data) {
  (void)user_data;
  const char *message = data && data->pMessage ? data->pMessage : "(none)";
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    /* The messenger asks for INFO under printf only, for the text. */
    if (data && data->pMessageIdName &&
        strstr(data->pMessageIdName, "DEBUG-PRINTF"))
      on_printf(message);
    return VK_FALSE;
  }
  if (types == VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT && data &&
      data->pMessageIdName &&
      strcmp(data->pMessageIdName, "Loader Message") == 0)
    kiln_log(KILN_LOG_WARN, "Vulkan loader: %s", message);
  else
    kiln_log(KILN_LOG_ERROR, "Vulkan validation: %s", message);
  return VK_FALSE;
}

/* The instance extensions that `layer` (NULL: the loader and drivers)
 * provides; NULL with *count 0 when there are none or listing failed. */
static VkExtensionProperties *instance_extensions(const char *layer,
                                                  uint32_t *count) {
  *count = 0;
  uint32_t n = 0;
  if (kiln_vulkan_lib.vkEnumerateInstanceExtensionProperties(layer, &n, NULL) !=
          VK_SUCCESS ||
      n == 0)
    return NULL;
  VkExtensionProperties *exts = calloc(n, sizeof *exts);
  if (!exts) return NULL;
  if (kiln_vulkan_lib.vkEnumerateInstanceExtensionProperties(layer, &n, exts) <
      0) {
    free(exts);
    return NULL;
  }
  *count = n;
  return exts;
}

/* The validation layer's specVersion, or 0 where it is not installed. */
static uint32_t validation_layer_version(void) {
  uint32_t n = 0;
  if (kiln_vulkan_lib.vkEnumerateInstanceLayerProperties(&n, NULL) !=
          VK_SUCCESS ||
      n == 0)
    return 0;
  VkLayerProperties *layers = calloc(n, sizeof *layers);
  if (!layers) return 0;
  uint32_t version = 0;
  if (kiln_vulkan_lib.vkEnumerateInstanceLayerProperties(&n, layers) >= 0)
    for (uint32_t i = 0; i < n && !version; i++)
      if (strcmp(layers[i].layerName, VALIDATION_LAYER) == 0)
        version = layers[i].specVersion ? layers[i].specVersion : 1;
  free(layers);
  return version;
}

static bool validation_requested(void) {
  const char *v = kiln_getenv("KILN_VULKAN_VALIDATION");
  return v && strcmp(v, "0") != 0;
}

/* KILN_VULKAN_VALIDATION=core: the layer without synchronization
 * validation, whose single lock a vkWaitSemaphores holds while it waits; in
 * layers before 1.3.296 (KhronosGroup/Vulkan-ValidationLayers #4968, #7941)
 * threads that submit while others wait can block each other for good, as
 * kiln's thread tests did on the H100 with 1.3.239. printf is core's
 * checks with the layer's debug printf. */
static bool mode_is(const char *mode) {
  const char *v = kiln_getenv("KILN_VULKAN_VALIDATION");
  return v && strcasecmp(v, mode) == 0;
}

static void forget_labels(void) {
  kiln_vulkan_lib.vkCmdBeginDebugUtilsLabelEXT = NULL;
  kiln_vulkan_lib.vkCmdEndDebugUtilsLabelEXT = NULL;
  kiln_vulkan_lib.vkQueueBeginDebugUtilsLabelEXT = NULL;
  kiln_vulkan_lib.vkQueueEndDebugUtilsLabelEXT = NULL;
}

/* The entry point `name` of the instance, into `dst` (a PFN of its own
 * type); false where the instance lacks it. */
static bool resolve(const char *name, void *dst, size_t size) {
  PFN_vkVoidFunction fn =
      kiln_vulkan_lib.vkGetInstanceProcAddr(g.instance, name);
  memcpy(dst, &fn, size);
  return fn != NULL;
}

/* The label calls of VK_EXT_debug_utils, all four or none: labels.c
 * records none while vkCmdBeginDebugUtilsLabelEXT is NULL. Through the
 * loader's dispatch, so that layers see them. */
static void load_labels(void) {
  kiln_vulkan_library *lib = &kiln_vulkan_lib;
#define RESOLVE(name) resolve(#name, &lib->name, sizeof lib->name)
  const bool all = RESOLVE(vkCmdBeginDebugUtilsLabelEXT) &&
                   RESOLVE(vkCmdEndDebugUtilsLabelEXT) &&
                   RESOLVE(vkQueueBeginDebugUtilsLabelEXT) &&
                   RESOLVE(vkQueueEndDebugUtilsLabelEXT);
#undef RESOLVE
  if (!all) forget_labels();
}

kiln_status kiln_vulkan_instance_create(uint32_t loader_version, char *reason,
                                        size_t reason_size) {
  g.validation_problem[0] = '\0';
  g.printf_on = false;
  uint32_t ext_count = 0, layer_ext_count = 0;
  VkExtensionProperties *exts = instance_extensions(NULL, &ext_count);
  const char *enabled[4];
  uint32_t enabled_count = 0;
  VkInstanceCreateFlags flags = 0;
  /* Lists devices behind portability drivers (MoltenVK) too. */
  if (kiln_vulkan_has_extension(
          exts, ext_count, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    enabled[enabled_count++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }

  /* Enabled wherever it is offered: contexts read KILN_TRACE after the
   * instance is made, and an enabled extension that no one calls costs
   * nothing. */
  bool debug_utils = kiln_vulkan_has_extension(
      exts, ext_count, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);

  bool validate = false;
  const char *layer = VALIDATION_LAYER;
  VkExtensionProperties *layer_exts = NULL;
  bool sync_validation = false;
  uint32_t layer_version = 0;
  if (validation_requested()) {
    if (!(layer_version = validation_layer_version())) {
      snprintf(g.validation_problem, sizeof g.validation_problem,
               "KILN_VULKAN_VALIDATION is set but the Khronos validation "
               "layer (%s) is not installed: install it "
               "(vulkan-validationlayers, or the Vulkan SDK) or unset "
               "KILN_VULKAN_VALIDATION",
               VALIDATION_LAYER);
    } else {
      layer_exts = instance_extensions(layer, &layer_ext_count);
      if (!debug_utils &&
          !kiln_vulkan_has_extension(layer_exts, layer_ext_count,
                                     VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) {
        snprintf(g.validation_problem, sizeof g.validation_problem,
                 "KILN_VULKAN_VALIDATION is set but neither the loader nor "
                 "%s offers %s, so validation messages could not be seen",
                 VALIDATION_LAYER, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
      } else {
        validate = true;
        debug_utils = true;
        g.validation_version = layer_version;
        const bool features = kiln_vulkan_has_extension(
            layer_exts, layer_ext_count,
            VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
        const bool printf_asked = mode_is("printf");
        g.printf_on = printf_asked && features;
        sync_validation = features && !mode_is("core") && !printf_asked;
        if (printf_asked && !features)
          snprintf(g.validation_problem, sizeof g.validation_problem,
                   "KILN_VULKAN_VALIDATION=printf, but the validation layer "
                   "(%s, spec %u.%u.%u) lacks %s, through which debug "
                   "printf is turned on",
                   VALIDATION_LAYER, VK_API_VERSION_MAJOR(layer_version),
                   VK_API_VERSION_MINOR(layer_version),
                   VK_API_VERSION_PATCH(layer_version),
                   VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
        if (features && (sync_validation || g.printf_on))
          enabled[enabled_count++] = VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME;
      }
    }
  }
  /* A debugPrintfEXT's SPIR-V needs SPV_KHR_non_semantic_info, which a
   * Vulkan 1.3 device takes only where the instance asked for 1.3 too
   * (lavapipe offers no extension for it). */
  g.api = g.printf_on && loader_version >= VK_API_VERSION_1_3
              ? VK_API_VERSION_1_3
              : VK_API_VERSION_1_2;
  free(exts);
  free(layer_exts);
  if (debug_utils) enabled[enabled_count++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;

  VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                         (g.printf_on ? VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT
                                      : 0),
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
      .pfnUserCallback = on_validation_message,
  };
  /* Synchronization validation is what checks the stream barriers. */
  static const VkValidationFeatureEnableEXT sync_feature[] = {
      VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  static const VkValidationFeatureEnableEXT printf_feature[] = {
      VK_VALIDATION_FEATURE_ENABLE_DEBUG_PRINTF_EXT};
  VkValidationFeaturesEXT validation_features = {
      .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
      .pNext = &messenger_info,
      .enabledValidationFeatureCount = 1,
      .pEnabledValidationFeatures =
          g.printf_on ? printf_feature : sync_feature,
  };
  VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "kiln",
      .pEngineName = "kiln",
      .engineVersion = VK_MAKE_API_VERSION(
          0, KILN_VERSION_MAJOR, KILN_VERSION_MINOR, KILN_VERSION_PATCH),
      .apiVersion = g.api,
  };
  VkInstanceCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      .flags = flags,
      .pApplicationInfo = &app,
      .enabledExtensionCount = enabled_count,
      .ppEnabledExtensionNames = enabled,
  };
  if (validate) {
    info.pNext = sync_validation || g.printf_on
                     ? (const void *)&validation_features
                     : (const void *)&messenger_info;
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = &layer;
  }
  VkResult r = kiln_vulkan_lib.vkCreateInstance(&info, NULL, &g.instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
    g.instance = VK_NULL_HANDLE;
    snprintf(reason, reason_size,
             "no Vulkan device: no installed Vulkan driver supports Vulkan "
             "1.2 (vkCreateInstance: %s, Vulkan loader %u.%u)",
             kiln_vulkan_result_name(r), VK_API_VERSION_MAJOR(loader_version),
             VK_API_VERSION_MINOR(loader_version));
    return KILN_ERROR_UNAVAILABLE;
  }
  if (r != VK_SUCCESS) {
    g.instance = VK_NULL_HANDLE;
    snprintf(reason, reason_size,
             "vkCreateInstance failed: %s (Vulkan loader %u.%u)",
             kiln_vulkan_result_name(r), VK_API_VERSION_MAJOR(loader_version),
             VK_API_VERSION_MINOR(loader_version));
    return KILN_ERROR_UNAVAILABLE;
  }
  kiln_status st = kiln_vulkan_load_instance(g.instance, reason, reason_size);
  if (st == KILN_OK && debug_utils) load_labels();
  if (st == KILN_OK && validate) {
    if (!kiln_vulkan_lib.vkCreateDebugUtilsMessengerEXT) {
      snprintf(reason, reason_size,
               "the Vulkan instance lacks vkCreateDebugUtilsMessengerEXT");
      st = KILN_ERROR_UNAVAILABLE;
    } else if ((r = kiln_vulkan_lib.vkCreateDebugUtilsMessengerEXT(
                    g.instance, &messenger_info, NULL, &g.messenger)) !=
               VK_SUCCESS) {
      snprintf(reason, reason_size, "vkCreateDebugUtilsMessengerEXT failed: %s",
               kiln_vulkan_result_name(r));
      st = KILN_ERROR_UNAVAILABLE;
    }
    if (st == KILN_OK)
      kiln_log(KILN_LOG_INFO, "Vulkan validation layer on%s",
               sync_validation ? ", with synchronization validation"
               : g.printf_on   ? ", with debug printf"
                               : "");
  }
  return st;
}

void kiln_vulkan_instance_destroy(void) {
  forget_labels();
  if (g.messenger)
    kiln_vulkan_lib.vkDestroyDebugUtilsMessengerEXT(g.instance, g.messenger,
                                                    NULL);
  if (g.instance) kiln_vulkan_lib.vkDestroyInstance(g.instance, NULL);
  g.messenger = VK_NULL_HANDLE;
  g.instance = VK_NULL_HANDLE;
  g.printf_on = false;
  g.api = 0;
}
