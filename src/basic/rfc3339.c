/* rfc3339.c: times as Kubernetes and gpunode's JSON write them, both ways. */
#include "basic/rfc3339.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Returns buf (see rfc3339.h). */
char *rfc3339_format(int64_t t, char buf[RFC3339_MAX]) {
        struct tm tm;
        time_t tt = (time_t)t;
        if ((int64_t)tt != t || !gmtime_r(&tt, &tm) || !strftime(buf, RFC3339_MAX, "%Y-%m-%dT%H:%M:%SZ", &tm))
                snprintf(buf, RFC3339_MAX, "%s", "1970-01-01T00:00:00Z");
        return buf;
}

/* Returns true when c is an ASCII digit. */
static bool digit(char c) {
        return c >= '0' && c <= '9';
}

/* Returns 0 or -EINVAL (see rfc3339.h). */
int rfc3339_parse(const char *s, int64_t *ret) {
        if (!s) return -EINVAL;
        /* The fixed part, digit by digit: strptime accepts too much (spaces, one-digit fields). */
        static const char shape[] = "dddd-dd-ddTdd:dd:dd";
        for (size_t i = 0; i < sizeof shape - 1; i++)
                if (shape[i] == 'd' ? !digit(s[i]) : s[i] != shape[i] && !(i == 10 && (s[i] == 't' || s[i] == ' ')))
                        return -EINVAL;
        struct tm tm = { 0 };
        tm.tm_year = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0') - 1900;
        tm.tm_mon = (s[5] - '0') * 10 + (s[6] - '0') - 1;
        tm.tm_mday = (s[8] - '0') * 10 + (s[9] - '0');
        tm.tm_hour = (s[11] - '0') * 10 + (s[12] - '0');
        tm.tm_min = (s[14] - '0') * 10 + (s[15] - '0');
        tm.tm_sec = (s[17] - '0') * 10 + (s[18] - '0');
        if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
                return -EINVAL;
        const char *p = s + sizeof shape - 1;
        if (*p == '.') {
                p++;
                if (!digit(*p)) return -EINVAL;
                while (digit(*p)) p++;
        }
        int64_t offset = 0;
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if ((*p == '+' || *p == '-') && digit(p[1]) && digit(p[2]) && p[3] == ':' && digit(p[4]) &&
                   digit(p[5])) {
                int h = (p[1] - '0') * 10 + (p[2] - '0'), m = (p[4] - '0') * 10 + (p[5] - '0');
                if (h > 23 || m > 59) return -EINVAL;
                offset = (*p == '+' ? 1 : -1) * (int64_t)(h * 3600 + m * 60);
                p += 6;
        } else {
                return -EINVAL;
        }
        if (*p) return -EINVAL;
        /* timegm normalises 31 February into 3 March (in tm too): a day that moved is no date */
        int mday = tm.tm_mday, sec = tm.tm_sec;
        time_t t = timegm(&tm);
        if (sec < 60 && tm.tm_mday != mday) return -EINVAL;
        *ret = (int64_t)t - offset;
        return 0;
}
