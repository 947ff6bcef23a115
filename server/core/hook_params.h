/* Hook parameters (docs/hooks.md): the maps of strings an operator gives the exec
 * provider's hook (provider.params, machine_types[].provider_params,
 * node_groups[].provider_params) and the files it passes whole (provider.env_from_files).
 * The rules live here once: the config loader refuses what they refuse, and the
 * provider maps keys to environment variable names with them. Pure functions. */
#ifndef FRUGAL_HOOK_PARAMS_H
#define FRUGAL_HOOK_PARAMS_H

#include <stdbool.h>
#include <stddef.h>

#include "labels.h"

/* The longest parameter value passed to a hook, in bytes. */
#define HOOK_PARAM_VALUE_MAX 4096

/* The longest provider.env_from_files content, in bytes: room for a known_hosts of many
 * hosts, well below Linux's 128 KiB limit on one environment string. */
#define HOOK_ENV_FILE_MAX 65536

/* A hook's parameters (merged over every layer) and env_from_files together, as
 * NAME=value strings: execve refuses an environment over a quarter of the stack limit
 * (2 MiB under the usual 8 MiB), which would fail every hook run. */
#define HOOK_ENV_TOTAL_MAX (1024 * 1024)

/* The prefix of the variable a parameter becomes: FRUGAL_PARAM_<KEY>. */
#define HOOK_PARAM_PREFIX "FRUGAL_PARAM_"

/* Longest accepted key, so that a mapped name always fits a small buffer. */
#define HOOK_PARAM_KEY_MAX 200

/* Why key cannot name a parameter (it must match [A-Za-z0-9_.-]+ and be at most
 * HOOK_PARAM_KEY_MAX bytes), NULL when it can. */
const char *hook_param_key_problem(const char *key);

/* Why a value of len bytes cannot be passed (over HOOK_PARAM_VALUE_MAX, or holding a
 * NUL), NULL when it can. */
const char *hook_param_value_problem(const char *value, size_t len);

/* Why a file's content of len bytes cannot be passed (over HOOK_ENV_FILE_MAX, or holding
 * a NUL), NULL when it can. */
const char *hook_env_file_problem(const char *value, size_t len);

/* The environment variable name of parameter key: HOOK_PARAM_PREFIX then key upper-cased
 * with '-' and '.' turned into '_', into out (size >= sizeof(HOOK_PARAM_PREFIX) +
 * HOOK_PARAM_KEY_MAX). key must be valid. */
void hook_param_env_name(const char *key, char *out, size_t size);

/* Whether a and b (valid keys) map to the same variable name. */
bool hook_param_keys_collide(const char *a, const char *b);

/* Merge layers[0..n) (lists of valid keys) into *out (empty on entry) as variable
 * name -> value: a later layer's value replaces an earlier one's for keys that map to
 * the same name. NULL layers are skipped. 0, or FRUGAL_ENOMEM with *out empty. */
int hook_params_merge(const kv_list_t *const *layers, size_t n, kv_list_t *out);

/* The bytes layers[0..n) merged and files (variable name -> content) take in a hook's
 * environment as NAME=value strings, each with its NUL; SIZE_MAX when out of memory. */
size_t hook_params_env_bytes(const kv_list_t *const *layers, size_t n, const kv_list_t *files);

#endif
