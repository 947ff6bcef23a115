#include "store.h"

#include <stddef.h>

#include "state_etcd.h"
#include "state_file.h"

int store_open(const frugal_config_t *cfg, state_backend_t **out, frugal_err_t *err) {
    *out = NULL;
    switch (cfg->state.backend) {
    case STATE_BACKEND_FILE:
        return state_backend_file_create(cfg->state_file, out, err);
    case STATE_BACKEND_ETCD:
        return state_etcd_create(&cfg->state, out, err);
    case STATE_BACKEND_MEMORY:
        break;
    }
    return 0;
}
