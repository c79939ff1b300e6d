/* kmsg_evidence.c: the kernel log's lines as check evidence, shared by the layer 1 checks. */
#include "layer1_hardware/kmsg_evidence.h"
#include "layer1_hardware/kmsg.h"

size_t kmsg_evidence(const struct kmsg_facts *k, int kind, struct finding *f) {
        if (!k->scan || kind < 0 || kind >= _KMSG_EV_MAX) return 0;
        const struct kmsg_event_stat *st = &kmsg_scan_summary(k->scan)->ev[kind];
        if (st->count == 0) return 0;
        if (st->count == 1)
                finding_evidence(f, "%s line %llu: %s", k->source, (unsigned long long)st->last.lineno, st->last.text);
        else
                finding_evidence(f, "%s: %llu lines, last (line %llu): %s", k->source, (unsigned long long)st->count,
                                 (unsigned long long)st->last.lineno, st->last.text);
        return st->count;
}

void kmsg_api_mismatch_evidence(const struct kmsg_facts *k, struct finding *f) {
        if (!k->scan) return;
        const struct kmsg_event_stat *st = &kmsg_scan_summary(k->scan)->ev[KMSG_EV_API_MISMATCH];
        if (st->count && st->value[0])
                finding_evidence(f, "kernel log: client version %s, kernel module version %s", st->value,
                                 st->value2[0] ? st->value2 : "?");
        kmsg_evidence(k, KMSG_EV_API_MISMATCH, f);
}
