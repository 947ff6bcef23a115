/* Kubernetes names: see k8s_name.h. */
#include "k8s_name.h"

#include <stddef.h>
#include <string.h>

#include "k8s.h"

static bool k8s_name__lower_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool k8s_name__alnum(char c) {
    return k8s_name__lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* A DNS-1123 label of len characters. */
static bool k8s_name__dns_label(const char *s, size_t len) {
    if (len == 0 || len > K8S_NAME_MAX || !k8s_name__lower_alnum(s[0]) ||
        !k8s_name__lower_alnum(s[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!k8s_name__lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

/* A DNS-1123 subdomain of len characters: dot-separated DNS-1123 labels. */
static bool k8s_name__dns_subdomain(const char *s, size_t len) {
    if (len == 0 || len > K8S_NAME_SUBDOMAIN_MAX)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.')
            continue;
        if (!k8s_name__dns_label(s + start, i - start))
            return false;
        start = i + 1;
    }
    return true;
}

/* The name part of a qualified name, and a non-empty label value, of len characters. */
static bool k8s_name__name(const char *s, size_t len) {
    if (len == 0 || len > K8S_NAME_MAX || !k8s_name__alnum(s[0]) || !k8s_name__alnum(s[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!k8s_name__alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

bool k8s_name_is_dns_label(const char *s) {
    return s != NULL && k8s_name__dns_label(s, strlen(s));
}

const char *k8s_name_key_problem(const char *key) {
    static const char name_problem[] =
        "name must be 1-63 characters of [A-Za-z0-9._-], starting and ending with an "
        "alphanumeric, after an optional DNS prefix and '/'";
    if (key == NULL)
        return name_problem;
    const char *slash = strchr(key, '/');
    if (slash != NULL) {
        if (!k8s_name__dns_subdomain(key, (size_t)(slash - key)))
            return "prefix must be a DNS subdomain (lowercase alphanumerics, '-' and '.', "
                   "at most 253 characters)";
        key = slash + 1;
    }
    return k8s_name__name(key, strlen(key)) ? NULL : name_problem;
}

const char *k8s_name_value_problem(const char *value) {
    size_t len = value != NULL ? strlen(value) : 0;
    if (len != 0 && !k8s_name__name(value, len))
        return "must be empty or 1-63 characters of [A-Za-z0-9._-], starting and ending with "
               "an alphanumeric";
    return NULL;
}

bool k8s_name_is_key(const char *key) {
    return k8s_name_key_problem(key) == NULL;
}

bool k8s_name_is_value(const char *value) {
    return k8s_name_value_problem(value) == NULL;
}

bool k8s_name_is_taint_effect(const char *effect) {
    return effect != NULL &&
           (strcmp(effect, "NoSchedule") == 0 || strcmp(effect, "PreferNoSchedule") == 0 ||
            strcmp(effect, "NoExecute") == 0);
}

bool k8s_name_is_reserved_label(const char *key) {
    /* What template_build sets before a group's labels (which would override it). */
    static const char *const reserved[] = {
        K8S_LABEL_INSTANCE_TYPE, K8S_LABEL_ZONE,      K8S_LABEL_REGION,
        K8S_LABEL_HOSTNAME,      K8S_LABEL_OS,        K8S_LABEL_ARCH,
        K8S_LABEL_OS_BETA,       K8S_LABEL_ARCH_BETA, FRUGAL_GPU_LABEL,
    };
    if (key == NULL)
        return false;
    for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
        if (strcmp(key, reserved[i]) == 0)
            return true;
    return false;
}
