/* The state backend `frugal serve` and `frugal state` use, chosen by the config's
 * `state:` section: none (in memory), the file (server/cluster/state_backend.h) or etcd
 * (state_etcd.h), which needs gRPC and therefore lives in this layer. */
#ifndef FRUGAL_STATE_OPEN_H
#define FRUGAL_STATE_OPEN_H

#include "config.h"
#include "errors.h"
#include "state_backend.h"

/* *out: the backend of cfg->state, NULL for in-memory. Opening does not contact a store
 * nor take the lock (state_backend_lock does). Call after grpc_init. */
int state_open(const frugal_config_t *cfg, state_backend_t **out, frugal_err_t *err);

#endif
