/* caps.h: keep a few capabilities and drop the rest, in one thread or in every thread of the process. */
#pragma once

#include <stdint.h>

/* The bit of capability c (CAP_SYSLOG and the like, <linux/capability.h>) in a keep mask. */
#define CAP_BIT(c) (UINT64_C(1) << (c))

/*
 * What each command needs, for those who run gpunode with fewer privileges (uid 0 stays: files owned
 * by root, such as the kubelet's checkpoint or /dev/nvidia-caps, are read as their owner, with no
 * capability):
 *   check, collect  CAP_SYSLOG, for /dev/kmsg when kernel.dmesg_restrict is 1 (not with --kmsg FILE);
 *                   nothing else: /proc/<pid>/comm, stat and cmdline are world-readable
 *   labels          none (NVML's device nodes are 0666; the feature file's folder belongs to root)
 *   exporter        none for itself once NVML is open and the socket bound (a --listen port below 1024
 *                   needs CAP_NET_BIND_SERVICE until then); it keeps CAP_SYSLOG for its `gpunode check`
 *                   children when the diagnosis runs (--check-interval not 0)
 *   explain         none
 */

/*
 * Restricts the calling thread: capabilities outside keep leave its bounding set (when it holds
 * CAP_SETPCAP) and its permitted and effective sets, which become permitted & keep; its inheritable
 * and ambient sets are emptied; no_new_privs is set, so no later execve (of a setuid file or one with
 * file capabilities) grants more than is left. With no capabilities (not root) only no_new_privs is
 * set. Capabilities belong to a thread, not to the process: see caps_restrict_process. Uses raw
 * system calls only: async-signal-safe. Returns 0, or -errno from the first call that failed (the
 * thread may then be partly restricted).
 */
int caps_restrict_thread(uint64_t keep);

/*
 * caps_restrict_thread(keep) in every thread of the process: the calling thread, then each other one
 * through a real-time signal whose handler does it (as libcap's psx does), rescanning /proc/self/task
 * until every thread has, so that threads started meanwhile are caught too. A thread busy in a call
 * that is not interrupted does it when the call returns; timeout_ms bounds the wait for that. The
 * handler stays installed (a late signal must not kill the process): call this once per process.
 * Returns 0; -ETIMEDOUT with the number of threads not done yet in *ret_pending (they will be when
 * they next run); -EBUSY when the signal has a handler already; or -errno from a thread.
 */
int caps_restrict_process(uint64_t keep, unsigned timeout_ms, unsigned *ret_pending);
