/* The harness of the service unit tests: a cluster opened from YAML text over the
 * simulated provider, and a service's method called directly (no network) with a
 * packed request, through the plumbing's codec step (service_method_call). Header-only, so that
 * each test stays one executable of one file; include it after cmocka.h. */
#ifndef FRUGAL_TEST_SVC_HARNESS_H
#define FRUGAL_TEST_SVC_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc.h>

#include "cluster.h"
#include "codec.h"
#include "config.h"
#include "provider.h"
#include "service.h"

typedef struct svc_fx {
    frugal_config_t *cfg;
    provider_t *provider;
    cluster_t *cluster;
    service_ctx_t ctx;
} svc_fx_t;

/* A cluster of the config text (which must load) and its service context. */
static inline svc_fx_t *svc_fx_open(const char *text) {
    svc_fx_t *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    char *errors = NULL;
    if (config_load_string("test.yaml", text, strlen(text), &f->cfg, &errors) != 0)
        fail_msg("config: %s", errors != NULL ? errors : "?");
    assert_int_equal(provider_create(f->cfg, &f->provider, NULL), 0);
    assert_int_equal(cluster_open(f->cfg, f->provider, NULL, &f->cluster, NULL), 0);
    f->ctx.cfg = f->cfg;
    f->ctx.cluster = f->cluster;
    return f;
}

/* The cmocka teardown of a fixture *state made by svc_fx_open. */
static inline int svc_fx_teardown(void **state) {
    svc_fx_t *f = *state;
    cluster_close(f->cluster);
    provider_destroy(f->provider);
    config_free(f->cfg);
    free(f);
    return 0;
}

/* Call the handler of svc's method with req; on OK unpack the answer as resp_desc when
 * resp is not NULL (the caller frees it). A refusal must come with a message and no
 * answer. Returns the handler's code; err gets its message. */
static inline int svc_call(svc_fx_t *f, const service_def_t *svc, const char *method,
                           const ProtobufCMessage *req, const ProtobufCMessageDescriptor *resp_desc,
                           ProtobufCMessage **resp, frugal_err_t *err) {
    const service_method_t *m = NULL;
    char path[160];
    snprintf(path, sizeof(path), "/%s/%s", svc->name, method);
    for (size_t i = 0; i < svc->methods_count; i++)
        if (strcmp(svc->methods[i].path, path) == 0)
            m = &svc->methods[i];
    assert_non_null(m);
    grpc_byte_buffer *in = codec_pack(req);
    grpc_byte_buffer *out = NULL;
    frugal_err_clear(err);
    int rc = service_method_call(m, &f->ctx, in, gpr_inf_future(GPR_CLOCK_MONOTONIC), &out, err);
    grpc_byte_buffer_destroy(in);
    if (rc == 0) {
        assert_non_null(out);
        if (resp != NULL)
            assert_int_equal(codec_unpack(resp_desc, out, resp, NULL), 0);
        grpc_byte_buffer_destroy(out);
    } else {
        assert_null(out);
        assert_true(err->msg[0] != '\0');
    }
    return rc;
}

/* Every method of svc, given bytes that are no protobuf message, is INVALID_ARGUMENT with
 * a message and no answer. */
static inline void svc_expect_garbage_refused(svc_fx_t *f, const service_def_t *svc) {
    static const uint8_t garbage[] = {0xff, 0xff, 0xff, 0xff};
    for (size_t i = 0; i < svc->methods_count; i++) {
        grpc_byte_buffer *in = codec_from_bytes(garbage, sizeof(garbage));
        grpc_byte_buffer *out = NULL;
        frugal_err_t err;
        frugal_err_clear(&err);
        int rc = service_method_call(&svc->methods[i], &f->ctx, in,
                                     gpr_inf_future(GPR_CLOCK_MONOTONIC), &out, &err);
        grpc_byte_buffer_destroy(in);
        assert_int_equal(frugal_err_status(rc), GRPC_STATUS_INVALID_ARGUMENT);
        assert_null(out);
        assert_true(err.msg[0] != '\0');
    }
}

#endif
