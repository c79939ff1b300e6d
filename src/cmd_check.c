/* cmd_check.c: `gpunode check`: probe, judge, attribute, render. */
#include "commands.h"
#include "facts.h"
#include "hostfs.h"
#include "output.h"

#include <getopt.h>

enum output_format { FORMAT_TEXT, FORMAT_JSON, FORMAT_PROMETHEUS };

/* Returns the node name: --node, $NODE_NAME, then the host name under the root. */
static char *node_name(const char *flag, const struct node_facts *facts) {
        if (flag && *flag) return xstrdup(flag);
        const char *env = getenv("NODE_NAME");
        if (env && *env) return xstrdup(env);
        return xstrdup(facts->hostname ? facts->hostname : "unknown");
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
                {0},
        };
        const char *root = getenv("GPUNODE_ROOT");
        const char *node = NULL;
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

        struct node_facts facts;
        probe_all(&popts, &facts);
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
