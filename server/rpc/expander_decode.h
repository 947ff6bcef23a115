/* Streaming decoder of grpcplugin.BestOptionsRequest (docs/wire.md, "grpcplugin.Expander").
 *
 * Requests reach hundreds of MiB (every option repeats every pending pod), so the
 * request is never unpacked nor copied whole: a small protobuf wire reader walks it in
 * place over the received segments (the byte buffer's slices), copying only what
 * crosses a segment boundary. Identical pod bytes are decoded once per request (CA
 * repeats the same pods in every option); nodes are copied (they are few and small).
 *
 * Both wire generations: an option's pods come from podBytes = 5, else pod = 4; a
 * group's template from nodeBytesMap = 3, else nodeMap = 2.
 *
 * Pure: no gRPC. The decoded request points into the segments, which must outlive it. */
#ifndef FRUGAL_EXPANDER_DECODE_H
#define FRUGAL_EXPANDER_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "errors.h"
#include "pod.h"
#include "quantity.h"

/* Field numbers of the expander protocol. */
enum {
    EXPANDER_REQUEST_OPTIONS = 1,
    EXPANDER_REQUEST_NODE_MAP = 2,       /* legacy map<string, v1.Node> */
    EXPANDER_REQUEST_NODE_BYTES_MAP = 3, /* current map<string, bytes> */
    EXPANDER_OPTION_GROUP_ID = 1,
    EXPANDER_OPTION_NODE_COUNT = 2,
    EXPANDER_OPTION_DEBUG = 3,
    EXPANDER_OPTION_POD = 4,       /* legacy repeated v1.Pod */
    EXPANDER_OPTION_POD_BYTES = 5, /* current repeated bytes */
};

/* One contiguous piece of the serialized request, in order. */
typedef struct expander_segment {
    const uint8_t *data;
    size_t len;
} expander_segment_t;

/* A distinct pod of the request (equal bytes share one). */
typedef struct expander_pod {
    const uint8_t *data; /* the serialized v1.Pod, contiguous */
    size_t len;
    uint64_t hash;
    int rc;            /* pod_decode_summary's result: 0 or FRUGAL_E* */
    pod_summary_t pod; /* its request, lifetime, creation time and identity (rc == 0) */
    const char *error; /* why it could not be decoded when rc != 0 */
} expander_pod_t;

/* A byte range [start, start + len) of the request, in absolute stream offsets. */
typedef struct expander_range {
    uint64_t start;
    uint64_t len;
} expander_range_t;

typedef struct expander_option {
    const char *group_id; /* NUL-terminated ("" when absent) */
    int32_t node_count;
    const char *debug;  /* NUL-terminated ("" when absent) */
    uint32_t pod_field; /* the field the pods were read from: 5, 4, or 0 (none) */
    bool pods_in_both;  /* the option carried pods under both 4 and 5 */
    size_t pods_first;  /* this option's pods: req->pod_refs[first .. first+count) */
    size_t pods_count;
    size_t keep_first; /* bytes echoed in the response: every field but 1, 2, 3 */
    size_t keep_count; /* req->keep[first .. first+count) */
    int bad_pod;       /* index (within the option) of the first undecodable pod, or -1 */
} expander_option_t;

/* A template node of the node maps, by group id. */
typedef struct expander_node {
    const char *key;
    const uint8_t *data; /* serialized v1.Node (the current field's when both) */
    size_t len;
    uint32_t field; /* 3 or 2 */
} expander_node_t;

typedef struct expander_request {
    expander_option_t *options;
    size_t options_count;
    expander_node_t *nodes; /* sorted by key, keys unique */
    size_t nodes_count;
    expander_pod_t *pods; /* distinct pods */
    size_t pods_count;
    uint32_t *pod_refs; /* per option pod: index into pods */
    size_t pod_refs_count;
    expander_range_t *keep;
    size_t keep_count;
    uint64_t total_bytes; /* size of the serialized request */
    size_t pods_decoded;  /* how many times pod_decode_request ran */
    /* private */
    const expander_segment_t *segs;
    size_t segs_count;
    uint64_t *seg_starts;
    arena_t arena; /* copies of strings, nodes and boundary-crossing pods */
} expander_request_t;

/* Decode the request held in segs[0..nsegs) (which must outlive *out). Pods are
 * decoded (once per distinct content) with pod_decode_request; a pod that fails is
 * recorded, not fatal. FRUGAL_EINVAL naming the offset when the bytes are not a valid
 * BestOptionsRequest; FRUGAL_ENOMEM. */
int expander_decode(const expander_segment_t *segs, size_t nsegs, expander_request_t **out,
                    frugal_err_t *err);

void expander_request_free(expander_request_t *req);

/* The template node of group id; NULL when neither node map has it. */
const expander_node_t *expander_request_find_node(const expander_request_t *req, const char *id);

/* Segment index and offset within it of absolute offset pos (< total_bytes). */
void expander_request_locate(const expander_request_t *req, uint64_t pos, size_t *seg, size_t *off);

/* A response as a sequence of pieces: literal bytes, or ranges of the request. */
typedef struct expander_piece {
    const uint8_t *literal; /* NULL: the piece is the request range [start, start+len) */
    uint64_t start;
    size_t len;
} expander_piece_t;

typedef struct expander_response {
    expander_piece_t *pieces;
    size_t pieces_count;
    uint64_t total_bytes;
    uint8_t *literals; /* owns every literal piece */
    const char *pods;  /* how the pods were echoed, for the log */
} expander_response_t;

/* The largest answer every CA receives: 1.24 to 1.27 keep grpc-go's default of 4 MiB
 * (1.28 and later 128 MiB), and refuse a larger one, keeping all options instead. */
#define EXPANDER_ANSWER_LIMIT (4u << 20)

/* The BestOptionsResponse holding options selected[0..n) of req, in that order, each
 * with its group id, node count, debugs[i] (the incoming debug when debugs or
 * debugs[i] is NULL) and its other fields as received; the pods also under the other
 * generation's number (4 or 5) unless they came under both. An answer over
 * EXPANDER_ANSWER_LIMIT echoes the pods only as received, and one still over it whose
 * pods all came under the legacy number none (CA reads only the group ids back).
 * 0, FRUGAL_ENOMEM, or FRUGAL_EINTERNAL if the echoed bytes no longer parse (they were
 * checked when decoded). */
int expander_response_build(const expander_request_t *req, const size_t *selected, size_t n,
                            const char *const *debugs, expander_response_t *out, frugal_err_t *err);

/* Copy the response into one malloc'ed block (*data NULL when empty). */
int expander_response_flatten(const expander_request_t *req, const expander_response_t *resp,
                              uint8_t **data, size_t *len, frugal_err_t *err);

void expander_response_free(expander_response_t *resp);

#endif
