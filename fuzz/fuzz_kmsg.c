/* fuzz_kmsg.c: libFuzzer target feeding arbitrary input to the kernel log scanner in input-chosen chunks, checking the summary's invariants. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layer1_hardware/kmsg.h"
#include "layer1_hardware/xid.h"

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
                check(kmsg_pci_normalize(g->pci, strlen(g->pci), norm) == (int)strlen(g->pci));
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
        }
        return 0;
}
