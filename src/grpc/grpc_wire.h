/* grpc_wire.h: gRPC over HTTP/2 without the HTTP/2: length-prefixed messages, status codes, timeouts, status text. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/util.h"

/* Every gRPC message on a stream is a 5-byte prefix (flag: 0 plain, 1 compressed; then the
 * length, 4 bytes big-endian) and the message (gRPC "PROTOCOL-HTTP2.md", Length-Prefixed-Message).
 * Nothing here knows which side it is on: a client reads answers and a server reads requests
 * with the same reader. */
#define GRPC_PREFIX_LEN 5

/* gRPC status codes (grpc/doc/statuscodes.md). */
enum grpc_code {
        GRPC_OK = 0,
        GRPC_CANCELLED = 1,
        GRPC_UNKNOWN = 2,
        GRPC_INVALID_ARGUMENT = 3,
        GRPC_DEADLINE_EXCEEDED = 4,
        GRPC_NOT_FOUND = 5,
        GRPC_ALREADY_EXISTS = 6,
        GRPC_PERMISSION_DENIED = 7,
        GRPC_RESOURCE_EXHAUSTED = 8,
        GRPC_FAILED_PRECONDITION = 9,
        GRPC_ABORTED = 10,
        GRPC_OUT_OF_RANGE = 11,
        GRPC_UNIMPLEMENTED = 12,
        GRPC_INTERNAL = 13,
        GRPC_UNAVAILABLE = 14,
        GRPC_DATA_LOSS = 15,
        GRPC_UNAUTHENTICATED = 16,
};

/* Returns the code's name as the gRPC documents spell it ("UNIMPLEMENTED"), or "UNKNOWN" for
 * a code outside 0..16 (as gRPC treats one). */
const char *grpc_code_name(int code);

/* Returns the negative errno that stands for a status code in this project: 0 for OK,
 * -EOPNOTSUPP UNIMPLEMENTED, -ETIMEDOUT DEADLINE_EXCEEDED, -EACCES PERMISSION_DENIED and
 * UNAUTHENTICATED, -EAGAIN UNAVAILABLE, -ENOENT NOT_FOUND, -EBUSY RESOURCE_EXHAUSTED (a
 * server's rate limit, as the kubelet's), -ECANCELED CANCELLED, -EREMOTEIO any other. */
int grpc_code_to_errno(int code);

/* Returns the gRPC status that stands for an HTTP status other than 200 in a response that
 * carried no grpc-status (grpc/doc/http-grpc-status-mapping.md). */
int grpc_code_from_http(int http_status);

/* Parses a grpc-status value (decimal, no sign, no spaces). Returns 0 with *ret, or -EINVAL. */
int grpc_parse_status(const char *value, size_t len, int *ret);

/* Returns the malloc'd text of a grpc-message value: percent-decoded (a "%" not followed by two
 * hex digits is kept as it is), then every byte that is not valid UTF-8 or is a control
 * character replaced by '?'. Never fails. */
char *grpc_message_decode(const char *value, size_t len);

/* Returns a malloc'd grpc-message value for text: bytes outside 0x20..0x7e and '%' written as
 * %XX, as the gRPC spec asks of a sender. Never fails. */
char *grpc_message_encode(const char *text);

/* Writes a grpc-timeout value for ms milliseconds ("5000m"; at most 8 digits, so longer
 * timeouts are written in seconds or hours) into buf of at least 16 bytes; returns buf. */
char *grpc_timeout_format(uint64_t ms, char buf[static 16]);

/* Parses a grpc-timeout value (1 to 8 digits and a unit H M S m u n). Returns 0 with the
 * timeout in milliseconds (rounded up; saturated) in *ret_ms, or -EINVAL. */
int grpc_timeout_parse(const char *value, size_t len, uint64_t *ret_ms);

/* Writes the 5-byte prefix of an uncompressed message of len bytes. Returns 0, or -EMSGSIZE
 * when len does not fit in 32 bits. */
int grpc_prefix_write(size_t len, uint8_t prefix[static GRPC_PREFIX_LEN]);

/* Called by the reader with each whole message, msg malloc'd (the callee owns it; len may be 0,
 * msg then still a valid allocation). Returns 0 to go on or a negative errno to stop the reader,
 * which returns it. */
typedef int (*grpc_message_fn)(uint8_t *msg, size_t len, void *userdata);

/* Reassembles messages from the bytes of a stream's DATA frames, in whatever pieces they come. */
struct grpc_reader {
        size_t max; /* the largest message accepted */
        uint8_t prefix[GRPC_PREFIX_LEN];
        size_t prefix_len; /* bytes of the prefix seen */
        size_t want;       /* the message's announced length, once the prefix is whole */
        uint8_t *msg;      /* the message so far: grows with what arrives, never past want */
        size_t len, cap;
        uint64_t messages; /* whole messages handed out */
};

/* Sets up a reader that accepts messages up to max bytes. */
void grpc_reader_init(struct grpc_reader *r, size_t max);
/* Frees what a reader holds; it can be used again after grpc_reader_init. */
void grpc_reader_done(struct grpc_reader *r);

/* Feeds len bytes of DATA to the reader, calling fn for each message completed. A length prefix
 * past max is refused as soon as the prefix is whole, before any of the message is buffered;
 * memory grows with the bytes that actually arrived. Returns 0, the callback's negative errno,
 * -EMSGSIZE (announced length past max) or -EPROTO (a compressed message: no encoding was
 * offered; or a flag other than 0 or 1), with a sentence in *ret_error that says what was seen. */
int grpc_reader_feed(struct grpc_reader *r, const uint8_t *data, size_t len, grpc_message_fn fn, void *userdata,
                     char **ret_error);

/* Returns true when the reader holds part of a message (a stream that ends now was cut short). */
bool grpc_reader_partial(const struct grpc_reader *r);
