#include "pem.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "strbuf.h"

int pem_read_file(const char *path, char **out, frugal_err_t *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return frugal_err_set(err, FRUGAL_EIO, "cannot open %s: %s", path, strerror(errno));
    strbuf_t text = {0};
    int got = strbuf_read_stream(&text, f, PEM_FILE_MAX);
    fclose(f);
    int rc = 0;
    if (got == ENOMEM || text.failed)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "%s: out of memory", path);
    else if (got == EFBIG)
        rc = frugal_err_set(err, FRUGAL_EINVAL, "%s: larger than %u bytes, not a PEM file", path,
                            PEM_FILE_MAX);
    else if (got != 0)
        rc = frugal_err_set(err, FRUGAL_EIO, "cannot read %s: %s", path, strerror(got));
    else if (text.len == 0)
        rc = frugal_err_set(err, FRUGAL_EINVAL, "%s: empty file", path);
    if (rc == 0)
        *out = strbuf_take(&text);
    strbuf_free(&text);
    return rc;
}

/* t as OpenSSL prints it ("Jan  2 03:04:05 2026 GMT") into buf. */
static void pem__format_time(const ASN1_TIME *t, char *buf, size_t size) {
    snprintf(buf, size, "?");
    BIO *out = BIO_new(BIO_s_mem());
    if (out != NULL && ASN1_TIME_print(out, t) == 1) {
        int n = BIO_read(out, buf, (int)size - 1);
        buf[n > 0 ? n : 0] = '\0';
    }
    BIO_free(out);
}

/* Whether cert is valid now: true, or false with why it is not ("expired on DATE",
 * "is not valid before DATE") in why. */
static bool pem__valid_now(X509 *cert, char *why, size_t size) {
    char when[64];
    if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
        pem__format_time(X509_get0_notAfter(cert), when, sizeof(when));
        snprintf(why, size, "expired on %s", when);
        return false;
    }
    if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
        pem__format_time(X509_get0_notBefore(cert), when, sizeof(when));
        snprintf(why, size, "is not valid before %s", when);
        return false;
    }
    return true;
}

/* The next certificate of bio, in either PEM form gRPC reads ("CERTIFICATE", or "TRUSTED
 * CERTIFICATE" as `openssl x509 -trustout` writes it); NULL at the end. */
static X509 *pem__next_certificate(BIO *bio) {
    return PEM_read_bio_X509_AUX(bio, NULL, NULL, NULL);
}

int pem_check_certificate(const char *path, const char *pem, frugal_err_t *err) {
    BIO *bio = BIO_new_mem_buf(pem, -1);
    X509 *cert = bio != NULL ? pem__next_certificate(bio) : NULL;
    BIO_free(bio);
    ERR_clear_error(); /* OpenSSL's queue must not leak into gRPC's handshakes */
    if (cert == NULL)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s: no readable PEM certificate", path);
    char why[96];
    int rc = pem__valid_now(cert, why, sizeof(why))
                 ? 0
                 : frugal_err_set(err, FRUGAL_EINVAL, "%s: the certificate %s", path, why);
    X509_free(cert);
    return rc;
}

int pem_load_tls(const char *const paths[PEM_TLS_FILES], char *pem[PEM_TLS_FILES],
                 frugal_err_t *err) {
    int rc = 0;
    for (int i = 0; i < PEM_TLS_FILES; i++)
        pem[i] = NULL;
    for (int i = 0; i < PEM_TLS_FILES && rc == 0; i++)
        if (paths[i] != NULL)
            rc = pem_read_file(paths[i], &pem[i], err);
    const char *cert = paths[PEM_TLS_CERT], *key = paths[PEM_TLS_KEY], *ca = paths[PEM_TLS_CA];
    if (rc == 0)
        rc = pem_check_certificate(cert, pem[PEM_TLS_CERT], err);
    if (rc == 0)
        rc = pem_check_key_pair(cert, pem[PEM_TLS_CERT], key, pem[PEM_TLS_KEY], err);
    /* A client CA without a valid certificate would refuse every client, unexplained. */
    if (rc == 0 && pem[PEM_TLS_CA] != NULL)
        rc = pem_check_bundle(ca, pem[PEM_TLS_CA], err);
    if (rc != 0)
        pem_free_tls(pem);
    return rc;
}

void pem_free_tls(char *pem[PEM_TLS_FILES]) {
    for (int i = 0; i < PEM_TLS_FILES; i++) {
        free(pem[i]);
        pem[i] = NULL;
    }
}

double pem_not_after(const char *pem) {
    BIO *bio = BIO_new_mem_buf(pem, -1);
    X509 *cert = bio != NULL ? pem__next_certificate(bio) : NULL;
    BIO_free(bio);
    ERR_clear_error();
    struct tm tm;
    double t = -1;
    if (cert != NULL && ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) == 1)
        t = (double)timegm(&tm);
    X509_free(cert);
    return t;
}

int pem_check_bundle(const char *path, const char *pem, frugal_err_t *err) {
    BIO *bio = BIO_new_mem_buf(pem, -1);
    if (bio == NULL) {
        ERR_clear_error();
        return frugal_err_set(err, FRUGAL_ENOMEM, "%s: out of memory", path);
    }
    char first[96] = "", why[96];
    size_t read = 0;
    bool valid = false;
    X509 *cert;
    while (!valid && (cert = pem__next_certificate(bio)) != NULL) {
        valid = pem__valid_now(cert, read++ == 0 ? first : why, sizeof(why));
        X509_free(cert);
    }
    BIO_free(bio);
    ERR_clear_error(); /* the read past the last certificate leaves an error queued */
    if (read == 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s: no readable PEM certificate", path);
    if (valid)
        return 0;
    if (read == 1)
        return frugal_err_set(err, FRUGAL_EINVAL, "%s: the certificate %s", path, first);
    return frugal_err_set(err, FRUGAL_EINVAL,
                          "%s: none of its %zu certificates is valid now (the first %s)", path,
                          read, first);
}

/* No passphrase: an encrypted key is unreadable here, never a prompt on a terminal. */
static int pem__no_passphrase(char *buf, int size, int rwflag, void *u) {
    (void)buf, (void)size, (void)rwflag, (void)u;
    return 0;
}

int pem_check_key_pair(const char *cert_path, const char *cert_pem, const char *key_path,
                       const char *key_pem, frugal_err_t *err) {
    BIO *cb = BIO_new_mem_buf(cert_pem, -1);
    X509 *cert = cb != NULL ? pem__next_certificate(cb) : NULL;
    BIO_free(cb);
    BIO *kb = BIO_new_mem_buf(key_pem, -1);
    EVP_PKEY *key = kb != NULL ? PEM_read_bio_PrivateKey(kb, NULL, pem__no_passphrase, NULL) : NULL;
    BIO_free(kb);
    int rc = 0;
    if (cert == NULL)
        rc = frugal_err_set(err, FRUGAL_EINVAL, "%s: no readable PEM certificate", cert_path);
    else if (key == NULL)
        rc = frugal_err_set(err, FRUGAL_EINVAL,
                            "%s: no readable PEM private key (an encrypted key is not supported)",
                            key_path);
    else if (X509_check_private_key(cert, key) != 1)
        rc =
            frugal_err_set(err, FRUGAL_EINVAL, "%s is not the private key of the certificate in %s",
                           key_path, cert_path);
    ERR_clear_error(); /* OpenSSL's queue must not leak into gRPC's handshakes */
    EVP_PKEY_free(key);
    X509_free(cert);
    return rc;
}
