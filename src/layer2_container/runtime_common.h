/* runtime_common.h: what the layer 2 probes share: finding a daemon in /proc, an executable on the
 * host's PATH, and the bound on one configuration file. */
#pragma once

#include "facts/layer2_container.h"

/* The most one runtime configuration file may hold; a larger one is reported, not read. */
#define RUNTIME_CONFIG_READ_MAX (1u << 20)

/* The host's executable folders, as a daemon's PATH would have them (NULL-terminated). */
extern const char *const runtime_bin_dirs[];

/* Finds a daemon by comm in /proc below the root (the lowest pid), with its start time and its
 * --config/-c argument. Returns true when found; never fails otherwise. */
bool runtime_find_process(const char *comm, struct runtime_process *ret);
/* Returns 0 when path (a host path) is an executable regular file below the root, -ENOENT when
 * missing, -EACCES when not executable, -EISDIR/-EINVAL when not a regular file. */
int runtime_binary_check(const char *path);
/* Returns the first of dirs (NULL-terminated) holding an executable `name`, malloc'd; NULL when none. */
char *runtime_find_binary(const char *name, const char *const *dirs);
