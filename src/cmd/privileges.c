/* privileges.c: the exporter's and the agent's main loop, and when and how they give up their privileges. */
#include "cmd/privileges.h"
#include "basic/caps.h"
#include "exporter/exporter.h"

#include <linux/capability.h>
#include <pthread.h>
#include <time.h>

/* Returns true once privileges may go: the sampler has tried NVML (a sample was published,
 * complete or partial), or sample_timeout_ms have passed since started (NVML's first call hangs:
 * the process must not stay privileged for as long as it does). */
static bool privileges_can_drop(struct exporter *e, const struct timespec *started, const struct timespec *now,
                                unsigned sample_timeout_ms) {
        struct exp_page *p = exporter_page(e);
        bool tried = p->have_sample || p->nvml_up;
        exp_page_unref(p);
        return tried || exp_seconds_between(started, now) * 1000.0 >= sample_timeout_ms;
}

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
static void privileges_drop(const char *who, bool keep_syslog) {
        uint64_t keep = keep_syslog ? CAP_BIT(CAP_SYSLOG) : 0;
        unsigned pending = 0;
        int r = caps_restrict_process(keep, 2000, &pending);
        if (r == -ETIMEDOUT)
                fprintf(stderr, "gpunode %s: %u thread(s) busy in a call keep their capabilities until it returns\n", who,
                        pending);
        else if (r < 0)
                fprintf(stderr, "gpunode %s: cannot drop capabilities: %s\n", who, strerror(-r));
        else
                fprintf(stderr, "gpunode %s: capabilities dropped (kept: %s), no_new_privs set\n", who,
                        keep_syslog ? "cap_syslog, for the diagnosis's /dev/kmsg" : "none");
}

static volatile sig_atomic_t stop_signal;

/* Records the stop signal; the main loop sees it within its tick. Returns nothing. */
static void on_stop_signal(int sig) { stop_signal = sig; }

int serve_until_stopped(struct exporter *e, const sigset_t *sigs, unsigned sample_timeout_ms, const char *who,
                        bool keep_syslog) {
        struct sigaction sa = { .sa_handler = on_stop_signal };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        pthread_sigmask(SIG_UNBLOCK, sigs, NULL);
        /* privileges go once NVML has been tried, or a sample timeout after the start when its first
         * call hangs */
        bool dropped = false;
        struct timespec started;
        clock_gettime(CLOCK_MONOTONIC, &started);
        while (!stop_signal) {
                struct timespec tick = { 0, 250 * 1000000L };
                nanosleep(&tick, NULL); /* a signal cuts it short */
                if (!stop_signal) exporter_watchdog(e);
                if (!dropped && !stop_signal) {
                        struct timespec now;
                        clock_gettime(CLOCK_MONOTONIC, &now);
                        if (privileges_can_drop(e, &started, &now, sample_timeout_ms)) {
                                privileges_drop(who, keep_syslog);
                                dropped = true;
                        }
                }
        }
        return stop_signal;
}
