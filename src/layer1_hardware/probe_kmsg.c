/* probe_kmsg.c: reads the kernel log (/dev/kmsg under the root, or a saved file) through the scanner. */
#include "facts/node.h"
#include "basic/hostfs.h"
#include "basic/kfmt.h"
#include "layer1_hardware/kmsg.h"

#include <fcntl.h>

#define KMSG_DEVICE "/dev/kmsg"

int64_t probe_boot_time(void) {
        _cleanup_free_ char *stat = NULL;
        if (hostfs_read("/proc/stat", 1u << 20, &stat, NULL) < 0) return 0;
        int64_t t = kfmt_proc_stat_btime(stat);
        return t > 0 ? t : 0;
}

void probe_kmsg(const char *file, struct kmsg_facts *ret) {
        *ret = (struct kmsg_facts){ 0 };
        int fd;
        if (file) {
                /* A file the user named on the command line: not under the root. */
                fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
                fd = fd < 0 ? -errno : fd;
                ret->source = xstrdup(file);
        } else {
                fd = hostfs_open(KMSG_DEVICE, O_RDONLY | O_NONBLOCK);
                ret->source = xstrdup(KMSG_DEVICE);
        }
        if (fd < 0) {
                ret->rc = fd;
                ret->error = read_error(ret->source, fd);
                return;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) {
                ret->rc = -EINVAL;
                ret->error = xasprintf("%s: not a regular file or the kmsg device", ret->source);
                close(fd);
                return;
        }
        /* The device is this boot's log; a file may be any boot's (a snapshot says so itself). */
        if (!file) ret->boot_time = probe_boot_time();
        ret->scan = kmsg_scan_new();
        int r = kmsg_scan_read_fd(ret->scan, fd, S_ISCHR(st.st_mode));
        close(fd);
        kmsg_scan_finish(ret->scan);
        if (r < 0) {
                /* What was read stays usable; say that the rest could not be. */
                ret->rc = r;
                ret->error = read_error(ret->source, r);
        }
}

void kmsg_facts_free(struct kmsg_facts *f) {
        kmsg_scan_free(f->scan);
        free(f->error);
        free(f->source);
        *f = (struct kmsg_facts){ 0 };
}
