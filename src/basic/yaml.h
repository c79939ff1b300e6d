/* yaml.h: YAML (and JSON) text into a jansson tree, parsed by libfyaml in a child process. */
#pragma once

#include <jansson.h>
#include <stddef.h>

/* Parses text (len bytes, not necessarily NUL-terminated) into a new jansson value: mappings
 * become objects (scalar keys), sequences arrays, scalars strings, except a plain empty, null,
 * Null, NULL or ~ scalar, an alias, or nesting deeper than 64, which become null.
 *
 * libfyaml runs in a forked child that hands back JSON: libfyaml 0.7.12 crashes on some hostile
 * input (a segfault in fy_indent_vacuum_internal, found by fuzz/fuzz_kubeconfig.c) and loops on
 * other input, and neither may take gpunode down or hang it. Returns 0; -EINVAL with "invalid
 * YAML at line L, column C: message" or "invalid UTF-8 at line L (byte B)" in *ret_error; -EIO
 * when the parser crashed; -ETIMEDOUT when it ran past 10 s; -EFBIG for a document whose JSON
 * form passes 64 MiB or whose parse needs more than the child's 256 MiB; a mapping with a key twice
 * is -EINVAL ("duplicate key 'K'"); -ELIBACC when libfyaml cannot be loaded; -errno when no child can be made. */
int yaml_to_json(const char *text, size_t len, json_t **ret, char **ret_error);
