/* Kernels from source on fake backends: the core's checks, the choice of
 * sources, the cache key and the disk cache, logs, and modules from files.
 * The fake compiler is described in fake_backend.h.
 *
 * Over 600 lines: the cases share the fake compiler's set-up and its log
 * checks. */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "deadline.h"
#include "fake_backend.h"
#include "kiln_check.h"

/* A fake Vulkan context (fake_fixture) with a fresh, private cache
 * directory. */
typedef struct compile_fixture {
  fake_fixture *f;
  char dir[64];
} compile_fixture;

static int setup(void **state) {
  compile_fixture *c = calloc(1, sizeof *c);
  assert_non_null(c);
  snprintf(c->dir, sizeof c->dir, "/tmp/kiln-compile-test-XXXXXX");
  assert_non_null(mkdtemp(c->dir));
  setenv("KILN_CACHE_DIR", c->dir, 1);
  unsetenv("KILN_CACHE");
  void *inner = NULL;
  if (fake_fixture_setup(&inner) != 0) return -1;
  c->f = inner;
  *state = c;
  return 0;
}

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
      remove_tree(path);
    else
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static int teardown(void **state) {
  compile_fixture *c = *state;
  void *inner = c->f;
  int r = fake_fixture_teardown(&inner);
  remove_tree(c->dir);
  unsetenv("KILN_CACHE_DIR");
  unsetenv("KILN_CACHE");
  free(c);
  return r;
}

/* Entries of the given kind in `dir`. */
static int count_entries(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
  closedir(d);
  return n;
}

static kiln_source glsl(const char *name, const char *text) {
  return (kiln_source){KILN_SOURCE_GLSL, text, name, NULL};
}

static kiln_module *build(compile_fixture *c, const kiln_source *src,
                          size_t count, const kiln_compile_options *o,
                          kiln_module_build_info *info) {
  kiln_module *m = NULL;
  check_ok(kiln_module_create_from_source(c->f->ctx, src, count, o, &m));
  if (info) check_ok(kiln_module_get_build_info(m, info));
  return m;
}

static bool has_kernel(kiln_module *m, const char *name) {
  kiln_kernel *k;
  return kiln_module_get_kernel(m, name, &k) == KILN_OK;
}

static void compiles_then_hits_the_cache(void **state) {
  compile_fixture *c = *state;
  kiln_source src = glsl("prog.comp", "#ifdef WITH_B\nkb\n#endif\nka\n");
  const char *defines[] = {"WITH_B=1"};
  kiln_compile_options o = {.defines = defines, .define_count = 1};
  kiln_module_build_info info;

  kiln_module *m = build(c, &src, 1, &o, &info);
  assert_true(has_kernel(m, "ka") && has_kernel(m, "kb"));
  assert_int_equal(info.source_count, 1);
  assert_int_equal(info.cache_hits, 0);
  assert_true(info.compile_ms >= 0.0);
  assert_int_equal(c->f->fb.compiles, 1);
  assert_int_equal(count_entries(c->dir, "image-"), 1);
  check_ok(kiln_module_destroy(m));

  m = build(c, &src, 1, &o, &info);
  assert_int_equal(info.cache_hits, 1);
  assert_int_equal(c->f->fb.compiles, 1);
  assert_true(has_kernel(m, "ka") && has_kernel(m, "kb"));
  check_ok(kiln_module_destroy(m));

  o.flags = KILN_COMPILE_NO_CACHE;
  m = build(c, &src, 1, &o, &info);
  assert_int_equal(info.cache_hits, 0);
  assert_int_equal(c->f->fb.compiles, 2);
  check_ok(kiln_module_destroy(m));

  /* Without the define the kernel between #ifdef and #endif is gone. */
  m = build(c, &src, 1, NULL, &info);
  assert_int_equal(info.cache_hits, 0);
  assert_true(has_kernel(m, "ka"));
  assert_false(has_kernel(m, "kb"));
  check_ok(kiln_module_destroy(m));
}

/* An image is stored only once a module of it was made, so a hit may skip
 * the checks the backend's image_checks names, which are in the key: an
 * image the backend refuses is compiled again each time, and a context
 * that checks otherwise misses. */
static void only_images_that_made_a_module_are_kept(void **state) {
  compile_fixture *c = *state;
  fake_backend *fb = &c->f->fb;
  kiln_module *m = NULL;
  kiln_source bad = glsl("bad.comp", "ka not-a-kernel!\n");
  for (unsigned round = 1; round <= 2; round++) {
    check_fails(kiln_module_create_from_source(c->f->ctx, &bad, 1, NULL, &m),
                KILN_ERROR_INVALID_IMAGE);
    assert_int_equal(fb->compiles, round);
    assert_int_equal(count_entries(c->dir, "image-"), 0);
  }

  kiln_source src = glsl("good.comp", "ka\n");
  kiln_module_build_info info;
  m = build(c, &src, 1, NULL, &info);
  assert_int_equal(info.cache_hits, 0);
  assert_int_equal(fb->checked_images, 0);
  check_ok(kiln_module_destroy(m));
  m = build(c, &src, 1, NULL, &info);
  assert_int_equal(info.cache_hits, 1);
  assert_int_equal(fb->checked_images, 1);
  check_ok(kiln_module_destroy(m));

  snprintf(fb->image_checks, sizeof fb->image_checks, "fake checks 2");
  m = build(c, &src, 1, NULL, &info);
  assert_int_equal(info.cache_hits, 0);
  assert_int_equal(fb->checked_images, 0);
  assert_int_equal(fb->compiles, 4);
  check_ok(kiln_module_destroy(m));
  m = build(c, &src, 1, NULL, &info);
  assert_int_equal(info.cache_hits, 1);
  assert_int_equal(fb->checked_images, 1);
  check_ok(kiln_module_destroy(m));
}

/* Kernels found by the C++ names they were compiled with: the lowered
 * names come with the module, from the compiler and from the cache alike;
 * a name that was not asked for fails naming the ones that were; the
 * expressions are in the key; GLSL ignores them. */
static void name_expressions_find_kernels(void **state) {
  compile_fixture *c = *state;
  fake_backend *vk = &c->f->fb;
  static fake_backend cuda;
  fake_init(&cuda, KILN_BACKEND_CUDA);
  fake_compiler_enable(&cuda);
  fake_backend *both[] = {vk, &cuda};
  fake_install(both, 2);
  kiln_context *ctx;
  kiln_context_options co = {KILN_BACKEND_CUDA, 0, KILN_SYNC_DEFAULT};
  check_ok(kiln_context_create(&co, &ctx));
  const kiln_source src = {KILN_SOURCE_CUDA, "plain\n", "t.cu", NULL};
  const char *names[] = {"axpy<float>", "ops::scale"};
  kiln_compile_options o = {.name_expressions = names,
                            .name_expression_count = 2};
  for (int round = 0; round < 2; round++) {
    kiln_module *m;
    check_ok(kiln_module_create_from_source(ctx, &src, 1, &o, &m));
    kiln_module_build_info info;
    check_ok(kiln_module_get_build_info(m, &info));
    assert_int_equal(info.cache_hits, (size_t)round);
    kiln_kernel *k, *again;
    check_ok(kiln_module_get_kernel(m, "axpy<float>", &k));
    assert_string_equal(kiln_kernel_name(k), "L_axpy_float_");
    check_ok(kiln_module_get_kernel(m, "L_axpy_float_", &again));
    assert_ptr_equal(k, again);
    check_ok(kiln_module_get_kernel(m, "ops::scale", &k));
    check_ok(kiln_module_get_kernel(m, "plain", &k));
    check_fails(kiln_module_get_kernel(m, "axpy<double>", &k),
                KILN_ERROR_NOT_FOUND);
    check_message_has("\"axpy<float>\", \"ops::scale\"");
    check_ok(kiln_module_destroy(m));
  }
  assert_int_equal(cuda.compiles, 1);
  /* Another list is another key. */
  o.name_expression_count = 1;
  kiln_module *m;
  check_ok(kiln_module_create_from_source(ctx, &src, 1, &o, &m));
  assert_int_equal(cuda.compiles, 2);
  check_ok(kiln_module_destroy(m));
  const char *bad[] = {"nope!"};
  o.name_expressions = bad;
  check_fails(kiln_module_create_from_source(ctx, &src, 1, &o, &m),
              KILN_ERROR_COMPILE);
  check_message_has("nope!");
  const char *empty[] = {""};
  o.name_expressions = empty;
  check_fails(kiln_module_create_from_source(ctx, &src, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  o.name_expressions = NULL;
  check_fails(kiln_module_create_from_source(ctx, &src, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_ok(kiln_context_destroy(ctx));
  /* GLSL has no C++ names: the list is ignored there. */
  o.name_expressions = names;
  o.name_expression_count = 2;
  const kiln_source comp = glsl("k.comp", "ka\n");
  check_ok(kiln_module_create_from_source(c->f->ctx, &comp, 1, &o, &m));
  kiln_kernel *k;
  check_fails(kiln_module_get_kernel(m, "axpy<float>", &k),
              KILN_ERROR_NOT_FOUND);
  check_ok(kiln_module_destroy(m));
  fake_backend *alone[] = {vk};
  fake_install(alone, 1);
}

/* Changing any one input is a miss, and the same input again a hit. */
static void every_input_is_in_the_key(void **state) {
  compile_fixture *c = *state;
  const char *d1[] = {"A=1"}, *d2[] = {"A=2"}, *g1[] = {"-g"}, *g2[] = {"-w"};
  kiln_header h1 = {"h.h", "hk\n"}, h2 = {"h.h", "hk \n"};
  const char *text = "#include \"h.h\"\nka\n";
  kiln_source base = glsl("p.comp", text);
  kiln_compile_options o0 = {.headers = &h1, .header_count = 1};
  struct variant {
    kiln_source src;
    kiln_compile_options o;
  } v[12];
  for (size_t i = 0; i < 12; i++) v[i] = (struct variant){base, o0};
  v[1].src.text = "#include \"h.h\"\nka \n";
  v[2].o.headers = &h2;
  v[3].o.defines = d1, v[3].o.define_count = 1;
  v[4].o.defines = d2, v[4].o.define_count = 1;
  v[5].o.optimization = KILN_OPTIMIZE_SPEED;
  v[6].o.flags = KILN_COMPILE_FAST_MATH;
  v[7].o.target = "spv1.3";
  v[8].o.glsl_options = g1, v[8].o.glsl_option_count = 1;
  v[9].o.glsl_options = g2, v[9].o.glsl_option_count = 1;
  v[10].src.name = "q.comp";
  v[11].src.entry_point = "other";
  for (size_t i = 0; i < 12; i++) {
    for (int round = 0; round < 2; round++) {
      kiln_module_build_info info;
      unsigned before = c->f->fb.compiles;
      kiln_module *m = build(c, &v[i].src, 1, &v[i].o, &info);
      if (info.cache_hits != (size_t)round)
        fail_msg("variant %zu, round %d: %zu cache hits", i, round,
                 info.cache_hits);
      assert_int_equal(c->f->fb.compiles, before + (round == 0));
      check_ok(kiln_module_destroy(m));
    }
  }
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void include_directories_are_listed_in_the_key(void **state) {
  compile_fixture *c = *state;
  char inc[96], header[128];
  snprintf(inc, sizeof inc, "%s/include", c->dir);
  assert_int_equal(mkdir(inc, 0700), 0);
  snprintf(header, sizeof header, "%s/dep.h", inc);
  write_file(header, "kdep\n");
  const char *dirs[] = {inc};
  kiln_compile_options o = {.include_dirs = dirs, .include_dir_count = 1};
  kiln_source src = glsl("p.comp", "#include \"dep.h\"\nka\n");
  kiln_module_build_info info;
  kiln_module *m = build(c, &src, 1, &o, &info);
  assert_true(has_kernel(m, "kdep"));
  check_ok(kiln_module_destroy(m));
  m = build(c, &src, 1, &o, &info);
  assert_int_equal(info.cache_hits, 1);
  check_ok(kiln_module_destroy(m));
  /* A changed header in the directory is a miss, and its new text is
   * compiled. */
  write_file(header, "kdep2\n");
  m = build(c, &src, 1, &o, &info);
  assert_int_equal(info.cache_hits, 0);
  assert_true(has_kernel(m, "kdep2"));
  check_ok(kiln_module_destroy(m));
}

static void compile_errors_carry_the_log(void **state) {
  compile_fixture *c = *state;
  kiln_source src = glsl("bad.comp", "ka\n#warning first\n#error broken here\n");
  kiln_module *m = NULL;
  check_fails(kiln_module_create_from_source(c->f->ctx, &src, 1, NULL, &m),
              KILN_ERROR_COMPILE);
  check_message_has("bad.comp:3: error: broken here");
  assert_null(m);
  assert_non_null(strstr(kiln_last_compile_log(), "bad.comp:2: warning: first"));
  assert_non_null(strstr(kiln_last_compile_log(), "bad.comp:3: error"));
  /* A failed compile is not cached. */
  check_fails(kiln_module_create_from_source(c->f->ctx, &src, 1, NULL, &m),
              KILN_ERROR_COMPILE);
  assert_int_equal(c->f->fb.compiles, 2);
  assert_int_equal(count_entries(c->dir, "image-"), 0);

  /* A missing header is the compiler's error too. */
  kiln_source missing = glsl("inc.comp", "#include \"nowhere.h\"\n");
  check_fails(kiln_module_create_from_source(c->f->ctx, &missing, 1, NULL, &m),
              KILN_ERROR_COMPILE);
  check_message_has("inc.comp:1");
}

static void warnings_are_kept_also_from_the_cache(void **state) {
  compile_fixture *c = *state;
  kiln_source src = glsl("w.comp", "#warning careful\nka\n");
  for (int round = 0; round < 2; round++) {
    kiln_module_build_info info;
    kiln_module *m = build(c, &src, 1, NULL, &info);
    assert_int_equal(info.cache_hits, (size_t)round);
    assert_non_null(strstr(info.log, "w.comp:1: warning: careful"));
    assert_non_null(strstr(kiln_last_compile_log(), "w.comp:1: warning"));
    check_ok(kiln_module_destroy(m));
  }
  /* A module made from images has no log. */
  kiln_module_image img = fake_image("kimg");
  kiln_module *m;
  check_ok(kiln_module_create(c->f->ctx, &img, 1, &m));
  kiln_module_build_info info;
  check_ok(kiln_module_get_build_info(m, &info));
  assert_int_equal(info.source_count, 0);
  assert_string_equal(info.log, "");
  check_fails(kiln_module_get_build_info(m, NULL), KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_get_build_info(NULL, &info), KILN_ERROR_INVALID_HANDLE);
  check_ok(kiln_module_destroy(m));
}

/* The path of the one entry of `prefix` in dir. */
static void entry_path(const char *dir, const char *prefix, char *out,
                       size_t size) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  out[0] = '\0';
  for (struct dirent *e; (e = readdir(d));)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 &&
        snprintf(out, size, "%s/%s", dir, e->d_name) >= (int)size)
      fail_msg("the path of %s is too long", e->d_name);
  closedir(d);
  assert_true(out[0] != '\0');
}

static void a_corrupt_entry_is_recompiled(void **state) {
  compile_fixture *c = *state;
  kiln_source src = glsl("c.comp", "ka\nkb\n");
  kiln_module_build_info info;
  check_ok(kiln_module_destroy(build(c, &src, 1, NULL, &info)));
  char path[256];
  entry_path(c->dir, "image-", path, sizeof path);
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  fseek(f, -3, SEEK_END);
  int byte = fgetc(f);
  fseek(f, -3, SEEK_END);
  fputc(byte ^ 0x5a, f);
  fclose(f);

  kiln_module *m = build(c, &src, 1, NULL, &info);
  assert_int_equal(info.cache_hits, 0);
  assert_int_equal(c->f->fb.compiles, 2);
  assert_true(has_kernel(m, "ka") && has_kernel(m, "kb"));
  check_ok(kiln_module_destroy(m));
  /* The rewritten entry is good again. */
  check_ok(kiln_module_destroy(build(c, &src, 1, NULL, &info)));
  assert_int_equal(info.cache_hits, 1);

  /* Cut short, likewise. */
  entry_path(c->dir, "image-", path, sizeof path);
  assert_int_equal(truncate(path, 40), 0);
  check_ok(kiln_module_destroy(build(c, &src, 1, NULL, &info)));
  assert_int_equal(info.cache_hits, 0);
}

/* Two processes compile the same source at the same moment: both succeed
 * and leave one valid entry. */
static void two_processes_compile_at_once(void **state) {
  compile_fixture *c = *state;
  kiln_source src = glsl("race.comp", "kr\n");
  int go[2];
  assert_int_equal(pipe(go), 0);
  pid_t child[2];
  for (int i = 0; i < 2; i++) {
    child[i] = fork();
    assert_true(child[i] >= 0);
    if (child[i] == 0) {
      deadline_dump_on_sigusr2();
      char b;
      close(go[1]);
      if (read(go[0], &b, 1) != 0) _exit(3);
      kiln_module *m = NULL;
      kiln_kernel *k;
      int bad = kiln_module_create_from_source(c->f->ctx, &src, 1, NULL, &m) !=
                    KILN_OK ||
                kiln_module_get_kernel(m, "kr", &k) != KILN_OK;
      _exit(bad);
    }
  }
  close(go[0]);
  close(go[1]); /* both children start now */
  /* Each compiles one line with the fake compiler, in milliseconds. */
  const uint64_t deadline = deadline_in(20);
  for (int i = 0; i < 2; i++) {
    int status = wait_child(child[i], deadline);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  }
  assert_int_equal(count_entries(c->dir, "image-"), 1);
  assert_int_equal(count_entries(c->dir, ".tmp-"), 0);
  kiln_module_build_info info;
  check_ok(kiln_module_destroy(build(c, &src, 1, NULL, &info)));
  assert_int_equal(info.cache_hits, 1);
  assert_int_equal(c->f->fb.compiles, 0);
}

static void the_cache_can_be_off_or_unusable(void **state) {
  compile_fixture *c = *state;
  kiln_source src = glsl("off.comp", "ka\n");
  kiln_module_build_info info;
  setenv("KILN_CACHE", "off", 1);
  for (int i = 0; i < 2; i++) {
    check_ok(kiln_module_destroy(build(c, &src, 1, NULL, &info)));
    assert_int_equal(info.cache_hits, 0);
  }
  assert_int_equal(count_entries(c->dir, "image-"), 0);
  unsetenv("KILN_CACHE");

  /* Below a regular file no directory can be made: compiling goes on. */
  char file[128], below[160];
  snprintf(file, sizeof file, "%s/plain", c->dir);
  write_file(file, "x");
  snprintf(below, sizeof below, "%s/cache", file);
  setenv("KILN_CACHE_DIR", below, 1);
  for (int i = 0; i < 2; i++) {
    check_ok(kiln_module_destroy(build(c, &src, 1, NULL, &info)));
    assert_int_equal(info.cache_hits, 0);
  }
  assert_int_equal(c->f->fb.compiles, 4);
  setenv("KILN_CACHE_DIR", c->dir, 1);
}

static void bad_arguments(void **state) {
  compile_fixture *c = *state;
  kiln_context *ctx = c->f->ctx;
  kiln_module *m = NULL;
  kiln_source ok = glsl("ok.comp", "ka\n");
  kiln_source bad;
  const char *null_list[] = {NULL}, *empty_list[] = {""}, *no_name[] = {"=1"};
  kiln_header no_text = {"h.h", NULL}, nameless = {"", "x"};
  kiln_compile_options o;

  check_fails(kiln_module_create_from_source(NULL, &ok, 1, NULL, &m),
              KILN_ERROR_INVALID_HANDLE);
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, NULL, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_create_from_source(ctx, NULL, 1, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_create_from_source(ctx, &ok, 0, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  bad = ok, bad.language = (kiln_source_language)9;
  check_fails(kiln_module_create_from_source(ctx, &bad, 1, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("unknown language 9");
  bad = ok, bad.text = NULL;
  check_fails(kiln_module_create_from_source(ctx, &bad, 1, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  bad = ok, bad.name = "";
  check_fails(kiln_module_create_from_source(ctx, &bad, 1, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  bad = ok, bad.entry_point = "";
  check_fails(kiln_module_create_from_source(ctx, &bad, 1, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);

  o = (kiln_compile_options){.define_count = 1};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("defines");
  o = (kiln_compile_options){.include_dirs = null_list, .include_dir_count = 1};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  o = (kiln_compile_options){.cuda_options = empty_list, .cuda_option_count = 1};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  o = (kiln_compile_options){.defines = no_name, .define_count = 1};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  o = (kiln_compile_options){.header_count = 2};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  o = (kiln_compile_options){.headers = &no_text, .header_count = 1};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  o = (kiln_compile_options){.headers = &nameless, .header_count = 1};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  o = (kiln_compile_options){.optimization = (kiln_optimization)7};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  o = (kiln_compile_options){.flags = 1u << 9};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  o = (kiln_compile_options){.target = ""};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  /* The compiler's own refusal of a raw option. */
  const char *bogus[] = {"--bogus-flag"};
  o = (kiln_compile_options){.glsl_options = bogus, .glsl_option_count = 1};
  check_fails(kiln_module_create_from_source(ctx, &ok, 1, &o, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("--bogus-flag");
  assert_null(m);
  assert_int_equal(count_entries(c->dir, "image-"), 0);
}

static void sources_of_other_languages_are_ignored(void **state) {
  compile_fixture *c = *state;
  kiln_source sources[] = {
      {KILN_SOURCE_CUDA, "kcuda\n", "k.cu", NULL},
      {KILN_SOURCE_GLSL, "kglsl\n", "k.comp", NULL},
      {KILN_SOURCE_HIP, "khip\n", "k.hip", NULL},
      {KILN_SOURCE_GLSL, "kglsl2\n", NULL, NULL},
  };
  kiln_module_build_info info;
  kiln_module *m = build(c, sources, 4, NULL, &info);
  assert_int_equal(info.source_count, 2);
  assert_true(has_kernel(m, "kglsl") && has_kernel(m, "kglsl2"));
  assert_false(has_kernel(m, "kcuda"));
  check_ok(kiln_module_destroy(m));
  /* The target is the device's unless the caller names one. */
  assert_string_equal(c->f->fb.last_target, "fake_fake");

  check_fails(kiln_module_create_from_source(c->f->ctx, sources, 1, NULL, &m),
              KILN_ERROR_NO_IMAGE);
  check_message_has("compiles GLSL");
}

static void hip_takes_cuda_text_when_it_has_no_hip(void **state) {
  (void)state;
  fake_backend hip;
  fake_init(&hip, KILN_BACKEND_HIP);
  fake_backend *fb = &hip;
  fake_install(&fb, 1);
  kiln_context_options o = {KILN_BACKEND_HIP, 0, KILN_SYNC_DEFAULT};
  kiln_context *ctx;
  check_ok(kiln_context_create(&o, &ctx));
  kiln_source both[] = {
      {KILN_SOURCE_CUDA, "kcuda\n", "k.cu", NULL},
      {KILN_SOURCE_HIP, "khip\n", "k.hip", NULL},
  };
  kiln_module *m;
  kiln_kernel *k;
  check_ok(kiln_module_create_from_source(ctx, both, 2, NULL, &m));
  check_ok(kiln_module_get_kernel(m, "khip", &k));
  assert_int_not_equal(kiln_module_get_kernel(m, "kcuda", &k), KILN_OK);
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_module_create_from_source(ctx, both, 1, NULL, &m));
  check_ok(kiln_module_get_kernel(m, "kcuda", &k));
  check_ok(kiln_module_destroy(m));
  check_ok(kiln_context_destroy(ctx));
}

static void a_missing_compiler_says_what_to_install(void **state) {
  compile_fixture *c = *state;
  const char *description = NULL;
  check_ok(kiln_compiler_available(KILN_BACKEND_VULKAN, &description));
  assert_string_equal(description, "fakecc 1.0");

  c->f->fb.compiler_available = false;
  check_fails(kiln_compiler_available(KILN_BACKEND_VULKAN, &description),
              KILN_ERROR_UNAVAILABLE);
  assert_non_null(strstr(description, "libfakecc.so.1"));
  kiln_source src = glsl("p.comp", "ka\n");
  kiln_module *m = NULL;
  check_fails(kiln_module_create_from_source(c->f->ctx, &src, 1, NULL, &m),
              KILN_ERROR_UNAVAILABLE);
  check_message_has("fakecc-dev");
  /* Not remembered: once the compiler is there, it is used. */
  c->f->fb.compiler_available = true;
  check_ok(kiln_module_destroy(build(c, &src, 1, NULL, NULL)));

  check_fails(kiln_compiler_available(KILN_BACKEND_CUDA, &description),
              KILN_ERROR_UNAVAILABLE);
  check_fails(kiln_compiler_available(KILN_BACKEND_AUTO, &description),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_compiler_available(KILN_BACKEND_VULKAN, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  /* A backend without a compiler. */
  c->f->fb.ops.compiler = NULL;
  check_fails(kiln_compiler_available(KILN_BACKEND_VULKAN, &description),
              KILN_ERROR_UNAVAILABLE);
  check_fails(kiln_module_create_from_source(c->f->ctx, &src, 1, NULL, &m),
              KILN_ERROR_NO_IMAGE);
  check_message_has("no run-time compiler");
  fake_compiler_enable(&c->f->fb);
  assert_string_equal(kiln_source_language_name(KILN_SOURCE_HIP), "HIP C++");
  assert_string_equal(kiln_source_language_name((kiln_source_language)0),
                      "unknown");
}

static void modules_from_files(void **state) {
  compile_fixture *c = *state;
  char src[128], hdr[128], img[128], cu[128], txt[128], empty[128], nope[128];
  snprintf(src, sizeof src, "%s/a.comp", c->dir);
  snprintf(hdr, sizeof hdr, "%s/beside.h", c->dir);
  snprintf(img, sizeof img, "%s/b.spv", c->dir);
  snprintf(cu, sizeof cu, "%s/c.cu", c->dir);
  snprintf(txt, sizeof txt, "%s/notes.txt", c->dir);
  snprintf(empty, sizeof empty, "%s/empty.spv", c->dir);
  snprintf(nope, sizeof nope, "%s/missing.comp", c->dir);
  write_file(src, "#include \"beside.h\"\nka\n");
  write_file(hdr, "kbeside\n");
  write_file(img, "kimg\n");
  write_file(cu, "kcuda\n");
  write_file(txt, "what is this\n");
  write_file(empty, "");

  const char *paths[] = {src, img, cu};
  kiln_module *m = NULL;
  check_ok(kiln_module_create_from_files(c->f->ctx, paths, 3, NULL, &m));
  assert_true(has_kernel(m, "ka") && has_kernel(m, "kbeside") &&
              has_kernel(m, "kimg"));
  assert_false(has_kernel(m, "kcuda"));
  kiln_module_build_info info;
  check_ok(kiln_module_get_build_info(m, &info));
  assert_int_equal(info.source_count, 1);
  check_ok(kiln_module_destroy(m));

  /* Images alone need no compiler. */
  c->f->fb.compiler_available = false;
  check_ok(kiln_module_create_from_files(c->f->ctx, paths + 1, 2, NULL, &m));
  check_ok(kiln_module_destroy(m));
  m = NULL;
  c->f->fb.compiler_available = true;

  const char *one[1];
  one[0] = nope;
  check_fails(kiln_module_create_from_files(c->f->ctx, one, 1, NULL, &m),
              KILN_ERROR_NOT_FOUND);
  check_message_has("No such file");
  one[0] = c->dir;
  check_fails(kiln_module_create_from_files(c->f->ctx, one, 1, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("a directory");
  one[0] = empty;
  check_fails(kiln_module_create_from_files(c->f->ctx, one, 1, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("empty");
  one[0] = txt;
  check_fails(kiln_module_create_from_files(c->f->ctx, one, 1, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_message_has("cannot tell");
  one[0] = cu;
  check_fails(kiln_module_create_from_files(c->f->ctx, one, 1, NULL, &m),
              KILN_ERROR_NO_IMAGE);
  one[0] = NULL;
  check_fails(kiln_module_create_from_files(c->f->ctx, one, 1, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_create_from_files(c->f->ctx, NULL, 1, NULL, &m),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_create_from_files(c->f->ctx, paths, 1, NULL, NULL),
              KILN_ERROR_INVALID_ARGUMENT);
  check_fails(kiln_module_create_from_files(NULL, paths, 1, NULL, &m),
              KILN_ERROR_INVALID_HANDLE);
  assert_null(m);
}

static void *log_in_new_thread(void *arg) {
  (void)arg;
  return (void *)(uintptr_t)(kiln_last_compile_log()[0] == '\0');
}

static void the_last_log_is_per_thread(void **state) {
  compile_fixture *c = *state;
  kiln_source src = glsl("t.comp", "#warning here\nka\n");
  check_ok(kiln_module_destroy(build(c, &src, 1, NULL, NULL)));
  assert_true(kiln_last_compile_log()[0] != '\0');
  pthread_t t;
  void *empty = NULL;
  assert_int_equal(pthread_create(&t, NULL, log_in_new_thread, NULL), 0);
  assert_int_equal(pthread_join(t, &empty), 0);
  assert_true((uintptr_t)empty == 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
      T(compiles_then_hits_the_cache),
      T(only_images_that_made_a_module_are_kept),
      T(name_expressions_find_kernels),
      T(every_input_is_in_the_key),
      T(include_directories_are_listed_in_the_key),
      T(compile_errors_carry_the_log),
      T(warnings_are_kept_also_from_the_cache),
      T(a_corrupt_entry_is_recompiled),
      T(two_processes_compile_at_once),
      T(the_cache_can_be_off_or_unusable),
      T(bad_arguments),
      T(sources_of_other_languages_are_ignored),
      T(hip_takes_cuda_text_when_it_has_no_hip),
      T(a_missing_compiler_says_what_to_install),
      T(modules_from_files),
      T(the_last_log_is_per_thread),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
