/* dlib.h: loading an optional shared library and a table of its symbols with dlopen/dlsym. */
#pragma once

#include <pthread.h>
#include <stddef.h>

struct dlib_state {
        pthread_mutex_t lock;
        int rc;      /* 1: not tried yet; then 0 or -errno, for good */
        char *error; /* the sentence for a failed load */
};
#define DLIB_STATE_INIT                                                                                                \
        { PTHREAD_MUTEX_INITIALIZER, 1, NULL }

/* Loads soname once per state and fills slots[i] with dlsym(names[i]). Returns 0, or -ELIBACC
 * (library missing) / -ELIBBAD (a symbol missing) with a malloc'd copy of the sentence in
 * *ret_error when ret_error is not NULL. Thread-safe; the library is never unloaded. */
int dlib_open(struct dlib_state *state, const char *soname, const char *const *names, size_t n, void **slots,
              char **ret_error);
