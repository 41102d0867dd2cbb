/* The optional device features user kernels ask for: what the device
 * offers (probe, when devices are listed), what kiln_device_properties
 * reports of it, and the extensions and feature structs that enable it
 * when a context creates its VkDevice. kiln's instance is Vulkan 1.2, so
 * the features that 1.3 made core come through their extensions, which
 * drivers of 1.3 devices still list. */
#include <string.h>

#include "backends/vulkan/vulkan.h"

/* VK_KHR_cooperative_matrix, which the Vulkan headers kiln builds with
 * (1.3.239, Debian 12) predate: its structures as the registry defines
 * them. */
#define KHR_COOPMAT_NAME "VK_KHR_cooperative_matrix"
#define KHR_COOPMAT_FEATURES ((VkStructureType)1000506000)
#define KHR_COOPMAT_PROPERTIES ((VkStructureType)1000506001)
/* The first validation layer that knows the extension's structures. */
#define KHR_COOPMAT_LAYER_VERSION VK_MAKE_API_VERSION(0, 1, 3, 255)
typedef struct khr_coopmat_properties {
  VkStructureType sType;
  void *pNext;
  uint32_t MSize, NSize, KSize;
  int32_t AType, BType, CType, ResultType; /* VkComponentTypeKHR */
  VkBool32 saturatingAccumulation;
  int32_t scope; /* VkScopeKHR */
} khr_coopmat_properties;
typedef VkResult (*khr_coopmat_query)(VkPhysicalDevice, uint32_t *,
                                      khr_coopmat_properties *);

/* VK_KHR_shader_bfloat16 (Vulkan 1.4.311), likewise. */
#define KHR_BF16_NAME "VK_KHR_shader_bfloat16"
#define KHR_BF16_FEATURES ((VkStructureType)1000141000)
#define KHR_BF16_LAYER_VERSION VK_MAKE_API_VERSION(0, 1, 4, 311)

static bool has(const VkExtensionProperties *exts, uint32_t count,
                const char *name) {
  for (uint32_t i = 0; i < count; i++)
    if (strcmp(exts[i].extensionName, name) == 0) return true;
  return false;
}

void kiln_vulkan_optional_probe(VkPhysicalDevice dev,
                                const VkExtensionProperties *exts,
                                uint32_t count, uint32_t layer,
                                kiln_vulkan_optional *out) {
  memset(out, 0, sizeof *out);
  out->atomic.sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT;
  out->subgroup.sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT;
  out->dot.sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR;
  out->coopmat_khr.sType = KHR_COOPMAT_FEATURES;
  out->coopmat_nv.sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  out->bf16.sType = KHR_BF16_FEATURES;
  /* Each struct is asked for only where its extension is listed. */
  void *chain = NULL;
#define ASK(flag, ext, field)                                                  \
  if (has(exts, count, ext)) {                                                 \
    out->flag = true;                                                          \
    out->field.pNext = chain;                                                  \
    chain = &out->field;                                                       \
  }
  ASK(has_atomic, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME, atomic)
  ASK(has_subgroup, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME, subgroup)
  ASK(has_dot, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME, dot)
  /* A validation layer older than the extension (Debian 12's is 1.3.239)
   * rejects its feature struct in vkCreateDevice as an unknown sType: a
   * validated context goes without it rather than fail every check. */
  if (layer && layer < KHR_COOPMAT_LAYER_VERSION) {
    if (has(exts, count, KHR_COOPMAT_NAME))
      kiln_log(KILN_LOG_INFO,
               "%s left off: the validation layer (%u.%u.%u) predates it",
               KHR_COOPMAT_NAME, VK_API_VERSION_MAJOR(layer),
               VK_API_VERSION_MINOR(layer), VK_API_VERSION_PATCH(layer));
  } else {
    ASK(has_coopmat_khr, KHR_COOPMAT_NAME, coopmat_khr)
  }
  ASK(has_coopmat_nv, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME, coopmat_nv)
  if (layer && layer < KHR_BF16_LAYER_VERSION) {
    if (has(exts, count, KHR_BF16_NAME))
      kiln_log(KILN_LOG_INFO,
               "%s left off: the validation layer (%u.%u.%u) predates it",
               KHR_BF16_NAME, VK_API_VERSION_MAJOR(layer),
               VK_API_VERSION_MINOR(layer), VK_API_VERSION_PATCH(layer));
  } else {
    ASK(has_bf16, KHR_BF16_NAME, bf16)
  }
#undef ASK
  if (!chain) return;
  VkPhysicalDeviceFeatures2 f = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = chain};
  kiln_vulkan_lib.vkGetPhysicalDeviceFeatures2(dev, &f);
  /* An extension whose feature is off brings nothing to enable. */
  /* Buffers and shared memory are what compute kernels use; the image and
   * sparse atomics would bring requirements of their own. */
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT *a = &out->atomic;
  a->shaderImageFloat32Atomics = a->shaderImageFloat32AtomicAdd = VK_FALSE;
  a->sparseImageFloat32Atomics = a->sparseImageFloat32AtomicAdd = VK_FALSE;
  out->has_atomic = out->has_atomic &&
                    (a->shaderBufferFloat32Atomics || a->shaderBufferFloat64Atomics ||
                     a->shaderSharedFloat32Atomics || a->shaderSharedFloat64Atomics);
  out->has_subgroup = out->has_subgroup && out->subgroup.subgroupSizeControl;
  out->has_dot = out->has_dot && out->dot.shaderIntegerDotProduct;
  out->has_coopmat_khr =
      out->has_coopmat_khr && out->coopmat_khr.cooperativeMatrix;
  out->has_coopmat_nv = out->has_coopmat_nv && out->coopmat_nv.cooperativeMatrix;
  /* Cooperative matrices of bfloat16 would need VK_KHR_cooperative_matrix
   * enabled beside it, which a context may go without. */
  out->bf16.shaderBFloat16CooperativeMatrix = VK_FALSE;
  out->has_bf16 = out->has_bf16 && out->bf16.shaderBFloat16Type;
}

static kiln_matrix_type matrix_type(int32_t component) {
  switch (component) { /* VkComponentTypeKHR, the NV values too */
  case 0: return KILN_MATRIX_F16;
  case 1: return KILN_MATRIX_F32;
  case 2: return KILN_MATRIX_F64;
  case 3: return KILN_MATRIX_S8;
  case 5: return KILN_MATRIX_S32;
  case 7: return KILN_MATRIX_U8;
  case 9: return KILN_MATRIX_U32;
  case 1000141000: return KILN_MATRIX_BF16; /* VK_COMPONENT_TYPE_BFLOAT16_KHR */
  default: return KILN_MATRIX_OTHER;
  }
}

static void add_shape(kiln_device_properties *kp, uint32_t m, uint32_t n,
                      uint32_t k, int32_t a, int32_t b, int32_t c,
                      int32_t result) {
  if (kp->matrix_shape_count >= KILN_MAX_MATRIX_SHAPES) return;
  kp->matrix_shapes[kp->matrix_shape_count++] = (kiln_matrix_shape){
      m, n, k, matrix_type(a), matrix_type(b), matrix_type(c),
      matrix_type(result)};
}

/* The subgroup-scope shapes the driver lists, KHR's where it has both. */
static void matrix_shapes(VkInstance instance, VkPhysicalDevice dev,
                          const kiln_vulkan_optional *o,
                          kiln_device_properties *kp) {
  enum { MOST = 64, SUBGROUP = 3 /* VK_SCOPE_SUBGROUP_KHR */ };
  uint32_t count = MOST;
  if (o->has_coopmat_khr) {
    PFN_vkVoidFunction fn = kiln_vulkan_lib.vkGetInstanceProcAddr(
        instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    khr_coopmat_query query;
    memcpy(&query, &fn, sizeof query);
    khr_coopmat_properties props[MOST];
    for (uint32_t i = 0; i < MOST; i++)
      props[i] = (khr_coopmat_properties){.sType = KHR_COOPMAT_PROPERTIES};
    if (fn && query(dev, &count, props) >= 0)
      for (uint32_t i = 0; i < count && i < MOST; i++)
        if (props[i].scope == SUBGROUP)
          add_shape(kp, props[i].MSize, props[i].NSize, props[i].KSize,
                    props[i].AType, props[i].BType, props[i].CType,
                    props[i].ResultType);
    return;
  }
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV query;
  PFN_vkVoidFunction fn = kiln_vulkan_lib.vkGetInstanceProcAddr(
      instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
  memcpy(&query, &fn, sizeof query);
  VkCooperativeMatrixPropertiesNV props[MOST];
  for (uint32_t i = 0; i < MOST; i++)
    props[i] = (VkCooperativeMatrixPropertiesNV){
        .sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV};
  if (fn && query(dev, &count, props) >= 0)
    for (uint32_t i = 0; i < count && i < MOST; i++)
      if ((int32_t)props[i].scope == SUBGROUP)
        add_shape(kp, props[i].MSize, props[i].NSize, props[i].KSize,
                  props[i].AType, props[i].BType, props[i].CType,
                  props[i].DType);
}

void kiln_vulkan_optional_report(VkInstance instance,
                                 const kiln_vulkan_physical *p,
                                 kiln_device_properties *kp) {
  const kiln_vulkan_optional *o = &p->optional;
  const VkPhysicalDeviceVulkan11Features *f11 = &p->features11;
  const VkPhysicalDeviceVulkan12Features *f12 = &p->features12;
  uint32_t features = 0;
  if (f12->shaderFloat16 && f11->storageBuffer16BitAccess)
    features |= KILN_FEATURE_FLOAT16;
  if (p->features.features.shaderFloat64) features |= KILN_FEATURE_FLOAT64;
  if (f12->shaderInt8 && f12->storageBuffer8BitAccess)
    features |= KILN_FEATURE_INT8;
  if (o->has_dot) features |= KILN_FEATURE_INT8_DOT_PRODUCT;
  if (o->has_atomic && o->atomic.shaderBufferFloat32AtomicAdd)
    features |= KILN_FEATURE_FLOAT32_ATOMIC_ADD;
  if (o->has_atomic && o->atomic.shaderBufferFloat64AtomicAdd)
    features |= KILN_FEATURE_FLOAT64_ATOMIC_ADD;
  if (o->has_bf16) features |= KILN_FEATURE_BFLOAT16;
  kp->min_subgroup_size = kp->max_subgroup_size = kp->subgroup_size;
  if (o->has_subgroup) {
    VkPhysicalDeviceSubgroupSizeControlPropertiesEXT range = {
        .sType =
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES_EXT};
    VkPhysicalDeviceProperties2 props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        .pNext = &range};
    kiln_vulkan_lib.vkGetPhysicalDeviceProperties2(p->handle, &props);
    if (range.minSubgroupSize && range.maxSubgroupSize &&
        (range.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT)) {
      features |= KILN_FEATURE_SUBGROUP_SIZE_CONTROL;
      kp->min_subgroup_size = range.minSubgroupSize;
      kp->max_subgroup_size = range.maxSubgroupSize;
    }
  }
  kp->matrix_shape_count = 0;
  if (o->has_coopmat_khr || o->has_coopmat_nv) {
    matrix_shapes(instance, p->handle, o, kp);
    if (kp->matrix_shape_count) features |= KILN_FEATURE_COOPERATIVE_MATRIX;
  }
  kp->features = features;
}

void kiln_vulkan_optional_take(kiln_vulkan_optional *out, const void *chain) {
  memset(out, 0, sizeof *out);
  for (const VkBaseInStructure *s = chain; s; s = s->pNext) {
    const void *v = s;
    if (s->sType ==
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT) {
      out->atomic = *(const VkPhysicalDeviceShaderAtomicFloatFeaturesEXT *)v;
      out->has_atomic = true;
    } else if (s->sType ==
               VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES_EXT) {
      out->subgroup = *(const VkPhysicalDeviceSubgroupSizeControlFeaturesEXT *)v;
      out->has_subgroup = out->subgroup.subgroupSizeControl;
    } else if (s->sType ==
               VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES_KHR) {
      out->dot = *(const VkPhysicalDeviceShaderIntegerDotProductFeaturesKHR *)v;
      out->has_dot = out->dot.shaderIntegerDotProduct;
    } else if (s->sType == KHR_COOPMAT_FEATURES) {
      out->coopmat_khr = *(const kiln_vulkan_coopmat_features *)v;
      out->has_coopmat_khr = out->coopmat_khr.cooperativeMatrix;
    } else if (s->sType ==
               VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV) {
      out->coopmat_nv = *(const VkPhysicalDeviceCooperativeMatrixFeaturesNV *)v;
      out->has_coopmat_nv = out->coopmat_nv.cooperativeMatrix;
    } else if (s->sType == KHR_BF16_FEATURES) {
      out->bf16 = *(const kiln_vulkan_bf16_features *)v;
      out->has_bf16 = out->bf16.shaderBFloat16Type;
    }
  }
}

uint32_t kiln_vulkan_optional_enable(const kiln_vulkan_optional *offered,
                                     kiln_vulkan_optional *enabled,
                                     const char **names, void **chain) {
  *enabled = *offered;
  uint32_t count = 0;
#define ENABLE(flag, ext, field)                                               \
  if (enabled->flag) {                                                         \
    names[count++] = ext;                                                      \
    enabled->field.pNext = *chain;                                             \
    *chain = &enabled->field;                                                  \
  }
  ENABLE(has_atomic, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME, atomic)
  ENABLE(has_subgroup, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME, subgroup)
  ENABLE(has_dot, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME, dot)
  ENABLE(has_coopmat_khr, KHR_COOPMAT_NAME, coopmat_khr)
  ENABLE(has_coopmat_nv, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME, coopmat_nv)
  ENABLE(has_bf16, KHR_BF16_NAME, bf16)
#undef ENABLE
  return count;
}

/* The capabilities a kernel may declare that rest on a feature the device
 * may lack: vkCreateShaderModule takes them only where it was enabled
 * (VUID-VkShaderModuleCreateInfo-pCode-08740), and drivers do not all
 * refuse the rest cleanly. */
static bool capability_enabled(const kiln_vulkan_context *vc,
                               uint32_t capability, const char **feature) {
  const VkPhysicalDeviceFeatures *f = &vc->enabled.features;
  const VkPhysicalDeviceVulkan11Features *f11 = &vc->enabled11;
  const VkPhysicalDeviceVulkan12Features *f12 = &vc->enabled12;
  const kiln_vulkan_optional *o = &vc->enabled_optional;
  switch (capability) {
  case 9: *feature = "Float16 (shaderFloat16)"; return f12->shaderFloat16;
  case 10: *feature = "Float64 (shaderFloat64)"; return f->shaderFloat64;
  case 12:
    *feature = "Int64Atomics (shaderBufferInt64Atomics)";
    return f12->shaderBufferInt64Atomics || f12->shaderSharedInt64Atomics;
  case 22: *feature = "Int16 (shaderInt16)"; return f->shaderInt16;
  case 39: *feature = "Int8 (shaderInt8)"; return f12->shaderInt8;
  case 4433:
    *feature = "StorageBuffer16BitAccess (storageBuffer16BitAccess)";
    return f11->storageBuffer16BitAccess;
  case 4448:
    *feature = "StorageBuffer8BitAccess (storageBuffer8BitAccess)";
    return f12->storageBuffer8BitAccess;
  case 5357:
    *feature = "CooperativeMatrixNV (VK_NV_cooperative_matrix)";
    return o->has_coopmat_nv;
  case 6016:
  case 6017:
  case 6018:
  case 6019:
    *feature = "DotProduct (VK_KHR_shader_integer_dot_product)";
    return o->has_dot;
  case 6022:
    *feature = "CooperativeMatrixKHR (VK_KHR_cooperative_matrix)";
    return o->has_coopmat_khr;
  case 5116:
    *feature = "BFloat16TypeKHR (VK_KHR_shader_bfloat16)";
    return o->has_bf16;
  case 5117:
    *feature = "BFloat16DotProductKHR (VK_KHR_shader_bfloat16)";
    return o->has_bf16 && o->bf16.shaderBFloat16DotProduct;
  case 5118:
    *feature = "BFloat16CooperativeMatrixKHR (VK_KHR_shader_bfloat16)";
    return false;
  case 61: /* GroupNonUniform ... GroupNonUniformQuad */
  case 62:
  case 63:
  case 64:
  case 65:
  case 66:
  case 67:
  case 68: {
    static const char *const names[] = {
        "GroupNonUniform (subgroup basic operations)",
        "GroupNonUniformVote (subgroup vote operations)",
        "GroupNonUniformArithmetic (subgroup arithmetic operations)",
        "GroupNonUniformBallot (subgroup ballot operations)",
        "GroupNonUniformShuffle (subgroup shuffles)",
        "GroupNonUniformShuffleRelative (subgroup relative shuffles)",
        "GroupNonUniformClustered (subgroup clustered operations)",
        "GroupNonUniformQuad (subgroup quad operations)"};
    /* The capabilities follow VkSubgroupFeatureFlagBits' order. */
    *feature = names[capability - 61];
    return vc->phys->subgroup_operations & (1u << (capability - 61));
  }
  case 6033:
    *feature = "AtomicFloat32AddEXT (VK_EXT_shader_atomic_float)";
    return o->has_atomic && (o->atomic.shaderBufferFloat32AtomicAdd ||
                             o->atomic.shaderSharedFloat32AtomicAdd);
  case 6034:
    *feature = "AtomicFloat64AddEXT (VK_EXT_shader_atomic_float)";
    return o->has_atomic && (o->atomic.shaderBufferFloat64AtomicAdd ||
                             o->atomic.shaderSharedFloat64AtomicAdd);
  default: return true;
  }
}

/* SPV_KHR_non_semantic_info (GLSL's debugPrintfEXT declares it) is the
 * SPIR-V extension a device must enable something for
 * (VUID-VkShaderModuleCreateInfo-pCode-04147) that kiln may not have:
 * refused where vc's device cannot take it, and noted where the layer's
 * printf is off, so that the text going nowhere is no surprise. */
static kiln_status check_extension(const kiln_vulkan_context *vc,
                                   const char *name, size_t index) {
  if (strcmp(name, "SPV_KHR_non_semantic_info") != 0) return KILN_OK;
  if (!vc->non_semantic)
    return kiln_set_error(
        KILN_ERROR_UNSUPPORTED,
        "SPIR-V image %zu declares extension %s, which needs %s", index, name,
        vc->phys != &vc->imported_phys
            ? "VK_KHR_shader_non_semantic_info, which this device does not "
              "offer, or Vulkan 1.3 on the device and the instance, which "
              "kiln asks for under KILN_VULKAN_VALIDATION=printf only "
              "(GLSL's debugPrintfEXT declares it)"
            : "VK_KHR_shader_non_semantic_info, which kiln cannot tell was "
              "enabled on a VkDevice it was given, or Vulkan 1.3 on that "
              "device and its instance (GLSL's debugPrintfEXT declares it)");
  if (!kiln_vulkan_printf_on())
    kiln_log(KILN_LOG_INFO,
             "vulkan: SPIR-V image %zu declares %s (debugPrintfEXT, or "
             "debug information): what it prints is shown only under "
             "KILN_VULKAN_VALIDATION=printf",
             index, name);
  return KILN_OK;
}

kiln_status kiln_vulkan_check_capabilities(const kiln_vulkan_context *vc,
                                           const uint32_t *words, size_t count,
                                           size_t index) {
  enum { HEADER = 5, OP_CAPABILITY_ = 17, OP_EXTENSION_ = 10 };
  /* The capabilities come first, the extensions after them; the image's
   * structure was checked before (kiln_vulkan_spirv_reflect). */
  for (size_t at = HEADER; at < count;) {
    const uint32_t op = words[at] & 0xffffu, n = words[at] >> 16;
    if (n == 0 || n > count - at) break;
    if (op != OP_CAPABILITY_ && op != OP_EXTENSION_) break;
    const char *feature = NULL;
    if (op == OP_CAPABILITY_ && n > 1 &&
        !capability_enabled(vc, words[at + 1], &feature))
      return kiln_set_error(
          KILN_ERROR_UNSUPPORTED,
          "SPIR-V image %zu declares capability %s, which %s does not "
          "offer (or kiln could not enable): kiln_device_properties' "
          "features say what the device has",
          index, feature, vc->phys->properties.name);
    if (op == OP_EXTENSION_ && n > 1) {
      /* A literal string, nul-terminated within the instruction's words
       * (the reflection checked the instruction's length). */
      char name[64];
      const size_t bytes = (n - 1) * 4 < sizeof name ? (n - 1) * 4
                                                     : sizeof name - 1;
      memcpy(name, &words[at + 1], bytes);
      name[bytes] = '\0';
      const kiln_status st = check_extension(vc, name, index);
      if (st != KILN_OK) return st;
    }
    at += n;
  }
  return KILN_OK;
}
