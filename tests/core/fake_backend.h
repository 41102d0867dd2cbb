/*
 * A backend without a GPU, for testing the core: "device memory" is host
 * memory (device_address is the host pointer), transfers run at once,
 * streams and events are trivial, and a launch records what the core handed
 * it. Images are KILN_IMAGE_SPIRV (by default) whose bytes are text: kernel
 * names separated by white space, each optionally followed by a parameter
 * list in parentheses, then optionally by ":N", the kernel's packed
 * argument size (kernel_init sets k->arg_bytes). A list, "saxpy(p,p,f,u)",
 * "none()", sets k->param_count and k->params: comma-separated parameters,
 * each a kind letter, b (bits), p (pointer), i (integer), s (signed), u
 * (unsigned) or f (float), then optionally its size in bytes (8 for p, 4
 * for the others by default: "u8" is 64-bit) and "@OFFSET" (by default the
 * next offset that is a multiple of the size's largest power-of-two factor,
 * at most 16), e.g. "k(b1,u@8,f8)". A word that is not of that shape makes
 * the image invalid. The fake also runs kiln's four built-in kernels on the
 * host so the core's helpers (fill through a kernel, axpy, reductions) can
 * be checked end to end. Graphs: while the core builds one, the ops keep
 * what they are handed (s->building) as the graph's nodes, arguments
 * copied, and do no work; a replay issues the nodes through the same ops,
 * so it does the work then. graph_update puts a launch's new arguments
 * into its node, so a replay sees them only if the core passed them on;
 * a test that clears ops.graph_updates gets the core's rebuild instead.
 *
 * KILN_DEBUG=reorder (fake_queue.c): the ops hold each stream's commands
 * and the host waits (synchronizes, event queries, blocking reads) and
 * deinits run them, the stream that began holding last first, ordered
 * across streams only by event waits. Without the mode every command runs
 * when its op is called.
 *
 * Each fake is one instance, configured by the test before fake_install():
 * which kind it poses as, whether it is available (or why not), its devices.
 * At most one fake per kind can be installed at a time.
 */
#ifndef KILN_TESTS_FAKE_BACKEND_H
#define KILN_TESTS_FAKE_BACKEND_H

#include <stdatomic.h>

#include "core/backend.h"

typedef enum fake_op {
  FAKE_OP_CONTEXT_INIT,
  FAKE_OP_CONTEXT_SYNCHRONIZE,
  FAKE_OP_BUFFER_INIT,
  FAKE_OP_HOST_BUFFER_INIT,
  FAKE_OP_WRITE,
  FAKE_OP_READ,
  FAKE_OP_COPY,
  FAKE_OP_FILL,
  FAKE_OP_WRITE_ASYNC,
  FAKE_OP_READ_ASYNC,
  FAKE_OP_MODULE_INIT,
  FAKE_OP_KERNEL_INIT,
  FAKE_OP_LAUNCH,
  FAKE_OP_STREAM_INIT,
  FAKE_OP_STREAM_SYNCHRONIZE,
  FAKE_OP_EVENT_INIT,
  FAKE_OP_EVENT_RECORD,
  FAKE_OP_STREAM_WAIT_EVENT,
  FAKE_OP_EVENT_SYNCHRONIZE,
  FAKE_OP_EVENT_QUERY,
  FAKE_OP_EVENT_ELAPSED,
  FAKE_OP_GRAPH_BEGIN,
  FAKE_OP_GRAPH_LAUNCH,
  FAKE_OP_GRAPH_UPDATE,
  FAKE_OP_COUNT
} fake_op;

/* One launch as the backend received it. */
typedef struct fake_launch {
  char kernel[64];
  size_t kernel_arg_bytes;
  kiln_launch_config config;
  kiln_packed_args args;
} fake_launch;

#define FAKE_MAX_DEVICES 4
#define FAKE_LAUNCH_LOG 8

typedef struct fake_backend {
  /* First, so that a context's ops pointer leads back to its fake. Tests
   * may change entries (e.g. clear a sub-table: the fake then lacks that
   * ability) before installing. */
  kiln_backend_ops ops;
  char name[16];

  /* Configuration. */
  bool available;
  char reason[128];
  size_t device_count;
  kiln_device_properties devices[FAKE_MAX_DEVICES];
  /* Route buffer_fill through the core's kiln_fill_with_kernel. */
  bool fill_with_kernel;
  /* event_query answers NOT_READY while this is set. */
  bool events_pending;
  /* While set, no work ever finishes: the three waits poll through
   * kiln_poll_until, as a driver without a timed wait does, until their
   * timeout (KILN_ERROR_TIMEOUT; with none, until another thread clears
   * the flag), and event_query answers NOT_READY. */
  atomic_bool hung;
  /* The next call of `fail_op` returns `fail_status` (KILN_OK: none). */
  fake_op fail_op;
  kiln_status fail_status;

  /* Observations. */
  /* Atomic: tests create and destroy objects from several threads. */
  atomic_uint probe_calls;
  atomic_uint calls[FAKE_OP_COUNT];
  /* Objects initialised and not yet deinitialised, by kiln_object_type. */
  atomic_long live[KILN_OBJECT_EVENT + 1];
  /* The timeout the core passed to the last of the three waits, and how
   * many contexts were deinitialised abandoned (ctx->abandoned). */
  _Atomic uint64_t last_timeout_ns;
  atomic_uint abandoned;
  /* Run-time compilation (fake_compiler.c), on by default: the fake
   * "compiles" text into its own image format (see fake_compile). */
  bool compiler_available;
  char compiler_reason[128];
  char compiler_version[32]; /* part of the description, so of the key */
  atomic_uint compiles;      /* compile op calls */
  /* The compiler's image_checks (GLSL only, as Vulkan's), and how many
   * images the last module_init got as checked. */
  char image_checks[32];
  size_t checked_images;
  char last_target[64];
  size_t launch_count;
  fake_launch launches[FAKE_LAUNCH_LOG]; /* the last ones, a ring */
  /* kiln_stream_wait_native's last handle and value. */
  uint64_t last_wait_handle, last_wait_value;
  uint64_t last_fill_pattern;
  size_t last_fill_pattern_size;
} fake_backend;

/* Counts a call of `op` and answers the failure injected for it, if any:
 * what every op of the fake does first. */
kiln_status fake_enter(fake_backend *fb, fake_op op);

/* Gives a fake's table the graphs and graph_updates sub-tables
 * (fake_graph.c). */
void fake_graph_ops(kiln_backend_ops *ops);

/* Gives a fake's table the interop sub-table (fake_interop.c): device
 * memory is host memory, so an imported buffer is the caller's malloc'd
 * block, freed by kiln only when adopted; a context's native handles name
 * its device by vk_physical_device, a pointer to its properties in the
 * fake, whatever the kind. */
void fake_interop_ops(kiln_backend_ops *ops);

/* Resets `fb` to an available fake of `kind` with one discrete GPU. */
void fake_init(fake_backend *fb, kiln_backend kind);

/* Gives the fake `count` devices of the given types, named
 * "fake <kind> <type> <index>". */
void fake_set_devices(fake_backend *fb, size_t count,
                      const kiln_device_type *types);

/* Makes the fake unavailable with `reason`. */
void fake_set_unavailable(fake_backend *fb, const char *reason);

/* Gives the fake a compiler: GLSL for a Vulkan fake, CUDA C++ for CUDA,
 * HIP then CUDA C++ for HIP (fake_init does this). The fake compiler copies
 * the source into a fake image line by line, except these directives:
 *   #include "x"   the text of header x (the options' headers, then the
 *                  include directories); a compile error if there is none
 *   #ifdef NAME / #endif   the lines between only if NAME is defined
 *   #warning text  a warning line in the log: "<name>:<line>: warning: text"
 *   #error text    a compile error: "<name>:<line>: error: text"
 * A raw option of the backend's language that starts with "--bogus" is
 * rejected as an invalid option. Each name expression (CUDA and HIP) is
 * lowered to "L_" and itself with every character but letters and digits
 * made '_', and a kernel of that name joins the image; an expression
 * with a '!' has no lowered name (a compile error). */
void fake_compiler_enable(fake_backend *fb);

/* The fake installed for `kind`, or NULL. */
fake_backend *fake_installed(kiln_backend kind);

/* Registers the fakes as the only backends (kiln_registry_override). */
void fake_install(fake_backend *const *fakes, size_t count);

/* The n-th most recent launch (0: the last); NULL if there were fewer. */
const fake_launch *fake_launch_back(const fake_backend *fb, size_t n);

/* A KILN_IMAGE_SPIRV image of the fake's text format (the text is not
 * copied: keep it alive until kiln_module_create returns). */
kiln_module_image fake_image(const char *text);

/* The sum of fb->live[]: objects the backend still holds. */
long fake_live_objects(const fake_backend *fb);

/* A cmocka fixture: an available fake Vulkan backend with one discrete GPU,
 * installed alone, and a context on it. The teardown fails the test if
 * destroying the context reports live objects or the fake still holds any:
 * every test releases what it creates. */
typedef struct fake_fixture {
  fake_backend fb;
  kiln_context *ctx;
} fake_fixture;

int fake_fixture_setup(void **state);
int fake_fixture_teardown(void **state);
/* fake_fixture_setup with `configure` applied to the fake (its tables,
 * say) before it is installed and the context made. */
int fake_fixture_setup_with(void **state, void (*configure)(fake_backend *));

#endif /* KILN_TESTS_FAKE_BACKEND_H */
