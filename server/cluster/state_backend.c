/* The state backend dispatch: every optional op tolerated when absent. The backends
 * themselves live in server/store/. */
#include "state_backend.h"

#include <stddef.h>

#include "metrics.h"

int state_backend_load(state_backend_t *b, state_t *out, frugal_err_t *err) {
    return b->ops->load(b, out, err);
}

int state_backend_commit(state_backend_t *b, const state_commit_t *c, frugal_err_t *err) {
    int rc = b->ops->commit(b, c, err);
    /* another writer winning (retried on the current state) is not a failure */
    if (rc != 0 && rc != FRUGAL_EABORTED)
        metrics_count(METRICS_STATE_WRITE_FAILURES, NULL, NULL, NULL);
    return rc;
}

int state_backend_lock(state_backend_t *b, frugal_err_t *err) {
    return b != NULL && b->ops->lock != NULL ? b->ops->lock(b, err) : 0;
}

int state_backend_check_present(state_backend_t *b, const char *config_path, state_init_t init,
                                frugal_err_t *err) {
    return b != NULL && b->ops->check_present != NULL
               ? b->ops->check_present(b, config_path, init, err)
               : 0;
}

int state_backend_exclude(state_backend_t *b, frugal_err_t *err) {
    return b != NULL && b->ops->exclude != NULL ? b->ops->exclude(b, err) : 0;
}

bool state_backend_leader(state_backend_t *b) {
    return b == NULL || b->ops->leader == NULL || b->ops->leader(b);
}

int state_backend_watch(state_backend_t *b, state_watch_fn fn, void *arg, frugal_err_t *err) {
    return b != NULL && b->ops->watch != NULL ? b->ops->watch(b, fn, arg, err) : 0;
}

void state_backend_lease(state_backend_t *b, state_lease_fn fn, void *arg) {
    if (b != NULL && b->ops->lease != NULL)
        b->ops->lease(b, fn, arg);
}

int state_backend_sync(state_backend_t *b, int64_t deadline_ms, frugal_err_t *err) {
    return b != NULL && b->ops->sync != NULL ? b->ops->sync(b, deadline_ms, err) : 0;
}

int state_backend_stored(state_backend_t *b, const char *id, group_t *out, frugal_err_t *err) {
    return b != NULL && b->ops->stored != NULL ? b->ops->stored(b, id, out, err) : FRUGAL_ENOTFOUND;
}

const char *state_backend_describe(const state_backend_t *b) {
    return b != NULL ? b->ops->describe(b) : "in memory";
}

void state_backend_destroy(state_backend_t *b) {
    if (b != NULL)
        b->ops->destroy(b);
}
