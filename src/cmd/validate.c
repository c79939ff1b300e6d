/* validate.c: `gpunode validate`: active GPU tests through the CUDA driver API; text, JSON or Prometheus; exit by
 * verdict. */
#include "cmd/commands.h"
#include "cmd/options.h"
#include "basic/util.h"
#include "validate/validate.h"

#include <getopt.h>
#include <stdio.h>
#include <unistd.h>

#define MAX_GPU_SELECTORS 64

enum { OPT_LEVEL = 0x200, OPT_GPU, OPT_OUTPUT, OPT_CUDA_LIBRARY, OPT_FORCE };

struct validate_args {
        struct command_args base;
        struct shared_options so;
        enum validate_level level;
        const char *gpus[MAX_GPU_SELECTORS];
        size_t n_gpus;
        const char *output; /* text, json, prometheus */
        const char *cuda_library;
        uint64_t timeout_ms;
        bool force;
};

/* Parses argv into args. Returns 0, or -EINVAL after saying on stderr which option is wrong. */
static int parse_argv_validate(int argc, char **argv, struct validate_args *args) {
        static const struct option longopts[] = {
                { "level", required_argument, NULL, OPT_LEVEL },
                { "gpu", required_argument, NULL, OPT_GPU },
                { "output", required_argument, NULL, OPT_OUTPUT },
                { "cuda-library", required_argument, NULL, OPT_CUDA_LIBRARY },
                { "timeout", required_argument, NULL, OPT_TIMEOUT },
                { "force", no_argument, NULL, OPT_FORCE },
                OPTION_ROOT,
                OPTION_NODE,
                OPTION_NVML_LIBRARY,
                { 0 },
        };
        shared_options_init(&args->so);
        args->level = VALIDATE_QUICK;
        args->output = "text";
        args->timeout_ms = 60000;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                switch (c) {
                case OPT_LEVEL:
                        if (validate_level_parse(optarg, &args->level) < 0) {
                                fprintf_escaped(stderr, "gpunode validate: --level %s: not quick, standard or long\n",
                                                optarg);
                                return -EINVAL;
                        }
                        continue;
                case OPT_GPU:
                        if (!*optarg) {
                                fprintf(stderr, "gpunode validate: --gpu needs an index or a UUID\n");
                                return -EINVAL;
                        }
                        if (args->n_gpus >= MAX_GPU_SELECTORS) {
                                fprintf(stderr, "gpunode validate: more than %d --gpu options\n", MAX_GPU_SELECTORS);
                                return -EINVAL;
                        }
                        args->gpus[args->n_gpus++] = optarg;
                        continue;
                case OPT_OUTPUT:
                        if (!streq(optarg, "text") && !streq(optarg, "json") && !streq(optarg, "prometheus")) {
                                fprintf_escaped(stderr, "gpunode validate: --output %s: not text, json or prometheus\n",
                                                optarg);
                                return -EINVAL;
                        }
                        args->output = optarg;
                        continue;
                case OPT_CUDA_LIBRARY:
                        if (!*optarg) {
                                fprintf(stderr, "gpunode validate: --cuda-library needs a path\n");
                                return -EINVAL;
                        }
                        args->cuda_library = optarg;
                        continue;
                case OPT_TIMEOUT:
                        if (parse_duration_ms(optarg, 1000, 24ull * 3600 * 1000, &args->timeout_ms) < 0) {
                                fprintf_escaped(stderr,
                                                "gpunode validate: --timeout %s: not a duration between 1s and 24h "
                                                "(60, 90s, 5m)\n",
                                                optarg);
                                return -EINVAL;
                        }
                        continue;
                case OPT_FORCE: args->force = true; continue;
                default: break;
                }
                _cleanup_free_ char *error = NULL;
                int k = shared_option(c, optarg, &args->so, &error);
                if (k < 0) fprintf_escaped(stderr, "gpunode validate: %s\n", error);
                if (k <= 0) return -EINVAL;
        }
        if (optind < argc) {
                fprintf_escaped(stderr, "gpunode validate: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        args->base.root = args->so.root;
        return 0;
}

/* Writes one progress line to stderr. */
static void progress_line(void *userdata, const char *line) {
        fprintf_escaped(stderr, "%s\n", line);
}

/* Runs the validation and writes the report. Returns the exit code; when a worker hangs inside the driver,
 * leaves with _exit() after the report (the stuck thread cannot be joined, and the driver's exit handlers
 * could wait on it). */
static int run_validate(struct validate_args *args) {
        _cleanup_free_ char *node = node_name_resolve(args->so.node);
        unsigned scale = 1;
        const char *s = getenv("GPUNODE_VALIDATE_TEST_SCALE");
        uint64_t v;
        if (s && *s && parse_u64(s, 10, &v) == 0 && v >= 1 && v <= 100000) scale = (unsigned)v;
        struct validate_options o = {
                .level = args->level,
                .gpus = args->gpus,
                .n_gpus = args->n_gpus,
                .cuda_library = args->cuda_library,
                .nvml_library = args->so.probe.nvml_library,
                .node = node,
                .timeout_ms = args->timeout_ms,
                .force = args->force,
                .scale = scale,
                .progress = progress_line,
        };
        if (!streq(args->output, "prometheus") || isatty(STDERR_FILENO))
                fprintf_escaped(stderr, "gpunode validate: level %s on %s (stress %.1f s)\n",
                                validate_level_name(o.level), node, (double)validate_stress_seconds(o.level) / scale);
        struct validate_result res;
        int code = validate_run(&o, &res);
        if (streq(args->output, "json")) {
                if (json_dumpf(res.report, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0) code = EXIT_INTERNAL;
                fputc('\n', stdout);
        } else {
                _cleanup_free_ char *text = streq(args->output, "prometheus") ? validate_render_prometheus(res.report)
                                                                              : validate_render_text(res.report);
                fputs(text, stdout);
        }
        if (code == VALIDATE_EXIT_USAGE || code == VALIDATE_EXIT_UNAVAILABLE) {
                size_t i;
                json_t *e;
                json_array_foreach(json_object_get(res.report, "errors"), i, e) fprintf_escaped(
                        stderr, "gpunode validate: %s\n", json_string_value(json_object_get(e, "error")));
        }
        if (res.abandoned) {
                if (fflush(stdout) != 0 || ferror(stdout)) code = EXIT_INTERNAL;
                fflush(stderr);
                _exit(code);
        }
        json_decref(res.report);
        return code;
}

DEFINE_COMMAND_STEPS(validate)

const struct command command_validate = {
        .name = "validate",
        COMMAND_STEPS(validate),
        .needs_root = true,
        .summary = "active GPU tests through CUDA: memory, bandwidth, FMA, PCIe, P2P, stress",
        .usage = "[--level quick|standard|long] [--gpu INDEX|UUID ...] [OPTIONS]",
        .options =
                "  --level L             quick (default; stress 20 s), standard (3 min) or long (15 min, most of\n"
                "                        the free memory patterned)\n"
                "  --gpu INDEX|UUID      validate this GPU (repeatable; nvidia-smi's index); default every GPU\n"
                "  --output FORMAT       text (default), json (gpunode.validate/v1) or prometheus\n"
                "  --cuda-library PATH   load this file instead of libcuda.so.1 (else the linker's, then the\n"
                "                        root's driver folders)\n"
                "  --timeout DURATION    bound of one test on one GPU (default 60s; stress.sustained: its time\n"
                "                        plus this): a kernel or copy that hangs is reported, not waited on\n"
                "  --force               validate GPUs that run compute processes (validation needs the whole GPU)\n",
        .shared = SHARED_OPT_ROOT | SHARED_OPT_NODE | SHARED_OPT_NVML_LIBRARY,
        .notes = "\nProgress goes to standard error, one line per test. Exit status: 0 pass, 1 degraded (warnings,\n"
                 "a GPU refused), 2 fail, 64 usage, 69 cannot run (no libcuda, cuInit failing, no GPU), 70 internal.\n",
};
