/* device_plugin.c: `gpunode device-plugin`: the kubelet device plugin API v1beta1 with gpunode's GPU health. */
#include "cmd/commands.h"
#include "cmd/options.h"
#include "basic/hostfs.h"
#include "daemon/daemon.h"
#include "device_plugin/dp_plugin.h"

#include <fcntl.h>
#include <signal.h>

enum {
        OPT_CONFIG_FILE = 0x200,
        OPT_MIG_STRATEGY,
        OPT_LIST_STRATEGY,
        OPT_ID_STRATEGY,
        OPT_FAIL_ON_INIT_ERROR,
        OPT_HEALTH_INTERVAL,
        OPT_REGISTER_ATTEMPTS,
        OPT_REGISTER_TIMEOUT,
        OPT_KUBELET_DIR,
        OPT_PASS_DEVICE_SPECS,
};

static int stop_pipe[2] = { -1, -1 };

/* A stop signal (daemon_stop_signals): wakes the plugin's loop. */
static void on_signal(int sig) {
        int e = errno;
        char c = (char)sig;
        (void)!write(stop_pipe[1], &c, 1);
        errno = e;
}

/* Prints one log line with the time. */
static void log_stderr(void *userdata, const char *line) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        struct tm tm;
        gmtime_r(&t.tv_sec, &tm);
        fprintf_escaped(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ gpunode device-plugin: %s\n", tm.tm_year + 1900,
                        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, t.tv_nsec / 1000000, line);
}

/* Returns getenv(name) when set and not empty, else NULL. */
static const char *env(const char *name) {
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

/* Runs `gpunode device-plugin` (argv[0] "device-plugin"). Returns the exit code. */
static int cmd_device_plugin(int argc, char **argv) {
        static const struct option longopts[] = {
                { "config-file", required_argument, NULL, OPT_CONFIG_FILE },
                { "mig-strategy", required_argument, NULL, OPT_MIG_STRATEGY },
                { "device-list-strategy", required_argument, NULL, OPT_LIST_STRATEGY },
                { "device-id-strategy", required_argument, NULL, OPT_ID_STRATEGY },
                { "fail-on-init-error", required_argument, NULL, OPT_FAIL_ON_INIT_ERROR },
                { "health-interval", required_argument, NULL, OPT_HEALTH_INTERVAL },
                { "register-attempts", required_argument, NULL, OPT_REGISTER_ATTEMPTS },
                { "register-timeout", required_argument, NULL, OPT_REGISTER_TIMEOUT },
                { "kubelet-dir", required_argument, NULL, OPT_KUBELET_DIR },
                { "pass-device-specs", required_argument, NULL, OPT_PASS_DEVICE_SPECS },
                OPTION_ROOT,
                OPTION_NVML_LIBRARY,
                OPTION_NVML_TIMEOUT,
                { 0 },
        };
        struct shared_options so;
        shared_options_init(&so);
        /* NVIDIA's plugin's variables, so that its DaemonSet's env works unchanged; flags win. */
        struct dp_options o = { .config_file = env("CONFIG_FILE"),
                                .mig_strategy = env("MIG_STRATEGY"),
                                .list_strategy = env("DEVICE_LIST_STRATEGY"),
                                .id_strategy = env("DEVICE_ID_STRATEGY"),
                                .fail_on_init_error = env("FAIL_ON_INIT_ERROR"),
                                .pass_device_specs = env("PASS_DEVICE_SPECS"),
                                .log = log_stderr };
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                uint64_t v;
                switch (c) {
                case OPT_CONFIG_FILE: o.config_file = optarg; break;
                case OPT_MIG_STRATEGY: o.mig_strategy = optarg; break;
                case OPT_LIST_STRATEGY: o.list_strategy = optarg; break;
                case OPT_ID_STRATEGY: o.id_strategy = optarg; break;
                case OPT_FAIL_ON_INIT_ERROR: o.fail_on_init_error = optarg; break;
                case OPT_KUBELET_DIR: o.kubelet_dir = optarg; break;
                case OPT_PASS_DEVICE_SPECS: o.pass_device_specs = optarg; break;
                case OPT_HEALTH_INTERVAL:
                case OPT_REGISTER_TIMEOUT:
                        if (parse_duration_ms(optarg, 10, 600000, &v) < 0) {
                                fprintf_escaped(
                                        stderr, "gpunode device-plugin: --%s: '%s' is not a duration of 10ms..10m\n",
                                        c == OPT_HEALTH_INTERVAL ? "health-interval" : "register-timeout", optarg);
                                return EXIT_USAGE;
                        }
                        if (c == OPT_HEALTH_INTERVAL)
                                o.health_interval_ms = (unsigned)v;
                        else
                                o.register_timeout_ms = (unsigned)v;
                        break;
                case OPT_REGISTER_ATTEMPTS:
                        if (parse_u64(optarg, 10, &v) < 0 || v < 1 || v > 1000) {
                                fprintf_escaped(stderr,
                                                "gpunode device-plugin: --register-attempts: '%s' is not 1..1000\n",
                                                optarg);
                                return EXIT_USAGE;
                        }
                        o.register_attempts = (unsigned)v;
                        break;
                default: {
                        _cleanup_free_ char *error = NULL;
                        int k = shared_option(c, optarg, &so, &error);
                        if (k < 0) fprintf_escaped(stderr, "gpunode device-plugin: %s\n", error);
                        if (k <= 0) return EXIT_USAGE;
                        break;
                }
                }
        }
        if (optind < argc) {
                fprintf_escaped(stderr, "gpunode device-plugin: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        if (o.kubelet_dir && o.kubelet_dir[0] != '/') {
                fprintf_escaped(stderr, "gpunode device-plugin: --kubelet-dir: '%s' is not an absolute host path\n",
                                o.kubelet_dir);
                return EXIT_USAGE;
        }
        int r = hostfs_init(so.root);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode device-plugin: cannot open root %s: %s\n", so.root, strerror(-r));
                return EXIT_USAGE;
        }
        o.nvml_library = so.probe.nvml_library;
        o.nvml_timeout_ms = so.probe.nvml_timeout_ms;
        if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
                fprintf_escaped(stderr, "gpunode device-plugin: cannot make a pipe: %m\n");
                hostfs_done();
                return EXIT_INTERNAL;
        }
        struct sigaction sa = { .sa_handler = on_signal };
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < DAEMON_N_STOP_SIGNALS; i++) sigaction(daemon_stop_signals[i], &sa, NULL);
        signal(SIGPIPE, SIG_IGN);
        o.stop_fd = stop_pipe[0];
        /* The daemon's Xid watch (the one NVML event set) feeds the GPUs' health; the plugin's gRPC loop
         * runs on this thread, stopped through the signal pipe. */
        _cleanup_free_ char *error = NULL;
        struct daemon *d = daemon_new();
        const struct daemon_options dopt = { .who = "device-plugin",
                                             .xid_events = true,
                                             .nvml_library = o.nvml_library };
        r = daemon_start(d, &dopt, &error);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode device-plugin: %s; GPUs are not marked Unhealthy on Xid errors\n",
                                error);
                free(error);
                error = NULL;
        }
        o.xid = daemon_xid_watch(d);
        r = dp_run(&o, &error);
        if (r < 0) fprintf_escaped(stderr, "gpunode device-plugin: %s\n", error ? error : strerror(-r));
        daemon_free(d);
        close(stop_pipe[0]);
        close(stop_pipe[1]);
        hostfs_done();
        return r < 0 ? (r == -EINVAL || r == -ENOENT || r == -EFBIG ? EXIT_USAGE : EXIT_INTERNAL) : 0;
}

/* `gpunode device-plugin`: its entry in the command table, with the help text generated from it. */
const struct command command_device_plugin = {
        .name = "device-plugin",
        .run = cmd_device_plugin,
        .summary = "the kubelet device plugin for nvidia.com/gpu (v1beta1), with gpunode's GPU health",
        .usage = "[OPTIONS]",
        .options =
                "  --config-file FILE          NVIDIA's device plugin config (version v1: flags, sharing.timeSlicing)\n"
                "                              (env CONFIG_FILE)\n"
                "  --mig-strategy S            none, single or mixed (env MIG_STRATEGY; default: the file's, else "
                "none)\n"
                "  --device-list-strategy S    envvar, volume-mounts, cdi-annotations, cdi-cri, or a comma list\n"
                "                              (env DEVICE_LIST_STRATEGY; default: cdi-cri when nvidia CDI specs "
                "exist, else envvar)\n"
                "  --device-id-strategy S      uuid or index: what NVIDIA_VISIBLE_DEVICES names (env "
                "DEVICE_ID_STRATEGY)\n"
                "  --fail-on-init-error B      accepted for NVIDIA's flag; without NVML the devices are advertised "
                "Unhealthy\n"
                "  --pass-device-specs B       Allocate names the device nodes too: /dev/nvidia<minor>, MIG "
                "capability\n"
                "                              nodes, /dev/nvidiactl, -uvm, -uvm-tools, -modeset (env "
                "PASS_DEVICE_SPECS)\n"
                "  --health-interval DUR       how often health is polled and Xid events are waited for (default "
                "250ms)\n"
                "  --register-attempts N       Register tries before waiting for the kubelet to restart (default 5)\n"
                "  --register-timeout DUR      each Register try (default 5s)\n"
                "  --kubelet-dir PATH          the kubelet's device plugin folder, a host path (default\n"
                "                              /var/lib/kubelet/device-plugins)\n"
                "  --root DIR                  host root (env GPUNODE_ROOT, default /; /host in the DaemonSet)\n"
                "  --nvml-library PATH         load this file instead of libnvidia-ml.so.1\n"
                "  --nvml-timeout DUR          the GPU enumeration's NVML bound (default 10s)\n"
                "health: a GPU is Unhealthy while NVML says it is lost, its row remapping failed or it needs a reset,\n"
                "after a critical Xid (not 13, 31, 43, 45, 68, 109; DP_DISABLE_HEALTHCHECKS, DP_ENABLE_HEALTHCHECKS "
                "as\n"
                "NVIDIA's plugin), and every GPU while the driver is gone. Stops cleanly (its socket removed) on "
                "SIGTERM, SIGINT, SIGHUP or SIGQUIT.\n",
};
