/*
 * The Vulkan entry points the backend uses, by level: X(name) for each.
 * Global ones come from vkGetInstanceProcAddr(NULL, ...), instance ones from
 * vkGetInstanceProcAddr(instance, ...), device ones from vkGetDeviceProcAddr
 * into a table per VkDevice (skipping the loader's dispatch trampoline on
 * the hot recording path).
 */
#ifndef KILN_VULKAN_SYMBOLS_H
#define KILN_VULKAN_SYMBOLS_H

#define KILN_VULKAN_GLOBAL_SYMBOLS(X)       \
  X(vkCreateInstance)                       \
  X(vkEnumerateInstanceExtensionProperties) \
  X(vkEnumerateInstanceLayerProperties)

#define KILN_VULKAN_INSTANCE_SYMBOLS(X)       \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceMemoryProperties2)     \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

#define KILN_VULKAN_DEVICE_SYMBOLS(X) \
  X(vkDestroyDevice)                  \
  X(vkGetDeviceQueue)                 \
  X(vkDeviceWaitIdle)                 \
  X(vkQueueSubmit)                    \
  X(vkQueueWaitIdle)                  \
  X(vkAllocateMemory)                 \
  X(vkFreeMemory)                     \
  X(vkMapMemory)                      \
  X(vkCreateBuffer)                   \
  X(vkDestroyBuffer)                  \
  X(vkGetBufferMemoryRequirements)    \
  X(vkBindBufferMemory)               \
  X(vkGetBufferDeviceAddress)         \
  X(vkCreateShaderModule)             \
  X(vkDestroyShaderModule)            \
  X(vkCreatePipelineCache)            \
  X(vkDestroyPipelineCache)           \
  X(vkGetPipelineCacheData)           \
  X(vkCreatePipelineLayout)           \
  X(vkDestroyPipelineLayout)          \
  X(vkCreateComputePipelines)         \
  X(vkDestroyPipeline)                \
  X(vkCreateCommandPool)              \
  X(vkDestroyCommandPool)             \
  X(vkAllocateCommandBuffers)         \
  X(vkFreeCommandBuffers)             \
  X(vkBeginCommandBuffer)             \
  X(vkEndCommandBuffer)               \
  X(vkResetCommandBuffer)             \
  X(vkCmdPipelineBarrier)             \
  X(vkCmdBindPipeline)                \
  X(vkCmdPushConstants)               \
  X(vkCmdDispatch)                    \
  X(vkCmdCopyBuffer)                  \
  X(vkCmdFillBuffer)                  \
  X(vkCmdWriteTimestamp)              \
  X(vkCmdResetQueryPool)              \
  X(vkCreateSemaphore)                \
  X(vkDestroySemaphore)               \
  X(vkWaitSemaphores)                 \
  X(vkGetSemaphoreCounterValue)       \
  X(vkCreateQueryPool)                \
  X(vkDestroyQueryPool)               \
  X(vkGetQueryPoolResults)

#endif /* KILN_VULKAN_SYMBOLS_H */
