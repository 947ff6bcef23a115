/* Reading TLS material (certificates, keys, CA bundles) from PEM files, for the server's
 * listeners and the client alike. */
#ifndef FRUGAL_PEM_H
#define FRUGAL_PEM_H

#include "errors.h"

/* Files larger than this are refused: no PEM bundle frugal reads comes near it. */
#define PEM_FILE_MAX (4u << 20)

/* Read the whole file at path into a NUL-terminated malloc'ed string (*out).
 * FRUGAL_EIO naming the path and the reason, FRUGAL_EINVAL when it is larger than
 * PEM_FILE_MAX or empty, FRUGAL_ENOMEM. On error *out is NULL. */
int pem_read_file(const char *path, char **out, frugal_err_t *err);

/* Check the first certificate of the PEM text read from path: FRUGAL_EINVAL naming path
 * when there is none or it cannot be parsed, when it has expired (with the date) or is
 * not valid yet. A server must not start with, or rotate to, such a certificate. */
int pem_check_certificate(const char *path, const char *pem, frugal_err_t *err);

/* notAfter of the first certificate of the PEM text, in seconds since the epoch; -1 when
 * it holds none. */
double pem_not_after(const char *pem);

/* Check a CA bundle, the PEM text read from path: FRUGAL_EINVAL naming path when it holds
 * no readable certificate, or when none of its certificates is valid now (the first
 * one's reason given). An expired certificate beside a valid one is kept: a bundle
 * holds the old CA and the new one while a CA rotates. */
int pem_check_bundle(const char *path, const char *pem, frugal_err_t *err);

/* Check that the private key in key_pem (read from key_path) is the key of the first
 * certificate in cert_pem: FRUGAL_EINVAL naming the file at fault otherwise (gRPC would
 * only refuse the handshake, or the listener, without saying why). */
int pem_check_key_pair(const char *cert_path, const char *cert_pem, const char *key_path,
                       const char *key_pem, frugal_err_t *err);

/* A listener's TLS material, indexing pem_load_tls' arrays. */
enum { PEM_TLS_CERT, PEM_TLS_KEY, PEM_TLS_CA, PEM_TLS_FILES };

/* paths[] are a listener's certificate, key and client CA (NULL: none), read into pem[]
 * (malloc'ed; pem[PEM_TLS_CA] NULL without a CA) after every check a server makes before
 * serving them: the certificate valid now, the key its own, the CA bundle holding a
 * valid certificate. On error every pem[i] is NULL. */
int pem_load_tls(const char *const paths[PEM_TLS_FILES], char *pem[PEM_TLS_FILES],
                 frugal_err_t *err);

/* Free what pem_load_tls read, and set each pem[i] NULL. */
void pem_free_tls(char *pem[PEM_TLS_FILES]);

#endif
