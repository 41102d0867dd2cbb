/* Native handles in and out (kiln.h, "Native handles"): export and import
 * round trips on every backend, a wrapped allocation used by kiln_launch,
 * the borrowed lifetime, and on Vulkan a raw vkCmdCopyBuffer on exported
 * handles ordered between two kiln launches through the exported timeline
 * semaphore and kiln_stream_wait_native. */
#include <stdio.h>

#include "conformance.h"

#if CONF_VULKAN_HEADERS
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#endif

enum { N = 1024 };

static void add_u32(kiln_stream *s, kiln_buffer *buf, size_t offset,
                    uint32_t n, uint32_t value) {
  const kiln_launch_config c = kiln_launch_config_1d(n, 64);
  const kiln_arg args[3] = {kiln_arg_buffer(buf, offset), kiln_arg_u32(n),
                            kiln_arg_u32(value)};
  check_ok(kiln_launch(s, conf_kernel("conf_add_u32"), &c, args, 3));
}

static void export_handles(void **state) {
  (void)state;
  kiln_native_context nc;
  check_ok(kiln_context_get_native(conf.ctx, &nc));
  assert_int_equal(nc.backend, conf.backend);
  switch (conf.backend) {
  case KILN_BACKEND_CUDA:
    assert_non_null(nc.cuda_context);
    break;
  case KILN_BACKEND_VULKAN:
    assert_non_null(nc.vk_instance);
    assert_non_null(nc.vk_physical_device);
    assert_non_null(nc.vk_device);
    assert_non_null(nc.vk_queue);
    assert_non_null(nc.vk_get_instance_proc_addr);
    break;
  default:
    break;
  }
  kiln_buffer *buf;
  check_ok(kiln_buffer_create(conf.ctx, 4 * N, 0, &buf));
  kiln_native_buffer nb;
  check_ok(kiln_buffer_get_native(buf, &nb));
  assert_int_equal(nb.backend, conf.backend);
  assert_int_equal(nb.size, 4 * N);
  assert_true(nb.device_address != 0);
  if (conf.backend == KILN_BACKEND_VULKAN) assert_true(nb.vk_buffer != 0);
  kiln_stream *s;
  check_ok(kiln_stream_create(conf.ctx, &s));
  kiln_native_stream ns;
  check_ok(kiln_stream_get_native(s, &ns));
  assert_int_equal(ns.backend, conf.backend);
  if (conf.backend == KILN_BACKEND_VULKAN) {
    assert_non_null(ns.vk_queue);
    assert_true(ns.vk_semaphore != 0);
    assert_int_equal(ns.vk_queue_family, nc.vk_queue_family);
  } else {
    assert_non_null(ns.stream);
  }
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(buf));
}

/* A sub-range of a kiln buffer, wrapped as a borrowed buffer: kernels and
 * transfers through it reach the same bytes, and destroying it leaves the
 * memory to its owner. */
static void import_borrowed(void **state) {
  (void)state;
  uint32_t data[N], got[N];
  for (uint32_t i = 0; i < N; i++) data[i] = i * 2654435761u;
  kiln_buffer *owner;
  check_ok(kiln_buffer_create(conf.ctx, 4 * N, KILN_BUFFER_ZERO, &owner));
  kiln_native_buffer nb;
  check_ok(kiln_buffer_get_native(owner, &nb));
  const size_t at = 256; /* bytes */
  kiln_native_buffer part = nb;
  part.device_address += at;
  part.vk_offset += at;
  part.size = 4 * N - 2 * at;
  kiln_buffer *view;
  check_ok(kiln_buffer_create_from_native(conf.ctx, &part, 0, &view));
  assert_int_equal(kiln_buffer_size(view), part.size);
  kiln_native_buffer back;
  check_ok(kiln_buffer_get_native(view, &back));
  assert_true(back.device_address == part.device_address);
  const uint32_t n = (uint32_t)(part.size / 4);
  check_ok(kiln_buffer_write(NULL, view, 0, data, part.size));
  add_u32(NULL, view, 0, n, 3);
  check_ok(kiln_buffer_read(NULL, owner, 0, got, sizeof got));
  for (uint32_t i = 0; i < N; i++) {
    const bool in = i >= at / 4 && i < at / 4 + n;
    const uint32_t want = in ? data[i - at / 4] + 3 : 0;
    if (got[i] != want)
      fail_msg("word %u: 0x%08x, want 0x%08x (%s the wrapped range)", i,
               got[i], want, in ? "inside" : "outside");
  }
  check_ok(kiln_buffer_destroy(view));
  /* Borrowed: the owner's memory is still there and still kiln's. */
  add_u32(NULL, owner, 0, N, 1);
  uint32_t again[N];
  check_ok(kiln_buffer_read(NULL, owner, 0, again, sizeof again));
  for (uint32_t i = 0; i < N; i++)
    if (again[i] != got[i] + 1)
      fail_msg("word %u after destroying the borrowed view: 0x%08x, want "
               "0x%08x",
               i, again[i], got[i] + 1);
  check_ok(kiln_buffer_destroy(owner));
}

/* Runs add_u32 in `ctx` on N words and checks the result: the context
 * works, kernels and memory included. */
static void check_context_works(kiln_context *ctx, uint32_t add) {
  uint32_t data[N], got[N];
  for (uint32_t i = 0; i < N; i++) data[i] = i * 7919u;
  /* The one image it needs: a device of the application's may lack the
   * features other test kernels declare (conf_scalars' Float64). */
  size_t count;
  const kiln_module_image *images =
      conf_images_with(ctx, "conf_add_u32", &count);
  kiln_module *m;
  check_ok(kiln_module_create(ctx, images, count, &m));
  kiln_kernel *k;
  check_ok(kiln_module_get_kernel(m, "conf_add_u32", &k));
  kiln_buffer *buf;
  check_ok(kiln_buffer_create(ctx, sizeof data, 0, &buf));
  check_ok(kiln_buffer_write(NULL, buf, 0, data, sizeof data));
  const kiln_launch_config c = kiln_launch_config_1d(N, 64);
  const kiln_arg args[3] = {kiln_arg_buffer(buf, 0), kiln_arg_u32(N),
                            kiln_arg_u32(add)};
  check_ok(kiln_launch(NULL, k, &c, args, 3));
  check_ok(kiln_buffer_read(NULL, buf, 0, got, sizeof got));
  for (uint32_t i = 0; i < N; i++)
    if (got[i] != data[i] + add)
      fail_msg("word %u: 0x%08x, want 0x%08x", i, got[i], data[i] + add);
  check_ok(kiln_buffer_destroy(buf));
  check_ok(kiln_module_destroy(m));
}

/* conf.ctx's native handles opened as a second, borrowed kiln context: it
 * works, and destroying it leaves conf.ctx's device (CUcontext, VkDevice)
 * alive and working. */
static void import_context(void **state) {
  (void)state;
  kiln_native_context nc;
  check_ok(kiln_context_get_native(conf.ctx, &nc));
  kiln_context *ctx;
  check_ok(kiln_context_create_from_native(&nc, 0, &ctx));
  assert_int_equal(kiln_context_backend(ctx), conf.backend);
  kiln_device_properties props;
  check_ok(kiln_context_get_properties(ctx, &props));
  assert_string_equal(props.name, conf.props.name);
  kiln_native_context again;
  check_ok(kiln_context_get_native(ctx, &again));
  assert_ptr_equal(again.vk_device, nc.vk_device);
  assert_ptr_equal(again.cuda_context, nc.cuda_context);
  assert_int_equal(again.hip_device, nc.hip_device);
  check_context_works(ctx, 4);
  check_ok(kiln_context_destroy(ctx));
  check_context_works(conf.ctx, 6);
  /* Neither a CUDA context nor a HIP device is kiln's to own. */
  if (conf.backend != KILN_BACKEND_VULKAN) {
    kiln_context *adopted = NULL;
    check_fails(kiln_context_create_from_native(&nc, KILN_NATIVE_ADOPT,
                                                &adopted),
                KILN_ERROR_INVALID_ARGUMENT);
    assert_null(adopted);
  }
}

/* A kiln stream's native stream (Vulkan: its queue) wrapped as a second,
 * borrowed kiln stream: work on the two is ordered through the native
 * stream, and destroying the wrapper leaves the original working. */
static void import_stream(void **state) {
  (void)state;
  uint32_t data[N], got[N];
  for (uint32_t i = 0; i < N; i++) data[i] = i ^ 0x5a5a5a5au;
  kiln_stream *owner, *wrapped;
  check_ok(kiln_stream_create(conf.ctx, &owner));
  kiln_native_stream ns;
  check_ok(kiln_stream_get_native(owner, &ns));
  check_ok(kiln_stream_create_from_native(conf.ctx, &ns, 0, &wrapped));
  kiln_native_stream back;
  check_ok(kiln_stream_get_native(wrapped, &back));
  if (conf.backend == KILN_BACKEND_VULKAN)
    assert_ptr_equal(back.vk_queue, ns.vk_queue);
  else
    assert_ptr_equal(back.stream, ns.stream);
  kiln_buffer *buf;
  check_ok(kiln_buffer_create(conf.ctx, sizeof data, 0, &buf));
  check_ok(kiln_buffer_write(wrapped, buf, 0, data, sizeof data));
  add_u32(wrapped, buf, 0, N, 9);
  check_ok(kiln_stream_synchronize(wrapped));
  check_ok(kiln_stream_destroy(wrapped));
  /* Borrowed: the native stream under `owner` still runs kiln's work. */
  add_u32(owner, buf, 0, N, 1);
  check_ok(kiln_buffer_read(owner, buf, 0, got, sizeof got));
  for (uint32_t i = 0; i < N; i++)
    if (got[i] != data[i] + 10)
      fail_msg("word %u: 0x%08x, want 0x%08x", i, got[i], data[i] + 10);
  check_ok(kiln_buffer_destroy(buf));
  check_ok(kiln_stream_destroy(owner));
}

#if CONF_VULKAN_HEADERS
typedef struct raw_vk {
  VkDevice device;
  PFN_vkCreateCommandPool vkCreateCommandPool;
  PFN_vkDestroyCommandPool vkDestroyCommandPool;
  PFN_vkAllocateCommandBuffers vkAllocateCommandBuffers;
  PFN_vkBeginCommandBuffer vkBeginCommandBuffer;
  PFN_vkEndCommandBuffer vkEndCommandBuffer;
  PFN_vkCmdCopyBuffer vkCmdCopyBuffer;
  PFN_vkQueueSubmit vkQueueSubmit;
  PFN_vkQueueWaitIdle vkQueueWaitIdle;
  PFN_vkCreateSemaphore vkCreateSemaphore;
  PFN_vkDestroySemaphore vkDestroySemaphore;
  PFN_vkSignalSemaphore vkSignalSemaphore;
} raw_vk;

static void raw_vk_load(const kiln_native_context *nc, raw_vk *vk) {
  PFN_vkGetInstanceProcAddr gipa =
      (PFN_vkGetInstanceProcAddr)nc->vk_get_instance_proc_addr;
  PFN_vkGetDeviceProcAddr gdpa = (PFN_vkGetDeviceProcAddr)gipa(
      (VkInstance)nc->vk_instance, "vkGetDeviceProcAddr");
  assert_non_null(gdpa);
  vk->device = (VkDevice)nc->vk_device;
#define LOAD(name)                                                \
  vk->name = (PFN_##name)gdpa(vk->device, #name);                 \
  if (!vk->name) fail_msg("vkGetDeviceProcAddr(%s) is NULL", #name)
  LOAD(vkCreateCommandPool);
  LOAD(vkDestroyCommandPool);
  LOAD(vkAllocateCommandBuffers);
  LOAD(vkBeginCommandBuffer);
  LOAD(vkEndCommandBuffer);
  LOAD(vkCmdCopyBuffer);
  LOAD(vkQueueSubmit);
  LOAD(vkQueueWaitIdle);
  LOAD(vkCreateSemaphore);
  LOAD(vkDestroySemaphore);
  LOAD(vkSignalSemaphore);
#undef LOAD
}

#if VK_USE_64_BIT_PTR_DEFINES == 1
#define RAW(type, v) ((type)(uintptr_t)(v))
#define U64(h) ((uint64_t)(uintptr_t)(h))
#else
#define RAW(type, v) ((type)(v))
#define U64(h) ((uint64_t)(h))
#endif

/* A new stream on another queue than `queue` where the device has more
 * than one (kiln spreads streams over its queues): there, only the
 * semaphores order the foreign work and kiln's. With one queue (lavapipe)
 * submission order and kiln's leading barrier order them anyway, and the
 * test checks that the handles work, validation-clean. */
static kiln_stream *pick_stream_off_queue(void *queue) {
  kiln_stream *tried[8];
  size_t count = 0;
  kiln_stream *found = NULL;
  while (!found && count < 8) {
    check_ok(kiln_stream_create(conf.ctx, &tried[count]));
    kiln_native_stream ns;
    check_ok(kiln_stream_get_native(tried[count], &ns));
    if (ns.vk_queue != queue) found = tried[count];
    count++;
  }
  if (!found) {
    printf("interop: every stream shares the default stream's queue here; "
           "the order of the raw copy rests on one queue's order too\n");
    found = tried[--count];
  }
  for (size_t i = 0; i < count; i++)
    if (tried[i] != found) check_ok(kiln_stream_destroy(tried[i]));
  return found;
}

/* kiln launch (a += 7) -> raw vkCmdCopyBuffer a -> b, after kiln's work
 * through the exported (semaphore, value) -> kiln launch (b += 5), after
 * the copy through kiln_stream_wait_native on the caller's semaphore. The
 * copy is held back by a semaphore the host signals only once kiln's
 * second launch is submitted: were that launch not waiting for the copy,
 * it would run first, and the copy would then overwrite its result. */
static void vulkan_raw_copy_between_kiln_ops(void **state) {
  (void)state;
  kiln_native_context nc;
  check_ok(kiln_context_get_native(conf.ctx, &nc));
  raw_vk vk;
  raw_vk_load(&nc, &vk);
  uint32_t data[N], got[N];
  for (uint32_t i = 0; i < N; i++) data[i] = i * 40503u + 11u;
  kiln_buffer *a, *b;
  check_ok(kiln_buffer_create(conf.ctx, sizeof data, 0, &a));
  check_ok(kiln_buffer_create(conf.ctx, sizeof data, KILN_BUFFER_ZERO, &b));
  kiln_stream *s = pick_stream_off_queue(nc.vk_queue);
  check_ok(kiln_buffer_write(s, a, 0, data, sizeof data));
  add_u32(s, a, 0, N, 7);
  kiln_native_buffer na, nb;
  check_ok(kiln_buffer_get_native(a, &na));
  check_ok(kiln_buffer_get_native(b, &nb));
  kiln_native_stream ns;
  check_ok(kiln_stream_get_native(s, &ns));

  VkCommandPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .queueFamilyIndex = ns.vk_queue_family};
  VkCommandPool pool;
  assert_int_equal(vk.vkCreateCommandPool(vk.device, &pool_info, NULL, &pool),
                   VK_SUCCESS);
  VkCommandBufferAllocateInfo alloc = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1};
  VkCommandBuffer cmd;
  assert_int_equal(vk.vkAllocateCommandBuffers(vk.device, &alloc, &cmd),
                   VK_SUCCESS);
  VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
  assert_int_equal(vk.vkBeginCommandBuffer(cmd, &begin), VK_SUCCESS);
  VkBufferCopy region = {.srcOffset = na.vk_offset,
                         .dstOffset = nb.vk_offset,
                         .size = sizeof data};
  vk.vkCmdCopyBuffer(cmd, RAW(VkBuffer, na.vk_buffer),
                     RAW(VkBuffer, nb.vk_buffer), 1, &region);
  assert_int_equal(vk.vkEndCommandBuffer(cmd), VK_SUCCESS);

  VkSemaphoreTypeCreateInfo type = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
  VkSemaphoreCreateInfo sem_info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type};
  VkSemaphore done, gate;
  assert_int_equal(vk.vkCreateSemaphore(vk.device, &sem_info, NULL, &done),
                   VK_SUCCESS);
  assert_int_equal(vk.vkCreateSemaphore(vk.device, &sem_info, NULL, &gate),
                   VK_SUCCESS);
  const VkSemaphore waits[2] = {RAW(VkSemaphore, ns.vk_semaphore), gate};
  const uint64_t wait_values[2] = {ns.vk_semaphore_value, 1};
  const uint64_t signal_value = 1;
  VkTimelineSemaphoreSubmitInfo values = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .waitSemaphoreValueCount = 2,
      .pWaitSemaphoreValues = wait_values,
      .signalSemaphoreValueCount = 1,
      .pSignalSemaphoreValues = &signal_value};
  const VkPipelineStageFlags stages[2] = {VK_PIPELINE_STAGE_TRANSFER_BIT,
                                          VK_PIPELINE_STAGE_TRANSFER_BIT};
  VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                         .pNext = &values,
                         .waitSemaphoreCount = 2,
                         .pWaitSemaphores = waits,
                         .pWaitDstStageMask = stages,
                         .commandBufferCount = 1,
                         .pCommandBuffers = &cmd,
                         .signalSemaphoreCount = 1,
                         .pSignalSemaphores = &done};
  /* On the default stream's queue, not s's where they differ. Single-
   * threaded here, so kiln is not submitting to the queue now. */
  assert_int_equal(
      vk.vkQueueSubmit((VkQueue)nc.vk_queue, 1, &submit, VK_NULL_HANDLE),
      VK_SUCCESS);
  check_ok(kiln_stream_wait_native(s, U64(done), signal_value));
  add_u32(s, b, 0, N, 5);
  kiln_native_stream submitted; /* submits the second launch */
  check_ok(kiln_stream_get_native(s, &submitted));
  assert_true(submitted.vk_semaphore_value > ns.vk_semaphore_value);
  VkSemaphoreSignalInfo open_gate = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
      .semaphore = gate,
      .value = 1};
  assert_int_equal(vk.vkSignalSemaphore(vk.device, &open_gate), VK_SUCCESS);
  check_ok(kiln_buffer_read(s, b, 0, got, sizeof got));
  for (uint32_t i = 0; i < N; i++)
    if (got[i] != data[i] + 12)
      fail_msg("word %u: 0x%08x, want 0x%08x (kiln +7, raw copy, kiln +5)", i,
               got[i], data[i] + 12);
  check_ok(kiln_stream_synchronize(s));
  /* Seeing `done` signalled is not the driver being done with it: Mesa's
   * timeline emulation still locks it afterwards on the queue's thread.
   * The queue (single-threaded here) is drained before it is destroyed. */
  assert_int_equal(vk.vkQueueWaitIdle((VkQueue)nc.vk_queue), VK_SUCCESS);
  vk.vkDestroySemaphore(vk.device, done, NULL);
  vk.vkDestroySemaphore(vk.device, gate, NULL);
  vk.vkDestroyCommandPool(vk.device, pool, NULL);
  check_ok(kiln_stream_destroy(s));
  check_ok(kiln_buffer_destroy(b));
  check_ok(kiln_buffer_destroy(a));
}
#endif

#if CONF_VULKAN_HEADERS
/* A VkDevice of the application's, made on the instance and physical
 * device kiln exported, with kiln's required features unless `no_timeline`
 * leaves timelineSemaphore out. */
typedef struct app_device {
  VkDevice device;
  PFN_vkDestroyDevice destroy;
  VkPhysicalDeviceFeatures2 f;
  VkPhysicalDeviceVulkan12Features f12;
} app_device;

static void app_device_create(const kiln_native_context *nc, bool no_timeline,
                              app_device *out) {
  PFN_vkGetInstanceProcAddr gipa =
      (PFN_vkGetInstanceProcAddr)nc->vk_get_instance_proc_addr;
  VkInstance instance = (VkInstance)nc->vk_instance;
  PFN_vkCreateDevice create =
      (PFN_vkCreateDevice)gipa(instance, "vkCreateDevice");
  out->destroy = (PFN_vkDestroyDevice)gipa(instance, "vkDestroyDevice");
  assert_non_null(create);
  assert_non_null(out->destroy);
  memset(&out->f12, 0, sizeof out->f12);
  out->f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  out->f12.bufferDeviceAddress = VK_TRUE;
  out->f12.timelineSemaphore = no_timeline ? VK_FALSE : VK_TRUE;
  memset(&out->f, 0, sizeof out->f);
  out->f.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  out->f.pNext = &out->f12;
  out->f.features.shaderInt64 = VK_TRUE;
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
      .queueFamilyIndex = nc->vk_queue_family,
      .queueCount = 1,
      .pQueuePriorities = &priority};
  VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = &out->f,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &queue};
  assert_int_equal(create((VkPhysicalDevice)nc->vk_physical_device, &info,
                          NULL, &out->device),
                   VK_SUCCESS);
}

static kiln_native_context app_native(const kiln_native_context *kiln_nc,
                                      const app_device *app) {
  kiln_native_context n;
  memset(&n, 0, sizeof n);
  n.backend = KILN_BACKEND_VULKAN;
  n.vk_instance = kiln_nc->vk_instance;
  n.vk_physical_device = kiln_nc->vk_physical_device;
  n.vk_device = (void *)app->device;
  n.vk_queue_family = kiln_nc->vk_queue_family;
  n.vk_queue_count = 1;
  n.vk_api_version = kiln_nc->vk_api_version;
  n.vk_enabled_features = &app->f;
  return n;
}

/* kiln on the application's own VkDevice: borrowed (kiln_context_destroy
 * leaves it, and the application destroys it after), refused with the
 * missing feature named, and adopted (kiln destroys it). */
static void vulkan_context_on_application_device(void **state) {
  (void)state;
  kiln_native_context nc;
  check_ok(kiln_context_get_native(conf.ctx, &nc));

  app_device app;
  app_device_create(&nc, false, &app);
  kiln_native_context n = app_native(&nc, &app);
  kiln_context *ctx;
  check_ok(kiln_context_create_from_native(&n, 0, &ctx));
  check_context_works(ctx, 2);
  check_ok(kiln_context_destroy(ctx));
  /* Still the application's: it works, and it destroys it. */
  PFN_vkGetInstanceProcAddr gipa =
      (PFN_vkGetInstanceProcAddr)nc.vk_get_instance_proc_addr;
  PFN_vkDeviceWaitIdle idle = (PFN_vkDeviceWaitIdle)gipa(
      (VkInstance)nc.vk_instance, "vkDeviceWaitIdle");
  assert_int_equal(idle(app.device), VK_SUCCESS);
  app.destroy(app.device, NULL);

  app_device_create(&nc, true, &app);
  n = app_native(&nc, &app);
  kiln_context *refused = NULL;
  check_fails(kiln_context_create_from_native(&n, KILN_NATIVE_ADOPT, &refused),
              KILN_ERROR_UNSUPPORTED);
  check_message_has("timelineSemaphore");
  assert_null(refused);
  app.destroy(app.device, NULL); /* a failed import leaves it ours */

  app_device_create(&nc, false, &app);
  n = app_native(&nc, &app);
  check_ok(kiln_context_create_from_native(&n, KILN_NATIVE_ADOPT, &ctx));
  check_context_works(ctx, 3);
  check_ok(kiln_context_destroy(ctx)); /* destroys app.device */
}
#endif

int conf_run_interop_tests(void) {
  const struct CMUnitTest tests[] = {
      CONF_TEST(export_handles),
      CONF_TEST(import_borrowed),
      CONF_TEST(import_stream),
      CONF_TEST(import_context),
  };
  int failed = cmocka_run_group_tests_name("interop", tests, NULL, NULL);
#if CONF_VULKAN_HEADERS
  /* Raw Vulkan on kiln's objects: the Vulkan suite's only. */
  if (conf.backend == KILN_BACKEND_VULKAN) {
    const struct CMUnitTest vulkan[] = {
        CONF_TEST(vulkan_raw_copy_between_kiln_ops),
        CONF_TEST(vulkan_context_on_application_device),
    };
    failed +=
        cmocka_run_group_tests_name("interop, Vulkan", vulkan, NULL, NULL);
  }
#endif
  return failed;
}
