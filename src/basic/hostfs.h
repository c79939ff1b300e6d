/* hostfs.h: every read of the host goes through here, below one root prefix (--root). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Files larger than this are refused by hostfs_read unless a caller asks for more. */
#define HOSTFS_READ_MAX (4u << 20)

/* Returns 0, or -errno when root cannot be opened as a directory. Paths given to the
 * functions below are host paths ("/proc/modules"); they are resolved inside root, so
 * symlinks (absolute or "..") can never leave it. */
int hostfs_init(const char *root);
void hostfs_done(void);
/* Returns the root as given (default "/"). */
const char *hostfs_root(void);

/* Something that wants to see every path read (gpunode collect). */
typedef void (*hostfs_recorder_fn)(const char *path, void *userdata);
void hostfs_set_recorder(hostfs_recorder_fn fn, void *userdata);

/* Returns an fd opened with flags (O_CLOEXEC added) or -errno (ELOOP for a symlink loop). */
int hostfs_open(const char *path, int flags);

/* Reads a whole regular file of at most max bytes into a NUL-terminated malloc'd buffer.
 * Returns 0, or -errno: -ENOENT missing, -EACCES unreadable, -EFBIG larger than max,
 * -EINVAL not a regular file (a FIFO or a device is never read through here). */
int hostfs_read(const char *path, size_t max, char **ret, size_t *ret_len);

/* Reads the rest of an open regular file, at most max bytes, into a NUL-terminated malloc'd
 * buffer by reading (sysfs and /proc sizes lie). Returns 0, or -errno: -EFBIG larger than max,
 * -EINVAL not a regular file. Does not close fd. */
int hostfs_read_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* Reads the first line of a small file, trailing whitespace removed. Returns 0 or -errno. */
int hostfs_read_line(const char *path, char **ret);

/* Reads a small file holding one unsigned number (decimal, or hex with 0x). Returns 0, -errno,
 * or -EINVAL when the content is not a number. */
int hostfs_read_u64(const char *path, uint64_t *ret);

/* Returns the basename of a symlink's target ("nvidia" for .../driver) or -errno. */
int hostfs_readlink_basename(const char *path, char **ret);

/* stat()s path inside root (following symlinks inside it). Returns 0 or -errno. */
int hostfs_stat(const char *path, struct stat *ret);
/* Returns true when path exists inside root. */
bool hostfs_exists(const char *path);

/* Lists the names in a directory, sorted, without "." and "..", skipping hidden names unless
 * all is set. Returns the count (>= 0) or -errno; free with strv_free. */
int hostfs_list(const char *dir, bool all, char ***ret);

/* Frees a NULL-terminated string array. */
void strv_free(char **v);
static inline void strv_freep(char ***v) {
        strv_free(*v);
}
#define _cleanup_strv_free_ __attribute__((cleanup(strv_freep)))
