/* VK_LAYER_KILN_label_recorder, a Vulkan layer for tests/vulkan/
 * test_labels.c: it passes every call down the chain and appends a line to
 * the file $KILN_LABEL_LOG for each debug label call it sees, in the order
 * they are made:
 *
 *   begin <name>          vkCmdBeginDebugUtilsLabelEXT
 *   end                   vkCmdEndDebugUtilsLabelEXT
 *   insert <name>         vkCmdInsertDebugUtilsLabelEXT
 *   queue begin <name>    vkQueueBeginDebugUtilsLabelEXT
 *   queue end             vkQueueEndDebugUtilsLabelEXT
 *   queue insert <name>   vkQueueInsertDebugUtilsLabelEXT
 *
 * It also counts the labels open in each command buffer and on each queue,
 * and writes a line saying so when an end has no begin or a command buffer
 * ends with labels open, so that the test's exact comparison fails on
 * labels that do not nest. The loader finds it through the manifest
 * meson.build writes next to it (VK_ADD_LAYER_PATH), and loads it for
 * VK_INSTANCE_LAYERS. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vk_layer.h>
#include <vulkan/vulkan.h>

/* The dispatch key of a dispatchable handle: the loader's table pointer,
 * which a device shares with its queues and command buffers, and an
 * instance with its physical devices. */
static void *key_of(const void *handle) { return *(void *const *)handle; }

typedef struct instance_record {
  void *key;
  VkInstance handle;
  PFN_vkGetInstanceProcAddr gipa;
  PFN_vkDestroyInstance destroy;
} instance_record;

typedef struct device_record {
  void *key;
  PFN_vkGetDeviceProcAddr gdpa;
  PFN_vkDestroyDevice destroy;
  PFN_vkBeginCommandBuffer begin_cmd;
  PFN_vkEndCommandBuffer end_cmd;
  PFN_vkCmdBeginDebugUtilsLabelEXT cmd_begin;
  PFN_vkCmdEndDebugUtilsLabelEXT cmd_end;
  PFN_vkCmdInsertDebugUtilsLabelEXT cmd_insert;
  PFN_vkQueueBeginDebugUtilsLabelEXT queue_begin;
  PFN_vkQueueEndDebugUtilsLabelEXT queue_end;
  PFN_vkQueueInsertDebugUtilsLabelEXT queue_insert;
} device_record;

/* The labels open in a command buffer or on a queue. */
typedef struct open_count {
  const void *handle;
  int depth;
} open_count;

enum { MAX_INSTANCES = 8, MAX_DEVICES = 32, MAX_COUNTS = 4096 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static instance_record instances[MAX_INSTANCES];
static device_record devices[MAX_DEVICES];
static open_count counts[MAX_COUNTS];

/* Under `lock`. */
static instance_record *instance_of(const void *handle) {
  void *key = key_of(handle);
  for (int i = 0; i < MAX_INSTANCES; i++)
    if (instances[i].key == key) return &instances[i];
  return NULL;
}

static device_record *device_of(const void *handle) {
  void *key = key_of(handle);
  for (int i = 0; i < MAX_DEVICES; i++)
    if (devices[i].key == key) return &devices[i];
  return NULL;
}

/* A copy of the record, taken under the lock, so that calls down the
 * chain are made without it. */
static device_record device_copy(const void *handle) {
  device_record r;
  memset(&r, 0, sizeof r);
  pthread_mutex_lock(&lock);
  const device_record *d = device_of(handle);
  if (d) r = *d;
  pthread_mutex_unlock(&lock);
  return r;
}

static void write_line(const char *what, const char *name) {
  const char *path = getenv("KILN_LABEL_LOG");
  if (!path || !path[0]) return;
  FILE *f = fopen(path, "a");
  if (!f) return;
  if (name)
    fprintf(f, "%s %s\n", what, name);
  else
    fprintf(f, "%s\n", what);
  fclose(f);
}

/* Under `lock`: the count of `handle`, made at 0 when first seen. */
static open_count *count_of(const void *handle) {
  open_count *free_slot = NULL;
  for (int i = 0; i < MAX_COUNTS; i++) {
    if (counts[i].handle == handle) return &counts[i];
    if (!counts[i].handle && !free_slot) free_slot = &counts[i];
  }
  if (free_slot) {
    free_slot->handle = handle;
    free_slot->depth = 0;
  }
  return free_slot;
}

/* Writes the line and follows the depth of `handle`: +1, -1, or 0 for an
 * insert. */
static void note(const void *handle, int step, const char *what,
                 const char *name) {
  pthread_mutex_lock(&lock);
  write_line(what, name);
  open_count *c = count_of(handle);
  if (c) {
    if (step < 0 && c->depth == 0)
      write_line("unbalanced: an end with no label open", what);
    else
      c->depth += step;
  }
  pthread_mutex_unlock(&lock);
}

static void restart_count(const void *handle, bool ending) {
  pthread_mutex_lock(&lock);
  open_count *c = count_of(handle);
  if (c) {
    if (ending && c->depth != 0) {
      char text[64];
      snprintf(text, sizeof text, "%d label(s) open", c->depth);
      write_line("unbalanced: a command buffer ended with", text);
    }
    c->depth = 0;
  }
  pthread_mutex_unlock(&lock);
}

static const char *label_name(const VkDebugUtilsLabelEXT *info) {
  return info && info->pLabelName ? info->pLabelName : "(null)";
}

static VKAPI_ATTR void VKAPI_CALL cmd_begin(VkCommandBuffer cmd,
                                            const VkDebugUtilsLabelEXT *info) {
  note(cmd, 1, "begin", label_name(info));
  device_record d = device_copy(cmd);
  if (d.cmd_begin) d.cmd_begin(cmd, info);
}

static VKAPI_ATTR void VKAPI_CALL cmd_end(VkCommandBuffer cmd) {
  note(cmd, -1, "end", NULL);
  device_record d = device_copy(cmd);
  if (d.cmd_end) d.cmd_end(cmd);
}

static VKAPI_ATTR void VKAPI_CALL cmd_insert(VkCommandBuffer cmd,
                                             const VkDebugUtilsLabelEXT *info) {
  note(cmd, 0, "insert", label_name(info));
  device_record d = device_copy(cmd);
  if (d.cmd_insert) d.cmd_insert(cmd, info);
}

static VKAPI_ATTR void VKAPI_CALL
queue_begin(VkQueue queue, const VkDebugUtilsLabelEXT *info) {
  note(queue, 1, "queue begin", label_name(info));
  device_record d = device_copy(queue);
  if (d.queue_begin) d.queue_begin(queue, info);
}

static VKAPI_ATTR void VKAPI_CALL queue_end(VkQueue queue) {
  note(queue, -1, "queue end", NULL);
  device_record d = device_copy(queue);
  if (d.queue_end) d.queue_end(queue);
}

static VKAPI_ATTR void VKAPI_CALL
queue_insert(VkQueue queue, const VkDebugUtilsLabelEXT *info) {
  note(queue, 0, "queue insert", label_name(info));
  device_record d = device_copy(queue);
  if (d.queue_insert) d.queue_insert(queue, info);
}

static VKAPI_ATTR VkResult VKAPI_CALL begin_command_buffer(
    VkCommandBuffer cmd, const VkCommandBufferBeginInfo *info) {
  restart_count(cmd, false);
  return device_copy(cmd).begin_cmd(cmd, info);
}

static VKAPI_ATTR VkResult VKAPI_CALL end_command_buffer(VkCommandBuffer cmd) {
  restart_count(cmd, true);
  return device_copy(cmd).end_cmd(cmd);
}

/* PFN_vkVoidFunction from an entry point of any type. */
#define AS_VOID(fn) ((PFN_vkVoidFunction)(fn))

static PFN_vkVoidFunction intercepted_device_call(const char *name);

static VKAPI_ATTR VkResult VKAPI_CALL
create_instance(const VkInstanceCreateInfo *info,
                const VkAllocationCallbacks *allocator, VkInstance *out) {
  VkLayerInstanceCreateInfo *link = (VkLayerInstanceCreateInfo *)info->pNext;
  while (link &&
         !(link->sType == VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO &&
           link->function == VK_LAYER_LINK_INFO))
    link = (VkLayerInstanceCreateInfo *)link->pNext;
  if (!link) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr gipa =
      link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  PFN_vkCreateInstance create =
      (PFN_vkCreateInstance)gipa(VK_NULL_HANDLE, "vkCreateInstance");
  if (!create) return VK_ERROR_INITIALIZATION_FAILED;
  VkResult r = create(info, allocator, out);
  if (r != VK_SUCCESS) return r;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_INSTANCES; i++) {
    if (instances[i].key) continue;
    instances[i] = (instance_record){
        key_of(*out), *out, gipa,
        (PFN_vkDestroyInstance)gipa(*out, "vkDestroyInstance")};
    break;
  }
  pthread_mutex_unlock(&lock);
  return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL
destroy_instance(VkInstance instance, const VkAllocationCallbacks *allocator) {
  pthread_mutex_lock(&lock);
  instance_record *rec = instance_of(instance);
  instance_record r = *rec;
  memset(rec, 0, sizeof *rec);
  pthread_mutex_unlock(&lock);
  r.destroy(instance, allocator);
}

static VKAPI_ATTR VkResult VKAPI_CALL
create_device(VkPhysicalDevice physical, const VkDeviceCreateInfo *info,
              const VkAllocationCallbacks *allocator, VkDevice *out) {
  VkLayerDeviceCreateInfo *link = (VkLayerDeviceCreateInfo *)info->pNext;
  while (link && !(link->sType == VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO &&
                   link->function == VK_LAYER_LINK_INFO))
    link = (VkLayerDeviceCreateInfo *)link->pNext;
  if (!link) return VK_ERROR_INITIALIZATION_FAILED;
  PFN_vkGetInstanceProcAddr gipa =
      link->u.pLayerInfo->pfnNextGetInstanceProcAddr;
  PFN_vkGetDeviceProcAddr gdpa = link->u.pLayerInfo->pfnNextGetDeviceProcAddr;
  link->u.pLayerInfo = link->u.pLayerInfo->pNext;
  pthread_mutex_lock(&lock);
  const instance_record *inst = instance_of(physical);
  VkInstance instance = inst ? inst->handle : VK_NULL_HANDLE;
  pthread_mutex_unlock(&lock);
  PFN_vkCreateDevice create =
      (PFN_vkCreateDevice)gipa(instance, "vkCreateDevice");
  if (!create) return VK_ERROR_INITIALIZATION_FAILED;
  VkResult r = create(physical, info, allocator, out);
  if (r != VK_SUCCESS) return r;
  VkDevice dev = *out;
  device_record d = {
      .key = key_of(dev),
      .gdpa = gdpa,
      .destroy = (PFN_vkDestroyDevice)gdpa(dev, "vkDestroyDevice"),
      .begin_cmd = (PFN_vkBeginCommandBuffer)gdpa(dev, "vkBeginCommandBuffer"),
      .end_cmd = (PFN_vkEndCommandBuffer)gdpa(dev, "vkEndCommandBuffer"),
      .cmd_begin = (PFN_vkCmdBeginDebugUtilsLabelEXT)gdpa(
          dev, "vkCmdBeginDebugUtilsLabelEXT"),
      .cmd_end = (PFN_vkCmdEndDebugUtilsLabelEXT)gdpa(
          dev, "vkCmdEndDebugUtilsLabelEXT"),
      .cmd_insert = (PFN_vkCmdInsertDebugUtilsLabelEXT)gdpa(
          dev, "vkCmdInsertDebugUtilsLabelEXT"),
      .queue_begin = (PFN_vkQueueBeginDebugUtilsLabelEXT)gdpa(
          dev, "vkQueueBeginDebugUtilsLabelEXT"),
      .queue_end = (PFN_vkQueueEndDebugUtilsLabelEXT)gdpa(
          dev, "vkQueueEndDebugUtilsLabelEXT"),
      .queue_insert = (PFN_vkQueueInsertDebugUtilsLabelEXT)gdpa(
          dev, "vkQueueInsertDebugUtilsLabelEXT"),
  };
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_DEVICES; i++) {
    if (devices[i].key) continue;
    devices[i] = d;
    break;
  }
  pthread_mutex_unlock(&lock);
  return VK_SUCCESS;
}

static VKAPI_ATTR void VKAPI_CALL
destroy_device(VkDevice device, const VkAllocationCallbacks *allocator) {
  pthread_mutex_lock(&lock);
  device_record *rec = device_of(device);
  device_record r = *rec;
  memset(rec, 0, sizeof *rec);
  /* Its command buffers and queues go with it; their handles may come
   * back as another device's. */
  memset(counts, 0, sizeof counts);
  pthread_mutex_unlock(&lock);
  r.destroy(device, allocator);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
get_device_proc_addr(VkDevice device, const char *name) {
  PFN_vkVoidFunction mine = intercepted_device_call(name);
  if (mine) return mine;
  device_record d = device_copy(device);
  return d.gdpa ? d.gdpa(device, name) : NULL;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
get_instance_proc_addr(VkInstance instance, const char *name);

static PFN_vkVoidFunction intercepted_device_call(const char *name) {
  static const struct {
    const char *name;
    PFN_vkVoidFunction fn;
  } calls[] = {
      {"vkGetDeviceProcAddr", AS_VOID(get_device_proc_addr)},
      {"vkDestroyDevice", AS_VOID(destroy_device)},
      {"vkBeginCommandBuffer", AS_VOID(begin_command_buffer)},
      {"vkEndCommandBuffer", AS_VOID(end_command_buffer)},
      {"vkCmdBeginDebugUtilsLabelEXT", AS_VOID(cmd_begin)},
      {"vkCmdEndDebugUtilsLabelEXT", AS_VOID(cmd_end)},
      {"vkCmdInsertDebugUtilsLabelEXT", AS_VOID(cmd_insert)},
      {"vkQueueBeginDebugUtilsLabelEXT", AS_VOID(queue_begin)},
      {"vkQueueEndDebugUtilsLabelEXT", AS_VOID(queue_end)},
      {"vkQueueInsertDebugUtilsLabelEXT", AS_VOID(queue_insert)},
  };
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
    if (strcmp(name, calls[i].name) == 0) return calls[i].fn;
  return NULL;
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL
get_instance_proc_addr(VkInstance instance, const char *name) {
  if (strcmp(name, "vkGetInstanceProcAddr") == 0)
    return AS_VOID(get_instance_proc_addr);
  if (strcmp(name, "vkCreateInstance") == 0) return AS_VOID(create_instance);
  if (strcmp(name, "vkDestroyInstance") == 0) return AS_VOID(destroy_instance);
  if (strcmp(name, "vkCreateDevice") == 0) return AS_VOID(create_device);
  PFN_vkVoidFunction mine = intercepted_device_call(name);
  if (mine) return mine;
  if (!instance) return NULL;
  pthread_mutex_lock(&lock);
  const instance_record *rec = instance_of(instance);
  PFN_vkGetInstanceProcAddr gipa = rec ? rec->gipa : NULL;
  pthread_mutex_unlock(&lock);
  return gipa ? gipa(instance, name) : NULL;
}

__attribute__((visibility("default"))) VKAPI_ATTR VkResult VKAPI_CALL
vkNegotiateLoaderLayerInterfaceVersion(VkNegotiateLayerInterface *v) {
  if (!v || v->sType != LAYER_NEGOTIATE_INTERFACE_STRUCT ||
      v->loaderLayerInterfaceVersion < 2)
    return VK_ERROR_INITIALIZATION_FAILED;
  v->loaderLayerInterfaceVersion = 2;
  v->pfnGetInstanceProcAddr = get_instance_proc_addr;
  v->pfnGetDeviceProcAddr = get_device_proc_addr;
  v->pfnGetPhysicalDeviceProcAddr = NULL;
  return VK_SUCCESS;
}
