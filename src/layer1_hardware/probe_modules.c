/* probe_modules.c: loaded kernel modules, from /proc/modules. */
#include "facts/node.h"
#include "basic/hostfs.h"
#include "basic/kfmt.h"

#define PROC_MODULES "/proc/modules"

void probe_modules(struct module_facts *ret) {
        *ret = (struct module_facts){ 0 };
        _cleanup_free_ char *text = NULL;
        int r = hostfs_read(PROC_MODULES, HOSTFS_READ_MAX, &text, NULL);
        if (r < 0) {
                ret->rc = r;
                ret->error = read_error(PROC_MODULES, r);
                return;
        }
        /* Each line: "name size refcount users state address"; only the name matters. */
        ret->n_loaded = kfmt_proc_modules(text, &ret->loaded);
}

bool module_loaded(const struct module_facts *m, const char *name) {
        for (size_t i = 0; i < m->n_loaded; i++)
                if (streq(m->loaded[i], name)) return true;
        return false;
}

void module_facts_free(struct module_facts *f) {
        strv_free(f->loaded);
        free(f->error);
        *f = (struct module_facts){ 0 };
}
