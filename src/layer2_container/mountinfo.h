/* mountinfo.h: the kernel's /proc/<pid>/mountinfo, parsed; which mount holds a path. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* One line of mountinfo (proc(5)): "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue". */
struct mount_entry {
        char *mount_point; /* octal escapes (\040 a space) decoded */
        char *fstype, *source;
        bool read_only;    /* the mount's own options say "ro" */
        bool sb_read_only; /* the superblock's options say "ro" (ext4 remounted read-only on errors) */
        unsigned line;     /* 1-based */
};

/* Parses mountinfo text (len bytes). Returns 0 with the entries, in order, malloc'd in *ret and their
 * count in *ret_n; -EINVAL when a line is not in the kernel's format (fewer than ten fields, no " - "
 * separator, an ID or major:minor that is not a number, a mount point not starting with '/', a NUL
 * byte), its 1-based number in *ret_bad_line (nothing allocated). Free with mount_entries_free. */
int mountinfo_parse(const char *text, size_t len, struct mount_entry **ret, size_t *ret_n, unsigned *ret_bad_line);

/* Returns the mount that holds path (absolute, no "." or ".." parts): of the entries whose mount point
 * is path or a parent folder of it, the deepest, the last of those on the same point (a later mount
 * hides an earlier one), or NULL. */
const struct mount_entry *mountinfo_find(const struct mount_entry *v, size_t n, const char *path);

/* Frees n entries and the array; NULL is fine. */
void mount_entries_free(struct mount_entry *v, size_t n);
