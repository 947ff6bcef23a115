/* The store layer: where the cluster's state is kept, chosen by the config's `state:`
 * section. None (in memory), the file (state_file.h) or etcd (shared by replicas,
 * state_etcd.c on the etcd client); each is a state_backend_t (state_backend.h) that
 * `frugal serve` and `frugal state` hand to the cluster or use directly. */
#ifndef FRUGAL_STORE_H
#define FRUGAL_STORE_H

#include "config.h"
#include "errors.h"
#include "state_backend.h"

/* *out: the backend of cfg->state, NULL for in-memory. Opening does not contact a store
 * nor take the lock (state_backend_lock does). Call after grpc_init. */
int store_open(const frugal_config_t *cfg, state_backend_t **out, frugal_err_t *err);

#endif
