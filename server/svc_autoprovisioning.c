/* frugal.v1.Autoprovisioning — placeholder until node auto-provisioning lands: no
 * methods are registered, so every call is answered UNIMPLEMENTED. */
#include "service.h"

const service_def_t service_autoprovisioning = {"frugal.v1.Autoprovisioning", NULL, 0};
