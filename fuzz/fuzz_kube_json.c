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
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "kube_json.h"
#include "node_info.h"
#include "pod.h"

/* msg serialized into a malloc'ed block of *len bytes; NULL when out of memory. */
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

/* What every item of an accepted list must satisfy besides serializing; bytes is the
 * item packed. */
typedef void (*item_check_fn)(const ProtobufCMessage *item, const uint8_t *bytes, size_t len);

static void check_pod(const ProtobufCMessage *item, const uint8_t *bytes, size_t len) {
    (void)bytes;
    (void)len;
    const k8s_pod_t *pod = (const k8s_pod_t *)item;
    resources_t r;
    frugal_err_t err;
    frugal_err_clear(&err);
    check_overflow_only(pod_effective_request(pod, &r, &err), err.msg);
    (void)kube_pod_is_pending(pod);
    (void)kube_pod_controller_kind(pod);
}

static void check_node(const ProtobufCMessage *item, const uint8_t *bytes, size_t len) {
    (void)item;
    node_info_t info;
    frugal_err_t err;
    frugal_err_clear(&err);
    int rc = node_info_decode(bytes, len, &info, &err);
    check_overflow_only(rc, err.msg);
    if (rc == 0) {
        if (info.capacity.cpu_milli < 0 || info.capacity.memory_bytes < 0 || info.capacity.gpu < 0)
            __builtin_trap(); /* kube_json refuses negative quantities */
        node_info_free(&info);
    }
}

/* Parse text as a pod or node list (pods) twice and check both results. */
static void fuzz_list(const char *text, size_t size, bool pods, item_check_fn check) {
    ProtobufCMessage **items[2] = {NULL, NULL};
    size_t count[2] = {0, 0};
    int rc[2];
    for (int k = 0; k < 2; k++) {
        kube_json_error_t err;
        memset(&err, 0, sizeof(err));
        if (pods) {
            kube_pod_list_t list;
            rc[k] = kube_json_parse_pods(text, size, &list, &err);
            items[k] = (ProtobufCMessage **)list.items;
            count[k] = list.count;
        } else {
            kube_node_list_t list;
            rc[k] = kube_json_parse_nodes(text, size, &list, &err);
            items[k] = (ProtobufCMessage **)list.items;
            count[k] = list.count;
        }
        if (rc[k] != 0)
            check_failure(rc[k], &err, items[k], count[k]);
    }
    if (rc[0] == 0 && rc[1] == 0 && count[0] != count[1])
        __builtin_trap();
    for (size_t i = 0; rc[0] == 0 && i < count[0]; i++) {
        size_t len;
        uint8_t *bytes = check_item(items[0][i], &len);
        if (bytes == NULL)
            continue;
        if (rc[1] == 0) {
            size_t len2;
            uint8_t *bytes2 = pack(items[1][i], &len2);
            if (bytes2 != NULL && (len2 != len || memcmp(bytes, bytes2, len) != 0))
                __builtin_trap();
            free(bytes2);
        }
        check(items[0][i], bytes, len);
        free(bytes);
    }
    for (int k = 0; k < 2; k++) {
        if (pods) {
            kube_pod_list_t list = {(k8s_pod_t **)items[k], count[k]};
            kube_pod_list_clear(&list);
        } else {
            kube_node_list_t list = {(k8s_node_t **)items[k], count[k]};
            kube_node_list_clear(&list);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* A copy of exactly size bytes, so that a read past the end is caught. */
    char *text = malloc(size > 0 ? size : 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    fuzz_list(text, size, true, check_pod);
    fuzz_list(text, size, false, check_node);
    free(text);
    return 0;
}
