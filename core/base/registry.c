/* The backend registry: which backends are compiled in, whether each can run
 * here (probed once, again after a failure when the variable naming its
 * library changes), their devices, and the choice of backend and device for
 * a new context (KILN_BACKEND, KILN_DEVICE, auto). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"

typedef struct probe_state {
  bool done;
  kiln_status status;
  char reason[512];
  /* The library variable's value ("" when unset) when a probe failed. */
  char library[4096];
} probe_state;

/* The variable naming each backend's vendor library. A failed probe is
 * remembered while it keeps its value, so that the automatic choice does
 * not pay for a failing dlopen (or a Vulkan instance) on every context; a
 * new value, the usual fix for "cannot load", is tried at the next probe. */
static const char *const library_variable[KILN_BACKEND_COUNT] = {
    [KILN_BACKEND_CUDA] = "KILN_CUDA_LIBRARY",
    [KILN_BACKEND_HIP] = "KILN_HIP_LIBRARY",
    [KILN_BACKEND_VULKAN] = "KILN_VULKAN_LIBRARY",
};

static const char *library_setting(kiln_backend backend) {
  const char *v = kiln_getenv(library_variable[backend]);
  return v ? v : "";
}

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static bool slots_ready;
static const kiln_backend_ops *slots[KILN_BACKEND_COUNT];
static probe_state probes[KILN_BACKEND_COUNT];

static void fill_compiled(void) {
  memset(slots, 0, sizeof slots);
#if defined(KILN_HAVE_CUDA)
  slots[KILN_BACKEND_CUDA] = &kiln_cuda_ops;
#endif
#if defined(KILN_HAVE_HIP)
  slots[KILN_BACKEND_HIP] = &kiln_hip_ops;
#endif
#if defined(KILN_HAVE_VULKAN)
  slots[KILN_BACKEND_VULKAN] = &kiln_vulkan_ops;
#endif
  slots_ready = true;
}

static bool is_concrete(kiln_backend b) {
  return b == KILN_BACKEND_CUDA || b == KILN_BACKEND_HIP ||
         b == KILN_BACKEND_VULKAN;
}

void kiln_registry_override(const kiln_backend_ops *const *ops, size_t count) {
  pthread_mutex_lock(&reg_lock);
  memset(probes, 0, sizeof probes);
  if (!ops) {
    fill_compiled();
  } else {
    memset(slots, 0, sizeof slots);
    for (size_t i = 0; i < count; i++)
      if (ops[i] && is_concrete(ops[i]->kind)) slots[ops[i]->kind] = ops[i];
    slots_ready = true;
  }
  pthread_mutex_unlock(&reg_lock);
}

const kiln_backend_ops *kiln_registry_get(kiln_backend backend) {
  if (!is_concrete(backend)) return NULL;
  pthread_mutex_lock(&reg_lock);
  if (!slots_ready) fill_compiled();
  const kiln_backend_ops *ops = slots[backend];
  pthread_mutex_unlock(&reg_lock);
  return ops;
}

const char *kiln_backend_name(kiln_backend backend) {
  switch (backend) {
  case KILN_BACKEND_AUTO: return "auto";
  case KILN_BACKEND_CUDA: return "cuda";
  case KILN_BACKEND_HIP: return "hip";
  case KILN_BACKEND_VULKAN: return "vulkan";
  }
  return "unknown";
}

kiln_status kiln_backend_from_name(const char *name, kiln_backend *out) {
  if (!name || !out)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_backend_from_name: %s is NULL",
                          name ? "out_backend" : "name");
  for (int b = 0; b < KILN_BACKEND_COUNT; b++) {
    if (strcasecmp(name, kiln_backend_name((kiln_backend)b)) == 0) {
      *out = (kiln_backend)b;
      return KILN_OK;
    }
  }
  return kiln_set_error(KILN_ERROR_NOT_FOUND,
                        "kiln_backend_from_name: '%s' is not a kiln backend "
                        "(known: auto, cuda, hip, vulkan)",
                        name);
}

bool kiln_backend_compiled(kiln_backend backend) {
  return kiln_registry_get(backend) != NULL;
}

kiln_status kiln_unsupported(const kiln_backend_ops *ops, const char *fn,
                             const char *ability, const char *advice) {
  return kiln_set_error(KILN_ERROR_UNSUPPORTED,
                        "%s: the %s backend has no %s%s%s", fn, ops->name,
                        ability, advice ? ": " : "", advice ? advice : "");
}

/* Called with reg_lock held. */
static const char *compiled_list(char *buf, size_t size) {
  buf[0] = '\0';
  for (int b = 1; b < KILN_BACKEND_COUNT; b++) {
    if (!slots[b]) continue;
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
             kiln_backend_name((kiln_backend)b));
  }
  if (!buf[0]) kiln_strlcpy(buf, "no backend", size);
  return buf;
}

/* The first member a backend's table lacks (core/backend.h, "The ops
 * table"): a required op, or a member of a sub-table the backend has; its
 * table's name ("ops" for the table itself) in *out_table. NULL when the
 * table is whole. */
static const char *missing_member(const kiln_backend_ops *ops,
                                  const char **out_table) {
#define NEED(table, member) \
  do {                      \
    if (!table->member) {   \
      *out_table = #table;  \
      return #member;       \
    }                       \
  } while (0)
  NEED(ops, probe);
  NEED(ops, device_count);
  NEED(ops, device_properties);
  NEED(ops, context_size);
  NEED(ops, buffer_size);
  NEED(ops, module_size);
  NEED(ops, kernel_size);
  NEED(ops, stream_size);
  NEED(ops, event_size);
  NEED(ops, context_init);
  NEED(ops, context_deinit);
  NEED(ops, context_synchronize);
  NEED(ops, buffer_init);
  NEED(ops, buffer_deinit);
  NEED(ops, buffer_write);
  NEED(ops, buffer_read);
  NEED(ops, buffer_copy);
  NEED(ops, image_formats);
  NEED(ops, module_init);
  NEED(ops, module_deinit);
  NEED(ops, kernel_init);
  NEED(ops, kernel_deinit);
  NEED(ops, launch);
  NEED(ops, stream_init);
  NEED(ops, stream_deinit);
  NEED(ops, stream_synchronize);
  NEED(ops, event_init);
  NEED(ops, event_deinit);
  NEED(ops, event_record);
  NEED(ops, event_synchronize);
  NEED(ops, event_query);
  const kiln_host_buffer_ops *host_buffers = ops->host_buffers;
  if (host_buffers) {
    NEED(host_buffers, host_buffer_size);
    NEED(host_buffers, host_buffer_init);
    NEED(host_buffers, host_buffer_deinit);
  }
  const kiln_async_transfer_ops *async_transfers = ops->async_transfers;
  if (async_transfers) {
    NEED(async_transfers, buffer_write_async);
    NEED(async_transfers, buffer_read_async);
  }
  const kiln_fill_ops *fills = ops->fills;
  if (fills) {
    NEED(fills, fill_sizes);
    NEED(fills, buffer_fill);
  }
  const kiln_peer_ops *peers = ops->peers;
  if (peers) {
    NEED(peers, buffer_copy_peer);
    NEED(peers, peer_direct);
  }
  const kiln_event_wait_ops *event_waits = ops->event_waits;
  if (event_waits) NEED(event_waits, stream_wait_event);
  const kiln_kernel_info_ops *kernel_info = ops->kernel_info;
  if (kernel_info) {
    NEED(kernel_info, kernel_attributes);
    NEED(kernel_info, suggest_block);
  }
  const kiln_timing_ops *timing = ops->timing;
  if (timing) NEED(timing, event_elapsed_ms);
  const kiln_limit_ops *limits = ops->limits;
  if (limits) {
    NEED(limits, context_set_limit);
    NEED(limits, context_get_limit);
  }
  const kiln_global_ops *globals = ops->globals;
  if (globals) NEED(globals, module_global);
  const kiln_interop_ops *interop = ops->interop;
  if (interop) {
    NEED(interop, context_native);
    NEED(interop, buffer_native);
    NEED(interop, stream_native);
    NEED(interop, stream_wait_native);
    NEED(interop, buffer_import);
    NEED(interop, context_import_device);
    NEED(interop, context_import);
    NEED(interop, stream_import);
  }
  const kiln_graph_ops *graphs = ops->graphs;
  if (graphs) {
    NEED(graphs, graph_size);
    NEED(graphs, graph_begin);
    NEED(graphs, graph_end);
    NEED(graphs, graph_launch);
    NEED(graphs, graph_deinit);
  }
  const kiln_graph_update_ops *graph_updates = ops->graph_updates;
  if (graph_updates) {
    /* Updates change built graphs: without graphs they are half an
     * ability. */
    NEED(ops, graphs);
    NEED(graph_updates, graph_launched);
    NEED(graph_updates, graph_update);
  }
  const kiln_compiler_ops *compiler = ops->compiler;
  if (compiler) {
    NEED(compiler, languages[0]);
    NEED(compiler, compiler_load);
    NEED(compiler, compile_target);
    NEED(compiler, compile);
  }
  const kiln_memory_ops *memory = ops->memory;
  if (memory) {
    NEED(memory, supported);
    NEED(memory, buffer_init_async);
    NEED(memory, buffer_deinit_async);
    NEED(memory, trim);
    NEED(memory, usage);
    NEED(memory, set_keep);
  }
  const kiln_label_ops *labels = ops->labels;
  if (labels) {
    NEED(labels, stream_label_begin);
    NEED(labels, stream_label_end);
  }
#undef NEED
  return NULL;
}

kiln_status kiln_registry_probe(kiln_backend backend, const char **out_reason) {
  const kiln_backend_ops *ops = kiln_registry_get(backend);
  pthread_mutex_lock(&reg_lock);
  probe_state *p = &probes[backend];
  if (p->done && p->status != KILN_OK && ops &&
      strcmp(p->library, library_setting(backend)) != 0)
    p->done = false;
  if (!p->done) {
    const char *table, *member;
    if (!ops) {
      char list[64];
      p->status = KILN_ERROR_UNAVAILABLE;
      compiled_list(list, sizeof list);
      snprintf(p->reason, sizeof p->reason,
               "not compiled into this build of kiln (it has: %s)", list);
    } else if ((member = missing_member(ops, &table)) != NULL) {
      p->status = KILN_ERROR_UNAVAILABLE;
      snprintf(p->reason, sizeof p->reason,
               "the %s backend's %s table lacks %s", ops->name, table, member);
    } else {
      p->reason[0] = '\0';
      p->status = ops->probe(p->reason, sizeof p->reason);
      if (p->status != KILN_OK) {
        p->status = KILN_ERROR_UNAVAILABLE;
        if (!p->reason[0])
          kiln_strlcpy(p->reason, "the backend gave no reason",
                       sizeof p->reason);
      } else {
        p->reason[0] = '\0';
      }
    }
    kiln_strlcpy(p->library, library_setting(backend), sizeof p->library);
    p->done = true;
  }
  kiln_status st = p->status;
  if (out_reason) *out_reason = p->reason;
  pthread_mutex_unlock(&reg_lock);
  return st;
}

kiln_status kiln_backend_available(kiln_backend backend,
                                   const char **out_reason) {
  if (!is_concrete(backend)) {
    if (out_reason) *out_reason = "not a concrete backend";
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "kiln_backend_available: backend %d is not cuda, "
                          "hip or vulkan",
                          (int)backend);
  }
  const char *reason;
  kiln_status st = kiln_registry_probe(backend, &reason);
  if (out_reason) *out_reason = reason;
  if (st != KILN_OK)
    return kiln_set_error(st,
                          "kiln_backend_available: backend %s is "
                          "unavailable: %s",
                          kiln_backend_name(backend), reason);
  return KILN_OK;
}

static size_t devices_of(kiln_backend backend) {
  if (kiln_registry_probe(backend, NULL) != KILN_OK) return 0;
  return kiln_registry_get(backend)->device_count();
}

kiln_status kiln_device_count(kiln_backend backend, size_t *out_count) {
  if (!is_concrete(backend) || !out_count)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "kiln_device_count: %s",
                          out_count ? "backend must be cuda, hip or vulkan"
                                    : "out_count is NULL");
  *out_count = devices_of(backend);
  return KILN_OK;
}

static kiln_status properties_of(kiln_backend backend, size_t index,
                                 kiln_device_properties *out) {
  kiln_device_properties p;
  memset(&p, 0, sizeof p);
  kiln_status st = kiln_registry_get(backend)->device_properties(index, &p);
  if (st != KILN_OK) return st;
  p.backend = backend;
  *out = p;
  return KILN_OK;
}

kiln_status kiln_device_get_properties_sized(kiln_backend backend, size_t index,
                                             size_t properties_size,
                                             kiln_device_properties *out) {
  static const char fn[] = "kiln_device_get_properties";
  kiln_status st = kiln_struct_out_check(
      fn, "out_properties", out, properties_size, KILN_DEVICE_PROPERTIES_0_1);
  if (st != KILN_OK) return st;
  if (!is_concrete(backend))
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: backend must be cuda, hip or vulkan", fn);
  const char *reason;
  if (kiln_registry_probe(backend, &reason) != KILN_OK)
    return kiln_set_error(KILN_ERROR_UNAVAILABLE,
                          "kiln_device_get_properties: backend %s is "
                          "unavailable: %s",
                          kiln_backend_name(backend), reason);
  size_t count = kiln_registry_get(backend)->device_count();
  if (index >= count)
    return kiln_set_error(KILN_ERROR_NOT_FOUND,
                          "kiln_device_get_properties: device %zu does not "
                          "exist: backend %s has %zu device%s",
                          index, kiln_backend_name(backend), count,
                          count == 1 ? "" : "s");
  kiln_device_properties p;
  if ((st = properties_of(backend, index, &p)) != KILN_OK) return st;
  kiln_struct_out(out, properties_size, &p, sizeof p);
  return KILN_OK;
}

/* "vulkan (0: llvmpipe)", one entry per available backend, or "none" with
 * every backend's reason. */
static const char *describe_available(char *buf, size_t size) {
  buf[0] = '\0';
  for (int b = 1; b < KILN_BACKEND_COUNT; b++) {
    size_t n = devices_of((kiln_backend)b);
    if (n == 0) continue;
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s (", len ? "; " : "",
             kiln_backend_name((kiln_backend)b));
    for (size_t d = 0; d < n; d++) {
      kiln_device_properties p;
      len = strlen(buf);
      if (properties_of((kiln_backend)b, d, &p) == KILN_OK)
        snprintf(buf + len, size - len, "%s%zu: %s", d ? ", " : "", d, p.name);
    }
    len = strlen(buf);
    snprintf(buf + len, size - len, ")");
  }
  if (buf[0]) return buf;
  kiln_strlcpy(buf, "none", size);
  for (int b = 1; b < KILN_BACKEND_COUNT; b++) {
    const char *reason;
    kiln_registry_probe((kiln_backend)b, &reason);
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s %s: %s", b == 1 ? " —" : ";",
             kiln_backend_name((kiln_backend)b), reason);
  }
  return buf;
}

static kiln_status parse_device_env(bool *given, size_t *index) {
  uint64_t n = 0;
  /* SIZE_MAX is KILN_DEVICE_FROM_ENV, not an index. */
  kiln_status st =
      kiln_env_uint("KILN_DEVICE", SIZE_MAX - 1, "a device index", given, &n);
  if (st == KILN_OK && *given) *index = (size_t)n;
  return st;
}

/* Lower is better: discrete GPUs, then other GPUs, then anything. */
static int device_rank(kiln_device_type t) {
  switch (t) {
  case KILN_DEVICE_TYPE_DISCRETE_GPU: return 0;
  case KILN_DEVICE_TYPE_INTEGRATED_GPU:
  case KILN_DEVICE_TYPE_VIRTUAL_GPU: return 1;
  case KILN_DEVICE_TYPE_CPU:
  case KILN_DEVICE_TYPE_OTHER: break;
  }
  return 2;
}

static kiln_status select_auto(bool index_given, size_t index,
                               kiln_backend *out_b, size_t *out_d) {
  static const kiln_backend order[] = {KILN_BACKEND_CUDA, KILN_BACKEND_HIP,
                                       KILN_BACKEND_VULKAN};
  for (int rank = 0; rank <= 2; rank++) {
    for (size_t i = 0; i < 3; i++) {
      size_t n = devices_of(order[i]);
      for (size_t d = 0; d < n; d++) {
        kiln_device_properties p;
        if (properties_of(order[i], d, &p) != KILN_OK) continue;
        if (device_rank(p.type) != rank) continue;
        *out_b = order[i];
        *out_d = d;
        if (!index_given) return KILN_OK;
        if (index < n) {
          *out_d = index;
          return KILN_OK;
        }
        char avail[1024];
        return kiln_set_error(KILN_ERROR_NOT_FOUND,
                              "KILN_DEVICE=%zu does not exist on the best "
                              "backend, %s, which has %zu device%s; "
                              "available here: %s",
                              index, kiln_backend_name(order[i]), n,
                              n == 1 ? "" : "s",
                              describe_available(avail, sizeof avail));
      }
    }
  }
  char avail[1024];
  return kiln_set_error(KILN_ERROR_UNAVAILABLE,
                        "no kiln backend can run here; available: %s",
                        describe_available(avail, sizeof avail));
}

static kiln_status select_device(const kiln_context_options *options,
                                 const kiln_backend_ops **out_ops,
                                 size_t *out_device) {
  kiln_backend want = options->backend;
  const char *source = "the options";
  if (want == KILN_BACKEND_AUTO) {
    const char *env = kiln_getenv("KILN_BACKEND");
    if (env) {
      source = "KILN_BACKEND";
      kiln_backend parsed;
      if (kiln_backend_from_name(env, &parsed) != KILN_OK) {
        char avail[1024];
        return kiln_set_error(KILN_ERROR_NOT_FOUND,
                              "KILN_BACKEND=%s is not a backend (known: "
                              "auto, cuda, hip, vulkan); available here: %s",
                              env, describe_available(avail, sizeof avail));
      }
      want = parsed;
    }
  } else if (!is_concrete(want)) {
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "backend %d is not a kiln_backend", (int)want);
  }

  bool index_given = options->device_index != KILN_DEVICE_FROM_ENV;
  size_t index = options->device_index;
  if (!index_given) {
    kiln_status st = parse_device_env(&index_given, &index);
    if (st != KILN_OK) return st;
  }

  kiln_backend chosen = want;
  size_t device = index_given ? index : 0;
  if (want == KILN_BACKEND_AUTO) {
    kiln_status st = select_auto(index_given, index, &chosen, &device);
    if (st != KILN_OK) return st;
  } else {
    const char *reason;
    if (kiln_registry_probe(want, &reason) != KILN_OK) {
      char avail[1024];
      return kiln_set_error(KILN_ERROR_UNAVAILABLE,
                            "backend %s (asked for by %s) is unavailable: "
                            "%s; available here: %s",
                            kiln_backend_name(want), source, reason,
                            describe_available(avail, sizeof avail));
    }
    size_t n = devices_of(want);
    if (device >= n) {
      char avail[1024];
      return kiln_set_error(KILN_ERROR_NOT_FOUND,
                            "device %zu does not exist: backend %s has %zu "
                            "device%s; available here: %s",
                            device, kiln_backend_name(want), n,
                            n == 1 ? "" : "s",
                            describe_available(avail, sizeof avail));
    }
  }
  *out_ops = kiln_registry_get(chosen);
  *out_device = device;
  return KILN_OK;
}

kiln_status kiln_registry_select(const kiln_context_options *options,
                                 const kiln_backend_ops **out_ops,
                                 size_t *out_device) {
  /* Only kiln_context_create selects, so its messages name that. */
  return kiln_error_in("kiln_context_create",
                       select_device(options, out_ops, out_device));
}
