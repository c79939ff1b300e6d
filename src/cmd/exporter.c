/* exporter.c: `gpunode exporter`: parse options, start the sampler and HTTP server, wait for SIGTERM. */
#include "cmd/commands.h"
#include "cmd/options.h"
#include "exporter/exporter.h"
#include "basic/caps.h"
#include "basic/hostfs.h"

#include <getopt.h>
#include <linux/capability.h>
#include <signal.h>

static volatile sig_atomic_t stop_signal;

/* Records the stop signal; the main loop sees it within its tick. Returns nothing. */
static void on_stop_signal(int sig) { stop_signal = sig; }

/* Returns true once the sampler has tried NVML: a sample was published, complete (NVML up or
 * failing) or partial (NVML up, a GPU stuck). */
static bool nvml_tried(struct exporter *e) {
        struct exp_page *p = exporter_page(e);
        bool tried = p->have_sample || p->nvml_up;
        exp_page_unref(p);
        return tried;
}

/*
 * Drops the privileges the running exporter no longer needs, in every thread, once NVML is open (its
 * driver client is set up with the privileges of the moment) and the socket bound. The exporter
 * itself needs no capability after that: it samples through the open NVML (device nodes 0666;
 * root-owned /dev/nvidia-caps are read as their owner) and serves an open socket. It keeps only
 * CAP_SYSLOG, and only when the diagnosis runs: its `gpunode check` children read /dev/kmsg, which
 * kernel.dmesg_restrict=1 reserves to CAP_SYSLOG; every other file they read is world-readable or
 * owned by root (uid 0 stays). An execve as root gets the bounding set, so that and no_new_privs are
 * what hold the children to it. Not root: only no_new_privs is set. Returns nothing; a failure is
 * reported and the exporter serves on.
 */
static void drop_privileges(bool diagnosis) {
        uint64_t keep = diagnosis ? CAP_BIT(CAP_SYSLOG) : 0;
        unsigned pending = 0;
        int r = caps_restrict_process(keep, 2000, &pending);
        if (r == -ETIMEDOUT)
                fprintf(stderr, "gpunode exporter: %u thread(s) busy in a call keep their capabilities until it returns\n",
                        pending);
        else if (r < 0)
                fprintf(stderr, "gpunode exporter: cannot drop capabilities: %s\n", strerror(-r));
        else
                fprintf(stderr, "gpunode exporter: capabilities dropped (kept: %s), no_new_privs set\n",
                        diagnosis ? "cap_syslog, for the diagnosis's /dev/kmsg" : "none");
}

/* Runs `gpunode exporter` (argv[0] "exporter"). Returns the exit code. */
static int cmd_exporter(int argc, char **argv) {
        static const struct option longopts[] = {
                {"listen", required_argument, NULL, 'L'},
                {"interval", required_argument, NULL, 'i'},
                {"sample-timeout", required_argument, NULL, 'T'},
                {"check-interval", required_argument, NULL, 'c'},
                OPTION_ROOT,
                OPTION_NVML_LIBRARY,
                {"no-hostname", no_argument, NULL, 'H'},
                {"hostname-label", required_argument, NULL, 'N'},
                {"no-xid-events", no_argument, NULL, 'X'},
                {"check-timeout", required_argument, NULL, 't'},
                {"kubernetes", no_argument, NULL, 'K'},
                {"no-kubernetes", no_argument, NULL, 'k'},
                OPTION_KUBECONFIG,
                {0},
        };
        /* Every address, as dcgm-exporter's default: Prometheus scrapes the node from other hosts. A
         * narrower --listen (the node's address, 127.0.0.1 behind a proxy) is the operator's choice. */
        const char *listen_addr = ":9400";
        struct shared_options so;
        shared_options_init(&so);
        struct exp_options o = { .interval_ms = 10000, .sample_timeout_ms = 10000, .check_interval_ms = 60000,
                                 .check_timeout_ms = 60000,
                                 .hostname_label = "Hostname", .xid_events = true, .kubernetes = true };
        bool no_hostname = false;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                unsigned *dst = NULL;
                uint64_t ms;
                bool zero = false;
                switch (c) {
                case 'L': listen_addr = optarg; break;
                case 'i': dst = &o.interval_ms; break;
                case 'T': dst = &o.sample_timeout_ms; break;
                case 'c': dst = &o.check_interval_ms; zero = true; break;
                case 'H': no_hostname = true; break;
                case 'N':
                        if (!streq(optarg, "Hostname") && !streq(optarg, "hostname")) {
                                fprintf(stderr, "gpunode exporter: --hostname-label must be Hostname or hostname\n");
                                return EXIT_USAGE;
                        }
                        o.hostname_label = optarg;
                        break;
                case 'X': o.xid_events = false; break;
                case 'K': o.kubernetes = true; break;
                case 'k': o.kubernetes = false; break;
                case 't': dst = &o.check_timeout_ms; break;
                default: {
                        _cleanup_free_ char *error = NULL;
                        int k = shared_option(c, optarg, &so, &error);
                        if (k < 0) fprintf_escaped(stderr, "gpunode exporter: %s\n", error);
                        if (k <= 0) return EXIT_USAGE;
                        break;
                }
                }
                if (dst && parse_duration_ms(optarg, zero ? 0 : 1, 86400000, &ms) < 0) {
                        fprintf_escaped(stderr, "gpunode exporter: --%s: '%s' is not a duration (10, 1.5s, 500ms)\n",
                                        c == 'i' ? "interval" : c == 'T' ? "sample-timeout" : c == 't' ? "check-timeout" : "check-interval",
                                        optarg);
                        return EXIT_USAGE;
                }
                if (dst) *dst = (unsigned)ms;
        }
        if (optind < argc) {
                fprintf_escaped(stderr, "gpunode exporter: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        const char *root = so.root;
        o.root = root;
        o.nvml_library = so.probe.nvml_library;
        o.kubeconfig = so.kube.kubeconfig;
        int r = hostfs_init(root);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode exporter: cannot open root %s: %s\n", root, strerror(-r));
                return EXIT_USAGE;
        }
        _cleanup_free_ char *host = no_hostname ? NULL : node_name_resolve(NULL);
        o.hostname = host;

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
                fprintf_escaped(stderr, "gpunode exporter: cannot start the sampler: %s\n", strerror(-r));
                hostfs_done();
                return EXIT_INTERNAL;
        }
        struct exp_http *h = NULL;
        r = exp_http_start(listen_addr, e, &h);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode exporter: cannot listen on %s: %s\n", listen_addr,
                                r == -EINVAL ? "not HOST:PORT, [V6]:PORT or :PORT" : strerror(-r));
                exporter_stop(e);
                hostfs_done();
                return r == -EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
        }
        fprintf_escaped(stderr, "gpunode exporter: listening on %s, sampling every %.3g s\n", listen_addr, o.interval_ms / 1000.0);

        struct sigaction sa = { .sa_handler = on_stop_signal };
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        pthread_sigmask(SIG_UNBLOCK, &sigs, NULL);
        /* The socket is bound; privileges go once NVML has been tried, or a sample timeout after the
         * start when its first call hangs. */
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
                        if (nvml_tried(e) || exp_seconds_between(&started, &now) * 1000.0 >= o.sample_timeout_ms) {
                                drop_privileges(o.check_interval_ms > 0);
                                dropped = true;
                        }
                }
        }
        int sig = stop_signal;
        fprintf_escaped(stderr, "gpunode exporter: %s, stopping\n", strsignal(sig));
        exp_http_stop(h);
        exporter_stop(e);
        hostfs_done();
        return 0;
}

/* `gpunode exporter`: its entry in the command table, with the help text generated from it. */
const struct command command_exporter = {
        .name = "exporter",
        .run = cmd_exporter,
        .summary = "serve DCGM-exporter-compatible GPU metrics and the layer diagnosis over HTTP",
        .usage = "[OPTIONS]",
        .options =
                "  --listen ADDR          HOST:PORT, [V6]:PORT or :PORT (every address; default :9400, as\n"
                "                         dcgm-exporter: Prometheus scrapes it from other hosts)\n"
                "  --interval DURATION    how often NVML is sampled (default 10s; 500ms, 1.5s, 30 accepted)\n"
                "  --sample-timeout DUR   an NVML call running longer is stuck: its GPU is skipped (default 10s)\n"
                "  --check-interval DUR   how often the layer diagnosis runs; 0 disables it (default 60s)\n"
                "  --check-timeout DUR    a diagnosis (a `gpunode check` child) running longer is killed (default 60s)\n"
                "  --kubeconfig FILE      passed to the diagnosis (default: in-cluster, $KUBECONFIG, ~/.kube/config)\n"
                "  --root DIR             host root for the diagnosis (env GPUNODE_ROOT, default /)\n"
                "  --nvml-library PATH    load this file instead of libnvidia-ml.so.1\n"
                "  --no-hostname          drop the Hostname label ($NODE_NAME, else the host name)\n"
                "  --hostname-label NAME  Hostname (dcgm-exporter up to 4.8) or hostname (later releases)\n"
                "  --no-xid-events        do not listen for Xid events (DCGM_FI_DEV_XID_ERRORS is then left out)\n"
                "  --kubernetes           (default) label the series of every GPU and MIG instance a container\n"
                "                         holds with container, namespace and pod, as dcgm-exporter does, from the\n"
                "                         kubelet's pod-resources List (ROOT/var/lib/kubelet/pod-resources/kubelet.sock,\n"
                "                         once per sample); when it fails the series go unlabelled and /health says why\n"
                "  --no-kubernetes        no pod labels; the kubelet is never asked\n"
                "serves /metrics, /health (503 with the reason when stale or NVML fails) and an index page;\n"
                "stops cleanly on SIGTERM or SIGINT\n",
};
