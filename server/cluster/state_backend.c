/* The state backend dispatch and the file backend: state.c's format written whole on
 * every commit (tmp, fsync, rename), state_lock.c's flock as the single-writer lock. */
#include "state_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "state_lock.h"

typedef struct file_backend {
    char *path;
    char *description;
    int lock_fd;
} file_backend_t;

static int file_load(state_backend_t *b, state_t *out, frugal_err_t *err) {
    file_backend_t *f = b->impl;
    return state_load(f->path, out, err);
}

static int file_commit(state_backend_t *b, const state_commit_t *c, frugal_err_t *err) {
    file_backend_t *f = b->impl;
    return state_save(f->path, c->view, c->count, err);
}

static int file_lock(state_backend_t *b, frugal_err_t *err) {
    file_backend_t *f = b->impl;
    if (f->lock_fd >= 0)
        return 0;
    return state_lock_acquire(f->path, &f->lock_fd, err);
}

static const char *file_describe(const state_backend_t *b) {
    const file_backend_t *f = b->impl;
    return f->description;
}

static void file_destroy(state_backend_t *b) {
    file_backend_t *f = b->impl;
    state_lock_release(f->lock_fd);
    free(f->path);
    free(f->description);
    free(f);
    free(b);
}

static const state_backend_ops_t file_ops = {
    .kind = "file",
    .load = file_load,
    .commit = file_commit,
    .lock = file_lock,
    .describe = file_describe,
    .destroy = file_destroy,
};

int state_backend_file_create(const char *path, state_backend_t **out, frugal_err_t *err) {
    *out = NULL;
    state_backend_t *b = calloc(1, sizeof(*b));
    file_backend_t *f = calloc(1, sizeof(*f));
    size_t n = strlen(path) + sizeof("state file ");
    char *d = malloc(n);
    char *p = strdup(path);
    if (b == NULL || f == NULL || d == NULL || p == NULL) {
        free(b);
        free(f);
        free(d);
        free(p);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    snprintf(d, n, "state file %s", path);
    f->path = p;
    f->description = d;
    f->lock_fd = -1;
    b->ops = &file_ops;
    b->impl = f;
    *out = b;
    return 0;
}

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

const char *state_backend_describe(const state_backend_t *b) {
    return b != NULL ? b->ops->describe(b) : "in memory";
}

void state_backend_destroy(state_backend_t *b) {
    if (b != NULL)
        b->ops->destroy(b);
}
