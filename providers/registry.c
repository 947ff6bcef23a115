#include <stddef.h>
#include <string.h>

#include "provider.h"

static const provider_ops_t *const provider_registry[] = {
    &provider_simulated_ops,
    &provider_exec_ops,
};

const provider_ops_t *provider_lookup(const char *kind) {
    if (kind == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(provider_registry) / sizeof(provider_registry[0]); i++) {
        if (strcmp(provider_registry[i]->kind, kind) == 0)
            return provider_registry[i];
    }
    return NULL;
}

int provider_create(const frugal_config_t *cfg, provider_t **out, frugal_err_t *err) {
    const char *kind = cfg->provider_kind != NULL ? cfg->provider_kind : "simulated";
    const provider_ops_t *ops = provider_lookup(kind);
    *out = NULL;
    if (ops == NULL)
        return frugal_err_set(err, FRUGAL_ENOTFOUND, "unknown provider kind \"%s\"", kind);
    return ops->create(cfg, out, err);
}

void provider_destroy(provider_t *p) {
    if (p != NULL)
        p->ops->destroy(p);
}
