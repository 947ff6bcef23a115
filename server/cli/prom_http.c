/* GET requests to Prometheus with libcurl: see prom_http.h. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "prom_http.h"
#include "strbuf.h"

/* The part of a redirect's Location an error shows. */
#define PROM__LOCATION_SHOWN 120

struct prom_http {
    const prom_http_opts_t *o;
    char *shown_url;
    CURL *curl;
    struct curl_slist *headers;
};

static size_t prom__write(char *ptr, size_t size, size_t n, void *arg) {
    strbuf_t *b = arg;
    strbuf_append(b, ptr, size * n);
    return b->failed ? 0 : size * n; /* 0: curl stops */
}

char *prom_http_url_shown(const char *url) {
    const char *host = strstr(url, "://");
    host = host != NULL ? host + 3 : url;
    size_t authority = strcspn(host, "/?#");
    const char *at = NULL;
    for (const char *c = host; c < host + authority; c++)
        if (*c == '@')
            at = c;
    const char *colon = at != NULL ? memchr(host, ':', (size_t)(at - host)) : NULL;
    if (colon == NULL)
        return strdup(url); /* no password (a user name alone is no secret) */
    size_t keep = (size_t)(colon + 1 - url), n = keep + 3 + strlen(at) + 1;
    char *shown = malloc(n);
    if (shown != NULL)
        snprintf(shown, n, "%.*s***%s", (int)keep, url, at);
    return shown;
}

const char *prom_http_url(const prom_http_t *h) {
    return h->shown_url;
}

int prom_http_open(const prom_http_opts_t *o, prom_http_t **out, frugal_err_t *err) {
    prom_http_t *h = calloc(1, sizeof(*h));
    if (h == NULL || (h->curl = curl_easy_init()) == NULL ||
        (h->shown_url = prom_http_url_shown(o->url)) == NULL) {
        prom_http_close(h);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    h->o = o;
    /* the base as requests join it, PATH after one slash */
    for (size_t n = strlen(h->shown_url); n > 0 && h->shown_url[n - 1] == '/'; n--)
        h->shown_url[n - 1] = '\0';
    /* curl would only say "Problem with the SSL CA cert": name the file that is wrong. */
    const char *files[][2] = {
        {"--ca-file", o->ca_file}, {"--cert", o->cert_file}, {"--key", o->key_file}};
    for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
        struct stat st;
        int e = 0;
        if (files[i][1] == NULL)
            continue;
        if (stat(files[i][1], &st) != 0 || access(files[i][1], R_OK) != 0)
            e = errno;
        else if (S_ISDIR(st.st_mode))
            e = EISDIR;
        if (e != 0) {
            prom_http_close(h);
            return frugal_err_set(err, FRUGAL_EINVAL, "%s %s: %s", files[i][0], files[i][1],
                                  strerror(e));
        }
    }
    if (o->bearer_token_file != NULL) {
        char *token = NULL;
        size_t len = 0;
        int e = cli_read_file(o->bearer_token_file, &token, &len);
        while (len > 0 &&
               (token[len - 1] == '\n' || token[len - 1] == '\r' || token[len - 1] == ' '))
            token[--len] = '\0';
        /* One line only: a header cannot carry the rest, and a cut token fails later. */
        const char *bad = e != 0     ? strerror(e)
                          : len == 0 ? "empty"
                          : strlen(token) != len || strcspn(token, "\r\n") != len
                              ? "not one line of text (a trailing newline is dropped, nothing else)"
                              : NULL;
        if (bad != NULL) {
            free(token);
            prom_http_close(h);
            return frugal_err_set(err, FRUGAL_EINVAL, "--bearer-token-file %s: %s",
                                  o->bearer_token_file, bad);
        }
        size_t hl = len + 32;
        char *header = malloc(hl);
        if (header != NULL) {
            snprintf(header, hl, "Authorization: Bearer %s", token);
            h->headers = curl_slist_append(NULL, header);
        }
        free(header);
        free(token);
        if (h->headers == NULL) {
            prom_http_close(h);
            return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
        }
    }
    *out = h;
    return 0;
}

void prom_http_close(prom_http_t *h) {
    if (h == NULL)
        return;
    curl_slist_free_all(h->headers);
    curl_easy_cleanup(h->curl);
    free(h->shown_url);
    free(h);
}

int prom_http_get(prom_http_t *h, const char *path, const char *const *params, size_t count,
                  char **body, size_t *len, frugal_err_t *err) {
    *body = NULL, *len = 0;
    strbuf_t b = {0};
    FILE *u;
    char *url = NULL;
    size_t url_len = 0;
    if ((u = open_memstream(&url, &url_len)) == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    const char *base = h->o->url;
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/')
        bl--;
    fprintf(u, "%.*s%s", (int)bl, base, path);
    for (size_t i = 0; i + 1 < 2 * count; i += 2) {
        char *v = curl_easy_escape(h->curl, params[i + 1], 0);
        fprintf(u, "%c%s=%s", i ? '&' : '?', params[i], v ? v : "");
        curl_free(v);
    }
    if (fclose(u) != 0) {
        free(url);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    CURL *c = h->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
    curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, prom__write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    if (h->headers)
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers);
    if (h->o->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, h->o->ca_file);
    if (h->o->cert_file)
        curl_easy_setopt(c, CURLOPT_SSLCERT, h->o->cert_file);
    if (h->o->key_file)
        curl_easy_setopt(c, CURLOPT_SSLKEY, h->o->key_file);
    CURLcode rc = curl_easy_perform(c);
    free(url);
    if (b.failed) {
        strbuf_free(&b);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    if (rc != CURLE_OK) {
        strbuf_free(&b);
        if (rc == CURLE_SSL_CACERT_BADFILE && h->o->ca_file != NULL)
            return frugal_err_set(err, FRUGAL_EINVAL,
                                  "--ca-file %s: no CA certificate curl can read", h->o->ca_file);
        if (rc == CURLE_SSL_CERTPROBLEM && h->o->cert_file != NULL)
            return frugal_err_set(err, FRUGAL_EINVAL, "--cert %s / --key %s: %s", h->o->cert_file,
                                  h->o->key_file, curl_easy_strerror(rc));
        return frugal_err_set(err, FRUGAL_EUNAVAIL, "cannot reach %s: %s", h->shown_url,
                              curl_easy_strerror(rc));
    }
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    const char *type = NULL;
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
    bool json = type != NULL && strstr(type, "json") != NULL;
    /* Prometheus' own errors are JSON with a "status"; anything else at an error code is
     * not its answer, whatever its content type. */
    bool prometheus_error =
        status >= 400 && json && b.data != NULL && strstr(b.data, "\"status\"") != NULL;
    const char *location = NULL;
    if (status >= 300 && status < 400)
        curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &location);
    if (status != 200 && !prometheus_error && location != NULL) {
        /* A login proxy's redirect is recognisable by where it leads. */
        strbuf_free(&b);
        char *to = prom_http_url_shown(location);
        const char *shown = to != NULL ? to : location;
        int e =
            frugal_err_set(err, FRUGAL_EINVAL, "%s%s: HTTP %ld to %.*s%s: not a Prometheus answer",
                           h->shown_url, path, status, PROM__LOCATION_SHOWN, shown,
                           strlen(shown) > PROM__LOCATION_SHOWN ? "..." : "");
        free(to);
        return e;
    }
    if (status != 200 && !prometheus_error) {
        strbuf_free(&b);
        /* The shown URL differs from the given one when it hides a password. */
        bool url_password = strcmp(h->shown_url, h->o->url) != 0;
        const char *refused =
            status != 401 && status != 403    ? ""
            : h->o->bearer_token_file != NULL ? ": the server refused the --bearer-token-file token"
            : url_password ? ": the server refused the user and password in the URL"
                           : ": the server asks for credentials (user:password@ in the "
                             "URL, --bearer-token-file, --cert/--key)";
        return frugal_err_set(err, FRUGAL_EINVAL, "%s%s: not a Prometheus answer (HTTP %ld%s)%s",
                              h->shown_url, path, status, json ? "" : ", not JSON", refused);
    }
    strbuf_append(&b, "", 0); /* an empty body is "" */
    *len = b.len;
    if ((*body = strbuf_take(&b)) == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    return 0;
}
