/* Configuration sections of the server itself: listeners, the ops endpoint, the
 * state backend, limits. */
#include "config_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"

/* ---- listeners ---- */

static const key_spec_t tls_keys[] = {
    KEY("cert", YAML_TREE_SCALAR, config__parse_string, listener_config_t, tls_cert, NULL),
    KEY("key", YAML_TREE_SCALAR, config__parse_string, listener_config_t, tls_key, NULL),
    KEY("client_ca", YAML_TREE_SCALAR, config__parse_string, listener_config_t, tls_client_ca,
        NULL),
};

/* tls: {cert, key, client_ca}, stored in the listener itself (offset 0 of it). */
static bool parse_tls(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path, void *field,
                      const key_spec_t *spec) {
    listener_config_t *l = field;
    if (node == NULL) {
        return true;
    }
    config__section_parse(ctx, node, path, tls_keys, TABLE_LEN(tls_keys), l);
    if (node->type != YAML_TREE_MAPPING) {
        return false;
    }
    if (l->tls_cert == NULL && l->tls_key == NULL) {
        config__error(ctx, node, path, "cert and key are required for a TLS listener");
    } else if (l->tls_cert == NULL) {
        config__error(ctx, node, path, "key is set without cert");
    } else if (l->tls_key == NULL) {
        config__error(ctx, node, path, "cert is set without key");
    }
    return true;
}

/* The names of listen[].services, bit k is LISTENER_SERVICE_* 1 << k; each also by its
 * fully qualified gRPC service name (the same names as rpc/wire_names.h). */
static const char *const names_of_services[] = {"cloudprovider", "expander", "autoprovisioning",
                                                "health"};
static const char *const grpc_names_of_services[] = {
    "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider", "grpcplugin.Expander",
    "frugal.v1.Autoprovisioning", "grpc.health.v1.Health"};

/* services: [cloudprovider, expander, autoprovisioning, health]; absent: all of them. */
static bool parse_services(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, const key_spec_t *spec) {
    unsigned *services = field;
    if (node == NULL) {
        *services = LISTENER_SERVICES_ALL;
        return true;
    }
    if (config__seq_count(node) == 0) {
        config__error(ctx, node, path, "at least one service is required");
        return false;
    }
    *services = LISTENER_SERVICE_HEALTH;
    unsigned listed = 0;
    char sub[CONFIG_PATH_MAX];
    for (size_t i = 0; i < node->u.sequence.count; i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        config__path_index(sub, path, i);
        size_t k = 0;
        while (k < TABLE_LEN(names_of_services) &&
               (item->type != YAML_TREE_SCALAR ||
                (strcmp(item->u.scalar.text, names_of_services[k]) != 0 &&
                 strcmp(item->u.scalar.text, grpc_names_of_services[k]) != 0))) {
            k++;
        }
        if (k == TABLE_LEN(names_of_services)) {
            config__error(ctx, item, sub,
                          "unknown service (expected cloudprovider, expander, autoprovisioning or "
                          "health, or their gRPC service names)");
        } else if ((listed & (1u << k)) != 0) {
            config__error(ctx, item, sub, "service %s listed twice", names_of_services[k]);
        } else {
            listed |= 1u << k;
            *services |= 1u << k;
        }
    }
    return true;
}

static const key_spec_t listener_keys[] = {
    KEY_REQ("address", YAML_TREE_SCALAR, config__parse_string, listener_config_t, address),
    KEY("services", YAML_TREE_SEQUENCE, parse_services, listener_config_t, services, NULL),
    /* offset 0: parse_tls fills the listener itself */
    KEY("tls", YAML_TREE_MAPPING, parse_tls, listener_config_t, address, NULL),
};

/* NULL when address is host:port (port 1-65535, IPv6 in brackets) or unix:PATH, else
 * the reason; *loopback tells whether only this machine can reach it. */
static const char *address_problem(const char *address, bool *loopback) {
    *loopback = false;
    if (strncmp(address, "unix:", 5) == 0) {
        *loopback = true;
        return address[5] == '\0' ? "unix: needs a socket path" : NULL;
    }
    const char *colon = strrchr(address, ':');
    if (colon == NULL) {
        return "expected HOST:PORT or unix:PATH";
    }
    const char *port = colon + 1;
    size_t digits = strspn(port, "0123456789");
    if (digits == 0 || port[digits] != '\0' || digits > 5 || atoi(port) < 1 || atoi(port) > 65535) {
        return "port must be a number from 1 to 65535";
    }
    size_t hlen = (size_t)(colon - address);
    char host[256];
    if (hlen == 0) {
        return "missing host (use 0.0.0.0 or [::] for every interface)";
    }
    if (hlen >= sizeof(host)) {
        return "host is too long";
    }
    memcpy(host, address, hlen);
    host[hlen] = '\0';
    unsigned char buf[16];
    if (host[0] == '[') {
        if (hlen < 3 || host[hlen - 1] != ']') {
            return "an IPv6 address must be written [ADDRESS]:PORT";
        }
        host[hlen - 1] = '\0';
        if (inet_pton(AF_INET6, host + 1, buf) != 1) {
            return "invalid IPv6 address";
        }
        static const unsigned char v6_loopback[16] = {[15] = 1};
        static const unsigned char v4_mapped[12] = {[10] = 0xff, [11] = 0xff};
        *loopback = memcmp(buf, v6_loopback, 16) == 0 ||
                    (memcmp(buf, v4_mapped, 12) == 0 && buf[12] == 127); /* [::ffff:127.x] */
        return NULL;
    }
    if (strchr(host, ':') != NULL) {
        return "an IPv6 address must be written [ADDRESS]:PORT";
    }
    if (inet_pton(AF_INET, host, buf) == 1) {
        *loopback = buf[0] == 127;
        return NULL;
    }
    for (size_t i = 0; i < hlen; i++) {
        if (!isalnum((unsigned char)host[i]) && host[i] != '-' && host[i] != '.' &&
            host[i] != '_') {
            return "invalid host name";
        }
    }
    *loopback = strcasecmp(host, "localhost") == 0; /* host names are case-insensitive */
    return NULL;
}

/* Whether two valid listen addresses would bind the same socket: the same unix path, or
 * the same port where the hosts are equal, one is a wildcard (gRPC binds 0.0.0.0 like
 * [::], on both protocols), or localhost meets a loopback address (gRPC binds every
 * address a name resolves to). */
static bool addresses_collide(const char *a, const char *b) {
    if (strncmp(a, "unix:", 5) == 0 || strncmp(b, "unix:", 5) == 0)
        return strcmp(a, b) == 0;
    const char *ca = strrchr(a, ':'), *cb = strrchr(b, ':');
    if (ca == NULL || cb == NULL || atoi(ca + 1) != atoi(cb + 1))
        return false;
    size_t la = (size_t)(ca - a), lb = (size_t)(cb - b);
    if (la == lb && strncasecmp(a, b, la) == 0)
        return true;
    for (int k = 0; k < 2; k++) {
        const char *h = k ? b : a, *o = k ? a : b;
        size_t hl = k ? lb : la, ol = k ? la : lb;
        if ((hl == 4 && strncmp(h, "[::]", 4) == 0) || (hl == 7 && strncmp(h, "0.0.0.0", 7) == 0))
            return true;
        if (hl == 9 && strncasecmp(h, "localhost", 9) == 0 &&
            ((ol == 9 && strncmp(o, "127.0.0.1", 9) == 0) ||
             (ol == 5 && strncmp(o, "[::1]", 5) == 0)))
            return true;
    }
    return false;
}

void config__listener_free(listener_config_t *l) {
    free(l->address);
    free(l->tls_cert);
    free(l->tls_key);
    free(l->tls_client_ca);
}

/* listen: a non-empty sequence. Relies on allow_insecure having been parsed. */
bool config__parse_listeners(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                             void *field, const key_spec_t *spec) {
    frugal_config_t *cfg = ctx->cfg;
    char sub[CONFIG_PATH_MAX];
    char addr_path[CONFIG_PATH_MAX];
    for (size_t i = 0; i < cfg->listeners_count; i++) {
        config__listener_free(&cfg->listeners[i]);
    }
    free(cfg->listeners);
    cfg->listeners = NULL;
    cfg->listeners_count = 0;
    if (config__seq_count(node) == 0) {
        config__error(ctx, node, path, "at least one listener is required");
        return false;
    }
    for (size_t i = 0; i < node->u.sequence.count; i++) {
        const yaml_tree_node_t *item = node->u.sequence.items[i];
        listener_config_t l = {0};
        size_t before = ctx->error_count;
        config__path_index(sub, path, i);
        config__section_parse(ctx, item, sub, listener_keys, TABLE_LEN(listener_keys), &l);
        const yaml_tree_node_t *an = yaml_tree_mapping_get(item, "address");
        config__path_join(addr_path, sub, "address");
        if (l.address != NULL) {
            bool loopback;
            const char *problem = address_problem(l.address, &loopback);
            if (problem != NULL) {
                config__error(ctx, an, addr_path, "invalid address \"%s\": %s", l.address, problem);
            } else if (!loopback && yaml_tree_mapping_get(item, "tls") == NULL &&
                       !cfg->allow_insecure && l.services != LISTENER_SERVICE_HEALTH) {
                /* Health alone tells nothing and changes nothing: probes may have it. */
                config__error(ctx, an, addr_path,
                              "plaintext listener on non-loopback address \"%s\": configure tls "
                              "or set allow_insecure: true",
                              l.address);
            }
            for (size_t j = 0; problem == NULL && j < cfg->listeners_count; j++) {
                if (strcmp(cfg->listeners[j].address, l.address) == 0)
                    config__error(ctx, an, addr_path, "duplicate listener address \"%s\"",
                                  l.address);
                else if (addresses_collide(cfg->listeners[j].address, l.address))
                    config__error(ctx, an, addr_path,
                                  "listener address \"%s\" binds the same port as \"%s\"",
                                  l.address, cfg->listeners[j].address);
            }
        }
        listener_config_t *slot =
            ctx->error_count == before
                ? config__grow(ctx, &cfg->listeners, &cfg->listeners_count, sizeof(l))
                : NULL;
        if (slot == NULL) {
            config__listener_free(&l);
            continue;
        }
        *slot = l;
    }
    return true;
}

/* ops_listen: HOST:PORT of the plain-HTTP ops endpoint (health, readiness, metrics). */
bool config__parse_ops_listen(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                              void *field, const key_spec_t *spec) {
    if (!config__parse_string(ctx, node, path, field, spec) || *(char **)field == NULL)
        return false;
    const char *address = *(char **)field;
    bool loopback;
    const char *problem = strncmp(address, "unix:", 5) == 0 ? "the ops endpoint needs HOST:PORT"
                                                            : address_problem(address, &loopback);
    if (problem != NULL && strchr(address, ':') == NULL)
        problem = "expected HOST:PORT"; /* a unix socket is no choice here */
    if (problem != NULL)
        config__error(ctx, node, path, "invalid address \"%s\": %s", address, problem);
    for (size_t j = 0; problem == NULL && j < ctx->cfg->listeners_count; j++)
        if (addresses_collide(ctx->cfg->listeners[j].address, address))
            config__error(ctx, node, path, "\"%s\" binds the same port as the gRPC listener \"%s\"",
                          address, ctx->cfg->listeners[j].address);
    return true;
}

/* ---- state ---- */

static bool parse_state_backend(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    state_config_t *st = &ctx->cfg->state;
    if (strcmp(s, "file") == 0) {
        st->backend = STATE_BACKEND_FILE;
    } else if (strcmp(s, "etcd") == 0) {
        st->backend = STATE_BACKEND_ETCD;
    } else {
        config__error(ctx, node, path, "unknown state backend \"%s\" (expected file or etcd)", s);
        return false;
    }
    return config__parse_string(ctx, node, path, field, spec);
}

/* http://HOST:PORT or https://HOST:PORT; NULL when fine, else the reason. */
static const char *endpoint_problem(const char *e) {
    const char *rest = strncmp(e, "https://", 8) == 0  ? e + 8
                       : strncmp(e, "http://", 7) == 0 ? e + 7
                                                       : NULL;
    if (rest == NULL)
        return "must start with http:// or https://";
    const char *colon = strrchr(rest, ':');
    if (colon == NULL || colon == rest)
        return "must be SCHEME://HOST:PORT";
    for (const char *p = rest; *p != '\0'; p++) {
        if (*p == '/' || *p == '?' || *p == '#' || *p == '@' || (unsigned char)*p <= ' ')
            return "must be SCHEME://HOST:PORT, without a path, user or spaces";
    }
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (colon[1] == '\0' || *end != '\0' || port < 1 || port > 65535)
        return "the port must be a number from 1 to 65535";
    return NULL;
}

static bool parse_state_endpoints(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                  void *field, const key_spec_t *spec) {
    state_config_t *st = &ctx->cfg->state;
    char sub[CONFIG_PATH_MAX];
    if (node == NULL)
        return true;
    if (config__seq_count(node) == 0) {
        config__error(ctx, node, path, "at least one endpoint is required");
        return false;
    }
    size_t before = ctx->error_count;
    config__parse_strings(ctx, node, path, &st->endpoints, &st->endpoints_count);
    bool https = false, http = false;
    for (size_t i = 0; i < st->endpoints_count && ctx->error_count == before; i++) {
        const char *why = endpoint_problem(st->endpoints[i]);
        config__path_index(sub, path, i);
        if (why != NULL) {
            config__error(ctx, node->u.sequence.items[i], sub, "endpoint \"%s\": %s",
                          st->endpoints[i], why);
            continue;
        }
        https = https || strncmp(st->endpoints[i], "https://", 8) == 0;
        http = http || strncmp(st->endpoints[i], "http://", 7) == 0;
    }
    if (https && http)
        config__error(ctx, node, path, "mixes http:// and https:// endpoints");
    return ctx->error_count == before;
}

static bool parse_state_prefix(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                               void *field, const key_spec_t *spec) {
    const char *s = node->u.scalar.text;
    size_t n = strlen(s);
    if (node->u.scalar.len != n) {
        config__error(ctx, node, path, "must not hold a NUL byte");
        return false;
    }
    if (n < 2 || s[0] != '/' || s[n - 1] != '/') {
        config__error(ctx, node, path, "must start and end with / and name something, got \"%s\"",
                      s);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) {
            config__error(ctx, node, path, "must be printable ASCII without spaces, got \"%s\"", s);
            return false;
        }
    }
    if (strstr(s, "//") != NULL) {
        config__error(ctx, node, path, "must not hold an empty segment (//), got \"%s\"", s);
        return false;
    }
    return config__parse_string(ctx, node, path, field, spec);
}

static const key_spec_t state_tls_keys[] = {
    KEY("ca", YAML_TREE_SCALAR, config__parse_string, state_config_t, tls_ca, NULL),
    KEY("cert", YAML_TREE_SCALAR, config__parse_string, state_config_t, tls_cert, NULL),
    KEY("key", YAML_TREE_SCALAR, config__parse_string, state_config_t, tls_key, NULL),
};

static bool parse_state_tls(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    state_config_t *st = &ctx->cfg->state;
    if (node == NULL)
        return true;
    config__section_parse(ctx, node, path, state_tls_keys, TABLE_LEN(state_tls_keys), st);
    if ((st->tls_cert == NULL) != (st->tls_key == NULL))
        config__error(ctx, node, path, "%s is set without %s",
                      st->tls_cert != NULL ? "cert" : "key", st->tls_cert != NULL ? "key" : "cert");
    return true;
}

/* A duration within [lo_ms, hi_ms]. */
static bool state_duration(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                           void *field, int64_t lo_ms, int64_t hi_ms, const char *lo,
                           const char *hi) {
    int64_t ms = 0;
    if (!config__duration_store(ctx, node, path, &ms, 1000000))
        return false;
    if (ms < lo_ms || ms > hi_ms) {
        config__error(ctx, node, path, "must be from %s to %s, got %s", lo, hi,
                      node->u.scalar.text);
        return false;
    }
    *(int64_t *)field = ms;
    return true;
}

static bool parse_lease_ttl(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                            void *field, const key_spec_t *spec) {
    return state_duration(ctx, node, path, field, 2000, 300000, "2s", "5m");
}

static bool parse_request_timeout(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                                  void *field, const key_spec_t *spec) {
    return state_duration(ctx, node, path, field, 100, 60000, "100ms", "1m");
}

static const key_spec_t state_keys[] = {
    KEY_REQ("backend", YAML_TREE_SCALAR, parse_state_backend, state_config_t, backend_name),
    KEY("path", YAML_TREE_SCALAR, config__parse_string, state_config_t, path, NULL),
    KEY("endpoints", YAML_TREE_SEQUENCE, parse_state_endpoints, state_config_t, endpoints, NULL),
    KEY("prefix", YAML_TREE_SCALAR, parse_state_prefix, state_config_t, prefix, NULL),
    KEY("tls", YAML_TREE_MAPPING, parse_state_tls, state_config_t, tls_ca, NULL),
    KEY("lease_ttl", YAML_TREE_SCALAR, parse_lease_ttl, state_config_t, lease_ttl_ms, "10s"),
    KEY("request_timeout", YAML_TREE_SCALAR, parse_request_timeout, state_config_t,
        request_timeout_ms, "2s"),
};

/* Keys of one backend given with the other, and the keys each backend requires. */
static void state_check_backend(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path) {
    static const char *const etcd_only[] = {"endpoints", "prefix", "tls", "lease_ttl",
                                            "request_timeout"};
    state_config_t *st = &ctx->cfg->state;
    char sub[CONFIG_PATH_MAX];
    bool etcd = st->backend == STATE_BACKEND_ETCD;
    for (size_t i = 0; i < node->u.mapping.count; i++) {
        const yaml_tree_node_t *k = node->u.mapping.items[i].key;
        if (k->type != YAML_TREE_SCALAR)
            continue;
        bool only_etcd = false;
        for (size_t j = 0; j < TABLE_LEN(etcd_only); j++)
            only_etcd = only_etcd || strcmp(k->u.scalar.text, etcd_only[j]) == 0;
        config__path_join(sub, path, k->u.scalar.text);
        if (only_etcd && !etcd)
            config__error(ctx, k, sub, "only valid with backend etcd");
        else if (etcd && strcmp(k->u.scalar.text, "path") == 0)
            config__error(ctx, k, sub, "only valid with backend file");
    }
    if (!etcd && st->path == NULL) {
        config__error(ctx, node, path, "missing required key \"path\" (backend file)");
    } else if (etcd) {
        if (st->endpoints_count == 0 && yaml_tree_mapping_get(node, "endpoints") == NULL)
            config__error(ctx, node, path, "missing required key \"endpoints\" (backend etcd)");
        if (st->prefix == NULL && yaml_tree_mapping_get(node, "prefix") == NULL)
            config__error(ctx, node, path, "missing required key \"prefix\" (backend etcd)");
        bool https = st->endpoints_count > 0 && strncmp(st->endpoints[0], "https://", 8) == 0;
        const yaml_tree_node_t *tls = yaml_tree_mapping_get(node, "tls");
        if (tls != NULL && !yaml_tree_is_null(tls) && st->endpoints_count > 0 && !https) {
            config__path_join(sub, path, "tls");
            config__error(ctx, tls, sub, "needs https:// endpoints");
        }
    }
}

bool config__parse_state(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                         void *field, const key_spec_t *spec) {
    state_config_t *st = &ctx->cfg->state;
    if (node == NULL) {
        if (ctx->cfg->state_file != NULL) {
            st->backend = STATE_BACKEND_FILE;
            st->path = config__strdup(ctx, ctx->cfg->state_file);
        }
        return true;
    }
    if (ctx->cfg->state_file != NULL) {
        config__error(ctx, node, path,
                      "state and state_file are exclusive (state_file: PATH is short for "
                      "state: {backend: file, path: PATH})");
        return false;
    }
    size_t before = ctx->error_count;
    config__section_parse(ctx, node, path, state_keys, TABLE_LEN(state_keys), st);
    if (ctx->error_count == before)
        state_check_backend(ctx, node, path);
    if (ctx->error_count != before)
        return false;
    if (st->backend == STATE_BACKEND_FILE)
        ctx->cfg->state_file = config__strdup(ctx, st->path);
    return true;
}

void config__state_config_free(state_config_t *st) {
    free(st->backend_name);
    free(st->path);
    config__strings_free(st->endpoints, st->endpoints_count);
    free(st->prefix);
    free(st->tls_ca);
    free(st->tls_cert);
    free(st->tls_key);
}

/* ---- limits ---- */

#define LIMITS_MEMORY_SLACK (64LL << 20)

static const key_spec_t limits_keys_top[] = {
    KEY_RANGE("memory", config__parse_bytes, limits_config_t, memory_bytes, NULL, 1, INFINITY,
              false),
    /* 0 would cancel every call sent without a deadline before its message came. */
    KEY("receive_timeout", YAML_TREE_SCALAR, config__parse_positive_duration_ms, limits_config_t,
        receive_timeout_ms, "30s"),
    KEY("idle_timeout", YAML_TREE_SCALAR, config__parse_duration_ms, limits_config_t,
        idle_timeout_ms, "5m"),
    KEY_RANGE("max_concurrent_streams", config__parse_int32, limits_config_t,
              max_concurrent_streams, "32", 1, INT32_MAX, false),
    KEY_RANGE("max_calls_per_worker", config__parse_int32, limits_config_t, max_calls_per_worker,
              "256", 1, 1000000, false),
    KEY_RANGE("max_header_bytes", config__parse_bytes, limits_config_t, max_header_bytes, "16Ki",
              1024, INT32_MAX, false),
};

/* Relies on max_message_bytes: a memory budget that is set must hold one message of the
 * largest size; unset, it follows the container (cgroup.h: 75 % of its limit), else room
 * for two messages of the largest size plus 64 MiB. */
bool config__parse_limits(load_ctx_t *ctx, const yaml_tree_node_t *node, const char *path,
                          void *field, const key_spec_t *spec) {
    limits_config_t *l = field;
    size_t before = ctx->error_count;
    config__section_parse(ctx, node, path, limits_keys_top, TABLE_LEN(limits_keys_top), l);
    if (ctx->error_count != before)
        return false;
    int64_t max_msg = ctx->cfg->max_message_bytes;
    if (l->memory_bytes == 0) {
        l->memory_source_unreadable =
            cgroup_memory_budget(cgroup_root(), cgroup_self(), 2 * max_msg + LIMITS_MEMORY_SLACK,
                                 &l->memory_bytes, l->memory_source,
                                 sizeof(l->memory_source)) == CGROUP_LIMIT_UNREADABLE;
        return true;
    }
    snprintf(l->memory_source, sizeof(l->memory_source), "limits.memory");
    if (l->memory_bytes < max_msg) {
        char sub[CONFIG_PATH_MAX];
        config__path_join(sub, path, "memory");
        config__error(ctx, yaml_tree_mapping_get(node, "memory"), sub,
                      "%" PRId64 " bytes cannot hold one message of max_message_bytes (%" PRId64
                      ")",
                      l->memory_bytes, max_msg);
        return false;
    }
    return true;
}

void config_format_services(unsigned services, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < TABLE_LEN(names_of_services); k++) {
        if ((services & (1u << k)) != 0 && n < size) {
            n += (size_t)snprintf(buf + n, size - n, "%s%s", n > 0 ? ", " : "",
                                  names_of_services[k]);
        }
    }
}

bool config_simulated_exposed(const frugal_config_t *cfg, char *buf, size_t size) {
    if (cfg->provider_kind != NULL && strcmp(cfg->provider_kind, "simulated") != 0)
        return false;
    const unsigned provider_services =
        LISTENER_SERVICE_CLOUDPROVIDER | LISTENER_SERVICE_AUTOPROVISIONING;
    for (size_t i = 0; i < cfg->listeners_count; i++) {
        bool loopback = true;
        if ((cfg->listeners[i].services & provider_services) != 0 &&
            address_problem(cfg->listeners[i].address, &loopback) == NULL && !loopback) {
            snprintf(buf, size,
                     "provider kind simulated on listener %s, which other machines can reach: "
                     "scale-ups create no real machine (set provider.kind: exec to drive "
                     "your infrastructure; docs/hooks.md)",
                     cfg->listeners[i].address);
            return true;
        }
    }
    return false;
}
