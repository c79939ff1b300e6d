/* privileges.h: the long-running commands' (exporter, agent) main loop, and when and how they give
 * up the privileges they started with. */
#pragma once

#include <signal.h>
#include <stdbool.h>

struct exporter;

/* The long-running commands' main loop, once their socket is bound: installs the SIGTERM and SIGINT
 * handler, unblocks sigs (blocked while the other threads started), then runs the exporter's
 * watchdog every 250 ms until one of them arrives, dropping every capability but CAP_SYSLOG (none unless
 * keep_syslog) as soon as NVML has been tried or sample_timeout_ms passed (see privileges.c); who
 * ("exporter", "agent") names the command in its log lines. Returns the signal that ended it. */
int serve_until_stopped(struct exporter *e, const sigset_t *sigs, unsigned sample_timeout_ms, const char *who,
                        bool keep_syslog);
