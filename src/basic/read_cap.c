/* read_cap.c: the one read of a file or fd up to a byte cap (hostfs, the fabric manager log, config files). */
#include "basic/read_cap.h"

#include <errno.h>
#include <unistd.h>

#include "basic/util.h"

int read_fd_capped(int fd, size_t max, bool truncate, char **ret, size_t *ret_len) {
        struct buf b = { 0 };
        char chunk[16384];
        for (;;) {
                size_t want = sizeof chunk;
                if (truncate && max - b.len < want) want = max - b.len;
                if (want == 0) break;
                ssize_t n = read(fd, chunk, want);
                if (n < 0) {
                        if (errno == EINTR) continue;
                        int e = -errno;
                        buf_free(&b);
                        return e;
                }
                if (n == 0) break;
                if (b.len + (size_t)n > max) {
                        buf_free(&b);
                        return -EFBIG;
                }
                buf_append(&b, chunk, (size_t)n);
        }
        if (!b.data) buf_append(&b, "", 0);
        if (ret_len) *ret_len = b.len;
        *ret = b.data;
        return 0;
}
