#include "ops_http.h"

#include <dirent.h>
#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "grpc_server.h"
#include "log.h"
#include "service.h"

/* A request's header block may not exceed this (MHD answers 431/414 beyond it). */
#define OPS_MEMORY_LIMIT (32u << 10)
#define OPS_CONNECTIONS_MAX 64
/* One address (a client that opens connections and drips bytes into them, which the
 * idle timeout does not close) cannot take the slots kubelet's probes need. */
#define OPS_CONNECTIONS_PER_ADDRESS 16
#define OPS_IDLE_TIMEOUT_S 10

struct ops_http {
    struct MHD_Daemon *daemon;
    const frugal_config_t *cfg;
    cluster_t *cluster;
    atomic_int readiness;      /* ops_readiness_t */
    pthread_mutex_t server_mu; /* guards server: a scrape and the server's stop */
    const frugal_server_t *server;
};

/* ---- process_* from /proc/self ---- */

static void ops__process_metrics(metrics_buf_t *b) {
    double ticks = (double)sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    char stat[1024] = {0};
    FILE *f = fopen("/proc/self/stat", "r");
    if (f != NULL) {
        size_t n = fread(stat, 1, sizeof(stat) - 1, f);
        stat[n] = '\0';
        fclose(f);
    }
    /* fields after "(comm)": 3 state ... 14 utime 15 stime ... 22 starttime 23 vsize 24 rss */
    const char *p = strrchr(stat, ')');
    unsigned long long v[24] = {0};
    if (p != NULL) {
        p += 2;
        for (int field = 3; field <= 24 && *p; field++) {
            char *end;
            v[field - 1] = field == 3 ? 0 : strtoull(p, &end, 10);
            p = strchr(p, ' ');
            if (p == NULL)
                break;
            p++;
        }
    }
    double btime = 0;
    f = fopen("/proc/stat", "r");
    if (f != NULL) {
        char line[256];
        while (fgets(line, sizeof(line), f) != NULL)
            if (strncmp(line, "btime ", 6) == 0)
                btime = strtod(line + 6, NULL);
        fclose(f);
    }
    size_t fds = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            fds += e->d_name[0] != '.';
        closedir(d);
        fds--; /* the directory's own descriptor */
    }
    struct rlimit rl = {0};
    getrlimit(RLIMIT_NOFILE, &rl);
    struct {
        const char *name, *help, *type;
        double value;
    } rows[] = {
        {"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter",
         (double)(v[13] + v[14]) / ticks},
        {"process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
         "gauge", btime + (double)v[21] / ticks},
        {"process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", (double)v[22]},
        {"process_resident_memory_bytes", "Resident memory size in bytes.", "gauge",
         (double)v[23] * (double)page},
        {"process_open_fds", "Number of open file descriptors.", "gauge", (double)fds},
        {"process_max_fds", "Maximum number of open file descriptors.", "gauge",
         rl.rlim_cur == RLIM_INFINITY ? -1.0 : (double)rl.rlim_cur},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        metrics_buf_family(b, rows[i].name, rows[i].help, rows[i].type);
        metrics_buf_sample(b, rows[i].name, NULL, NULL, 0, rows[i].value);
    }
}

/* ---- certificates ---- */

/* The certificate each TLS listener serves to new connections (a rotation that failed
 * its checks is not served, so not shown). */
static void ops__cert_metrics(const frugal_config_t *cfg, const frugal_server_t *server,
                              metrics_buf_t *b) {
    static const char *const names[] = {"listener"};
    const char *name = "frugal_tls_certificate_expiry_timestamp_seconds";
    metrics_buf_family(b, name,
                       "When the listener's serving certificate expires (seconds since the epoch).",
                       "gauge");
    for (size_t i = 0; i < cfg->listeners_count; i++) {
        const listener_config_t *l = &cfg->listeners[i];
        if (l->tls_cert == NULL)
            continue;
        double t = frugal_server_certificate_not_after(server, i);
        if (t < 0)
            continue; /* a certificate without a readable notAfter: no sample */
        const char *values[] = {l->address};
        metrics_buf_sample(b, name, names, values, 1, t);
    }
}

/* The memory budget (limits.memory) and the calls that hold the transport's memory. */
static void ops__limits_metrics(const frugal_server_t *server, metrics_buf_t *b) {
    frugal_server_usage_t u;
    frugal_server_get_usage(server, &u);
    const struct {
        const char *name, *help;
        double value;
    } gauges[] = {
        {"frugal_memory_budget_bytes", "limits.memory: the gRPC transport's resource quota.",
         (double)u.memory_budget_bytes},
        {"frugal_calls_in_flight", "Calls received and not yet answered and freed.",
         (double)u.calls_in_flight},
        {"frugal_calls_in_flight_limit",
         "limits.max_calls_per_worker x workers: past it, calls get RESOURCE_EXHAUSTED.",
         (double)u.calls_in_flight_max},
        {"frugal_calls_awaiting_body",
         "Calls whose message has not arrived, deadline later than limits.receive_timeout.",
         (double)u.calls_awaiting_body},
        {"frugal_connection_calls_in_flight_max",
         "Calls in flight of the busiest connection (past its fair share, RESOURCE_EXHAUSTED).",
         (double)u.connection_calls_max},
        {"frugal_connections_with_calls",
         "Connections holding calls in flight: the cap is shared among them.",
         (double)u.connections_with_calls},
        {"frugal_changes_running",
         "Calls that change the cluster being handled (at most one worker fewer than all).",
         (double)u.changes_running},
        {"frugal_changes_parked",
         "Changes waiting for a worker that finishes a change (their budget running).",
         (double)u.changes_parked},
    };
    for (size_t i = 0; i < sizeof(gauges) / sizeof(gauges[0]); i++) {
        metrics_buf_family(b, gauges[i].name, gauges[i].help, "gauge");
        metrics_buf_sample(b, gauges[i].name, NULL, NULL, 0, gauges[i].value);
    }
}

static bool ops__group_exists(const char *group, void *cluster) {
    return cluster_find_group(cluster, group) != NULL;
}

void ops_metrics_render(const frugal_config_t *cfg, cluster_t *cluster,
                        const frugal_server_t *server, metrics_buf_t *b) {
    expander_metrics_declare(cluster);
    if (cluster != NULL) {
        cluster_read_lock(cluster);
        metrics_keep_groups(ops__group_exists, cluster);
        cluster_read_unlock(cluster);
    }
    metrics_write(b);
    if (cluster != NULL)
        cluster_metrics_write(cluster, b);
    if (server != NULL) {
        ops__limits_metrics(server, b);
        ops__cert_metrics(cfg, server, b);
    }
    ops__process_metrics(b);
}

/* ---- HTTP ---- */

static enum MHD_Result ops__reply(struct MHD_Connection *conn, unsigned int status,
                                  const char *type, char *body, size_t len, bool owned) {
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (r == NULL) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result ops__text(struct MHD_Connection *conn, unsigned int status,
                                 const char *text) {
    return ops__reply(conn, status, "text/plain; charset=utf-8", (char *)text, strlen(text), false);
}

static enum MHD_Result ops__handle(void *cls, struct MHD_Connection *conn, const char *url,
                                   const char *method, const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls) {
    ops_http_t *ops = cls;
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;
    log_fields(LOG_LEVEL_DEBUG, (log_field_t[]){LOG_STR("method", method), LOG_STR("path", url)}, 2,
               "ops request");
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return ops__text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served\n");
    if (strcmp(url, "/healthz") == 0)
        return ops__text(conn, MHD_HTTP_OK, "ok\n");
    if (strcmp(url, "/readyz") == 0) {
        switch ((ops_readiness_t)atomic_load(&ops->readiness)) {
        case OPS_READY:
            return ops__text(conn, MHD_HTTP_OK, "ready\n");
        case OPS_DRAINING:
            return ops__text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "draining\n");
        case OPS_STARTING:
            break;
        }
        return ops__text(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "starting\n");
    }
    if (strcmp(url, "/metrics") == 0) {
        metrics_buf_t b = {0};
        pthread_mutex_lock(&ops->server_mu);
        ops_metrics_render(ops->cfg, ops->cluster, ops->server, &b);
        pthread_mutex_unlock(&ops->server_mu);
        if (b.failed) {
            metrics_buf_free(&b);
            return ops__text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
        }
        return ops__reply(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", b.data,
                          b.len, true);
    }
    return ops__text(conn, MHD_HTTP_NOT_FOUND, "not found: try /healthz, /readyz or /metrics\n");
}

/* libmicrohttpd's own messages (bad requests, resource limits) at debug level: a peer
 * sending garbage must not flood the log. */
static void ops__mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    if (log_get_level() > LOG_LEVEL_DEBUG)
        return;
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n')
        msg[--n] = '\0';
    log_fields(LOG_LEVEL_DEBUG, (log_field_t[]){LOG_STR("source", "libmicrohttpd")}, 1, "%s", msg);
}

int ops_http_start(const char *address, const frugal_config_t *cfg, cluster_t *cluster,
                   ops_http_t **out, frugal_err_t *err) {
    char host[256];
    const char *colon = strrchr(address, ':');
    size_t hlen = colon != NULL ? (size_t)(colon - address) : 0;
    if (colon == NULL || hlen == 0 || hlen >= sizeof(host))
        return frugal_err_set(err, FRUGAL_EINVAL, "ops_listen \"%s\": expected HOST:PORT", address);
    memcpy(host, address, hlen);
    host[hlen] = '\0';
    const char *h = host;
    if (host[0] == '[' && hlen > 2) {
        host[hlen - 1] = '\0';
        h = host + 1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(h, colon + 1, &hints, &ai);
    if (gai != 0)
        return frugal_err_set(err, FRUGAL_EINVAL, "ops_listen \"%s\": %s", address,
                              gai_strerror(gai));
    ops_http_t *ops = calloc(1, sizeof(*ops));
    if (ops == NULL) {
        freeaddrinfo(ai);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    ops->cfg = cfg;
    ops->cluster = cluster;
    pthread_mutex_init(&ops->server_mu, NULL);
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    ops->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, ops__handle, ops, MHD_OPTION_EXTERNAL_LOGGER, ops__mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)OPS_MEMORY_LIMIT, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)OPS_CONNECTIONS_MAX,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)OPS_CONNECTIONS_PER_ADDRESS,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)OPS_IDLE_TIMEOUT_S, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (ops->daemon == NULL) {
        pthread_mutex_destroy(&ops->server_mu);
        free(ops);
        return frugal_err_set(err, FRUGAL_EIO,
                              "cannot serve the ops endpoint on %s (address in use or invalid)",
                              address);
    }
    log_info("ops endpoint on http://%s (/healthz, /readyz, /metrics)", address);
    *out = ops;
    return 0;
}

void ops_http_set_readiness(ops_http_t *ops, ops_readiness_t readiness) {
    if (ops != NULL)
        atomic_store(&ops->readiness, (int)readiness);
}

void ops_http_stop(ops_http_t *ops) {
    if (ops == NULL)
        return;
    MHD_stop_daemon(ops->daemon);
    pthread_mutex_destroy(&ops->server_mu);
    free(ops);
}

void ops_http_set_server(ops_http_t *ops, const frugal_server_t *server) {
    if (ops == NULL)
        return;
    pthread_mutex_lock(&ops->server_mu);
    ops->server = server;
    pthread_mutex_unlock(&ops->server_mu);
}
