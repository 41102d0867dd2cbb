/*
 * kiln-info: what kiln can run on this machine, in the spirit of
 * `vulkaninfo --summary` — the library's version, each backend (compiled in
 * or not, available or why not) and every device with its properties.
 *
 * It is a report: it exits 0 also when no backend is available. Exit 1
 * means a query failed on a backend that said it was available (a bug worth
 * reporting); exit 2 a bad command line.
 */
#include <kiln/kiln.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kiln_backend backends[] = {KILN_BACKEND_CUDA, KILN_BACKEND_HIP,
                                        KILN_BACKEND_VULKAN};
#define BACKEND_COUNT (sizeof backends / sizeof backends[0])

static const struct {
  kiln_device_feature bit;
  const char *name;
} feature_names[] = {
    {KILN_FEATURE_FLOAT16, "float16"},
    {KILN_FEATURE_BFLOAT16, "bfloat16"},
    {KILN_FEATURE_FLOAT64, "float64"},
    {KILN_FEATURE_INT8, "int8"},
    {KILN_FEATURE_INT8_DOT_PRODUCT, "int8-dot-product"},
    {KILN_FEATURE_FLOAT32_ATOMIC_ADD, "float32-atomic-add"},
    {KILN_FEATURE_FLOAT64_ATOMIC_ADD, "float64-atomic-add"},
    {KILN_FEATURE_SUBGROUP_SIZE_CONTROL, "subgroup-size-control"},
    {KILN_FEATURE_COOPERATIVE_MATRIX, "cooperative-matrix"},
};

static const char *matrix_type_name(kiln_matrix_type t) {
  static const char *const names[] = {"?",    "f16", "f32", "f64", "bf16",
                                      "s8",   "u8",  "s32", "u32"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* "float16 float64 ...", and the matrix shapes, one a line. */
static void print_features(const kiln_device_properties *p) {
  printf("    %-28s=", "features");
  for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0]; i++)
    if (p->features & feature_names[i].bit)
      printf(" %s", feature_names[i].name);
  printf("%s\n", p->features ? "" : " none");
  printf("    %-28s= %u to %u\n", "subgroup sizes", p->min_subgroup_size,
         p->max_subgroup_size);
  for (uint32_t i = 0; i < p->matrix_shape_count; i++) {
    const kiln_matrix_shape *s = &p->matrix_shapes[i];
    printf("    %-28s  %ux%ux%u %s x %s + %s -> %s\n",
           i == 0 ? "matrix shapes" : "", s->m, s->n, s->k,
           matrix_type_name(s->a), matrix_type_name(s->b),
           matrix_type_name(s->c), matrix_type_name(s->result));
  }
}

static const char *const environment[] = {
    "KILN_BACKEND",           "KILN_DEVICE",        "KILN_LOG",
    "KILN_CUDA_LIBRARY",      "KILN_HIP_LIBRARY",   "KILN_VULKAN_LIBRARY",
    "KILN_VULKAN_VALIDATION", "KILN_NVRTC_LIBRARY", "KILN_HIPRTC_LIBRARY",
    "KILN_SHADERC_LIBRARY",   "KILN_CACHE",         "KILN_CACHE_DIR",
    "KILN_CACHE_MAX_BYTES",   "KILN_SYNC",          "KILN_SYNC_TIMEOUT_MS",
};

static void usage(FILE *to) {
  fprintf(to,
          "usage: kiln-info [-b BACKEND] [-h]\n"
          "Shows kiln's version, which backends are compiled in and can run "
          "here (and why\nnot), each backend's run-time kernel compiler, "
          "and the properties of every\ndevice.\n"
          "\n"
          "  -b, --backend BACKEND  only this backend: cuda, hip or vulkan\n"
          "  -h, --help             this text\n"
          "\n"
          "Exit status: 0 (also when no backend is available), 1 when a query "
          "of an\navailable backend failed, 2 for a bad command line.\n");
}

static void report(const char *call, kiln_status status) {
  printf("    %s failed: %s: %s\n", call, kiln_status_name(status),
         kiln_last_error());
}

static void print_uuid(const uint8_t uuid[16]) {
  bool any = false;
  for (size_t i = 0; i < 16; ++i) {
    printf("%02x", uuid[i]);
    if (i == 3 || i == 5 || i == 7 || i == 9) printf("-");
    any = any || uuid[i] != 0;
  }
  printf("%s\n", any ? "" : " (none reported)");
}

static void print_dim3(const char *label, const uint32_t v[3]) {
  printf("    %-28s= %u x %u x %u\n", label, v[0], v[1], v[2]);
}

static void print_bytes(const char *label, size_t bytes) {
  if (bytes >= 1024 && bytes % 1024 == 0)
    printf("    %-28s= %zu KiB\n", label, bytes / 1024);
  else
    printf("    %-28s= %zu bytes\n", label, bytes);
}

static void print_device(kiln_backend backend, size_t index,
                         const kiln_device_properties *p) {
  printf("%s device %zu: %s\n", kiln_backend_name(backend), index, p->name);
  printf("    %-28s= %s\n", "type", kiln_device_type_name(p->type));
  printf("    %-28s= %s\n", "vendor", p->vendor[0] ? p->vendor : "unknown");
  if (p->vendor_id != 0 || p->device_id != 0)
    printf("    %-28s= 0x%04x:0x%04x\n", "vendor id:device id", p->vendor_id,
           p->device_id);
  else
    printf("    %-28s= unknown\n", "vendor id:device id");
  printf("    %-28s= %s\n", "architecture",
         p->architecture[0] ? p->architecture : "unknown");
  printf("    %-28s= %.2f GiB (%llu bytes)\n", "memory",
         (double)p->memory_bytes / (1024.0 * 1024.0 * 1024.0),
         (unsigned long long)p->memory_bytes);
  if (p->compute_units != 0)
    printf("    %-28s= %u\n", "compute units", p->compute_units);
  else
    printf("    %-28s= not reported\n", "compute units");
  printf("    %-28s= %u\n", "max threads per block", p->max_threads_per_block);
  print_dim3("max block size", p->max_block_size);
  print_dim3("max grid size", p->max_grid_size);
  print_bytes("max shared memory per block", p->max_shared_memory_per_block);
  print_bytes("  with opt-in", p->max_shared_memory_per_block_optin);
  printf("    %-28s= %u\n", "subgroup size", p->subgroup_size);
  print_features(p);
  if (p->stream_queues)
    printf("    %-28s= %u\n", "queues for streams", p->stream_queues);
  else
    printf("    %-28s= the driver's\n", "queues for streams");
  if (backend == KILN_BACKEND_VULKAN || p->max_stream_priority > 0)
    printf("    %-28s= 0 to %u\n", "stream priorities", p->max_stream_priority);
  else
    printf("    %-28s= reported by a context (kiln_context_get_properties)\n",
           "stream priorities");
  printf("    %-28s= %zu bytes\n", "max kernel argument list",
         p->max_kernel_argument_bytes);
  printf("    %-28s= %s\n", "API version", p->api_version);
  printf("    %-28s= %s\n", "driver version", p->driver_version);
  printf("    %-28s= ", "UUID");
  print_uuid(p->uuid);
}

/* Prints one backend's devices; returns 0, or -1 when a query failed. */
static int print_devices(kiln_backend backend) {
  size_t count = 0;
  kiln_status status = kiln_device_count(backend, &count);
  if (status != KILN_OK) {
    printf("%s:\n", kiln_backend_name(backend));
    report("kiln_device_count", status);
    return -1;
  }
  int result = 0;
  for (size_t i = 0; i < count; ++i) {
    kiln_device_properties props;
    status = kiln_device_get_properties(backend, i, &props);
    if (status != KILN_OK) {
      printf("%s device %zu:\n", kiln_backend_name(backend), i);
      report("kiln_device_get_properties", status);
      result = -1;
      continue;
    }
    print_device(backend, i, &props);
  }
  return result;
}

int main(int argc, char **argv) {
  bool only = false;
  kiln_backend chosen = KILN_BACKEND_AUTO;
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      usage(stdout);
      return EXIT_SUCCESS;
    }
    const char *name = NULL;
    if ((strcmp(arg, "-b") == 0 || strcmp(arg, "--backend") == 0) &&
        i + 1 < argc)
      name = argv[++i];
    else if (strncmp(arg, "--backend=", 10) == 0)
      name = arg + 10;
    if (name == NULL) {
      fprintf(stderr, "kiln-info: unknown or incomplete option '%s'\n", arg);
      usage(stderr);
      return 2;
    }
    if (kiln_backend_from_name(name, &chosen) != KILN_OK ||
        chosen == KILN_BACKEND_AUTO) {
      fprintf(stderr, "kiln-info: '%s' is not a backend: use cuda, hip or "
                      "vulkan\n", name);
      return 2;
    }
    only = true;
  }

  printf("kiln %s", kiln_version_string());
  if (kiln_version() != KILN_VERSION)
    printf(" (kiln-info was built against %d.%d.%d)", KILN_VERSION_MAJOR,
           KILN_VERSION_MINOR, KILN_VERSION_PATCH);
  printf("\n");
  for (size_t i = 0; i < sizeof environment / sizeof environment[0]; ++i) {
    const char *value = getenv(environment[i]);
    if (value != NULL && value[0] != '\0')
      printf("%s=%s\n", environment[i], value);
  }

  printf("\nBackends\n========\n");
  bool available[BACKEND_COUNT] = {false};
  for (size_t b = 0; b < BACKEND_COUNT; ++b) {
    if (only && backends[b] != chosen) continue;
    const char *name = kiln_backend_name(backends[b]);
    printf("%s:%*s", name, (int)(7 - strlen(name)), "");
    if (!kiln_backend_compiled(backends[b])) {
      printf("not compiled in\n");
      continue;
    }
    const char *reason = NULL;
    if (kiln_backend_available(backends[b], &reason) != KILN_OK) {
      printf("compiled in, unavailable: %s\n",
             reason != NULL && reason[0] ? reason : kiln_last_error());
      continue;
    }
    available[b] = true;
    size_t count = 0;
    if (kiln_device_count(backends[b], &count) == KILN_OK)
      printf("compiled in, available, %zu device%s\n", count,
             count == 1 ? "" : "s");
    else
      printf("compiled in, available\n");
  }

  /* The run-time compilers load without a device, so they are listed for
   * every backend compiled in, available or not. */
  printf("\nKernel compilers (kiln_module_create_from_source)\n"
         "=================================================\n");
  for (size_t b = 0; b < BACKEND_COUNT; ++b) {
    if (only && backends[b] != chosen) continue;
    if (!kiln_backend_compiled(backends[b])) continue;
    const char *name = kiln_backend_name(backends[b]);
    const char *description = NULL;
    kiln_status status = kiln_compiler_available(backends[b], &description);
    printf("%s:%*s%s%s\n", name, (int)(7 - strlen(name)), "",
           status == KILN_OK ? "" : "not found: ",
           description != NULL ? description : kiln_last_error());
  }

  int result = EXIT_SUCCESS;
  bool any = false;
  for (size_t b = 0; b < BACKEND_COUNT; ++b) {
    if (!available[b]) continue;
    if (!any) printf("\nDevices\n=======\n");
    any = true;
    if (print_devices(backends[b]) != 0) result = EXIT_FAILURE;
  }
  if (!any)
    printf("\nNo backend is available here: kiln programs will fail to "
           "create a context.\n");
  return result;
}
