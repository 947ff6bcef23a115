/* Streaming BestOptionsRequest decoder: see expander_decode.h. */
#include "expander_decode.h"

#include <stdlib.h>
#include <string.h>

#include "pb_unpack.h"
#include "pod.h"

/* Grow *items (of size elem) so that it holds at least need elements. */
static int grow(void **items, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 16;
    while (ncap < need)
        ncap *= 2;
    void *p = realloc(*items, ncap * elem);
    if (!p)
        return FRUGAL_ENOMEM;
    *items = p;
    *cap = ncap;
    return 0;
}

/* --- the wire reader over segments --- */

typedef struct rd {
    const expander_segment_t *segs;
    size_t nsegs;
    size_t seg; /* current segment; off < segs[seg].len unless seg == nsegs */
    size_t off;
    uint64_t pos; /* absolute offset */
    uint64_t end; /* limit of this (sub)message */
} rd_t;

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

static inline void rd_normalize(rd_t *r) {
    while (r->seg < r->nsegs && r->off >= r->segs[r->seg].len) {
        r->seg++;
        r->off = 0;
    }
}

static int rd_byte(rd_t *r, uint8_t *b) {
    if (r->pos >= r->end || r->seg >= r->nsegs)
        return -1;
    *b = r->segs[r->seg].data[r->off++];
    r->pos++;
    rd_normalize(r);
    return 0;
}

static int rd_varint(rd_t *r, uint64_t *out) {
    if (r->seg < r->nsegs && r->segs[r->seg].len - r->off >= 10 && r->end - r->pos >= 10) {
        const uint8_t *p = r->segs[r->seg].data + r->off;
        uint64_t v = 0;
        for (size_t i = 0; i < 10; i++) {
            v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
            if (!(p[i] & 0x80)) {
                if (i == 9 && p[i] > 1)
                    return -1;
                r->off += i + 1;
                r->pos += i + 1;
                rd_normalize(r);
                *out = v;
                return 0;
            }
        }
        return -1;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < 10; i++) {
        uint8_t b;
        if (rd_byte(r, &b) != 0)
            return -1;
        if (i == 9 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int rd_skip(rd_t *r, uint64_t n) {
    if (n > r->end - r->pos)
        return -1;
    r->pos += n;
    while (n > 0) {
        if (r->seg >= r->nsegs)
            return -1;
        size_t avail = r->segs[r->seg].len - r->off;
        if (n < avail) {
            r->off += (size_t)n;
            n = 0;
        } else {
            n -= avail;
            r->seg++;
            r->off = 0;
        }
    }
    rd_normalize(r);
    return 0;
}

typedef struct scratch {
    uint8_t *data;
    size_t cap;
} scratch_t;

/* A contiguous view of the next n bytes, then skip them: a pointer into the segment,
 * or a copy in scratch when they cross a boundary (*copied true). */
static int rd_view(rd_t *r, uint64_t n, scratch_t *s, const uint8_t **out, bool *copied) {
    static const uint8_t empty[1];
    if (n > r->end - r->pos)
        return -1;
    *copied = false;
    if (n == 0) {
        *out = empty;
        return 0;
    }
    if (r->seg < r->nsegs && r->segs[r->seg].len - r->off >= n) {
        *out = r->segs[r->seg].data + r->off;
        return rd_skip(r, n);
    }
    if (s->cap < n) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < n)
            cap *= 2;
        uint8_t *p = realloc(s->data, cap);
        if (!p)
            return FRUGAL_ENOMEM;
        s->data = p;
        s->cap = cap;
    }
    size_t done = 0;
    while (done < n) {
        if (r->seg >= r->nsegs)
            return -1;
        size_t avail = r->segs[r->seg].len - r->off;
        size_t take = (size_t)(n - done) < avail ? (size_t)(n - done) : avail;
        memcpy(s->data + done, r->segs[r->seg].data + r->off, take);
        done += take;
        r->off += take;
        r->pos += take;
        rd_normalize(r);
    }
    *out = s->data;
    *copied = true;
    return 0;
}

static int rd_tag(rd_t *r, uint32_t *field, uint32_t *wt) {
    uint64_t t;
    if (rd_varint(r, &t) != 0 || (t >> 3) == 0 || (t >> 3) > 0x1fffffff)
        return -1;
    *field = (uint32_t)(t >> 3);
    *wt = (uint32_t)(t & 7);
    return 0;
}

static int rd_skip_group(rd_t *r, uint32_t field, int depth);

/* Skip the value of a field (of number field and wire type wt) whose tag r has read. An
 * unknown field may be a group (proto2's old nested form): skipped too, to a depth. */
static int rd_skip_value(rd_t *r, uint32_t field, uint32_t wt, int depth) {
    uint64_t v;
    switch (wt) {
    case WT_VARINT:
        return rd_varint(r, &v);
    case WT_I64:
        return rd_skip(r, 8);
    case WT_LEN:
        if (rd_varint(r, &v) != 0)
            return -1;
        return rd_skip(r, v);
    case WT_I32:
        return rd_skip(r, 4);
    case WT_SGROUP:
        return depth < PB_UNPACK_MAX_DEPTH ? rd_skip_group(r, field, depth + 1) : -1;
    default:
        return -1; /* an end of group that no start opened */
    }
}

static int rd_skip_group(rd_t *r, uint32_t field, int depth) {
    for (;;) {
        uint32_t f, wt;
        if (rd_tag(r, &f, &wt) != 0)
            return -1;
        if (wt == WT_EGROUP)
            return f == field ? 0 : -1;
        if (rd_skip_value(r, f, wt, depth) != 0)
            return -1;
    }
}

static int rd_skip_field(rd_t *r, uint32_t field, uint32_t wt) {
    return rd_skip_value(r, field, wt, 0);
}

/* A reader limited to the next len bytes of r. */
static int rd_sub(const rd_t *r, uint64_t len, rd_t *sub) {
    if (len > r->end - r->pos)
        return -1;
    *sub = *r;
    sub->end = r->pos + len;
    return 0;
}

/* --- decoding --- */

typedef struct node_tmp {
    const char *key;
    const uint8_t *data;
    size_t len;
    uint32_t field;
    size_t seq;
} node_tmp_t;

typedef struct decoder {
    expander_request_t *req;
    size_t options_cap, pods_cap, refs_cap, keep_cap, nodes_cap;
    node_tmp_t *nodes;
    size_t nodes_count;
    uint32_t *table;  /* open addressing: index + 1 into req->pods, 0 = empty */
    size_t table_cap; /* power of two */
    scratch_t scratch;
    size_t prev_first; /* the pods of the last option with pods: req->pod_refs[first..+count) */
    size_t prev_count;
    rd_t *legacy; /* readers at the legacy pods of the current option */
    size_t legacy_cap;
    frugal_err_t *err;
} decoder_t;

static inline uint64_t hash_mix(uint64_t h, uint64_t v) {
    h ^= v;
    h *= 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

static inline uint64_t load64(const uint8_t *p) {
    uint64_t w;
    memcpy(&w, p, sizeof(w));
    return w;
}

/* A cheap hash: the length, the first 256 bytes (the pod's metadata: name, namespace,
 * uid), 16 words spread over the rest and the last word. Equality is decided by memcmp. */
static uint64_t pod_hash(const uint8_t *p, size_t n) {
    uint64_t h = hash_mix(0x6a09e667f3bcc908ULL, n);
    size_t head = n < 256 ? n : 256, i = 0;
    for (; i + 8 <= head; i += 8)
        h = hash_mix(h, load64(p + i));
    for (; i < head; i++)
        h = hash_mix(h, p[i]);
    if (n >= 256 + 8) {
        size_t span = n - 256 - 8;
        for (size_t k = 0; k < 16; k++)
            h = hash_mix(h, load64(p + 256 + span * k / 16));
        h = hash_mix(h, load64(p + n - 8));
    }
    return h;
}

static int table_grow(decoder_t *d) {
    size_t cap = d->table_cap ? d->table_cap * 2 : 1024;
    uint32_t *t = calloc(cap, sizeof(*t));
    if (!t)
        return FRUGAL_ENOMEM;
    for (size_t i = 0; i < d->req->pods_count; i++) {
        size_t at = (size_t)d->req->pods[i].hash & (cap - 1);
        while (t[at])
            at = (at + 1) & (cap - 1);
        t[at] = (uint32_t)(i + 1);
    }
    free(d->table);
    d->table = t;
    d->table_cap = cap;
    return 0;
}

/* The index of the distinct pod with these bytes, decoding it when it is new. CA sends
 * the same pods in the same order in every option, so the pod at the same position of
 * the previous option is tried first: one memcmp, no hashing. */
static int decoder_intern_pod(decoder_t *d, const uint8_t *data, size_t len, bool copied,
                              size_t position, uint32_t *index) {
    expander_request_t *req = d->req;
    if (position < d->prev_count) {
        uint32_t guess = req->pod_refs[d->prev_first + position];
        const expander_pod_t *p = &req->pods[guess];
        if (p->len == len && memcmp(p->data, data, len) == 0) {
            *index = guess;
            return 0;
        }
    }
    uint64_t h = pod_hash(data, len);
    if ((req->pods_count + 1) * 2 > d->table_cap && table_grow(d) != 0)
        return FRUGAL_ENOMEM;
    size_t at = (size_t)h & (d->table_cap - 1);
    for (; d->table[at]; at = (at + 1) & (d->table_cap - 1)) {
        const expander_pod_t *p = &req->pods[d->table[at] - 1];
        if (p->hash == h && p->len == len && memcmp(p->data, data, len) == 0) {
            *index = d->table[at] - 1;
            return 0;
        }
    }
    if (req->pods_count >= UINT32_MAX - 1 ||
        grow((void **)&req->pods, &d->pods_cap, req->pods_count + 1, sizeof(*req->pods)) != 0)
        return FRUGAL_ENOMEM;
    if (copied) {
        uint8_t *c = arena_alloc(&req->arena, len);
        if (!c)
            return FRUGAL_ENOMEM;
        memcpy(c, data, len);
        data = c;
    }
    expander_pod_t *p = &req->pods[req->pods_count];
    memset(p, 0, sizeof(*p));
    p->data = data;
    p->len = len;
    p->hash = h;
    frugal_err_t perr = {0};
    req->pods_decoded++;
    p->rc = pod_decode_summary(data, len, &p->pod, &perr);
    if (p->rc != 0) {
        p->error = arena_strndup(&req->arena, perr.msg, strlen(perr.msg));
        if (!p->error)
            return FRUGAL_ENOMEM;
    }
    d->table[at] = (uint32_t)(req->pods_count + 1);
    *index = (uint32_t)req->pods_count++;
    return 0;
}

static int decoder_fail(decoder_t *d, const rd_t *r, const char *what) {
    return frugal_err_set(d->err, FRUGAL_EINVAL,
                          "BestOptionsRequest is not a valid message: %s at byte %llu", what,
                          (unsigned long long)r->pos);
}

#define CHECK(expr, what)                                                                          \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ == FRUGAL_ENOMEM)                                                                  \
            return frugal_err_set(d->err, FRUGAL_ENOMEM, "out of memory decoding BestOptions");    \
        if (rc_ != 0)                                                                              \
            return decoder_fail(d, r, what);                                                       \
    } while (0)

static int decoder_string(decoder_t *d, rd_t *r, const char **out) {
    uint64_t len;
    const uint8_t *p;
    bool copied;
    CHECK(rd_varint(r, &len), "truncated length");
    CHECK(rd_view(r, len, &d->scratch, &p, &copied), "truncated string");
    if (!(*out = arena_strndup(&d->req->arena, p, (size_t)len)))
        return frugal_err_set(d->err, FRUGAL_ENOMEM, "out of memory decoding BestOptions");
    return 0;
}

static int decoder_keep(decoder_t *d, expander_option_t *o, uint64_t start, uint64_t end) {
    expander_request_t *req = d->req;
    if (o->keep_count > 0) {
        expander_range_t *last = &req->keep[req->keep_count - 1];
        if (last->start + last->len == start) {
            last->len += end - start;
            return 0;
        }
    }
    if (grow((void **)&req->keep, &d->keep_cap, req->keep_count + 1, sizeof(*req->keep)) != 0)
        return frugal_err_set(d->err, FRUGAL_ENOMEM, "out of memory decoding BestOptions");
    req->keep[req->keep_count++] = (expander_range_t){start, end - start};
    o->keep_count++;
    return 0;
}

/* Read the pod whose length prefix r is at and append it to option o. */
static int decoder_option_pod(decoder_t *d, rd_t *r, expander_option_t *o) {
    expander_request_t *req = d->req;
    uint64_t len;
    const uint8_t *p;
    bool copied;
    uint32_t index;
    int rc;
    CHECK(rd_varint(r, &len), "truncated length");
    CHECK(rd_view(r, len, &d->scratch, &p, &copied), "truncated pod");
    if (grow((void **)&req->pod_refs, &d->refs_cap, req->pod_refs_count + 1,
             sizeof(*req->pod_refs)) != 0 ||
        (rc = decoder_intern_pod(d, p, (size_t)len, copied, o->pods_count, &index)) != 0)
        return frugal_err_set(d->err, FRUGAL_ENOMEM, "out of memory decoding BestOptions");
    if (req->pods[index].rc != 0 && o->bad_pod < 0)
        o->bad_pod = (int)o->pods_count;
    req->pod_refs[req->pod_refs_count++] = index;
    o->pods_count++;
    return 0;
}

/* Option body in *sub, in one pass: current pods (podBytes = 5) are interned as they
 * come; legacy ones (pod = 4) are only remembered, and interned at the end when the
 * option has no current ones. */
static int decoder_option(decoder_t *d, rd_t *sub) {
    expander_request_t *req = d->req;
    int rc;
    if (grow((void **)&req->options, &d->options_cap, req->options_count + 1,
             sizeof(*req->options)) != 0)
        return frugal_err_set(d->err, FRUGAL_ENOMEM, "out of memory decoding BestOptions");
    expander_option_t *o = &req->options[req->options_count];
    memset(o, 0, sizeof(*o));
    o->group_id = "";
    o->debug = "";
    o->bad_pod = -1;
    o->keep_first = req->keep_count;
    o->pods_first = req->pod_refs_count;

    size_t n4 = 0, n5 = 0;
    rd_t *r = sub;
    while (r->pos < r->end) {
        uint64_t start = r->pos, v;
        uint32_t field, wt;
        CHECK(rd_tag(r, &field, &wt), "bad tag in Option");
        switch (field) {
        case EXPANDER_OPTION_GROUP_ID:
        case EXPANDER_OPTION_DEBUG:
            if (wt != WT_LEN)
                return decoder_fail(d, r, "wrong wire type in Option");
            if ((rc = decoder_string(
                     d, r, field == EXPANDER_OPTION_GROUP_ID ? &o->group_id : &o->debug)) != 0)
                return rc;
            break;
        case EXPANDER_OPTION_NODE_COUNT:
            if (wt != WT_VARINT)
                return decoder_fail(d, r, "wrong wire type in Option.nodeCount");
            CHECK(rd_varint(r, &v), "truncated varint");
            o->node_count = (int32_t)(uint32_t)v;
            break;
        case EXPANDER_OPTION_POD:
        case EXPANDER_OPTION_POD_BYTES:
            if (wt != WT_LEN)
                return decoder_fail(d, r, "wrong wire type in Option pods");
            if (field == EXPANDER_OPTION_POD_BYTES) {
                n5++;
                if ((rc = decoder_option_pod(d, r, o)) != 0)
                    return rc;
            } else {
                if (grow((void **)&d->legacy, &d->legacy_cap, n4 + 1, sizeof(*d->legacy)) != 0)
                    return frugal_err_set(d->err, FRUGAL_ENOMEM,
                                          "out of memory decoding BestOptions");
                d->legacy[n4++] = *r;
                CHECK(rd_skip_field(r, field, wt), "truncated pod");
            }
            if ((rc = decoder_keep(d, o, start, r->pos)) != 0)
                return rc;
            break;
        default:
            CHECK(rd_skip_field(r, field, wt), "bad field in Option");
            if ((rc = decoder_keep(d, o, start, r->pos)) != 0)
                return rc;
            break;
        }
    }
    if (n5 == 0) {
        for (size_t k = 0; k < n4; k++) {
            rd_t at = d->legacy[k];
            if ((rc = decoder_option_pod(d, &at, o)) != 0)
                return rc;
        }
    }
    o->pod_field = n5 ? EXPANDER_OPTION_POD_BYTES : n4 ? EXPANDER_OPTION_POD : 0;
    o->pods_in_both = n4 > 0 && n5 > 0;
    if (o->pods_count) {
        d->prev_first = o->pods_first;
        d->prev_count = o->pods_count;
    }
    req->options_count++;
    return 0;
}

static int decoder_node_entry(decoder_t *d, rd_t *sub, uint32_t map_field) {
    expander_request_t *req = d->req;
    rd_t *r = sub;
    const char *key = "";
    const uint8_t *value = NULL;
    size_t value_len = 0;
    int rc;
    while (r->pos < r->end) {
        uint32_t field, wt;
        CHECK(rd_tag(r, &field, &wt), "bad tag in node map entry");
        if (field == 1 || field == 2) {
            if (wt != WT_LEN)
                return decoder_fail(d, r, "wrong wire type in node map entry");
            if (field == 1) {
                if ((rc = decoder_string(d, r, &key)) != 0)
                    return rc;
            } else {
                uint64_t len;
                const uint8_t *p;
                bool copied;
                CHECK(rd_varint(r, &len), "truncated length");
                CHECK(rd_view(r, len, &d->scratch, &p, &copied), "truncated node");
                uint8_t *c = arena_alloc(&req->arena, (size_t)len);
                if (!c)
                    return frugal_err_set(d->err, FRUGAL_ENOMEM,
                                          "out of memory decoding BestOptions");
                memcpy(c, p, (size_t)len);
                value = c;
                value_len = (size_t)len;
            }
        } else {
            CHECK(rd_skip_field(r, field, wt), "bad field in node map entry");
        }
    }
    if (grow((void **)&d->nodes, &d->nodes_cap, d->nodes_count + 1, sizeof(*d->nodes)) != 0)
        return frugal_err_set(d->err, FRUGAL_ENOMEM, "out of memory decoding BestOptions");
    static const uint8_t empty[1];
    d->nodes[d->nodes_count] =
        (node_tmp_t){key, value ? value : empty, value_len, map_field, d->nodes_count};
    d->nodes_count++;
    return 0;
}

/* By key; within a key the current field first, then the last received first. */
static int node_tmp_cmp(const void *a, const void *b) {
    const node_tmp_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    if (x->field != y->field)
        return x->field > y->field ? -1 : 1;
    return x->seq > y->seq ? -1 : x->seq < y->seq ? 1 : 0;
}

static int decoder_finish_nodes(decoder_t *d) {
    expander_request_t *req = d->req;
    if (d->nodes_count == 0)
        return 0;
    qsort(d->nodes, d->nodes_count, sizeof(*d->nodes), node_tmp_cmp);
    req->nodes = calloc(d->nodes_count, sizeof(*req->nodes));
    if (!req->nodes)
        return frugal_err_set(d->err, FRUGAL_ENOMEM, "out of memory decoding BestOptions");
    for (size_t i = 0; i < d->nodes_count; i++) {
        if (i > 0 && strcmp(d->nodes[i].key, d->nodes[i - 1].key) == 0)
            continue;
        req->nodes[req->nodes_count++] = (expander_node_t){d->nodes[i].key, d->nodes[i].data,
                                                           d->nodes[i].len, d->nodes[i].field};
    }
    return 0;
}

static int decoder_run(decoder_t *d, rd_t *r) {
    int rc;
    while (r->pos < r->end) {
        uint32_t field, wt;
        uint64_t len;
        rd_t sub;
        CHECK(rd_tag(r, &field, &wt), "bad tag");
        if (field != EXPANDER_REQUEST_OPTIONS && field != EXPANDER_REQUEST_NODE_MAP &&
            field != EXPANDER_REQUEST_NODE_BYTES_MAP) {
            CHECK(rd_skip_field(r, field, wt), "bad field");
            continue;
        }
        if (wt != WT_LEN)
            return decoder_fail(d, r, "wrong wire type");
        CHECK(rd_varint(r, &len), "truncated length");
        CHECK(rd_sub(r, len, &sub), "truncated message");
        if (field == EXPANDER_REQUEST_OPTIONS)
            rc = decoder_option(d, &sub);
        else
            rc = decoder_node_entry(d, &sub, field);
        if (rc != 0)
            return rc;
        CHECK(rd_skip(r, len), "truncated message");
    }
    return decoder_finish_nodes(d);
}

int expander_decode(const expander_segment_t *segs, size_t nsegs, expander_request_t **out,
                    frugal_err_t *err) {
    *out = NULL;
    expander_request_t *req = calloc(1, sizeof(*req));
    if (!req)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory decoding BestOptions");
    req->seg_starts = malloc((nsegs ? nsegs : 1) * sizeof(*req->seg_starts));
    if (!req->seg_starts) {
        expander_request_free(req);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory decoding BestOptions");
    }
    req->segs = segs;
    req->segs_count = nsegs;
    for (size_t i = 0; i < nsegs; i++) {
        req->seg_starts[i] = req->total_bytes;
        req->total_bytes += segs[i].len;
    }

    decoder_t d = {.req = req, .err = err};
    rd_t r = {.segs = segs, .nsegs = nsegs, .end = req->total_bytes};
    rd_normalize(&r);
    int rc = decoder_run(&d, &r);
    free(d.nodes);
    free(d.legacy);
    free(d.table);
    free(d.scratch.data);
    if (rc != 0) {
        expander_request_free(req);
        return rc;
    }
    *out = req;
    return 0;
}

void expander_request_free(expander_request_t *req) {
    if (!req)
        return;
    free(req->options);
    free(req->nodes);
    free(req->pods);
    free(req->pod_refs);
    free(req->keep);
    free(req->seg_starts);
    arena_free(&req->arena);
    free(req);
}

const expander_node_t *expander_request_find_node(const expander_request_t *req, const char *id) {
    size_t lo = 0, hi = req->nodes_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(req->nodes[mid].key, id);
        if (c == 0)
            return &req->nodes[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

void expander_request_locate(const expander_request_t *req, uint64_t pos, size_t *seg,
                             size_t *off) {
    /* The last non-empty segment starting at or before pos. */
    size_t lo = 0, hi = req->segs_count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (req->seg_starts[mid] <= pos)
            lo = mid;
        else
            hi = mid;
    }
    while (lo < req->segs_count && req->seg_starts[lo] + req->segs[lo].len <= pos)
        lo++;
    *seg = lo;
    *off = (size_t)(pos - req->seg_starts[lo]);
}

/* --- the response --- */

static size_t varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *varint_put(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint8_t *bytes_field_put(uint8_t *p, uint32_t field, const char *s, size_t len) {
    *p++ = (uint8_t)(field << 3 | WT_LEN);
    p = varint_put(p, len);
    memcpy(p, s, len);
    return p + len;
}

static size_t bytes_field_size(size_t len) {
    return len ? 1 + varint_size(len) + len : 0;
}

/* How an answered option's pods are echoed: under both generations' numbers (a client
 * skips the number it does not know), only as received, or not at all. CA reads only
 * the options' group ids back, and CA 1.24 to 1.27 receive at most 4 MiB. */
typedef enum response_pods {
    RESPONSE_PODS_BOTH,
    RESPONSE_PODS_AS_RECEIVED,
    RESPONSE_PODS_NONE,
} response_pods_t;

/* What echoing some fields takes: pieces, literal tag bytes, and bytes in all. */
typedef struct response_tally {
    size_t pieces;
    size_t tags;
    uint64_t bytes;
} response_tally_t;

/* A piece of the answer, the request's range [start, start + len) or, with tag, that
 * literal byte (len 1), counted in *t and, with out, appended to it. */
static void response__piece(expander_response_t *out, response_tally_t *t, const uint8_t *tag,
                            uint64_t start, size_t len) {
    t->pieces++;
    t->bytes += len;
    if (out != NULL)
        out->pieces[out->pieces_count++] = (expander_piece_t){tag, start, len};
}

/* The fields of option o after its id, count and debug, echoed as `pods` says, counted
 * in *t and, with out, appended to it: the request's ranges, and each twin pod as a
 * literal tag from *lit before the request's length and pod bytes. -1 when the bytes no
 * longer parse. */
static int response__option_fields(const expander_request_t *req, const expander_option_t *o,
                                   response_pods_t pods, expander_response_t *out, uint8_t **lit,
                                   response_tally_t *t) {
    bool twins = pods == RESPONSE_PODS_BOTH && o->pod_field != 0 && !o->pods_in_both;
    uint32_t twin =
        o->pod_field == EXPANDER_OPTION_POD ? EXPANDER_OPTION_POD_BYTES : EXPANDER_OPTION_POD;
    for (size_t k = 0; k < o->keep_count; k++) {
        const expander_range_t *kr = &req->keep[o->keep_first + k];
        if (pods != RESPONSE_PODS_NONE)
            response__piece(out, t, NULL, kr->start, (size_t)kr->len);
        if (!twins && pods != RESPONSE_PODS_NONE)
            continue;
        rd_t r = {req->segs, req->segs_count, 0, 0, kr->start, kr->start + kr->len};
        expander_request_locate(req, kr->start, &r.seg, &r.off);
        while (r.pos < r.end) {
            uint64_t at = r.pos;
            uint32_t field, wt;
            if (rd_tag(&r, &field, &wt) != 0)
                return -1;
            uint64_t body = r.pos;
            if (rd_skip_field(&r, field, wt) != 0)
                return -1;
            bool pod = wt == WT_LEN &&
                       (field == EXPANDER_OPTION_POD || field == EXPANDER_OPTION_POD_BYTES);
            if (pods == RESPONSE_PODS_NONE) {
                if (!pod) /* every other field stays */
                    response__piece(out, t, NULL, at, (size_t)(r.pos - at));
            } else if (pod && field == o->pod_field) {
                uint8_t *tag = out != NULL ? (*lit)++ : NULL;
                if (tag != NULL)
                    *tag = (uint8_t)(twin << 3 | WT_LEN);
                t->tags++;
                response__piece(out, t, tag, 0, 1);
                response__piece(out, t, NULL, body, (size_t)(r.pos - body));
            }
        }
    }
    return 0;
}

/* The sizes of the answer's options (inner[i]: option i's message), its literal bytes,
 * pieces and total bytes, with pods echoed as `pods` says. -1 when unreadable. */
static int response__measure(const expander_request_t *req, const size_t *selected, size_t n,
                             const char *const *debugs, response_pods_t pods, uint64_t *inner,
                             size_t *literal_size, size_t *pieces, uint64_t *total) {
    *literal_size = *pieces = 0;
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        const expander_option_t *o = &req->options[selected[i]];
        const char *debug = debugs && debugs[i] ? debugs[i] : o->debug;
        response_tally_t t = {0};
        if (response__option_fields(req, o, pods, NULL, NULL, &t) != 0)
            return -1;
        uint64_t head = bytes_field_size(strlen(o->group_id)) + bytes_field_size(strlen(debug)) +
                        (o->node_count ? 1 + varint_size((uint64_t)(int64_t)o->node_count) : 0);
        inner[i] = head + t.bytes;
        *literal_size += 1 + varint_size(inner[i]) + (size_t)head + t.tags;
        *pieces += 1 + t.pieces;
        *total += 1 + varint_size(inner[i]) + inner[i];
    }
    return 0;
}

int expander_response_build(const expander_request_t *req, const size_t *selected, size_t n,
                            const char *const *debugs, expander_response_t *out,
                            frugal_err_t *err) {
    memset(out, 0, sizeof(*out));
    /* First the size of each option's message, then the option written with it. */
    uint64_t *inner = calloc(n ? n : 1, sizeof(*inner));
    if (inner == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory building BestOptionsResponse");
    size_t literal_size = 0, pieces = 0;
    uint64_t total = 0;
    /* Both numbers while the answer fits what every CA receives; else as received; a
     * legacy caller (it may be CA <= 1.27) gets no pods rather than an answer it refuses. */
    bool legacy = true;
    for (size_t i = 0; i < n; i++)
        legacy = legacy && req->options[selected[i]].pod_field != EXPANDER_OPTION_POD_BYTES &&
                 !req->options[selected[i]].pods_in_both;
    response_pods_t pods = RESPONSE_PODS_BOTH;
    for (;; pods++) {
        if (response__measure(req, selected, n, debugs, pods, inner, &literal_size, &pieces,
                              &total) != 0) {
            free(inner);
            return frugal_err_set(err, FRUGAL_EINTERNAL, "BestOptions: echoed pods unreadable");
        }
        if (total <= EXPANDER_ANSWER_LIMIT || pods == RESPONSE_PODS_NONE ||
            (pods == RESPONSE_PODS_AS_RECEIVED && !legacy))
            break;
    }
    out->pods = pods == RESPONSE_PODS_BOTH          ? "both generations"
                : pods == RESPONSE_PODS_AS_RECEIVED ? "as received"
                                                    : "left out";
    out->pieces = calloc(pieces ? pieces : 1, sizeof(*out->pieces));
    out->literals = malloc(literal_size ? literal_size : 1);
    if (!out->pieces || !out->literals) {
        free(inner);
        expander_response_free(out);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory building BestOptionsResponse");
    }
    uint8_t *p = out->literals;
    for (size_t i = 0; i < n; i++) {
        const expander_option_t *o = &req->options[selected[i]];
        const char *debug = debugs && debugs[i] ? debugs[i] : o->debug;
        size_t id_len = strlen(o->group_id), debug_len = strlen(debug);
        uint8_t *start = p;
        *p++ = (uint8_t)(1 << 3 | WT_LEN);
        p = varint_put(p, inner[i]);
        if (id_len)
            p = bytes_field_put(p, EXPANDER_OPTION_GROUP_ID, o->group_id, id_len);
        if (o->node_count) {
            *p++ = (uint8_t)(EXPANDER_OPTION_NODE_COUNT << 3 | WT_VARINT);
            p = varint_put(p, (uint64_t)(int64_t)o->node_count);
        }
        if (debug_len)
            p = bytes_field_put(p, EXPANDER_OPTION_DEBUG, debug, debug_len);
        out->pieces[out->pieces_count++] = (expander_piece_t){start, 0, (size_t)(p - start)};
        response_tally_t t = {0};
        response__option_fields(req, o, pods, out, &p, &t);
    }
    out->total_bytes = total;
    free(inner);
    return 0;
}

int expander_response_flatten(const expander_request_t *req, const expander_response_t *resp,
                              uint8_t **data, size_t *len, frugal_err_t *err) {
    *data = NULL;
    *len = 0;
    if (resp->total_bytes == 0)
        return 0;
    uint8_t *buf = malloc((size_t)resp->total_bytes);
    if (!buf)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory flattening BestOptionsResponse");
    uint8_t *p = buf;
    for (size_t i = 0; i < resp->pieces_count; i++) {
        const expander_piece_t *pc = &resp->pieces[i];
        if (pc->literal) {
            memcpy(p, pc->literal, pc->len);
            p += pc->len;
            continue;
        }
        size_t seg, off, left = pc->len;
        if (left == 0)
            continue;
        expander_request_locate(req, pc->start, &seg, &off);
        while (left > 0) {
            size_t take = req->segs[seg].len - off;
            if (take > left)
                take = left;
            memcpy(p, req->segs[seg].data + off, take);
            p += take;
            left -= take;
            seg++;
            off = 0;
        }
    }
    *data = buf;
    *len = (size_t)resp->total_bytes;
    return 0;
}

void expander_response_free(expander_response_t *resp) {
    if (!resp)
        return;
    free(resp->pieces);
    free(resp->literals);
    memset(resp, 0, sizeof(*resp));
}
