/* grpc.health.v1.Health/Check: SERVING for the whole server ("") and for each service
 * the call's listener offers, NOT_FOUND for other names (the gRPC health-checking
 * protocol's answer to a service the server does not serve). NOT_SERVING once shutdown has begun:
 * only a Check received before it sees that, since the listeners then refuse new calls. */
#include <string.h>

#include "grpc_server.h"
#include "health.pb-c.h"
#include "service.h"
#include "wire_names.h"

static bool health_offers(const char *name, unsigned services) {
    const service_def_t *known[] = {&service_cloudprovider, &service_expander,
                                    &service_autoprovisioning, &service_health};
    if (name[0] == '\0')
        return true;
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(known[i]->name, name) == 0)
            return services == 0 || (known[i]->listener_service & services) != 0;
    return false;
}

static int health_check(service_ctx_t *ctx, const void *request, void *response, service_mem_t *mem,
                        frugal_err_t *err) {
    const Grpc__Health__V1__HealthCheckRequest *req = request;
    Grpc__Health__V1__HealthCheckResponse *resp = response;
    if (!health_offers(req->service, ctx->services))
        return frugal_err_set(err, FRUGAL_ENOTFOUND, "service \"%s\" is not served here",
                              req->service);
    resp->status = ctx->stopping
                       ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING
                       : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
    return 0;
}

static const service_method_t health_methods[] = {
    SERVICE_TYPED(WIRE_HEALTH_CHECK, &grpc__health__v1__health_check_request__descriptor,
                  &grpc__health__v1__health_check_response__descriptor, health_check),
};

const service_def_t service_health = {WIRE_SERVICE_HEALTH, health_methods,
                                      sizeof(health_methods) / sizeof(health_methods[0]),
                                      LISTENER_SERVICE_HEALTH};
