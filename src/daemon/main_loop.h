/* main_loop.h: the long-running commands' main loop: signals, ticks, and capabilities dropped once. */
#pragma once

#include <signal.h>
#include <stdbool.h>

/* The signals that stop a long-running gpunode cleanly (the same shutdown for each): SIGTERM, SIGINT,
 * SIGHUP (a closed terminal, a kill -HUP meant as "reload") and SIGQUIT. */
#define DAEMON_N_STOP_SIGNALS 4
extern const int daemon_stop_signals[DAEMON_N_STOP_SIGNALS];

/* Blocks daemon_stop_signals in the calling thread, so that threads started after it inherit the mask
 * (NVML calls are never interrupted) and only the main loop sees them, and ignores SIGPIPE. Fills
 * *ret with the blocked set for daemon_main_loop(). Returns nothing; never fails. */
void daemon_block_signals(sigset_t *ret);

/* What the main loop does between signals. */
struct daemon_loop_options {
        const char *who;          /* the command, for log lines: "exporter", "agent", "device-plugin" */
        bool drop_capabilities;   /* false: keep them (the device plugin makes sockets in the kubelet's folder) */
        bool keep_syslog;         /* keep CAP_SYSLOG for the diagnosis children's /dev/kmsg */
        unsigned drop_timeout_ms; /* capabilities go at the latest this long after the start */
        /* Returns true once capabilities may go (NVML tried, sockets bound); NULL: at the first tick. */
        bool (*ready_to_drop)(void *userdata);
        /* Runs every tick (250 ms), e.g. the sampler's watchdog; returns true to stop the loop (a
         * capability's thread ended). NULL: none. */
        bool (*tick)(void *userdata);
        void *userdata;
};

/*
 * Unblocks sigs (daemon_block_signals), then ticks every 250 ms until one of daemon_stop_signals, or o->tick
 * returns true: calls o->tick, and, when o->drop_capabilities, once o->ready_to_drop says so (or o->drop_timeout_ms
 * have passed: NVML's first call may hang, and the process must not stay privileged that long) drops every capability
 * but CAP_SYSLOG when o->keep_syslog, in every thread, and sets no_new_privs, saying so on stderr. Returns the signal
 * that stopped it, 0 when o->tick did; a failure to drop is logged and the process serves on.
 */
int daemon_main_loop(const sigset_t *sigs, const struct daemon_loop_options *o);
