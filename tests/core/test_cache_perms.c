/* The disk cache only trusts what its user alone can write (issue 32, item
 * 4): a directory others can write, or one someone else owns, is not used;
 * an entry that is a symbolic link or writable by others is a miss and
 * never read; new entries are 0600. Root runs these in CI: the files are
 * then owned by root, the effective uid, so the ownership checks hold. */
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
#include <unistd.h>

#include <cmocka.h>

#include "core/backend.h"
#include "kiln_check.h"

/* ---- Log capture --------------------------------------------------------- */

static char log_text[1 << 14];
static size_t log_used;
static int log_warnings;

static void on_log(kiln_log_level level, const char *message, void *data) {
  (void)data;
  if (level != KILN_LOG_WARN) return;
  log_warnings++;
  int n = snprintf(log_text + log_used, sizeof log_text - log_used, "%s\n",
                   message);
  if (n > 0 && (size_t)n < sizeof log_text - log_used) log_used += (size_t)n;
}

static bool log_has(const char *needle) {
  return strstr(log_text, needle) != NULL;
}

/* ---- A fresh cache directory per test ------------------------------------ */

static char dir[256];

static int fresh_dir(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/kiln-cache-perms-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  setenv("KILN_CACHE_DIR", dir, 1);
  unsetenv("KILN_CACHE");
  unsetenv("KILN_CACHE_MAX_BYTES");
  log_text[0] = '\0';
  log_used = 0;
  log_warnings = 0;
  kiln_set_log_level(KILN_LOG_WARN);
  return 0;
}

static int drop_dir(void **state) {
  (void)state;
  kiln_set_log_level(KILN_LOG_OFF);
  DIR *d = opendir(dir);
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      char child[512];
      snprintf(child, sizeof child, "%s/%s", dir, e->d_name);
      if (e->d_name[0] != '.' || strncmp(e->d_name, ".tmp-", 5) == 0)
        unlink(child);
    }
    closedir(d);
  }
  rmdir(dir);
  unsetenv("KILN_CACHE_DIR");
  return 0;
}

/* ---- Helpers ------------------------------------------------------------- */

static kiln_hash key_of(const char *text) {
  kiln_sha256 h;
  kiln_hash out;
  kiln_sha256_init(&h);
  kiln_sha256_string(&h, text);
  kiln_sha256_final(&h, &out);
  return out;
}

static void entry_path(const kiln_hash *k, char *out, size_t size) {
  char hex[65];
  for (int i = 0; i < 32; i++) sprintf(hex + 2 * i, "%02x", k->bytes[i]);
  snprintf(out, size, "%s/image-%s.kc", dir, hex);
}

static bool loads(const kiln_hash *k, const char *expected) {
  void *data = NULL;
  size_t size = 0;
  bool hit = kiln_cache_load("image", k, &data, &size);
  if (hit) {
    assert_int_equal(size, strlen(expected));
    assert_memory_equal(data, expected, size);
  } else {
    assert_null(data);
  }
  free(data);
  return hit;
}

static int files_in_dir(void) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  int count = 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) count++;
  closedir(d);
  return count;
}

static unsigned mode_of(const char *path) {
  struct stat st;
  assert_int_equal(lstat(path, &st), 0);
  return (unsigned)(st.st_mode & 07777);
}

/* ---- Tests --------------------------------------------------------------- */

static void private_directory_is_used(void **state) {
  (void)state;
  assert_int_equal(chmod(dir, 0700), 0);
  kiln_hash k = key_of("private");
  assert_false(loads(&k, "code"));
  kiln_cache_store("image", &k, "code", 4);
  assert_true(loads(&k, "code"));
  /* Not writable by others is enough: a readable directory is fine. */
  assert_int_equal(chmod(dir, 0755), 0);
  assert_true(loads(&k, "code"));
  assert_int_equal(log_warnings, 0);
}

/* Even under a umask that would let everyone write. */
static void entries_are_0600(void **state) {
  (void)state;
  mode_t old = umask(0);
  kiln_hash k = key_of("mode");
  kiln_cache_store("image", &k, "code", 4);
  umask(old);
  char path[512];
  entry_path(&k, path, sizeof path);
  assert_int_equal(mode_of(path), 0600);
  assert_int_equal(files_in_dir(), 1);
}

static void shared_directories_are_not_used(void **state) {
  (void)state;
  static const mode_t shared[] = {0777, 0770, 01777, 0702};
  kiln_hash k = key_of("shared");
  char path[512];
  entry_path(&k, path, sizeof path);
  for (size_t i = 0; i < sizeof shared / sizeof *shared; i++) {
    assert_int_equal(chmod(dir, shared[i]), 0);
    for (int j = 0; j < 3; j++) {
      kiln_cache_store("image", &k, "code", 4);
      assert_false(loads(&k, "code"));
    }
    assert_int_equal(files_in_dir(), 0);
  }
  /* Once per directory and process, whatever the mode. */
  assert_int_equal(log_warnings, 1);
  assert_true(log_has(dir));
  assert_true(log_has("mode 0777"));
  assert_true(log_has("running without the disk cache"));

  /* An entry already there from before is not read either. */
  assert_int_equal(chmod(dir, 0700), 0);
  kiln_cache_store("image", &k, "code", 4);
  assert_true(loads(&k, "code"));
  assert_int_equal(chmod(dir, 0777), 0);
  assert_false(loads(&k, "code"));
  assert_int_equal(chmod(dir, 0700), 0);
}

static void directory_of_another_user_is_not_used(void **state) {
  (void)state;
  if (geteuid() != 0)
    kiln_skip("only root can give a directory to another user");
  assert_int_equal(chmod(dir, 0700), 0);
  assert_int_equal(chown(dir, 65534, (gid_t)-1), 0);
  kiln_hash k = key_of("theirs");
  kiln_cache_store("image", &k, "code", 4);
  assert_false(loads(&k, "code"));
  assert_int_equal(files_in_dir(), 0);
  assert_int_equal(log_warnings, 1);
  assert_true(log_has("owned by uid 65534"));
  assert_int_equal(chown(dir, 0, (gid_t)-1), 0);
}

/* A link to a file with a good entry in it: loading it would run whatever
 * the link points at, so it is a miss; the next store replaces the link,
 * not its target. */
static void symlinked_entry_misses(void **state) {
  (void)state;
  kiln_hash k = key_of("linked");
  char path[512], real[512];
  entry_path(&k, path, sizeof path);
  snprintf(real, sizeof real, "%s/elsewhere", dir);
  kiln_cache_store("image", &k, "planted", 7);
  assert_int_equal(rename(path, real), 0);
  assert_int_equal(symlink(real, path), 0);
  assert_false(loads(&k, "planted"));
  assert_false(loads(&k, "planted"));
  assert_int_equal(log_warnings, 1);
  assert_true(log_has("symbolic link"));

  kiln_cache_store("image", &k, "compiled", 8);
  assert_true(loads(&k, "compiled"));
  struct stat st;
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  FILE *f = fopen(real, "rb");
  assert_non_null(f);
  char head[8];
  assert_int_equal(fread(head, 1, 8, f), 8);
  fclose(f);
  assert_memory_equal(head, "KILNCACH", 8);
}

static void writable_entry_misses(void **state) {
  (void)state;
  static const mode_t loose[] = {0666, 0620, 0602};
  kiln_hash k = key_of("loose");
  char path[512];
  entry_path(&k, path, sizeof path);
  for (size_t i = 0; i < sizeof loose / sizeof *loose; i++) {
    kiln_cache_store("image", &k, "code", 4);
    assert_int_equal(chmod(path, loose[i]), 0);
    assert_false(loads(&k, "code"));
    /* A miss, not damage: the file is left for the next store to replace. */
    assert_int_equal(mode_of(path), loose[i]);
  }
  assert_int_equal(log_warnings, 1);
  assert_true(log_has("mode 0666"));
  kiln_cache_store("image", &k, "code", 4);
  assert_int_equal(mode_of(path), 0600);
  assert_true(loads(&k, "code"));
}

int main(void) {
  kiln_set_log_handler(on_log, NULL);
#define T(name) cmocka_unit_test_setup_teardown(name, fresh_dir, drop_dir)
  const struct CMUnitTest tests[] = {
      T(private_directory_is_used),
      T(entries_are_0600),
      T(shared_directories_are_not_used),
      T(directory_of_another_user_is_not_used),
      T(symlinked_entry_misses),
      T(writable_entry_misses),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
