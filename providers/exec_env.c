/* The hooks' environment (exec_env.h). */
#include "exec_env.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "quantity.h"

extern char **environ;

static int exec_env__add(char **envp, size_t *n, const char *name, const char *value) {
    size_t len = strlen(name) + strlen(value) + 2;
    char *s = malloc(len);
    if (s == NULL)
        return FRUGAL_ENOMEM;
    snprintf(s, len, "%s=%s", name, value);
    envp[(*n)++] = s;
    return 0;
}

/* Join a group's labels (k=v) or taints (k=v:Effect) with commas; NULL when out of
 * memory. */
static char *exec_env__join_spec(const group_spec_t *spec, bool taints) {
    size_t len = 1;
    size_t count = taints ? spec->taints.count : spec->labels.count;
    for (size_t i = 0; i < count; i++) {
        if (taints)
            len += strlen(spec->taints.items[i].key) + strlen(spec->taints.items[i].value) +
                   strlen(spec->taints.items[i].effect) + 3;
        else
            len += strlen(spec->labels.items[i].key) + strlen(spec->labels.items[i].value) + 2;
    }
    char *s = malloc(len);
    if (s == NULL)
        return NULL;
    size_t w = 0;
    s[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        if (taints)
            w += (size_t)snprintf(s + w, len - w, "%s%s=%s:%s", i > 0 ? "," : "",
                                  spec->taints.items[i].key, spec->taints.items[i].value,
                                  spec->taints.items[i].effect);
        else
            w += (size_t)snprintf(s + w, len - w, "%s%s=%s", i > 0 ? "," : "",
                                  spec->labels.items[i].key, spec->labels.items[i].value);
    }
    return s;
}

char **exec_env_build(const frugal_config_t *cfg, const group_t *g, const char *name,
                      const char *provider_id) {
    size_t inherited = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++)
        inherited++;
    char **envp = calloc(inherited + 10, sizeof(*envp));
    if (envp == NULL)
        return NULL;
    size_t n = 0;
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        if (strncmp(*e, "FRUGAL_", 7) == 0)
            continue;
        if ((envp[n] = strdup(*e)) == NULL)
            goto fail;
        n++;
    }
    const group_spec_t *spec = &g->spec;
    const machine_type_t *mt = config_find_machine_type(cfg, spec->machine_type);
    char cpu[32] = "", mem[32] = "";
    if (mt != NULL) {
        quantity_format_milli(mt->cpu_milli, cpu, sizeof(cpu));
        quantity_format_bytes(mt->memory_bytes, mem, sizeof(mem));
    }
    char *labels = exec_env__join_spec(spec, false);
    char *taints = exec_env__join_spec(spec, true);
    int rc = labels == NULL || taints == NULL;
    rc = rc || exec_env__add(envp, &n, "FRUGAL_GROUP", spec->id) != 0;
    rc = rc || exec_env__add(envp, &n, "FRUGAL_INSTANCE", name) != 0;
    rc = rc || exec_env__add(envp, &n, "FRUGAL_PROVIDER_ID", provider_id) != 0;
    rc = rc || exec_env__add(envp, &n, "FRUGAL_MACHINE_TYPE",
                             spec->machine_type != NULL ? spec->machine_type : "") != 0;
    rc = rc || exec_env__add(envp, &n, "FRUGAL_ZONE", spec->zone != NULL ? spec->zone : "") != 0;
    rc = rc || exec_env__add(envp, &n, "FRUGAL_LABELS", labels) != 0;
    rc = rc || exec_env__add(envp, &n, "FRUGAL_TAINTS", taints) != 0;
    rc = rc || exec_env__add(envp, &n, "FRUGAL_CPU", cpu) != 0;
    rc = rc || exec_env__add(envp, &n, "FRUGAL_MEMORY", mem) != 0;
    free(labels);
    free(taints);
    if (rc)
        goto fail;
    return envp;
fail:
    for (size_t i = 0; i < n; i++)
        free(envp[i]);
    free(envp);
    return NULL;
}

void exec_env_free(char **envp) {
    if (envp == NULL)
        return;
    for (char **e = envp; *e != NULL; e++)
        free(*e);
    free(envp);
}
