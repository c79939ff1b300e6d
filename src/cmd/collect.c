/* collect.c: `gpunode collect`: probe with the recorder on, then archive everything read (redacted). */
#include "cmd/commands.h"
#include "facts/node.h"
#include "facts/layer3_kubernetes.h"
#include "basic/hostfs.h"
#include "kube/kube_client.h"
#include "kube/net_replay.h"
#include "nvml/nvml_probe.h"
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

/* Returns the node name: --node, $NODE_NAME, then the host name under the root. */
static char *node_name(const char *flag, const struct node_facts *facts) {
        if (flag && *flag) return xstrdup(flag);
        const char *env = getenv("NODE_NAME");
        if (env && *env) return xstrdup(env);
        return xstrdup(facts->hostname ? facts->hostname : "unknown");
}

int cmd_collect(int argc, char **argv) {
        static const struct option longopts[] = {
                {"output", required_argument, NULL, 'o'},
                {"root", required_argument, NULL, 'r'},
                {"kmsg", required_argument, NULL, 'k'},
                {"nvml-library", required_argument, NULL, 'l'},
                {"nvml-timeout", required_argument, NULL, 't'},
                {"node", required_argument, NULL, 'n'},
                KUBE_PROBE_LONGOPTS,
                {0},
        };
        const char *root = getenv("GPUNODE_ROOT"), *output = NULL, *node = NULL;
        struct probe_options popts = {.nvml_timeout_ms = 10000};
        /* Layers 3 and 4 as `gpunode check` asks them; every exchange is recorded (net_replay.h). */
        struct kube_probe_options kopts = {.timeout_ms = KUBE_DEFAULT_TIMEOUT_MS};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
                switch (c) {
                case 'o': output = optarg; break;
                case 'r': root = optarg; break;
                case 'k': popts.kmsg_file = optarg; break;
                case 'l': popts.nvml_library = optarg; break;
                case 't': {
                        uint64_t ms;
                        if (parse_u64(optarg, 10, &ms) < 0 || ms == 0 || ms > 600000) {
                                fprintf(stderr, "gpunode collect: --nvml-timeout must be 1..600000 ms, not '%s'\n", optarg);
                                return EXIT_USAGE;
                        }
                        popts.nvml_timeout_ms = (unsigned)ms;
                        break;
                }
                case 'n': node = optarg; break;
                default: {
                        /* --kubeconfig, --timeout, --operator-namespace, --dcgm-url, --node-exporter-url */
                        _cleanup_free_ char *error = NULL;
                        int k = kube_probe_option(c, optarg, &kopts, &error);
                        if (k < 0) {
                                fprintf(stderr, "gpunode collect: %s\n", error);
                                return EXIT_USAGE;
                        }
                        if (k == 0) return EXIT_USAGE;
                        break;
                }
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gpunode collect: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        if (!output) {
                fprintf(stderr, "gpunode collect: -o FILE is required (- for standard output)\n");
                return EXIT_USAGE;
        }
        if (!root || !*root) root = "/";
        int r = hostfs_init(root);
        if (r < 0) {
                fprintf(stderr, "gpunode collect: cannot open root %s: %s\n", root, strerror(-r));
                return EXIT_USAGE;
        }

        struct path_list paths = {0};
        struct node_facts facts;
        struct net_log *net = net_log_new();
        kopts.node_name = node;
        popts.kube = &kopts;
        hostfs_set_recorder(record, &paths);
        net_record_to(net);
        probe_all(&popts, &facts);
        net_record_to(NULL);
        net_log_set_options(net, facts.kube ? facts.kube->api.node_name : node, kopts.timeout_ms, kopts.operator_namespace,
                            kopts.dcgm_url, kopts.node_exporter_url);
        {
                /* Some checks read the host too (device nodes): judge once so their reads are recorded. */
                _cleanup_free_ char *report_node = node_name(node, &facts);
                struct report rep;
                report_build(&facts, report_node, root, &rep);
                report_free(&rep);
        }
        hostfs_set_recorder(NULL, NULL);

        int code = 0;
        _cleanup_free_ char *error = NULL, *name = node_name(node, &facts), *kmsg_error = NULL, *nvml_json = NULL;
        struct snapshot_writer *w = NULL;
        struct buf kmsg = {0};
        size_t redacted, unreadable, members = 0;
        r = snapshot_writer_open(output, &w, &error);
        if (r < 0) {
                fprintf(stderr, "gpunode collect: %s\n", error);
                code = EXIT_USAGE;
                goto out;
        }
        for (size_t i = 0; i < paths.n && r >= 0; i++) r = snapshot_add_host_path(w, paths.v[i]);

        int kr = read_kmsg(popts.kmsg_file, &kmsg, &kmsg_error);
        const char *kmsg_source = popts.kmsg_file ? popts.kmsg_file : "/dev/kmsg";
        if (r >= 0) r = snapshot_add_kmsg(w, kmsg_source, kr < 0 && kmsg.len == 0 ? NULL : kmsg.data, kmsg.len, kmsg_error);
        buf_free(&kmsg);

        if (facts.nvml.facts) nvml_facts_to_json(facts.nvml.facts, &nvml_json);
        if (r >= 0)
                r = snapshot_add_nvml(w, nvml_json, facts.nvml.library, facts.nvml.facts, facts.nvml.load_rc,
                                      facts.nvml.load_error);
        if (r >= 0) r = snapshot_add_net_log(w, net);
        if (r < 0) {
                fprintf(stderr, "gpunode collect: cannot write %s: %s\n", output, strerror(-r));
                snapshot_writer_abort(w);
                code = EXIT_INTERNAL;
                goto out;
        }
        snapshot_writer_counts(w, &redacted, &unreadable);
        r = snapshot_writer_finish(w, name, root, &members, &error);
        if (r < 0) {
                fprintf(stderr, "gpunode collect: %s\n", error);
                code = EXIT_INTERNAL;
                goto out;
        }
        fprintf(stderr, "gpunode collect: wrote %s: %zu members, %zu paths redacted, %zu unreadable, %zu API and metrics "
                        "exchanges (see MANIFEST.json)\n",
                output, members, redacted, unreadable, net->n);
out:
        for (size_t i = 0; i < paths.n; i++) free(paths.v[i]);
        free(paths.v);
        net_log_free(net);
        node_facts_free(&facts);
        hostfs_done();
        return code;
}
