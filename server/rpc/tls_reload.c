#include "tls_reload.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "file_version.h"
#include "log.h"
#include "pem.h"

enum { TLS_CERT, TLS_KEY, TLS_CA, TLS_FILES };

struct tls_reloader {
    const char *paths[TLS_FILES]; /* borrowed from the config; TLS_CA may be NULL */
    file_version_t loaded[TLS_FILES];
    bool have_loaded;
    double not_after;   /* of the certificate loaded last */
    pthread_mutex_t mu; /* handshakes may run on several threads */
};

/* Read every file of r into a new certificate config, and its certificate's notAfter. */
static int tls_reloader_load(tls_reloader_t *r, grpc_ssl_server_certificate_config **out,
                             file_version_t *versions, double *not_after, frugal_err_t *err) {
    char *pem[TLS_FILES] = {NULL, NULL, NULL};
    int rc = 0;
    for (int i = 0; i < TLS_FILES && rc == 0; i++)
        if (r->paths[i] != NULL && file_version_of(r->paths[i], &versions[i]) != 0)
            rc = frugal_err_set(err, FRUGAL_EIO, "cannot stat %s", r->paths[i]);
    if (rc == 0)
        rc = pem_load_tls(r->paths, pem, err);
    if (rc == 0) {
        grpc_ssl_pem_key_cert_pair pair = {.private_key = pem[TLS_KEY],
                                           .cert_chain = pem[TLS_CERT]};
        /* gRPC 1.51 insists on root certificates in a fetched config even when it asks
         * clients for none; without a client CA they are never used, so the server's
         * own chain stands in. */
        const char *roots = pem[TLS_CA] != NULL ? pem[TLS_CA] : pem[TLS_CERT];
        *out = grpc_ssl_server_certificate_config_create(roots, &pair, 1);
        *not_after = pem_not_after(pem[TLS_CERT]);
    }
    for (int i = 0; i < TLS_FILES; i++)
        free(pem[i]);
    return rc;
}

/* Whether a file of r changed since it was loaded (or nothing was). Under r->mu. */
static bool tls_reloader_changed(const tls_reloader_t *r) {
    bool changed = !r->have_loaded;
    for (int i = 0; i < TLS_FILES && !changed; i++) {
        file_version_t now;
        if (r->paths[i] != NULL &&
            (file_version_of(r->paths[i], &now) != 0 || !file_version_equal(&now, &r->loaded[i])))
            changed = true;
    }
    return changed;
}

/* gRPC's certificate config fetcher, called at each new handshake. */
static grpc_ssl_certificate_config_reload_status
tls_reloader_fetch(void *user_data, grpc_ssl_server_certificate_config **config) {
    tls_reloader_t *r = user_data;
    grpc_ssl_certificate_config_reload_status status = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_UNCHANGED;
    pthread_mutex_lock(&r->mu);
    if (tls_reloader_changed(r)) {
        file_version_t versions[TLS_FILES];
        frugal_err_t err;
        frugal_err_clear(&err);
        memset(versions, 0, sizeof(versions));
        double not_after = -1;
        if (tls_reloader_load(r, config, versions, &not_after, &err) == 0) {
            if (r->have_loaded)
                log_info("TLS material of %s reloaded", r->paths[TLS_CERT]);
            memcpy(r->loaded, versions, sizeof(versions));
            r->have_loaded = true;
            r->not_after = not_after;
            status = GRPC_SSL_CERTIFICATE_CONFIG_RELOAD_NEW;
        } else {
            /* Keep serving the previous material; a half-written rotation is retried at
             * the next handshake. */
            log_warn("TLS reload failed, keeping the current certificate: %s", err.msg);
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
    r->paths[TLS_CERT] = l->tls_cert;
    r->paths[TLS_KEY] = l->tls_key;
    r->paths[TLS_CA] = l->tls_client_ca;
    pthread_mutex_init(&r->mu, NULL);

    /* Read once up front for a precise error; gRPC fetches again on creation. */
    grpc_ssl_server_certificate_config *probe = NULL;
    file_version_t versions[TLS_FILES];
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
    if (r->have_loaded && tls_reloader_changed(r)) {
        /* What the next handshake will load: the new files once they pass its checks. */
        grpc_ssl_server_certificate_config *probe = NULL;
        file_version_t versions[TLS_FILES];
        frugal_err_t err;
        frugal_err_clear(&err);
        double next = -1;
        if (tls_reloader_load(r, &probe, versions, &next, &err) == 0) {
            grpc_ssl_server_certificate_config_destroy(probe);
            t = next;
        }
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
