/* agent.c: `gpunode agent`: the DaemonSet process: its options, and the daemon configured with the exporter, the
 * diagnosis, node conditions, labels and, opted in, the device plugin. */
#include "cmd/commands.h"
#include "agent/agent.h"
#include "basic/child.h"
#include "basic/hostfs.h"
#include "cmd/options.h"
#include "daemon/daemon.h"
#include "device_plugin/dp_plugin.h"
#include "exporter/exporter.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>

enum {
        OPT_INTERVAL = 0x200,
        OPT_CHECK_INTERVAL,
        OPT_CHECK_TIMEOUT,
        OPT_HEARTBEAT,
        OPT_EVENT_HOLD_DOWN,
        OPT_TAINT,
        OPT_TAINT_MAX_SHARE,
        OPT_NO_LABELS,
        OPT_NO_CONDITIONS,
        OPT_NO_XID_EVENTS,
        OPT_NO_KUBERNETES,
        OPT_LABELS_OUTPUT,
        OPT_BACKOFF_MAX,
        OPT_DEVICE_PLUGIN,
        OPT_DEVICE_PLUGIN_CONFIG,
};

/* The device plugin inside the agent (--device-plugin): its thread, stopped through a pipe. */
struct agent_dp {
        struct dp_options o;
        int stop[2];
        pthread_t thread;
        struct agent *agent;
        int r;
};

/* The plugin's log lines, as the agent's. */
static void dp_log(void *userdata, const char *line) {
        fprintf_escaped(stderr, "gpunode agent: device-plugin: %s\n", line);
}

/* A GPU's health changed: an Event on the node (and a diagnosis at once). */
static void dp_health_event(void *userdata, const char *uuid, bool healthy, const char *reason) {
        struct agent_dp *d = userdata;
        if (!d->agent) return;
        _cleanup_free_ char *msg = healthy ? xasprintf("%s is Healthy again: advertised to the kubelet", uuid)
                                           : xasprintf("%s is Unhealthy, withdrawn from the kubelet: %s", uuid, reason);
        agent_post_event(d->agent, !healthy, healthy ? "GPUHealthy" : "GPUUnhealthy", msg);
}

/* The plugin's thread. Returns NULL; the plugin's answer in r. */
static void *dp_main(void *arg) {
        struct agent_dp *d = arg;
        _cleanup_free_ char *error = NULL;
        d->r = dp_run(&d->o, &error);
        if (d->r < 0)
                fprintf_escaped(stderr, "gpunode agent: the device plugin stopped: %s\n",
                                error ? error : strerror(-d->r));
        return NULL;
}

/* `gpunode agent`'s parsed options. */
struct agent_args {
        struct agent_options ao;
        struct shared_options so;
        const char *listen_addr, *dp_config, *labels_output;
        unsigned interval_ms, check_interval_ms, check_timeout_ms;
        bool xid_events, kubernetes, device_plugin, labels;
};

/* Parses `gpunode agent`'s argv (argv[0] "agent") into *ret. Returns 0, or EXIT_USAGE having said why
 * on stderr. */
static int parse_argv_agent(int argc, char **argv, struct agent_args *ret) {
        static const struct option longopts[] = {
                { "listen", required_argument, NULL, 'a' },
                { "interval", required_argument, NULL, OPT_INTERVAL },
                { "check-interval", required_argument, NULL, OPT_CHECK_INTERVAL },
                { "check-timeout", required_argument, NULL, OPT_CHECK_TIMEOUT },
                { "heartbeat", required_argument, NULL, OPT_HEARTBEAT },
                { "event-hold-down", required_argument, NULL, OPT_EVENT_HOLD_DOWN },
                { "api-backoff-max", required_argument, NULL, OPT_BACKOFF_MAX },
                { "taint", no_argument, NULL, OPT_TAINT },
                { "taint-max-share", required_argument, NULL, OPT_TAINT_MAX_SHARE },
                { "no-labels", no_argument, NULL, OPT_NO_LABELS },
                { "labels-output", required_argument, NULL, OPT_LABELS_OUTPUT },
                { "no-conditions", no_argument, NULL, OPT_NO_CONDITIONS },
                { "no-xid-events", no_argument, NULL, OPT_NO_XID_EVENTS },
                { "no-kubernetes", no_argument, NULL, OPT_NO_KUBERNETES },
                { "device-plugin", no_argument, NULL, OPT_DEVICE_PLUGIN },
                { "device-plugin-config", required_argument, NULL, OPT_DEVICE_PLUGIN_CONFIG },
                OPTION_ROOT,
                OPTION_KMSG,
                OPTION_EXPECT_GPUS,
                OPTION_NVML_LIBRARY,
                OPTION_NODE,
                OPTIONS_KUBE,
                { 0 },
        };
        const char *listen_addr = ":9400";
        struct shared_options so;
        shared_options_init(&so);
        struct agent_options ao = { .heartbeat_s = 300,
                                    .event_hold_down_s = 300,
                                    .backoff_max_s = 300,
                                    .conditions = true,
                                    .taint_max_share = 0.10 };
        unsigned interval_ms = 10000, check_interval_ms = 60000, check_timeout_ms = 60000;
        bool xid_events = true, kubernetes = true, device_plugin = false, labels = true;
        const char *dp_config = NULL, *labels_output = NULL;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "a:", longopts, NULL)) != -1) {
                uint64_t ms, min = 1, max = 86400000;
                const char *name = NULL;
                unsigned *dst_ms = NULL, *dst_s = NULL;
                switch (c) {
                case 'a': listen_addr = optarg; break;
                case OPT_INTERVAL:
                        name = "interval";
                        dst_ms = &interval_ms;
                        break;
                case OPT_CHECK_INTERVAL:
                        name = "check-interval";
                        dst_ms = &check_interval_ms;
                        min = 100;
                        break;
                case OPT_CHECK_TIMEOUT:
                        name = "check-timeout";
                        dst_ms = &check_timeout_ms;
                        break;
                case OPT_HEARTBEAT:
                        name = "heartbeat";
                        dst_s = &ao.heartbeat_s;
                        min = 1000;
                        break;
                case OPT_EVENT_HOLD_DOWN:
                        name = "event-hold-down";
                        dst_s = &ao.event_hold_down_s;
                        min = 0;
                        break;
                case OPT_BACKOFF_MAX:
                        name = "api-backoff-max";
                        dst_s = &ao.backoff_max_s;
                        min = 1000;
                        break;
                case OPT_TAINT: ao.taint = true; break;
                case OPT_TAINT_MAX_SHARE: {
                        char *end;
                        double v = strtod(optarg, &end);
                        if (end != optarg && *end == '%') {
                                v /= 100;
                                end++;
                        }
                        if (end == optarg || *end || !(v >= 0 && v <= 1)) {
                                fprintf_escaped(stderr,
                                                "gpunode agent: --taint-max-share: '%s' is not 0..1 or 0%%..100%%\n",
                                                optarg);
                                return EXIT_USAGE;
                        }
                        ao.taint_max_share = v;
                        break;
                }
                case OPT_NO_LABELS: labels = false; break;
                case OPT_LABELS_OUTPUT: labels_output = optarg; break;
                case OPT_NO_CONDITIONS: ao.conditions = false; break;
                case OPT_NO_XID_EVENTS: xid_events = false; break;
                case OPT_NO_KUBERNETES: kubernetes = false; break;
                case OPT_DEVICE_PLUGIN: device_plugin = true; break;
                case OPT_DEVICE_PLUGIN_CONFIG: dp_config = optarg; break;
                default: {
                        _cleanup_free_ char *error = NULL;
                        int k = shared_option(c, optarg, &so, &error);
                        if (k < 0) fprintf_escaped(stderr, "gpunode agent: %s\n", error);
                        if (k <= 0) return EXIT_USAGE;
                        break;
                }
                }
                if (name) {
                        if (parse_duration_ms(optarg, min, max, &ms) < 0) {
                                fprintf_escaped(stderr,
                                                "gpunode agent: --%s: '%s' is not a duration (10, 1.5s, 500ms, 5m)\n",
                                                name, optarg);
                                return EXIT_USAGE;
                        }
                        if (dst_ms) *dst_ms = (unsigned)ms;
                        if (dst_s) *dst_s = (unsigned)(ms / 1000);
                }
        }
        if (optind < argc) {
                fprintf_escaped(stderr, "gpunode agent: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        *ret = (struct agent_args){ .ao = ao,
                                    .so = so,
                                    .listen_addr = listen_addr,
                                    .dp_config = dp_config,
                                    .labels_output = labels_output,
                                    .interval_ms = interval_ms,
                                    .check_interval_ms = check_interval_ms,
                                    .check_timeout_ms = check_timeout_ms,
                                    .xid_events = xid_events,
                                    .kubernetes = kubernetes,
                                    .device_plugin = device_plugin,
                                    .labels = labels };
        return 0;
}

/* The agent's and the device plugin's request for a diagnosis at once. Returns nothing. */
static void diagnose_now(void *userdata) {
        daemon_diagnose_now(userdata);
}

/* Returns the environment variable name's value, or NULL when it is unset or empty. */
static const char *env_or_null(const char *name) {
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

/* Starts the device plugin's thread (--device-plugin), its GPU health subscribed to the daemon's Xid
 * watch and its health changes posted as Events by the agent. Returns true when it runs. */
static bool start_device_plugin(struct agent_dp *dp, const struct agent_args *a, struct agent *agent,
                                struct daemon *d) {
        dp->o = (struct dp_options){ .config_file = a->dp_config ? a->dp_config : env_or_null("CONFIG_FILE"),
                                     .mig_strategy = env_or_null("MIG_STRATEGY"),
                                     .list_strategy = env_or_null("DEVICE_LIST_STRATEGY"),
                                     .id_strategy = env_or_null("DEVICE_ID_STRATEGY"),
                                     .pass_device_specs = env_or_null("PASS_DEVICE_SPECS"),
                                     .nvml_library = a->so.probe.nvml_library,
                                     .xid = daemon_xid_watch(d),
                                     .log = dp_log,
                                     .health_event = dp_health_event,
                                     .userdata = dp };
        dp->agent = agent;
        int k = pipe2(dp->stop, O_CLOEXEC | O_NONBLOCK) < 0 ? errno : 0;
        dp->o.stop_fd = dp->stop[0];
        if (k == 0) k = pthread_create(&dp->thread, NULL, dp_main, dp);
        if (k != 0) fprintf_escaped(stderr, "gpunode agent: cannot start the device plugin: %s\n", strerror(k));
        return k == 0;
}

/* Runs the agent: the exporter's sampler and routes, the agent's /report and page, the diagnosis loop
 * feeding both (and, through the agent, conditions, Events and the taint), the Xid watch, the labels
 * child, the device plugin when asked, until SIGTERM, SIGINT, SIGHUP or SIGQUIT. Returns the exit code. */
static int run_agent(struct agent_args *a) {
        int r = hostfs_init(a->so.root);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode agent: cannot open root %s: %s\n", a->so.root, strerror(-r));
                return EXIT_USAGE;
        }
        _cleanup_free_ char *node = node_name_resolve(a->so.node);
        char self[4096];
        child_self_path(self, sizeof self);
        const char *nvml_library = a->so.probe.nvml_library;
        sigset_t sigs;
        daemon_block_signals(&sigs);

        struct daemon *d = daemon_new();
        struct exp_options eo = { .interval_ms = a->interval_ms,
                                  .sample_timeout_ms = 10000,
                                  .root = a->so.root,
                                  .nvml_library = nvml_library,
                                  .hostname = node,
                                  .hostname_label = "Hostname",
                                  .xid_events = a->xid_events,
                                  .kubernetes = a->kubernetes };
        struct exporter *e = NULL;
        r = exporter_start(&eo, &e);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode agent: cannot start the exporter: %s\n", strerror(-r));
                daemon_free(d);
                hostfs_done();
                return EXIT_INTERNAL;
        }
        a->ao.kubeconfig = a->so.kube.kubeconfig;
        a->ao.node = node;
        a->ao.api_timeout_ms = a->so.kube.timeout_ms;
        a->ao.diagnose_now = diagnose_now;
        a->ao.diagnose_now_userdata = d;
        struct agent *agent = NULL;
        r = agent_start(&a->ao, &agent);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode agent: cannot start: %s\n", strerror(-r));
                daemon_free(d);
                exporter_stop(e);
                hostfs_done();
                return EXIT_INTERNAL;
        }
        /* the agent's / (the status page) before the exporter's index */
        daemon_add_route(d, &(struct daemon_route){ .handle = agent_http_route, .userdata = agent });
        exporter_join_daemon(e, d);
        struct diagnosis_sink sink;
        agent_diagnosis_sink(agent, &sink);
        daemon_add_sink(d, &sink);
        /* gpunode labels --root R [--nvml-library L] [--output F] and the NULL: 9 at most */
        const char *labels_argv[10] = { "gpunode", "labels", "--root", a->so.root };
        unsigned n = 4;
        if (nvml_library) {
                labels_argv[n++] = "--nvml-library";
                labels_argv[n++] = nvml_library;
        }
        if (a->labels_output) {
                labels_argv[n++] = "--output";
                labels_argv[n++] = a->labels_output;
        }
        labels_argv[n] = NULL;
        struct daemon_options dopt = {
                .who = "agent",
                .listen_addr = a->listen_addr,
                .xid_events = a->xid_events,
                .nvml_library = nvml_library,
                .xid_diagnoses = true,
                .diagnose = true,
                .diagnosis = { .self = self,
                               .root = a->so.root,
                               .nvml_library = nvml_library,
                               .kmsg = a->so.probe.kmsg_file,
                               .kubeconfig = a->so.kube.kubeconfig,
                               .node = node,
                               .api_timeout_ms = a->so.kube.timeout_ms,
                               .dcgm_url = a->so.kube.dcgm_url,
                               .node_exporter_url = a->so.kube.node_exporter_url,
                               .operator_namespace = a->so.kube.operator_namespace,
                               .expect_gpus = a->so.probe.expect_gpus,
                               .interval_ms = a->check_interval_ms,
                               .timeout_ms = a->check_timeout_ms },
                .supervise_argv = a->labels ? labels_argv : NULL,
                .self = self,
                .loop = { .drop_capabilities = true,
                          .keep_syslog = true,
                          },
        };
        exporter_loop_hooks(e, &dopt.loop);
        _cleanup_free_ char *error = NULL;
        r = daemon_start(d, &dopt, &error);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode agent: %s\n", error);
                daemon_free(d);
                agent_stop(agent);
                exporter_stop(e);
                hostfs_done();
                return r == -EINVAL ? EXIT_USAGE : EXIT_INTERNAL;
        }
        /* The device plugin (opt-in): its own thread and gRPC loop; the signals stay blocked there. */
        static struct agent_dp dp = { .stop = { -1, -1 } };
        bool device_plugin = a->device_plugin && start_device_plugin(&dp, a, agent, d);
        fprintf_escaped(stderr, "gpunode agent: node %s, listening on %s, diagnosing every %.3g s%s%s%s%s\n", node,
                        a->listen_addr, a->check_interval_ms / 1000.0, a->ao.conditions ? ", conditions" : "",
                        a->ao.taint ? ", taint" : "", a->labels ? ", labels" : "",
                        device_plugin ? ", device plugin" : "");
        int sig = daemon_run(d, &sigs);
        fprintf_escaped(stderr, "gpunode agent: %s, stopping\n", strsignal(sig));
        if (device_plugin) {
                (void)!write(dp.stop[1], "x", 1);
                pthread_join(dp.thread, NULL);
        }
        if (dp.stop[0] >= 0) close(dp.stop[0]);
        if (dp.stop[1] >= 0) close(dp.stop[1]);
        daemon_free(d);
        agent_stop(agent);
        exporter_stop(e);
        hostfs_done();
        return 0;
}

/* Runs `gpunode agent` (argv[0] "agent"). Returns the exit code. */
static int cmd_agent(int argc, char **argv) {
        struct agent_args a;
        int r = parse_argv_agent(argc, argv, &a);
        return r ? r : run_agent(&a);
}

/* `gpunode agent`: its entry in the command table, with the help text generated from it. */
const struct command command_agent = {
        .name = "agent",
        .run = cmd_agent,
        .summary = "the DaemonSet process: exporter, labels, periodic diagnosis, node conditions, events, taint",
        .usage = "[OPTIONS]",
        .options =
                "  -a, --listen ADDR      HOST:PORT, [V6]:PORT or :PORT (default :9400): /metrics, /health (NVML and\n"
                "                         the samples are fine), /ready (a diagnosis finished), /report, /\n"
                "  --interval DURATION    how often NVML is sampled for /metrics (default 10s)\n"
                "  --check-interval DUR   how often the diagnosis runs (default 60s); an Xid starts one at once\n"
                "  --check-timeout DUR    a diagnosis running longer is killed (default 60s)\n"
                "  --heartbeat DUR        refresh unchanged conditions this often (default 5m)\n"
                "  --event-hold-down DUR  at most one Event per layer this often; later transitions wait (default 5m)\n"
                "  --api-backoff-max DUR  the longest wait between API retries (default 5m)\n"
                "  --taint                taint the node gpunode.io/unhealthy=<layer>:NoSchedule while layer 1 or 2 "
                "fails\n"
                "  --taint-max-share X    refuse the taint when that many GPU nodes would carry it (default 0.1, 10%)\n"
                "  --no-conditions        do not write node conditions, Events or the taint\n"
                "  --no-labels            do not run the GFD labels loop (`gpunode labels`)\n"
                "  --labels-output FILE   the labels' NFD feature file (default: gpunode labels' own)\n"
                "  --no-xid-events        do not listen for Xid events\n"
                "  --no-kubernetes        no pod labels on the metrics\n"
                "  --device-plugin        also serve the kubelet device plugin API (`gpunode device-plugin`; needs "
                "the\n"
                "                         kubelet's device-plugins folder writable under --root)\n"
                "  --device-plugin-config FILE  NVIDIA's device plugin config file for it (env CONFIG_FILE)\n"
                "  (the options below are given to each diagnosis, `gpunode check`, as well)\n",
        .shared = SHARED_OPT_ROOT | SHARED_OPT_KMSG | SHARED_OPT_NVML_LIBRARY | SHARED_OPT_NODE | SHARED_OPTS_KUBE |
                  SHARED_OPT_EXPECT_GPUS,
        .notes = "stops cleanly on SIGTERM, SIGINT, SIGHUP or SIGQUIT\n",
};
