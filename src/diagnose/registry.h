/* registry.h: the one ordered list of node checks (registry.c) and the lookup by id. */
#pragma once

#include "engine/check.h"

/* Returns every node check, bottom-up (layer order, then dependency order), their number in *ret_n.
 * Never fails. */
const struct check_def *const *check_registry(size_t *ret_n);

/* Returns the definition with this id, or NULL when the registry has none. */
const struct check_def *check_find(const char *id);
