/* nvml_facts_json.h: NVML facts as the fake NVML's JSON description (a snapshot's nvml.json), both ways. */
#pragma once

#include <stddef.h>

#include "nvml/nvml_errors.h"
#include "nvml/nvml_facts.h"

/* Bounds on a description: more is refused as hostile, not a node. */
#define NVML_FACTS_JSON_MAX_BYTES (16u << 20)

/*
 * Parses json (len bytes, need not be NUL-terminated) as the fake NVML's description
 * (tests/fake-nvml/README.md) and returns the facts that gpunode's NVML probe would have gathered
 * had the fake answered from it: nvml_facts_from_json(nvml_facts_to_json(f)) gives back f for the
 * facts of a probe that did not time out. `block` is ignored (the facts are complete); `lost` and
 * `errors` give the calls' return codes as the fake would.
 * Returns 0 and *ret (free with nvml_facts_free; library_path is NULL), or -EINVAL with a malloc'd
 * sentence in *ret_error (may be NULL) when json is not such a description, -EFBIG when it is larger
 * than NVML_FACTS_JSON_MAX_BYTES.
 */
int nvml_facts_from_json(const char *json, size_t len, struct nvml_facts **ret, char **ret_error);

/*
 * Writes facts as the fake NVML's JSON description (tests/fake-nvml/README.md), so that a node's
 * facts replay through the fake. Returns 0 and a malloc'd string in *ret, or -ENOMEM.
 */
int nvml_facts_to_json(const struct nvml_facts *f, char **ret);
