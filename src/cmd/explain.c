/* explain.c: `gpunode explain`: the symptom table and every check, from the check registry. */
#include "engine/check.h"
#include "diagnose/registry.h"
#include "cmd/commands.h"
#include "diagnose/symptoms.h"
#include "exporter/exporter.h"
#include "nvidia/sxid.h"
#include "nvidia/xid.h"

#include <errno.h>
#include <stdlib.h>
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

/* Returns the number s holds (1 to 99999, decimal digits only), or -1 when it is not one. */
static int catalog_number(const char *s) {
        if (!s || !*s || strlen(s) > 5 || strspn(s, "0123456789") != strlen(s)) return -1;
        int v = atoi(s);
        return v > 0 ? v : -1;
}

/* Prints what gpunode's Xid catalog says of xid: its meaning, NVIDIA's immediate action, gpunode's
 * severity and remedy, where the line itself decides, and the check and metric that report it.
 * Returns 0, or 1 when the catalog does not hold it (said on stderr). */
static int explain_xid(int xid) {
        if (!xid_is_known(xid)) {
                fprintf(stderr,
                        "gpunode explain: Xid %d is not in gpunode's catalog; driver.xid-errors warns on it "
                        "(see docs.nvidia.com/deploy/xid-errors)\n",
                        xid);
                return 1;
        }
        const struct xid_info *x = xid_lookup(xid);
        printf("Xid %d  %s\n", x->xid, x->name);
        printf("  means:    %s\n", x->meaning);
        printf("  severity: %s (gpunode's)\n", xid_severity_name(x->severity));
        if (xid_is_nvlink5(xid))
                printf("            the line decides: \"Fatal\" is critical, \"Nonfatal\" a warning%s\n",
                       xid == 146 ? "; Xid 146's error status first (0x4 reset, 0x2 support, 0x1 ignore)" : "");
        if (xid == 154)
                printf("            the line decides: a change to recovery action 0x0 (None) is information, "
                       "any other action critical\n");
        printf("  NVIDIA's immediate action: %s\n", xid_action_name(x->action));
        printf("  remedy:   %s: %s\n", xid_remedy_name(x->remedy), x->remedy_text);
        printf("  reported: by driver.xid-errors (the kernel log) and the exporter's DCGM_FI_DEV_XID_ERRORS "
               "(err_msg \"%s\")\n",
               exp_dcgm_xid_err_msg(xid));
        return 0;
}

/* Prints what gpunode's SXid catalog says of sxid (an NVSwitch error). Returns 0, or 1 when the
 * catalog does not hold it (said on stderr). */
static int explain_sxid(int sxid) {
        if (!sxid_is_known(sxid)) {
                fprintf(stderr,
                        "gpunode explain: SXid %d is not in gpunode's catalog; nvswitch.sxid-errors judges it by "
                        "its line (Fatal or Non-fatal)\n",
                        sxid);
                return 1;
        }
        const struct sxid_info *x = sxid_lookup(sxid);
        printf("SXid %d  %s\n", x->sxid, x->name);
        printf("  class:    %s%s\n", sxid_class_name(x->cls),
               x->needs_reset ? " (recovered with a reset even when the line says Non-fatal)" : "");
        printf("  a Fatal line asks to %s; a Non-fatal one to %s\n",
               sxid_verdict_name(sxid_verdict_for(sxid, SXID_LINE_FATAL)),
               sxid_verdict_name(sxid_verdict_for(sxid, SXID_LINE_NON_FATAL)));
        printf("  remedy:   %s\n", x->remedy_text);
        printf("  reported: by nvswitch.sxid-errors (the kernel log)\n");
        return 0;
}

/* What `gpunode explain` was asked: one check id or text, or everything, or an Xid or SXid. */
struct explain_args {
        struct command_args base;
        const char *arg; /* NULL: the whole table */
        int xid, sxid;   /* > 0: `explain xid N`, `explain N`; `explain sxid N` */
};

/* Parses `gpunode explain [CHECK-ID | TEXT]` (argv[0] "explain"). Returns 0, or -EINVAL after saying
 * so on stderr when more than one argument is given. */
static int parse_argv_explain(int argc, char **argv, struct explain_args *args) {
        if (argc == 3 && (strcasecmp(argv[1], "xid") == 0 || strcasecmp(argv[1], "sxid") == 0)) {
                int v = catalog_number(argv[2]);
                if (v < 0) {
                        fprintf_escaped(stderr, "gpunode explain: %s: '%s' is not an error number (1 to 99999)\n",
                                        argv[1], argv[2]);
                        return -EINVAL;
                }
                *(strcasecmp(argv[1], "xid") == 0 ? &args->xid : &args->sxid) = v;
                return 0;
        }
        if (argc > 2) {
                fprintf(stderr, "gpunode explain: give one check id, one quoted text, or xid N / sxid N\n");
                return -EINVAL;
        }
        args->arg = argc > 1 ? argv[1] : NULL;
        args->xid = catalog_number(args->arg); /* a bare number is an Xid */
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

/* Runs `gpunode explain`: the whole table, one check, what matches the text, or one Xid or SXid.
 * Returns 0, or 1 when nothing matches. */
static int run_explain(struct explain_args *args) {
        if (args->xid > 0) return explain_xid(args->xid);
        if (args->sxid > 0) return explain_sxid(args->sxid);
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
        .usage = "[CHECK-ID | TEXT | xid N | sxid N]",
        .options = "  with no argument: the symptom table and every check, layer by layer\n"
                   "  CHECK-ID: what the check reads, what each outcome means, its dependencies\n"
                   "  TEXT: the symptoms and checks whose words match\n"
                   "  xid N (or N alone), sxid N: what gpunode's Xid or NVSwitch SXid catalog says of it\n",
};
