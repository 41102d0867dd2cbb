/* SHA-256 against the FIPS 180-4 examples, and the disk cache: the entry
 * format, every kind of damage read as a miss, KILN_CACHE=off, unusable
 * directories, eviction by recency, and racing writers in threads and
 * processes. Each test gets a fresh KILN_CACHE_DIR.
 *
 * Over 600 lines: the cache's cases share the helpers that write, damage
 * and read entries. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/backend.h"
#include "deadline.h"

#define HEADER_SIZE 88

/* ---- Log capture --------------------------------------------------------- */

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 16];
static size_t log_used;
static int log_warnings;

static void on_log(kiln_log_level level, const char *message, void *data) {
  (void)data;
  pthread_mutex_lock(&log_lock);
  if (level == KILN_LOG_WARN) log_warnings++;
  int n = snprintf(log_text + log_used, sizeof log_text - log_used, "%s\n",
                   message);
  if (n > 0 && (size_t)n < sizeof log_text - log_used) log_used += (size_t)n;
  pthread_mutex_unlock(&log_lock);
}

static void log_reset(void) {
  pthread_mutex_lock(&log_lock);
  log_text[0] = '\0';
  log_used = 0;
  log_warnings = 0;
  pthread_mutex_unlock(&log_lock);
}

static bool log_has(const char *needle) {
  pthread_mutex_lock(&log_lock);
  bool found = strstr(log_text, needle) != NULL;
  pthread_mutex_unlock(&log_lock);
  return found;
}

/* ---- A fresh cache directory per test ------------------------------------ */

static char dir[256];

static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
          continue;
        char child[512];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        remove_tree(child);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

static int fresh_dir(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/kiln-cache-test-XXXXXX");
  if (!mkdtemp(dir)) return -1;
  setenv("KILN_CACHE_DIR", dir, 1);
  unsetenv("KILN_CACHE");
  unsetenv("KILN_CACHE_MAX_BYTES");
  log_reset();
  return 0;
}

static int drop_dir(void **state) {
  (void)state;
  remove_tree(dir);
  unsetenv("KILN_CACHE_DIR");
  unsetenv("KILN_CACHE");
  unsetenv("KILN_CACHE_MAX_BYTES");
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

static void hex_of(const kiln_hash *k, char hex[65]) {
  for (int i = 0; i < 32; i++) sprintf(hex + 2 * i, "%02x", k->bytes[i]);
}

static void entry_path(const char *kind, const kiln_hash *k, char *out,
                       size_t size) {
  char hex[65];
  hex_of(k, hex);
  snprintf(out, size, "%s/%s-%s.kc", dir, kind, hex);
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Files in the cache directory whose names start with `prefix` and end
 * with `suffix`. */
static int count_files(const char *prefix, const char *suffix) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int count = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t n = strlen(e->d_name), s = strlen(suffix);
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && n >= s &&
        strcmp(e->d_name + n - s, suffix) == 0)
      count++;
  }
  closedir(d);
  return count;
}

static void set_mtime(const char *path, time_t when) {
  struct timespec t[2] = {{when, 0}, {when, 0}};
  assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

static time_t mtime_of(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return st.st_mtim.tv_sec;
}

/* Loads `k` and checks the payload is exactly `expected`. */
static void assert_loads(const char *kind, const kiln_hash *k,
                         const void *expected, size_t size) {
  void *data;
  size_t got;
  assert_true(kiln_cache_load(kind, k, &data, &got));
  assert_int_equal(got, size);
  assert_memory_equal(data, expected, size);
  free(data);
}

static void assert_misses(const char *kind, const kiln_hash *k) {
  void *data = (void *)1;
  size_t got = 1;
  assert_false(kiln_cache_load(kind, k, &data, &got));
  assert_null(data);
  assert_int_equal(got, 0);
}

static void hash_hex(const void *data, size_t size, size_t chunk,
                     char hex[65]) {
  kiln_sha256 h;
  kiln_hash out;
  kiln_sha256_init(&h);
  const unsigned char *p = data;
  for (size_t done = 0; done < size;) {
    size_t n = size - done < chunk ? size - done : chunk;
    kiln_sha256_update(&h, p + done, n);
    done += n;
  }
  kiln_sha256_final(&h, &out);
  hex_of(&out, hex);
}

/* ---- SHA-256 ------------------------------------------------------------- */

static void sha256_known_answers(void **state) {
  (void)state;
  static const struct {
    const char *text;
    const char *hex;
  } cases[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc",
       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
  };
  char hex[65];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t n = strlen(cases[i].text);
    for (size_t chunk = 1; chunk <= 64; chunk += 7) {
      hash_hex(cases[i].text, n, chunk, hex);
      assert_string_equal(hex, cases[i].hex);
    }
  }

  /* Around the padding's boundaries: one block, two blocks, and one more. */
  static const struct {
    size_t count;
    const char *hex;
  } runs[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {119,
       "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {1000000,
       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  char *a = malloc(1000000);
  assert_non_null(a);
  memset(a, 'a', 1000000);
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    static const size_t chunks[] = {1000000, 1, 3, 61, 64, 65, 4099};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
      if (runs[i].count > 1000 && chunks[c] < 3) continue;
      hash_hex(a, runs[i].count, chunks[c], hex);
      assert_string_equal(hex, runs[i].hex);
    }
  }
  free(a);
}

static void fields_are_delimited(void **state) {
  (void)state;
  kiln_sha256 h;
  kiln_hash x, y, empty, null;
  kiln_sha256_init(&h);
  kiln_sha256_field(&h, "ab", 2);
  kiln_sha256_field(&h, "c", 1);
  kiln_sha256_final(&h, &x);
  kiln_sha256_init(&h);
  kiln_sha256_field(&h, "a", 1);
  kiln_sha256_field(&h, "bc", 2);
  kiln_sha256_final(&h, &y);
  assert_memory_not_equal(x.bytes, y.bytes, 32);

  /* A field is its 64-bit little-endian size, then its bytes. */
  static const unsigned char framed[] = {2, 0, 0, 0, 0, 0, 0, 0, 'a', 'b'};
  kiln_sha256_init(&h);
  kiln_sha256_field(&h, "ab", 2);
  kiln_sha256_final(&h, &x);
  kiln_sha256_init(&h);
  kiln_sha256_update(&h, framed, sizeof framed);
  kiln_sha256_final(&h, &y);
  assert_memory_equal(x.bytes, y.bytes, 32);

  empty = key_of("");
  null = key_of(NULL);
  assert_memory_equal(empty.bytes, null.bytes, 32);
}

/* ---- Store and load ------------------------------------------------------ */

static void round_trip(void **state) {
  (void)state;
  kiln_set_log_level(KILN_LOG_DEBUG);
  kiln_hash k = key_of("round trip");
  static const char payload[] = "a compiled image";
  kiln_cache_store("image", &k, payload, sizeof payload);
  char path[512], hex[65];
  entry_path("image", &k, path, sizeof path);
  hex_of(&k, hex);
  assert_true(exists(path));
  assert_int_equal(count_files("", ".kc"), 1);
  assert_int_equal(count_files(".tmp-", ""), 0);

  /* The documented format, byte by byte. */
  unsigned char file[HEADER_SIZE + sizeof payload + 1];
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  assert_int_equal(fread(file, 1, sizeof file, f),
                   HEADER_SIZE + sizeof payload);
  fclose(f);
  static const unsigned char head[16] = {'K', 'I', 'L', 'N', 'C', 'A', 'C',
                                         'H', 1,   0,   0,   0,   88,  0,
                                         0,   0};
  assert_memory_equal(file, head, 16);
  assert_memory_equal(file + 16, k.bytes, 32);
  for (int i = 0; i < 8; i++)
    assert_int_equal(file[48 + i], i == 0 ? sizeof payload : 0);
  kiln_sha256 h;
  kiln_hash sum;
  kiln_sha256_init(&h);
  kiln_sha256_update(&h, payload, sizeof payload);
  kiln_sha256_final(&h, &sum);
  assert_memory_equal(file + 56, sum.bytes, 32);
  assert_memory_equal(file + HEADER_SIZE, payload, sizeof payload);

  log_reset();
  assert_loads("image", &k, payload, sizeof payload);
  char line[64];
  snprintf(line, sizeof line, "cache: hit image %.16s", hex);
  assert_true(log_has(line));

  /* An empty payload is an entry too. */
  kiln_hash e = key_of("empty");
  kiln_cache_store("image", &e, NULL, 0);
  assert_loads("image", &e, "", 0);
  kiln_set_log_level(KILN_LOG_OFF);
}

static void absent_key_misses(void **state) {
  (void)state;
  kiln_hash k = key_of("never stored");
  assert_misses("image", &k);
  /* Also when the directory does not exist yet. */
  char missing[512];
  snprintf(missing, sizeof missing, "%s/not/yet", dir);
  setenv("KILN_CACHE_DIR", missing, 1);
  assert_misses("image", &k);
  kiln_cache_store("image", &k, "x", 1);
  assert_loads("image", &k, "x", 1);
}

static void kinds_kept_apart(void **state) {
  (void)state;
  kiln_hash k = key_of("one key");
  kiln_cache_store("image", &k, "image bytes", 11);
  assert_misses("pipeline", &k);
  kiln_cache_store("pipeline", &k, "pipeline bytes", 14);
  assert_loads("image", &k, "image bytes", 11);
  assert_loads("pipeline", &k, "pipeline bytes", 14);
  assert_int_equal(count_files("image-", ".kc"), 1);
  assert_int_equal(count_files("pipeline-", ".kc"), 1);
}

typedef enum damage {
  FLIP_PAYLOAD,
  TRUNCATE,
  WRONG_MAGIC,
  WRONG_VERSION,
  OTHER_KEY,
} damage;

static void patch_byte(const char *path, long offset, unsigned char xor) {
  FILE *f = fopen(path, "r+b");
  assert_non_null(f);
  assert_int_equal(fseek(f, offset, SEEK_SET), 0);
  int c = fgetc(f);
  assert_true(c != EOF);
  assert_int_equal(fseek(f, offset, SEEK_SET), 0);
  assert_true(fputc(c ^ xor, f) != EOF);
  assert_int_equal(fclose(f), 0);
}

static void damaged_entries_miss_and_go(void **state) {
  (void)state;
  static const char *const why[] = {"checksum", "size", "magic", "version",
                                    "another key"};
  kiln_set_log_level(KILN_LOG_DEBUG);
  unsigned char payload[300];
  for (size_t i = 0; i < sizeof payload; i++) payload[i] = (unsigned char)i;
  for (damage d = FLIP_PAYLOAD; d <= OTHER_KEY; d++) {
    kiln_hash k = key_of(why[d]);
    char path[512];
    entry_path("image", &k, path, sizeof path);
    if (d == OTHER_KEY) {
      /* A whole entry, under another key's name. */
      kiln_hash other = key_of("the other key");
      char other_path[512];
      entry_path("image", &other, other_path, sizeof other_path);
      kiln_cache_store("image", &other, payload, sizeof payload);
      assert_int_equal(rename(other_path, path), 0);
    } else {
      kiln_cache_store("image", &k, payload, sizeof payload);
    }
    assert_true(exists(path));
    switch (d) {
    case FLIP_PAYLOAD: patch_byte(path, HEADER_SIZE + 123, 0x10); break;
    case TRUNCATE:
      assert_int_equal(truncate(path, HEADER_SIZE + sizeof payload - 1), 0);
      break;
    case WRONG_MAGIC: patch_byte(path, 0, 0x20); break;
    case WRONG_VERSION: patch_byte(path, 8, 0x03); break;
    case OTHER_KEY: break;
    }
    log_reset();
    assert_misses("image", &k);
    if (exists(path)) fail_msg("damage %d: %s is still there", (int)d, path);
    if (!log_has(why[d]))
      fail_msg("damage %d: the log does not say \"%s\": %s", (int)d, why[d],
               log_text);
    /* And the key can be stored again. */
    kiln_cache_store("image", &k, payload, sizeof payload);
    assert_loads("image", &k, payload, sizeof payload);
  }
  kiln_set_log_level(KILN_LOG_OFF);
}

static void switched_off(void **state) {
  (void)state;
  kiln_hash k = key_of("off");
  kiln_cache_store("image", &k, "kept", 4);
  static const char *const off[] = {"off", "0", "No", "FALSE"};
  for (size_t i = 0; i < 4; i++) {
    setenv("KILN_CACHE", off[i], 1);
    assert_false(kiln_cache_enabled());
    assert_misses("image", &k);
    kiln_hash other = key_of(off[i]);
    kiln_cache_store("image", &other, "dropped", 7);
  }
  assert_int_equal(count_files("", ".kc"), 1);
  static const char *const on[] = {"on", "1", "YES", "true"};
  for (size_t i = 0; i < 4; i++) {
    setenv("KILN_CACHE", on[i], 1);
    assert_true(kiln_cache_enabled());
  }
  assert_loads("image", &k, "kept", 4);

  /* An unknown word is warned about once and leaves the cache on. */
  kiln_set_log_level(KILN_LOG_WARN);
  setenv("KILN_CACHE", "sometimes", 1);
  assert_true(kiln_cache_enabled());
  assert_loads("image", &k, "kept", 4);
  assert_int_equal(log_warnings, 1);
  assert_true(log_has("KILN_CACHE=sometimes"));
  kiln_set_log_level(KILN_LOG_OFF);
}

static void unusable_directory(void **state) {
  (void)state;
  kiln_set_log_level(KILN_LOG_WARN);
  char file[512], below[600];
  snprintf(file, sizeof file, "%s/plain-file", dir);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fclose(f);
  snprintf(below, sizeof below, "%s/cache", file);
  setenv("KILN_CACHE_DIR", below, 1);
  kiln_hash k = key_of("nowhere");
  for (int i = 0; i < 3; i++) {
    kiln_cache_store("image", &k, "bytes", 5);
    assert_misses("image", &k);
  }
  assert_int_equal(log_warnings, 1);
  assert_true(log_has(below));
  assert_true(log_has(strerror(ENOTDIR)));

  /* The directory itself a regular file: another directory, one more
   * warning. */
  setenv("KILN_CACHE_DIR", file, 1);
  kiln_cache_store("image", &k, "bytes", 5);
  kiln_cache_store("image", &k, "bytes", 5);
  assert_int_equal(log_warnings, 2);
  kiln_set_log_level(KILN_LOG_OFF);
}

/* ---- Eviction ------------------------------------------------------------ */

enum { ENTRY_PAYLOAD = 1000, ENTRY_FILE = HEADER_SIZE + ENTRY_PAYLOAD };

static kiln_hash numbered(int i, char *path, size_t size) {
  char name[32];
  snprintf(name, sizeof name, "entry %d", i);
  kiln_hash k = key_of(name);
  entry_path("image", &k, path, size);
  return k;
}

/* Stores entries first..last-1, entry i last used at `base + i` seconds. */
static void store_aged(int first, int last, time_t base) {
  static unsigned char payload[ENTRY_PAYLOAD];
  for (int i = first; i < last; i++) {
    char path[512];
    kiln_hash k = numbered(i, path, sizeof path);
    kiln_cache_store("image", &k, payload, sizeof payload);
    set_mtime(path, base + i);
  }
}

static bool present(int i) {
  char path[512];
  numbered(i, path, sizeof path);
  return exists(path);
}

static void evicts_least_recently_used(void **state) {
  (void)state;
  time_t old = time(NULL) - 100000;
  store_aged(0, 4, old);
  /* 5 entries would be 5440 bytes: the oldest goes, leaving 4352 <= 4500. */
  setenv("KILN_CACHE_MAX_BYTES", "5000", 1);
  store_aged(4, 5, old);
  assert_false(present(0));
  for (int i = 1; i <= 4; i++) assert_true(present(i));

  /* 4K: down to at most 3686 bytes, so two more go. */
  setenv("KILN_CACHE_MAX_BYTES", "4K", 1);
  store_aged(5, 6, old);
  assert_false(present(1));
  assert_false(present(2));
  for (int i = 3; i <= 5; i++) assert_true(present(i));
  assert_int_equal(count_files("", ".kc"), 3);

  /* Equal times go by name. */
  char p3[512], p4[512], p5[512];
  numbered(3, p3, sizeof p3);
  numbered(4, p4, sizeof p4);
  numbered(5, p5, sizeof p5);
  set_mtime(p3, old);
  set_mtime(p4, old);
  set_mtime(p5, old + 50);
  bool three_first = strcmp(p3, p4) < 0;
  store_aged(6, 7, old + 100);
  assert_true(present(three_first ? 4 : 3));
  assert_false(present(three_first ? 3 : 4));
  assert_true(present(5));
  assert_true(present(6));
}

static void keeps_the_entry_just_written(void **state) {
  (void)state;
  /* Everything else looks used after it: still it stays. */
  store_aged(0, 3, time(NULL) + 86400);
  setenv("KILN_CACHE_MAX_BYTES", "3000", 1);
  char path[512];
  kiln_hash k = numbered(3, path, sizeof path);
  static unsigned char payload[ENTRY_PAYLOAD];
  kiln_cache_store("image", &k, payload, sizeof payload);
  assert_true(present(3));
  assert_int_equal(count_files("", ".kc"), 2);

  /* An entry larger than the bound on its own is not kept, and costs the
   * others nothing. */
  setenv("KILN_CACHE_MAX_BYTES", "1000", 1);
  k = numbered(4, path, sizeof path);
  kiln_cache_store("image", &k, payload, sizeof payload);
  assert_false(present(4));
  assert_int_equal(count_files("", ".kc"), 2);
}

static void bad_bound_uses_the_default(void **state) {
  (void)state;
  kiln_set_log_level(KILN_LOG_WARN);
  setenv("KILN_CACHE_MAX_BYTES", "12X", 1);
  store_aged(0, 3, time(NULL) - 1000);
  for (int i = 0; i < 3; i++) assert_true(present(i));
  assert_int_equal(log_warnings, 1);
  assert_true(log_has("KILN_CACHE_MAX_BYTES=12X"));
  kiln_set_log_level(KILN_LOG_OFF);
}

static void load_refreshes_recency(void **state) {
  (void)state;
  time_t old = time(NULL) - 100000;
  store_aged(0, 3, old);
  char path[512];
  kiln_hash k = numbered(0, path, sizeof path);
  static unsigned char payload[ENTRY_PAYLOAD];
  assert_loads("image", &k, payload, sizeof payload);
  assert_true(mtime_of(path) > old + 1000);
  setenv("KILN_CACHE_MAX_BYTES", "4000", 1);
  store_aged(3, 4, old + 10);
  assert_true(present(0));
  assert_false(present(1));
  assert_true(present(2));
  assert_true(present(3));
}

static void removes_stale_temporary_files(void **state) {
  (void)state;
  char stale[512], fresh[512];
  snprintf(stale, sizeof stale, "%s/.tmp-stale1", dir);
  snprintf(fresh, sizeof fresh, "%s/.tmp-fresh1", dir);
  FILE *f = fopen(stale, "w");
  assert_non_null(f);
  fclose(f);
  f = fopen(fresh, "w");
  assert_non_null(f);
  fclose(f);
  set_mtime(stale, time(NULL) - 7200);
  store_aged(0, 1, time(NULL));
  assert_false(exists(stale));
  assert_true(exists(fresh));
}

/* ---- Racing writers ------------------------------------------------------ */

enum { RACERS = 8, ROUNDS = 20, RACE_BYTES = 1 << 20 };

static unsigned char *race_payload;
static atomic_int race_failures;

/* Stores and loads one key ROUNDS times; the number of bad loads. */
static int race(void) {
  kiln_hash k = key_of("raced");
  int bad = 0;
  for (int r = 0; r < ROUNDS; r++) {
    void *data;
    size_t size;
    if (kiln_cache_load("image", &k, &data, &size)) {
      if (size != RACE_BYTES || memcmp(data, race_payload, size) != 0) bad++;
      free(data);
    }
    kiln_cache_store("image", &k, race_payload, RACE_BYTES);
  }
  return bad;
}

static void *race_thread(void *arg) {
  (void)arg;
  atomic_fetch_add(&race_failures, race());
  return NULL;
}

static void make_race_payload(void) {
  race_payload = malloc(RACE_BYTES);
  assert_non_null(race_payload);
  for (size_t i = 0; i < RACE_BYTES; i++)
    race_payload[i] = (unsigned char)(i * 2654435761u >> 13);
}

static void after_race(void) {
  assert_int_equal(count_files("", ".kc"), 1);
  assert_int_equal(count_files(".tmp-", ""), 0);
  kiln_hash k = key_of("raced");
  assert_loads("image", &k, race_payload, RACE_BYTES);
  free(race_payload);
  race_payload = NULL;
}

static void racing_processes(void **state) {
  (void)state;
  make_race_payload();
  pid_t pids[RACERS];
  for (int i = 0; i < RACERS; i++) {
    pids[i] = fork();
    assert_true(pids[i] >= 0);
    if (pids[i] == 0) {
      deadline_dump_on_sigusr2();
      _exit(race() == 0 ? 0 : 1);
    }
  }
  int failed = 0;
  /* About a second in all under ASan; TSan and a busy machine take more. */
  const uint64_t deadline = deadline_in(100);
  for (int i = 0; i < RACERS; i++) {
    int status = wait_child(pids[i], deadline);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
  }
  assert_int_equal(failed, 0);
  after_race();
}

static void racing_threads(void **state) {
  (void)state;
  make_race_payload();
  atomic_store(&race_failures, 0);
  deadline_thread threads[RACERS];
  for (int i = 0; i < RACERS; i++) start_thread(&threads[i], race_thread, NULL);
  /* As racing_processes. */
  const uint64_t deadline = deadline_in(100);
  for (int i = 0; i < RACERS; i++) join_thread(&threads[i], deadline);
  assert_int_equal(atomic_load(&race_failures), 0);
  after_race();
}

int main(void) {
  kiln_set_log_handler(on_log, NULL);
#define T(name) cmocka_unit_test_setup_teardown(name, fresh_dir, drop_dir)
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sha256_known_answers),
      cmocka_unit_test(fields_are_delimited),
      T(round_trip),
      T(absent_key_misses),
      T(kinds_kept_apart),
      T(damaged_entries_miss_and_go),
      T(switched_off),
      T(unusable_directory),
      T(evicts_least_recently_used),
      T(keeps_the_entry_just_written),
      T(bad_bound_uses_the_default),
      T(load_refreshes_recency),
      T(removes_stale_temporary_files),
      T(racing_processes),
      T(racing_threads),
  };
#undef T
  return cmocka_run_group_tests(tests, NULL, NULL);
}
