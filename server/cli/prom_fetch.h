/* Many GET requests of one path to a Prometheus, several in flight at once, their answers
 * handed back one by one in the order of the requests (`frugal replay --from-prometheus`:
 * Prometheus evaluates the queries of a long range on its own cores). */
#ifndef FRUGAL_PROM_FETCH_H
#define FRUGAL_PROM_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "prom_http.h"

/* Query parameters (name, value, ...) of one request at most. */
#define PROM_FETCH_PARAMS_MAX 8
/* Values a request's parameters may write into (numbers: times, steps). */
typedef char prom_fetch_buf_t[4][32];

/* The parameters of request `job` into params (pointers that stay valid until the
 * request is answered: into bufs, or the caller's own); returns how many pairs. Called
 * from the fetching threads, so it must only read what it shares with them. */
typedef size_t (*prom_fetch_params_fn)(void *ctx, int64_t job, const char **params,
                                       prom_fetch_buf_t bufs);
/* The answer to request `job`, in order, on the calling thread; non-zero stops the run
 * with err set. */
typedef int (*prom_fetch_take_fn)(void *ctx, int64_t job, const char *body, size_t len,
                                  frugal_err_t *err);

/* GET path with each of requests 0 .. jobs - 1, one client per request in flight (the
 * clients, opened by the caller, are used by one thread each), and take each answer in
 * order. The first failure in request order is the result (a failed GET's, or take's),
 * as if the requests were asked one after the other: no request after it is taken. */
int prom_fetch_all(prom_http_t *const *clients, size_t nclients, const char *path, int64_t jobs,
                   prom_fetch_params_fn params, prom_fetch_take_fn take, void *ctx,
                   frugal_err_t *err);

#endif
