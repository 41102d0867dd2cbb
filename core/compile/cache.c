/*
 * The disk cache: blobs (compiled images, Vulkan pipeline caches) kept
 * across runs, one file per key. Just over 600 lines: every rule below and
 * the check that keeps it are in this one file, so that the trust the
 * cache places in its directory can be read in one place. The rules
 * (docs/kernels.md says the same):
 *
 *  - Directory: KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln (when absolute, as
 *    the XDG spec asks), else $HOME/.cache/kiln, else the passwd entry's
 *    home. Resolved on every call, so a change of the variables takes
 *    effect at once; created with its parents (mode 0700) on store.
 *  - Trust: kiln runs the code it loads from the cache, so the directory
 *    must be one only its user can write: owned by the effective uid and
 *    not writable by group or others. Any other directory (a shared
 *    /tmp/kiln, say) is warned about once and not used: every load a
 *    miss, nothing stored. An entry is opened with O_NOFOLLOW and must be
 *    a regular file owned by the user and not writable by group or others,
 *    else it is a miss (warned about once per directory) and never read;
 *    the next store replaces it. The directory is opened once per call
 *    and every file is reached through that handle, so the directory
 *    checked is the one used even if its path is swapped meanwhile; that
 *    is why the directories above it are not checked: they only name it.
 *    Entries and temporary files are created 0600.
 *  - KILN_CACHE: "off", "0", "no", "false" (any case) turn it off; unset,
 *    "on", "1", "yes", "true" leave it on; anything else is warned about
 *    once and leaves it on.
 *  - An entry is <dir>/<kind>-<64 hex digits of the key>.kc: a fixed
 *    little-endian header (the magic "KILNCACH", u32 format version 1, u32
 *    header size, the 32-byte key, u64 payload length, the payload's
 *    SHA-256), then the payload. A load checks all of it and the file's
 *    size; anything odd is a miss and the file is removed, so a damaged
 *    entry costs one recompile, never a wrong result. A hit updates the
 *    file's mtime: recency is kept in mtime because atime is often not.
 *  - A store writes a temporary file ".tmp-XXXXXXXX" in the same directory
 *    and renames it over the entry, so a reader sees the old entry or the
 *    new one, never part of one, and racing writers of one key leave one
 *    whole entry. No fsync: an entry torn by a crash fails its checksum
 *    and is a miss. Any failure leaves no file behind and logs one warning
 *    per process and directory; the cache is then a no-op.
 *  - KILN_CACHE_MAX_BYTES (bytes, or with a K, M or G suffix in powers of
 *    1024; default 512 MiB) bounds the total size of the *.kc files. After
 *    a store that goes over it, the least recently used entries (oldest
 *    mtime first, then by name) are removed until the total is at most 90%
 *    of the bound, never the entry just written. An entry larger than the
 *    bound on its own is not stored at all (rather than written, then
 *    evicted along with everything else). The same pass removes ".tmp-"
 *    files older than an hour, left by processes that died mid-store.
 *
 * No state is shared between calls except the record of warnings already
 * given, so threads and processes need no coordination beyond what
 * rename() gives.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"

#define MAGIC "KILNCACH"
#define FORMAT_VERSION 1u
/* magic, version, header size, key, payload length, checksum */
#define HEADER_SIZE (8 + 4 + 4 + 32 + 8 + 32)
#define DEFAULT_MAX_BYTES (512ull << 20)
#define TEMP_PREFIX ".tmp-"
#define STALE_TEMP_SECONDS 3600
#define PATH_SIZE 4096

/* ---- Warnings given once ------------------------------------------------- */

static atomic_flag warned_switch = ATOMIC_FLAG_INIT;
static atomic_flag warned_max_bytes = ATOMIC_FLAG_INIT;

/* The directories a store failure has been reported for. Reachable from
 * here until exit, so never a leak. */
typedef struct warned_dir {
  struct warned_dir *next;
  char path[];
} warned_dir;
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static warned_dir *warned_dirs;

/* True the first time it is called for `dir` in this process. */
static bool first_failure_in(const char *dir) {
  bool first = true;
  pthread_mutex_lock(&warned_lock);
  for (warned_dir *w = warned_dirs; w; w = w->next)
    if (strcmp(w->path, dir) == 0) first = false;
  if (first) {
    size_t n = strlen(dir) + 1;
    warned_dir *w = malloc(sizeof *w + n);
    if (w) {
      memcpy(w->path, dir, n);
      w->next = warned_dirs;
      warned_dirs = w;
    }
  }
  pthread_mutex_unlock(&warned_lock);
  return first;
}

static void store_failed(const char *dir, const char *what, int err) {
  if (first_failure_in(dir))
    kiln_log(KILN_LOG_WARN,
             "cache: cannot store in %s (%s: %s); running without the disk "
             "cache there",
             dir, what, strerror(err));
}

/* ---- Settings ------------------------------------------------------------ */

bool kiln_cache_enabled(void) {
  const char *v = kiln_getenv("KILN_CACHE");
  if (!v) return true;
  static const char *const off[] = {"off", "0", "no", "false"};
  static const char *const on[] = {"on", "1", "yes", "true"};
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(v, off[i]) == 0) return false;
    if (strcasecmp(v, on[i]) == 0) return true;
  }
  if (!atomic_flag_test_and_set(&warned_switch))
    kiln_log(KILN_LOG_WARN,
             "KILN_CACHE=%s is not one of on, off, 1, 0, yes, no, true, "
             "false; the disk cache stays on",
             v);
  return true;
}

static uint64_t max_bytes(void) {
  const char *v = kiln_getenv("KILN_CACHE_MAX_BYTES");
  if (!v) return DEFAULT_MAX_BYTES;
  unsigned shift = 0;
  const char *p = v;
  uint64_t n = 0;
  bool ok = *p >= '0' && *p <= '9';
  for (; ok && *p >= '0' && *p <= '9'; p++) {
    unsigned digit = (unsigned)(*p - '0');
    if (n > (UINT64_MAX - digit) / 10) ok = false;
    n = n * 10 + digit;
  }
  if (ok && *p) {
    switch (*p++) {
    case 'K': case 'k': shift = 10; break;
    case 'M': case 'm': shift = 20; break;
    case 'G': case 'g': shift = 30; break;
    default: ok = false;
    }
    if (*p) ok = false;
  }
  if (ok && n > (UINT64_MAX >> shift)) ok = false;
  if (ok) return n << shift;
  if (!atomic_flag_test_and_set(&warned_max_bytes))
    kiln_log(KILN_LOG_WARN,
             "KILN_CACHE_MAX_BYTES=%s is not a byte count (such as 100M); "
             "using 512M",
             v);
  return DEFAULT_MAX_BYTES;
}

/* The cache directory into dir[PATH_SIZE]; false when there is none (no
 * variable and no home) or its name is too long. */
static bool cache_dir(char *dir) {
  const char *base = kiln_getenv("KILN_CACHE_DIR");
  const char *suffix = "";
  if (!base) {
    base = kiln_getenv("XDG_CACHE_HOME");
    suffix = "/kiln";
    if (base && base[0] != '/') base = NULL;
  }
  char pw_buf[4096];
  if (!base) {
    base = kiln_getenv("HOME");
    suffix = "/.cache/kiln";
  }
  if (!base) {
    struct passwd pw, *found = NULL;
    if (getpwuid_r(getuid(), &pw, pw_buf, sizeof pw_buf, &found) != 0 ||
        !found || !found->pw_dir || !found->pw_dir[0])
      return false;
    base = found->pw_dir;
  }
  int n = snprintf(dir, PATH_SIZE, "%s%s", base, suffix);
  return n > 0 && n < PATH_SIZE;
}

/* ---- Trust --------------------------------------------------------------- */

static bool only_mine(const struct stat *st) {
  return st->st_uid == geteuid() && (st->st_mode & 022) == 0;
}

/* Opens the cache directory; -1 with errno set when it cannot be opened,
 * and -1 with errno EPERM (after one warning per directory) when someone
 * else could write to it. */
static int open_dir(const char *dir) {
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return -1;
  struct stat st;
  if (fstat(dfd, &st) == 0 && only_mine(&st)) return dfd;
  close(dfd);
  if (first_failure_in(dir))
    kiln_log(KILN_LOG_WARN,
             "cache: not using %s: it is owned by uid %u with mode %04o, but "
             "compiled code is only loaded from a directory owned by uid %u "
             "and not writable by group or others; running without the "
             "disk cache",
             dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
             (unsigned)geteuid());
  errno = EPERM;
  return -1;
}

/* `st` is NULL for a symbolic link, which O_NOFOLLOW would not open. Said
 * once per directory, which is named with a trailing slash so as not to
 * share the record of the directory's own warnings. */
static void untrusted_entry(const char *dir, const char *name,
                            const struct stat *st) {
  char said[PATH_SIZE + 1];
  snprintf(said, sizeof said, "%s/", dir);
  if (!first_failure_in(said)) return;
  char found[96];
  if (!st)
    snprintf(found, sizeof found, "a symbolic link");
  else
    snprintf(found, sizeof found, "%s owned by uid %u with mode %04o",
             S_ISREG(st->st_mode) ? "a file" : "not a regular file",
             (unsigned)st->st_uid, (unsigned)(st->st_mode & 07777));
  kiln_log(KILN_LOG_WARN,
           "cache: ignoring %s/%s: it is %s, but an entry must be a regular "
           "file owned by uid %u and not writable by group or others; "
           "compiling again instead",
           dir, name, found, (unsigned)geteuid());
}

/* ---- Files --------------------------------------------------------------- */

static void to_hex(const kiln_hash *key, char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[key->bytes[i] >> 4];
    hex[2 * i + 1] = digits[key->bytes[i] & 15];
  }
  hex[64] = '\0';
}

/* Reads exactly `size` bytes; 0, or the errno (EIO for an early end). */
static int read_all(int fd, void *buf, size_t size) {
  unsigned char *p = buf;
  while (size > 0) {
    ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return EIO;
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

static int write_all(int fd, const void *buf, size_t size) {
  const unsigned char *p = buf;
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

/* ---- Load ---------------------------------------------------------------- */

/* Checks an open entry and reads its payload; NULL with *why set when it
 * is not a good entry for `key`. */
static void *read_entry(int fd, const kiln_hash *key, size_t *out_size,
                        const char **why) {
  struct stat st;
  unsigned char h[HEADER_SIZE];
  if (fstat(fd, &st) != 0) {
    *why = "not a readable file";
    return NULL;
  }
  if (st.st_size < HEADER_SIZE || read_all(fd, h, HEADER_SIZE) != 0) {
    *why = "shorter than its header";
    return NULL;
  }
  uint64_t length = kiln_read_le(h + 48, 8);
  if (memcmp(h, MAGIC, 8) != 0) {
    *why = "wrong magic";
  } else if ((uint32_t)kiln_read_le(h + 8, 4) != FORMAT_VERSION) {
    *why = "another entry format version";
  } else if ((uint32_t)kiln_read_le(h + 12, 4) != HEADER_SIZE) {
    *why = "wrong header size";
  } else if (memcmp(h + 16, key->bytes, 32) != 0) {
    *why = "holds another key";
  } else if (length > SIZE_MAX - 1 ||
             (uint64_t)st.st_size - HEADER_SIZE != length) {
    *why = "its size does not match its header (truncated?)";
  } else {
    *why = NULL;
  }
  if (*why) return NULL;
  /* One byte more so that an empty payload is still a valid pointer. */
  unsigned char *data = malloc((size_t)length + 1);
  if (!data) {
    *why = "out of host memory";
    return NULL;
  }
  if (read_all(fd, data, (size_t)length) != 0) {
    *why = "read failed";
    free(data);
    return NULL;
  }
  kiln_sha256 sha;
  kiln_hash sum;
  kiln_sha256_init(&sha);
  kiln_sha256_update(&sha, data, (size_t)length);
  kiln_sha256_final(&sha, &sum);
  if (memcmp(sum.bytes, h + 56, 32) != 0) {
    *why = "checksum mismatch";
    free(data);
    return NULL;
  }
  *out_size = (size_t)length;
  return data;
}

bool kiln_cache_load(const char *kind, const kiln_hash *key, void **out_data,
                     size_t *out_size) {
  *out_data = NULL;
  *out_size = 0;
  char dir[PATH_SIZE], name[PATH_SIZE], hex[65];
  if (!kiln_cache_enabled() || !cache_dir(dir)) return false;
  to_hex(key, hex);
  int n = snprintf(name, sizeof name, "%s-%s.kc", kind, hex);
  if (n < 0 || n >= (int)sizeof name) return false;
  int dfd = open_dir(dir);
  /* O_NONBLOCK so that a FIFO put there cannot hang the open. */
  int fd = dfd < 0 ? -1
                   : openat(dfd, name,
                            O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) untrusted_entry(dir, name, NULL);
    if (dfd >= 0) close(dfd);
    kiln_log(KILN_LOG_DEBUG, "cache: miss %s %.16s", kind, hex);
    return false;
  }
  struct stat mine;
  bool examined = fstat(fd, &mine) == 0;
  if (!examined || !S_ISREG(mine.st_mode) || !only_mine(&mine)) {
    if (examined) untrusted_entry(dir, name, &mine);
    close(fd);
    close(dfd);
    return false;
  }
  const char *why;
  void *data = read_entry(fd, key, out_size, &why);
  if (!data) {
    /* Remove it only if it is still the file that was read: a writer may
     * have renamed a good entry over it meanwhile. */
    struct stat now;
    if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        mine.st_dev == now.st_dev && mine.st_ino == now.st_ino)
      unlinkat(dfd, name, 0);
    close(fd);
    close(dfd);
    kiln_log(KILN_LOG_DEBUG, "cache: miss %s %.16s: dropped %s/%s: %s", kind,
             hex, dir, name, why);
    return false;
  }
  /* Recency for eviction; failing to mark it only makes it older. */
  futimens(fd, NULL);
  close(fd);
  close(dfd);
  kiln_log(KILN_LOG_DEBUG, "cache: hit %s %.16s", kind, hex);
  *out_data = data;
  return true;
}

/* ---- Store --------------------------------------------------------------- */

/* Creates `path` and its parents; 0 or the errno. */
static int make_dirs(char *path) {
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != '\0') continue;
    char c = *p;
    *p = '\0';
    int err = mkdir(path, 0700) == 0 ? 0 : errno;
    struct stat st;
    /* An existing parent may answer EACCES rather than EEXIST. */
    if (err != 0 && (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))) {
      *p = c;
      return err == EEXIST ? ENOTDIR : err;
    }
    *p = c;
    if (c == '\0') return 0;
  }
}

/* Creates a new temporary file in the directory, mode 0600 (a umask can
 * only take bits away from that), its name into temp[64]; the fd, or -1
 * with errno set. mkstemp() takes a path, not a directory handle. */
static int make_temp(int dfd, char *temp) {
  static atomic_uint counter;
  static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  for (int attempt = 0; attempt < 100; attempt++) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t r = (uint64_t)now.tv_nsec ^ (uint64_t)now.tv_sec << 30 ^
                 (uint64_t)getpid() << 20 ^ atomic_fetch_add(&counter, 1u);
    r *= 0x9e3779b97f4a7c15ull;
    char *p = temp + snprintf(temp, 64, TEMP_PREFIX);
    for (int i = 0; i < 8; i++, r /= 36) *p++ = letters[r % 36];
    *p = '\0';
    int fd = openat(dfd, temp,
                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0600);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

typedef struct entry_file {
  char *name;
  uint64_t size;
  struct timespec mtime;
} entry_file;

static int by_recency(const void *a, const void *b) {
  const entry_file *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec)
    return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec)
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

static bool has_suffix(const char *name, const char *suffix) {
  size_t n = strlen(name), s = strlen(suffix);
  return n >= s && strcmp(name + n - s, suffix) == 0;
}

/* Removes stale temporary files and, when the entries exceed `bound`, the
 * least recently used ones except `keep`. Every error only leaves more on
 * disk: other processes may be removing the same files. */
static void evict(int dir_fd, const char *dir, const char *keep,
                  uint64_t bound) {
  int own = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = own < 0 ? NULL : fdopendir(own);
  if (!d) {
    if (own >= 0) close(own);
    return;
  }
  int dfd = dirfd(d);
  entry_file *list = NULL;
  size_t count = 0, cap = 0;
  uint64_t total = 0;
  time_t now = time(NULL);
  for (struct dirent *e; (e = readdir(d));) {
    bool temp = strncmp(e->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX)) == 0;
    if (!temp && (e->d_name[0] == '.' || !has_suffix(e->d_name, ".kc")))
      continue;
    struct stat st;
    if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(st.st_mode))
      continue;
    if (temp) {
      if (now - st.st_mtim.tv_sec > STALE_TEMP_SECONDS)
        unlinkat(dfd, e->d_name, 0);
      continue;
    }
    total += (uint64_t)st.st_size;
    if (count == cap) {
      size_t grown = cap ? 2 * cap : 64;
      entry_file *l = realloc(list, grown * sizeof *l);
      if (!l) break;
      list = l;
      cap = grown;
    }
    char *name = strdup(e->d_name);
    if (!name) break;
    list[count++] = (entry_file){name, (uint64_t)st.st_size, st.st_mtim};
  }
  if (total > bound && count > 0) {
    qsort(list, count, sizeof *list, by_recency);
    uint64_t target = bound / 10 * 9 + bound % 10 * 9 / 10;
    size_t removed = 0;
    for (size_t i = 0; i < count && total > target; i++) {
      if (strcmp(list[i].name, keep) == 0) continue;
      if (unlinkat(dfd, list[i].name, 0) == 0 || errno == ENOENT) {
        total -= list[i].size;
        removed++;
      }
    }
    kiln_log(KILN_LOG_DEBUG,
             "cache: evicted %zu entries from %s, %llu bytes remain", removed,
             dir, (unsigned long long)total);
  }
  for (size_t i = 0; i < count; i++) free(list[i].name);
  free(list);
  closedir(d);
}

void kiln_cache_store(const char *kind, const kiln_hash *key,
                      const void *data, size_t size) {
  char dir[PATH_SIZE], name[PATH_SIZE], temp[64], hex[65];
  if (!kiln_cache_enabled()) return;
  if (!cache_dir(dir)) {
    if (first_failure_in(""))
      kiln_log(KILN_LOG_WARN,
               "cache: no cache directory (KILN_CACHE_DIR, XDG_CACHE_HOME "
               "and HOME are unset and there is no home directory, or the "
               "path is too long); running without the disk cache");
    return;
  }
  uint64_t bound = max_bytes();
  if (bound < HEADER_SIZE || size > bound - HEADER_SIZE) {
    kiln_log(KILN_LOG_DEBUG,
             "cache: not storing %s: %zu bytes exceed KILN_CACHE_MAX_BYTES",
             kind, size);
    return;
  }
  to_hex(key, hex);
  int n = snprintf(name, sizeof name, "%s-%s.kc", kind, hex);
  if (n < 0 || n >= (int)sizeof name) {
    store_failed(dir, "path", ENAMETOOLONG);
    return;
  }
  int err = make_dirs(dir);
  if (err != 0) {
    store_failed(dir, "mkdir", err);
    return;
  }
  int dfd = open_dir(dir);
  if (dfd < 0) {
    if (errno != EPERM) store_failed(dir, "open", errno);
    return;
  }
  int fd = make_temp(dfd, temp);
  if (fd < 0) {
    store_failed(dir, "create", errno);
    close(dfd);
    return;
  }

  unsigned char h[HEADER_SIZE];
  memcpy(h, MAGIC, 8);
  kiln_write_le(h + 8, FORMAT_VERSION, 4);
  kiln_write_le(h + 12, HEADER_SIZE, 4);
  memcpy(h + 16, key->bytes, 32);
  kiln_write_le(h + 48, size, 8);
  kiln_sha256 sha;
  kiln_hash sum;
  kiln_sha256_init(&sha);
  kiln_sha256_update(&sha, data, size);
  kiln_sha256_final(&sha, &sum);
  memcpy(h + 56, sum.bytes, 32);

  const char *what = "write";
  err = write_all(fd, h, sizeof h);
  if (err == 0) err = write_all(fd, data, size);
  /* close reports delayed write errors on some file systems. */
  if (close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && renameat(dfd, temp, dfd, name) != 0) {
    err = errno;
    what = "rename";
  }
  if (err != 0) {
    unlinkat(dfd, temp, 0);
    store_failed(dir, what, err);
    close(dfd);
    return;
  }
  kiln_log(KILN_LOG_DEBUG, "cache: stored %s %.16s (%zu bytes)", kind, hex,
           size);
  evict(dfd, dir, name, bound);
  close(dfd);
}
