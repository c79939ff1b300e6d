/* rfc3339.h: times as Kubernetes and gpunode's JSON write them ("2026-12-02T06:10:00Z"), both ways. */
#pragma once

#include <stdint.h>
#include <time.h>

#define RFC3339_MAX 32 /* "2026-12-02T06:10:00Z" and room for an offset or fraction */

/* Writes t (seconds since the epoch) as UTC "YYYY-MM-DDTHH:MM:SSZ" to buf. Returns buf; a time
 * gmtime cannot represent writes "1970-01-01T00:00:00Z". Never fails. */
char *rfc3339_format(int64_t t, char buf[RFC3339_MAX]);

/* Parses an RFC 3339 time ("2026-12-02T06:10:00Z", "...:00.123456Z", "...:00+02:00") at s (NUL
 * ended) into seconds since the epoch in *ret, a fraction dropped, an offset applied. Returns 0, or
 * -EINVAL when s is NULL or not such a time (nothing after it allowed). */
int rfc3339_parse(const char *s, int64_t *ret);
