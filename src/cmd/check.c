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

#include "nvml/nvml_facts_json.h"
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
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
                }
                return 128 + sig;
        }
}
/* What `gpunode check` was asked. */
struct check_args {
        struct command_args base;
        struct shared_options so;
        enum output_format format;
        struct text_options topts;
        const char *record_file, *nvml_file, *snapshot_file;
};

/* What one analysis reads: the probes' options, the node asked for, the root the report names. */
struct analysis {
        struct probe_options probe;
        struct kube_probe_options kube;
        const char *node;         /* NULL: node_name_resolve()'s rule */
        const char *display_root; /* the root as the report names it */
        int64_t time;             /* when the facts were read: a snapshot's collection time; 0: now */
};

/* Refuses the options --snapshot replaces. Returns 0, or -EINVAL after saying so on stderr. */
static int check_snapshot_options(const struct shared_options *so) {
        if (so->root_given || so->probe.kmsg_file || so->probe.nvml_library) {
                fprintf(stderr, "gpunode check: --snapshot replaces --root, --kmsg and --nvml-library\n");
                return -EINVAL;
        }
        const struct kube_probe_options *k = &so->kube;
        if (k->kubeconfig || so->timeout_given || k->operator_namespace || k->dcgm_url || k->node_exporter_url) {
                fprintf(stderr, "gpunode check: --snapshot replays the API and metrics answers collected with the "
                                "node's --kubeconfig, --timeout, --operator-namespace, --dcgm-url and "
                                "--node-exporter-url; they cannot be given again\n");
                return -EINVAL;
        }
        return 0;
}

/* Applies one of check's own options (getopt code c, its argument arg). Returns 1 when applied, 0 when
 * c is not one of them, -EINVAL after saying on stderr what is wrong. */
static int check_option(int c, const char *arg, struct check_args *args) {
        switch (c) {
        case 'o':
                if (streq(arg, "text"))
                        args->format = FORMAT_TEXT;
                else if (streq(arg, "json"))
                        args->format = FORMAT_JSON;
                else if (streq(arg, "prometheus"))
                        args->format = FORMAT_PROMETHEUS;
                else {
                        fprintf_escaped(stderr, "gpunode check: --output must be text, json or prometheus, not '%s'\n",
                                        arg);
                        return -EINVAL;
                }
                return 1;
        case 'v': args->topts.verbose = true; return 1;
        case 'C': args->topts.color = false; return 1;
        case 'R': args->record_file = arg; return 1;
        case 'S': args->nvml_file = arg; return 1;
        case 'P': args->snapshot_file = arg; return 1;
        default: return 0;
        }
}

/* Parses `gpunode check [OPTIONS]` (argv[0] "check"). Returns 0, or -EINVAL after saying on stderr what
 * is wrong. */
static int parse_argv_check(int argc, char **argv, struct check_args *args) {
        static const struct option longopts[] = {
                OPTION_ROOT,
                { "output", required_argument, NULL, 'o' },
                OPTION_KMSG,
                OPTION_NVML_LIBRARY,
                OPTION_NVML_TIMEOUT,
                OPTION_NODE,
                OPTION_EXPECT_GPUS,
                { "verbose", no_argument, NULL, 'v' },
                { "no-color", no_argument, NULL, 'C' },
                { "record-paths", required_argument, NULL, 'R' },
                { "save-nvml", required_argument, NULL, 'S' },
                { "snapshot", required_argument, NULL, 'P' },
                OPTIONS_KUBE,
                { 0 },
        };
        shared_options_init(&args->so);
        args->format = FORMAT_TEXT;
        args->topts = (struct text_options){ .color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR") };
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "o:v", longopts, NULL)) != -1) {
                int k = check_option(c, optarg, args);
                if (k < 0) return k;
                if (k > 0) continue;
                _cleanup_free_ char *error = NULL;
                k = shared_option(c, optarg, &args->so, &error);
                if (k < 0) fprintf_escaped(stderr, "gpunode check: %s\n", error);
                if (k <= 0) return -EINVAL;
        }
        if (optind < argc) {
                fprintf_escaped(stderr, "gpunode check: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        if (args->snapshot_file && check_snapshot_options(&args->so) < 0) return -EINVAL;
        /* a snapshot is extracted, and its root opened, by run_check */
        args->base.root = args->snapshot_file ? NULL : args->so.root;
        return 0;
}

/* Probes the node under the open root, judges, attributes and renders the report on stdout. Returns
 * the verdict's exit code, or EXIT_INTERNAL when the report cannot be written. */
static int analyse(const struct check_args *args, struct analysis *an, FILE *record) {
        _cleanup_free_ char *name = node_name_resolve(an->node);
        if (!an->kube.node_name) an->kube.node_name = name;
        if (record) hostfs_set_recorder(record_path, record);
        /* Layers 3 and 4: the API and the node's endpoints; a snapshot is analysed offline. */
        an->probe.kube = &an->kube;
        int64_t when = an->time > 0 ? an->time : (int64_t)time(NULL);
        struct node_facts facts;
        probe_all(&an->probe, &facts);
        hostfs_set_recorder(NULL, NULL);
        if (args->nvml_file) {
                int r = save_nvml(args->nvml_file, &facts);
                if (r < 0)
                        fprintf_escaped(stderr, "gpunode check: cannot save NVML's answers to %s: %s\n",
                                        args->nvml_file, r == -ENODATA ? "NVML was not loaded" : strerror(-r));
        }
        struct report rep;
        size_t n_checks;
        const struct check_def *const *checks = check_registry(&n_checks);
        report_build(&facts, checks, n_checks, name, an->display_root, &rep);
        rep.time = when;
        report_add_gpus(&rep, &facts);
        int r = 0;
        switch (args->format) {
        case FORMAT_TEXT: r = output_text(stdout, &rep, &args->topts); break;
        case FORMAT_JSON: r = output_json(stdout, &rep); break;
        case FORMAT_PROMETHEUS: r = output_prometheus(stdout, &rep); break;
        }
        int code = r < 0 ? EXIT_INTERNAL : verdict_exit_code(rep.verdict);
        report_free(&rep);
        node_facts_free(&facts);
        return code;
}

/* Opens root, analyses, closes it. Returns analyse()'s exit code, or EXIT_USAGE when the root cannot
 * be opened. */
static int analyse_root(const char *root, const struct check_args *args, struct analysis *an, FILE *record) {
        int r = hostfs_init(root);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode check: cannot open root %s: %s\n", root, strerror(-r));
                return EXIT_USAGE;
        }
        int code = analyse(args, an, record);
        hostfs_done();
        return code;
}

/* The analysis of a snapshot, from what it holds: layers 3 and 4 answer from it (net_replay.h), with
 * the options used there; the API is asked about the node named there unless --node names another. */
static void analysis_from_snapshot(const struct check_args *args, const struct snapshot *snap, struct analysis *ret) {
        *ret = (struct analysis){ .probe = args->so.probe, .kube = args->so.kube, .node = args->so.node };
        ret->display_root = snap->root_label ? snap->root_label : snap->root_dir;
        ret->time = snap->created;
        ret->probe.kmsg_file = snap->kmsg_path;
        ret->probe.kmsg_label = snap->kmsg_label;
        ret->probe.nvml_replay = true;
        ret->probe.nvml_library = snap->nvml_library;
        ret->probe.nvml_facts = snap->nvml_facts;
        ret->probe.nvml_load_rc = snap->nvml_load_rc;
        ret->probe.nvml_load_error = snap->nvml_load_error;
        const struct net_options *no = &snap->net->options;
        ret->kube.node_name = ret->node ? ret->node : no->node;
        if (no->timeout_ms) ret->kube.timeout_ms = no->timeout_ms;
        ret->kube.operator_namespace = no->operator_namespace;
        ret->kube.dcgm_url = no->dcgm_url;
        ret->kube.node_exporter_url = no->node_exporter_url;
        if (!ret->node && snap->node) ret->node = snap->node;
}

/* Analyses the extracted snapshot in a child, so that a termination signal (of term, blocked on entry,
 * saved the mask before) ends it at once and the caller still removes the folder. Returns the child's
 * exit code or 128 + the signal; without fork, the analysis runs here with the signals held. */
static int analyse_in_child(const struct check_args *args, const struct snapshot *snap, struct analysis *an,
                            FILE *record, const sigset_t *term, const sigset_t *saved_mask) {
        fflush(stdout);
        fflush(stderr);
        if (record) fflush(record);
        sigset_t with_chld = *term;
        sigaddset(&with_chld, SIGCHLD);
        sigprocmask(SIG_BLOCK, &with_chld, NULL);
        /* a signal ignored on entry (nohup, a background job's SIGINT) stays ignored */
        for (int sig = 1; sig < NSIG; sig++) {
                struct sigaction old;
                if (sigismember(term, sig) == 1 && sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
                        sigdelset(&with_chld, sig);
        }
        pid_t pid = fork();
        if (pid > 0) return wait_analysis(pid, &with_chld);
        if (pid < 0) return analyse_root(snap->root_dir, args, an, record);
        /* the child analyses with the caller's signal mask; the parent removes the folder, the child
         * only flushes what it wrote */
        sigprocmask(SIG_SETMASK, saved_mask, NULL);
        int code = analyse_root(snap->root_dir, args, an, record);
        if (record && (fflush(record) != 0 || ferror(record))) code = EXIT_INTERNAL;
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "gpunode: could not write to standard output\n");
                code = EXIT_INTERNAL;
        }
        _exit(code);
}

/* `check --snapshot`: the node as collected, extracted into a private folder removed at the end.
 * Termination signals are blocked while it is extracted and removed; the analysis runs in a child.
 * Returns the exit code: EXIT_USAGE or EXIT_DATAERR when the snapshot cannot be opened or is refused. */
static int check_snapshot(const struct check_args *args, FILE *record) {
        sigset_t term, saved_mask;
        sigemptyset(&term);
        sigaddset(&term, SIGINT);
        sigaddset(&term, SIGTERM);
        sigaddset(&term, SIGHUP);
        sigaddset(&term, SIGQUIT);
        sigprocmask(SIG_BLOCK, &term, &saved_mask);
        struct snapshot *snap = NULL;
        _cleanup_free_ char *error = NULL;
        int r = snapshot_open(args->snapshot_file, &snap, &error);
        if (r < 0) {
                sigprocmask(SIG_SETMASK, &saved_mask, NULL);
                fprintf_escaped(stderr, "gpunode check: %s\n", error ? error : strerror(-r));
                return r == -ENOENT || r == -EACCES ? EXIT_USAGE : EXIT_DATAERR;
        }
        struct analysis an;
        analysis_from_snapshot(args, snap, &an);
        net_replay_from(snap->net);
        int code = analyse_in_child(args, snap, &an, record, &term, &saved_mask);
        net_replay_from(NULL);
        snapshot_close(snap);
        sigprocmask(SIG_SETMASK, &saved_mask, NULL);
        return code;
}

/* Runs `gpunode check`: the node under the root main.c opened, or a snapshot. Returns the exit code. */
static int run_check(struct check_args *args) {
        /* Opened before a snapshot is extracted, so that a refusal leaves nothing behind. */
        _cleanup_fclose_ FILE *record = NULL;
        if (args->record_file && !(record = fopen_private(args->record_file, 0644))) {
                fprintf_escaped(stderr, "gpunode check: cannot write %s: %m\n", args->record_file);
                return EXIT_USAGE;
        }
        if (args->snapshot_file) return check_snapshot(args, record);
        struct analysis an = {
                .probe = args->so.probe, .kube = args->so.kube, .node = args->so.node, .display_root = args->so.root
        };
        return analyse(args, &an, record);
}

DEFINE_COMMAND_STEPS(check)

/* `gpunode check`: its entry in the command table, with the help text generated from it. */
const struct command command_check = {
        .name = "check",
        COMMAND_STEPS(check),
        .needs_root = true,
        .summary = "diagnose the node bottom-up and name the root cause",
        .usage = "[OPTIONS]",
        .options =
                "  --output FORMAT       text, json or prometheus (default text)\n"
                "  --verbose             evidence for passing checks too\n"
                "  --no-color            no colours (NO_COLOR is honoured too)\n"
                "  --record-paths FILE   list every host path read (what a snapshot must hold)\n"
                "  --save-nvml FILE      write NVML's answers in the test NVML's description format\n"
                "  --snapshot FILE       check a node from its `gpunode collect` archive (replaces --root, --kmsg,\n"
                "                        --nvml-library and the API and metrics options: all answers come from it)\n",
        .shared = SHARED_OPT_ROOT | SHARED_OPT_KMSG | SHARED_OPTS_NVML | SHARED_OPT_NODE | SHARED_OPTS_KUBE |
                  SHARED_OPT_EXPECT_GPUS,
        .notes = "no Kubernetes configuration: the API checks are skipped\n"
                 "exit status: 0 healthy, 1 warnings, 2 failures, 64 usage error, 70 internal error\n",
};
