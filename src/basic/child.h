/* child.h: the bounded child processes gpunode runs (its own diagnosis, labels, API calls): how they
 * are started, and how they are killed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Writes the path of this program into buf: what /proc/self/exe links to (under valgrind
 * /proc/self/exe itself is valgrind), or "/proc/self/exe" when that file was deleted or replaced.
 * Returns nothing; never fails (buf holds at least "/proc/self/exe" when size allows). */
void child_self_path(char *buf, size_t size);

/* Starts path with argv in its own process group (a timeout then kills whatever it started too),
 * with no signal blocked and SIGPIPE, SIGTERM and SIGINT at their defaults, whatever the calling
 * thread blocks; descriptors 3 and up are closed in it. stdin is in_fd (-1: /dev/null), stdout
 * out_fd (-1: inherited), stderr /dev/null when quiet, else inherited. Returns the pid, or -errno. */
pid_t child_spawn(const char *path, const char *const *argv, int in_fd, int out_fd, bool quiet);

/* Kills pid's process group and pid with SIGKILL and reaps it, waiting up to 2 s. Returns nothing. */
void child_kill(pid_t pid);
