/* explain.c: `gpunode explain`: the symptom table and every check, from the check registry. */
#include "engine/check.h"
#include "diagnose/registry.h"
#include "cmd/commands.h"
#include "diagnose/symptoms.h"

#include <strings.h>

/* Prints one check's full explanation. */
static void explain_check(const struct check_def *d) {
        printf("%s  (layer %d %s, component %s)\n", d->id, d->layer, layer_name(d->layer), d->component);
        printf("  verifies: %s\n", d->title);
        printf("  reads:    %s\n", d->reads);
        printf("  outcomes: %s\n", d->outcomes);
        if (d->remedy) printf("  remedy:   %s\n", d->remedy);
        if (d->depends[0]) {
                printf("  rests on:");
                for (size_t i = 0; i < CHECK_MAX_DEPS && d->depends[i]; i++) printf(" %s", d->depends[i]);
                printf(" (when one of those fails, this check is reported as blocked by it)\n");
        }
        size_t n;
        const struct symptom *s = symptom_table(&n);
        for (size_t i = 0; i < n; i++)
                for (size_t c = 0; c < SYMPTOM_MAX_CHECKS && s[i].checks[c]; c++)
                        if (streq(s[i].checks[c], d->id)) printf("  symptom:  %s\n", s[i].symptom);
}

/* Prints one row of the symptom table: the symptom, where to look first, its checks. */
static void explain_symptom(const struct symptom *s) {
        printf("Layer %d  %s\n  look first: %s\n  checks:", s->layer, s->symptom, s->look_first);
        for (size_t c = 0; c < SYMPTOM_MAX_CHECKS && s->checks[c]; c++) printf(" %s", s->checks[c]);
        printf("\n\n");
}

/* Prints the whole table: symptoms, then checks layer by layer. */
static void explain_all(void) {
        size_t n;
        const struct symptom *s = symptom_table(&n);
        printf("Symptoms, bottom-up (a symptom high up is usually caused lower down: check layer 1 first)\n\n");
        for (size_t i = 0; i < n; i++) explain_symptom(&s[i]);
        size_t nc;
        const struct check_def *const *all = check_registry(&nc);
        for (int layer = LAYER_MIN; layer <= LAYER_MAX; layer++) {
                printf("Layer %d  %s\n", layer, layer_name(layer));
                for (size_t i = 0; i < nc; i++)
                        if (all[i]->layer == layer) printf("  %-34s %s\n", all[i]->id, all[i]->title);
                printf("\n");
        }
        printf("`gpunode explain CHECK-ID` says what a check reads and what its outcomes mean.\n");
}

/* What `gpunode explain` was asked: one check id or text, or everything. */
struct explain_args {
        struct command_args base;
        const char *arg; /* NULL: the whole table */
};

/* Parses `gpunode explain [CHECK-ID | TEXT]` (argv[0] "explain"). Returns 0, or -EINVAL after saying
 * so on stderr when more than one argument is given. */
static int parse_argv_explain(int argc, char **argv, struct explain_args *args) {
        if (argc > 2) {
                fprintf(stderr, "gpunode explain: give one check id or one quoted text\n");
                return -EINVAL;
        }
        args->arg = argc > 1 ? argv[1] : NULL;
        return 0;
}

/* Prints the symptoms and checks whose words contain arg. Returns how many matched. */
static size_t explain_matches(const char *arg) {
        size_t matches = 0, n;
        const struct symptom *s = symptom_table(&n);
        for (size_t i = 0; i < n; i++)
                if (strcasestr(s[i].symptom, arg) || strcasestr(s[i].look_first, arg)) {
                        explain_symptom(&s[i]);
                        matches++;
                }
        const struct check_def *const *all = check_registry(&n);
        for (size_t i = 0; i < n; i++)
                if (strcasestr(all[i]->id, arg) || strcasestr(all[i]->title, arg) || strcasestr(all[i]->reads, arg)) {
                        explain_check(all[i]);
                        printf("\n");
                        matches++;
                }
        return matches;
}

/* Runs `gpunode explain`: the whole table, one check, or what matches the text. Returns 0, or 1 when
 * nothing matches. */
static int run_explain(struct explain_args *args) {
        if (!args->arg) {
                explain_all();
                return 0;
        }
        const struct check_def *d = check_find(args->arg);
        if (d) {
                explain_check(d);
                return 0;
        }
        if (!explain_matches(args->arg)) {
                fprintf_escaped(stderr,
                                "gpunode explain: no check or symptom matches '%s'; `gpunode explain` lists them all\n",
                                args->arg);
                return 1;
        }
        return 0;
}

DEFINE_COMMAND_STEPS(explain)

/* `gpunode explain`: its entry in the command table, with the help text generated from it. */
const struct command command_explain = {
        .name = "explain",
        COMMAND_STEPS(explain),
        .summary = "what every check reads and means, and the symptom table",
        .usage = "[CHECK-ID | TEXT]",
        .options = "  with no argument: the symptom table and every check, layer by layer\n"
                   "  CHECK-ID: what the check reads, what each outcome means, its dependencies\n"
                   "  TEXT: the symptoms and checks whose words match\n",
};
