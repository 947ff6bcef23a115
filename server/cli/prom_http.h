/* The HTTP side of `frugal replay --from-prometheus` (docs/replay.md): GET requests to a
 * Prometheus server with libcurl, with an optional bearer token (read from a file), CA
 * file, and client certificate and key for mutual TLS. */
#ifndef FRUGAL_PROM_HTTP_H
#define FRUGAL_PROM_HTTP_H

#include <stddef.h>

#include "errors.h"

typedef struct prom_http_opts {
    const char *url;               /* base URL, e.g. http://prometheus:9090 */
    const char *bearer_token_file; /* may be NULL */
    const char *ca_file;           /* may be NULL: the system's CAs */
    const char *cert_file;         /* client certificate (PEM); with key_file */
    const char *key_file;
} prom_http_opts_t;

typedef struct prom_http prom_http_t;

/* url as messages show it: a password in it (http://user:password@host) hidden as
 * "***". malloc'd; NULL when out of memory. */
char *prom_http_url_shown(const char *url);

/* The client's URL as messages show it (prom_http_url_shown). */
const char *prom_http_url(const prom_http_t *h);

/* A client for o (borrowed for its life). FRUGAL_EINVAL when the token file cannot be
 * read or is empty; FRUGAL_ENOMEM. Call curl_global_init before the first one. */
int prom_http_open(const prom_http_opts_t *o, prom_http_t **out, frugal_err_t *err);
void prom_http_close(prom_http_t *h);

/* GET URL + path + "?" + the pairs params[0]=params[1]&... (values URL-encoded here);
 * *body is malloc'd and NUL-terminated. FRUGAL_EUNAVAIL when the server cannot be
 * reached ("cannot reach URL: reason"); FRUGAL_EINVAL for an answer other than 200 that
 * is not Prometheus' own error answer (the status code named); FRUGAL_ENOMEM. A 4xx/5xx
 * whose body is a Prometheus error is returned as 0: the caller reads its message. */
int prom_http_get(prom_http_t *h, const char *path, const char *const *params, size_t count,
                  char **body, size_t *len, frugal_err_t *err);

#endif
