/* dp_config.c: NVIDIA's device plugin config file (api/config/v1) read with NVIDIA's rules and refusals, the one
 * parser of it for the device plugin and for GFD's labels. */
#include "dpconfig/dp_config.h"
#include "basic/util.h"
#include "basic/yaml.h"

#include <ctype.h>

void dp_config_init(struct dp_config *c) {
        *c = (struct dp_config){ .mig_strategy = DP_MIG_NONE, .fail_on_init_error = true };
}

void dp_config_done(struct dp_config *c) {
        for (size_t i = 0; i < c->n_resources; i++) {
                struct dp_replicated *r = &c->resources[i];
                free(r->name);
                free(r->rename);
                for (size_t k = 0; k < r->n_devices; k++) free(r->devices[k]);
                free(r->devices);
        }
        free(c->resources);
        free(c->cdi_annotation_prefix);
        free(c->dev_root);
        dp_config_init(c);
}

int dp_list_strategy_parse(const char *s) {
        static const struct {
                const char *name;
                int bit;
        } names[] = { { "envvar", DP_LIST_ENVVAR },
                      { "volume-mounts", DP_LIST_VOLUME_MOUNTS },
                      { "cdi-annotations", DP_LIST_CDI_ANNOTATIONS },
                      { "cdi-cri", DP_LIST_CDI_CRI } };
        int set = 0;
        const char *p = s;
        for (;;) {
                const char *end = strchr(p, ',');
                size_t n = end ? (size_t)(end - p) : strlen(p);
                while (n && isspace((unsigned char)*p)) p++, n--;
                while (n && isspace((unsigned char)p[n - 1])) n--;
                bool found = false;
                for (size_t i = 0; i < ELEMENTSOF(names); i++)
                        if (strlen(names[i].name) == n && strncmp(names[i].name, p, n) == 0) {
                                set |= names[i].bit;
                                found = true;
                        }
                if (!found) return -EINVAL;
                if (!end) break;
                p = end + 1;
        }
        return set;
}

int dp_mig_strategy_parse(const char *s, enum dp_mig_strategy *ret) {
        if (streq(s, "none"))
                *ret = DP_MIG_NONE;
        else if (streq(s, "single"))
                *ret = DP_MIG_SINGLE;
        else if (streq(s, "mixed"))
                *ret = DP_MIG_MIXED;
        else
                return -EINVAL;
        return 0;
}

/* Returns true when the JSON string v holds a NUL byte (YAML's "\0", JSON's \u0000): the C string
 * kept of it would end there, silently. */
static bool has_nul(json_t *v) {
        return memchr(json_string_value(v), 0, json_string_length(v)) != NULL;
}

/* Reads a boolean field (YAML gives strings "true"/"false"; JSON gives booleans). Returns 0 (absent
 * or null leaves *ret), or -EINVAL with a sentence naming where. */
static int get_bool(json_t *obj, const char *key, const char *where, bool *ret, char **ret_error) {
        json_t *v = json_object_get(obj, key);
        if (!v || json_is_null(v)) return 0;
        if (json_is_boolean(v)) {
                *ret = json_is_true(v);
                return 0;
        }
        const char *s = json_string_value(v);
        if (s && has_nul(v)) return errorf(ret_error, -EINVAL, "%s%s: contains a NUL byte (\\0)", where, key);
        if (s && (streq(s, "true") || streq(s, "True") || streq(s, "TRUE")))
                *ret = true;
        else if (s && (streq(s, "false") || streq(s, "False") || streq(s, "FALSE")))
                *ret = false;
        else
                return errorf(ret_error, -EINVAL, "%s%s must be true or false", where, key);
        return 0;
}

/* Reads a string field. Returns 0 with *ret borrowed (NULL when absent or null), or -EINVAL (not a
 * string, or one holding a NUL byte) with a sentence naming the field. */
static int get_string(json_t *obj, const char *key, const char *where, const char **ret, char **ret_error) {
        json_t *v = json_object_get(obj, key);
        *ret = NULL;
        if (!v || json_is_null(v)) return 0;
        if (!json_is_string(v)) return errorf(ret_error, -EINVAL, "%s%s must be a string", where, key);
        if (has_nul(v)) return errorf(ret_error, -EINVAL, "%s%s: contains a NUL byte (\\0)", where, key);
        *ret = json_string_value(v);
        return 0;
}

/* Reads a whole number (YAML's scalars are strings, JSON's integers). Returns 0 with *ret, 1 when
 * absent, or -EINVAL. */
static int get_int(json_t *v, int64_t *ret) {
        if (!v || json_is_null(v)) return 1;
        if (json_is_integer(v)) {
                *ret = json_integer_value(v);
                return 0;
        }
        const char *s = json_string_value(v);
        if (!s || has_nul(v) || parse_i64(s, ret) < 0) return -EINVAL;
        return 0;
}

/* Returns true when s is a resource name NVIDIA's plugin accepts: "nvidia.com/<name>" with the
 * name of DNS-label characters, '.', '_' and '-', at most 63 bytes. */
static bool resource_name_ok(const char *s) {
        const char *n = startswith(s, "nvidia.com/");
        if (!n || !*n || strlen(n) > 63) return false;
        for (const char *p = n; *p; p++)
                if (!isalnum((unsigned char)*p) && *p != '-' && *p != '.' && *p != '_') return false;
        return true;
}

/* Reads the devices field of a replicated resource. Returns 0 or -EINVAL. */
static int read_devices(json_t *v, struct dp_replicated *r, const char *where, char **ret_error) {
        r->all = true;
        if (!v || json_is_null(v)) return 0;
        int64_t n;
        if (json_is_string(v) && !has_nul(v) && streq(json_string_value(v), "all")) return 0;
        if (!json_is_array(v) && get_int(v, &n) == 0) {
                if (n <= 0 || n > 1024)
                        return errorf(ret_error, -EINVAL, "%sdevices: a count of devices must be 1..1024", where);
                r->all = false;
                r->count = (unsigned)n;
                return 0;
        }
        if (!json_is_array(v))
                return errorf(ret_error, -EINVAL,
                              "%sdevices must be \"all\", a count or a list of GPU indices or UUIDs", where);
        if (json_array_size(v) > 1024) return errorf(ret_error, -EINVAL, "%sdevices: more than 1024 entries", where);
        r->all = false;
        r->devices = xcalloc(json_array_size(v) + 1, sizeof *r->devices);
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
                char buf[32];
                const char *s = json_string_value(e);
                if (json_is_integer(e) && json_integer_value(e) >= 0) {
                        snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(e));
                        s = buf;
                }
                if (!s || !*s || strlen(s) > 128 || (json_is_string(e) && has_nul(e)))
                        return errorf(ret_error, -EINVAL,
                                      "%sdevices[%zu] must be a GPU index, a MIG index (0:1) or a UUID%s", where, i,
                                      json_is_string(e) && has_nul(e) ? " (it contains a NUL byte)" : "");
                r->devices[r->n_devices++] = xstrdup(s);
        }
        return 0;
}

/* Reads sharing.<kind> (timeSlicing or mps: NVIDIA's ReplicatedResources, the same fields and rules) into c.
 * Returns 0 (nothing when absent or null) or -EINVAL. */
static int read_replicated(json_t *ts, const char *kind, enum dp_sharing sharing, struct dp_config *c,
                           char **ret_error) {
        if (!ts || json_is_null(ts)) return 0;
        if (!json_is_object(ts)) return errorf(ret_error, -EINVAL, "sharing.%s must be a mapping", kind);
        char w[32];
        snprintf(w, sizeof w, "sharing.%s.", kind);
        int r = get_bool(ts, "renameByDefault", w, &c->rename_by_default, ret_error);
        if (r < 0) return r;
        r = get_bool(ts, "failRequestsGreaterThanOne", w, &c->fail_requests_greater_than_one, ret_error);
        if (r < 0) return r;
        json_t *res = json_object_get(ts, "resources");
        if (!json_is_array(res) || json_array_size(res) == 0)
                return errorf(ret_error, -EINVAL, "sharing.%s: no resources specified", kind);
        if (json_array_size(res) > DP_MAX_CONFIG_RESOURCES)
                return errorf(ret_error, -EINVAL, "sharing.%s.resources: more than %u entries", kind,
                              DP_MAX_CONFIG_RESOURCES);
        c->sharing = sharing;
        c->resources = xcalloc(json_array_size(res), sizeof *c->resources);
        size_t i;
        json_t *e;
        json_array_foreach(res, i, e) {
                char where[64];
                snprintf(where, sizeof where, "sharing.%s.resources[%zu].", kind, i);
                if (!json_is_object(e))
                        return errorf(ret_error, -EINVAL, "%.*s must be a mapping", (int)strlen(where) - 1, where);
                struct dp_replicated *rr = &c->resources[c->n_resources++];
                const char *name, *rename;
                r = get_string(e, "name", where, &name, ret_error);
                if (r < 0) return r;
                if (!name) return errorf(ret_error, -EINVAL, "%sname: no resource name specified", where);
                if (!resource_name_ok(name))
                        return errorf(ret_error, -EINVAL, "%sname: \"%s\" is not a resource name nvidia.com/<name>",
                                      where, name);
                rr->name = xstrdup(name);
                r = get_string(e, "rename", where, &rename, ret_error);
                if (r < 0) return r;
                if (rename && *rename) {
                        /* NVIDIA's plugin takes a bare name as nvidia.com/<name>. */
                        rr->rename = strchr(rename, '/') ? xstrdup(rename) : xasprintf("nvidia.com/%s", rename);
                        if (!resource_name_ok(rr->rename))
                                return errorf(ret_error, -EINVAL, "%srename: \"%s\" is not a resource name", where,
                                              rename);
                }
                int64_t n;
                int k = get_int(json_object_get(e, "replicas"), &n);
                if (k == 1) return errorf(ret_error, -EINVAL, "%sreplicas: no replicas specified", where);
                if (k < 0) return errorf(ret_error, -EINVAL, "%sreplicas must be a whole number", where);
                if (n < 2) return errorf(ret_error, -EINVAL, "%sreplicas: number of replicas must be >= 2", where);
                if (n > DP_MAX_REPLICAS)
                        return errorf(ret_error, -EINVAL, "%sreplicas: more than %u", where, DP_MAX_REPLICAS);
                rr->replicas = (unsigned)n;
                r = read_devices(json_object_get(e, "devices"), rr, where, ret_error);
                if (r < 0) return r;
                if (c->rename_by_default && !rr->rename) rr->rename = xasprintf("%s.shared", rr->name);
                for (size_t j = 0; j + 1 < c->n_resources; j++)
                        if (streq(c->resources[j].name, rr->name))
                                return errorf(ret_error, -EINVAL, "%sname: %s is listed twice", where, rr->name);
        }
        return 0;
}

int dp_config_from_json(json_t *root, unsigned parse_flags, struct dp_config *c, char **ret_error) {
        if (!json_is_object(root)) return errorf(ret_error, -EINVAL, "the config is not a mapping");
        const char *version;
        int r = get_string(root, "version", "", &version, ret_error);
        if (r < 0) return r;
        if (version && !streq(version, "v1"))
                return errorf(ret_error, -EINVAL, "version: \"%s\" is not supported (only v1)", version);
        json_t *flags = json_object_get(root, "flags");
        if (flags && !json_is_null(flags)) {
                if (!json_is_object(flags)) return errorf(ret_error, -EINVAL, "flags must be a mapping");
                const char *mig;
                r = get_string(flags, "migStrategy", "flags.", &mig, ret_error);
                if (r < 0) return r;
                if (mig && dp_mig_strategy_parse(mig, &c->mig_strategy) < 0)
                        return errorf(ret_error, -EINVAL, "flags.migStrategy: \"%s\" is not none, single or mixed",
                                      mig);
                r = get_bool(flags, "failOnInitError", "flags.", &c->fail_on_init_error, ret_error);
                if (r < 0) return r;
                const char *dev_root;
                r = get_string(flags, "nvidiaDevRoot", "flags.", &dev_root, ret_error);
                if (r < 0) return r;
                if (dev_root && *dev_root) {
                        if (dev_root[0] != '/' || strlen(dev_root) > 256)
                                return errorf(ret_error, -EINVAL,
                                              "flags.nvidiaDevRoot: \"%.100s\" is not an absolute path", dev_root);
                        free(c->dev_root);
                        c->dev_root = xstrdup(dev_root);
                }
                json_t *plugin = json_object_get(flags, "plugin");
                if (plugin && !json_is_null(plugin)) {
                        if (!json_is_object(plugin))
                                return errorf(ret_error, -EINVAL, "flags.plugin must be a mapping");
                        const char *w = "flags.plugin.";
                        r = get_bool(plugin, "passDeviceSpecs", w, &c->pass_device_specs, ret_error);
                        if (r < 0) return r;
                        json_t *ls = json_object_get(plugin, "deviceListStrategy");
                        if (ls && !json_is_null(ls)) {
                                /* A string (maybe comma-separated) or a list of strings. */
                                unsigned set = 0;
                                json_t *one;
                                size_t i;
                                if (json_is_string(ls)) {
                                        int k = has_nul(ls) ? -EINVAL : dp_list_strategy_parse(json_string_value(ls));
                                        if (k < 0) goto bad_list;
                                        set = (unsigned)k;
                                } else if (json_is_array(ls) && json_array_size(ls) > 0) {
                                        json_array_foreach(ls, i, one) {
                                                int k = json_is_string(one) && !has_nul(one)
                                                                ? dp_list_strategy_parse(json_string_value(one))
                                                                : -EINVAL;
                                                if (k < 0) goto bad_list;
                                                set |= (unsigned)k;
                                        }
                                } else {
                                bad_list:
                                        return errorf(ret_error, -EINVAL,
                                                      "flags.plugin.deviceListStrategy must be envvar, volume-mounts, "
                                                      "cdi-annotations or cdi-cri (or a list of them)");
                                }
                                c->list_strategies = set;
                        }
                        const char *ids, *prefix;
                        r = get_string(plugin, "deviceIDStrategy", w, &ids, ret_error);
                        if (r < 0) return r;
                        if (ids && !streq(ids, "uuid") && !streq(ids, "index"))
                                return errorf(ret_error, -EINVAL,
                                              "flags.plugin.deviceIDStrategy: \"%s\" is not uuid or index", ids);
                        c->id_index = ids && streq(ids, "index");
                        r = get_string(plugin, "cdiAnnotationPrefix", w, &prefix, ret_error);
                        if (r < 0) return r;
                        if (prefix && *prefix) {
                                free(c->cdi_annotation_prefix);
                                c->cdi_annotation_prefix = xstrdup(prefix);
                        }
                }
        }
        json_t *sharing = json_object_get(root, "sharing");
        if (sharing && !json_is_null(sharing)) {
                if (!json_is_object(sharing)) return errorf(ret_error, -EINVAL, "sharing must be a mapping");
                json_t *mps = json_object_get(sharing, "mps");
                if (mps && !json_is_null(mps) && !(parse_flags & DP_CONFIG_MPS))
                        return errorf(ret_error, -EINVAL,
                                      "sharing.mps: MPS sharing is not supported by gpunode's device plugin "
                                      "(it needs NVIDIA's MPS control daemon); use time-slicing or NVIDIA's plugin");
                /* With both, MPS is the strategy (GFD's Sharing.SharingStrategy()). */
                if (mps && !json_is_null(mps))
                        r = read_replicated(mps, "mps", DP_SHARING_MPS, c, ret_error);
                else
                        r = read_replicated(json_object_get(sharing, "timeSlicing"), "timeSlicing",
                                            DP_SHARING_TIME_SLICING, c, ret_error);
                if (r < 0) return r;
        }
        return 0;
}

int dp_config_parse(const char *text, size_t len, unsigned flags, struct dp_config *c, char **ret_error) {
        if (len > DP_CONFIG_MAX_BYTES) return errorf(ret_error, -EFBIG, "larger than %zu bytes", DP_CONFIG_MAX_BYTES);
        /* Nothing but blanks and comments: the defaults (as NVIDIA's plugin reads an empty file). */
        bool empty = true;
        for (size_t i = 0; i < len && empty;) {
                while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\r' || text[i] == '\n')) i++;
                if (i < len && text[i] != '#') empty = false;
                while (i < len && text[i] != '\n') i++;
        }
        if (empty) return 0;
        json_t *root = NULL;
        _cleanup_free_ char *error = NULL;
        int r = yaml_to_json(text, len, &root, &error);
        if (r < 0) return errorf(ret_error, r, "%s", error ? error : strerror(-r));
        if (json_is_null(root)) {
                json_decref(root);
                return 0; /* an empty file: the defaults */
        }
        r = dp_config_from_json(root, flags, c, ret_error);
        json_decref(root);
        return r;
}

const char *dp_replicated_advertised(const struct dp_replicated *r) {
        return r->rename ? r->rename : r->name;
}

const struct dp_replicated *dp_config_replicated(const struct dp_config *c, const char *name) {
        for (size_t i = 0; i < c->n_resources; i++)
                if (streq(c->resources[i].name, name)) return &c->resources[i];
        return NULL;
}
