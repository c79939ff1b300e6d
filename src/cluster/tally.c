/* tally.c: distinct values of a per-node string with their counts (version and product skew). */
#include "cluster/cluster.h"
#include "basic/util.h"

void cl_tally_add(struct cl_tally *t, const char *v) {
        if (!v) v = "unknown";
        for (size_t i = 0; i < t->n; i++)
                if (streq(t->value[i], v)) {
                        t->count[i]++;
                        return;
                }
        if (t->n == ELEMENTSOF(t->value)) {
                t->other++;
                return;
        }
        t->value[t->n] = v;
        t->count[t->n++] = 1;
}

char *cl_tally_text(const struct cl_tally *t) {
        struct buf b = { 0 };
        for (size_t i = 0; i < t->n; i++) buf_printf(&b, "%s%s (%zu)", i ? ", " : "", t->value[i], t->count[i]);
        if (t->other) buf_printf(&b, ", %zu more", t->other);
        return b.data ? b.data : xstrdup("");
}

const char *cl_tally_majority(const struct cl_tally *t) {
        size_t best = 0;
        for (size_t i = 1; i < t->n; i++)
                if (t->count[i] > t->count[best]) best = i;
        return t->n ? t->value[best] : NULL;
}
