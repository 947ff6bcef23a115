#include "state_etcd.h"

int state_etcd_create(const state_config_t *st, state_backend_t **out, frugal_err_t *err) {
    (void)st;
    *out = NULL;
    return frugal_err_set(err, FRUGAL_EUNIMPL, "the etcd state backend is not built yet");
}
