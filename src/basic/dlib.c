/* dlib.c: dlopen of an optional library and its symbol table, once, thread-safe. */
#include "basic/dlib.h"
#include "basic/util.h"

#include <dlfcn.h>

int dlib_open(struct dlib_state *state, const char *soname, const char *const *names, size_t n, void **slots,
              char **ret_error) {
        pthread_mutex_lock(&state->lock);
        if (state->rc == 1) {
                void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
                if (!h) {
                        const char *e = dlerror();
                        state->rc = -ELIBACC;
                        state->error = xasprintf("%s cannot be loaded (is its package installed?): %s", soname,
                                                 e ? e : "unknown error");
                } else {
                        state->rc = 0;
                        for (size_t i = 0; i < n; i++) {
                                slots[i] = dlsym(h, names[i]);
                                if (!slots[i]) {
                                        state->rc = -ELIBBAD;
                                        state->error = xasprintf("%s lacks %s: too old a version", soname, names[i]);
                                        break;
                                }
                        }
                }
        }
        int rc = state->rc;
        if (rc < 0 && ret_error) *ret_error = xstrdup(state->error);
        pthread_mutex_unlock(&state->lock);
        return rc;
}
