/* cluster.c: `gpunode cluster` (and `kubectl gpunode cluster`): every GPU node's readiness in six categories; `cluster
 * check NODE`: a node's report from its agent through the API server's pod proxy. */
#include "cmd/commands.h"
#include "cmd/options.h"
#include "basic/rfc3339.h"
#include "basic/util.h"
#include "cluster/cluster.h"
#include "output/report_read.h"
#include "kube/kube_client.h"
#include "kube/kube_list.h"
#include "kube/kubeconfig.h"
#include "output/output.h"

#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define EXIT_API                   69 /* the cluster cannot be read (sysexits EX_UNAVAILABLE) */
#define EXIT_NOPERM                77 /* the API refused a list or get (403; sysexits EX_NOPERM) */
#define CLUSTER_DEFAULT_TIMEOUT_MS 30000u
#define CLUSTER_DEFAULT_STALE_S    (15 * 60) /* three of the agent's default 5 min heartbeats */

enum {
        OPT_OUTPUT = 0x300,
        OPT_WATCH,
        OPT_INTERVAL,
        OPT_WATCH_LIMIT,
        OPT_CHUNK,
        OPT_STALE,
        OPT_ALL_NODES,
        OPT_NO_COLOR,
        OPT_VERBOSE,
        OPT_CONTEXT,
        OPT_NAMESPACE,
        OPT_CTIMEOUT,
        OPT_LIST_CHECKS,
        OPT_ONLY,
        OPT_SELECTOR,
};

struct cluster_options {
        const char *kubeconfig, *context, *namespace;
        const char *selector; /* -l/--selector: only the nodes it matches */
        bool json, watch, all_nodes, verbose, color;
        enum check_status only; /* --only: CHECK_FAIL failing, CHECK_WARN troubled, CHECK_PASS all */
        uint64_t interval_ms, timeout_ms, stale_ms;
        unsigned chunk;
        unsigned long watch_limit;
};

/* Returns the sentence naming the permission a 403 Status message says is missing ("list nodes"), malloc'd, or NULL. */
static char *missing_permission(const char *err) {
        const char *p = err ? strstr(err, " cannot ") : NULL;
        if (!p) return NULL;
        char verb[32], res[128], group[128] = "";
        if (sscanf(p, " cannot %31s resource \"%127[^\"]\" in API group \"%127[^\"]\"", verb, res, group) < 2)
                return NULL;
        return xasprintf("missing permission: %s %s%s%s%s", verb, res, *group ? " (API group " : "", group,
                         *group ? ")" : "");
}

/* Prints an API failure (the sentence, and for a 403 the missing permission and the role that grants it). Returns
 * the exit code. */
static int api_failure(const char *what, int r, const char *err) {
        fprintf_escaped(stderr, "gpunode cluster: %s%s%s\n", what, *what ? ": " : "", err ? err : strerror(-r));
        if (r == -EPERM) {
                _cleanup_free_ char *perm = missing_permission(err);
                if (perm) fprintf_escaped(stderr, "gpunode cluster: %s\n", perm);
                fprintf(stderr, "gpunode cluster: the ClusterRole gpunode-cluster-reader "
                                "(deploy/clusterrole-cluster-reader.yaml) "
                                "grants what `gpunode cluster` reads: kubectl create clusterrolebinding NAME "
                                "--clusterrole=gpunode-cluster-reader --user=USER\n");
                return EXIT_NOPERM;
        }
        return EXIT_API;
}

/* Opens a client from the options. Returns 0 or the exit code with the error printed. */
static int open_client(const struct cluster_options *o, struct kube_client **ret) {
        _cleanup_kube_config_ struct kube_config *cfg = NULL;
        _cleanup_free_ char *err = NULL;
        int r = kube_config_load_context(o->kubeconfig, o->context, (unsigned)o->timeout_ms, &cfg, &err);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode cluster: no cluster credentials: %s\n", err ? err : strerror(-r));
                return r == -ENOENT ? EXIT_API : EXIT_USAGE;
        }
        r = kube_client_new(cfg, (unsigned)o->timeout_ms, ret, &err);
        if (r < 0) return api_failure("cannot create the API client", r, err);
        kube_client_set_max_body(*ret, (size_t)256 << 20); /* one page; --chunk-size bounds it */
        return 0;
}

/* Reads the cluster and renders it into *ret_text (malloc'd). Returns the exit code (0/1/2 verdicts). */
static int one_pass(struct kube_client *kube, const struct cluster_options *o, char **ret_text, size_t *ret_len) {
        struct cluster_facts facts;
        _cleanup_free_ char *err = NULL;
        int r = cluster_fetch(kube, o->chunk, (int64_t)(o->stale_ms / 1000), o->selector, &facts, &err);
        if (r < 0) {
                *ret_text = NULL;
                return api_failure("", r, err);
        }
        struct cluster_report rep;
        cluster_report_build(&facts, &rep);
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        if (!m) {
                cluster_report_free(&rep);
                cluster_facts_free(&facts);
                return EXIT_INTERNAL;
        }
        struct cl_text_options to = {
                .color = o->color, .all_nodes = o->all_nodes, .verbose = o->verbose, .only = o->only
        };
        r = o->json ? cluster_render_json(m, &rep) : cluster_render_text(m, &rep, &to);
        int code = r < 0 ? EXIT_INTERNAL : verdict_exit_code(rep.verdict);
        if (fclose(m) != 0) code = EXIT_INTERNAL;
        cluster_report_free(&rep);
        cluster_facts_free(&facts);
        *ret_text = text;
        *ret_len = len;
        return code;
}

/* Sleeps ms milliseconds (restarted after signals that return). Returns nothing. */
static void sleep_ms(uint64_t ms) {
        struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
        }
}

/* `cluster [--watch]`. Returns the exit code of the last pass. */
static int show_cluster(const struct cluster_options *o) {
        _cleanup_kube_client_ struct kube_client *kube = NULL;
        int code = open_client(o, &kube);
        if (code) return code;
        _cleanup_free_ char *last = NULL;
        bool tty = isatty(STDOUT_FILENO);
        for (unsigned long frame = 0;; frame++) {
                char *text = NULL;
                size_t len = 0;
                code = one_pass(kube, o, &text, &len);
                if (!o->watch) {
                        if (text) fwrite(text, 1, len, stdout);
                        free(text);
                        return code;
                }
                /* --watch: redraw when what it shows changed (the error of a failed pass is on stderr) */
                if (text && (!last || !streq(last, text))) {
                        if (tty && !o->json)
                                fputs("\033[H\033[2J", stdout);
                        else if (last)
                                fputs(o->json ? "" : "\n", stdout);
                        fwrite(text, 1, len, stdout);
                        fflush(stdout);
                        free(last);
                        last = text;
                } else
                        free(text);
                if (o->watch_limit && frame + 1 >= o->watch_limit) return code;
                sleep_ms(o->interval_ms);
        }
}

struct find_agent {
        char *namespace, *name;
        int port;
        bool running;
};

/* kube_list_all's callback: keeps the node's agent pod (a Running one over others). Returns 0. */
static int agent_pod_cb(const json_t *pod, void *userdata) {
        struct find_agent *a = userdata;
        const json_t *meta = json_object_get(pod, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
        bool running = phase && streq(phase, "Running");
        if (!ns || !name || (a->name && (a->running || !running))) return 0;
        free(a->namespace);
        free(a->name);
        a->namespace = xstrdup(ns);
        a->name = xstrdup(name);
        a->running = running;
        a->port = 9400;
        size_t i, j;
        const json_t *c, *p;
        json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, c)
                json_array_foreach(json_object_get(c, "ports"), j, p) {
                const char *pn = json_string_value(json_object_get(p, "name"));
                json_int_t port = json_integer_value(json_object_get(p, "containerPort"));
                if (pn && streq(pn, "metrics") && port > 0 && port < 65536) a->port = (int)port;
        }
        return 0;
}

/* `cluster check NODE`: the agent's report through the pod proxy, rendered as `gpunode check` does. Returns the exit
 * code. */
static int run_check_node(const struct cluster_options *o, const char *node) {
        _cleanup_kube_client_ struct kube_client *kube = NULL;
        int code = open_client(o, &kube);
        if (code) return code;
        _cleanup_free_ char *fs = xasprintf("spec.nodeName=%s", node), *err = NULL;
        _cleanup_free_ char *path =
                o->namespace ? xasprintf("/api/v1/namespaces/%s/pods", o->namespace) : xstrdup("/api/v1/pods");
        struct kube_list_request req = { .path = path,
                                         .label_selector = "app.kubernetes.io/name=gpunode",
                                         .field_selector = fs };
        struct find_agent a = { 0 };
        int r = kube_list_all(kube, &req, agent_pod_cb, &a, NULL, &err);
        if (r < 0) return api_failure("cannot find the node's agent pod", r, err);
        _cleanup_free_ char *ans = a.namespace, *aname = a.name;
        if (!aname) {
                fprintf_escaped(stderr,
                                "gpunode cluster: no gpunode agent pod on node %s (pods labelled "
                                "app.kubernetes.io/name=gpunode%s%s): is the node's name right, and does the DaemonSet "
                                "cover it?\n",
                                node, o->namespace ? " in namespace " : "", o->namespace ? o->namespace : "");
                return EXIT_API;
        }
        _cleanup_free_ char *ens = kube_query_escape(ans), *epod = kube_query_escape(aname);
        _cleanup_free_ char *proxy = xasprintf("/api/v1/namespaces/%s/pods/%s:%d/proxy/report", ens, epod, a.port);
        json_t *doc = NULL;
        free(err);
        err = NULL;
        r = kube_get(kube, proxy, &doc, &err);
        if (r < 0) {
                if (err && strstr(err, "error trying to reach"))
                        fprintf_escaped(stderr, "gpunode cluster: agent %s/%s does not answer on port %d (%s)\n", ans,
                                        aname, a.port, a.running ? "Running, but not listening" : "not Running");
                else if (err && strstr(err, "HTTP 503"))
                        fprintf_escaped(stderr,
                                        "gpunode cluster: agent %s/%s has no report yet (its first diagnosis runs)\n",
                                        ans, aname);
                return api_failure("cannot fetch the agent's report", r, err);
        }
        if (o->json) {
                int rc = json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
                const char *v = json_string_value(json_object_get(doc, "verdict"));
                int vc = !v ? EXIT_API : streq(v, "healthy") ? 0 : streq(v, "degraded") ? 1 : 2;
                json_decref(doc);
                if (rc < 0 || fputc('\n', stdout) == EOF) return EXIT_INTERNAL;
                return vc;
        }
        struct report rep;
        free(err);
        err = NULL;
        r = report_from_json(doc, &rep, &err);
        json_decref(doc);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode cluster: agent %s/%s answered something else than its report: %s\n",
                                ans, aname, err);
                return EXIT_API;
        }
        struct text_options to = { .color = o->color, .verbose = o->verbose };
        r = output_text(stdout, &rep, &to);
        /* How old the agent's diagnosis is: the report says when its facts were read. */
        if (rep.time > 0) {
                char when[RFC3339_MAX];
                int64_t age = (int64_t)time(NULL) - rep.time;
                if (age >= 0)
                        fprintf_escaped(stderr, "gpunode cluster: agent %s/%s checked at %s (%" PRId64 " s ago)\n", ans,
                                        aname, rfc3339_format(rep.time, when), age);
                else
                        fprintf_escaped(stderr,
                                        "gpunode cluster: agent %s/%s checked at %s, %" PRId64
                                        " s ahead of this clock (one of the two clocks is wrong)\n",
                                        ans, aname, rfc3339_format(rep.time, when), -age);
        }
        code = r < 0 ? EXIT_INTERNAL : verdict_exit_code(rep.verdict);
        report_read_free(&rep);
        return code;
}

/* What `gpunode cluster` was asked: the view, a node's report, or the list of checks. */
struct cluster_args {
        struct command_args base;
        struct cluster_options o;
        const char *check_node; /* `cluster check NODE` */
        bool list_checks;       /* --list-checks: the options after it are not read */
};

/* Parses a duration option (getopt code c: --interval, --timeout, --stale-after) into o. Returns 0, or
 * -EINVAL after saying on stderr what is wrong. */
static int cluster_duration(int c, const char *arg, struct cluster_options *o) {
        uint64_t v;
        if (parse_duration_ms(arg, c == OPT_INTERVAL ? 100 : 1, 7 * 24 * 3600 * 1000ull, &v) < 0) {
                fprintf_escaped(stderr,
                                "gpunode cluster: --%s takes a duration (\"10s\", \"500ms\", \"15m\"), not '%s'\n",
                                c == OPT_INTERVAL ? "interval"
                                : c == OPT_STALE  ? "stale-after"
                                                  : "timeout",
                                arg);
                return -EINVAL;
        }
        if (c == OPT_INTERVAL)
                o->interval_ms = v;
        else if (c == OPT_STALE)
                o->stale_ms = v;
        else
                o->timeout_ms = v > 600000 ? 600000 : v;
        return 0;
}

/* Parses a number option (getopt code c: --chunk-size, --watch-limit) into o. Returns 0, or -EINVAL
 * after saying on stderr what is wrong. */
static int cluster_number(int c, const char *arg, struct cluster_options *o) {
        uint64_t v;
        if (parse_u64(arg, 10, &v) < 0 || v < 1 || v > (c == OPT_CHUNK ? 10000 : 1000000)) {
                fprintf_escaped(stderr, "gpunode cluster: --%s takes a number (%s), not '%s'\n",
                                c == OPT_CHUNK ? "chunk-size" : "watch-limit",
                                c == OPT_CHUNK ? "1..10000" : "1..1000000", arg);
                return -EINVAL;
        }
        if (c == OPT_CHUNK)
                o->chunk = (unsigned)v;
        else
                o->watch_limit = (unsigned long)v;
        return 0;
}

/* Applies one option (getopt code c, its argument arg) to o. Returns 0, or -EINVAL after saying on
 * stderr what is wrong (getopt has said it for an unknown option). */
static int cluster_option(int c, const char *arg, struct cluster_options *o) {
        switch (c) {
        case OPT_KUBECONFIG: o->kubeconfig = arg; return 0;
        case OPT_CONTEXT: o->context = arg; return 0;
        case 'o':
        case OPT_OUTPUT:
                if (streq(arg, "json"))
                        o->json = true;
                else if (streq(arg, "text"))
                        o->json = false;
                else {
                        fprintf_escaped(stderr, "gpunode cluster: --output must be text or json, not '%s'\n", arg);
                        return -EINVAL;
                }
                return 0;
        case 'w':
        case OPT_WATCH: o->watch = true; return 0;
        case OPT_INTERVAL:
        case OPT_CTIMEOUT:
        case OPT_STALE: return cluster_duration(c, arg, o);
        case OPT_WATCH_LIMIT:
        case OPT_CHUNK: return cluster_number(c, arg, o);
        case OPT_ALL_NODES: o->all_nodes = true; return 0;
        case OPT_ONLY:
                if (streq(arg, "failing"))
                        o->only = CHECK_FAIL;
                else if (streq(arg, "troubled"))
                        o->only = CHECK_WARN;
                else if (streq(arg, "all"))
                        o->only = CHECK_PASS;
                else {
                        fprintf_escaped(stderr, "gpunode cluster: --only must be failing, troubled or all, not '%s'\n",
                                        arg);
                        return -EINVAL;
                }
                return 0;
        case OPT_NAMESPACE: o->namespace = arg; return 0;
        case 'l':
        case OPT_SELECTOR:
                if (!*arg || strlen(arg) > 1024 || strpbrk(arg, "\t\r\n")) {
                        fprintf_escaped(stderr,
                                        "gpunode cluster: --selector must be a label selector (key=value, key!=value, "
                                        "key in (a,b), key, !key; comma-separated), not '%s'\n",
                                        arg);
                        return -EINVAL;
                }
                o->selector = arg;
                return 0;
        case OPT_VERBOSE: o->verbose = true; return 0;
        case OPT_NO_COLOR: o->color = false; return 0;
        default: return -EINVAL;
        }
}

/* Parses `gpunode cluster [OPTIONS] [check NODE]` (argv[0] "cluster", or the kubectl plugin's name
 * before "check"). Returns 0, or -EINVAL after saying on stderr what is wrong. */
static int parse_argv_cluster(int argc, char **argv, struct cluster_args *args) {
        static const struct option longopts[] = {
                { "kubeconfig", required_argument, NULL, OPT_KUBECONFIG },
                { "context", required_argument, NULL, OPT_CONTEXT },
                { "output", required_argument, NULL, OPT_OUTPUT },
                { "watch", no_argument, NULL, OPT_WATCH },
                { "interval", required_argument, NULL, OPT_INTERVAL },
                { "watch-limit", required_argument, NULL, OPT_WATCH_LIMIT },
                { "timeout", required_argument, NULL, OPT_CTIMEOUT },
                { "chunk-size", required_argument, NULL, OPT_CHUNK },
                { "stale-after", required_argument, NULL, OPT_STALE },
                { "all-nodes", no_argument, NULL, OPT_ALL_NODES },
                { "only", required_argument, NULL, OPT_ONLY },
                { "selector", required_argument, NULL, OPT_SELECTOR },
                { "namespace", required_argument, NULL, OPT_NAMESPACE },
                { "verbose", no_argument, NULL, OPT_VERBOSE },
                { "no-color", no_argument, NULL, OPT_NO_COLOR },
                { "list-checks", no_argument, NULL, OPT_LIST_CHECKS },
                { 0 },
        };
        args->o = (struct cluster_options){
                .interval_ms = 10000,
                .timeout_ms = CLUSTER_DEFAULT_TIMEOUT_MS,
                .stale_ms = CLUSTER_DEFAULT_STALE_S * 1000ull,
                .chunk = KUBE_LIST_LIMIT_DEFAULT,
                .only = CHECK_PASS,
                .color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR"),
        };
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "o:wl:", longopts, NULL)) != -1) {
                if (c == OPT_LIST_CHECKS) {
                        args->list_checks = true;
                        return 0;
                }
                if (cluster_option(c, optarg, &args->o) < 0) return -EINVAL;
        }
        if (optind < argc && streq(argv[optind], "check")) {
                if (optind + 2 != argc) {
                        fprintf(stderr, "gpunode cluster check: give one node name (options before it: "
                                        "gpunode cluster [--output json] check NODE)\n");
                        return -EINVAL;
                }
                if (args->o.watch) {
                        fprintf(stderr, "gpunode cluster check: --watch is for the cluster view\n");
                        return -EINVAL;
                }
                args->check_node = argv[optind + 1];
                return 0;
        }
        if (optind < argc) {
                fprintf_escaped(stderr, "gpunode cluster: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        return 0;
}

/* Runs `gpunode cluster`: the list of checks, a node's report, or the cluster view. Returns the exit code. */
static int run_cluster(struct cluster_args *args) {
        if (args->list_checks) {
                size_t n;
                const struct cl_check_def *const *defs = cluster_checks(&n);
                for (size_t i = 0; i < n; i++) printf("%-34s %s\n", defs[i]->id, defs[i]->title);
                return 0;
        }
        if (args->check_node) return run_check_node(&args->o, args->check_node);
        return show_cluster(&args->o);
}

DEFINE_COMMAND_STEPS(cluster)

/* `gpunode cluster`: its entry in the command table. */
const struct command command_cluster = {
        .name = "cluster",
        COMMAND_STEPS(cluster),
        .summary = "is every GPU node ready for work, and if not, why (six categories, bottom-up)",
        .usage = "[OPTIONS] [check NODE]",
        .options =
                "  --kubeconfig FILE     credentials as kubectl finds them (default $KUBECONFIG, ~/.kube/config, "
                "in-cluster)\n"
                "  --context NAME        the kubeconfig context (default current-context)\n"
                "  --output FORMAT       text or json (the gpunode.cluster/v1 document; default text)\n"
                "  --watch               read the cluster again every --interval and redraw when it changed\n"
                "  --interval DURATION   --watch's period (default 10s)\n"
                "  --watch-limit N       stop after N passes of --watch\n"
                "  --timeout DURATION    bound on each API request (default 30s)\n"
                "  --chunk-size N        items per list page (limit/continue; default 500, as kubectl)\n"
                "  --stale-after DURATION  agent conditions older than this are stale (default 15m)\n"
                "  --all-nodes           one line per GPU node also past 50 nodes (else only troubled ones), and\n"
                "                        none grouped (else 4 or more nodes with one root cause share a line)\n"
                "  --only WHICH          the node table's rows: failing, troubled (failing or warning) or all\n"
                "  -l, --selector SEL    only the nodes this label selector matches (as kubectl get nodes -l)\n"
                "  --verbose             evidence of passing checks too\n"
                "  --no-color            no colours (NO_COLOR is honoured too)\n"
                "  --list-checks         print every check's id and what it verifies, and exit\n"
                "  check NODE            the node's current report from its agent, through the API server's pod proxy\n"
                "                        (/api/v1/namespaces/NS/pods/POD:PORT/proxy/report), shown as `gpunode check` "
                "does\n"
                "  --namespace NS        check: the agent's namespace (default: any)\n",
        .notes = "As a kubectl plugin (installed as kubectl-gpunode): kubectl gpunode cluster, kubectl gpunode check "
                 "NODE.\n"
                 "exit status: 0 healthy, 1 warnings, 2 failures, 64 usage error, 69 the cluster cannot be read (a "
                 "list\n"
                 "failed, part-way included: no partial verdict), 70 internal error, 77 permission denied (403)\n",
};
