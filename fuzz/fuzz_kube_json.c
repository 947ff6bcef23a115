/* libFuzzer target: kube_json_parse_pods and kube_json_parse_nodes on arbitrary text
 * (what `frugal plan` reads from `kubectl get pods -A -o json` / `get nodes -o json`).
 * Checks, for both:
 * - success, or FRUGAL_EINVAL with a message, a position that is 0 or 1-based, and an
 *   empty list; FRUGAL_ENOMEM;
 * - on success every item is a complete message: it serializes, and protobuf-c reads
 *   the bytes back to a message that serializes to the same bytes;
 * - parsing is deterministic: a second parse gives the same items;
 * - what kube_json accepts, the modules behind it accept: every pod's effective request
 *   computes (or its sum is out of range: FRUGAL_EINVAL saying so), every node decodes with
 *   node_info_decode (or overflows), and the pod helpers run on every pod. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kube_json.h"
#include "node_info.h"
#include "pod.h"

/* items[i] packed, malloc'ed; NULL when out of memory. */
static uint8_t *pack(const ProtobufCMessage *msg, size_t *len) {
    *len = protobuf_c_message_get_packed_size(msg);
    uint8_t *bytes = malloc(*len > 0 ? *len : 1);
    if (bytes != NULL && protobuf_c_message_pack(msg, bytes) != *len)
        __builtin_trap();
    return bytes;
}

/* The item serializes and reads back to the same bytes; returns the bytes. */
static uint8_t *check_item(const ProtobufCMessage *msg, size_t *len) {
    if (msg == NULL)
        __builtin_trap();
    uint8_t *bytes = pack(msg, len);
    if (bytes == NULL)
        return NULL;
    ProtobufCMessage *back = protobuf_c_message_unpack(msg->descriptor, NULL, *len, bytes);
    if (back == NULL)
        __builtin_trap();
    size_t len2;
    uint8_t *bytes2 = pack(back, &len2);
    if (bytes2 != NULL && (len2 != *len || memcmp(bytes, bytes2, *len) != 0))
        __builtin_trap();
    free(bytes2);
    protobuf_c_message_free_unpacked(back, NULL);
    return bytes;
}

static void check_failure(int rc, const kube_json_error_t *err, const void *items, size_t count) {
    if (rc == FRUGAL_ENOMEM)
        return;
    if (rc != FRUGAL_EINVAL || err->message[0] == '\0' || err->line < 0 || err->column < 0 ||
        items != NULL || count != 0)
        __builtin_trap();
}

/* Only an arithmetic overflow may make a resource sum fail on accepted input. */
static void check_overflow_only(int rc, const char *msg) {
    if (rc != 0 && rc != FRUGAL_ENOMEM &&
        (rc != FRUGAL_EINVAL ||
         (strstr(msg, "overflow") == NULL && strstr(msg, "out of range") == NULL)))
        __builtin_trap();
}

static void fuzz_pods(const char *text, size_t size) {
    kube_pod_list_t pods, again;
    kube_json_error_t err;
    memset(&err, 0, sizeof(err));
    int rc = kube_json_parse_pods(text, size, &pods, &err);
    if (rc != 0) {
        check_failure(rc, &err, pods.items, pods.count);
        return;
    }
    int rc2 = kube_json_parse_pods(text, size, &again, &err);
    if (rc2 == 0 && again.count != pods.count)
        __builtin_trap();
    for (size_t i = 0; i < pods.count; i++) {
        size_t len;
        uint8_t *bytes = check_item(&pods.items[i]->base, &len);
        if (bytes != NULL && rc2 == 0) {
            size_t len2;
            uint8_t *bytes2 = pack(&again.items[i]->base, &len2);
            if (bytes2 != NULL && (len2 != len || memcmp(bytes, bytes2, len) != 0))
                __builtin_trap();
            free(bytes2);
        }
        free(bytes);
        resources_t r;
        frugal_err_t ferr;
        frugal_err_clear(&ferr);
        check_overflow_only(pod_effective_request(pods.items[i], &r, &ferr), ferr.msg);
        (void)kube_pod_is_pending(pods.items[i]);
        (void)kube_pod_controller_kind(pods.items[i]);
    }
    if (rc2 == 0)
        kube_pod_list_clear(&again);
    kube_pod_list_clear(&pods);
    if (pods.items != NULL || pods.count != 0)
        __builtin_trap();
}

static void fuzz_nodes(const char *text, size_t size) {
    kube_node_list_t nodes, again;
    kube_json_error_t err;
    memset(&err, 0, sizeof(err));
    int rc = kube_json_parse_nodes(text, size, &nodes, &err);
    if (rc != 0) {
        check_failure(rc, &err, nodes.items, nodes.count);
        return;
    }
    int rc2 = kube_json_parse_nodes(text, size, &again, &err);
    if (rc2 == 0 && again.count != nodes.count)
        __builtin_trap();
    for (size_t i = 0; i < nodes.count; i++) {
        size_t len;
        uint8_t *bytes = check_item(&nodes.items[i]->base, &len);
        if (bytes == NULL)
            continue;
        if (rc2 == 0) {
            size_t len2;
            uint8_t *bytes2 = pack(&again.items[i]->base, &len2);
            if (bytes2 != NULL && (len2 != len || memcmp(bytes, bytes2, len) != 0))
                __builtin_trap();
            free(bytes2);
        }
        node_info_t info;
        frugal_err_t ferr;
        frugal_err_clear(&ferr);
        int nrc = node_info_decode(bytes, len, &info, &ferr);
        check_overflow_only(nrc, ferr.msg);
        if (nrc == 0) {
            if (info.capacity.cpu_milli < 0 || info.capacity.memory_bytes < 0 ||
                info.capacity.gpu < 0)
                __builtin_trap(); /* kube_json refuses negative quantities */
            node_info_free(&info);
        }
        free(bytes);
    }
    if (rc2 == 0)
        kube_node_list_clear(&again);
    kube_node_list_clear(&nodes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* A copy of exactly size bytes, so that a read past the end is caught. */
    char *text = malloc(size > 0 ? size : 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    fuzz_pods(text, size);
    fuzz_nodes(text, size);
    free(text);
    return 0;
}
