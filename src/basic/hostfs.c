/* hostfs.c: host reads below the root prefix, symlinks resolved as if root were "/". */
#include "basic/hostfs.h"
#include "basic/read_cap.h"
#include "basic/util.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>

static int root_fd = -1;
static char *root_path;
static hostfs_recorder_fn recorder;
static void *recorder_data;

int hostfs_init(const char *root) {
        hostfs_done();
        if (!root || !*root) root = "/";
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return -errno;
        root_fd = fd;
        root_path = xstrdup(root);
        return 0;
}

void hostfs_done(void) {
        if (root_fd >= 0) close(root_fd);
        root_fd = -1;
        free(root_path);
        root_path = NULL;
}

const char *hostfs_root(void) {
        return root_path ? root_path : "/";
}

void hostfs_set_recorder(hostfs_recorder_fn fn, void *userdata) {
        recorder = fn;
        recorder_data = userdata;
}

/* openat2 with RESOLVE_IN_ROOT treats root_fd as "/" for every component, absolute links and
 * ".." included: a fixture tree or a host mounted at /host can never lead the probe out. */
int hostfs_open(const char *path, int flags) {
        /* No implicit "/": a command that forgot hostfs_init() must not read the machine it runs
         * on in place of the root it was given. */
        if (root_fd < 0) return -EBADF;
        if (recorder) recorder(path, recorder_data);
        while (*path == '/') path++;
        if (!*path) path = ".";
        struct open_how how = {
                .flags = (uint64_t)(flags | O_CLOEXEC),
                .resolve = RESOLVE_IN_ROOT,
        };
        int fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof how);
        if (fd >= 0) return fd;
        if (errno != ENOSYS) return -errno;
        /* Kernels before 5.6: plain openat; links may escape, the root is trusted then. */
        fd = openat(root_fd, path, flags | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int hostfs_read_fd(int fd, size_t max, char **ret, size_t *ret_len) {
        struct stat st;
        if (fstat(fd, &st) < 0) return -errno;
        if (!S_ISREG(st.st_mode)) return -EINVAL;
        return read_fd_capped(fd, max, false, ret, ret_len);
}

int hostfs_read(const char *path, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = hostfs_open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) return fd;
        return hostfs_read_fd(fd, max, ret, ret_len);
}

int hostfs_read_line(const char *path, char **ret) {
        char *s;
        int r = hostfs_read(path, 64 * 1024, &s, NULL);
        if (r < 0) return r;
        s[strcspn(s, "\n")] = 0;
        *ret = strstrip_right(s);
        return 0;
}

int hostfs_read_u64(const char *path, uint64_t *ret) {
        _cleanup_free_ char *s = NULL;
        int r = hostfs_read_line(path, &s);
        if (r < 0) return r;
        return parse_u64(s, 0, ret);
}

int hostfs_readlink_basename(const char *path, char **ret) {
        /* Open the link's parent inside root, then readlinkat the last component. */
        _cleanup_free_ char *copy = xstrdup(path);
        char *slash = strrchr(copy, '/');
        const char *name = copy;
        const char *dir = "/";
        if (slash) {
                *slash = 0;
                name = slash + 1;
                if (*copy) dir = copy;
        }
        _cleanup_close_ int dfd = hostfs_open(dir, O_PATH | O_DIRECTORY);
        if (dfd < 0) return dfd;
        char target[4096];
        ssize_t n = readlinkat(dfd, name, target, sizeof target - 1);
        if (n < 0) return -errno;
        target[n] = 0;
        const char *base = strrchr(target, '/');
        *ret = xstrdup(base ? base + 1 : target);
        return 0;
}

int hostfs_stat(const char *path, struct stat *ret) {
        _cleanup_close_ int fd = hostfs_open(path, O_PATH);
        if (fd < 0) return fd;
        return fstat(fd, ret) < 0 ? -errno : 0;
}

bool hostfs_exists(const char *path) {
        struct stat st;
        return hostfs_stat(path, &st) == 0;
}

/* qsort comparator for an array of strings. */
static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int hostfs_list(const char *dir, bool all, char ***ret) {
        int fd = hostfs_open(dir, O_RDONLY | O_DIRECTORY);
        if (fd < 0) return fd;
        DIR *d = fdopendir(fd);
        if (!d) {
                int e = -errno;
                close(fd);
                return e;
        }
        size_t n = 0, cap = 16;
        char **v = xmalloc(cap * sizeof *v);
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, "..")) continue;
                if (!all && de->d_name[0] == '.') continue;
                if (n + 2 > cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
                v[n++] = xstrdup(de->d_name);
        }
        closedir(d);
        v[n] = NULL;
        qsort(v, n, sizeof *v, cmp_str);
        *ret = v;
        return (int)n;
}

void strv_free(char **v) {
        if (!v) return;
        for (char **p = v; *p; p++) free(*p);
        free(v);
}
