/* store_testing.h: what tests, benchmarks and fuzzers open clusters with. */
#include "testing/store_testing.h"

#include <stddef.h>

int store_testing_cluster_open(const frugal_config_t *cfg, struct provider *provider,
                               cluster_t **out, frugal_err_t *err) {
    state_backend_t *state = NULL;
    *out = NULL;
    int rc;
    if (cfg->state_file != NULL &&
        (rc = state_backend_file_create(cfg->state_file, &state, err)) != 0)
        return rc;
    if ((rc = cluster_open(cfg, provider, state, out, err)) != 0)
        state_backend_destroy(state);
    return rc;
}

void store_testing_cluster_close(cluster_t *c) {
    if (c == NULL)
        return;
    state_backend_t *state = cluster_state(c);
    cluster_close(c);
    state_backend_destroy(state);
}
