/* supervisor.h: children a long-running gpunode keeps alive (the labels loop), restarted with backoff. */
#pragma once

struct supervisor;

/* Starts a thread that keeps `path argv...` running (argv copied, NULL-terminated; argv[0] its name),
 * restarting it when it exits after 1 s, doubling to 60 s, back to 1 s once it ran a minute; each exit
 * is logged on stderr as "gpunode WHO: the NAME child exited (status N); restarting in M ms". Returns 0
 * and *ret, or -errno when the thread cannot start. */
int supervisor_start(const char *who, const char *name, const char *path, const char *const *argv,
                     struct supervisor **ret);

/* Stops the child (SIGTERM, then SIGKILL after 2 s) and the thread, and frees s. Returns NULL. */
struct supervisor *supervisor_stop(struct supervisor *s);
