/* check.c: `gpunode check`: probe, judge, attribute, render. */
#include "cmd/commands.h"
#include "facts/node.h"
#include "facts/layer3_kubernetes.h"
#include "basic/hostfs.h"
#include "kube/kube_client.h"
#include "kube/net_replay.h"
#include "output/output.h"

#include "nvml/nvml_probe.h"
#include "snapshot/snapshot.h"

#include <getopt.h>
#include <signal.h>

enum output_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_PROMETHEUS };

/* Returns the node name: --node, $NODE_NAME, then the host name under the root. */
static char *node_name(const char *flag, const struct node_facts *facts) {
        if (flag && *flag) return xstrdup(flag);
        const char *env = getenv("NODE_NAME");
        if (env && *env) return xstrdup(env);
        return xstrdup(facts->hostname ? facts->hostname : "unknown");
}

/* Appends each host path read to the file (gpunode collect's list of what to copy). */
static void record_path(const char *path, void *userdata) {
        fprintf((FILE *)userdata, "%s\n", path);
}

/* Writes NVML's answers in the fake library's description format. Returns 0 or -errno. */
static int save_nvml(const char *file, const struct node_facts *facts) {
        if (!facts->nvml.facts) return -ENODATA;
        _cleanup_free_ char *json = NULL;
        int r = nvml_facts_to_json(facts->nvml.facts, &json);
        if (r < 0) return r;
        _cleanup_fclose_ FILE *f = fopen(file, "we");
        if (!f) return -errno;
        if (fputs(json, f) == EOF || fflush(f) != 0) return -EIO;
        return 0;
}

int cmd_check(int argc, char **argv) {
        static const struct option longopts[] = {
                {"root", required_argument, NULL, 'r'},
                {"output", required_argument, NULL, 'o'},
                {"kmsg", required_argument, NULL, 'k'},
                {"nvml-library", required_argument, NULL, 'l'},
                {"nvml-timeout", required_argument, NULL, 't'},
                {"node", required_argument, NULL, 'n'},
                {"verbose", no_argument, NULL, 'v'},
                {"no-color", no_argument, NULL, 'C'},
                {"record-paths", required_argument, NULL, 'R'},
                {"save-nvml", required_argument, NULL, 'S'},
                {"snapshot", required_argument, NULL, 'P'},
                KUBE_PROBE_LONGOPTS,
                {0},
        };
        const char *root = getenv("GPUNODE_ROOT");
        const char *node = NULL, *record_file = NULL, *nvml_file = NULL, *snapshot_file = NULL;
        bool root_flag = false, timeout_flag = false;
        enum output_format format = FORMAT_TEXT;
        struct probe_options popts = {.nvml_timeout_ms = 10000};
        struct kube_probe_options kopts = {.timeout_ms = KUBE_DEFAULT_TIMEOUT_MS};
        struct text_options topts = {.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR")};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "o:v", longopts, NULL)) != -1) {
                switch (c) {
                case 'r': root = optarg; root_flag = true; break;
                case 'o':
                        if (streq(optarg, "text")) format = FORMAT_TEXT;
                        else if (streq(optarg, "json")) format = FORMAT_JSON;
                        else if (streq(optarg, "prometheus")) format = FORMAT_PROMETHEUS;
                        else {
                                fprintf(stderr, "gpunode check: --output must be text, json or prometheus, not '%s'\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'k': popts.kmsg_file = optarg; break;
                case 'l': popts.nvml_library = optarg; break;
                case 't': {
                        uint64_t ms;
                        if (parse_u64(optarg, 10, &ms) < 0 || ms == 0 || ms > 600000) {
                                fprintf(stderr, "gpunode check: --nvml-timeout must be 1..600000 ms, not '%s'\n", optarg);
                                return EXIT_USAGE;
                        }
                        popts.nvml_timeout_ms = (unsigned)ms;
                        break;
                }
                case 'n': node = optarg; break;
                case 'v': topts.verbose = true; break;
                case 'C': topts.color = false; break;
                case 'R': record_file = optarg; break;
                case 'S': nvml_file = optarg; break;
                case 'P': snapshot_file = optarg; break;
                default: {
                        /* --kubeconfig, --timeout, --operator-namespace, --dcgm-url, --node-exporter-url */
                        _cleanup_free_ char *error = NULL;
                        int k = kube_probe_option(c, optarg, &kopts, &error);
                        if (k < 0) {
                                fprintf(stderr, "gpunode check: %s\n", error);
                                return EXIT_USAGE;
                        }
                        if (k == 0) return EXIT_USAGE;
                        if (c == 'T') timeout_flag = true;
                        break;
                }
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gpunode check: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        /* --snapshot: the node as collected, extracted into a private folder removed at the end;
         * termination signals wait until it is removed. */
        struct snapshot *snap = NULL;
        sigset_t term, saved_mask;
        sigemptyset(&term);
        sigaddset(&term, SIGINT);
        sigaddset(&term, SIGTERM);
        sigaddset(&term, SIGHUP);
        sigaddset(&term, SIGQUIT);
        const char *display_root = NULL;
        if (snapshot_file) {
                if (root_flag || popts.kmsg_file || popts.nvml_library) {
                        fprintf(stderr, "gpunode check: --snapshot replaces --root, --kmsg and --nvml-library\n");
                        return EXIT_USAGE;
                }
                if (kopts.kubeconfig || timeout_flag || kopts.operator_namespace || kopts.dcgm_url || kopts.node_exporter_url) {
                        fprintf(stderr, "gpunode check: --snapshot replays the API and metrics answers collected with the "
                                        "node's --kubeconfig, --timeout, --operator-namespace, --dcgm-url and "
                                        "--node-exporter-url; they cannot be given again\n");
                        return EXIT_USAGE;
                }
                sigprocmask(SIG_BLOCK, &term, &saved_mask);
                _cleanup_free_ char *error = NULL;
                int sr = snapshot_open(snapshot_file, &snap, &error);
                if (sr < 0) {
                        sigprocmask(SIG_SETMASK, &saved_mask, NULL);
                        fprintf(stderr, "gpunode check: %s\n", error ? error : strerror(-sr));
                        return sr == -ENOENT || sr == -EACCES ? EXIT_USAGE : EXIT_DATAERR;
                }
                root = snap->root_dir;
                display_root = snap->root_label;
                popts.kmsg_file = snap->kmsg_path;
                popts.kmsg_label = snap->kmsg_label;
                popts.nvml_replay = true;
                popts.nvml_library = snap->nvml_library;
                popts.nvml_facts = snap->nvml_facts;
                popts.nvml_load_rc = snap->nvml_load_rc;
                popts.nvml_load_error = snap->nvml_load_error;
                /* Layers 3 and 4 answer from the snapshot (net_replay.h), with the options used there;
                 * the API is asked about the node named there unless --node names another. */
                const struct net_options *no = &snap->net->options;
                kopts.node_name = node ? node : no->node;
                if (no->timeout_ms) kopts.timeout_ms = no->timeout_ms;
                kopts.operator_namespace = no->operator_namespace;
                kopts.dcgm_url = no->dcgm_url;
                kopts.node_exporter_url = no->node_exporter_url;
                net_replay_from(snap->net);
                if (!node && snap->node) node = snap->node;
        } else {
                kopts.node_name = node;
        }
        if (!root || !*root) root = "/";
        if (!display_root) display_root = root;
        int r = hostfs_init(root);
        if (r < 0) {
                fprintf(stderr, "gpunode check: cannot open root %s: %s\n", root, strerror(-r));
                if (snap) {
                        net_replay_from(NULL);
                        snapshot_close(snap);
                        sigprocmask(SIG_SETMASK, &saved_mask, NULL);
                }
                return EXIT_USAGE;
        }

        _cleanup_fclose_ FILE *record = NULL;
        if (record_file) {
                record = fopen(record_file, "we");
                if (!record) {
                        fprintf(stderr, "gpunode check: cannot write %s: %m\n", record_file);
                        return EXIT_USAGE;
                }
                hostfs_set_recorder(record_path, record);
        }
        /* Layers 3 and 4: the API and the node's endpoints; a snapshot is analysed offline. */
        popts.kube = &kopts;
        struct node_facts facts;
        probe_all(&popts, &facts);
        hostfs_set_recorder(NULL, NULL);
        if (nvml_file) {
                r = save_nvml(nvml_file, &facts);
                if (r < 0) fprintf(stderr, "gpunode check: cannot save NVML's answers to %s: %s\n", nvml_file,
                                   r == -ENODATA ? "NVML was not loaded" : strerror(-r));
        }
        _cleanup_free_ char *name = node_name(node, &facts);
        struct report rep;
        report_build(&facts, name, display_root, &rep);
        switch (format) {
        case FORMAT_TEXT: r = output_text(stdout, &rep, &topts); break;
        case FORMAT_JSON: r = output_json(stdout, &rep); break;
        case FORMAT_PROMETHEUS: r = output_prometheus(stdout, &rep); break;
        }
        int code = r < 0 ? EXIT_INTERNAL : verdict_exit_code(rep.verdict);
        report_free(&rep);
        node_facts_free(&facts);
        hostfs_done();
        if (snap) {
                net_replay_from(NULL);
                snapshot_close(snap);
                sigprocmask(SIG_SETMASK, &saved_mask, NULL);
        }
        return code;
}
