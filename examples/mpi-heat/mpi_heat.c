/*
 * mpi-heat: the 2-D heat equation (explicit 5-point stencil) split by rows
 * over MPI ranks, one kiln context per rank.
 *
 * kiln has no transport of its own: MPI moves the halo rows. Each rank opens
 * its context on device (local rank mod device count) of the backend
 * KILN_BACKEND names (or the one kiln picks); KILN_DEVICE, when set, wins.
 * Every step a rank updates its first and last rows, queues their copy to a
 * pinned kiln host buffer, updates its inner rows while MPI swaps the copied
 * rows with the neighbours, and queues the received rows into its halo.
 * Under a CUDA-aware MPI on the CUDA backend, MPI gets the device addresses
 * instead and no host buffer is involved.
 *
 *     mpirun -n R mpi-heat [--host-staging] [--no-check] [NX NY STEPS]
 *
 * NX x NY points (default 8192 x 8192), STEPS steps (default 100). Rank 0
 * prints the time per step and the share of it the halo exchange adds (the
 * steps are timed once without it), then runs the whole grid alone (a
 * one-rank run on its own device) and checks that both results are the
 * same bit for bit.
 *
 * Exit status: 0 pass, 1 failure, 2 bad argument, 77 when the chosen
 * backend cannot run on this machine (kiln's message says what is there).
 * One file, over 600 lines, so that the example reads top to bottom as a
 * program a user would write.
 */
#include <kiln/kiln.h>

#include <mpi.h>
#if defined(MPI_HEAT_HAVE_NATIVE) && defined(MPI_HEAT_HAVE_CUDA_QUERY)
#include <mpi-ext.h>
#define MPI_HEAT_CUDA_AWARE 1
#endif

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Written by tools/kiln-embed at build time. */
extern const kiln_module_image heat_images[];
extern const size_t heat_images_count;

enum { EXIT_BAD_ARGUMENT = 2, EXIT_UNAVAILABLE = 77 };

#define HEAT_DEFAULT_SIZE 8192u
#define HEAT_DEFAULT_STEPS 100u
/* Below 1/4 the explicit scheme is stable. */
#define HEAT_ALPHA 0.2f
#define HEAT_BLOCK_X 32u
#define HEAT_BLOCK_Y 8u
/* The kernels index with 32-bit unsigned integers, and MPI counts the
 * gathered grid in an int. */
#define HEAT_MAX_POINTS ((size_t)1 << 30)

typedef struct options {
  unsigned nx, ny, steps;
  bool host_staging; /* never hand device addresses to MPI */
  bool check;
} options;

/* One rank's part of the grid: local rows 1..rows are its own, local rows
 * 0 and rows + 1 the halo copies of its neighbours' edge rows. */
typedef struct slab {
  unsigned nx, ny, rows, first_global_row;
  int up, down;         /* neighbour ranks, MPI_PROC_NULL at the grid's edges */
  kiln_buffer *grid[2]; /* the step reads grid[cur] and writes the other */
} slab;

/* How the halo rows move. */
typedef enum halo_mode {
  HALO_NONE,   /* not at all: times the steps without the exchange */
  HALO_HOST,   /* through pinned host buffers */
  HALO_DEVICE, /* device addresses to MPI where it takes them, else host */
} halo_mode;

typedef struct timing {
  double step_s; /* wall time per step */
  double halo_s; /* per step: MPI wall time plus the staging copies */
  bool device_addresses;
} timing;

static void report(int rank, const char *call, kiln_status status) {
  fprintf(stderr, "mpi-heat: rank %d: %s failed: %s: %s\n", rank, call,
          kiln_status_name(status), kiln_last_error());
}

#define CHECK(call)                 \
  do {                              \
    kiln_status status_ = (call);   \
    if (status_ != KILN_OK) {       \
      report(rank, #call, status_); \
      goto out;                     \
    }                               \
  } while (0)

#define RELEASE(call)               \
  do {                              \
    kiln_status status_ = (call);   \
    if (status_ != KILN_OK) {       \
      report(rank, #call, status_); \
      ok = false;                   \
    }                               \
  } while (0)

/* The Vulkan validation layer's findings arrive as error-level log
 * messages: each one fails the run. */
static atomic_uint logged_errors;

static void on_log(kiln_log_level level, const char *message, void *user_data) {
  (void)user_data;
  if (level == KILN_LOG_ERROR) atomic_fetch_add(&logged_errors, 1u);
  fprintf(stderr, "kiln: %s\n", message);
}

/* The initial temperature of global point (row, col) in [0, 1): a hash, so
 * that every rank makes its rows (and its halo) without the others. */
static float initial_value(unsigned row, unsigned col, unsigned nx) {
  uint64_t z = (uint64_t)row * nx + col + UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  z ^= z >> 31;
  return (float)(z >> 40) / (float)(1u << 24);
}

/* FNV-1a over the grid's bytes, to compare runs bit for bit. */
static uint64_t checksum(const float *v, size_t n) {
  const unsigned char *p = (const unsigned char *)v;
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n * sizeof *v; i++) {
    h ^= p[i];
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

static size_t row_bytes(const slab *s) { return (size_t)s->nx * sizeof(float); }

static size_t row_offset(const slab *s, unsigned local_row) {
  return (size_t)local_row * row_bytes(s);
}

/* Queues the update of local rows [first, first + count) from grid[cur]. */
static kiln_status launch_rows(kiln_stream *stream, kiln_kernel *kernel,
                               const kiln_device_properties *props,
                               const slab *s, int cur, unsigned first,
                               unsigned count) {
  if (count == 0) return KILN_OK;
  kiln_launch_config config = {
      .grid = {(s->nx + HEAT_BLOCK_X - 1) / HEAT_BLOCK_X,
               (count + HEAT_BLOCK_Y - 1) / HEAT_BLOCK_Y, 1},
      .block = {HEAT_BLOCK_X, HEAT_BLOCK_Y, 1},
      .shared_memory_bytes = 0,
  };
  /* The kernel loops grid-stride, so the grid may be clamped. */
  if (config.grid.x > props->max_grid_size[0])
    config.grid.x = props->max_grid_size[0];
  if (config.grid.y > props->max_grid_size[1])
    config.grid.y = props->max_grid_size[1];
  const kiln_arg args[] = {
      kiln_arg_buffer(s->grid[1 - cur], 0),
      kiln_arg_buffer(s->grid[cur], 0),
      kiln_arg_u32(s->nx),
      kiln_arg_u32(first),
      kiln_arg_u32(count),
      kiln_arg_u32(s->first_global_row),
      kiln_arg_u32(s->ny),
      kiln_arg_f32(HEAT_ALPHA),
  };
  return kiln_launch(stream, kernel, &config, args,
                     sizeof args / sizeof args[0]);
}

#ifdef MPI_HEAT_CUDA_AWARE
/* Whether MPI takes CUDA device addresses, asked at run time: an MPI built
 * with CUDA support may still run without it. */
static bool mpi_takes_device_addresses(kiln_context *ctx) {
  return kiln_context_backend(ctx) == KILN_BACKEND_CUDA &&
         MPIX_Query_cuda_support() == 1;
}

static kiln_status device_row(const slab *s, int which, unsigned local_row,
                              void **out_address) {
  kiln_native_buffer native;
  kiln_status status = kiln_buffer_get_native(s->grid[which], &native);
  if (status != KILN_OK) return status;
  *out_address =
      (void *)(uintptr_t)(native.device_address + row_offset(s, local_row));
  return KILN_OK;
}

/* Swaps edge rows of grid[next] straight between devices; the caller has
 * waited for the edge rows to be computed. */
static int exchange_device(const slab *s, int next, int rank) {
  void *first = NULL, *last = NULL, *halo_up = NULL, *halo_down = NULL;
  kiln_status status;
  if ((status = device_row(s, next, 1, &first)) != KILN_OK ||
      (status = device_row(s, next, s->rows, &last)) != KILN_OK ||
      (status = device_row(s, next, 0, &halo_up)) != KILN_OK ||
      (status = device_row(s, next, s->rows + 1, &halo_down)) != KILN_OK) {
    report(rank, "kiln_buffer_get_native", status);
    return MPI_ERR_OTHER;
  }
  int rc = MPI_Sendrecv(first, (int)s->nx, MPI_FLOAT, s->up, 0, halo_down,
                        (int)s->nx, MPI_FLOAT, s->down, 0, MPI_COMM_WORLD,
                        MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) return rc;
  return MPI_Sendrecv(last, (int)s->nx, MPI_FLOAT, s->down, 1, halo_up,
                      (int)s->nx, MPI_FLOAT, s->up, 1, MPI_COMM_WORLD,
                      MPI_STATUS_IGNORE);
}
#endif

/* Runs `steps` steps of the grid split over `comm` and leaves this rank's
 * own rows in *out_rows (malloc'd, rows x nx floats). */
static bool run(kiln_context *ctx, kiln_kernel *kernel, MPI_Comm comm,
                const options *opt, halo_mode mode, float **out_rows,
                unsigned *out_first_row, unsigned *out_rows_count,
                timing *out_timing) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  bool ok = false;
  slab s = {.nx = opt->nx, .ny = opt->ny};
  unsigned base = opt->ny / (unsigned)size, extra = opt->ny % (unsigned)size;
  unsigned r = (unsigned)rank;
  s.rows = base + (r < extra ? 1u : 0u);
  s.first_global_row = r * base + (r < extra ? r : extra);
  s.up = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  s.down = rank + 1 < size ? rank + 1 : MPI_PROC_NULL;
  /* Ranks of other communicators than the world send in it: their world
   * ranks are needed. */
  MPI_Group group, world_group;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  int neighbours[2] = {s.up, s.down};
  MPI_Group_translate_ranks(group, 2, neighbours, world_group, neighbours);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  s.up = neighbours[0];
  s.down = neighbours[1];

  kiln_device_properties props;
  kiln_stream *stream = NULL;
  kiln_host_buffer *send = NULL, *recv = NULL;
  kiln_event *events[4] = {NULL, NULL, NULL, NULL};
  float *host = NULL;
  const size_t slab_floats = (size_t)s.nx * (s.rows + 2);
  const size_t rb = row_bytes(&s);
  bool device_addresses = false;
#ifdef MPI_HEAT_CUDA_AWARE
  device_addresses = mode == HALO_DEVICE && mpi_takes_device_addresses(ctx);
#endif
  const bool exchange = mode != HALO_NONE;
  const bool staged = exchange && !device_addresses;

  host = malloc(slab_floats * sizeof *host);
  if (host == NULL) {
    fprintf(stderr, "mpi-heat: rank %d: cannot allocate %zu bytes\n", rank,
            slab_floats * sizeof *host);
    goto out;
  }
  /* The halo rows start as the neighbours' initial edge rows, so the first
   * step needs no exchange before it. */
  for (unsigned row = 0; row < s.rows + 2; ++row) {
    long global_row = (long)s.first_global_row + (long)row - 1;
    for (unsigned col = 0; col < s.nx; ++col)
      host[(size_t)row * s.nx + col] =
          global_row < 0 || global_row >= (long)s.ny
              ? 0.0f
              : initial_value((unsigned)global_row, col, s.nx);
  }
  CHECK(kiln_context_get_properties(ctx, &props));
  CHECK(kiln_context_default_stream(ctx, &stream));
  for (int i = 0; i < 2; ++i) {
    CHECK(kiln_buffer_create(ctx, slab_floats * sizeof *host,
                             KILN_BUFFER_DEFAULT, &s.grid[i]));
    CHECK(kiln_buffer_write(stream, s.grid[i], 0, host,
                            slab_floats * sizeof *host));
  }
  CHECK(kiln_host_buffer_create(ctx, 2 * rb, 0, &send));
  CHECK(kiln_host_buffer_create(ctx, 2 * rb, 0, &recv));
  for (int i = 0; i < 4; ++i) CHECK(kiln_event_create(ctx, &events[i]));
  kiln_event *d2h_begin = events[0], *d2h_end = events[1];
  kiln_event *h2d_begin = events[2], *h2d_end = events[3];
  float *send_rows = kiln_host_buffer_data(send);
  float *recv_rows = kiln_host_buffer_data(recv);

  double start = 0.0, halo = 0.0;
  int cur = 0;
  for (unsigned step = 0; step < opt->steps; ++step) {
    /* The first step loads the kernel: time the others. */
    if (step == 1) {
      CHECK(kiln_stream_synchronize(stream));
      MPI_Barrier(comm);
      start = MPI_Wtime();
      halo = 0.0;
    }
    const int next = 1 - cur;
    /* Edge rows first, so that their exchange overlaps the inner rows. */
    CHECK(launch_rows(stream, kernel, &props, &s, cur, 1, 1));
    if (s.rows > 1)
      CHECK(launch_rows(stream, kernel, &props, &s, cur, s.rows, 1));
    CHECK(kiln_event_record(d2h_begin, stream));
    if (staged) {
      if (s.up != MPI_PROC_NULL)
        CHECK(kiln_buffer_read_async(stream, s.grid[next], row_offset(&s, 1),
                                     send, 0, rb));
      if (s.down != MPI_PROC_NULL)
        CHECK(kiln_buffer_read_async(stream, s.grid[next],
                                     row_offset(&s, s.rows), send, rb, rb));
    }
    CHECK(kiln_event_record(d2h_end, stream));
    if (s.rows > 2)
      CHECK(launch_rows(stream, kernel, &props, &s, cur, 2, s.rows - 2));

    CHECK(kiln_event_synchronize(d2h_end));
    float ms = 0.0f;
    /* The previous step's halo upload: timed from the second step's on. */
    if (step > 1) {
      CHECK(kiln_event_elapsed_ms(h2d_begin, h2d_end, &ms));
      halo += (double)ms * 1e-3;
    }
    CHECK(kiln_event_elapsed_ms(d2h_begin, d2h_end, &ms));
    if (step > 0) halo += (double)ms * 1e-3;

    double mpi_start = MPI_Wtime();
    int rc = MPI_SUCCESS;
#ifdef MPI_HEAT_CUDA_AWARE
    if (device_addresses) rc = exchange_device(&s, next, rank);
#endif
    if (staged) {
      /* Row 1 goes up while the row below arrives, then the other way. */
      rc = MPI_Sendrecv(send_rows, (int)s.nx, MPI_FLOAT, s.up, 0,
                        recv_rows + s.nx, (int)s.nx, MPI_FLOAT, s.down, 0,
                        MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS)
        rc = MPI_Sendrecv(send_rows + s.nx, (int)s.nx, MPI_FLOAT, s.down, 1,
                          recv_rows, (int)s.nx, MPI_FLOAT, s.up, 1,
                          MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rc != MPI_SUCCESS) {
      fprintf(stderr, "mpi-heat: rank %d: MPI_Sendrecv failed (%d)\n", rank,
              rc);
      goto out;
    }
    if (step > 0) halo += MPI_Wtime() - mpi_start;

    CHECK(kiln_event_record(h2d_begin, stream));
    if (staged) {
      if (s.up != MPI_PROC_NULL)
        CHECK(kiln_buffer_write_async(stream, s.grid[next], row_offset(&s, 0),
                                      recv, 0, rb));
      if (s.down != MPI_PROC_NULL)
        CHECK(kiln_buffer_write_async(
            stream, s.grid[next], row_offset(&s, s.rows + 1), recv, rb, rb));
    }
    CHECK(kiln_event_record(h2d_end, stream));
    cur = next;
  }
  CHECK(kiln_stream_synchronize(stream));
  double elapsed = MPI_Wtime() - start;
  if (opt->steps > 1) {
    float ms = 0.0f;
    CHECK(kiln_event_elapsed_ms(h2d_begin, h2d_end, &ms));
    halo += (double)ms * 1e-3;
  }
  unsigned timed = opt->steps > 1 ? opt->steps - 1 : 0;
  out_timing->step_s = timed > 0 ? elapsed / timed : 0.0;
  out_timing->halo_s = timed > 0 ? halo / timed : 0.0;
  out_timing->device_addresses = device_addresses;

  CHECK(kiln_buffer_read(stream, s.grid[cur], row_offset(&s, 1), host,
                         (size_t)s.rows * rb));
  *out_rows = host;
  host = NULL;
  *out_first_row = s.first_global_row;
  *out_rows_count = s.rows;
  ok = true;

out:
  for (int i = 0; i < 4; ++i) RELEASE(kiln_event_destroy(events[i]));
  RELEASE(kiln_host_buffer_destroy(recv));
  RELEASE(kiln_host_buffer_destroy(send));
  RELEASE(kiln_buffer_destroy(s.grid[1]));
  RELEASE(kiln_buffer_destroy(s.grid[0]));
  free(host);
  /* The neighbours would wait for this rank's rows for ever. */
  if (!ok && size > 1) {
    fprintf(stderr, "mpi-heat: rank %d gives up: aborting the job\n", rank);
    MPI_Abort(MPI_COMM_WORLD, EXIT_FAILURE);
  }
  return ok;
}

static void usage(FILE *to) {
  fprintf(to,
          "usage: mpirun -n R mpi-heat [--host-staging] [--no-check] "
          "[NX NY STEPS]\n"
          "The 2-D heat equation on NX x NY points (default %u x %u) for "
          "STEPS steps\n(default %u), split by rows over the MPI ranks, one "
          "kiln context per rank.\n"
          "  --host-staging  exchange halos through pinned host buffers even "
          "where MPI\n                  takes CUDA device addresses\n"
          "  --no-check      skip rank 0's one-rank run and the bit-for-bit "
          "comparison\n"
          "KILN_BACKEND chooses the backend; the device is the local rank "
          "modulo the\ndevice count unless KILN_DEVICE is set.\n"
          "Exit status: 0 pass, 1 failure, 2 bad argument, 77 backend not "
          "available here.\n",
          HEAT_DEFAULT_SIZE, HEAT_DEFAULT_SIZE, HEAT_DEFAULT_STEPS);
}

/* Messages go to `to`, or nowhere for NULL. */
static int parse_unsigned(FILE *to, const char *name, const char *text,
                          unsigned min, unsigned *out) {
  char *end = NULL;
  errno = 0;
  unsigned long value = strtoul(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-' ||
      value < min || value > UINT32_MAX) {
    if (to != NULL)
      fprintf(to,
              "mpi-heat: %s must be a whole number of at least %u, not "
              "'%s'\n",
              name, min, text);
    return -1;
  }
  *out = (unsigned)value;
  return 0;
}

/* 0 with *opt filled, 1 after printing the help, -1 on a bad argument
 * (reported by rank 0 only, the others being silent). */
static int parse_options(int argc, char **argv, int ranks, bool speak,
                         options *opt) {
  *opt = (options){HEAT_DEFAULT_SIZE, HEAT_DEFAULT_SIZE, HEAT_DEFAULT_STEPS,
                   false, true};
  const char *numbers[3];
  int count = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      if (speak) usage(stdout);
      return 1;
    } else if (strcmp(argv[i], "--host-staging") == 0) {
      opt->host_staging = true;
    } else if (strcmp(argv[i], "--no-check") == 0) {
      opt->check = false;
    } else if (argv[i][0] != '-' && count < 3) {
      numbers[count++] = argv[i];
    } else {
      if (speak) usage(stderr);
      return -1;
    }
  }
  FILE *to = speak ? stderr : NULL;
  if (count != 0 && count != 3) {
    if (to != NULL) usage(to);
    return -1;
  }
  if (count == 3) {
    /* At least 3 x 3 points, so that some point is not on an edge. */
    if (parse_unsigned(to, "NX", numbers[0], 3, &opt->nx) != 0 ||
        parse_unsigned(to, "NY", numbers[1], 3, &opt->ny) != 0 ||
        parse_unsigned(to, "STEPS", numbers[2], 1, &opt->steps) != 0)
      return -1;
  }
  if ((size_t)opt->nx * opt->ny > HEAT_MAX_POINTS) {
    if (to != NULL)
      fprintf(to, "mpi-heat: NX x NY must be at most %zu points\n",
              HEAT_MAX_POINTS);
    return -1;
  }
  if (opt->ny < (unsigned)ranks) {
    if (to != NULL)
      fprintf(to,
              "mpi-heat: NY (%u) must be at least the number of "
              "ranks (%d)\n",
              opt->ny, ranks);
    return -1;
  }
  return 0;
}

/* The rank's index among the ranks of its node. */
static int local_rank(void) {
  MPI_Comm node;
  int rank = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &node);
  MPI_Comm_rank(node, &rank);
  MPI_Comm_free(&node);
  return rank;
}

/* Opens the context on device (local rank mod device count) of the backend
 * KILN_BACKEND names, or of the one kiln picks when it names none (learnt
 * from a first context on kiln's choice). KILN_DEVICE, when set, wins. */
static kiln_status open_context(int node_rank, kiln_context **out_ctx,
                                size_t *out_device) {
  kiln_context_options opt = kiln_context_options_default();
  *out_device = SIZE_MAX;
  const char *device = getenv("KILN_DEVICE");
  if (device != NULL && device[0] != '\0')
    return kiln_context_create(&opt, out_ctx);
  kiln_backend backend = KILN_BACKEND_AUTO;
  const char *name = getenv("KILN_BACKEND");
  kiln_status status = KILN_OK;
  if (name != NULL && name[0] != '\0') {
    status = kiln_backend_from_name(name, &backend);
    if (status != KILN_OK) return status;
  }
  if (backend == KILN_BACKEND_AUTO) {
    kiln_context *probe = NULL;
    status = kiln_context_create(&opt, &probe);
    if (status != KILN_OK) return status;
    backend = kiln_context_backend(probe);
    status = kiln_context_destroy(probe);
    if (status != KILN_OK) return status;
  }
  size_t count = 0;
  status = kiln_device_count(backend, &count);
  if (status != KILN_OK) return status;
  opt.backend = backend;
  /* With no device, kiln_context_create says why in words. */
  if (count > 0) {
    opt.device_index = (size_t)node_rank % count;
    *out_device = opt.device_index;
  }
  return kiln_context_create(&opt, out_ctx);
}

/* Every rank's outcome, agreed: failure wins over "unavailable". */
static int agree(int code) {
  int mine = code == EXIT_SUCCESS ? 0 : code == EXIT_UNAVAILABLE ? 1 : 2;
  int worst = 0;
  MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst == 0   ? EXIT_SUCCESS
         : worst == 1 ? EXIT_UNAVAILABLE
                      : EXIT_FAILURE;
}

/* Gathers the ranks' rows in order into *out_grid (malloc'd, on rank 0). */
static bool gather(const options *opt, int rank, int ranks, const float *rows,
                   unsigned row_count, float **out_grid) {
  int mine = (int)(row_count * opt->nx);
  int *counts = NULL, *displs = NULL;
  float *grid = NULL;
  bool ok = true;
  if (rank == 0) {
    counts = malloc((size_t)ranks * sizeof *counts);
    displs = malloc((size_t)ranks * sizeof *displs);
    grid = malloc((size_t)opt->nx * opt->ny * sizeof *grid);
    ok = counts != NULL && displs != NULL && grid != NULL;
    if (!ok) fprintf(stderr, "mpi-heat: rank 0 cannot hold the whole grid\n");
  }
  if (agree(ok ? EXIT_SUCCESS : EXIT_FAILURE) != EXIT_SUCCESS) {
    ok = false;
    goto out;
  }
  MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    int offset = 0;
    for (int i = 0; i < ranks; ++i) {
      displs[i] = offset;
      offset += counts[i];
    }
  }
  MPI_Gatherv(rows, mine, MPI_FLOAT, grid, counts, displs, MPI_FLOAT, 0,
              MPI_COMM_WORLD);
  *out_grid = grid;
  grid = NULL;
out:
  free(grid);
  free(displs);
  free(counts);
  return ok;
}

/* Loads the kernel on this rank's context; says what it runs on. */
static bool load_kernel(kiln_context *ctx, int rank, int ranks, size_t device,
                        kiln_module **out_module, kiln_kernel **out_kernel) {
  kiln_device_properties props;
  CHECK(kiln_context_get_properties(ctx, &props));
  char index[32] = "from KILN_DEVICE";
  if (device != SIZE_MAX) snprintf(index, sizeof index, "%zu", device);
  printf("mpi-heat: rank %d of %d: kiln %s, backend %s, device %s: %s\n", rank,
         ranks, kiln_version_string(),
         kiln_backend_name(kiln_context_backend(ctx)), index, props.name);
  fflush(stdout);
  CHECK(kiln_module_create(ctx, heat_images, heat_images_count, out_module));
  CHECK(kiln_module_get_kernel(*out_module, "heat_step", out_kernel));
  return true;
out:
  return false;
}

/* Rank 0: runs the whole grid alone and compares it with `grid`. */
static bool check_one_rank(kiln_context *ctx, kiln_kernel *kernel,
                           const options *opt, const float *grid) {
  timing one;
  unsigned first = 0, count = 0;
  float *reference = NULL;
  if (!run(ctx, kernel, MPI_COMM_SELF, opt, HALO_HOST, &reference, &first,
           &count, &one))
    return false;
  size_t points = (size_t)opt->nx * opt->ny, differ = 0, first_differ = 0;
  for (size_t i = 0; i < points; ++i)
    if (memcmp(&grid[i], &reference[i], sizeof *grid) != 0 && differ++ == 0)
      first_differ = i;
  printf("mpi-heat: one rank alone: %.3f ms per step, checksum %016llx\n",
         one.step_s * 1e3, (unsigned long long)checksum(reference, points));
  if (differ != 0)
    printf(
        "mpi-heat: %zu of %zu points differ from the one-rank run, the "
        "first at row %zu, column %zu\n",
        differ, points, first_differ / opt->nx, first_differ % opt->nx);
  free(reference);
  return differ == 0;
}

/* The split run, rank 0's report and the comparison with one rank. */
static bool solve(kiln_context *ctx, kiln_kernel *kernel, const options *opt,
                  int rank, int ranks) {
  timing t, alone;
  unsigned first_row = 0, row_count = 0;
  float *rows = NULL, *grid = NULL;
  /* First the same steps with no exchange at all (their result is wrong
   * at the slab edges and thrown away): what a step costs without it. */
  bool ran = run(ctx, kernel, MPI_COMM_WORLD, opt, HALO_NONE, &rows, &first_row,
                 &row_count, &alone);
  free(rows);
  rows = NULL;
  if (ran)
    ran = run(ctx, kernel, MPI_COMM_WORLD, opt,
              opt->host_staging ? HALO_HOST : HALO_DEVICE, &rows, &first_row,
              &row_count, &t);
  if (agree(ran ? EXIT_SUCCESS : EXIT_FAILURE) != EXIT_SUCCESS) {
    free(rows);
    return false;
  }
  /* The slowest rank sets the pace. */
  double mine[3] = {t.step_s, t.halo_s, alone.step_s};
  double slowest[3] = {0.0, 0.0, 0.0};
  MPI_Reduce(mine, slowest, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  bool ok = gather(opt, rank, ranks, rows, row_count, &grid);
  free(rows);
  if (ok && rank == 0) {
    size_t points = (size_t)opt->nx * opt->ny;
    double step = slowest[0], exposed = slowest[0] - slowest[2];
    printf(
        "mpi-heat: %d rank%s, %u x %u points, %u steps: %.3f ms per step, "
        "%.3f ms without the halo exchange\n",
        ranks, ranks == 1 ? "" : "s", opt->nx, opt->ny, opt->steps, step * 1e3,
        slowest[2] * 1e3);
    printf(
        "mpi-heat: halo exchange (%s): %.1f %% of a step "
        "(%.3f ms added); its copies and MPI calls take %.3f ms, "
        "overlapping the inner rows\n",
        t.device_addresses ? "device addresses to a CUDA-aware MPI"
                           : "staged through pinned host buffers",
        step > 0.0 ? 100.0 * exposed / step : 0.0, exposed * 1e3,
        slowest[1] * 1e3);
    printf("mpi-heat: checksum %016llx\n",
           (unsigned long long)checksum(grid, points));
    if (opt->check) ok = check_one_rank(ctx, kernel, opt, grid);
    printf("mpi-heat: %s%s\n", ok ? "PASS" : "FAIL",
           !opt->check ? " (not compared with one rank: --no-check)"
           : ok        ? ": the same bits as one rank alone"
                       : "");
  }
  free(grid);
  return ok;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);

  options opt;
  int parsed = parse_options(argc, argv, ranks, rank == 0, &opt);
  if (parsed != 0) {
    MPI_Finalize();
    return parsed > 0 ? EXIT_SUCCESS : EXIT_BAD_ARGUMENT;
  }
  kiln_set_log_handler(on_log, NULL);
  if (kiln_get_log_level() < KILN_LOG_ERROR) kiln_set_log_level(KILN_LOG_ERROR);

  /* Each stage ends with every rank agreeing on the outcome, so that no
   * rank waits in MPI for one that has given up. */
  kiln_context *ctx = NULL;
  kiln_module *module = NULL;
  kiln_kernel *kernel = NULL;
  bool ok = true;
  size_t device = SIZE_MAX;
  kiln_status status = open_context(local_rank(), &ctx, &device);
  if (status != KILN_OK) report(rank, "opening the context", status);
  int result = agree(status == KILN_OK                  ? EXIT_SUCCESS
                     : status == KILN_ERROR_UNAVAILABLE ? EXIT_UNAVAILABLE
                                                        : EXIT_FAILURE);
  if (result == EXIT_SUCCESS)
    result = agree(load_kernel(ctx, rank, ranks, device, &module, &kernel)
                       ? EXIT_SUCCESS
                       : EXIT_FAILURE);
  if (result == EXIT_SUCCESS && !solve(ctx, kernel, &opt, rank, ranks))
    result = EXIT_FAILURE;

  RELEASE(kiln_module_destroy(module));
  RELEASE(kiln_context_destroy(ctx));
  unsigned errors = atomic_load(&logged_errors);
  if (errors != 0) {
    fprintf(stderr, "mpi-heat: rank %d: kiln logged %u error%s (above)\n", rank,
            errors, errors == 1 ? "" : "s");
    ok = false;
  }
  if (!ok) result = EXIT_FAILURE;
  result = agree(result);
  MPI_Finalize();
  return result;
}
