/* GETs to a Prometheus several at once, answered in order: see prom_fetch.h. */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "prom_fetch.h"

/* Answers fetched ahead of the one being taken, per client: bounds the memory held. */
#define FETCH__AHEAD_PER_CLIENT 2

typedef struct {
    char *body;
    size_t len;
    int rc;
    frugal_err_t err;
    bool ready;
} fetch__answer_t;

typedef struct {
    const char *path;
    int64_t jobs;
    prom_fetch_params_fn params;
    void *ctx;
    fetch__answer_t *ring; /* job j's answer in ring[j % ahead] */
    int64_t ahead;
    pthread_mutex_t mu;
    pthread_cond_t changed;
    int64_t next;  /* the next job to fetch */
    int64_t taken; /* jobs taken so far */
    bool stop;
} fetch__run_t;

typedef struct {
    fetch__run_t *run;
    prom_http_t *client;
} fetch__worker_t;

static void *fetch__worker(void *arg) {
    fetch__worker_t *w = arg;
    fetch__run_t *r = w->run;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && r->next < r->jobs && r->next >= r->taken + r->ahead)
            pthread_cond_wait(&r->changed, &r->mu);
        if (r->stop || r->next >= r->jobs)
            break;
        int64_t job = r->next++;
        pthread_mutex_unlock(&r->mu);
        const char *params[PROM_FETCH_PARAMS_MAX * 2];
        prom_fetch_buf_t bufs;
        size_t count = r->params(r->ctx, job, params, bufs);
        fetch__answer_t a = {.ready = true};
        frugal_err_clear(&a.err);
        a.rc = prom_http_get(w->client, r->path, params, count, &a.body, &a.len, &a.err);
        pthread_mutex_lock(&r->mu);
        r->ring[job % r->ahead] = a;
        pthread_cond_broadcast(&r->changed);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

int prom_fetch_all(prom_http_t *const *clients, size_t nclients, const char *path, int64_t jobs,
                   prom_fetch_params_fn params, prom_fetch_take_fn take, void *ctx,
                   frugal_err_t *err) {
    fetch__run_t r = {.path = path, .jobs = jobs, .params = params, .ctx = ctx};
    r.ahead = (int64_t)nclients * FETCH__AHEAD_PER_CLIENT;
    r.ring = calloc((size_t)r.ahead, sizeof(*r.ring));
    fetch__worker_t *workers = calloc(nclients, sizeof(*workers));
    pthread_t *threads = calloc(nclients, sizeof(*threads));
    if (r.ring == NULL || workers == NULL || threads == NULL) {
        free(r.ring), free(workers), free(threads);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.changed, NULL);
    size_t started = 0;
    int rc = 0;
    for (; started < nclients; started++) {
        workers[started] = (fetch__worker_t){.run = &r, .client = clients[started]};
        if (pthread_create(&threads[started], NULL, fetch__worker, &workers[started]) != 0)
            break;
    }
    if (started == 0)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "cannot start a thread to ask Prometheus");
    for (int64_t job = 0; rc == 0 && job < jobs; job++) {
        fetch__answer_t *a = &r.ring[job % r.ahead];
        pthread_mutex_lock(&r.mu);
        while (!a->ready)
            pthread_cond_wait(&r.changed, &r.mu);
        pthread_mutex_unlock(&r.mu);
        rc = a->rc;
        if (rc != 0) {
            if (err != NULL)
                *err = a->err;
        } else
            rc = take(ctx, job, a->body, a->len, err);
        free(a->body);
        pthread_mutex_lock(&r.mu);
        *a = (fetch__answer_t){.ready = false};
        r.taken = job + 1;
        r.stop = rc != 0;
        pthread_cond_broadcast(&r.changed);
        pthread_mutex_unlock(&r.mu);
    }
    pthread_mutex_lock(&r.mu);
    r.stop = true;
    pthread_cond_broadcast(&r.changed);
    pthread_mutex_unlock(&r.mu);
    for (size_t i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    for (int64_t i = 0; i < r.ahead; i++) /* answers fetched past a failure */
        free(r.ring[i].body);
    pthread_cond_destroy(&r.changed);
    pthread_mutex_destroy(&r.mu);
    free(r.ring), free(workers), free(threads);
    return rc;
}
