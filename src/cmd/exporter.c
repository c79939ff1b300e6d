/* exporter.c: `gpunode exporter`: its options, and the daemon configured with the sampler, /metrics and the diagnosis.
 */
#include "cmd/commands.h"
#include "cmd/options.h"
#include "exporter/exporter.h"
#include "daemon/daemon.h"
#include "basic/child.h"
#include "basic/hostfs.h"

#include <getopt.h>
#include <signal.h>

/* getopt_long codes of the exporter's long-only options (the short ones are dcgm-exporter's letters). */
enum {
        OPT_INTERVAL = 0x200,
        OPT_SAMPLE_TIMEOUT,
        OPT_CHECK_INTERVAL,
        OPT_CHECK_TIMEOUT,
        OPT_HOSTNAME_LABEL,
        OPT_NO_XID_EVENTS,
        OPT_NO_KUBERNETES,
        OPT_KUBERNETES_GPU_ID_TYPE,
};

/* Parses dcgm-exporter's collect interval: whole milliseconds, 1..86400000. Returns 0 and *ret, or
 * -EINVAL. */
static int parse_collect_interval(const char *s, unsigned *ret) {
        uint64_t ms;
        if (parse_u64(s, 10, &ms) < 0 || ms < 1 || ms > 86400000) return -EINVAL;
        *ret = (unsigned)ms;
        return 0;
}

/* Parses --kubernetes-gpu-id-type: "uid" or "device-name", as dcgm-exporter. Returns 0 and *ret, or -EINVAL. */
static int parse_gpu_id_type(const char *s, enum exp_gpu_id_type *ret) {
        if (streq(s, "uid"))
                *ret = EXP_GPU_ID_UID;
        else if (streq(s, "device-name"))
                *ret = EXP_GPU_ID_DEVICE_NAME;
        else
                return -EINVAL;
        return 0;
}

/* Reads and parses the collectors CSV file (dcgm-exporter's format) into *ret. Returns 0, or -errno
 * with a malloc'd sentence in *ret_error (the file unreadable or over 1 MiB, a line refused). */
static int read_collectors(const char *file, struct exp_counters *ret, char **ret_error) {
        /* A file the user named: read as it is, not under the root (as dcgm-exporter, in its container). */
        _cleanup_fclose_ FILE *f = fopen(file, "re");
        if (!f) {
                int r = -errno;
                *ret_error = xasprintf("cannot read the collectors file %s: %s", file, strerror(-r));
                return r;
        }
        _cleanup_free_ char *text = xmalloc(1 << 20);
        size_t len = fread(text, 1, 1 << 20, f);
        if (ferror(f) || len == 1 << 20) {
                *ret_error = xasprintf("the collectors file %s is unreadable or larger than 1 MiB", file);
                return -EINVAL;
        }
        return exp_counters_parse(text, len, file, ret, ret_error);
}

/* `gpunode exporter`'s parsed options. */
struct exporter_args {
        struct exp_options o;
        struct shared_options so;
        const char *listen_addr, *collectors;
        unsigned check_interval_ms, check_timeout_ms; /* the diagnosis loop; interval 0: none */
        bool no_hostname;
};

/* Parses `gpunode exporter`'s argv (argv[0] "exporter") into *ret. dcgm-exporter's flags and
 * environment are accepted too; a flag wins over its variable, a variable over the default. Returns 0,
 * or EXIT_USAGE having said why on stderr. */
static int parse_argv_exporter(int argc, char **argv, struct exporter_args *ret) {
        static const struct option longopts[] = {
                { "listen", required_argument, NULL, 'a' },
                { "address", required_argument, NULL, 'a' },
                { "interval", required_argument, NULL, OPT_INTERVAL },
                { "collect-interval", required_argument, NULL, 'c' },
                { "collectors", required_argument, NULL, 'f' },
                { "kubernetes", optional_argument, NULL, 'k' },
                { "no-kubernetes", no_argument, NULL, OPT_NO_KUBERNETES },
                { "kubernetes-gpu-id-type", required_argument, NULL, OPT_KUBERNETES_GPU_ID_TYPE },
                { "sample-timeout", required_argument, NULL, OPT_SAMPLE_TIMEOUT },
                { "check-interval", required_argument, NULL, OPT_CHECK_INTERVAL },
                OPTION_ROOT,
                OPTION_NVML_LIBRARY,
                { "no-hostname", optional_argument, NULL, 'n' },
                { "hostname-label", required_argument, NULL, OPT_HOSTNAME_LABEL },
                { "no-xid-events", no_argument, NULL, OPT_NO_XID_EVENTS },
                { "check-timeout", required_argument, NULL, OPT_CHECK_TIMEOUT },
                OPTION_KUBECONFIG,
                { 0 },
        };
        /* Every address, as dcgm-exporter's default: Prometheus scrapes the node from other hosts. A
         * narrower --listen (the node's address, 127.0.0.1 behind a proxy) is the operator's choice. */
        const char *listen_addr = ":9400", *collectors = NULL;
        struct shared_options so;
        shared_options_init(&so);
        struct exp_options o = { .interval_ms = 10000,
                                 .sample_timeout_ms = 10000,
                                 .hostname_label = "Hostname",
                                 .xid_events = true,
                                 .kubernetes = true };
        unsigned check_interval_ms = 60000, check_timeout_ms = 60000;
        bool no_hostname = false;
        bool listen_given = false, interval_given = false, kubernetes_given = false, id_type_given = false,
             hostname_given = false;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "a:c:f:kn", longopts, NULL)) != -1) {
                unsigned *dst = NULL;
                uint64_t ms;
                bool zero = false;
                switch (c) {
                case 'a':
                        listen_addr = optarg;
                        listen_given = true;
                        break;
                case OPT_INTERVAL:
                        dst = &o.interval_ms;
                        interval_given = true;
                        break;
                case 'c':
                        if (parse_collect_interval(optarg, &o.interval_ms) < 0) {
                                fprintf_escaped(stderr,
                                                "gpunode exporter: --collect-interval: '%s' is not 1..86400000 "
                                                "milliseconds (dcgm-exporter's unit; --interval takes 10s, 500ms)\n",
                                                optarg);
                                return EXIT_USAGE;
                        }
                        interval_given = true;
                        break;
                case 'f': collectors = optarg; break;
                case 'k':
                        if (optarg && parse_go_bool(optarg, &o.kubernetes) < 0) {
                                fprintf_escaped(stderr, "gpunode exporter: --kubernetes: '%s' is not true or false\n",
                                                optarg);
                                return EXIT_USAGE;
                        }
                        if (!optarg) o.kubernetes = true;
                        kubernetes_given = true;
                        break;
                case OPT_NO_KUBERNETES:
                        o.kubernetes = false;
                        kubernetes_given = true;
                        break;
                case OPT_KUBERNETES_GPU_ID_TYPE:
                        if (parse_gpu_id_type(optarg, &o.kubernetes_gpu_id_type) < 0) {
                                fprintf_escaped(stderr,
                                                "gpunode exporter: --kubernetes-gpu-id-type must be uid or "
                                                "device-name, not '%s'\n",
                                                optarg);
                                return EXIT_USAGE;
                        }
                        id_type_given = true;
                        break;
                case OPT_SAMPLE_TIMEOUT: dst = &o.sample_timeout_ms; break;
                case OPT_CHECK_INTERVAL:
                        dst = &check_interval_ms;
                        zero = true;
                        break;
                case 'n':
                        if (optarg && parse_go_bool(optarg, &no_hostname) < 0) {
                                fprintf_escaped(stderr, "gpunode exporter: --no-hostname: '%s' is not true or false\n",
                                                optarg);
                                return EXIT_USAGE;
                        }
                        if (!optarg) no_hostname = true;
                        hostname_given = true;
                        break;
                case OPT_HOSTNAME_LABEL:
                        if (!streq(optarg, "Hostname") && !streq(optarg, "hostname")) {
                                fprintf(stderr, "gpunode exporter: --hostname-label must be Hostname or hostname\n");
                                return EXIT_USAGE;
                        }
                        o.hostname_label = optarg;
                        break;
                case OPT_NO_XID_EVENTS: o.xid_events = false; break;
                case OPT_CHECK_TIMEOUT: dst = &check_timeout_ms; break;
                default: {
                        _cleanup_free_ char *error = NULL;
                        int k = shared_option(c, optarg, &so, &error);
                        if (k < 0) fprintf_escaped(stderr, "gpunode exporter: %s\n", error);
                        if (k <= 0) return EXIT_USAGE;
                        break;
                }
                }
                if (dst && parse_duration_ms(optarg, zero ? 0 : 1, 86400000, &ms) < 0) {
                        fprintf_escaped(stderr,
                                        "gpunode exporter: --%s: '%s' is not a duration (10, 1.5s, 500ms, 1m30s)\n",
                                        c == OPT_INTERVAL         ? "interval"
                                        : c == OPT_SAMPLE_TIMEOUT ? "sample-timeout"
                                        : c == OPT_CHECK_TIMEOUT  ? "check-timeout"
                                                                  : "check-interval",
                                        optarg);
                        return EXIT_USAGE;
                }
                if (dst) *dst = (unsigned)ms;
        }
        if (optind < argc) {
                fprintf_escaped(stderr, "gpunode exporter: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        /* dcgm-exporter's environment, where no flag said otherwise (its other DCGM_EXPORTER_* are ignored). */
        const char *v;
        if (!listen_given && (v = getenv("DCGM_EXPORTER_LISTEN")) && *v) listen_addr = v;
        if (!interval_given && (v = getenv("DCGM_EXPORTER_INTERVAL")) && *v &&
            parse_collect_interval(v, &o.interval_ms) < 0) {
                fprintf_escaped(stderr,
                                "gpunode exporter: DCGM_EXPORTER_INTERVAL: '%s' is not 1..86400000 milliseconds\n", v);
                return EXIT_USAGE;
        }
        if (!collectors && (v = getenv("DCGM_EXPORTER_COLLECTORS")) && *v) collectors = v;
        if (!kubernetes_given && (v = getenv("DCGM_EXPORTER_KUBERNETES")) && *v &&
            parse_go_bool(v, &o.kubernetes) < 0) {
                fprintf_escaped(stderr, "gpunode exporter: DCGM_EXPORTER_KUBERNETES: '%s' is not true or false\n", v);
                return EXIT_USAGE;
        }
        if (!id_type_given && (v = getenv("DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE")) && *v &&
            parse_gpu_id_type(v, &o.kubernetes_gpu_id_type) < 0) {
                fprintf_escaped(
                        stderr,
                        "gpunode exporter: DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE must be uid or device-name, not '%s'\n",
                        v);
                return EXIT_USAGE;
        }
        if (!hostname_given && (v = getenv("DCGM_EXPORTER_NO_HOSTNAME")) && *v && parse_go_bool(v, &no_hostname) < 0) {
                fprintf_escaped(stderr, "gpunode exporter: DCGM_EXPORTER_NO_HOSTNAME: '%s' is not true or false\n", v);
                return EXIT_USAGE;
        }
        if (collectors) {
                _cleanup_free_ char *error = NULL;
                if (read_collectors(collectors, &o.counters, &error) < 0) {
                        fprintf_escaped(stderr, "gpunode exporter: %s\n", error);
                        return EXIT_USAGE;
                }
        }
        *ret = (struct exporter_args){ .o = o,
                                       .so = so,
                                       .listen_addr = listen_addr,
                                       .collectors = collectors,
                                       .check_interval_ms = check_interval_ms,
                                       .check_timeout_ms = check_timeout_ms,
                                       .no_hostname = no_hostname };
        return 0;
}

/* Runs the exporter: the sampler, its routes (/metrics, /health, /) on the daemon's HTTP server, the
 * daemon's Xid watch feeding DCGM_FI_DEV_XID_ERRORS, and its diagnosis loop feeding the gpunode_*
 * series, until SIGTERM, SIGINT, SIGHUP or SIGQUIT. Returns the exit code. */
static int run_exporter(struct exporter_args *a) {
        struct exp_options *o = &a->o;
        o->root = a->so.root;
        o->nvml_library = a->so.probe.nvml_library;
        int r = hostfs_init(a->so.root);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode exporter: cannot open root %s: %s\n", a->so.root, strerror(-r));
                return EXIT_USAGE;
        }
        _cleanup_free_ char *host = a->no_hostname ? NULL : node_name_resolve(NULL);
        o->hostname = host;
        sigset_t sigs;
        daemon_block_signals(&sigs);
        struct exporter *e = NULL;
        r = exporter_start(o, &e);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode exporter: cannot start the sampler: %s\n", strerror(-r));
                hostfs_done();
                return EXIT_INTERNAL;
        }
        char self[4096];
        child_self_path(self, sizeof self);
        struct daemon *d = daemon_new();
        exporter_join_daemon(e, d);
        struct daemon_options dopt = {
                .who = "exporter",
                .listen_addr = a->listen_addr,
                .xid_events = o->xid_events,
                .nvml_library = o->nvml_library,
                .diagnose = a->check_interval_ms > 0,
                .diagnosis = { .self = self,
                               .root = a->so.root,
                               .nvml_library = o->nvml_library,
                               .kubeconfig = a->so.kube.kubeconfig,
                               .interval_ms = a->check_interval_ms,
                               .timeout_ms = a->check_timeout_ms },
                .self = self,
                .loop = { .drop_capabilities = true,
                          .keep_syslog = a->check_interval_ms > 0,
                          },
        };
        exporter_loop_hooks(e, &dopt.loop);
        _cleanup_free_ char *error = NULL;
        r = daemon_start(d, &dopt, &error);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode exporter: %s\n", error);
                daemon_free(d);
                exporter_stop(e);
                hostfs_done();
                return r == -EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
        }
        fprintf_escaped(stderr, "gpunode exporter: listening on %s, sampling every %.3g s\n", a->listen_addr,
                        o->interval_ms / 1000.0);
        if (a->collectors) {
                unsigned n = 0;
                for (unsigned m = 0; m < EXP_N_METRICS; m++) n += o->counters.enabled[m];
                fprintf_escaped(stderr, "gpunode exporter: serving the %u counter(s) %s names\n", n, a->collectors);
        }
        int sig = daemon_run(d, &sigs);
        fprintf_escaped(stderr, "gpunode exporter: %s, stopping\n", strsignal(sig));
        daemon_free(d);
        exporter_stop(e);
        hostfs_done();
        return 0;
}

/* Runs `gpunode exporter` (argv[0] "exporter"). Returns the exit code. */
static int cmd_exporter(int argc, char **argv) {
        struct exporter_args a;
        int r = parse_argv_exporter(argc, argv, &a);
        return r ? r : run_exporter(&a);
}

/* `gpunode exporter`: its entry in the command table, with the help text generated from it. */
const struct command command_exporter = {
        .name = "exporter",
        .run = cmd_exporter,
        .summary = "serve DCGM-exporter-compatible GPU metrics and the layer diagnosis over HTTP",
        .usage = "[OPTIONS]",
        .options =
                "  -a, --listen, --address ADDR  HOST:PORT, [V6]:PORT or :PORT (env DCGM_EXPORTER_LISTEN; default\n"
                "                         :9400, every address, as dcgm-exporter: Prometheus scrapes it from other "
                "hosts)\n"
                "  --interval DURATION    how often NVML is sampled (default 10s; 500ms, 1.5s, 30, 1m30s accepted)\n"
                "  -c, --collect-interval MS  the same in milliseconds, as dcgm-exporter (env DCGM_EXPORTER_INTERVAL)\n"
                "  -f, --collectors FILE  serve only the counters this dcgm-exporter CSV names, with its help texts\n"
                "                         (env DCGM_EXPORTER_COLLECTORS; default: every counter; "
                "etc/default-counters.csv)\n"
                "  -k, --kubernetes[=BOOL], --no-kubernetes  label the series of every GPU and MIG instance a\n"
                "                         container holds with container, namespace and pod, from the kubelet's\n"
                "                         pod-resources List (ROOT/var/lib/kubelet/pod-resources/kubelet.sock, once "
                "per\n"
                "                         sample; env DCGM_EXPORTER_KUBERNETES; default true); when it fails the "
                "series\n"
                "                         go unlabelled and /health says why\n"
                "  --kubernetes-gpu-id-type T  uid or device-name (env DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE; default "
                "uid)\n"
                "  --sample-timeout DUR   an NVML call running longer is stuck: its GPU is skipped (default 10s)\n"
                "  --check-interval DUR   how often the layer diagnosis runs; 0 disables it (default 60s)\n"
                "  --check-timeout DUR    a diagnosis (a `gpunode check` child) running longer is killed (default "
                "60s)\n"
                "  --kubeconfig FILE      passed to the diagnosis (default: in-cluster, $KUBECONFIG, ~/.kube/config)\n"
                "  --root DIR             host root for the diagnosis (env GPUNODE_ROOT, default /)\n"
                "  --nvml-library PATH    load this file instead of libnvidia-ml.so.1\n"
                "  -n, --no-hostname[=BOOL]  drop the Hostname label ($NODE_NAME, else the host name;\n"
                "                         env DCGM_EXPORTER_NO_HOSTNAME)\n"
                "  --hostname-label NAME  Hostname (dcgm-exporter up to 4.8) or hostname (later releases)\n"
                "  --no-xid-events        do not listen for Xid events (DCGM_FI_DEV_XID_ERRORS is then left out)\n"
                "a flag wins over its environment variable; other DCGM_EXPORTER_* variables are ignored;\n"
                "serves /metrics, /health (503 with the reason when stale or NVML fails) and an index page;\n"
                "stops cleanly on SIGTERM, SIGINT, SIGHUP or SIGQUIT\n",
};
