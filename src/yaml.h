/* yaml.h: YAML (and JSON) text into a libfyaml document, with errors that give line and column. */
#pragma once

#include <stddef.h>

struct fy_document;

/* Parses text (len bytes, not necessarily NUL-terminated) into a document to free with
 * fy_document_destroy. Returns 0; -EINVAL with "invalid YAML at line L, column C: message" (or
 * "invalid UTF-8 at line L (byte B)": libfyaml 0.7 can loop forever on invalid UTF-8, so it is
 * refused first) in
 * *ret_error; -ELIBACC when libfyaml cannot be loaded; -ENOMEM. */
int yaml_parse(const char *text, size_t len, struct fy_document **ret, char **ret_error);
