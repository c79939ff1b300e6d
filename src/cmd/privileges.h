/* privileges.h: when and how the long-running commands (exporter, agent) give up the privileges
 * they started with. */
#pragma once

#include <stdbool.h>
#include <time.h>

struct exporter;

/* Returns true once privileges may go: the sampler has tried NVML (a sample was published,
 * complete or partial), or sample_timeout_ms have passed since started (NVML's first call hangs:
 * the process must not stay privileged for as long as it does). */
bool privileges_can_drop(struct exporter *e, const struct timespec *started, const struct timespec *now,
                         unsigned sample_timeout_ms);

/*
 * Drops the privileges the running process no longer needs, in every thread, once NVML is open (its
 * driver client is set up with the privileges of the moment) and the socket bound. Sampling goes
 * through the open NVML (device nodes 0666; root-owned /dev/nvidia-caps read as their owner) and the
 * server through an open socket, so nothing else is needed. keep_syslog keeps CAP_SYSLOG for the
 * `gpunode check` children, which read /dev/kmsg (kernel.dmesg_restrict=1 reserves it to
 * CAP_SYSLOG); every other file they read is world-readable or owned by root (uid 0 stays), and the
 * labels child writes only root-owned files. An execve as root gets the bounding set, so that and
 * no_new_privs hold the children to it. Not root: only no_new_privs is set. who ("exporter",
 * "agent") names the command in the log line. Returns nothing; a failure is logged and the process
 * serves on.
 */
void privileges_drop(const char *who, bool keep_syslog);
