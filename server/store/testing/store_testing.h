/* For tests, benchmarks and fuzzers only (their include path has this directory, the
 * server's does not): a cluster on the file backend of cfg->state_file in one call, and
 * the store's internals that tests exercise directly. */
#ifndef FRUGAL_STORE_TESTING_H
#define FRUGAL_STORE_TESTING_H

#include "cluster.h"
#include "state_file.h"
#include "../private/state_lock.h"

/* cluster_open on the file backend of cfg->state_file (in memory without one), which
 * store_testing_cluster_close destroys with the cluster. */
int store_testing_cluster_open(const frugal_config_t *cfg, struct provider *provider,
                               cluster_t **out, frugal_err_t *err);

/* cluster_close, then the destruction of its backend. NULL is a no-op. */
void store_testing_cluster_close(cluster_t *c);

#endif
