/*
 * Kernels from source at run time. The core owns what is the same on every
 * backend: checking the caller's sources and options, the cache key, the
 * disk cache (core/compile/cache.c), the logs and the timing. The backend owns its
 * compiler (its compiler table: compiler_load, compile_target, compile), or
 * has none (no compiler table). A compiled image then goes down the same
 * path as an ahead-of-time one (kiln_module_create_checked), so there is
 * one loader of images.
 *
 * Over 600 lines: the checks of a source list and its options, the cache
 * key made of the same fields, and the build that stores an entry only
 * once its module was made read one another's invariants; the disk cache
 * itself, the entries' format and the hashes are files of their own.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/internal.h"

/* Serialises loading a compiler and reading its description. */
static pthread_mutex_t compiler_lock = PTHREAD_MUTEX_INITIALIZER;
static char descriptions[KILN_BACKEND_COUNT][1024];

/* An include directory with more entries than this is not listed into the
 * cache key; such a compile bypasses the cache instead. */
#define INCLUDE_LISTING_LIMIT 4096
#define INCLUDE_LISTING_DEPTH 4

const char *kiln_source_language_name(kiln_source_language language) {
  switch (language) {
  case KILN_SOURCE_CUDA: return "CUDA C++";
  case KILN_SOURCE_HIP: return "HIP C++";
  case KILN_SOURCE_GLSL: return "GLSL";
  }
  return "unknown";
}

static const char *extension_of(kiln_source_language language) {
  switch (language) {
  case KILN_SOURCE_CUDA: return "cu";
  case KILN_SOURCE_HIP: return "hip";
  case KILN_SOURCE_GLSL: return "comp";
  }
  return "txt";
}

/* ---- The thread's last compile log ------------------------------------- */

static pthread_key_t log_key;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static bool log_key_ok;

static void make_log_key(void) {
  log_key_ok = pthread_key_create(&log_key, free) == 0;
}

/* Takes ownership of `log` (may be NULL) as this thread's last log. */
static void set_last_log(char *log) {
  pthread_once(&log_once, make_log_key);
  if (!log_key_ok) {
    free(log);
    return;
  }
  free(pthread_getspecific(log_key));
  pthread_setspecific(log_key, log);
}

const char *kiln_last_compile_log(void) {
  pthread_once(&log_once, make_log_key);
  const char *log = log_key_ok ? pthread_getspecific(log_key) : NULL;
  return log ? log : "";
}

/* ---- Compilers ----------------------------------------------------------- */

/* Loads ops' compiler under the lock; *out_description points into
 * descriptions[] (the description on success, the reason on failure). */
static kiln_status load_compiler(const kiln_backend_ops *ops,
                                 const char **out_description) {
  char *text = descriptions[ops->kind];
  pthread_mutex_lock(&compiler_lock);
  kiln_status st = ops->compiler->compiler_load(text, sizeof descriptions[0]);
  pthread_mutex_unlock(&compiler_lock);
  *out_description = text;
  return st;
}

kiln_status kiln_compiler_available(kiln_backend backend,
                                    const char **out_description) {
  static const char fn[] = "kiln_compiler_available";
  if (!out_description)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: out_description is NULL", fn);
  if (backend <= KILN_BACKEND_AUTO || backend >= KILN_BACKEND_COUNT)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: %d is not a backend (cuda, hip or vulkan)", fn,
                          (int)backend);
  const kiln_backend_ops *ops = kiln_registry_get(backend);
  if (!ops) {
    *out_description = "not compiled into this build of kiln";
    return kiln_set_error(KILN_ERROR_UNAVAILABLE,
                          "%s: the %s backend is not compiled into this "
                          "build of kiln",
                          fn, kiln_backend_name(backend));
  }
  if (!ops->compiler) {
    *out_description = "this backend has no run-time compiler";
    return kiln_set_error(KILN_ERROR_UNAVAILABLE,
                          "%s: the %s backend has no run-time compiler", fn,
                          ops->name);
  }
  kiln_status st = load_compiler(ops, out_description);
  if (st != KILN_OK) return kiln_set_error(st, "%s: %s", fn, *out_description);
  return KILN_OK;
}

/* ---- Checking the caller's arguments ------------------------------------ */

static kiln_status check_strings(const char *fn, const char *what,
                                 const char *const *list, size_t count) {
  if (count > 0 && !list)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: options->%s is NULL but its count is %zu", fn,
                          what, count);
  for (size_t i = 0; i < count; i++)
    if (!list[i] || !list[i][0])
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: options->%s[%zu] is %s", fn, what, i,
                            list[i] ? "empty" : "NULL");
  return KILN_OK;
}

static kiln_status check_options(const char *fn,
                                 const kiln_compile_options *o) {
  kiln_status st;
  if ((st = check_strings(fn, "defines", o->defines, o->define_count)) ||
      (st = check_strings(fn, "include_dirs", o->include_dirs,
                          o->include_dir_count)) ||
      (st = check_strings(fn, "cuda_options", o->cuda_options,
                          o->cuda_option_count)) ||
      (st = check_strings(fn, "hip_options", o->hip_options,
                          o->hip_option_count)) ||
      (st = check_strings(fn, "glsl_options", o->glsl_options,
                          o->glsl_option_count)))
    return st;
  for (size_t i = 0; i < o->define_count; i++)
    if (o->defines[i][0] == '=')
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: options->defines[%zu] (\"%s\") has no name "
                            "before '='",
                            fn, i, o->defines[i]);
  if (o->header_count > 0 && !o->headers)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: options->headers is NULL but header_count is "
                          "%zu",
                          fn, o->header_count);
  for (size_t i = 0; i < o->header_count; i++)
    if (!o->headers[i].name || !o->headers[i].name[0] || !o->headers[i].text)
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: options->headers[%zu] has %s", fn, i,
                            !o->headers[i].text ? "no text" : "no name");
  if (o->optimization > KILN_OPTIMIZE_SPEED)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: options->optimization %d is not a "
                          "kiln_optimization",
                          fn, (int)o->optimization);
  const uint32_t known = KILN_COMPILE_FAST_MATH | KILN_COMPILE_NO_CACHE |
                         KILN_COMPILE_NO_TOOLKIT_HEADERS;
  if (o->flags & ~known)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: options->flags has unknown bits 0x%x", fn,
                          o->flags & ~known);
  if (o->target && !o->target[0])
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: options->target is empty (NULL picks the "
                          "device's)",
                          fn);
  if (o->name_expression_count > 0 && !o->name_expressions)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: options->name_expressions is NULL but "
                          "name_expression_count is %zu",
                          fn, o->name_expression_count);
  for (size_t i = 0; i < o->name_expression_count; i++)
    if (!o->name_expressions[i] || !o->name_expressions[i][0])
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: options->name_expressions[%zu] is %s", fn,
                            i, o->name_expressions[i] ? "empty" : "NULL");
  return KILN_OK;
}

static bool known_language(kiln_source_language language) {
  return language >= KILN_SOURCE_CUDA && language <= KILN_SOURCE_GLSL;
}

static kiln_status check_sources(const char *fn, const kiln_source *sources,
                                 size_t count) {
  if (!sources || count == 0)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                          "%s: no sources given (sources is %s, "
                          "source_count is %zu)",
                          fn, sources ? "set" : "NULL", count);
  for (size_t i = 0; i < count; i++) {
    const kiln_source *s = &sources[i];
    if (!known_language(s->language))
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: source %zu has unknown language %d", fn, i,
                            (int)s->language);
    if (!s->text)
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: source %zu has no text", fn, i);
    if ((s->name && !s->name[0]) || (s->entry_point && !s->entry_point[0]))
      return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT,
                            "%s: source %zu has an empty %s (NULL picks a "
                            "default)",
                            fn, i,
                            s->name && !s->name[0] ? "name"
                                                   : "entry "
                                                     "point");
  }
  return KILN_OK;
}

/* ---- The cache key ----------------------------------------------------- */

typedef struct listed_file {
  char *path;
  long long size, mtime_ns;
} listed_file;

typedef struct listing {
  listed_file *files;
  size_t count, cap;
  bool too_big;
} listing;

static void list_dir(listing *l, const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; !l->too_big && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    char *path = malloc(len);
    struct stat sb;
    if (!path) {
      l->too_big = true;
      break;
    }
    snprintf(path, len, "%s/%s", dir, e->d_name);
    if (stat(path, &sb) != 0) {
      free(path);
      continue;
    }
    if (S_ISDIR(sb.st_mode)) {
      if (depth < INCLUDE_LISTING_DEPTH) list_dir(l, path, depth + 1);
      free(path);
      continue;
    }
    if (l->count == l->cap) {
      size_t cap = l->cap ? l->cap * 2 : 64;
      listed_file *files = cap <= INCLUDE_LISTING_LIMIT
                               ? realloc(l->files, cap * sizeof *files)
                               : NULL;
      if (!files) {
        l->too_big = true;
        free(path);
        break;
      }
      l->files = files;
      l->cap = cap;
    }
    l->files[l->count++] = (listed_file){
        path, (long long)sb.st_size,
        (long long)sb.st_mtim.tv_sec * 1000000000LL + sb.st_mtim.tv_nsec};
  }
  closedir(d);
}

static int by_path(const void *a, const void *b) {
  return strcmp(((const listed_file *)a)->path, ((const listed_file *)b)->path);
}

/* Adds what the include directories hold to the key: a file there may be
 * #included, and kiln cannot see which ones the compiler reads. False when
 * a directory is too large to list, so the compile must not be cached. */
static bool hash_include_dirs(kiln_sha256 *h, const kiln_compile_options *o) {
  bool ok = true;
  for (size_t i = 0; i < o->include_dir_count && ok; i++) {
    listing l = {0};
    list_dir(&l, o->include_dirs[i], 0);
    ok = !l.too_big;
    if (ok) qsort(l.files, l.count, sizeof *l.files, by_path);
    kiln_sha256_string(h, o->include_dirs[i]);
    for (size_t f = 0; f < l.count; f++) {
      if (ok) {
        kiln_sha256_string(h, l.files[f].path);
        kiln_sha256_field(h, &l.files[f].size, sizeof l.files[f].size);
        kiln_sha256_field(h, &l.files[f].mtime_ns, sizeof l.files[f].mtime_ns);
      }
      free(l.files[f].path);
    }
    free(l.files);
    if (!ok)
      kiln_log(KILN_LOG_INFO,
               "compile: include directory %s has more than %d files "
               "within %d levels; this compile bypasses the cache",
               o->include_dirs[i], INCLUDE_LISTING_LIMIT,
               INCLUDE_LISTING_DEPTH);
  }
  return ok;
}

static void hash_strings(kiln_sha256 *h, const char *const *list,
                         size_t count) {
  kiln_sha256_field(h, &count, sizeof count);
  for (size_t i = 0; i < count; i++) kiln_sha256_string(h, list[i]);
}

/* Every input that changes the compiler's output. False: do not cache. */
static bool cache_key(const kiln_backend_ops *ops, const char *compiler,
                      const char *checks, const kiln_compile_job *job,
                      kiln_hash *out) {
  const kiln_compile_options *o = job->options;
  kiln_sha256 h;
  kiln_sha256_init(&h);
  kiln_sha256_string(&h, "kiln compiled image v2");
  kiln_sha256_string(&h, kiln_version_string());
  kiln_sha256_string(&h, ops->name);
  kiln_sha256_string(&h, compiler);
  kiln_sha256_string(&h, checks);
  kiln_sha256_string(&h, job->target);
  uint32_t language = (uint32_t)job->language;
  kiln_sha256_field(&h, &language, sizeof language);
  kiln_sha256_string(&h, job->name);
  kiln_sha256_string(&h, job->entry_point);
  kiln_sha256_string(&h, job->text);
  kiln_sha256_field(&h, &o->header_count, sizeof o->header_count);
  for (size_t i = 0; i < o->header_count; i++) {
    kiln_sha256_string(&h, o->headers[i].name);
    kiln_sha256_string(&h, o->headers[i].text);
  }
  hash_strings(&h, o->defines, o->define_count);
  uint32_t optimization = (uint32_t)o->optimization;
  kiln_sha256_field(&h, &optimization, sizeof optimization);
  kiln_sha256_field(&h, &o->flags, sizeof o->flags);
  hash_strings(&h, o->cuda_options, o->cuda_option_count);
  hash_strings(&h, o->hip_options, o->hip_option_count);
  hash_strings(&h, o->glsl_options, o->glsl_option_count);
  hash_strings(&h, o->name_expressions, o->name_expression_count);
  bool ok = hash_include_dirs(&h, o);
  kiln_sha256_final(&h, out);
  return ok;
}

/* ---- Building a module ------------------------------------------------- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Appends `more` to the malloc'd *log. */
static void append_log(char **log, const char *more) {
  if (!more || !more[0]) return;
  size_t have = *log ? strlen(*log) : 0, add = strlen(more);
  bool newline = have > 0 && (*log)[have - 1] != '\n';
  char *grown = realloc(*log, have + newline + add + 1);
  if (!grown) return;
  if (newline) grown[have++] = '\n';
  memcpy(grown + have, more, add + 1);
  *log = grown;
}

/* The stem of a file name: "saxpy" for "dir/saxpy.comp". */
static char *stem_of(const char *name) {
  const char *base = strrchr(name, '/');
  base = base ? base + 1 : name;
  const char *dot = strrchr(base, '.');
  size_t len = dot && dot != base ? (size_t)(dot - base) : strlen(base);
  char *stem = malloc(len + 1);
  if (stem) {
    memcpy(stem, base, len);
    stem[len] = '\0';
  }
  return stem;
}

/* The backend's l-th source language, preferred first; 0 past the last,
 * and for a backend without a compiler. */
static kiln_source_language language_at(const kiln_backend_ops *ops, size_t l) {
  const kiln_compiler_ops *c = ops->compiler;
  const size_t n = c ? sizeof c->languages / sizeof c->languages[0] : 0;
  return l < n ? c->languages[l] : 0;
}

/* What became of one source: a cache hit, or a compile whose image goes
 * into the cache under `key` once a module of it was made. */
typedef struct compile_outcome {
  bool hit, store;
  kiln_hash key;
} compile_outcome;

/* Compiles one source (or takes it from the cache) into *out. */
static kiln_status compile_one(const kiln_backend_ops *ops,
                               const char *compiler, const char *checks,
                               const kiln_compile_job *job, bool use_cache,
                               kiln_compiled *out, compile_outcome *outcome) {
  use_cache = use_cache && cache_key(ops, compiler, checks, job,
                                     &outcome->key);
  outcome->hit = use_cache && kiln_entry_load(ops, &outcome->key, out);
  outcome->store = false;
  if (outcome->hit) {
    kiln_log(KILN_LOG_DEBUG, "compile: %s for %s from the cache", job->name,
             job->target);
    return KILN_OK;
  }
  kiln_status st = ops->compiler->compile(job, out);
  outcome->store = st == KILN_OK && use_cache;
  return st;
}

/* The name pairs of all compiled sources, moved into one array. */
static kiln_status take_aliases(const char *fn, kiln_compiled *compiled,
                                size_t count, kiln_name_pair **out,
                                size_t *out_count) {
  size_t total = 0;
  for (size_t i = 0; i < count; i++) total += compiled[i].name_count;
  if (!total) return KILN_OK;
  kiln_name_pair *all = calloc(total, sizeof *all);
  if (!all)
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory", fn);
  size_t n = 0;
  for (size_t i = 0; i < count; i++) {
    memcpy(all + n, compiled[i].names,
           compiled[i].name_count * sizeof *all);
    n += compiled[i].name_count;
    free(compiled[i].names);
    compiled[i].names = NULL;
    compiled[i].name_count = 0;
  }
  *out = all;
  *out_count = n;
  return KILN_OK;
}

kiln_status kiln_module_build(kiln_context *ctx, const char *fn,
                              const kiln_source *sources, size_t source_count,
                              const kiln_module_image *images,
                              size_t image_count,
                              const kiln_compile_options *options,
                              kiln_module **out) {
  const kiln_backend_ops *ops = ctx->ops;
  const double started = now_ms();
  /* The first language of the backend's list that any source is in. */
  kiln_source_language language = 0;
  size_t chosen = 0;
  for (size_t l = 0; language_at(ops, l) && !chosen; l++) {
    for (size_t i = 0; i < source_count; i++)
      if (sources[i].language == language_at(ops, l)) chosen++;
    if (chosen) language = language_at(ops, l);
  }
  size_t usable_images = 0;
  for (size_t i = 0; i < image_count; i++)
    if (ops->image_formats & (1u << images[i].format)) usable_images++;
  if (!chosen && !usable_images) {
    char langs[96] = "";
    for (size_t l = 0; language_at(ops, l); l++) {
      size_t used = strlen(langs);
      snprintf(langs + used, sizeof langs - used, "%s%s", l ? ", " : "",
               kiln_source_language_name(language_at(ops, l)));
    }
    return kiln_set_error(
        KILN_ERROR_NO_IMAGE,
        "%s: none of the %zu source%s and %zu image%s is for the %s "
        "backend, which compiles %s",
        fn, source_count, source_count == 1 ? "" : "s", image_count,
        image_count == 1 ? "" : "s", ops->name,
        langs[0] ? langs : "no source language (no run-time compiler)");
  }

  const char *compiler = "";
  kiln_status st = KILN_OK;
  if (chosen) {
    if (load_compiler(ops, &compiler) != KILN_OK)
      return kiln_set_error(KILN_ERROR_UNAVAILABLE,
                            "%s: the %s backend's compiler cannot be "
                            "loaded: %s",
                            fn, ops->name, compiler);
  }
  char target[64] = "";
  if (chosen && options->target)
    kiln_strlcpy(target, options->target, sizeof target);
  else if (chosen && (st = ops->compiler->compile_target(
                          ctx, target, sizeof target)) != KILN_OK)
    return kiln_error_in(fn, st);

  kiln_module_image *all = calloc(chosen + image_count, sizeof *all);
  kiln_compiled *compiled = calloc(chosen ? chosen : 1, sizeof *compiled);
  if (!all || !compiled) {
    free(all);
    free(compiled);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory", fn);
  }
  const bool use_cache =
      !(options->flags & KILN_COMPILE_NO_CACHE) && kiln_cache_enabled();
  char checks[512] = "";
  if (chosen && use_cache && ops->compiler->image_checks)
    ops->compiler->image_checks(ctx, checks, sizeof checks);
  compile_outcome *outcomes = calloc(chosen ? chosen : 1, sizeof *outcomes);
  bool *checked = calloc(chosen + image_count, sizeof *checked);
  if (!outcomes || !checked) {
    free(all);
    free(compiled);
    free(outcomes);
    free(checked);
    return kiln_set_error(KILN_ERROR_OUT_OF_HOST_MEMORY,
                          "%s: out of host memory", fn);
  }
  char *log = NULL;
  size_t done = 0, hits = 0, n = 0;
  for (size_t i = 0; i < source_count && st == KILN_OK; i++) {
    const kiln_source *s = &sources[i];
    if (s->language != language) continue;
    char default_name[32];
    snprintf(default_name, sizeof default_name, "source%zu.%s", i,
             extension_of(s->language));
    char *stem = s->entry_point || !s->name ? NULL : stem_of(s->name);
    kiln_compile_job job = {
        .language = s->language,
        .name = s->name ? s->name : default_name,
        .text = s->text,
        .entry_point = s->entry_point    ? s->entry_point
                       : stem && stem[0] ? stem
                                         : "main",
        .target = target,
        .options = options,
    };
    st = compile_one(ops, compiler, checks, &job, use_cache, &compiled[done],
                     &outcomes[done]);
    free(stem);
    append_log(&log, compiled[done].log);
    if (st != KILN_OK) {
      free(compiled[done].image);
      free(compiled[done].log);
      kiln_name_pairs_free(compiled[done].names, compiled[done].name_count);
      break;
    }
    hits += outcomes[done].hit;
    checked[n] = outcomes[done].hit;
    all[n++] = (kiln_module_image){compiled[done].format, compiled[done].image,
                                   compiled[done].image_size};
    done++;
  }
  for (size_t i = 0; i < image_count; i++) all[n++] = images[i];

  kiln_module *m = NULL;
  if (st == KILN_OK)
    st = kiln_module_create_checked(ctx, all, checked, n, false, &m);
  /* Only what made a module is kept: a hit is then as good as a module
   * made from it, and may skip the checks it passed (image_checks). */
  for (size_t i = 0; st == KILN_OK && i < done; i++)
    if (outcomes[i].store) kiln_entry_store(&outcomes[i].key, &compiled[i]);
  kiln_name_pair *aliases = NULL;
  size_t alias_count = 0;
  if (st == KILN_OK &&
      (st = take_aliases(fn, compiled, done, &aliases, &alias_count)) !=
          KILN_OK) {
    kiln_module_release(m);
    m = NULL;
  }
  for (size_t i = 0; i < done; i++) {
    free(compiled[i].image);
    free(compiled[i].log);
    kiln_name_pairs_free(compiled[i].names, compiled[i].name_count);
  }
  free(compiled);
  free(all);
  free(outcomes);
  free(checked);
  char *copy = log ? strdup(log) : NULL;
  set_last_log(copy);
  if (st != KILN_OK) {
    free(log);
    kiln_name_pairs_free(aliases, alias_count);
    return kiln_error_in(fn, st);
  }
  m->build_log = log;
  m->aliases = aliases;
  m->alias_count = alias_count;
  m->source_count = done;
  m->cache_hits = hits;
  m->compile_ms = chosen ? now_ms() - started : 0.0;
  *out = m;
  return KILN_OK;
}

kiln_status kiln_module_create_from_source_sized(
    kiln_context *ctx, const kiln_source *sources, size_t source_count,
    const kiln_compile_options *caller_options, size_t options_size,
    kiln_module **out_module) {
  static const char fn[] = "kiln_module_create_from_source";
  kiln_status st = kiln_object_check(ctx, KILN_OBJECT_CONTEXT, fn, "context");
  if (st != KILN_OK) return st;
  if (!out_module)
    return kiln_set_error(KILN_ERROR_INVALID_ARGUMENT, "%s: out_module is NULL",
                          fn);
  kiln_compile_options options;
  if ((st = kiln_struct_in(fn, "options", &options, sizeof options,
                           KILN_COMPILE_OPTIONS_0_1, caller_options,
                           options_size)) != KILN_OK ||
      (st = check_sources(fn, sources, source_count)) != KILN_OK ||
      (st = check_options(fn, &options)) != KILN_OK ||
      (st = kiln_context_check_usable(ctx)) != KILN_OK)
    return st;
  return kiln_module_build(ctx, fn, sources, source_count, NULL, 0, &options,
                           out_module);
}

kiln_status kiln_compile_options_check(const char *fn,
                                       const kiln_compile_options *options) {
  return check_options(fn, options);
}
