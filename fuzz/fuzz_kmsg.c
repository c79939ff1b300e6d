/* fuzz_kmsg.c: libFuzzer target feeding arbitrary input to the kernel log scanner in input-chosen chunks, checking the
 * summary's invariants (GPUs and Xids, NVSwitches and SXids, the GPUs enumerated at boot). */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layer1_hardware/kmsg.h"
#include "nvidia/sxid.h"
#include "nvidia/xid.h"

/* Aborts (a finding for the fuzzer) when cond is false. */
static void check(int cond) {
        if (!cond) abort();
}

/* Checks that a kept line is terminated within its buffers and holds no control bytes. */
static void check_line(const struct kmsg_line *l) {
        check(memchr(l->text, 0, sizeof l->text) != NULL);
        check(memchr(l->ts, 0, sizeof l->ts) != NULL);
        for (const unsigned char *p = (const unsigned char *)l->text; *p; p++) check(*p >= 0x20 && *p != 0x7f);
}

/* Walks the whole summary; any broken invariant aborts. */
static void check_summary(const struct kmsg_summary *sum, size_t len) {
        check(sum->bytes == len);
        check(sum->n_gpus <= KMSG_MAX_GPUS);
        for (int k = 0; k < _KMSG_EV_MAX; k++) {
                const struct kmsg_event_stat *e = &sum->ev[k];
                check(e->count <= sum->events);
                check(memchr(e->value, 0, sizeof e->value) != NULL);
                check(memchr(e->value2, 0, sizeof e->value2) != NULL);
                check_line(&e->first);
                check_line(&e->last);
                if (e->count) check(e->first.seq <= e->last.seq && e->last.lineno <= sum->lines);
        }
        for (size_t i = 0; i < sum->n_gpus; i++) {
                const struct kmsg_gpu *g = sum->gpus[i];
                char norm[KMSG_PCI_MAX];
                /* an Xid frame's address may have any two-digit device number (pci_address.h) */
                check(pci_address_normalize_delimited(g->pci, strlen(g->pci), norm) == (int)strlen(g->pci));
                check(strcmp(norm, g->pci) == 0);
                check(kmsg_summary_gpu(sum, g->pci) == g);
                check(g->n_xids <= KMSG_MAX_XIDS_PER_GPU && g->n_recent <= KMSG_RECENT_XIDS);
                uint64_t total = g->xids_untracked;
                for (size_t j = 0; j < g->n_xids; j++) {
                        total += g->xids[j].count;
                        check(g->xids[j].first.seq <= g->xids[j].last.seq);
                        check(kmsg_gpu_xid(g, g->xids[j].xid) == &g->xids[j]);
                        check_line(&g->xids[j].first);
                }
                check(total == g->xid_count);
                for (size_t j = 0; j < g->n_recent; j++) {
                        const struct kmsg_xid_event *e = kmsg_gpu_recent(g, j);
                        check_line(&e->line);
                        if (j > 0) check(kmsg_gpu_recent(g, j - 1)->line.seq < e->line.seq);
                        check(e->severity < _XID_SEVERITY_MAX);
                }
                check(kmsg_gpu_recent(g, g->n_recent) == NULL);
        }
        check(sum->n_switches <= KMSG_MAX_SWITCHES);
        uint64_t sxid_lines = sum->switches_untracked_events;
        for (size_t i = 0; i < sum->n_switches; i++) {
                const struct kmsg_switch *sw = sum->switches[i];
                char norm[KMSG_PCI_MAX];
                check(kmsg_pci_normalize(sw->pci, strlen(sw->pci), norm) == (int)strlen(sw->pci));
                check(sw->n_sxids <= KMSG_MAX_SXIDS_PER_SWITCH && sw->worst < _SXID_VERDICT_MAX);
                for (size_t j = 0; j < i; j++) check(strcmp(sum->switches[j]->pci, sw->pci) != 0);
                uint64_t total = sw->sxids_untracked;
                enum sxid_verdict worst = SXID_VERDICT_WARN;
                for (size_t j = 0; j < sw->n_sxids; j++) {
                        const struct kmsg_sxid_stat *st = &sw->sxids[j];
                        total += st->lines;
                        check(st->sxid > 0 && st->sxid < 1000000);
                        check(st->fatal + st->non_fatal + st->other <= st->lines);
                        check(kmsg_sxid_occurrences(st) >= 1 && kmsg_sxid_occurrences(st) <= st->lines);
                        check(st->worst < _SXID_VERDICT_MAX && st->link >= -1 && st->link < 1000);
                        check(kmsg_switch_sxid(sw, st->sxid) == st);
                        check(st->first.seq <= st->last.seq);
                        check_line(&st->first);
                        check_line(&st->last);
                        check_line(&st->worst_line);
                        if (st->worst > worst) worst = st->worst;
                }
                check(total == sw->sxid_lines && worst == sw->worst);
                sxid_lines += sw->sxid_lines;
        }
        check(sxid_lines == sum->ev[KMSG_EV_SXID].count);
        check(sum->n_boot_gpus <= KMSG_MAX_BOOT_GPUS);
        for (size_t i = 0; i < sum->n_boot_gpus; i++) {
                const struct kmsg_boot_gpu *b = &sum->boot_gpus[i];
                check(memchr(b->address, 0, sizeof b->address) != NULL && strlen(b->address) >= 12);
                check((b->class_code >> 8) == 0x0300 || (b->class_code >> 8) == 0x0302);
                check_line(&b->line);
                for (size_t j = 0; j < i; j++) check(strcmp(sum->boot_gpus[j].address, b->address) != 0);
        }
}

/* Feeds data in chunks whose sizes come from a PRNG seeded by the input's first bytes (so
 * the same input always splits the same way); every other input is fed as /dev/kmsg
 * records. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint32_t seed = 2166136261u;
        for (size_t i = 0; i < size && i < 8; i++) seed = (seed ^ data[i]) * 16777619u;
        struct kmsg_scan *s = kmsg_scan_new();
        size_t off = 0, fed = 0;
        bool records = seed & 1;
        while (off < size) {
                seed = seed * 1103515245u + 12345u;
                size_t c = 1 + (seed >> 8) % (seed & 0x100 ? 7 : 300);
                if (c > size - off) c = size - off;
                if (records) {
                        kmsg_scan_feed_record(s, (const char *)data + off, c);
                        fed += c + (data[off + c - 1] != '\n');
                } else {
                        kmsg_scan_feed(s, (const char *)data + off, c);
                        fed += c;
                }
                off += c;
        }
        kmsg_scan_finish(s);
        check_summary(kmsg_scan_summary(s), fed);
        kmsg_scan_free(s);

        /* the pure helpers on the raw input */
        char pci[KMSG_PCI_MAX];
        int r = kmsg_pci_normalize((const char *)data, size, pci);
        check(r == -EINVAL || (r > 0 && (size_t)r <= size && strlen(pci) >= 10));
        if (size >= 2) {
                int xid = (int)(data[0] | (data[1] << 8));
                check(xid_severity_for_line(xid, (const char *)data, size) < _XID_SEVERITY_MAX);
                check(xid_lookup(xid) != NULL);
                check(xid_remedy_for_line(xid, (const char *)data, size) != NULL);
                char name[32];
                int a = xid154_action((const char *)data, size, name, sizeof name);
                check(a >= -1 && a <= 1000 && memchr(name, 0, sizeof name) != NULL);
        }
        struct kmsg_boot_gpu bg;
        int e = kmsg_parse_pci_enum((const char *)data, size, &bg);
        check(e == 0 || e == -ENOENT || e == -EINVAL);
        if (e == 0) check(strlen(bg.address) >= 12 && (bg.class_code >> 16) == 0x03);
        struct sxid_line sl;
        if (sxid_parse_line((const char *)data, size, &sl) == 0) {
                check(sl.sxid > 0 && sl.sxid < 1000000 && sl.kind < _SXID_LINE_KIND_MAX);
                check(sl.desc_off + sl.desc_len == size && sl.link >= -1 && sl.link < 1000);
                check(strlen(sl.pci) >= 10 && sl.instance >= -1);
                check(sxid_verdict_for(sl.sxid, sl.kind) < _SXID_VERDICT_MAX);
                check(sxid_lookup(sl.sxid) != NULL);
        }
        return 0;
}
