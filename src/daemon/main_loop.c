/* main_loop.c: the long-running commands' main loop: signals, ticks, and capabilities dropped once. */
#include "daemon/main_loop.h"
#include "basic/caps.h"
#include "basic/util.h"

#include <linux/capability.h>
#include <pthread.h>
#include <time.h>

#define TICK_MS 250

static volatile sig_atomic_t stop_signal;

/* Records the stop signal; the main loop sees it within its tick. Returns nothing. */
static void on_stop_signal(int sig) {
        stop_signal = sig;
}

const int daemon_stop_signals[DAEMON_N_STOP_SIGNALS] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT };

void daemon_block_signals(sigset_t *ret) {
        sigemptyset(ret);
        for (size_t i = 0; i < DAEMON_N_STOP_SIGNALS; i++) sigaddset(ret, daemon_stop_signals[i]);
        pthread_sigmask(SIG_BLOCK, ret, NULL);
        signal(SIGPIPE, SIG_IGN);
}

/*
 * Drops the capabilities the process no longer needs, in every thread, once NVML is open (its driver
 * client is set up with the privileges of the moment) and the sockets bound. Sampling goes through the
 * open NVML (device nodes 0666; root-owned /dev/nvidia-caps read as their owner) and the servers
 * through open sockets, so nothing else is needed. keep_syslog keeps CAP_SYSLOG for the `gpunode check`
 * children, which read /dev/kmsg (kernel.dmesg_restrict=1 reserves it to CAP_SYSLOG); every other file
 * they read is world-readable or owned by root (uid 0 stays), and the labels child writes only
 * root-owned files. An execve as root gets the bounding set, so that and no_new_privs hold the children
 * to it. Not root: only no_new_privs is set. Returns nothing; a failure is logged.
 */
static void drop_capabilities(const char *who, bool keep_syslog) {
        uint64_t keep = keep_syslog ? CAP_BIT(CAP_SYSLOG) : 0;
        unsigned pending = 0;
        int r = caps_restrict_process(keep, 2000, &pending);
        if (r == -ETIMEDOUT)
                fprintf(stderr, "gpunode %s: %u thread(s) busy in a call keep their capabilities until it returns\n",
                        who, pending);
        else if (r < 0)
                fprintf(stderr, "gpunode %s: cannot drop capabilities: %s\n", who, strerror(-r));
        else
                fprintf(stderr, "gpunode %s: capabilities dropped (kept: %s), no_new_privs set\n", who,
                        keep_syslog ? "cap_syslog, for the diagnosis's /dev/kmsg" : "none");
}

int daemon_main_loop(const sigset_t *sigs, const struct daemon_loop_options *o) {
        struct sigaction sa = { .sa_handler = on_stop_signal };
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < DAEMON_N_STOP_SIGNALS; i++) sigaction(daemon_stop_signals[i], &sa, NULL);
        pthread_sigmask(SIG_UNBLOCK, sigs, NULL);
        bool dropped = false;
        uint64_t started = monotonic_ms();
        while (!stop_signal) {
                struct timespec tick = { 0, TICK_MS * 1000000L };
                nanosleep(&tick, NULL); /* a signal cuts it short */
                if (stop_signal) break;
                if (o->tick && o->tick(o->userdata)) return 0;
                if (o->drop_capabilities && !dropped &&
                    (!o->ready_to_drop || o->ready_to_drop(o->userdata) ||
                     monotonic_ms() - started >= o->drop_timeout_ms)) {
                        drop_capabilities(o->who, o->keep_syslog);
                        dropped = true;
                }
        }
        return stop_signal;
}
