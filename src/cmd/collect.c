/* collect.c: `gpunode collect`: probe with the recorder on, then archive everything read (redacted). */
#include "cmd/commands.h"
#include "cmd/options.h"
#include "facts/node.h"
#include "facts/layer3_kubernetes.h"
#include "basic/hostfs.h"
#include "kube/kube_client.h"
#include "kube/net_replay.h"
#include "nvml/nvml_facts_json.h"
#include "output/output.h"
#include "snapshot/snapshot.h"

#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>

/* The kernel log kept in a snapshot: its last this many bytes. */
#define KMSG_KEEP_MAX (SNAPSHOT_MEMBER_MAX - 1)

/* The paths the probes read, in order, duplicates dropped later by the writer. */
struct path_list {
        char **v;
        size_t n;
};

/* Recorder: keeps each host path read. */
static void record(const char *path, void *userdata) {
        struct path_list *l = userdata;
        l->v = xrealloc(l->v, (l->n + 1) * sizeof *l->v);
        l->v[l->n++] = xstrdup(path);
}

/* Appends the last KMSG_KEEP_MAX bytes seen to b (dropping older ones). Returns nothing. */
static void keep_tail(struct buf *b, const char *data, size_t n) {
        buf_append(b, data, n);
        if (b->len > KMSG_KEEP_MAX) {
                size_t drop = b->len - KMSG_KEEP_MAX;
                memmove(b->data, b->data + drop, b->len - drop + 1);
                b->len -= drop;
        }
}

/* Reads the kernel log as the probe did: the --kmsg file, or /dev/kmsg under the root (records as
 * text lines). Returns 0 and the text in *ret, or -errno with a sentence in *ret_error. */
static int read_kmsg(const char *file, struct buf *ret, char **ret_error) {
        int fd;
        const char *source = file ? file : "/dev/kmsg";
        if (file) {
                fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
                if (fd < 0) fd = -errno;
        } else {
                fd = hostfs_open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
        }
        if (fd < 0) {
                *ret_error = read_error(source, fd);
                return fd;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode))) {
                close(fd);
                *ret_error = xasprintf("%s: not a regular file or the kmsg device", source);
                return -EINVAL;
        }
        bool records = S_ISCHR(st.st_mode);
        char chunk[16384];
        int r = 0;
        for (;;) {
                ssize_t n = read(fd, chunk, sizeof chunk);
                if (n < 0) {
                        if (errno == EINTR) continue;
                        if (records && errno == EPIPE) continue; /* records overwritten: go on */
                        if (records && errno == EAGAIN) break;   /* the end of the buffer */
                        r = -errno;
                        *ret_error = read_error(source, r);
                        break;
                }
                if (n == 0) break;
                keep_tail(ret, chunk, (size_t)n);
                if (records && chunk[n - 1] != '\n') keep_tail(ret, "\n", 1);
        }
        close(fd);
        if (!ret->data) buf_append(ret, "", 0);
        return r;
}

/* What `gpunode collect` was asked: the archive to write and the probes' options. */
struct collect_args {
        struct command_args base;
        struct shared_options so;
        const char *output; /* -o FILE, "-" for standard output */
};

/* Parses `gpunode collect -o FILE [OPTIONS]` (argv[0] "collect"). Returns 0, or -EINVAL after saying on
 * stderr what is wrong. */
static int parse_argv_collect(int argc, char **argv, struct collect_args *args) {
        static const struct option longopts[] = {
                { "output", required_argument, NULL, 'o' },
                OPTION_ROOT,
                OPTION_KMSG,
                OPTION_NVML_LIBRARY,
                OPTION_NVML_TIMEOUT,
                OPTION_NODE,
                OPTIONS_KUBE,
                { 0 },
        };
        /* Layers 3 and 4 as `gpunode check` asks them; every exchange is recorded (net_replay.h). */
        shared_options_init(&args->so);
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
                if (c == 'o') {
                        args->output = optarg;
                        continue;
                }
                _cleanup_free_ char *error = NULL;
                int k = shared_option(c, optarg, &args->so, &error);
                if (k < 0) fprintf_escaped(stderr, "gpunode collect: %s\n", error);
                if (k <= 0) return -EINVAL;
        }
        if (optind < argc) {
                fprintf_escaped(stderr, "gpunode collect: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        if (!args->output) {
                fprintf(stderr, "gpunode collect: -o FILE is required (- for standard output)\n");
                return -EINVAL;
        }
        args->base.root = args->so.root;
        return 0;
}

/* Adds the archive's members to w: the host paths read, the kernel log (kmsg_file, else /dev/kmsg under
 * the root), NVML's answers, the API and metrics exchanges. Returns 0 or -errno. */
static int add_members(struct snapshot_writer *w, const struct path_list *paths, const char *kmsg_file,
                       const struct node_facts *facts, const struct net_log *net) {
        int r = 0;
        for (size_t i = 0; i < paths->n && r >= 0; i++) r = snapshot_add_host_path(w, paths->v[i]);

        _cleanup_free_ char *kmsg_error = NULL, *nvml_json = NULL;
        struct buf kmsg = { 0 };
        int kr = read_kmsg(kmsg_file, &kmsg, &kmsg_error);
        const char *kmsg_source = kmsg_file ? kmsg_file : "/dev/kmsg";
        if (r >= 0)
                r = snapshot_add_kmsg(w, kmsg_source, kr < 0 && kmsg.len == 0 ? NULL : kmsg.data, kmsg.len, kmsg_error);
        buf_free(&kmsg);

        if (facts->nvml.facts) nvml_facts_to_json(facts->nvml.facts, &nvml_json);
        if (r >= 0)
                r = snapshot_add_nvml(w, nvml_json, facts->nvml.library, facts->nvml.facts, facts->nvml.load_rc,
                                      facts->nvml.load_error);
        if (r >= 0) r = snapshot_add_net_log(w, net);
        return r;
}

/* Writes the archive of what the probes read to output, says what it holds on stderr. Returns 0,
 * EXIT_USAGE when output cannot be created, EXIT_INTERNAL when it cannot be written. */
static int write_archive(const char *output, const char *root, const char *name, const struct path_list *paths,
                         const char *kmsg_file, const struct node_facts *facts, const struct net_log *net) {
        _cleanup_free_ char *error = NULL;
        struct snapshot_writer *w = NULL;
        size_t redacted, unreadable, members = 0;
        int r = snapshot_writer_open(output, &w, &error);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode collect: %s\n", error);
                return EXIT_USAGE;
        }
        r = add_members(w, paths, kmsg_file, facts, net);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode collect: cannot write %s: %s\n", output, strerror(-r));
                snapshot_writer_abort(w);
                return EXIT_INTERNAL;
        }
        snapshot_writer_counts(w, &redacted, &unreadable);
        r = snapshot_writer_finish(w, name, root, &members, &error);
        if (r < 0) {
                fprintf_escaped(stderr, "gpunode collect: %s\n", error);
                return EXIT_INTERNAL;
        }
        fprintf_escaped(stderr,
                        "gpunode collect: wrote %s: %zu members, %zu paths redacted, %zu unreadable, %zu API and "
                        "metrics exchanges (see MANIFEST.json)\n",
                        output, members, redacted, unreadable, net->n);
        return 0;
}

/* Runs `gpunode collect` (the root opened by main.c): probes with the recorders on, then archives
 * everything read. Returns the exit code. */
static int run_collect(struct collect_args *args) {
        struct path_list paths = { 0 };
        struct node_facts facts;
        struct net_log *net = net_log_new();
        _cleanup_free_ char *name = node_name_resolve(args->so.node);
        struct kube_probe_options kopts = args->so.kube;
        struct probe_options popts = args->so.probe;
        kopts.node_name = name;
        popts.kube = &kopts;
        hostfs_set_recorder(record, &paths);
        net_record_to(net);
        probe_all(&popts, &facts);
        net_record_to(NULL);
        net_log_set_options(net, name, kopts.timeout_ms, kopts.operator_namespace, kopts.dcgm_url,
                            kopts.node_exporter_url);
        hostfs_set_recorder(NULL, NULL);

        int code = write_archive(args->output, args->so.root, name, &paths, popts.kmsg_file, &facts, net);
        for (size_t i = 0; i < paths.n; i++) free(paths.v[i]);
        free(paths.v);
        net_log_free(net);
        node_facts_free(&facts);
        return code;
}

DEFINE_COMMAND_STEPS(collect)

/* `gpunode collect`: its entry in the command table, with the help text generated from it. */
const struct command command_collect = {
        .name = "collect",
        COMMAND_STEPS(collect),
        .needs_root = true,
        .summary = "archive everything the probes read (secrets redacted) for check --snapshot",
        .usage = "-o FILE [OPTIONS]",
        .options = "  -o, --output FILE     the archive to write (gzip tar; - for standard output)\n",
        .shared = SHARED_OPT_ROOT | SHARED_OPT_KMSG | SHARED_OPTS_NVML | SHARED_OPT_NODE | SHARED_OPTS_KUBE,
        .notes = "every API and metrics answer is recorded, and check --snapshot replays them;\n"
                 "the archive holds root/ (host files as read), kmsg, nvml.json, api/ (INDEX.json and the answers)\n"
                 "and MANIFEST.json (members, sizes, sha256, what was redacted and why, what could not be read)\n",
};
