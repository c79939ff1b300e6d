/* exporter.c: `gpunode exporter`: parse options, start the sampler and HTTP server, wait for SIGTERM. */
#include "cmd/commands.h"
#include "exporter/exporter.h"
#include "basic/hostfs.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>

static volatile sig_atomic_t stop_signal;

/* Records the stop signal; the main loop sees it within its tick. Returns nothing. */
static void on_stop_signal(int sig) { stop_signal = sig; }

/* Parses a duration: "10", "1.5", "10s", "500ms". Returns 0 and milliseconds in *ret, or -EINVAL. */
static int parse_duration_ms(const char *s, bool allow_zero, unsigned *ret) {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (errno || end == s || !isfinite(v) || v < 0) return -EINVAL;
        if (streq(end, "ms")) v /= 1000;
        else if (*end && !streq(end, "s")) return -EINVAL;
        if (v > 86400 || (!allow_zero && v * 1000 < 1) || (v > 0 && v * 1000 < 1)) return -EINVAL;
        *ret = (unsigned)llround(v * 1000);
        return 0;
}

int cmd_exporter(int argc, char **argv) {
        static const struct option longopts[] = {
                {"listen", required_argument, NULL, 'L'},
                {"interval", required_argument, NULL, 'i'},
                {"sample-timeout", required_argument, NULL, 'T'},
                {"check-interval", required_argument, NULL, 'c'},
                {"root", required_argument, NULL, 'r'},
                {"nvml-library", required_argument, NULL, 'l'},
                {"no-hostname", no_argument, NULL, 'H'},
                {"hostname-label", required_argument, NULL, 'N'},
                {"no-xid-events", no_argument, NULL, 'X'},
                {"check-timeout", required_argument, NULL, 't'},
                {"kubeconfig", required_argument, NULL, 'K'},
                {0},
        };
        const char *listen_addr = ":9400", *root = getenv("GPUNODE_ROOT");
        struct exp_options o = { .interval_ms = 10000, .sample_timeout_ms = 10000, .check_interval_ms = 60000,
                                 .check_timeout_ms = 60000,
                                 .hostname_label = "Hostname", .xid_events = true };
        bool no_hostname = false;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                unsigned *dst = NULL;
                bool zero = false;
                switch (c) {
                case 'L': listen_addr = optarg; break;
                case 'i': dst = &o.interval_ms; break;
                case 'T': dst = &o.sample_timeout_ms; break;
                case 'c': dst = &o.check_interval_ms; zero = true; break;
                case 'r': root = optarg; break;
                case 'l': o.nvml_library = optarg; break;
                case 'H': no_hostname = true; break;
                case 'N':
                        if (!streq(optarg, "Hostname") && !streq(optarg, "hostname")) {
                                fprintf(stderr, "gpunode exporter: --hostname-label must be Hostname or hostname\n");
                                return EXIT_USAGE;
                        }
                        o.hostname_label = optarg;
                        break;
                case 'X': o.xid_events = false; break;
                case 't': dst = &o.check_timeout_ms; break;
                case 'K': o.kubeconfig = optarg; break;
                default: return EXIT_USAGE;
                }
                if (dst && parse_duration_ms(optarg, zero, dst) < 0) {
                        fprintf(stderr, "gpunode exporter: --%s: '%s' is not a duration (10, 1.5s, 500ms)\n",
                                c == 'i' ? "interval" : c == 'T' ? "sample-timeout" : c == 't' ? "check-timeout" : "check-interval",
                                optarg);
                        return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gpunode exporter: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        if (!root || !*root) root = "/";
        o.root = root;
        char host[256] = "";
        if (!no_hostname) {
                const char *env = getenv("NODE_NAME");
                if (env && *env) snprintf(host, sizeof host, "%s", env);
                else if (gethostname(host, sizeof host - 1) < 0) snprintf(host, sizeof host, "unknown");
                o.hostname = host;
        }
        int r = hostfs_init(root);
        if (r < 0) {
                fprintf(stderr, "gpunode exporter: cannot open root %s: %s\n", root, strerror(-r));
                return EXIT_USAGE;
        }

        /* SIGTERM and SIGINT are handled in this thread only: blocked while the other threads start (so
         * they inherit the mask and NVML calls are never interrupted), unblocked below. */
        sigset_t sigs;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);
        signal(SIGPIPE, SIG_IGN);

        struct exporter *e = NULL;
        r = exporter_start(&o, &e);
        if (r < 0) {
                fprintf(stderr, "gpunode exporter: cannot start the sampler: %s\n", strerror(-r));
                hostfs_done();
                return EXIT_INTERNAL;
        }
        struct exp_http *h = NULL;
        r = exp_http_start(listen_addr, e, &h);
        if (r < 0) {
                fprintf(stderr, "gpunode exporter: cannot listen on %s: %s\n", listen_addr,
                        r == -EINVAL ? "not HOST:PORT, [V6]:PORT or :PORT" : strerror(-r));
                exporter_stop(e);
                hostfs_done();
                return r == -EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
        }
        fprintf(stderr, "gpunode exporter: listening on %s, sampling every %.3g s\n", listen_addr, o.interval_ms / 1000.0);

        struct sigaction sa = { .sa_handler = on_stop_signal };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
        while (!stop_signal) {
                struct timespec tick = { 0, 250 * 1000000L };
                nanosleep(&tick, NULL); /* a signal cuts it short */
                if (!stop_signal) exporter_watchdog(e);
        }
        int sig = stop_signal;
        fprintf(stderr, "gpunode exporter: %s, stopping\n", strsignal(sig));
        exp_http_stop(h);
        exporter_stop(e);
        hostfs_done();
        return 0;
}
