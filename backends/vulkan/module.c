/* Modules: one VkShaderModule per SPIR-V image, each with its reflected
 * entry points; kernels: an entry point with the pipeline layout that its
 * push-constant block needs, and the parameters the core checks launches
 * against.
 *
 * An image is checked before the driver sees it, since a driver may crash
 * on invalid SPIR-V rather than fail: kiln's own structural checks
 * (spirv.c) always, then SPIRV-Tools' validator where it loads
 * (spirv_tools.c), but for images from kiln's cache that a module passed
 * the same validator before (kiln_module's `checked`). A kernel's first pipeline is created when it is looked
 * up, so that what the driver still cannot compile fails there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/vulkan/vulkan.h"

static void destroy_images(kiln_vulkan_context *vc, kiln_vulkan_module *vm) {
  for (size_t i = 0; i < vm->image_count; i++) {
    if (vm->images[i].shader)
      vc->vk.vkDestroyShaderModule(vc->device, vm->images[i].shader, NULL);
    kiln_vulkan_spirv_free(&vm->images[i].info);
  }
  free(vm->images);
  vm->images = NULL;
  vm->image_count = 0;
}

static kiln_status load_image(kiln_vulkan_context *vc,
                              const kiln_module_image *img, size_t index,
                              bool checked, kiln_vulkan_image *out) {
  /* SPIR-V is read as 32-bit words; the caller's bytes need not be
   * aligned for that. */
  uint32_t *copy = NULL;
  const void *words = img->data;
  if ((uintptr_t)img->data % sizeof(uint32_t) != 0) {
    copy = malloc(img->size);
    if (!copy)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "out of host memory loading SPIR-V image %zu",
                            index);
    memcpy(copy, img->data, img->size);
    words = copy;
  }
  kiln_status st =
      kiln_vulkan_spirv_reflect(words, img->size, index, &out->info);
  /* kiln's instance asks for Vulkan 1.2 (device.c), which takes SPIR-V up
   * to 1.5 whatever the device could do beyond it. */
  uint32_t minor = (((const uint32_t *)words)[1] >> 8) & 0xffu;
  if (st == KILN_OK && minor > 5)
    st = kiln_set_error(KILN_ERROR_INVALID_IMAGE,
                        "SPIR-V image %zu is SPIR-V 1.%u; kiln's Vulkan 1.2 "
                        "devices take at most 1.5 (glslang: --target-env "
                        "vulkan1.2)",
                        index, minor);
  /* The validator is most of a cache hit's time (0.2 of 0.34 ms on
   * lavapipe); an image from the cache passed it before it was stored. */
  if (st == KILN_OK && !checked)
    st = kiln_vulkan_spirv_validate(vc, words, img->size / 4, index);
  if (st == KILN_OK)
    st = kiln_vulkan_check_capabilities(vc, words, img->size / 4, index);
  if (st == KILN_OK) {
    VkShaderModuleCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = img->size,
        .pCode = words,
    };
    VkResult r =
        vc->vk.vkCreateShaderModule(vc->device, &info, NULL, &out->shader);
    if (r != VK_SUCCESS) {
      out->shader = VK_NULL_HANDLE;
      st = kiln_vulkan_error_as(r, KILN_ERROR_INVALID_IMAGE,
                                "vkCreateShaderModule of SPIR-V image %zu",
                                index);
    }
  }
  free(copy);
  return st;
}

kiln_status kiln_vulkan_module_init(kiln_module *m,
                                    const kiln_module_image *images,
                                    size_t count) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(m->base.context);
  kiln_vulkan_module *vm = kiln_vulkan_module_cast(m);
  vm->images = calloc(count, sizeof *vm->images);
  if (!vm->images)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "out of host memory creating a module");
  vm->image_count = count;
  for (size_t i = 0; i < count; i++) {
    kiln_status st = load_image(vc, &images[i], i, m->checked && m->checked[i],
                                &vm->images[i]);
    if (st != KILN_OK) {
      destroy_images(vc, vm);
      return st;
    }
  }
  return KILN_OK;
}

void kiln_vulkan_module_deinit(kiln_module *m) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(m->base.context);
  destroy_images(vc, kiln_vulkan_module_cast(m));
}

/* "a, b, c": the module's kernels, for a NOT_FOUND message. */
static void list_kernels(const kiln_vulkan_module *vm, char *buf, size_t size) {
  buf[0] = '\0';
  size_t len = 0;
  for (size_t i = 0; i < vm->image_count; i++) {
    const kiln_vulkan_spirv_info *info = &vm->images[i].info;
    for (size_t j = 0; j < info->entry_point_count && len < size; j++) {
      int n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
                       info->entry_points[j].name);
      if (n < 0) return;
      len += (size_t)n;
    }
  }
}

kiln_status kiln_vulkan_kernel_init(kiln_kernel *k) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(k->base.context);
  kiln_vulkan_module *vm = kiln_vulkan_module_cast(k->module);
  kiln_vulkan_kernel *vk = kiln_vulkan_kernel_cast(k);
  /* The first image that has the name wins, as images are searched in the
   * caller's order. */
  for (size_t i = 0; i < vm->image_count && !vk->entry; i++) {
    const kiln_vulkan_spirv_info *info = &vm->images[i].info;
    for (size_t j = 0; j < info->entry_point_count; j++) {
      if (strcmp(info->entry_points[j].name, k->name) == 0) {
        vk->entry = &info->entry_points[j];
        vk->shader = vm->images[i].shader;
        vk->info = info;
        break;
      }
    }
  }
  if (!vk->entry) {
    char names[1024];
    list_kernels(vm, names, sizeof names);
    return kiln_set_error(KILN_ERROR_NOT_FOUND,
                          "the module has no kernel named '%s'; its kernels "
                          "are: %s",
                          k->name, names);
  }
  uint32_t bytes = vk->entry->push_constant_bytes;
  uint32_t limit = vc->phys->limits.maxPushConstantsSize;
  if (bytes > limit)
    return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                          "kernel '%s' takes %u bytes of arguments (its "
                          "push-constant block), more than the %u this "
                          "Vulkan device allows",
                          k->name, bytes, limit);
  vk->push_bytes = (bytes + 3u) & ~3u;
  VkPushConstantRange range = {
      .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
      .offset = 0,
      .size = vk->push_bytes,
  };
  VkPipelineLayoutCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .pushConstantRangeCount = bytes ? 1 : 0,
      .pPushConstantRanges = bytes ? &range : NULL,
  };
  size_t count = vk->entry->param_count;
  if (count != KILN_PARAMS_UNKNOWN && count > 0) {
    k->params = malloc(count * sizeof *k->params);
    if (!k->params)
      return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                            "out of host memory for kernel '%s'", k->name);
    memcpy(k->params, vk->entry->params, count * sizeof *k->params);
  }
  VkResult r =
      vc->vk.vkCreatePipelineLayout(vc->device, &info, NULL, &vk->layout);
  if (r != VK_SUCCESS) return kiln_vulkan_error(r, "vkCreatePipelineLayout");
  if (pthread_mutex_init(&vk->lock, NULL) != 0) {
    vc->vk.vkDestroyPipelineLayout(vc->device, vk->layout, NULL);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "pthread_mutex_init failed for a kernel");
  }
  kiln_status st = kiln_vulkan_kernel_precompile(vc, vk);
  if (st != KILN_OK) {
    for (size_t i = 0; i < vk->pipeline_count; i++)
      vc->vk.vkDestroyPipeline(vc->device, vk->pipelines[i].handle, NULL);
    free(vk->pipelines);
    vc->vk.vkDestroyPipelineLayout(vc->device, vk->layout, NULL);
    pthread_mutex_destroy(&vk->lock);
    return st;
  }
  k->arg_bytes = bytes;
  k->param_count = count;
  return KILN_OK;
}

void kiln_vulkan_kernel_deinit(kiln_kernel *k) {
  kiln_vulkan_context *vc = kiln_vulkan_context_cast(k->base.context);
  kiln_vulkan_kernel *vk = kiln_vulkan_kernel_cast(k);
  /* Recorded launches may still use the pipelines; kept batches that name
   * them are not submitted again (solo.c). */
  kiln_vulkan_quiesce_for_deinit(vc, "destroying a kernel's pipelines");
  atomic_fetch_add(&vc->pipeline_epoch, 1);
  for (size_t i = 0; i < vk->pipeline_count; i++)
    vc->vk.vkDestroyPipeline(vc->device, vk->pipelines[i].handle, NULL);
  free(vk->pipelines);
  vc->vk.vkDestroyPipelineLayout(vc->device, vk->layout, NULL);
  pthread_mutex_destroy(&vk->lock);
}
