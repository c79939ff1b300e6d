/* check.c: `gpunode check`: probe, judge, attribute, render. */
#include "cmd/commands.h"
#include "cmd/options.h"
#include "diagnose/gpus.h"
#include "diagnose/registry.h"
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
#include <sys/wait.h>
#include <unistd.h>

enum output_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_PROMETHEUS };

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
        _cleanup_fclose_ FILE *f = fopen_private(file, 0644);
        if (!f) return -errno;
        if (fputs(json, f) == EOF || fflush(f) != 0) return -EIO;
        return 0;
}


/* Waits for the analysis child pid with the signals of set blocked (termination signals and
 * SIGCHLD). Returns its exit code (128 + the signal when it was killed), or 128 + the signal when a
 * termination signal arrived first: the child is killed and reaped then. Never fails otherwise. */
static int wait_analysis(pid_t pid, const sigset_t *set) {
        for (;;) {
                siginfo_t si;
                int sig = sigwaitinfo(set, &si);
                if (sig < 0) {
                        if (errno == EINTR) continue;
                        sig = SIGTERM; /* cannot wait for signals: end the child rather than hang */
                }
                if (sig == SIGCHLD) {
                        int status;
                        pid_t w = waitpid(pid, &status, WNOHANG);
                        if (w == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                        continue;
                }
                kill(pid, SIGKILL);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
                return 128 + sig;
        }
}
/* Runs `gpunode check` (argv[0] "check"). Returns the exit code. */
static int cmd_check(int argc, char **argv) {
        static const struct option longopts[] = {
                OPTION_ROOT,
                {"output", required_argument, NULL, 'o'},
                OPTION_KMSG,
                OPTION_NVML_LIBRARY,
                OPTION_NVML_TIMEOUT,
                OPTION_NODE,
                {"verbose", no_argument, NULL, 'v'},
                {"no-color", no_argument, NULL, 'C'},
                {"record-paths", required_argument, NULL, 'R'},
                {"save-nvml", required_argument, NULL, 'S'},
                {"snapshot", required_argument, NULL, 'P'},
                OPTIONS_KUBE,
                {0},
        };
        struct shared_options so;
        shared_options_init(&so);
        struct probe_options popts;
        struct kube_probe_options kopts;
        const char *record_file = NULL, *nvml_file = NULL, *snapshot_file = NULL;
        enum output_format format = FORMAT_TEXT;
        struct text_options topts = {.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR")};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "o:v", longopts, NULL)) != -1) {
                switch (c) {
                case 'o':
                        if (streq(optarg, "text")) format = FORMAT_TEXT;
                        else if (streq(optarg, "json")) format = FORMAT_JSON;
                        else if (streq(optarg, "prometheus")) format = FORMAT_PROMETHEUS;
                        else {
                                fprintf_escaped(stderr, "gpunode check: --output must be text, json or prometheus, not '%s'\n", optarg);
                                return EXIT_USAGE;
                        }
                        break;
                case 'v': topts.verbose = true; break;
                case 'C': topts.color = false; break;
                case 'R': record_file = optarg; break;
                case 'S': nvml_file = optarg; break;
                case 'P': snapshot_file = optarg; break;
                default: {
                        _cleanup_free_ char *error = NULL;
                        int k = shared_option(c, optarg, &so, &error);
                        if (k < 0) fprintf_escaped(stderr, "gpunode check: %s\n", error);
                        if (k <= 0) return EXIT_USAGE;
                        break;
                }
                }
        }
        popts = so.probe;
        kopts = so.kube;
        const char *root = so.root, *node = so.node;
        if (optind < argc) {
                fprintf_escaped(stderr, "gpunode check: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        /* Opened before a snapshot is extracted, so that a refusal leaves nothing behind. */
        _cleanup_fclose_ FILE *record = NULL;
        if (record_file && !(record = fopen_private(record_file, 0644))) {
                fprintf_escaped(stderr, "gpunode check: cannot write %s: %m\n", record_file);
                return EXIT_USAGE;
        }
        /* --snapshot: the node as collected, extracted into a private folder removed at the end.
         * Termination signals are blocked while it is extracted and removed; the analysis runs in a
         * child, so that a signal ends it at once and the folder is still removed. */
        struct snapshot *snap = NULL;
        sigset_t term, saved_mask;
        sigemptyset(&term);
        sigaddset(&term, SIGINT);
        sigaddset(&term, SIGTERM);
        sigaddset(&term, SIGHUP);
        sigaddset(&term, SIGQUIT);
        const char *display_root = NULL;
        if (snapshot_file) {
                if (so.root_given || popts.kmsg_file || popts.nvml_library) {
                        fprintf(stderr, "gpunode check: --snapshot replaces --root, --kmsg and --nvml-library\n");
                        return EXIT_USAGE;
                }
                if (kopts.kubeconfig || so.timeout_given || kopts.operator_namespace || kopts.dcgm_url || kopts.node_exporter_url) {
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
                        fprintf_escaped(stderr, "gpunode check: %s\n", error ? error : strerror(-sr));
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
        }
        if (!display_root) display_root = root;
        bool child = false;
        if (snap) {
                fflush(stdout);
                fflush(stderr);
                if (record) fflush(record);
                sigset_t with_chld = term;
                sigaddset(&with_chld, SIGCHLD);
                sigprocmask(SIG_BLOCK, &with_chld, NULL);
                /* a signal ignored on entry (nohup, a background job's SIGINT) stays ignored */
                for (int sig = 1; sig < NSIG; sig++) {
                        struct sigaction old;
                        if (sigismember(&term, sig) == 1 && sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
                                sigdelset(&with_chld, sig);
                }
                pid_t pid = fork();
                if (pid > 0) {
                        int code = wait_analysis(pid, &with_chld);
                        net_replay_from(NULL);
                        snapshot_close(snap);
                        sigprocmask(SIG_SETMASK, &saved_mask, NULL);
                        return code;
                }
                /* the child analyses with the caller's signal mask; without fork, the parent does,
                 * with the signals held */
                if (pid == 0) {
                        child = true;
                        sigprocmask(SIG_SETMASK, &saved_mask, NULL);
                }
        }
        int code = EXIT_USAGE;
        _cleanup_free_ char *name = NULL;
        int r = hostfs_init(root);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode check: cannot open root %s: %s\n", root, strerror(-r));
                goto out;
        }
        name = node_name_resolve(node);
        if (!kopts.node_name) kopts.node_name = name;
        if (record) hostfs_set_recorder(record_path, record);
        /* Layers 3 and 4: the API and the node's endpoints; a snapshot is analysed offline. */
        popts.kube = &kopts;
        struct node_facts facts;
        probe_all(&popts, &facts);
        hostfs_set_recorder(NULL, NULL);
        if (nvml_file) {
                r = save_nvml(nvml_file, &facts);
                if (r < 0) fprintf_escaped(stderr, "gpunode check: cannot save NVML's answers to %s: %s\n", nvml_file,
                                           r == -ENODATA ? "NVML was not loaded" : strerror(-r));
        }
        struct report rep;
        size_t n_checks;
        const struct check_def *const *checks = check_registry(&n_checks);
        report_build(&facts, checks, n_checks, name, display_root, &rep);
        report_add_gpus(&rep, &facts);
        switch (format) {
        case FORMAT_TEXT: r = output_text(stdout, &rep, &topts); break;
        case FORMAT_JSON: r = output_json(stdout, &rep); break;
        case FORMAT_PROMETHEUS: r = output_prometheus(stdout, &rep); break;
        }
        code = r < 0 ? EXIT_INTERNAL : verdict_exit_code(rep.verdict);
        report_free(&rep);
        node_facts_free(&facts);
out:
        hostfs_done();
        if (child) {
                /* the parent removes the folder; the child only flushes what it wrote */
                if (record && (fflush(record) != 0 || ferror(record))) code = EXIT_INTERNAL;
                if (fflush(stdout) != 0 || ferror(stdout)) {
                        fprintf(stderr, "gpunode: could not write to standard output\n");
                        code = EXIT_INTERNAL;
                }
                _exit(code);
        }
        if (snap) {
                net_replay_from(NULL);
                snapshot_close(snap);
                sigprocmask(SIG_SETMASK, &saved_mask, NULL);
        }
        return code;
}

/* `gpunode check`: its entry in the command table, with the help text generated from it. */
const struct command command_check = {
        .name = "check",
        .run = cmd_check,
        .summary = "diagnose the node bottom-up and name the root cause",
        .usage = "[OPTIONS]",
        .options =
                "  --root DIR            host root to read (env GPUNODE_ROOT, default /)\n"
                "  --output FORMAT       text, json or prometheus (default text)\n"
                "  --kmsg FILE           read a saved kernel log (dmesg, journal or kmsg format) instead of /dev/kmsg\n"
                "  --nvml-library PATH   load this file instead of libnvidia-ml.so.1\n"
                "  --nvml-timeout MS     bound on all NVML calls together (default 10000)\n"
                "  --node NAME           node name in the report (default $NODE_NAME, else the host name)\n"
                "  --verbose             evidence for passing checks too\n"
                "  --no-color            no colours (NO_COLOR is honoured too)\n"
                "  --record-paths FILE   list every host path read (what a snapshot must hold)\n"
                "  --save-nvml FILE      write NVML's answers in the test NVML's description format\n"
                "  --snapshot FILE       check a node from its `gpunode collect` archive (replaces --root, --kmsg,\n"
                "                        --nvml-library and the API and metrics options: all answers come from it)\n"
                "  --kubeconfig FILE     Kubernetes credentials (default $KUBECONFIG, ~/.kube/config, else the pod's\n"
                "                        service account); no configuration: the API checks are skipped\n"
                "  --timeout DURATION    bound on each API request and metrics fetch (default 5s; \"500ms\" works)\n"
                "  --operator-namespace NS  the GPU Operator's namespace (default: found from its pods on the node)\n"
                "  --dcgm-url URL        DCGM exporter metrics (default: the exporter pod on this node, port 9400,\n"
                "                        else http://localhost:9400/metrics)\n"
                "  --node-exporter-url URL  node exporter metrics (default: its pod on this node, else localhost:9100)\n"
                "exit status: 0 healthy, 1 warnings, 2 failures, 64 usage error, 70 internal error\n",
};
