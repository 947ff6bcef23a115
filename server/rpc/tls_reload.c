#include "tls_reload.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "file_version.h"
#include "log.h"
#include "pem.h"

#define TLS_FAILURE_LOG_MS 60000

struct tls_reloader {
    const char *paths[PEM_TLS_FILES]; /* borrowed from the config; PEM_TLS_CA may be NULL */
    file_version_t loaded[PEM_TLS_FILES];
    bool have_loaded;
    double not_after; /* of the certificate loaded last */
    /* The rotated files tls_reloader_not_after found good last, and their notAfter: a
     * scrape checks a good rotation once, not at each scrape. */
    file_version_t probed[PEM_TLS_FILES];
    bool have_probed;
    double probed_not_after;
    /* The files of the last failed reload logged, and when: each handshake retries a
     * broken rotation, and any peer that connects must not fill the log with it. */
    file_version_t failed[PEM_TLS_FILES];
    bool have_failed;
    int64_t failed_logged_ms;
    pthread_mutex_t mu; /* handshakes and scrapes may run on several threads */
};

/* The versions of r's files now: FRUGAL_EIO naming one that cannot be stat'ed. */
static int tls_reloader_stat(const tls_reloader_t *r, file_version_t *versions, frugal_err_t *err) {
    memset(versions, 0, sizeof(versions[0]) * PEM_TLS_FILES);
    for (int i = 0; i < PEM_TLS_FILES; i++)
        if (r->paths[i] != NULL && file_version_of(r->paths[i], &versions[i]) != 0)
            return frugal_err_set(err, FRUGAL_EIO, "cannot stat %s: %s", r->paths[i],
                                  strerror(errno));
    return 0;
}

static bool tls_versions_equal(const file_version_t *a, const file_version_t *b) {
    for (int i = 0; i < PEM_TLS_FILES; i++)
        if (!file_version_equal(&a[i], &b[i]))
            return false;
    return true;
}

/* Read every file of r into a new certificate config, and its certificate's notAfter. */
static int tls_reloader_load(tls_reloader_t *r, grpc_ssl_server_certificate_config **out,
                             file_version_t *versions, double *not_after, frugal_err_t *err) {
    char *pem[PEM_TLS_FILES] = {NULL, NULL, NULL};
    int rc = tls_reloader_stat(r, versions, err);
    if (rc == 0)
        rc = pem_load_tls(r->paths, pem, err);
    if (rc == 0) {
        grpc_ssl_pem_key_cert_pair pair = {.private_key = pem[PEM_TLS_KEY],
                                           .cert_chain = pem[PEM_TLS_CERT]};
        /* gRPC 1.51 insists on root certificates in a fetched config even when it asks
         * clients for none; without a client CA they are never used, so the server's
         * own chain stands in. */
        const char *roots = pem[PEM_TLS_CA] != NULL ? pem[PEM_TLS_CA] : pem[PEM_TLS_CERT];
        *out = grpc_ssl_server_certificate_config_create(roots, &pair, 1);
        *not_after = pem_not_after(pem[PEM_TLS_CERT]);
    }
    pem_free_tls(pem);
    return rc;
}

/* Whether a file of r changed since it was loaded (or nothing was). Under r->mu. */
static bool tls_reloader_changed(const tls_reloader_t *r) {
    file_version_t now[PEM_TLS_FILES];
    return !r->have_loaded || tls_reloader_stat(r, now, NULL) != 0 ||
           !tls_versions_equal(now, r->loaded);
}

/* gRPC's certificate config fetcher, called at each new handshake. */
static grpc_ssl_certificate_config_reload_status
tls_reloader_fetch(void *user_data, grpc_ssl_server_certificate_config **config) {
    tls_reloader_t *r = user_data;
    grpc_ssl_certificate_config_reload_status status = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
    pthread_mutex_lock(&r->mu);
    if (tls_reloader_changed(r)) {
        file_version_t versions[PEM_TLS_FILES];
        frugal_err_t err;
        frugal_err_clear(&err);
        memset(versions, 0, sizeof(versions));
        double not_after = -1;
        if (tls_reloader_load(r, config, versions, &not_after, &err) == 0) {
            if (r->have_loaded)
                log_info("TLS material of %s reloaded", r->paths[PEM_TLS_CERT]);
            memcpy(r->loaded, versions, sizeof(versions));
            r->have_loaded = true;
            r->not_after = not_after;
            status = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
        } else {
            /* Keep serving the previous material; a half-written rotation is retried at
             * the next handshake. */
            file_version_t now[PEM_TLS_FILES];
            tls_reloader_stat(r, now, NULL);
            int64_t now_ms = clock_mono_ms();
            if (!r->have_failed || !tls_versions_equal(now, r->failed) ||
                now_ms - r->failed_logged_ms >= TLS_FAILURE_LOG_MS) {
                log_warn("TLS reload failed, keeping the current certificate: %s (retried at "
                         "each handshake; logged again when the files change, or in a minute)",
                         err.msg);
                memcpy(r->failed, now, sizeof(now));
                r->have_failed = true;
                r->failed_logged_ms = now_ms;
            }
            status = r->have_loaded ? GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED
                                    : GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_FAIL;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return status;
}

grpc_server_credentials *tls_server_credentials(const listener_config_t *l,
                                                tls_reloader_t **reloader, frugal_err_t *err) {
    *reloader = NULL;
    tls_reloader_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        return NULL;
    }
    r->paths[PEM_TLS_CERT] = l->tls_cert;
    r->paths[PEM_TLS_KEY] = l->tls_key;
    r->paths[PEM_TLS_CA] = l->tls_client_ca;
    pthread_mutex_init(&r->mu, NULL);

    /* Read once up front for a precise error; gRPC fetches again on creation. */
    grpc_ssl_server_certificate_config *probe = NULL;
    file_version_t versions[PEM_TLS_FILES];
    if (tls_reloader_load(r, &probe, versions, &r->not_after, err) != 0) {
        tls_reloader_free(r);
        return NULL;
    }
    grpc_ssl_server_certificate_config_destroy(probe);

    grpc_ssl_server_credentials_options *options =
        grpc_ssl_server_credentials_create_options_using_config_fetcher(
            l->tls_client_ca != NULL ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                     : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE,
            tls_reloader_fetch, r);
    grpc_server_credentials *creds =
        options != NULL ? grpc_ssl_server_credentials_create_with_options(options) : NULL;
    if (creds == NULL) {
        frugal_err_set(err, FRUGAL_EINVAL, "invalid TLS certificate or key for listener %s",
                       l->address);
        tls_reloader_free(r);
        return NULL;
    }
    *reloader = r;
    return creds;
}

double tls_reloader_not_after(tls_reloader_t *r) {
    pthread_mutex_lock(&r->mu);
    double t = r->not_after;
    file_version_t now[PEM_TLS_FILES];
    if (r->have_loaded && tls_reloader_stat(r, now, NULL) == 0 &&
        !tls_versions_equal(now, r->loaded)) {
        /* What the next handshake will load: the new files once they pass its checks. A
         * refusal is checked again at the next scrape: it may pass later with the same
         * files (a notBefore just ahead, a key made readable). */
        if (!r->have_probed || !tls_versions_equal(now, r->probed)) {
            grpc_ssl_server_certificate_config *probe = NULL;
            file_version_t versions[PEM_TLS_FILES];
            frugal_err_t err;
            frugal_err_clear(&err);
            double next = -1;
            if (tls_reloader_load(r, &probe, versions, &next, &err) == 0) {
                grpc_ssl_server_certificate_config_destroy(probe);
                memcpy(r->probed, versions, sizeof(versions));
                r->probed_not_after = next;
                r->have_probed = true;
            }
        }
        if (r->have_probed && tls_versions_equal(now, r->probed))
            t = r->probed_not_after;
    }
    pthread_mutex_unlock(&r->mu);
    return t;
}

void tls_reloader_free(tls_reloader_t *r) {
    if (r == NULL)
        return;
    pthread_mutex_destroy(&r->mu);
    free(r);
}
