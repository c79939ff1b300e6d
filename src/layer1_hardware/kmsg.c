/* kmsg.c: kernel log scanner: line framing over arbitrary chunks, prefix detection per line, NVIDIA event matching. */
#include "layer1_hardware/kmsg.h"
#include "basic/util.h"

#include <inttypes.h>
#include <strings.h>

/* Plain string scanning instead of regular expressions: every pattern here is a fixed
 * string plus a token, and memmem() over ~100-byte lines keeps a 100 MB log fast. */

/* A multi-line event waiting for its next line. */
struct pending {
        bool active;
        int left; /* lines that may still come before it completes */
        char pci[KMSG_PCI_MAX];
        char value[KMSG_VALUE_MAX];
        struct kmsg_line line; /* first line's number and timestamp; joined text */
        size_t text_len;
};

struct kmsg_scan {
        struct kmsg_summary sum;
        char *buf; /* the current partial line, KMSG_LINE_MAX bytes */
        size_t len;
        bool overlong;             /* the partial line was cut: skip to its end */
        struct pending fob, api;   /* fallen off the bus (3 lines), API mismatch (4 lines) */
        struct kmsg_gpu *last_gpu; /* lookup cache */
        uint32_t seen[256], gen;   /* bytes present in the current message */
};

/* One line split into its prefix and its message. */
struct msg {
        const char *p; /* message */
        size_t n;
        const char *ts; /* timestamp text inside the prefix */
        size_t ts_n;
        bool ts_usec; /* ts is /dev/kmsg microseconds */
        uint64_t lineno;
        const uint32_t *seen; /* seen[c] == gen: byte c occurs in the message */
        uint32_t gen;
};

/* Records which byte values occur in m's message, in s->seen under a new generation (no
 * clearing per line). */
static void msg_chars(struct kmsg_scan *s, struct msg *m) {
        if (++s->gen == 0) {
                memset(s->seen, 0, sizeof s->seen);
                s->gen = 1;
        }
        for (size_t i = 0; i < m->n; i++) s->seen[(unsigned char)m->p[i]] = s->gen;
        m->seen = s->seen;
        m->gen = s->gen;
}

/* Returns true when every byte of lit occurs somewhere in m's message: a cheap test that
 * spares memmem() (whose per-call set-up dominates on short lines) nearly every line. */
static bool msg_may_contain(const struct msg *m, const char *lit, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (m->seen[(unsigned char)lit[i]] != m->gen) return false;
        return true;
}

/* Returns the first occurrence of the string literal lit in m's message, or NULL. */
#define FIND(m, lit)                                                                                                   \
        (msg_may_contain((m), (lit), sizeof(lit) - 1) ? (const char *)memmem((m)->p, (m)->n, (lit), sizeof(lit) - 1)   \
                                                      : NULL)

/* Return true for the ASCII character classes named (no locale). */
static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}
static bool is_hex(char c) {
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
static bool is_upper(char c) {
        return c >= 'A' && c <= 'Z';
}
static bool is_lower(char c) {
        return c >= 'a' && c <= 'z';
}

/* Returns the bytes from p to the end of m's message (p must point inside it or at its end). */
static size_t rest(const struct msg *m, const char *p) {
        return (size_t)(m->p + m->n - p);
}

/* Returns the length of the valid UTF-8 sequence at s (at most n bytes), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n) {
        unsigned c = s[0];
        size_t len;
        unsigned min;
        if (c < 0x80) return 1;
        if (c >= 0xc2 && c <= 0xdf)
                len = 2, min = 0x80;
        else if (c >= 0xe0 && c <= 0xef)
                len = 3, min = 0x800;
        else if (c >= 0xf0 && c <= 0xf4)
                len = 4, min = 0x10000;
        else
                return 0;
        if (len > n) return 0;
        unsigned cp = c & (0x7f >> len);
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80) return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        return len;
}

/* Copies src (n bytes, anything) into dst of cap bytes as valid UTF-8: control bytes and
 * invalid sequences become '?', a character that does not fit whole ends the copy. Always
 * NUL-terminates (cap > 0). Returns the bytes written, NUL excluded. */
static size_t copy_text(char *dst, size_t cap, const char *src, size_t n) {
        size_t o = 0, i = 0;
        while (i < n && o + 1 < cap) {
                unsigned char c = (unsigned char)src[i];
                if (c < 0x20 || c == 0x7f) {
                        dst[o++] = c == '\t' ? ' ' : '?';
                        i++;
                        continue;
                }
                size_t l = utf8_len((const unsigned char *)src + i, n - i);
                if (l == 0) {
                        dst[o++] = '?';
                        i++;
                        continue;
                }
                if (o + l + 1 > cap) break;
                memcpy(dst + o, src + i, l);
                o += l;
                i += l;
        }
        dst[o] = 0;
        return o;
}

/* Copies a token of allowed characters starting at p (at most n bytes) into dst and drops
 * trailing '.' and ','. Returns the token's length in the source (0: none). */
static size_t copy_token(char *dst, size_t cap, const char *p, size_t n, const char *allowed_extra) {
        size_t i = 0;
        while (i < n && (is_digit(p[i]) || is_lower(p[i]) || is_upper(p[i]) || (p[i] && strchr(allowed_extra, p[i]))))
                i++;
        size_t t = i;
        while (t > 0 && (p[t - 1] == '.' || p[t - 1] == ',')) t--;
        copy_text(dst, cap, p, t);
        return i;
}

/* Returns bytes consumed or -EINVAL (see kmsg.h): pci_address_normalize's answer. */
int kmsg_pci_normalize(const char *s, size_t n, char ret[KMSG_PCI_MAX]) {
        return pci_address_normalize(s, n, ret);
}

/* Parses a /dev/kmsg record header "pri,seq,usec,flags[,...];". Returns the header length or 0. */
static size_t kmsg_header(const char *p, size_t n, struct msg *m) {
        size_t i = 0, start = 0, end = 0;
        for (int field = 0; field < 3; field++) {
                start = i;
                while (i < n && is_digit(p[i]) && i - start < 20) i++;
                if (i == start || i >= n) return 0;
                if (field < 2 && p[i++] != ',') return 0;
        }
        if (p[i] == ';') {
                end = i + 1;
        } else if (p[i] == ',') {
                for (size_t j = i; j < n && j < i + 64 && !end; j++) {
                        if (p[j] == ';')
                                end = j + 1;
                        else if (p[j] == ' ')
                                return 0;
                }
        }
        if (!end) return 0;
        m->ts = p + start;
        m->ts_n = i - start;
        m->ts_usec = true;
        return end;
}

/* Parses a dmesg timestamp "[  123.456789] " or "[Wed Jul 31 23:14:18 2024] ". Returns its
 * length (the spaces after it included) or 0. */
static size_t bracket_ts(const char *p, size_t n, struct msg *m) {
        if (n < 3 || p[0] != '[') return 0;
        bool digit = false;
        size_t i;
        for (i = 1; i < n && i < 48 && p[i] != ']'; i++) {
                char c = p[i];
                if (is_digit(c))
                        digit = true;
                else if (!(c == ' ' || c == '.' || c == ':' || c == '<' || c == '>' || c == '+' || c == '-' ||
                           c == ',' || is_lower(c) || is_upper(c)))
                        return 0;
        }
        if (i >= n || p[i] != ']' || !digit) return 0;
        size_t a = 1, b = i;
        while (a < b && p[a] == ' ') a++;
        while (b > a && p[b - 1] == ' ') b--;
        m->ts = p + a;
        m->ts_n = b - a;
        m->ts_usec = false;
        i++;
        while (i < n && p[i] == ' ') i++;
        return i;
}

/* Parses a syslog or journal timestamp: "Jul 31 23:14:18" (optionally ".123456") or ISO
 * "2024-07-31T23:14:18+0000" / "2024-07-31 23:14:18". Returns its length (no trailing
 * space) or 0. */
static size_t syslog_ts(const char *p, size_t n) {
        static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
        size_t i;
        if (n >= 16 && is_upper(p[0]) && p[3] == ' ') {
                bool month = false;
                for (size_t k = 0; k < 36; k += 3)
                        if (memcmp(p, months + k, 3) == 0) month = true;
                if (!month || !(p[4] == ' ' || is_digit(p[4])) || !is_digit(p[5]) || p[6] != ' ') return 0;
                i = 7;
        } else if (n >= 19 && is_digit(p[0]) && is_digit(p[1]) && is_digit(p[2]) && is_digit(p[3]) && p[4] == '-' &&
                   is_digit(p[5]) && is_digit(p[6]) && p[7] == '-' && is_digit(p[8]) && is_digit(p[9]) &&
                   (p[10] == 'T' || p[10] == ' ')) {
                i = 11;
        } else
                return 0;
        if (i + 8 > n || !is_digit(p[i]) || !is_digit(p[i + 1]) || p[i + 2] != ':' || !is_digit(p[i + 3]) ||
            !is_digit(p[i + 4]) || p[i + 5] != ':' || !is_digit(p[i + 6]) || !is_digit(p[i + 7]))
                return 0;
        i += 8;
        while (i < n && p[i] != ' ' && i < 40) i++; /* fraction, time zone */
        return i < n && p[i] == ' ' ? i : 0;
}

/* After a syslog timestamp: skips "host tag[pid]: " (the tag is optional). Returns the bytes
 * to skip from p, which points at the host. */
static size_t syslog_host_tag(const char *p, size_t n) {
        size_t i = 0;
        while (i < n && p[i] != ' ') i++;
        if (i >= n) return i;
        i++;
        size_t t = i;
        while (t < n && t < i + 64 && p[t] != ' ' && p[t] != ':') t++;
        if (t > i && t + 1 < n && p[t] == ':' && p[t + 1] == ' ') return t + 2;
        if (t > i && t + 1 == n && p[t] == ':') return t + 1;
        return i;
}

/* Returns true when the line is a /dev/kmsg continuation " KEY=value". */
static bool kmsg_continuation(const char *p, size_t n) {
        if (n < 3 || p[0] != ' ') return false;
        size_t i = 1;
        while (i < n && (is_upper(p[i]) || is_digit(p[i]) || p[i] == '_')) i++;
        return i > 1 && i < n && p[i] == '=';
}

/* Splits a line into prefix and message (m->lineno untouched). Any form, per line:
 * /dev/kmsg record, dmesg [ts], syslog/journal, "kernel: ", or bare. */
static void split_line(const char *p, size_t n, struct msg *m) {
        size_t skip;
        m->ts = NULL;
        m->ts_n = 0;
        m->ts_usec = false;

        if (is_digit(p[0]) && (skip = kmsg_header(p, n, m)) > 0) {
                /* the message follows */
        } else if ((skip = bracket_ts(p, n, m)) > 0) {
                /* journalctl -o short-monotonic: "[  12.3] host kernel: msg" */
                const char *sp = memchr(p + skip, ' ', n - skip < 64 ? n - skip : 64);
                if (sp && (size_t)(p + n - sp) > 9 && memcmp(sp + 1, "kernel: ", 8) == 0) skip = (size_t)(sp + 9 - p);
        } else if ((skip = syslog_ts(p, n)) > 0) {
                m->ts = p;
                m->ts_n = skip;
                skip++;
                skip += syslog_host_tag(p + skip, n - skip);
                /* rsyslog keeps the kernel's own "[ 12.3] " */
                struct msg dummy;
                skip += bracket_ts(p + skip, n - skip, &dummy);
        } else
                skip = 0;
        if (n - skip >= 8 && memcmp(p + skip, "kernel: ", 8) == 0) {
                skip += 8;
                if (!m->ts) skip += bracket_ts(p + skip, n - skip, m);
        }
        m->p = p + skip;
        m->n = n - skip;
}

/* Fills l with m's line number, timestamp and sanitised text (seq is set when recorded). */
static void fill_line(struct kmsg_line *l, const struct msg *m) {
        l->lineno = m->lineno;
        l->seq = 0;
        l->ts[0] = 0;
        if (m->ts && m->ts_usec) {
                uint64_t us = 0;
                for (size_t i = 0; i < m->ts_n; i++) us = us * 10 + (uint64_t)(m->ts[i] - '0');
                snprintf(l->ts, sizeof l->ts, "%" PRIu64 ".%06" PRIu64, us / 1000000, us % 1000000);
        } else if (m->ts)
                copy_text(l->ts, sizeof l->ts, m->ts, m->ts_n);
        copy_text(l->text, sizeof l->text, m->p, m->n);
}

/* Records one event of kind k seen on line l (its seq is assigned here); values may be NULL. */
static void record(struct kmsg_scan *s, enum kmsg_event_kind k, struct kmsg_line *l, const char *value,
                   const char *value2) {
        struct kmsg_event_stat *e = &s->sum.ev[k];
        l->seq = ++s->sum.events;
        if (e->count++ == 0) e->first = *l;
        e->last = *l;
        snprintf(e->value, sizeof e->value, "%s", value ? value : "");
        snprintf(e->value2, sizeof e->value2, "%s", value2 ? value2 : "");
}

/* Returns the GPU with normalised address pci, created when create is set and room is left;
 * NULL when absent or out of room. */
static struct kmsg_gpu *gpu_get(struct kmsg_scan *s, const char *pci, bool create) {
        if (s->last_gpu && streq(s->last_gpu->pci, pci)) return s->last_gpu;
        for (size_t i = 0; i < s->sum.n_gpus; i++)
                if (streq(s->sum.gpus[i]->pci, pci)) return s->last_gpu = s->sum.gpus[i];
        if (!create || s->sum.n_gpus >= KMSG_MAX_GPUS) return NULL;
        struct kmsg_gpu *g = xcalloc(1, sizeof *g);
        snprintf(g->pci, sizeof g->pci, "%s", pci);
        g->worst = XID_INFO;
        s->sum.gpus[s->sum.n_gpus++] = g;
        return s->last_gpu = g;
}

/* Records an Xid line. */
static void record_xid(struct kmsg_scan *s, const char *pci, int xid, enum xid_severity sev, struct kmsg_line *l) {
        char num[16];
        snprintf(num, sizeof num, "%d", xid);
        record(s, KMSG_EV_XID, l, pci, num);

        struct kmsg_gpu *g = gpu_get(s, pci, true);
        if (!g) {
                s->sum.gpus_untracked_events++;
                return;
        }
        g->xid_count++;
        if (sev > g->worst) g->worst = sev;

        struct kmsg_xid_stat *st = NULL;
        for (size_t i = 0; i < g->n_xids; i++)
                if (g->xids[i].xid == xid) st = &g->xids[i];
        if (!st && g->n_xids < KMSG_MAX_XIDS_PER_GPU) {
                st = &g->xids[g->n_xids++];
                st->xid = xid;
                st->worst = sev;
                st->first = *l;
                st->worst_line = *l;
        }
        if (st) {
                st->count++;
                st->last = *l;
                /* Xid 154 reports the GPU's recovery action as it is now: the last line holds. */
                if (sev > st->worst || xid == 154) {
                        st->worst = sev;
                        st->worst_line = *l;
                }
        } else
                g->xids_untracked++;

        size_t idx;
        if (g->n_recent < KMSG_RECENT_XIDS)
                idx = (g->recent_head + g->n_recent++) % KMSG_RECENT_XIDS;
        else {
                idx = g->recent_head;
                g->recent_head = (g->recent_head + 1) % KMSG_RECENT_XIDS;
        }
        g->recent[idx] = (struct kmsg_xid_event){ .xid = xid, .severity = sev, .line = *l };
}

/* Returns the NVSwitch with normalised address pci, created (with its instance) when room is left;
 * NULL when out of room. */
static struct kmsg_switch *switch_get(struct kmsg_scan *s, const char *pci, int instance) {
        for (size_t i = 0; i < s->sum.n_switches; i++)
                if (streq(s->sum.switches[i]->pci, pci)) {
                        if (instance >= 0) s->sum.switches[i]->instance = instance;
                        return s->sum.switches[i];
                }
        if (s->sum.n_switches >= KMSG_MAX_SWITCHES) return NULL;
        struct kmsg_switch *sw = xcalloc(1, sizeof *sw);
        snprintf(sw->pci, sizeof sw->pci, "%s", pci);
        sw->instance = instance;
        sw->worst = SXID_VERDICT_WARN;
        s->sum.switches[s->sum.n_switches++] = sw;
        return sw;
}

/* Records one SXid line (headline or detail) on its NVSwitch. */
static void record_sxid(struct kmsg_scan *s, const struct sxid_line *sl, struct kmsg_line *l) {
        char num[16];
        snprintf(num, sizeof num, "%d", sl->sxid);
        record(s, KMSG_EV_SXID, l, sl->pci, num);

        struct kmsg_switch *sw = switch_get(s, sl->pci, sl->instance);
        if (!sw) {
                s->sum.switches_untracked_events++;
                return;
        }
        sw->sxid_lines++;
        struct kmsg_sxid_stat *st = NULL;
        for (size_t i = 0; i < sw->n_sxids; i++)
                if (sw->sxids[i].sxid == sl->sxid) st = &sw->sxids[i];
        if (!st && sw->n_sxids < KMSG_MAX_SXIDS_PER_SWITCH) {
                st = &sw->sxids[sw->n_sxids++];
                *st = (struct kmsg_sxid_stat){ .sxid = sl->sxid, .link = -1, .first = *l, .worst_line = *l };
                st->worst = sxid_verdict_for(sl->sxid, sl->kind);
        }
        if (!st) {
                sw->sxids_untracked++;
                return;
        }
        bool headline = sl->kind != SXID_LINE_DETAIL;
        uint64_t headlines_before = st->fatal + st->non_fatal + st->other;
        st->lines++;
        if (sl->kind == SXID_LINE_FATAL)
                st->fatal++;
        else if (sl->kind == SXID_LINE_NON_FATAL)
                st->non_fatal++;
        else if (sl->kind == SXID_LINE_OTHER)
                st->other++;
        if (headline && sl->link >= 0) st->link = sl->link;
        if (headline && headlines_before == 0) st->first = *l;
        if (headline || headlines_before == 0) st->last = *l;
        enum sxid_verdict v = sxid_verdict_for(sl->sxid, sl->kind);
        /* A detail line judges only an SXid that has no headline (yet): the headline says Fatal or not. */
        if (headline && headlines_before == 0) {
                st->worst = v;
                st->worst_line = *l;
        } else if ((headline || headlines_before == 0) && v > st->worst) {
                st->worst = v;
                st->worst_line = *l;
        }
        sw->worst = SXID_VERDICT_WARN;
        for (size_t i = 0; i < sw->n_sxids; i++)
                if (sw->sxids[i].worst > sw->worst) sw->worst = sw->sxids[i].worst;
}

/* Records a "fallen off the bus" event for pci ("" when the line named no address). */
static void record_fob(struct kmsg_scan *s, const char *pci, struct kmsg_line *l) {
        record(s, KMSG_EV_FALLEN_OFF_BUS, l, pci, NULL);
        if (!*pci) return;
        struct kmsg_gpu *g = gpu_get(s, pci, true);
        if (g)
                g->fallen_off_bus++;
        else
                s->sum.gpus_untracked_events++;
}

/* Finds a PCI address in m after "PCI:" or "GPU " (first that parses). Returns true when found. */
static bool find_pci(const struct msg *m, char pci[KMSG_PCI_MAX]) {
        static const char *const keys[] = { "PCI:", "GPU " };
        for (size_t k = 0; k < ELEMENTSOF(keys); k++) {
                size_t kl = strlen(keys[k]);
                const char *p = m->p;
                while ((p = memmem(p, rest(m, p), keys[k], kl))) {
                        /* "PCI:" is part of the address kmsg_pci_normalize() reads */
                        const char *a = k == 0 ? p : p + kl;
                        if (kmsg_pci_normalize(a, rest(m, a), pci) > 0) return true;
                        p += kl;
                }
        }
        pci[0] = 0;
        return false;
}

/* Parses "NVRM: Xid (PCI:0000:07:00): 48, ..." (GPUd's pattern, "PCI:" optional). Returns true
 * with the normalised address and the number. */
static bool parse_xid(const struct msg *m, char pci[KMSG_PCI_MAX], int *ret_xid) {
        const char *x = FIND(m, "NVRM: Xid");
        if (!x) return false;
        const char *e = m->p + m->n, *q = x + 9;
        while (q < e && *q == ' ') q++;
        if (q >= e || *q != '(') return false;
        q++;
        int r = pci_address_normalize_delimited(q, (size_t)(e - q), pci);
        if (r < 0) return false;
        q += r;
        if (q >= e || *q != ')') return false;
        q++;
        /* The first ": <digits>" ending in ',' (or a space or the end) after the address. */
        for (;;) {
                const char *c = memmem(q, (size_t)(e - q), ": ", 2);
                if (!c) return false;
                const char *d = c + 2;
                int v = 0, nd = 0;
                while (d < e && is_digit(*d) && nd < 7) {
                        v = v * 10 + (*d - '0');
                        d++;
                        nd++;
                }
                if (nd > 0 && nd < 7 && v > 0 && (d == e || *d == ',' || *d == ' ')) {
                        *ret_xid = v;
                        return true;
                }
                q = c + 1;
        }
}

/* Appends message m to a pending event's joined text. */
static void pending_append(struct pending *pd, const struct msg *m) {
        size_t cap = sizeof pd->line.text;
        if (pd->text_len + 2 >= cap) return;
        pd->line.text[pd->text_len++] = ' ';
        pd->text_len += copy_text(pd->line.text + pd->text_len, cap - pd->text_len, m->p, m->n);
}

/* Starts a pending multi-line event on line m. */
static void pending_start(struct pending *pd, const struct msg *m, int left, const char *pci, const char *value) {
        pd->active = true;
        pd->left = left;
        snprintf(pd->pci, sizeof pd->pci, "%s", pci);
        snprintf(pd->value, sizeof pd->value, "%s", value);
        fill_line(&pd->line, m);
        pd->text_len = strlen(pd->line.text);
}

/* Emits the pending API mismatch with the kernel module version found (or ""). */
static void api_emit(struct kmsg_scan *s, const char *module_version) {
        s->api.active = false;
        record(s, KMSG_EV_API_MISMATCH, &s->api.line, s->api.value, module_version);
}

/* Moves pending multi-line events on by one line. Returns true when the line completed one
 * (and so is not looked at again). */
static bool pending_step(struct kmsg_scan *s, const struct msg *m) {
        if (s->api.active) {
                const char *k = FIND(m, "kernel module has the version ");
                if (k) {
                        char ver[KMSG_VALUE_MAX];
                        k += strlen("kernel module has the version ");
                        copy_token(ver, sizeof ver, k, rest(m, k), ".-_");
                        pending_append(&s->api, m);
                        api_emit(s, ver);
                        s->fob.active = false;
                        return true;
                }
                api_emit(s, "");
        }
        if (s->fob.active) {
                if (FIND(m, "fallen off the bus")) {
                        s->fob.active = false;
                        pending_append(&s->fob, m);
                        record_fob(s, s->fob.pci, &s->fob.line);
                        return true;
                }
                if (--s->fob.left > 0 && FIND(m, "NVRM"))
                        pending_append(&s->fob, m);
                else
                        s->fob.active = false;
        }
        return false;
}

/* Looks at a line mentioning NVRM. Returns true when it was an event. */
static bool classify_nvrm(struct kmsg_scan *s, const struct msg *m) {
        char pci[KMSG_PCI_MAX], val[KMSG_VALUE_MAX];
        struct kmsg_line l;
        const char *a;
        int xid;

        if (parse_xid(m, pci, &xid)) {
                fill_line(&l, m);
                record_xid(s, pci, xid, xid_severity_for_line(xid, m->p, m->n), &l);
                if (xid == 79 || FIND(m, "fallen off the bus")) record_fob(s, pci, &l);
                return true;
        }
        if ((a = FIND(m, "API mismatch"))) {
                char client[KMSG_VALUE_MAX] = "";
                const char *c = memmem(a, rest(m, a), "has the version ", 16);
                if (c) copy_token(client, sizeof client, c + 16, rest(m, c + 16), ".-_");
                const char *k = memmem(a, rest(m, a), "kernel module has the version ", 30);
                if (k) {
                        copy_token(val, sizeof val, k + 30, rest(m, k + 30), ".-_");
                        fill_line(&l, m);
                        record(s, KMSG_EV_API_MISMATCH, &l, client, val);
                } else
                        pending_start(&s->api, m, 1, "", client);
                return true;
        }
        if ((a = FIND(m, "GPU at PCI:"))) {
                if (kmsg_pci_normalize(a + 7, rest(m, a + 7), pci) > 0) {
                        const char *u = memmem(a, rest(m, a), "GPU-", 4);
                        fill_line(&l, m);
                        if (FIND(m, "fallen off the bus")) {
                                record_fob(s, pci, &l);
                                return true;
                        }
                        if (u) {
                                char uuid[KMSG_UUID_MAX];
                                size_t un = 4;
                                while (un < rest(m, u) && un < 40 && (is_hex(u[un]) || u[un] == '-')) un++;
                                copy_text(uuid, sizeof uuid, u, un);
                                record(s, KMSG_EV_GPU_UUID, &l, pci, uuid);
                                struct kmsg_gpu *g = gpu_get(s, pci, true);
                                if (g)
                                        snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
                                else
                                        s->sum.gpus_untracked_events++;
                                return true;
                        }
                }
        }
        if ((a = FIND(m, "The NVIDIA GPU "))) {
                if (kmsg_pci_normalize(a + 15, rest(m, a + 15), pci) < 0) pci[0] = 0;
                if (FIND(m, "fallen off the bus")) {
                        fill_line(&l, m);
                        record_fob(s, pci, &l);
                } else
                        pending_start(&s->fob, m, 2, pci, "");
                return true;
        }
        if (FIND(m, "fallen off the bus")) {
                find_pci(m, pci);
                fill_line(&l, m);
                record_fob(s, pci, &l);
                return true;
        }
        if (FIND(m, "RmInitAdapter failed")) {
                find_pci(m, pci);
                fill_line(&l, m);
                record(s, KMSG_EV_RM_INIT_FAILED, &l, pci, NULL);
                return true;
        }
        if ((a = FIND(m, "loading NVIDIA UNIX"))) {
                const char *k = memmem(a, rest(m, a), "Kernel Module", 13);
                val[0] = 0;
                for (const char *p = k ? k + 13 : NULL; p && p < m->p + m->n;) {
                        while (p < m->p + m->n && *p == ' ') p++;
                        size_t tl = copy_token(val, sizeof val, p, rest(m, p), ".-_");
                        if (tl > 0 && is_digit(*p)) break;
                        val[0] = 0;
                        if (tl == 0) break;
                        p += tl;
                }
                fill_line(&l, m);
                record(s, KMSG_EV_DRIVER_LOADED, &l, val, NULL);
                return true;
        }
        return false;
}

/* Returns the module name quoted after "could not insert '" in m, copied to dst ("" if none). */
static const char *inserted_module(const struct msg *m, char *dst, size_t cap, const char **ret_end) {
        const char *a = FIND(m, "could not insert '");
        dst[0] = 0;
        *ret_end = NULL;
        if (!a) return dst;
        a += 18;
        const char *q = memchr(a, '\'', rest(m, a));
        if (!q) return dst;
        copy_text(dst, cap, a, (size_t)(q - a));
        *ret_end = q + 1;
        return dst;
}

/* Returns the number of hex digits at p (at most max, n bytes there). */
static size_t hex_run(const char *p, size_t n, size_t max) {
        size_t i = 0;
        while (i < n && i < max && is_hex(p[i])) i++;
        return i;
}

/* Returns the value of n hex digits at p (n <= 8, all hex). */
static uint32_t hex_value(const char *p, size_t n) {
        uint32_t v = 0;
        for (size_t i = 0; i < n; i++) {
                char c = p[i];
                v = v * 16 + (uint32_t)(is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        return v;
}

int kmsg_parse_pci_enum(const char *s, size_t n, struct kmsg_boot_gpu *ret) {
        /* "pci " DOMAIN ":" BB ":" DD "." F ": [" VVVV ":" DDDD "] type " TT " class 0x" CCCCCC */
        size_t i = 0, k;
        if (n < 4 || memcmp(s, "pci ", 4) != 0) return -EINVAL;
        i = 4;
        size_t addr_at = i;
        if ((k = hex_run(s + i, n - i, 8)) < 4) return -EINVAL;
        i += k;
        for (int part = 0; part < 2; part++) {
                if (i >= n || s[i] != ':') return -EINVAL;
                i++;
                if (hex_run(s + i, n - i, 2) != 2) return -EINVAL;
                i += 2;
        }
        if (i + 2 > n || s[i] != '.' || s[i + 1] < '0' || s[i + 1] > '7') return -EINVAL;
        i += 2;
        size_t addr_len = i - addr_at;
        if (n - i < 3 || memcmp(s + i, ": [", 3) != 0) return -EINVAL;
        i += 3;
        if (hex_run(s + i, n - i, 4) != 4 || i + 4 >= n || s[i + 4] != ':') return -EINVAL;
        uint32_t vendor = hex_value(s + i, 4);
        i += 5;
        if (hex_run(s + i, n - i, 4) != 4) return -EINVAL;
        uint32_t device = hex_value(s + i, 4);
        i += 4;
        if (n - i < 7 || memcmp(s + i, "] type ", 7) != 0) return -EINVAL;
        i += 7;
        if (hex_run(s + i, n - i, 2) != 2) return -EINVAL;
        i += 2;
        if (n - i < 9 || memcmp(s + i, " class 0x", 9) != 0) return -EINVAL;
        i += 9;
        if (hex_run(s + i, n - i, 6) != 6) return -EINVAL;
        uint32_t cls = hex_value(s + i, 6);
        i += 6;
        if (i < n && s[i] != ' ') return -EINVAL; /* "class 0x0302001": not the kernel's line */
        if (vendor != 0x10de || ((cls >> 8) != 0x0300 && (cls >> 8) != 0x0302)) return -ENOENT;
        if (addr_len >= sizeof ret->address) return -EINVAL;
        for (size_t j = 0; j < addr_len; j++)
                ret->address[j] = (char)(s[addr_at + j] | (is_upper(s[addr_at + j]) ? 0x20 : 0));
        ret->address[addr_len] = 0;
        ret->device = (uint16_t)device;
        ret->class_code = cls;
        return 0;
}

/* Records a GPU enumeration line (each address once per boot). */
static void record_boot_gpu(struct kmsg_scan *s, const struct kmsg_boot_gpu *g, const struct msg *m) {
        for (size_t i = 0; i < s->sum.n_boot_gpus; i++)
                if (streq(s->sum.boot_gpus[i].address, g->address)) return;
        if (s->sum.n_boot_gpus >= KMSG_MAX_BOOT_GPUS) {
                s->sum.boot_gpus_untracked++;
                return;
        }
        struct kmsg_boot_gpu *d = &s->sum.boot_gpus[s->sum.n_boot_gpus++];
        *d = *g;
        fill_line(&d->line, m);
}

/* Looks at one message and records what it recognises. */
static void classify(struct kmsg_scan *s, const struct msg *m) {
        char val[KMSG_VALUE_MAX], val2[KMSG_VALUE_MAX];
        struct kmsg_line l;
        const char *a, *end;

        if (m->n >= 14 && memcmp(m->p, "Linux version ", 14) == 0) {
                /* a new boot: what an earlier one enumerated is history */
                s->sum.n_boot_gpus = 0;
                s->sum.boot_gpus_untracked = 0;
                s->sum.boot_seen = true;
                return;
        }
        if (m->n >= 4 && memcmp(m->p, "pci ", 4) == 0 && FIND(m, "[10de:")) {
                struct kmsg_boot_gpu g;
                if (kmsg_parse_pci_enum(m->p, m->n, &g) == 0) record_boot_gpu(s, &g, m);
                return;
        }

        if (FIND(m, "NVRM") && classify_nvrm(s, m)) return;

        if (FIND(m, "SXid (")) {
                struct sxid_line sl;
                if (sxid_parse_line(m->p, m->n, &sl) == 0) {
                        fill_line(&l, m);
                        record_sxid(s, &sl, &l);
                        return;
                }
        }

        if (FIND(m, "/library version mismatch")) {
                fill_line(&l, m);
                record(s, KMSG_EV_LIB_MISMATCH, &l, NULL, NULL);
                return;
        }
        if (FIND(m, "Key was rejected by service") || FIND(m, "Required key not available") ||
            FIND(m, "Loading of module with unavailable key is rejected") ||
            FIND(m, "not signed by a key that is trusted")) {
                inserted_module(m, val, sizeof val, &end);
                fill_line(&l, m);
                record(s, KMSG_EV_MODULE_KEY_REJECTED, &l, val, NULL);
                return;
        }
        if (FIND(m, "unsigned module loading is restricted")) {
                fill_line(&l, m);
                record(s, KMSG_EV_LOCKDOWN, &l, NULL, NULL);
                return;
        }
        inserted_module(m, val, sizeof val, &end);
        if (end && startswith(val, "nvidia")) {
                val2[0] = 0;
                if (rest(m, end) >= 2 && end[0] == ':' && end[1] == ' ')
                        copy_text(val2, sizeof val2, end + 2, rest(m, end + 2));
                fill_line(&l, m);
                record(s, KMSG_EV_MODULE_LOAD_FAILED, &l, val, val2);
                return;
        }
        if ((a = FIND(m, ": module verification failed"))) {
                const char *b = a;
                while (b > m->p && b[-1] != ' ') b--;
                copy_text(val, sizeof val, b, (size_t)(a - b));
                fill_line(&l, m);
                record(s, KMSG_EV_MODULE_TAINTED, &l, val, NULL);
                return;
        }
        if ((a = FIND(m, "kernel headers for kernel ")) && FIND(m, "cannot be found")) {
                a += 26;
                copy_token(val, sizeof val, a, rest(m, a), ".-_+~");
                fill_line(&l, m);
                record(s, KMSG_EV_HEADERS_MISSING, &l, val, NULL);
                return;
        }
        if ((a = FIND(m, "/lib/modules/")) && FIND(m, "No such file or directory")) {
                a += 13;
                size_t tl = copy_token(val, sizeof val, a, rest(m, a), ".-_+~");
                if (tl > 0 && rest(m, a + tl) >= 6 && memcmp(a + tl, "/build", 6) == 0) {
                        fill_line(&l, m);
                        record(s, KMSG_EV_HEADERS_MISSING, &l, val, NULL);
                        return;
                }
        }
        if ((FIND(m, "nvidia-peermem") || FIND(m, "nvidia_peermem")) && (FIND(m, "ERROR") || FIND(m, "error"))) {
                fill_line(&l, m);
                record(s, KMSG_EV_PEERMEM_ERROR, &l, NULL, NULL);
                return;
        }
        if (FIND(m, "system not yet initialized") || FIND(m, "cudaErrorSystemNotReady") || FIND(m, "returned 802") ||
            FIND(m, "error 802")) {
                fill_line(&l, m);
                record(s, KMSG_EV_CUDA_802, &l, NULL, NULL);
                return;
        }
}

/* Scans one complete line of n bytes (no '\n'). */
static void process_line(struct kmsg_scan *s, const char *p, size_t n) {
        struct msg m = { .lineno = ++s->sum.lines };
        if (n > 0 && p[n - 1] == '\r') n--;
        if (kmsg_continuation(p, n)) return;
        if (n == 0) {
                m.p = p;
                m.n = 0;
        } else
                split_line(p, n, &m);
        msg_chars(s, &m);
        if (pending_step(s, &m)) return;
        classify(s, &m);
}

/* Adds n bytes to the partial line, cutting it at KMSG_LINE_MAX. */
static void append_partial(struct kmsg_scan *s, const char *data, size_t n) {
        size_t room = KMSG_LINE_MAX - s->len;
        if (n > room) {
                s->overlong = true;
                n = room;
        }
        memcpy(s->buf + s->len, data, n);
        s->len += n;
}

/* Scans the partial line as complete and empties it. */
static void flush_partial(struct kmsg_scan *s) {
        if (s->overlong) s->sum.overlong_lines++;
        process_line(s, s->buf, s->len);
        s->len = 0;
        s->overlong = false;
}

/* Returns a new scanner; never NULL (xmalloc aborts on out-of-memory). */
struct kmsg_scan *kmsg_scan_new(void) {
        struct kmsg_scan *s = xcalloc(1, sizeof *s);
        s->buf = xmalloc(KMSG_LINE_MAX);
        return s;
}

/* Frees s and its GPUs; NULL is fine. */
void kmsg_scan_free(struct kmsg_scan *s) {
        if (!s) return;
        for (size_t i = 0; i < s->sum.n_gpus; i++) free(s->sum.gpus[i]);
        for (size_t i = 0; i < s->sum.n_switches; i++) free(s->sum.switches[i]);
        free(s->buf);
        free(s);
}

/* Frames lines over chunks: a line inside one chunk is scanned in place, one spanning chunks
 * is gathered in s->buf (cut at KMSG_LINE_MAX). Never fails. */
void kmsg_scan_feed(struct kmsg_scan *s, const char *data, size_t len) {
        s->sum.bytes += len;
        while (len > 0) {
                const char *nl = memchr(data, '\n', len);
                if (!nl) {
                        append_partial(s, data, len);
                        return;
                }
                size_t seg = (size_t)(nl - data);
                if (s->len == 0) {
                        /* The whole line is in this chunk: scan it in place. */
                        if (seg > KMSG_LINE_MAX) {
                                s->sum.overlong_lines++;
                                process_line(s, data, KMSG_LINE_MAX);
                        } else
                                process_line(s, data, seg);
                } else {
                        append_partial(s, data, seg);
                        flush_partial(s);
                }
                data += seg + 1;
                len -= seg + 1;
        }
}

/* Feeds one /dev/kmsg record, ending it with '\n' when needed. Never fails. */
void kmsg_scan_feed_record(struct kmsg_scan *s, const char *data, size_t len) {
        kmsg_scan_feed(s, data, len);
        if (len == 0 || data[len - 1] != '\n') kmsg_scan_feed(s, "\n", 1);
}

/* Returns 0 at end of input (EOF, or EAGAIN for records), or -errno from read(). */
int kmsg_scan_read_fd(struct kmsg_scan *s, int fd, bool records) {
        const size_t size = 64 * 1024; /* > the largest /dev/kmsg record (8 KiB) */
        _cleanup_free_ char *b = xmalloc(size);
        for (;;) {
                ssize_t n = read(fd, b, size);
                if (n > 0) {
                        if (records)
                                kmsg_scan_feed_record(s, b, (size_t)n);
                        else
                                kmsg_scan_feed(s, b, (size_t)n);
                        continue;
                }
                if (n == 0) return 0;
                if (errno == EINTR) continue;
                if (errno == EAGAIN && records) return 0;
                if (errno == EPIPE && records) {
                        s->sum.kmsg_gaps++;
                        continue;
                }
                return -errno;
        }
}

/* Scans the last unterminated line and reports a pending API mismatch. Never fails. */
void kmsg_scan_finish(struct kmsg_scan *s) {
        if (s->len > 0 || s->overlong) flush_partial(s);
        if (s->api.active) api_emit(s, "");
        s->fob.active = false;
}

/* Returns the summary inside s; never NULL. */
const struct kmsg_summary *kmsg_scan_summary(const struct kmsg_scan *s) {
        return &s->sum;
}

/* Returns the GPU with address pci (any accepted form), or NULL (also for a bad address). */
const struct kmsg_gpu *kmsg_summary_gpu(const struct kmsg_summary *sum, const char *pci) {
        char norm[KMSG_PCI_MAX];
        if (!pci || pci_address_normalize_delimited(pci, strlen(pci), norm) < 0) return NULL;
        for (size_t i = 0; i < sum->n_gpus; i++)
                if (streq(sum->gpus[i]->pci, norm)) return sum->gpus[i];
        return NULL;
}

/* Returns the stats for xid on g, or NULL when not seen or not tracked. */
const struct kmsg_xid_stat *kmsg_gpu_xid(const struct kmsg_gpu *g, int xid) {
        for (size_t i = 0; i < g->n_xids; i++)
                if (g->xids[i].xid == xid) return &g->xids[i];
        return NULL;
}

/* Returns the i-th oldest kept event of the ring, or NULL when i is out of range. */
const struct kmsg_xid_event *kmsg_gpu_recent(const struct kmsg_gpu *g, size_t i) {
        if (i >= g->n_recent) return NULL;
        return &g->recent[(g->recent_head + i) % KMSG_RECENT_XIDS];
}

/* Returns the stats for sxid on sw, or NULL when not seen or not tracked. */
const struct kmsg_sxid_stat *kmsg_switch_sxid(const struct kmsg_switch *sw, int sxid) {
        for (size_t i = 0; i < sw->n_sxids; i++)
                if (sw->sxids[i].sxid == sxid) return &sw->sxids[i];
        return NULL;
}

/* Returns the headlines, or the lines when there were none. Never fails. */
uint64_t kmsg_sxid_occurrences(const struct kmsg_sxid_stat *st) {
        uint64_t h = st->fatal + st->non_fatal + st->other;
        return h ? h : st->lines;
}

/* Returns true when first's first occurrence precedes then's last one (event seq order). */
bool kmsg_gpu_xid_before(const struct kmsg_gpu *g, int first, int then) {
        const struct kmsg_xid_stat *a = kmsg_gpu_xid(g, first), *b = kmsg_gpu_xid(g, then);
        return a && b && a->first.seq < b->last.seq;
}

/* Returns the kind's stable name, or "?" when out of range. */
const char *kmsg_event_kind_name(enum kmsg_event_kind k) {
        static const char *const names[_KMSG_EV_MAX] = {
                [KMSG_EV_XID] = "xid",
                [KMSG_EV_FALLEN_OFF_BUS] = "fallen-off-bus",
                [KMSG_EV_API_MISMATCH] = "api-mismatch",
                [KMSG_EV_LIB_MISMATCH] = "library-mismatch",
                [KMSG_EV_MODULE_KEY_REJECTED] = "module-key-rejected",
                [KMSG_EV_LOCKDOWN] = "lockdown",
                [KMSG_EV_MODULE_LOAD_FAILED] = "module-load-failed",
                [KMSG_EV_MODULE_TAINTED] = "module-tainted",
                [KMSG_EV_HEADERS_MISSING] = "headers-missing",
                [KMSG_EV_PEERMEM_ERROR] = "peermem-error",
                [KMSG_EV_CUDA_802] = "cuda-802",
                [KMSG_EV_RM_INIT_FAILED] = "rm-init-failed",
                [KMSG_EV_DRIVER_LOADED] = "driver-loaded",
                [KMSG_EV_GPU_UUID] = "gpu-uuid",
                [KMSG_EV_SXID] = "sxid",
        };
        return (unsigned)k < _KMSG_EV_MAX ? names[k] : "?";
}
