/* TLS server credentials that follow their files: the certificate, key and client CA
 * of a listener are read at start and read again when one of them changes on disk
 * (checked at each new TLS handshake), so a rotated certificate (cert-manager, a
 * renewed Secret) is served without a restart. Connections already open keep theirs. */
#ifndef FRUGAL_TLS_RELOAD_H
#define FRUGAL_TLS_RELOAD_H

#include <grpc/grpc_security.h>

#include "config.h"
#include "errors.h"

typedef struct tls_reloader tls_reloader_t;

/* Credentials for the TLS listener l (l->tls_cert set). The files are read once now so
 * that a missing or unreadable one is reported (FRUGAL_EIO/EINVAL naming it) before
 * the server starts. *reloader must outlive the server using the credentials; free it
 * with tls_reloader_free after grpc_server_destroy. */
grpc_server_credentials *tls_server_credentials(const listener_config_t *l,
                                                tls_reloader_t **reloader, frugal_err_t *err);

/* notAfter (seconds since the epoch) of the certificate the listener serves to new
 * connections: the one loaded last, or the rotated files' once they pass the checks a
 * handshake makes (a rotation to a bad certificate is not served, so not shown). */
double tls_reloader_not_after(tls_reloader_t *r);

void tls_reloader_free(tls_reloader_t *r);

#endif
