/* commands.h: the command table: each command's entry point, summary and options help. */
#pragma once

#include <stddef.h>

struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *summary;   /* one line for `gpunode --help` */
        const char *usage;     /* arguments after the command name */
        const char *options;   /* option lines for `gpunode CMD --help` */
};

/* Returns the table and its length. */
const struct command *command_table(size_t *ret_n);
/* Prints `gpunode CMD --help` from the table to stdout. */
void command_help(const struct command *c);

/* Exit codes beyond a check's 0/1/2. */
#define EXIT_USAGE 64
#define EXIT_INTERNAL 70
#define EXIT_DATAERR 65      /* a snapshot that is refused (corrupt, hostile, too large) */

int cmd_check(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_exporter(int argc, char **argv);
int cmd_collect(int argc, char **argv);
int cmd_labels(int argc, char **argv);
