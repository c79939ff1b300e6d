/* kmsg_evidence.h: the kernel log's lines as check evidence, shared by the layer 1 checks. */
#pragma once

#include "engine/check.h"
#include "facts/layer1_hardware.h"

/* Adds the kernel log's lines of one event kind (enum kmsg_event_kind) as evidence; returns their
 * count (0 when the log was not read or holds none). */
size_t kmsg_evidence(const struct kmsg_facts *k, int kind, struct finding *f);
/* Adds the kernel log's API mismatch lines, with the versions they name, as evidence. Returns nothing. */
void kmsg_api_mismatch_evidence(const struct kmsg_facts *k, struct finding *f);
