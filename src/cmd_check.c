/* cmd_check.c: `gpunode check`: probe, judge, attribute, render. */
#include "commands.h"
#include "facts.h"
#include "hostfs.h"
#include "output.h"

#include "nvml_probe.h"

#include <getopt.h>

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
                {0},
        };
        const char *root = getenv("GPUNODE_ROOT");
        const char *node = NULL, *record_file = NULL, *nvml_file = NULL;
        enum output_format format = FORMAT_TEXT;
        struct probe_options popts = {.nvml_timeout_ms = 10000};
        struct text_options topts = {.color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR")};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "o:v", longopts, NULL)) != -1) {
                switch (c) {
                case 'r': root = optarg; break;
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
                default: return EXIT_USAGE;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gpunode check: unexpected argument '%s'\n", argv[optind]);
                return EXIT_USAGE;
        }
        if (!root || !*root) root = "/";
        int r = hostfs_init(root);
        if (r < 0) {
                fprintf(stderr, "gpunode check: cannot open root %s: %s\n", root, strerror(-r));
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
        report_build(&facts, name, root, &rep);
        switch (format) {
        case FORMAT_TEXT: r = output_text(stdout, &rep, &topts); break;
        case FORMAT_JSON: r = output_json(stdout, &rep); break;
        case FORMAT_PROMETHEUS: r = output_prometheus(stdout, &rep); break;
        }
        int code = r < 0 ? EXIT_INTERNAL : verdict_exit_code(rep.verdict);
        report_free(&rep);
        node_facts_free(&facts);
        hostfs_done();
        return code;
}
