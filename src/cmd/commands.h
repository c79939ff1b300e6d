/* commands.h: what a command is (entry point, summary, options help) and the exit codes they share. */
#pragma once

#include <stddef.h>

struct command {
        const char *name;
        int (*run)(int argc, char **argv); /* argv[0] is the command's name; returns the exit code */
        const char *summary;   /* one line for `gpunode --help` */
        const char *usage;     /* arguments after the command name */
        const char *options;   /* option lines for `gpunode CMD --help` */
};

/* Exit codes beyond a check's 0/1/2. */
#define EXIT_USAGE 64
#define EXIT_INTERNAL 70
#define EXIT_DATAERR 65      /* a snapshot that is refused (corrupt, hostile, too large) */

/* The commands, one per file in cmd/; main.c lists them. */
extern const struct command command_check, command_explain, command_exporter, command_collect, command_labels,
        command_agent, command_kube_call, command_cluster, command_device_plugin;
