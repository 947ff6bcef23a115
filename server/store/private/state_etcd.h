/* The etcd state backend: node groups shared by several replicas through etcd v3
 * (etcd_client.h), a cache kept current by a Watch, one transaction per commit that
 * compares the revisions it read, and a lease-elected leader for provider work. */
#ifndef FRUGAL_STATE_ETCD_H
#define FRUGAL_STATE_ETCD_H

#include "config.h"
#include "errors.h"
#include "state_backend.h"

/* A backend on st (backend etcd). Nothing is contacted before load or lock. */
int state_etcd_create(const state_config_t *st, state_backend_t **out, frugal_err_t *err);

#endif
