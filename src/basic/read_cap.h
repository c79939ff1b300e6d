/* read_cap.h: the one read of a file or fd up to a byte cap, into a NUL-terminated buffer. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/*
 * Reads fd from its position to its end into a malloc'd, NUL-terminated buffer (*ret, *ret_len bytes when ret_len
 * is not NULL). At most max bytes: with truncate, reading stops there and the rest is left unread (a log that grows
 * while it is read); without it, more than max is -EFBIG. Returns 0, or -errno from read(2) (EINTR retried).
 * Does not close fd.
 */
int read_fd_capped(int fd, size_t max, bool truncate, char **ret, size_t *ret_len);
