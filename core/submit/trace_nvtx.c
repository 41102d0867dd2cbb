/* KILN_TRACE=nvtx: a profiler range around each command the door issues,
 * named after the kernel for a launch and "<function> <bytes> B" for the
 * others, through NVTX 3 and rocTX. The same names label the commands in
 * the device's own command stream where the backend has a labels table
 * (trace.c).
 *
 * NVTX 3 is header-only: its first call looks for a tool's injection
 * library (NVTX_INJECTION64_PATH, which Nsight Systems sets) and, with
 * none, makes every call a no-op. The ranges go to a domain of kiln's own,
 * and a kernel's name is a registered string, so that a tool need not copy
 * it at each launch. Without a tool the domain is NULL and no NVTX call is
 * made at all. rocTX (roctxRangePushA, roctxRangePop) is loaded from
 * ROCm's libroctx64.so where it is found. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/submit/trace.h"

#if KILN_HAVE_NVTX
#include <nvToolsExt.h>
#endif

/* Set once, by load(), before any context with the sink exists. */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool ready;
static char why_not[512];
static int (*roctx_push)(const char *message);
static int (*roctx_pop)(void);

#if KILN_HAVE_NVTX
static nvtxDomainHandle_t domain;

/* Kernel names registered with the tool, by hash; a name that finds no
 * room goes as text. */
#define NAMES 256
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char *name;
  nvtxStringHandle_t handle;
} names[NAMES];

static nvtxStringHandle_t registered(const char *name) {
  uint32_t h = 2166136261u;
  for (const char *p = name; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  nvtxStringHandle_t found = NULL;
  pthread_mutex_lock(&names_lock);
  for (uint32_t i = 0; i < 8; i++) {
    uint32_t slot = (h + i) % NAMES;
    if (!names[slot].name) {
      char *copy = strdup(name);
      if (copy) {
        names[slot].name = copy;
        names[slot].handle = nvtxDomainRegisterStringA(domain, copy);
        found = names[slot].handle;
      }
      break;
    }
    if (strcmp(names[slot].name, name) == 0) {
      found = names[slot].handle;
      break;
    }
  }
  pthread_mutex_unlock(&names_lock);
  return found;
}
#endif

/* Loads rocTX: KILN_ROCTX_LIBRARY, else the names ROCm installs it as. */
static void load_roctx(void) {
  static const char *const paths[] = {"libroctx64.so", "libroctx64.so.4",
                                      "/opt/rocm/lib/libroctx64.so"};
  const char *chosen = kiln_getenv("KILN_ROCTX_LIBRARY");
  void *lib = NULL;
  char reason[384] = "";
  for (size_t i = 0; !lib && i < (chosen ? 1 : 3); i++) {
    const char *path = chosen ? chosen : paths[i];
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *err = dlerror();
      snprintf(reason + strlen(reason), sizeof reason - strlen(reason),
               "%s%s", i ? "; " : "", err ? err : path);
    }
  }
  if (lib) {
    void *push = dlsym(lib, "roctxRangePushA");
    void *pop = dlsym(lib, "roctxRangePop");
    if (push && pop) {
      memcpy(&roctx_push, &push, sizeof push);
      memcpy(&roctx_pop, &pop, sizeof pop);
      return;
    }
    snprintf(reason, sizeof reason,
             "%s lacks roctxRangePushA or roctxRangePop",
             chosen ? chosen : "libroctx64.so");
    dlclose(lib);
  }
  kiln_log(KILN_LOG_INFO, "KILN_TRACE=nvtx: no rocTX ranges: %s", reason);
  snprintf(why_not, sizeof why_not,
           "this kiln was built without NVTX 3's headers "
           "(nvtx3/nvToolsExt.h under -Dcuda-path) and rocTX could not be "
           "loaded (%s); rebuild kiln where the CUDA toolkit is, or install "
           "ROCm's roctracer (or set KILN_ROCTX_LIBRARY)",
           reason);
}

static void load(void) {
  load_roctx();
#if KILN_HAVE_NVTX
  domain = nvtxDomainCreateA("kiln");
  ready = true;
#endif
  if (roctx_push) ready = true;
}

kiln_status kiln_ranges_open(bool required) {
  pthread_once(&once, load);
  if (ready || !required) return KILN_OK;
  return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "KILN_TRACE=nvtx: %s",
                        why_not);
}

const char *kiln_range_name(const kiln_command *c, char *text, size_t size) {
  if (c->kind == KILN_COMMAND_LAUNCH) return c->kernel->name;
  if (kiln_command_moves_bytes(c->kind))
    snprintf(text, size, "%s %zu B", c->fn, c->size);
  else
    snprintf(text, size, "%s", c->fn);
  return text;
}

void kiln_ranges_push(const kiln_command *c, const char *name) {
  bool nvtx = false;
#if KILN_HAVE_NVTX
  nvtx = domain != NULL;
#endif
  if (!nvtx && !roctx_push) return;
#if KILN_HAVE_NVTX
  if (nvtx) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    nvtxStringHandle_t h =
        c->kind == KILN_COMMAND_LAUNCH ? registered(name) : NULL;
    if (h) {
      a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
      a.message.registered = h;
    } else {
      a.messageType = NVTX_MESSAGE_TYPE_ASCII;
      a.message.ascii = name;
    }
    nvtxDomainRangePushEx(domain, &a);
  }
#endif
  if (roctx_push) roctx_push(name);
}

void kiln_ranges_pop(void) {
#if KILN_HAVE_NVTX
  if (domain) nvtxDomainRangePop(domain);
#endif
  if (roctx_pop) roctx_pop();
}
