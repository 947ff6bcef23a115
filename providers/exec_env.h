/* The environment of the exec provider's hooks: frugal's own, minus its FRUGAL_*
 * variables, plus the FRUGAL_* variables that describe the group and the instance
 * (README.md): FRUGAL_GROUP, FRUGAL_INSTANCE, FRUGAL_PROVIDER_ID,
 * FRUGAL_MACHINE_TYPE, FRUGAL_ZONE, FRUGAL_LABELS (k=v,...), FRUGAL_TAINTS
 * (k=v:Effect,...), FRUGAL_CPU and FRUGAL_MEMORY (the machine type's, as quantities). */
#ifndef FRUGAL_EXEC_ENV_H
#define FRUGAL_EXEC_ENV_H

#include "config.h"
#include "group.h"

/* A NULL-terminated environment for a hook acting on instance name (provider_id) of g,
 * malloc'ed (free with exec_env_free); NULL when out of memory. */
char **exec_env_build(const frugal_config_t *cfg, const group_t *g, const char *name,
                      const char *provider_id);

/* Free an environment of exec_env_build (NULL is fine). */
void exec_env_free(char **envp);

#endif
