/* An NVTX injection library for the tests: NVTX 3's own loader finds it
 * through NVTX_INJECTION64_PATH, as it finds Nsight Systems', and hands it
 * the table of NVTX's domain calls to fill. It records the ranges pushed
 * and popped, one line each, which the test reads back through
 * nvtx_recorder_text():
 *   push kiln: kiln_buffer_write 64 B
 *   push kiln: k (registered)
 *   pop kiln
 * A domain and a registered string are their names, copied. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nvToolsExt.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char text[1 << 16];
static size_t length;

static void add(const char *fmt, ...) {
  pthread_mutex_lock(&lock);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(text + length, sizeof text - length, fmt, ap);
  va_end(ap);
  if (n > 0 && (size_t)n < sizeof text - length) length += (size_t)n;
  pthread_mutex_unlock(&lock);
}

static const char *name_of(const void *handle) {
  return handle ? (const char *)handle : "(none)";
}

static nvtxDomainHandle_t domain_create(const char *name) {
  return (nvtxDomainHandle_t)(void *)strdup(name);
}

static nvtxStringHandle_t register_string(nvtxDomainHandle_t domain,
                                          const char *string) {
  (void)domain;
  return (nvtxStringHandle_t)(void *)strdup(string);
}

static int push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t *a) {
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
    add("push %s: %s (registered)\n", name_of(domain),
        name_of(a->message.registered));
  else if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
    add("push %s: %s\n", name_of(domain), a->message.ascii);
  else
    add("push %s: message of type %d\n", name_of(domain),
        (int)a->messageType);
  return 0;
}

static int pop(nvtxDomainHandle_t domain) {
  add("pop %s\n", name_of(domain));
  return 0;
}

EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  const NvtxExportTableCallbacks *callbacks = get_table(NVTX_ETID_CALLBACKS);
  NvtxFunctionTable table;
  unsigned size;
  if (!callbacks ||
      !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table,
                                         &size) ||
      size < NVTX_CBID_CORE2_DomainCreateA)
    return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = (NvtxFunctionPointer)domain_create;
  *table[NVTX_CBID_CORE2_DomainRegisterStringA] =
      (NvtxFunctionPointer)register_string;
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)push;
  *table[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)pop;
  add("injected\n");
  return 1;
}

/* What was recorded since the last call, which clears it; the caller
 * frees the copy. */
EXPORT char *nvtx_recorder_text(void) {
  pthread_mutex_lock(&lock);
  char *copy = strdup(text);
  length = 0;
  text[0] = '\0';
  pthread_mutex_unlock(&lock);
  return copy;
}
