/* symptoms.h: the troubleshooting table: a symptom people see, where to look first, which checks cover it. */
#pragma once

#include <stddef.h>

#define SYMPTOM_MAX_CHECKS 6

struct symptom {
        int layer; /* where the symptom shows */
        const char *symptom;
        const char *look_first;
        const char *checks[SYMPTOM_MAX_CHECKS]; /* ids in the check registry; NULL-terminated if shorter */
};

/* Returns the table and its length. */
const struct symptom *symptom_table(size_t *ret_n);
