/* main.c: gpunode's entry: the command table (each entry lives in its cmd/ file), --help generated from it, --version,
 * and the steps every command goes through: parse its options, open the host root, run. */
#include "cmd/commands.h"
#include "cmd/options.h"
#include "basic/hostfs.h"
#include "basic/util.h"

#include <stdio.h>

#ifndef GPUNODE_VERSION
#define GPUNODE_VERSION "0.0.0"
#endif

static const struct command *const commands[] = {
        &command_check, &command_explain,   &command_exporter, &command_collect,       &command_labels,
        &command_agent, &command_kube_call, &command_cluster,  &command_device_plugin, &command_validate,
};

/* Prints the options part of a command's help: its own options, the shared ones it takes (their text
 * is options.c's), its notes. */
static void command_options_help(const struct command *c) {
        fputs(c->options, stdout);
        for (unsigned bit = 1; bit && bit <= c->shared; bit <<= 1) {
                const char *help = c->shared & bit ? shared_option_help(bit) : NULL;
                if (help) fputs(help, stdout);
        }
        if (c->notes) fputs(c->notes, stdout);
}

/* Prints `gpunode CMD --help` from the command's entry. */
static void command_help(const struct command *c) {
        printf("usage: gpunode %s %s\n%s\n\n", c->name, c->usage, c->summary);
        command_options_help(c);
}

/* Prints the program help from the command table: every command not hidden, the column as wide as the
 * longest name. */
static void program_help(void) {
        int width = 0;
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (!commands[i]->hidden && (int)strlen(commands[i]->name) > width)
                        width = (int)strlen(commands[i]->name);
        printf("usage: gpunode [--version] [--help] COMMAND [ARGS]\n\n"
               "Diagnoses an NVIDIA GPU node in Kubernetes bottom-up: hardware enablement, container\n"
               "integration, Kubernetes resource exposure, observability.\n\ncommands:\n");
        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                if (!commands[i]->hidden) printf("  %-*s  %s\n", width, commands[i]->name, commands[i]->summary);
        printf("\n`gpunode COMMAND --help` describes a command's options.\n");
}

/* Runs command c on argv (argv[0] its name): its one step, or its two with the host root opened
 * between them when its entry says .needs_root. Returns the exit code: EXIT_USAGE for a usage error
 * or a root that cannot be opened, else the command's. */
static int command_run(const struct command *c, int argc, char **argv) {
        if (c->run) return c->run(argc, argv);
        _cleanup_free_ struct command_args *args = xcalloc(1, c->args_size);
        if (c->parse_argv(argc, argv, args) < 0) return EXIT_USAGE;
        bool root = c->needs_root && args->root;
        if (root) {
                int r = hostfs_init(args->root);
                if (r < 0) {
                        fprintf_escaped(stderr, "gpunode %s: cannot open root %s: %s\n", c->name, args->root,
                                        strerror(-r));
                        return EXIT_USAGE;
                }
        }
        int code = c->run_args(args);
        if (root) hostfs_done();
        return code;
}

/* Returns the exit code; a failed write to stdout is an error (exit 70), as in git. */
static int finish(int rc) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "gpunode: could not write to standard output\n");
                return EXIT_INTERNAL;
        }
        return rc;
}

/* As the kubectl plugin (argv[0] kubectl-gpunode): `kubectl gpunode cluster ...` and `kubectl gpunode check NODE`
 * (the node's report through the pod proxy: `gpunode cluster check NODE`). Returns the exit code. */
static int kubectl_plugin(int argc, char **argv) {
        const char *sub = argc > 1 ? argv[1] : "--help";
        if (streq(sub, "cluster")) return finish(command_run(&command_cluster, argc - 1, argv + 1));
        /* `gpunode cluster check NODE`: getopt permutes, so options after NODE are taken too */
        if (streq(sub, "check")) return finish(command_run(&command_cluster, argc, argv));
        if (streq(sub, "--version") || streq(sub, "version")) {
                printf("kubectl-gpunode (gpunode %s)\n", GPUNODE_VERSION);
                return finish(0);
        }
        bool help = streq(sub, "--help") || streq(sub, "-h") || streq(sub, "help");
        printf("usage: kubectl gpunode cluster [OPTIONS]   every GPU node's readiness, six categories\n"
               "       kubectl gpunode check NODE [--output json]   the node's report from its gpunode agent\n\n");
        command_options_help(&command_cluster);
        if (!help) fprintf_escaped(stderr, "kubectl gpunode: '%s' is not a command (cluster, check NODE)\n", sub);
        return finish(help ? 0 : EXIT_USAGE);
}

int main(int argc, char **argv) {
        const char *self = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
        self = self ? self + 1 : argc > 0 && argv[0] ? argv[0] : "";
        if (startswith(self, "kubectl-gpunode")) return kubectl_plugin(argc, argv);
        if (argc < 2) {
                program_help();
                return finish(EXIT_USAGE);
        }
        const char *name = argv[1];
        if (streq(name, "--help") || streq(name, "-h") || streq(name, "help")) {
                if (argc > 2)
                        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                                if (streq(argv[2], commands[i]->name)) {
                                        command_help(commands[i]);
                                        return finish(0);
                                }
                program_help();
                return finish(0);
        }
        if (streq(name, "--version") || streq(name, "version")) {
                printf("gpunode %s\n", GPUNODE_VERSION);
                return finish(0);
        }
        for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
                if (!streq(name, commands[i]->name)) continue;
                for (int a = 2; a < argc; a++)
                        if (streq(argv[a], "--help") || streq(argv[a], "-h")) {
                                command_help(commands[i]);
                                return finish(0);
                        }
                return finish(command_run(commands[i], argc - 1, argv + 1));
        }
        fprintf_escaped(stderr, "gpunode: '%s' is not a command; see gpunode --help\n", name);
        return EXIT_USAGE;
}
