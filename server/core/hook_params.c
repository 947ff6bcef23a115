#include "hook_params.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"

const char *hook_param_key_problem(const char *key) {
    if (key[0] == '\0')
        return "must not be empty";
    size_t len = 0;
    for (const char *c = key; *c != '\0'; c++, len++) {
        bool ok = (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
                  (*c >= '0' && *c <= '9') || *c == '_' || *c == '.' || *c == '-';
        if (!ok)
            return "must match [A-Za-z0-9_.-]+";
    }
    if (len > HOOK_PARAM_KEY_MAX)
        return "is longer than 200 characters";
    return NULL;
}

/* What keeps value from an environment variable: over max bytes (too_long), or a NUL. */
static const char *hook__value_problem(const char *value, size_t len, size_t max,
                                       const char *too_long) {
    if (len > max)
        return too_long;
    if (memchr(value, '\0', len) != NULL)
        return "holds a NUL character";
    return NULL;
}

const char *hook_param_value_problem(const char *value, size_t len) {
    return hook__value_problem(value, len, HOOK_PARAM_VALUE_MAX,
                               "is longer than 4 KiB (4096 bytes)");
}

const char *hook_env_file_problem(const char *value, size_t len) {
    return hook__value_problem(value, len, HOOK_ENV_FILE_MAX,
                               "is longer than 64 KiB (65536 bytes)");
}

static char hook__map_char(char c) {
    if (c == '-' || c == '.')
        return '_';
    if (c >= 'a' && c <= 'z')
        return (char)(c - 'a' + 'A');
    return c;
}

void hook_param_env_name(const char *key, char *out, size_t size) {
    size_t n = (size_t)snprintf(out, size, "%s", HOOK_PARAM_PREFIX);
    for (const char *c = key; *c != '\0' && n + 1 < size; c++)
        out[n++] = hook__map_char(*c);
    out[n < size ? n : size - 1] = '\0';
}

bool hook_param_keys_collide(const char *a, const char *b) {
    for (; *a != '\0' && *b != '\0'; a++, b++) {
        if (hook__map_char(*a) != hook__map_char(*b))
            return false;
    }
    return *a == *b;
}

int hook_params_merge(const kv_list_t *const *layers, size_t n, kv_list_t *out) {
    char name[sizeof(HOOK_PARAM_PREFIX) + HOOK_PARAM_KEY_MAX];
    for (size_t l = 0; l < n; l++) {
        for (size_t i = 0; layers[l] != NULL && i < layers[l]->count; i++) {
            const kv_t *kv = &layers[l]->items[i];
            hook_param_env_name(kv->key, name, sizeof(name));
            bool found;
            size_t at = kv_list_find(out, name, &found);
            if (found) {
                char *v = strdup(kv->value);
                if (v == NULL)
                    goto fail;
                free(out->items[at].value);
                out->items[at].value = v;
            } else if (kv_list_put(out, name, kv->value) != 0) {
                goto fail;
            }
        }
    }
    return 0;
fail:
    kv_list_clear(out);
    return FRUGAL_ENOMEM;
}

static size_t hook__env_strings_bytes(const kv_list_t *l) {
    size_t total = 0;
    for (size_t i = 0; l != NULL && i < l->count; i++)
        total += strlen(l->items[i].key) + 1 + strlen(l->items[i].value) + 1;
    return total;
}

size_t hook_params_env_bytes(const kv_list_t *const *layers, size_t n, const kv_list_t *files) {
    kv_list_t merged = {0};
    if (hook_params_merge(layers, n, &merged) != 0)
        return SIZE_MAX;
    size_t total = hook__env_strings_bytes(&merged) + hook__env_strings_bytes(files);
    kv_list_clear(&merged);
    return total;
}
