/* kmsg_evidence.h: the kernel log's lines as check evidence, shared by the layer 1 checks. */
#pragma once

#include "engine/check.h"
#include "facts/layer1_hardware.h"
#include "layer1_hardware/kmsg.h"

#define KMSG_WHEN_MAX 96

/* Writes when line l was logged, for evidence, to buf: " at 2026-12-02T02:14:00Z (kernel time 5.001000
 * s)" when the log's boot time is known and the line has a seconds-since-boot stamp, " at kernel time
 * 5.001000 s" without the boot time, " at Wed Jul 31 23:14:18 2024" for a stamp that is already a wall
 * time (dmesg -T, syslog), "" for a line without one. Returns buf; never fails. */
const char *kmsg_line_when(const struct kmsg_facts *k, const struct kmsg_line *l, char buf[KMSG_WHEN_MAX]);

/* Returns when line l was logged in seconds since the epoch: the boot time plus its seconds-since-boot
 * stamp when both are known, 0 otherwise (a wall stamp as dmesg -T writes it has no year-safe zone and
 * is left to the evidence text). Never fails. */
int64_t kmsg_line_time(const struct kmsg_facts *k, const struct kmsg_line *l);

/* Adds the kernel log's lines of one event kind (enum kmsg_event_kind) as evidence; returns their
 * count (0 when the log was not read or holds none). */
size_t kmsg_evidence(const struct kmsg_facts *k, int kind, struct finding *f);
/* Adds the kernel log's API mismatch lines, with the versions they name, as evidence. Returns nothing. */
void kmsg_api_mismatch_evidence(const struct kmsg_facts *k, struct finding *f);
