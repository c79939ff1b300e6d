/* driver_lib.c: a GPU driver's user-space library found and loaded under the root, as drivers install it. */
#include "basic/driver_lib.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/hostfs.h"
#include "basic/ld_cache.h"
#include "basic/util.h"

/* Where drivers install their libraries, below a driver root: Debian's multiarch folder for this machine
 * (the .run installer and Ubuntu's packages), then RHEL's and the plain one. Another architecture's folder
 * holds libraries this process cannot load, so it is not listed. */
static const char *const driver_lib_dirs[] = {
#if defined(__x86_64__)
        "/usr/lib/x86_64-linux-gnu",
#elif defined(__aarch64__)
        "/usr/lib/aarch64-linux-gnu",
#endif
        "/usr/lib64",
        "/usr/lib",
};

/* The driver roots under --root: the host's own, and the GPU Operator's driver container's, which it
 * mounts at /run/nvidia/driver on the host. */
static const char *const driver_roots[] = { "", "/run/nvidia/driver" };

/* Tries the host file hostpath (resolved inside the root by hostfs, symlinks included): dlopens it by the
 * real path the kernel gives the opened file (/proc/self/fd), as the dynamic linker needs a path. Returns
 * the handle, or NULL with a note in why (nothing for a file that is absent). */
static void *open_in_root(const char *hostpath, struct buf *why) {
        _cleanup_close_ int fd = hostfs_open(hostpath, O_PATH);
        if (fd < 0) return NULL;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                buf_printf(why, "; %s under %s is not a regular file", hostpath, hostfs_root());
                return NULL;
        }
        /* Loading it runs its code: only a file that root (or this user) owns and nobody else may
         * write, as a driver's installer leaves it, never one a tree's other users could have planted. */
        if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & (S_IWGRP | S_IWOTH))) {
                buf_printf(why,
                           "; %s under %s not loaded: owned by uid %u, mode %04o (a library must be root's and "
                           "writable by its owner only)",
                           hostpath, hostfs_root(), (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
                return NULL;
        }
        char link[64], real[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, real, sizeof real - 1);
        if (n <= 0) {
                buf_printf(why, "; %s under %s: cannot tell its path (%s): is /proc mounted?", hostpath, hostfs_root(),
                           n < 0 ? strerror(errno) : "empty link");
                return NULL;
        }
        real[n] = 0;
        dlerror();
        void *h = dlopen(real, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
                const char *e = dlerror();
                buf_printf(why, "; %s", e ? e : real);
        }
        return h;
}

/* Looks for soname under the root (hostfs): in each driver root, its ld.so.cache's entry for this machine's
 * ABI, then the usual folders. Returns the first handle that dlopens, or NULL with notes in why. */
static void *open_under_root(const char *soname, struct buf *why) {
        for (size_t i = 0; i < ELEMENTSOF(driver_roots); i++) {
                const char *dr = driver_roots[i];
                _cleanup_free_ char *cache_path = xasprintf("%s/etc/ld.so.cache", dr);
                _cleanup_free_ char *cache = NULL, *entry = NULL, *err = NULL;
                size_t len = 0;
                if (hostfs_read(cache_path, HOSTFS_READ_MAX, &cache, &len) == 0) {
                        int r = ld_cache_find(cache, len, soname, ld_cache_native_flags(), &entry, &err);
                        if (r == -EBADMSG) buf_printf(why, "; %s under %s: %s", cache_path, hostfs_root(), err);
                        if (r == 0) {
                                _cleanup_free_ char *p = xasprintf("%s%s", dr, entry);
                                void *h = open_in_root(p, why);
                                if (h) return h;
                        }
                }
                for (size_t j = 0; j < ELEMENTSOF(driver_lib_dirs); j++) {
                        _cleanup_free_ char *p = xasprintf("%s%s/%s", dr, driver_lib_dirs[j], soname);
                        void *h = open_in_root(p, why);
                        if (h) return h;
                }
        }
        return NULL;
}

/* Returns the handle or NULL with *ret_error (see driver_lib.h). */
void *driver_lib_dlopen(const char *soname, char **ret_error) {
        struct buf why = { 0 };
        bool host_first = !streq(hostfs_root(), "/");
        void *h = host_first ? open_under_root(soname, &why) : NULL;
        if (!h) {
                dlerror();
                h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
                if (!h) {
                        const char *e = dlerror();
                        _cleanup_free_ char *linker = xstrdup(e ? e : "dlopen failed");
                        if (!host_first) h = open_under_root(soname, &why);
                        if (!h && ret_error) {
                                struct buf all = { 0 };
                                buf_printf(&all, "%s; not under %s either (its /etc/ld.so.cache", linker,
                                           hostfs_root());
                                for (size_t j = 0; j < ELEMENTSOF(driver_lib_dirs); j++)
                                        buf_printf(&all, ", %s", driver_lib_dirs[j]);
                                buf_printf(&all, ", and the same below /run/nvidia/driver)%s",
                                           why.data ? why.data : "");
                                *ret_error = all.data;
                        }
                }
        }
        buf_free(&why);
        return h;
}
