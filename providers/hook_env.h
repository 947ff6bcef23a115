/* The environment an exec provider hook runs with (docs/hooks.md, "Environment"):
 * frugal's own environment without its FRUGAL_* variables, the provider's
 * env_from_files, the FRUGAL_* variables that describe the group and the instance, and
 * one FRUGAL_PARAM_<KEY> per hook parameter (provider.params, then the machine type's,
 * then the configured group's: the last one wins). Read from the config given, so a
 * reload applies to the hooks started after it. */
#ifndef FRUGAL_HOOK_ENV_H
#define FRUGAL_HOOK_ENV_H

#include "config.h"
#include "group.h"

/* The environment of a hook run for instance name (may be "") with provider id (may be
 * "") of g under cfg: a NULL-terminated array the caller frees with hook_env_free. NULL
 * when out of memory. */
char **hook_env_build(const frugal_config_t *cfg, const group_t *g, const char *name,
                      const char *provider_id);

/* A copy of envp (of hook_env_build) with FRUGAL_PROVIDER_ID set to provider_id: the
 * environment of a delete of the machine a create made. NULL when out of memory. */
char **hook_env_with_provider_id(char *const *envp, const char *provider_id);

/* Free an environment made by hook_env_build; NULL is a no-op. */
void hook_env_free(char **envp);

/* The labels a node of spec registers with, in kubelet's --node-labels syntax
 * (k=v,k2=v2): the template node's instance type, zone, region and GPU labels (those
 * kubelet does not set itself), then the group's own labels, which win. NULL when out of
 * memory. */
char *hook_env_node_labels(const frugal_config_t *cfg, const group_spec_t *spec);

/* The group's taints in kubelet's --register-with-taints syntax (k=v:Effect, or k:Effect
 * without a value, comma-separated). NULL when out of memory. */
char *hook_env_node_taints(const group_spec_t *spec);

#endif
