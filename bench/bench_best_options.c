/* BestOptions benchmark: realistic expander requests sent to a running `frugal serve`
 * over real gRPC; reports latency (p50/p99), calls per second and the server's peak RSS.
 *
 * usage: bench_best_options ADDR SERVER_PID [--tls-ca F] [--legacy] [--sizes 10x10,...]
 *                           [--calls N]
 *
 * A request is OPTIONS options x PODS pods, as cluster-autoscaler builds it: every
 * option carries the same PODS pending pods (each about 1.6 KB serialized the way
 * Kubernetes does: labels, annotations, owner references, three containers with
 * requests and limits, env, volume mounts, tolerations, status conditions), and the
 * node map holds one template node per option. Fields frugal does not read are encoded
 * by hand as the unknown fields they are to it.
 *
 * Peak RSS is the server's VmHWM, reset before each size through
 * /proc/PID/clear_refs ("5"), so each figure is that size's own peak (marked * when
 * the reset was not permitted). rpc_client sends the request from its buffer without
 * a copy, so latency is the transfer plus the server's work. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "expander.pb-c.h"
#include "rpc_client.h"
#include "wire_names.h"

/* --- a tiny protobuf writer --- */

typedef struct pb {
    uint8_t *data;
    size_t len, cap;
} pb_t;

static void pb_reserve(pb_t *b, size_t n) {
    if (b->len + n <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
        cap *= 2;
    b->data = realloc(b->data, cap);
    if (!b->data) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    b->cap = cap;
}

static void pb_raw_varint(pb_t *b, uint64_t v) {
    pb_reserve(b, 10);
    while (v >= 0x80) {
        b->data[b->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->data[b->len++] = (uint8_t)v;
}

static void pb_bytes(pb_t *b, uint32_t field, const void *data, size_t len) {
    pb_raw_varint(b, (uint64_t)field << 3 | 2);
    pb_raw_varint(b, len);
    pb_reserve(b, len);
    memcpy(b->data + b->len, data, len);
    b->len += len;
}

static void pb_str(pb_t *b, uint32_t field, const char *s) {
    pb_bytes(b, field, s, strlen(s));
}

static void pb_varint(pb_t *b, uint32_t field, uint64_t v) {
    pb_raw_varint(b, (uint64_t)field << 3);
    pb_raw_varint(b, v);
}

/* Append sub as an embedded message and reset it. */
static void pb_msg(pb_t *b, uint32_t field, pb_t *sub) {
    pb_bytes(b, field, sub->data, sub->len);
    sub->len = 0;
}

static void pb_free(pb_t *b) {
    free(b->data);
    memset(b, 0, sizeof(*b));
}

/* map<string,string> entry */
static void pb_map_str(pb_t *b, uint32_t field, const char *k, const char *v) {
    pb_t e = {0};
    pb_str(&e, 1, k);
    pb_str(&e, 2, v);
    pb_msg(b, field, &e);
    pb_free(&e);
}

/* map<string,Quantity> entry */
static void pb_map_quantity(pb_t *b, uint32_t field, const char *k, const char *v) {
    pb_t q = {0}, e = {0};
    pb_str(&q, 1, v);
    pb_str(&e, 1, k);
    pb_msg(&e, 2, &q);
    pb_msg(b, field, &e);
    pb_free(&q);
    pb_free(&e);
}

/* --- realistic objects --- */

static void uuid_of(uint64_t seed, char out[37]) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 0x1234567;
    static const char hex[] = "0123456789abcdef";
    for (int i = 0, k = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            out[i] = '-';
            continue;
        }
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        out[i] = hex[(x >> (k++ % 60)) & 15];
    }
    out[36] = '\0';
}

/* A pending pod of a Deployment, serialized as Kubernetes would (about 1.6 KB). */
static void pod_build(pb_t *out, size_t index) {
    char name[64], uid[37], owner_uid[37], buf[128];
    uuid_of(index + 1, uid);
    uuid_of(index % 7 + 1000, owner_uid);
    size_t app = index % 7;
    snprintf(name, sizeof(name), "checkout-%zu-7d9f8c6b5-%05zx", app, index * 7919 % 0xfffff);

    pb_t meta = {0}, t = {0}, spec = {0}, c = {0}, sub = {0}, status = {0};
    pb_str(&meta, 1, name);
    snprintf(buf, sizeof(buf), "checkout-%zu-7d9f8c6b5-", app);
    pb_str(&meta, 2, buf);
    pb_str(&meta, 3, "production");
    pb_str(&meta, 5, uid);
    snprintf(buf, sizeof(buf), "%zu", 48213370 + index);
    pb_str(&meta, 6, buf);
    pb_varint(&t, 1, 1763780000 + index);
    pb_msg(&meta, 8, &t);
    snprintf(buf, sizeof(buf), "checkout-%zu", app);
    pb_map_str(&meta, 11, "app.kubernetes.io/name", buf);
    pb_map_str(&meta, 11, "app.kubernetes.io/part-of", "shop");
    pb_map_str(&meta, 11, "pod-template-hash", "7d9f8c6b5");
    pb_map_str(&meta, 11, "tier", "backend");
    pb_map_str(&meta, 12, "prometheus.io/scrape", "true");
    pb_map_str(&meta, 12, "prometheus.io/port", "9090");
    pb_map_str(&meta, 12, "checksum/config",
               "3f2a9c1e8b7d6f5a4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d5c");
    pb_map_str(&meta, 12, "cluster-autoscaler.kubernetes.io/safe-to-evict", "true");
    pb_str(&sub, 1, "ReplicaSet");
    snprintf(buf, sizeof(buf), "checkout-%zu-7d9f8c6b5", app);
    pb_str(&sub, 3, buf);
    pb_str(&sub, 4, owner_uid);
    pb_str(&sub, 5, "apps/v1");
    pb_varint(&sub, 6, 1);
    pb_varint(&sub, 7, 1);
    pb_msg(&meta, 13, &sub);

    /* volumes (name + an emptyDir / configMap source) */
    pb_str(&sub, 1, "config");
    pb_msg(&spec, 1, &sub);
    pb_str(&sub, 1, "kube-api-access-x7k2p");
    pb_msg(&spec, 1, &sub);

    static const char *const cnames[3] = {"app", "envoy", "log-shipper"};
    static const char *const images[3] = {
        "registry.example.com/shop/checkout:v2.14.3",
        "envoyproxy/envoy:v1.31.2",
        "fluent/fluent-bit:3.1.9",
    };
    for (size_t k = 0; k < 3; k++) {
        pb_str(&c, 1, cnames[k]);
        pb_str(&c, 2, images[k]);
        pb_str(&c, 4, "--config=/etc/app/config.yaml");
        pb_varint(&sub, 3, 8080 + k);
        pb_str(&sub, 4, "TCP");
        pb_msg(&c, 6, &sub);
        static const char *const env[2][2] = {
            {"GOMAXPROCS", "2"},
            {"OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel-collector:4317"},
        };
        for (size_t e = 0; e < (k == 0 ? 2u : 0u); e++) {
            pb_str(&sub, 1, env[e][0]);
            pb_str(&sub, 2, env[e][1]);
            pb_msg(&c, 7, &sub);
        }
        char cpu[16];
        snprintf(cpu, sizeof(cpu), "%zum", k == 0 ? 100 * (index % 15 + 1) : 50);
        pb_map_quantity(&sub, 1, "cpu", k == 0 ? "2" : "200m");
        pb_map_quantity(&sub, 1, "memory", k == 0 ? "2Gi" : "256Mi");
        pb_map_quantity(&sub, 2, "cpu", cpu);
        pb_map_quantity(&sub, 2, "memory", k == 0 ? "1Gi" : "64Mi");
        pb_msg(&c, 8, &sub);
        pb_str(&sub, 1, "config");
        pb_varint(&sub, 2, 1);
        pb_str(&sub, 3, "/etc/app");
        pb_msg(&c, 9, &sub);
        if (k == 0) {
            pb_str(&sub, 1, "kube-api-access-x7k2p");
            pb_varint(&sub, 2, 1);
            pb_str(&sub, 3, "/var/run/secrets/kubernetes.io/serviceaccount");
            pb_msg(&c, 9, &sub);
        }
        pb_str(&c, 13, "/dev/termination-log");
        pb_str(&c, 14, "IfNotPresent");
        pb_msg(&spec, 2, &c);
    }
    pb_str(&spec, 3, "Always");
    pb_varint(&spec, 4, 30);
    pb_str(&spec, 6, "ClusterFirst");
    pb_map_str(&spec, 7, "kubernetes.io/os", "linux");
    pb_str(&spec, 8, "checkout");
    pb_str(&sub, 1, "node.kubernetes.io/not-ready");
    pb_str(&sub, 2, "Exists");
    pb_str(&sub, 4, "NoExecute");
    pb_varint(&sub, 5, 300);
    pb_msg(&spec, 22, &sub);
    pb_str(&sub, 1, "node.kubernetes.io/unreachable");
    pb_str(&sub, 2, "Exists");
    pb_str(&sub, 4, "NoExecute");
    pb_varint(&sub, 5, 300);
    pb_msg(&spec, 22, &sub);
    pb_str(&spec, 24, "production-high");
    pb_varint(&spec, 25, 100000);

    pb_str(&status, 1, "Pending");
    pb_str(&sub, 1, "PodScheduled");
    pb_str(&sub, 2, "False");
    pb_str(&sub, 5, "Unschedulable");
    pb_str(&sub, 6, "0/30 nodes are available: 30 Insufficient cpu.");
    pb_msg(&status, 2, &sub);
    pb_str(&status, 7, "Burstable");

    pb_msg(out, 1, &meta);
    pb_msg(out, 2, &spec);
    pb_msg(out, 3, &status);
    pb_free(&meta);
    pb_free(&t);
    pb_free(&spec);
    pb_free(&c);
    pb_free(&sub);
    pb_free(&status);
}

/* The template node of group i. */
static void node_build(pb_t *out, size_t i, const char *id) {
    static const struct {
        const char *type, *cpu, *memory;
    } types[] = {
        {"n1-standard-2", "2", "7680Mi"},   {"n1-standard-4", "4", "15Gi"},
        {"n1-standard-8", "8", "30Gi"},     {"n1-highmem-4", "4", "26Gi"},
        {"n1-highcpu-16", "16", "14745Mi"}, {"n1-standard-16", "16", "60Gi"},
    };
    static const char *const zones[3] = {"us-central1-a", "us-central1-b", "us-central1-c"};
    size_t t = i % (sizeof(types) / sizeof(*types));
    char name[96];
    snprintf(name, sizeof(name), "template-%s", id);
    pb_t meta = {0}, status = {0};
    pb_str(&meta, 1, name);
    pb_map_str(&meta, 11, "kubernetes.io/os", "linux");
    pb_map_str(&meta, 11, "kubernetes.io/arch", "amd64");
    pb_map_str(&meta, 11, "kubernetes.io/hostname", name);
    pb_map_str(&meta, 11, "node.kubernetes.io/instance-type", types[t].type);
    pb_map_str(&meta, 11, "topology.kubernetes.io/zone", zones[i % 3]);
    pb_map_str(&meta, 11, "topology.kubernetes.io/region", "us-central1");
    pb_map_quantity(&status, 1, "cpu", types[t].cpu);
    pb_map_quantity(&status, 1, "memory", types[t].memory);
    pb_map_quantity(&status, 1, "pods", "110");
    pb_map_quantity(&status, 2, "cpu", types[t].cpu);
    pb_map_quantity(&status, 2, "memory", types[t].memory);
    pb_msg(out, 1, &meta);
    pb_msg(out, 3, &status);
    pb_free(&meta);
    pb_free(&status);
}

/* The whole BestOptionsRequest: options x pods, the pods repeated in every option. */
static void request_build(pb_t *out, size_t options, size_t pods, bool legacy, size_t *pod_bytes) {
    pb_t *pod = calloc(pods, sizeof(*pod));
    size_t pod_total = 0;
    for (size_t k = 0; k < pods; k++) {
        pod_build(&pod[k], k);
        pod_total += pod[k].len;
    }
    *pod_bytes = pods ? pod_total / pods : 0;
    pb_t opt = {0}, node = {0}, entry = {0};
    char id[32], debug[64];
    for (size_t i = 0; i < options; i++) {
        snprintf(id, sizeof(id), "pool-%03zu", i);
        snprintf(debug, sizeof(debug), "option %zu: %zu pods", i, pods);
        pb_str(&opt, 1, id);
        pb_varint(&opt, 2, 1 + (pods / 8 + i) % 5);
        pb_str(&opt, 3, debug);
        for (size_t k = 0; k < pods; k++)
            pb_bytes(&opt, legacy ? 4 : 5, pod[k].data, pod[k].len);
        pb_msg(out, 1, &opt);
    }
    for (size_t i = 0; i < options; i++) {
        snprintf(id, sizeof(id), "pool-%03zu", i);
        node_build(&node, i, id);
        pb_str(&entry, 1, id);
        pb_msg(&entry, 2, &node);
        pb_msg(out, legacy ? 2 : 3, &entry);
    }
    for (size_t k = 0; k < pods; k++)
        pb_free(&pod[k]);
    free(pod);
    pb_free(&opt);
    pb_free(&node);
    pb_free(&entry);
}

/* --- measuring --- */

static long proc_status_kb(long pid, const char *key) {
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long v = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, n) == 0 && line[n] == ':')
            v = strtol(line + n + 1, NULL, 10);
    fclose(f);
    return v;
}

/* Reset the server's VmHWM to its current RSS; false when not permitted. */
static bool proc_reset_hwm(long pid) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/clear_refs", pid);
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double percentile(const double *sorted, size_t n, double p) {
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(
            stderr,
            "usage: %s ADDR SERVER_PID [--tls-ca F] [--legacy] [--sizes 10x10,100x200,200x1000] "
            "[--calls N]\n",
            argv[0]);
        return 2;
    }
    const char *addr = argv[1];
    long pid = strtol(argv[2], NULL, 10);
    const char *tls_ca = NULL, *sizes = "10x10,100x200,200x1000";
    bool legacy = false;
    long calls_override = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--tls-ca") == 0 && i + 1 < argc)
            tls_ca = argv[++i];
        else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc)
            sizes = argv[++i];
        else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
            calls_override = strtol(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--legacy") == 0)
            legacy = true;
        else {
            fprintf(stderr, "%s: unknown argument %s\n", argv[0], argv[i]);
            return 2;
        }
    }

    rpc_client_options_t opts = {.address = addr, .tls_ca = tls_ca, .timeout_ms = 60000};
    rpc_client_t *client;
    frugal_err_t err = {0};
    if (rpc_client_open(&opts, &client, &err) != 0) {
        fprintf(stderr, "%s: %s\n", addr, err.msg);
        return 1;
    }

    printf("server pid %ld, %s, %s wire; baseline RSS %ld KiB\n", pid, tls_ca ? "TLS" : "plaintext",
           legacy ? "legacy" : "current", proc_status_kb(pid, "VmRSS"));
    printf("%-8s %6s %6s %6s %7s %8s %8s %8s %13s %8s\n", "options", "pods", "pod_B", "calls",
           "MiB", "p50_ms", "p99_ms", "calls/s", "peak_RSS_MiB", "RSS/req");
    int status = 0;
    char *list = strdup(sizes);
    for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        size_t options = 0, pods = 0;
        if (sscanf(tok, "%zux%zu", &options, &pods) != 2 || options == 0) {
            fprintf(stderr, "bad size %s\n", tok);
            status = 2;
            break;
        }
        pb_t req = {0};
        size_t pod_bytes = 0;
        request_build(&req, options, pods, legacy, &pod_bytes);
        double mib = (double)req.len / (1024.0 * 1024.0);
        size_t calls = calls_override > 0       ? (size_t)calls_override
                       : req.len > (100u << 20) ? 10
                       : req.len > (10u << 20)  ? 30
                                                : 300;
        /* One warm-up call, then reset the high-water mark and measure. */
        uint8_t *resp = NULL;
        size_t resp_len = 0;
        grpc_status_code st;
        char *details = NULL;
        if (rpc_client_call(client, WIRE_EXPANDER_BEST_OPTIONS, req.data, req.len, &resp, &resp_len,
                            &st, &details) != 0 ||
            st != GRPC_STATUS_OK) {
            fprintf(stderr, "%s: call failed: %s\n", tok, details ? details : "local failure");
            free(details);
            free(resp);
            pb_free(&req);
            status = 1;
            break;
        }
        Grpcplugin__BestOptionsResponse *r =
            grpcplugin__best_options_response__unpack(NULL, resp_len, resp);
        if (!r || r->n_options == 0) {
            fprintf(stderr, "%s: empty or invalid answer\n", tok);
            status = 1;
        }
        if (r)
            grpcplugin__best_options_response__free_unpacked(r, NULL);
        free(details);
        free(resp);
        bool hwm = proc_reset_hwm(pid);
        double *lat = calloc(calls, sizeof(*lat));
        double start = clock_mono_ms_exact();
        for (size_t i = 0; i < calls; i++) {
            double t0 = clock_mono_ms_exact();
            details = NULL;
            resp = NULL;
            if (rpc_client_call(client, WIRE_EXPANDER_BEST_OPTIONS, req.data, req.len, &resp,
                                &resp_len, &st, &details) != 0 ||
                st != GRPC_STATUS_OK) {
                fprintf(stderr, "%s: call %zu failed: %s\n", tok, i,
                        details ? details : "local failure");
                status = 1;
            }
            lat[i] = clock_mono_ms_exact() - t0;
            free(details);
            free(resp);
        }
        double total = clock_mono_ms_exact() - start;
        qsort(lat, calls, sizeof(*lat), cmp_double);
        long peak = proc_status_kb(pid, "VmHWM");
        printf("%-8zu %6zu %6zu %6zu %7.1f %8.2f %8.2f %8.1f %12.1f%s %7.2fx\n", options, pods,
               pod_bytes, calls, mib, percentile(lat, calls, 0.5), percentile(lat, calls, 0.99),
               (double)calls * 1000.0 / total, peak / 1024.0, hwm ? " " : "*",
               peak * 1024.0 / (double)req.len);
        fflush(stdout);
        free(lat);
        pb_free(&req);
    }
    free(list);
    rpc_client_close(client);
    return status;
}
