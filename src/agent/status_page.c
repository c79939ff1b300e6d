/* status_page.c: the agent's status page: a report rendered as plain HTML and CSS, every report string escaped,
 * bounded. */
#include "agent/status_page.h"

#include "basic/rfc3339.h"
#include "basic/util.h"
#include "diagnose/registry.h"
#include "engine/check.h"

#include <inttypes.h>
#include <time.h>

#ifndef GPUNODE_VERSION
#define GPUNODE_VERSION "unknown"
#endif

/* The whole style sheet: readable at 320 px and up (nothing wider than the viewport: long ids and
 * evidence wrap anywhere, the GPU table turns into cards on a narrow screen), dark or light as the
 * reader's system prefers. Each status has a colour and always a word and a sign beside it. */
static const char page_css[] =
        ":root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--muted:#59636e;--line:#d1d9e0;--card:#f6f8fa;"
        "--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e;--blk:#8250df;--skip:#59636e}"
        "@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;--line:#3d444d;"
        "--card:#151b23;--ok:#2f9e4f;--warn:#b0800b;--bad:#e5484d;--blk:#8e6fdf;--skip:#6e7681}}"
        "*{box-sizing:border-box}"
        "body{margin:0;font:16px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);"
        "background:var(--bg);overflow-wrap:anywhere}"
        "main{max-width:64rem;margin:0 auto;padding:.75rem}"
        "header{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:baseline;justify-content:space-between}"
        "h1{font-size:1.35rem;margin:.25rem 0}h2{font-size:1.15rem;margin:1.25rem 0 .5rem}"
        "h3{font-size:1rem;margin:.75rem 0 .25rem}"
        "nav a{margin-right:.75rem}a{color:inherit}"
        "code{font:.9em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}"
        ".muted{color:var(--muted)}"
        ".b{display:inline-block;padding:0 .45em;border-radius:.35em;color:#fff;font-weight:600;font-size:.85em;"
        "white-space:nowrap;vertical-align:.08em}"
        ".ok{background:var(--ok)}.warn{background:var(--warn)}.bad{background:var(--bad)}"
        ".blk{background:var(--blk)}.skip,.unk{background:var(--skip)}"
        ".verdict{border-left:.5rem solid var(--skip);background:var(--card);padding:.6rem .9rem;border-radius:.4rem}"
        ".verdict.v-ok{border-color:var(--ok)}.verdict.v-warn{border-color:var(--warn)}"
        ".verdict.v-bad{border-color:var(--bad)}"
        ".vword{font-size:1.6rem;font-weight:700;margin:0}.verdict p{margin:.2rem 0}"
        ".rc{border:2px solid var(--bad);border-radius:.4rem;padding:.25rem .9rem .6rem}"
        ".rc.none{border-color:var(--line)}"
        ".rc-summary{font-size:1.1rem;font-weight:600}"
        ".remedy{background:var(--card);border-left:.3rem solid var(--ok);padding:.4rem .7rem;margin:.4rem 0}"
        ".ev{margin:.25rem 0;padding-left:1.1rem;font:.85em/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
        "}"
        ".ev li{margin:.1rem 0;white-space:pre-wrap}.more{font-style:italic;list-style:none}"
        ".layer{border-top:1px solid var(--line);margin-top:1rem}"
        ".comps{list-style:none;padding:0;margin:.25rem 0;display:flex;flex-wrap:wrap;gap:.3rem .9rem}"
        "details.chk{border:1px solid var(--line);border-radius:.35rem;margin:.3rem 0;padding:.3rem .6rem}"
        "details.chk.root{border:2px solid var(--bad)}"
        "details.chk>summary{cursor:pointer}details.chk>div{padding:.25rem 0 .1rem}"
        "table{border-collapse:collapse;width:100%}"
        "th,td{text-align:left;border-bottom:1px solid var(--line);padding:.3rem .4rem;vertical-align:top}"
        "td ul{margin:0;padding-left:1rem}"
        "@media (max-width:40rem){table,tbody,tr,td{display:block}thead{display:none}"
        "tr{border:1px solid var(--line);border-radius:.35rem;margin:.4rem 0;padding:.2rem .4rem}"
        "td{border:0;padding:.1rem 0}td::before{content:attr(data-label) \": \";color:var(--muted)}}"
        "footer{margin:2rem 0 1rem;font-size:.85em;color:var(--muted)}";

/* Appends s to b with the five characters that mean something in HTML (& < > " ') written as
 * entities, so that the text lands as text in an element or a quoted attribute. Cannot fail. */
static void put_escaped(struct buf *b, const char *s) {
        const char *run = s;
        for (; *s; s++) {
                const char *entity;
                switch (*s) {
                case '&': entity = "&amp;"; break;
                case '<': entity = "&lt;"; break;
                case '>': entity = "&gt;"; break;
                case '"': entity = "&quot;"; break;
                case '\'': entity = "&#39;"; break;
                default: continue;
                }
                buf_append(b, run, (size_t)(s - run));
                buf_puts(b, entity);
                run = s + 1;
        }
        buf_append(b, run, (size_t)(s - run));
}

/* Appends s, a string from the report, as inert text: at most STATUS_PAGE_MAX_STRING bytes (cut at a
 * character boundary, an ellipsis said), control characters and bytes that are not UTF-8 spelled as
 * visible escapes (escape_terminal: evidence quotes files and API answers), then HTML-escaped.
 * Cannot fail. */
static void put_text(struct buf *b, const char *s) {
        size_t n = strlen(s);
        bool cut = n > STATUS_PAGE_MAX_STRING;
        if (cut) {
                n = STATUS_PAGE_MAX_STRING;
                while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--; /* not inside a character */
        }
        _cleanup_free_ char *part = xstrndup(s, n);
        _cleanup_free_ char *clean = escape_terminal(part);
        put_escaped(b, clean);
        if (cut) buf_printf(b, "\xe2\x80\xa6 (%zu bytes more)", strlen(s) - n);
}

/* Appends s, a string from the report, escaped by put_text, or fallback (the program's own text, written as is)
 * when it is NULL. Cannot fail. */
static void put_opt(struct buf *b, const char *s, const char *fallback) {
        if (s)
                put_text(b, s);
        else
                buf_puts(b, fallback);
}

/* Returns the CSS class of a check, layer, component or verdict status word ("ok", "warn", "bad",
 * "blk", "skip"), or "unk" for a word this page does not know (or NULL). Never fails. */
static const char *status_class(const char *status) {
        static const struct {
                const char *word, *cls;
        } map[] = {
                { "pass", "ok" },       { "healthy", "ok" }, { "warn", "warn" },
                { "degraded", "warn" }, { "fail", "bad" },   { "failed", "bad" },
                { "blocked", "blk" },   { "skip", "skip" },  { "skipped", "skip" },
        };
        for (size_t i = 0; status && i < ELEMENTSOF(map); i++)
                if (streq(status, map[i].word)) return map[i].cls;
        return "unk";
}

/* Returns the sign shown beside a status of CSS class cls (the word is always shown too: the colour
 * is never the only mark). Never fails. */
static const char *status_sign(const char *cls) {
        if (streq(cls, "ok")) return "\xe2\x9c\x93"; /* check mark */
        if (streq(cls, "warn")) return "!";
        if (streq(cls, "bad")) return "\xe2\x9c\x97";  /* ballot x */
        if (streq(cls, "blk")) return "\xe2\x8a\x98";  /* circled division slash */
        if (streq(cls, "skip")) return "\xe2\x80\x93"; /* en dash */
        return "?";
}

/* Appends a badge for the status word (NULL: "unknown"): colour, sign and the word. Cannot fail. */
static void put_badge(struct buf *b, const char *status) {
        const char *cls = status_class(status);
        buf_printf(b, "<span class=\"b %s\">%s %s</span>", cls, status_sign(cls), status ? status : "unknown");
}

/* Appends the head of a page titled "gpunode: <node>" plus suffix (the program's own text), with the
 * style sheet, and opens <main>; refresh_s > 0 asks the browser to reload after that many seconds.
 * node is the caller's or the report's and is escaped. Cannot fail. */
static void put_head(struct buf *b, const char *node, const char *suffix, int refresh_s) {
        buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        if (refresh_s > 0) buf_printf(b, "<meta http-equiv=\"refresh\" content=\"%d\">\n", refresh_s);
        buf_puts(b, "<title>gpunode: ");
        put_text(b, node);
        buf_printf(b,
                   "%s</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n<header>\n<h1>gpunode "
                   "<span class=\"muted\">on</span> <code id=\"node\">",
                   suffix, page_css);
        put_text(b, node);
        buf_puts(b, "</code></h1>\n<nav><a href=\"/metrics\">/metrics</a> <a href=\"/report\">/report</a> "
                    "<span class=\"muted\">(JSON)</span></nav>\n</header>\n");
}

/* Appends the footer and closes the page. Cannot fail. */
static void put_tail(struct buf *b) {
        buf_puts(b, "<footer>gpunode " GPUNODE_VERSION ": diagnoses the node bottom-up, hardware first. "
                    "Raw data: <a href=\"/report\">/report</a> (the gpunode.report/v1 JSON), "
                    "<a href=\"/metrics\">/metrics</a> (Prometheus).</footer>\n</main>\n</body>\n</html>\n");
}

/* Returns a malloc'd page that holds only a message (the program's own HTML) under the usual head.
 * Never fails. */
static char *message_page(const char *node, const char *title, const char *message, int refresh_s) {
        struct buf b = {};
        _cleanup_free_ char *suffix = xasprintf(" - %s", title);
        put_head(&b, node ? node : "this node", suffix, refresh_s);
        buf_printf(&b,
                   "<section id=\"verdict\" class=\"verdict\">\n<p class=\"vword\">%s</p>\n<p>%s</p>\n"
                   "</section>\n",
                   title, message);
        put_tail(&b);
        return b.data;
}

/* Appends the evidence of f as a list, at most STATUS_PAGE_MAX_EVIDENCE lines and none once the page has
 * reached STATUS_PAGE_BUDGET bytes, the rest counted ("and N more", with the lines the reader left out).
 * Nothing when f has none. Cannot fail. */
static void put_evidence(struct buf *b, const struct finding *f) {
        size_t n = f->n_evidence + f->n_evidence_more;
        if (n == 0) return;
        buf_puts(b, "<ul class=\"ev\">\n");
        size_t i;
        for (i = 0; i < f->n_evidence && i < STATUS_PAGE_MAX_EVIDENCE && b->len < STATUS_PAGE_BUDGET; i++) {
                buf_puts(b, "<li>");
                put_text(b, f->evidence[i]);
                buf_puts(b, "</li>\n");
        }
        if (i < n)
                buf_printf(b,
                           "<li class=\"more\">and %zu more (%s): the full list is in "
                           "<a href=\"/report\">/report</a></li>\n",
                           n - i, i < STATUS_PAGE_MAX_EVIDENCE ? "page size limit" : "not shown here");
        buf_puts(b, "</ul>\n");
}

/* Appends the remedy text (NULL or empty: nothing) in a remedy box. Cannot fail. */
static void put_remedy(struct buf *b, const char *remedy) {
        if (!remedy || !*remedy) return;
        buf_puts(b, "<p class=\"remedy\"><strong>Remedy:</strong> ");
        put_text(b, remedy);
        buf_puts(b, "</p>\n");
}

/* Appends when the report's facts were read, "checked at 2026-12-02T02:14:00Z (40 s ago)", as of now
 * (seconds since the epoch); nothing when the report does not say. A time ahead of now says so. Cannot
 * fail. */
static void put_checked_at(struct buf *b, const struct report *report, int64_t now) {
        if (report->time <= 0) return;
        char when[RFC3339_MAX];
        int64_t age = now - report->time;
        buf_printf(b, "<p id=\"checked\" class=\"muted\">checked at <time datetime=\"%s\">%s</time> ",
                   rfc3339_format(report->time, when), when);
        if (age >= 0)
                buf_printf(b, "(%" PRId64 " s ago)", age);
        else
                buf_printf(b, "(%" PRId64 " s ahead of this node's clock)", -age);
        if (report->version[0]) {
                buf_puts(b, " by gpunode ");
                put_text(b, report->version);
        }
        buf_puts(b, "</p>\n");
}

/* Appends the verdict banner: the verdict word large, in its colour with its sign, and the count of
 * checks by status. Cannot fail. */
static void put_verdict(struct buf *b, const struct report *report) {
        const char *verdict = verdict_name(report->verdict);
        const char *cls = status_class(verdict);
        buf_printf(b, "<section id=\"verdict\" class=\"verdict v-%s\">\n<p class=\"vword\">%s ", cls, status_sign(cls));
        put_text(b, verdict);
        buf_puts(b, "</p>\n<p>");
        size_t unchecked = 0;
        for (int l = LAYER_MIN; l <= LAYER_MAX; l++) unchecked += report_layer_status(report, l) == CHECK_SKIP;
        if (streq(cls, "ok") && unchecked == 0)
                buf_puts(b, "Every layer is healthy: hardware, container integration, Kubernetes, observability.");
        else if (streq(cls, "ok")) {
                /* a layer that was not checked (no cluster access: Kubernetes) is not called healthy */
                buf_puts(b, "Every layer checked is healthy. Not checked:");
                for (int l = LAYER_MIN, put = 0; l <= LAYER_MAX; l++)
                        if (report_layer_status(report, l) == CHECK_SKIP)
                                buf_printf(b, "%s layer %d (%s)", put++ ? "," : "", l, layer_name(l));
                buf_puts(b, ".");
        } else if (streq(cls, "warn"))
                buf_puts(b, "GPU work runs; something below needs a look (a warning, or observability failing).");
        else if (streq(cls, "bad"))
                buf_puts(b, "The node cannot run GPU work as it should: the root cause is below.");
        else
                buf_puts(b, "The report names no verdict this page knows.");
        buf_puts(b, "</p>\n");

        static const enum check_status order[] = { CHECK_PASS, CHECK_WARN, CHECK_FAIL, CHECK_BLOCKED, CHECK_SKIP };
        size_t counts[ELEMENTSOF(order)] = {};
        for (size_t i = 0; i < report->n_findings; i++)
                for (size_t k = 0; k < ELEMENTSOF(order); k++)
                        if (report->findings[i].status == order[k]) counts[k]++;
        buf_printf(b, "<p class=\"muted\">%zu checks:", report->n_findings);
        for (size_t k = 0; k < ELEMENTSOF(order); k++)
                if (counts[k]) buf_printf(b, " %zu %s,", counts[k], check_status_name(order[k]));
        b->data[b->len - 1] = b->data[b->len - 1] == ',' ? '.' : b->data[b->len - 1];
        buf_puts(b, "</p>\n</section>\n");
}

/* Appends the root-cause section: the failing check's id, layer and component, its summary, its
 * evidence and its remedy; or a line saying there is none. Cannot fail. */
static void put_root_cause(struct buf *b, const struct report *report) {
        const struct finding *rc = report->root_cause;
        if (!rc) {
                buf_printf(b,
                           "<section id=\"root-cause\" class=\"rc none\">\n<h2>Root cause</h2>\n<p>%s</p>\n"
                           "</section>\n",
                           report->verdict == VERDICT_HEALTHY
                                   ? "None: nothing failed."
                                   : "No single root cause: see the checks marked warn or fail below.");
                return;
        }
        buf_puts(b, "<section id=\"root-cause\" class=\"rc\">\n<h2>Root cause</h2>\n<p>");
        put_badge(b, check_status_name(rc->status));
        buf_puts(b, " <code class=\"rc-check\">");
        put_text(b, rc->def->id);
        buf_printf(b, "</code> <span class=\"muted\">layer %d \xc2\xb7 ", rc->def->layer);
        put_text(b, rc->def->component);
        buf_puts(b, "</span></p>\n<p class=\"rc-summary\">");
        put_opt(b, rc->summary, "");
        buf_puts(b, "</p>\n");
        if (rc->n_evidence + rc->n_evidence_more > 0) {
                buf_puts(b, "<h3>Evidence</h3>\n");
                put_evidence(b, rc);
        }
        put_remedy(b, rc->remedy);
        buf_puts(b, "</section>\n");
}

/* Appends a check's id as code; with link, a link to its explanation further down the page when the
 * registry knows it (put_explanations explains every check that did not pass or skip). Cannot fail. */
static void put_check_id(struct buf *b, const char *id, bool link) {
        bool known = link && check_find(id) != NULL;
        if (known) {
                buf_puts(b, "<a class=\"explain\" href=\"#explain-");
                put_text(b, id);
                buf_puts(b, "\">");
        }
        buf_puts(b, "<code>");
        put_text(b, id);
        buf_puts(b, known ? "</code></a>" : "</code>");
}

/* Appends one check as a <details>: badge, id and summary always visible; blocked_by, evidence and
 * remedy inside; failed checks open, the root cause marked. Cannot fail. */
static void put_check(struct buf *b, const struct finding *f, const struct finding *root_cause) {
        const char *cls = status_class(check_status_name(f->status));
        bool root = root_cause && streq(f->def->id, root_cause->def->id);
        buf_printf(b, "<details class=\"chk%s\"%s><summary>", root ? " root" : "",
                   streq(cls, "bad") || streq(cls, "warn") ? " open" : "");
        put_badge(b, check_status_name(f->status));
        put_check_id(b, f->def->id, f->status != CHECK_PASS && f->status != CHECK_SKIP);
        buf_puts(b, " ");
        if (root) buf_puts(b, "<strong>(root cause)</strong> ");
        put_opt(b, f->summary, "");
        buf_puts(b, "</summary>\n<div>\n");
        if (f->blocked_by) {
                buf_puts(b, "<p>Not run: it rests on <code>");
                put_text(b, f->blocked_by);
                buf_puts(b, "</code>.</p>\n");
        }
        if (f->n_evidence + f->n_evidence_more > 0)
                put_evidence(b, f);
        else if (!f->blocked_by)
                buf_puts(b, "<p class=\"muted\">No evidence recorded.</p>\n");
        put_remedy(b, f->remedy);
        buf_puts(b, "</div>\n</details>\n");
}

/* Appends the checks of one layer, at most STATUS_PAGE_MAX_CHECKS in all (*shown counts them) and none
 * once the page has reached its budget. Cannot fail. */
static void put_checks(struct buf *b, const struct report *report, int layer, size_t *shown) {
        for (size_t i = 0; i < report->n_findings; i++) {
                const struct finding *f = &report->findings[i];
                if (f->def->layer != layer) continue;
                if (*shown >= STATUS_PAGE_MAX_CHECKS || b->len >= STATUS_PAGE_BUDGET) continue;
                /* The checks of this layer blocked by the same failure: one line for them all, at the
                 * first of them (a driver failure blocks twenty-odd checks; their ids are inside). */
                size_t same = 0;
                bool first = true;
                if (f->status == CHECK_BLOCKED && f->blocked_by)
                        for (size_t k = 0; k < report->n_findings; k++) {
                                const struct finding *o = &report->findings[k];
                                if (o->def->layer != layer || o->status != CHECK_BLOCKED || !o->blocked_by ||
                                    !streq(o->blocked_by, f->blocked_by))
                                        continue;
                                if (k < i) first = false;
                                same++;
                        }
                if (same < 2) {
                        put_check(b, f, report->root_cause);
                } else if (first) {
                        buf_puts(b, "<details class=\"chk\"><summary>");
                        put_badge(b, check_status_name(CHECK_BLOCKED));
                        buf_printf(b, " %zu checks not run: they rest on ", same);
                        put_check_id(b, f->blocked_by, true);
                        buf_puts(b, ", which failed</summary>\n<div>\n<p>");
                        for (size_t k = i, put = 0; k < report->n_findings; k++) {
                                const struct finding *o = &report->findings[k];
                                if (o->def->layer != layer || o->status != CHECK_BLOCKED || !o->blocked_by ||
                                    !streq(o->blocked_by, f->blocked_by))
                                        continue;
                                if (put++) buf_puts(b, ", ");
                                put_check_id(b, o->def->id, true);
                        }
                        buf_puts(b, "</p>\n</div>\n</details>\n");
                }
                (*shown)++;
        }
}

/* Appends one check's explanation under the anchor its id links to (#explain-ID): its title, what it
 * reads, what its outcomes mean, the general remedy, from the registry. Cannot fail. */
static void put_explanation(struct buf *b, const struct check_def *d) {
        buf_puts(b, "<div class=\"explain\" id=\"explain-");
        put_text(b, d->id);
        buf_puts(b, "\"><h3><code>");
        put_text(b, d->id);
        buf_puts(b, "</code> ");
        put_text(b, d->title);
        buf_puts(b, "</h3>\n<p><strong>Reads:</strong> ");
        put_text(b, d->reads);
        buf_puts(b, "</p>\n<p><strong>Outcomes:</strong> ");
        put_text(b, d->outcomes);
        buf_puts(b, "</p>\n");
        put_remedy(b, d->remedy);
        buf_puts(b, "</div>\n");
}

/* Appends what `gpunode explain` says of every check the page names that did not pass or skip, and of
 * the checks blocking them, once each, from the registry this binary holds: the targets of the ids'
 * links. Bounded by the page's budget. Cannot fail. */
static void put_explanations(struct buf *b, const struct report *report) {
        const struct check_def *done[256];
        size_t n_done = 0;
        for (size_t i = 0; i < report->n_findings && b->len < STATUS_PAGE_BUDGET; i++) {
                const struct finding *f = &report->findings[i];
                if (f->status == CHECK_PASS || f->status == CHECK_SKIP) continue;
                const char *ids[2] = { f->blocked_by, f->def->id };
                for (size_t k = 0; k < ELEMENTSOF(ids); k++) {
                        const struct check_def *d = ids[k] ? check_find(ids[k]) : NULL;
                        bool seen = !d;
                        for (size_t j = 0; j < n_done && !seen; j++) seen = done[j] == d;
                        if (seen || n_done == ELEMENTSOF(done)) continue;
                        if (n_done == 0) buf_puts(b, "<section id=\"explain\">\n<h2>What the checks mean</h2>\n");
                        done[n_done++] = d;
                        put_explanation(b, d);
                }
        }
        if (n_done) buf_puts(b, "</section>\n");
}

/* Appends a section per layer (its status, its components' and its checks), bounded. Cannot fail. */
static void put_layers(struct buf *b, const struct report *report) {
        size_t shown = 0;
        buf_puts(b, "<h2>Layers, bottom-up</h2>\n");
        for (int layer = LAYER_MIN; layer <= LAYER_MAX; layer++) {
                buf_printf(b, "<section class=\"layer\" id=\"layer-%d\">\n<h2>", layer);
                put_badge(b, layer_status_name(report_layer_status(report, layer)));
                buf_printf(b, " Layer %d: %s</h2>\n", layer, layer_name(layer));
                /* the components in the order their first check comes, as the JSON report lists them (at most
                 * STATUS_PAGE_MAX_COMPONENTS, as many as it lists) */
                const char *seen[STATUS_PAGE_MAX_COMPONENTS];
                size_t n_seen = 0;
                for (size_t i = 0; i < report->n_findings && n_seen < ELEMENTSOF(seen); i++) {
                        const struct check_def *d = report->findings[i].def;
                        if (d->layer != layer) continue;
                        bool dup = false;
                        for (size_t k = 0; k < n_seen && !dup; k++) dup = streq(seen[k], d->component);
                        if (dup) continue;
                        if (n_seen == 0) buf_puts(b, "<ul class=\"comps\">\n");
                        seen[n_seen++] = d->component;
                        buf_puts(b, "<li>");
                        put_badge(b, layer_status_name(report_component_status(report, layer, d->component)));
                        buf_puts(b, " ");
                        put_text(b, d->component);
                        buf_puts(b, "</li>\n");
                }
                if (n_seen) buf_puts(b, "</ul>\n");
                put_checks(b, report, layer, &shown);
                buf_puts(b, "</section>\n");
        }
        if (shown < report->n_findings)
                buf_printf(b,
                           "<p class=\"muted\">%zu more checks are not shown here (page size limit): the full "
                           "list is in <a href=\"/report\">/report</a>.</p>\n",
                           report->n_findings - shown);
}

/* Appends the GPU table (index, UUID, PCI bus id, name, the pods holding it) from the report's GPUs;
 * nothing when the report has none. Bounded like the checks. Cannot fail. */
static void put_gpus(struct buf *b, const struct report *report) {
        size_t i, n = report->n_gpus;
        if (n == 0) return;
        buf_printf(b,
                   "<section id=\"gpus\">\n<h2>GPUs (%zu)</h2>\n<table>\n<thead><tr><th>#</th><th>UUID</th>"
                   "<th>PCI bus id</th><th>Name</th><th>Held by</th></tr></thead>\n<tbody>\n",
                   n);
        for (i = 0; i < n; i++) {
                if (i >= STATUS_PAGE_MAX_GPUS || b->len >= STATUS_PAGE_BUDGET) break;
                const struct report_gpu *gpu = &report->gpus[i];
                buf_printf(b, "<tr><td data-label=\"GPU\">%u", gpu->index);
                buf_puts(b, "</td><td data-label=\"UUID\"><code>");
                put_opt(b, gpu->uuid, "unknown (not answering)");
                buf_puts(b, "</code></td><td data-label=\"PCI\"><code>");
                put_opt(b, gpu->pci_bus_id, "unknown");
                buf_puts(b, "</code></td><td data-label=\"Name\">");
                put_opt(b, gpu->name, "unknown");
                buf_puts(b, "</td><td data-label=\"Held by\">");
                if (gpu->n_pods == 0)
                        buf_puts(b, "<span class=\"muted\">no pod</span>");
                else
                        buf_puts(b, "<ul>");
                for (size_t k = 0; k < gpu->n_pods; k++) {
                        if (k >= STATUS_PAGE_MAX_PODS) {
                                buf_printf(b, "<li class=\"muted\">and %zu more</li>", gpu->n_pods - k);
                                break;
                        }
                        const struct report_pod *pod = &gpu->pods[k];
                        buf_puts(b, "<li><code>");
                        put_opt(b, pod->namespace, "?");
                        buf_puts(b, "/");
                        put_opt(b, pod->pod, "?");
                        buf_puts(b, "</code>");
                        if (pod->container) {
                                buf_puts(b, " <span class=\"muted\">(");
                                put_text(b, pod->container);
                                buf_puts(b, ")</span>");
                        }
                        buf_puts(b, "</li>");
                }
                if (gpu->n_pods > 0) buf_puts(b, "</ul>");
                buf_puts(b, "</td></tr>\n");
        }
        buf_puts(b, "</tbody>\n</table>\n");
        if (i < n)
                buf_printf(b,
                           "<p class=\"muted\">%zu more GPUs are not shown here: see "
                           "<a href=\"/report\">/report</a>.</p>\n",
                           n - i);
        buf_puts(b, "</section>\n");
}

char *status_page_html(const struct report *report, const char *node) {
        return status_page_html_at(report, node, (int64_t)time(NULL));
}

char *status_page_html_at(const struct report *report, const char *node, int64_t now) {
        if (!report)
                return message_page(node, "diagnosis running",
                                    "The first diagnosis has not finished yet. This page reloads itself every "
                                    "10 seconds and shows the report once there is one.",
                                    10);

        const char *shown_node = node ? node : report->node ? report->node : "this node";
        const char *cls = status_class(verdict_name(report->verdict));
        struct buf b = {};
        put_head(&b, shown_node,
                 streq(cls, "ok")     ? " - healthy"
                 : streq(cls, "warn") ? " - degraded"
                 : streq(cls, "bad")  ? " - FAILED"
                                      : "",
                 STATUS_PAGE_REFRESH_S);
        put_verdict(&b, report);
        put_checked_at(&b, report, now);
        put_root_cause(&b, report);
        put_layers(&b, report);
        put_gpus(&b, report);
        put_explanations(&b, report);
        put_tail(&b);
        return b.data;
}
