/* commands.h: what a command is (its steps, summary, options help, flags) and the exit codes they share. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* What main.c reads of a two-step command's parsed options: each command's own struct (struct check_args, ...)
 * holds this as its member `base`, so that main.c can open the root between the two steps. */
struct command_args {
        const char *root; /* for .needs_root: the root main.c opens (--root, else $GPUNODE_ROOT, else "/"); NULL: the
                           * command opens its own (check --snapshot) or none */
};

/* The entry of one command in main.c's table. A command has either one step, .run (parses and works:
 * agent, exporter, device-plugin), or two, as systemd's tools: .parse_argv fills the command's options
 * (COMMAND_STEPS), main.c opens the root when .needs_root says so, .run_args does the work. */
struct command {
        const char *name;
        int (*run)(int argc, char **argv); /* one step: argv[0] is the command's name; returns the exit code */
        size_t args_size;                  /* two steps: the size of the command's options struct */
        /* Parses argv (argv[0] the command's name) into zeroed args. Returns 0, or -EINVAL after saying on stderr
         * what is wrong (main.c exits EXIT_USAGE). */
        int (*parse_argv)(int argc, char **argv, struct command_args *args);
        int (*run_args)(struct command_args *args); /* the work; returns the exit code */
        bool needs_root;     /* two steps: main.c runs hostfs_init(args->root) before .run_args, hostfs_done() after */
        bool hidden;         /* left out of `gpunode --help` (kube-call: the agent's child); still runnable */
        const char *summary; /* one line for `gpunode --help` */
        const char *usage;   /* arguments after the command name */
        const char *options; /* option lines for `gpunode CMD --help` */
        unsigned shared;     /* SHARED_OPT_* bits (options.h): the shared options' lines appended to .options */
        const char *notes;   /* lines after every option (exit status, ...), or NULL */
};

/* The command's options struct (struct NAME_args) from its base. */
#define COMMAND_ARGS(name, base_ptr) ((struct name##_args *)((char *)(base_ptr)-offsetof(struct name##_args, base)))

/* Defines the two adapters that .parse_argv and .run_args point to, from the typed steps
 * `static int parse_argv_NAME(int argc, char **argv, struct NAME_args *args)` and
 * `static int run_NAME(struct NAME_args *args)`; COMMAND_STEPS(NAME) fills the entry's fields. */
#define DEFINE_COMMAND_STEPS(name)                                                                                     \
        static int name##_parse_step(int argc, char **argv, struct command_args *a) {                                  \
                return parse_argv_##name(argc, argv, COMMAND_ARGS(name, a));                                           \
        }                                                                                                              \
        static int name##_run_step(struct command_args *a) {                                                           \
                return run_##name(COMMAND_ARGS(name, a));                                                              \
        }
#define COMMAND_STEPS(name)                                                                                            \
        .args_size = sizeof(struct name##_args), .parse_argv = name##_parse_step, .run_args = name##_run_step

/* Exit codes beyond a check's 0/1/2. */
#define EXIT_USAGE    64
#define EXIT_INTERNAL 70
#define EXIT_DATAERR  65 /* a snapshot that is refused (corrupt, hostile, too large) */

/* The commands, one per file in cmd/; main.c lists them. */
extern const struct command command_check, command_explain, command_exporter, command_collect, command_labels,
        command_agent, command_kube_call, command_cluster, command_device_plugin, command_validate;
