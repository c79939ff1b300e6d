/* kmsg_evidence.c: the kernel log's lines as check evidence, shared by the layer 1 checks. */
#include "layer1_hardware/kmsg_evidence.h"
#include "layer1_hardware/kmsg.h"
#include "basic/rfc3339.h"

#include <inttypes.h>

/* Returns true and the whole seconds in *ret when ts is a seconds-since-boot stamp ("5.001000",
 * "123", as the scanner keeps /dev/kmsg's and dmesg's), false for any other text. */
static bool boot_seconds(const char *ts, int64_t *ret) {
        int64_t s = 0;
        size_t i = 0;
        for (; ts[i] >= '0' && ts[i] <= '9' && i < 12; i++) s = s * 10 + (ts[i] - '0');
        if (i == 0 || i == 12) return false;
        if (ts[i] == '.') {
                size_t j = i + 1;
                while (ts[j] >= '0' && ts[j] <= '9') j++;
                if (j == i + 1) return false;
                i = j;
        }
        if (ts[i]) return false;
        *ret = s;
        return true;
}

int64_t kmsg_line_time(const struct kmsg_facts *k, const struct kmsg_line *l) {
        int64_t s;
        return k->boot_time > 0 && boot_seconds(l->ts, &s) ? k->boot_time + s : 0;
}

const char *kmsg_line_when(const struct kmsg_facts *k, const struct kmsg_line *l, char buf[KMSG_WHEN_MAX]) {
        int64_t s;
        char wall[RFC3339_MAX];
        if (!l->ts[0])
                buf[0] = 0;
        else if (!boot_seconds(l->ts, &s))
                snprintf(buf, KMSG_WHEN_MAX, " at %s", l->ts);
        else if (k->boot_time > 0)
                snprintf(buf, KMSG_WHEN_MAX, " at %s (kernel time %s s)", rfc3339_format(k->boot_time + s, wall),
                         l->ts);
        else
                snprintf(buf, KMSG_WHEN_MAX, " at kernel time %s s", l->ts);
        return buf;
}

size_t kmsg_evidence(const struct kmsg_facts *k, int kind, struct finding *f) {
        if (!k->scan || kind < 0 || kind >= _KMSG_EV_MAX) return 0;
        const struct kmsg_event_stat *st = &kmsg_scan_summary(k->scan)->ev[kind];
        if (st->count == 0) return 0;
        char when[KMSG_WHEN_MAX];
        kmsg_line_when(k, &st->last, when);
        if (st->count == 1)
                finding_evidence(f, "%s line %llu%s: %s", k->source, (unsigned long long)st->last.lineno, when,
                                 st->last.text);
        else
                finding_evidence(f, "%s: %llu lines, last (line %llu%s): %s", k->source, (unsigned long long)st->count,
                                 (unsigned long long)st->last.lineno, when, st->last.text);
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
