/* dpkg.c: the one parser of dpkg's status file (deb822 stanzas), used by every probe that asks about a package. */
#include "basic/dpkg.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "basic/hostfs.h"
#include "basic/util.h"

/* Returns true when the byte is a blank inside a line (deb822: space or tab). */
static bool blank(char c) {
        return c == ' ' || c == '\t';
}

/* Returns true when the n-byte line holds only blanks (a stanza separator). */
static bool blank_line(const char *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (!blank(p[i])) return false;
        return true;
}

/* Returns the value of the n-byte line when it is "name: value" (name without case), cut at a NUL, trimmed, and its
 * length in *ret_n; NULL when the line is another field. */
static const char *field(const char *p, size_t n, const char *name, size_t *ret_n) {
        size_t l = strlen(name);
        if (n <= l || p[l] != ':' || strncasecmp(p, name, l) != 0) return NULL;
        const char *v = p + l + 1, *e = p + n;
        while (v < e && blank(*v)) v++;
        const char *nul = memchr(v, 0, (size_t)(e - v));
        if (nul) e = nul; /* a value ends at a NUL: the strings made of it could not hold more */
        while (e > v && blank(e[-1])) e--;
        *ret_n = (size_t)(e - v);
        return v;
}

/* Returns true when a Status value's last word is "installed" ("install ok installed", "hold ok installed"). */
static bool status_installed(const char *v, size_t n) {
        static const char word[] = "installed";
        const size_t wl = sizeof word - 1;
        if (n < wl || memcmp(v + n - wl, word, wl) != 0) return false;
        return n == wl || blank(v[n - wl - 1]);
}

/* The stanza being read. */
struct stanza {
        const char *name, *version;
        size_t name_n, version_n;
        bool installed;
};

/* Ends one stanza: appends it to ret when it names a package; then clears s. */
static void stanza_end(struct dpkg_status *ret, size_t *cap, struct stanza *s) {
        if (s->name && s->name_n > 0) {
                if (ret->n_packages == *cap) {
                        *cap = *cap ? *cap * 2 : 256;
                        ret->packages = xrealloc(ret->packages, *cap * sizeof *ret->packages);
                }
                ret->packages[ret->n_packages++] = (struct dpkg_package){
                        .name = xstrndup(s->name, s->name_n),
                        .version = s->version ? xstrndup(s->version, s->version_n) : NULL,
                        .installed = s->installed,
                };
        }
        *s = (struct stanza){ 0 };
}

void dpkg_status_parse(const char *text, size_t len, struct dpkg_status *ret) {
        *ret = (struct dpkg_status){ 0 };
        size_t cap = 0;
        struct stanza s = { 0 };
        const char *p = text, *end = text + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
                if (n > 0 && p[n - 1] == '\r') n--;
                const char *v;
                size_t vn = 0;
                if (blank_line(p, n))
                        stanza_end(ret, &cap, &s);
                else if (blank(p[0]) || p[0] == '#')
                        ; /* a continuation line (Description, Conffiles) or a comment */
                else if ((v = field(p, n, "Package", &vn))) {
                        s.name = v;
                        s.name_n = vn;
                } else if ((v = field(p, n, "Version", &vn))) {
                        s.version = v;
                        s.version_n = vn;
                } else if ((v = field(p, n, "Status", &vn)))
                        s.installed = status_installed(v, vn);
                p = nl ? nl + 1 : end;
        }
        stanza_end(ret, &cap, &s);
}

void dpkg_status_read(struct dpkg_status *ret) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = hostfs_read(DPKG_STATUS_PATH, DPKG_STATUS_MAX, &text, &len);
        if (r < 0) {
                *ret = (struct dpkg_status){ .rc = r };
                return;
        }
        dpkg_status_parse(text, len, ret);
}

const struct dpkg_package *dpkg_status_installed(const struct dpkg_status *s, const char *name) {
        if (!s) return NULL;
        for (size_t i = 0; i < s->n_packages; i++) {
                const struct dpkg_package *p = &s->packages[i];
                if (p->installed && p->version && *p->version && streq(p->name, name)) return p;
        }
        return NULL;
}

void dpkg_status_free(struct dpkg_status *s) {
        for (size_t i = 0; i < s->n_packages; i++) {
                free(s->packages[i].name);
                free(s->packages[i].version);
        }
        free(s->packages);
        *s = (struct dpkg_status){ 0 };
}
