/* libFuzzer target: the streaming BestOptionsRequest decoder (expander_decode.h).
 *
 * Input: byte 0 picks how many of the following bytes are segment lengths (0..7), each
 * 0..255; the rest of the input is the request, cut into those segments plus a final
 * one with the remainder. Every segment is its own exact-size allocation, so a read
 * across a segment boundary is an ASan error, as it would be over gRPC's slices.
 *
 * On success it checks the decoded indices stay in bounds, then builds and flattens
 * the response holding every option, which is itself a valid BestOptionsRequest (same
 * field 1) and must decode again to the same options, their pods now under both numbers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "expander_decode.h"

#define MAX_SEGS 8

static void check_request(const expander_request_t *req, const expander_segment_t *segs,
                          size_t nsegs, uint64_t total) {
    if (req->total_bytes != total)
        __builtin_trap();
    for (size_t i = 0; i < req->options_count; i++) {
        const expander_option_t *o = &req->options[i];
        if (o->group_id == NULL || o->debug == NULL)
            __builtin_trap();
        if (o->pods_first + o->pods_count > req->pod_refs_count ||
            o->keep_first + o->keep_count > req->keep_count)
            __builtin_trap();
        if (o->bad_pod >= 0 && (size_t)o->bad_pod >= o->pods_count)
            __builtin_trap();
        (void)expander_request_find_node(req, o->group_id);
    }
    for (size_t i = 0; i < req->pod_refs_count; i++)
        if (req->pod_refs[i] >= req->pods_count)
            __builtin_trap();
    for (size_t i = 0; i < req->keep_count; i++)
        if (req->keep[i].start + req->keep[i].len > total)
            __builtin_trap();
    for (size_t i = 0; i < req->pods_count; i++) {
        const expander_pod_t *p = &req->pods[i];
        if (p->rc != 0 && p->error == NULL)
            __builtin_trap();
        if (p->len > 0 && p->data == NULL)
            __builtin_trap();
    }
    for (size_t i = 1; i < req->nodes_count; i++)
        if (strcmp(req->nodes[i - 1].key, req->nodes[i].key) >= 0)
            __builtin_trap(); /* promised sorted and unique */
    /* locate: every offset maps inside a segment, and to the right byte. */
    uint64_t step = total / 7 + 1;
    for (uint64_t pos = 0; pos < total; pos += step) {
        size_t seg = 0, off = 0;
        expander_request_locate(req, pos, &seg, &off);
        if (seg >= nsegs || off >= segs[seg].len)
            __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0)
        return 0;
    size_t ncuts = data[0] % MAX_SEGS;
    if (1 + ncuts > size)
        return 0;
    const uint8_t *body = data + 1 + ncuts;
    size_t left = size - 1 - ncuts;
    uint64_t total = left;

    expander_segment_t segs[MAX_SEGS];
    uint8_t *owned[MAX_SEGS];
    size_t nsegs = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t len = i < ncuts ? data[1 + i] : left;
        if (len > left)
            len = left;
        owned[nsegs] = malloc(len > 0 ? len : 1);
        if (owned[nsegs] == NULL)
            goto out;
        memcpy(owned[nsegs], body, len);
        segs[nsegs] = (expander_segment_t){owned[nsegs], len};
        nsegs++;
        body += len;
        left -= len;
    }

    expander_request_t *req = NULL;
    frugal_err_t err;
    int rc = expander_decode(segs, nsegs, &req, &err);
    if (rc != 0) {
        if ((rc != FRUGAL_EINVAL && rc != FRUGAL_ENOMEM) || err.msg[0] == '\0')
            __builtin_trap();
        goto out;
    }
    check_request(req, segs, nsegs, total);

    size_t *all = malloc((req->options_count > 0 ? req->options_count : 1) * sizeof(*all));
    if (all != NULL) {
        for (size_t i = 0; i < req->options_count; i++)
            all[i] = i;
        expander_response_t resp;
        memset(&resp, 0, sizeof(resp));
        uint8_t *flat = NULL;
        size_t flat_len = 0;
        if (expander_response_build(req, all, req->options_count, NULL, &resp, &err) == 0 &&
            expander_response_flatten(req, &resp, &flat, &flat_len, &err) == 0) {
            if (flat_len != resp.total_bytes)
                __builtin_trap();
            expander_segment_t one = {flat, flat_len};
            expander_request_t *again = NULL;
            if (expander_decode(&one, 1, &again, &err) != 0)
                __builtin_trap(); /* our own response does not decode: err.msg says why */
            if (again->options_count != req->options_count)
                __builtin_trap();
            for (size_t i = 0; i < req->options_count; i++) {
                if (strcmp(again->options[i].group_id, req->options[i].group_id) != 0 ||
                    again->options[i].node_count != req->options[i].node_count ||
                    strcmp(again->options[i].debug, req->options[i].debug) != 0 ||
                    again->options[i].pods_count != req->options[i].pods_count ||
                    again->options[i].pods_in_both != (req->options[i].pod_field != 0))
                    __builtin_trap(); /* the pods, under both numbers once answered */
            }
            expander_request_free(again);
        }
        free(flat);
        expander_response_free(&resp);
        free(all);
    }
    expander_request_free(req);
out:
    for (size_t i = 0; i < nsegs; i++)
        free(owned[i]);
    return 0;
}
