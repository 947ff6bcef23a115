/* Test-only: what the unit tests reach of svc_expander.c without gRPC. Production code
 * calls the service through its method table (service.h). */
#ifndef FRUGAL_SVC_EXPANDER_TESTING_H
#define FRUGAL_SVC_EXPANDER_TESTING_H

#include "expander_decode.h"
#include "service.h"

/* Rank req and build the answer into *out with ctx's configuration, cluster and demand
 * memory. ctx->cluster may be NULL (every group then counts as existing, on-demand, in
 * an empty cluster); ctx->demand may be NULL (no recent demand). Pure apart from the
 * cluster's read lock, the demand memory and logging; 0 or FRUGAL_ENOMEM. */
int expander__answer(const service_ctx_t *ctx, const expander_request_t *req,
                     expander_response_t *out, frugal_err_t *err);

#endif
