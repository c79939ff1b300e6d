/* dpkg.h: dpkg's status file (/var/lib/dpkg/status), read once per run and parsed into the packages it lists. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define DPKG_STATUS_PATH "/var/lib/dpkg/status"
#define DPKG_STATUS_MAX  (64u << 20) /* a desktop's is 3-5 MiB; this only stops a hostile file */

/* One stanza of the status file (what gpunode needs of it). */
struct dpkg_package {
        char *name;     /* Package: "containerd", "nvidia-fabricmanager-550" */
        char *version;  /* Version: as dpkg writes it ("1:1.7.24~ds1-1"); NULL when the stanza has none */
        bool installed; /* Status: "<want> <flag> installed" ("deinstall ok config-files" is not) */
};

struct dpkg_status {
        int rc;                        /* 0 read; -ENOENT no status file (not a dpkg host); other -errno unreadable */
        struct dpkg_package *packages; /* in the file's order; stanzas without a Package field are left out */
        size_t n_packages;
};

/* Parses a status file's text (len bytes, NULs allowed) into ret (rc set to 0), in time linear in len: stanzas
 * separated by blank lines, "Field: value" lines with field names matched without case, continuation lines
 * (a leading blank) and comments skipped, values trimmed. Never fails: what it does not recognise it skips. */
void dpkg_status_parse(const char *text, size_t len, struct dpkg_status *ret);

/* Reads DPKG_STATUS_PATH through hostfs and parses it into ret. Never fails: ret->rc says whether it was read
 * (-ENOENT, -EFBIG past DPKG_STATUS_MAX, other -errno), and ret lists no package when it was not. */
void dpkg_status_read(struct dpkg_status *ret);

/* Returns the first package called name that is installed with a non-empty version, or NULL (absent, removed,
 * only its config files left, or s NULL). */
const struct dpkg_package *dpkg_status_installed(const struct dpkg_status *s, const char *name);

/* Frees what s holds; it is then zeroed. */
void dpkg_status_free(struct dpkg_status *s);
