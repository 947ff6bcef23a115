/* Prices, per hour (docs/ranking.md, "Prices"). Pure functions. */
#ifndef FRUGAL_PRICING_H
#define FRUGAL_PRICING_H

#include "config.h"
#include "quantity.h"

/* Linear price of resources: cores x cpu + GiB x memory_gib + GPUs x gpu. Used for pod
 * prices (T, X) and for nodes whose machine type is unknown. */
double pricing_linear(const pricing_config_t *pricing, const resources_t *r);

/* Hourly price of one machine of type mt: its configured/catalog price, else linear
 * from its capacity (GPUs at their catalog gpu_type price when known). With spot, the
 * spot_price_override when >= 0, else mt->spot_price when >= 0, else the on-demand price. */
double pricing_machine_price(const frugal_config_t *cfg, const machine_type_t *mt, bool spot,
                             double spot_price_override);

/* P of a group: pricing_machine_price of its machine type with its spot settings.
 * Returns < 0 when the machine type is not in the effective catalog. */
double pricing_group_node_price(const frugal_config_t *cfg, const group_spec_t *spec);

/* Capacity of one machine of type mt plus the spec's extra resources (may be NULL). */
int pricing_machine_capacity(const machine_type_t *mt, const group_spec_t *spec, resources_t *out,
                             frugal_err_t *err);

/* Into buf, and true: the warning that ranking.damper costs nothing at these prices, so
 * that an option whose pods request nothing has T + X = 0 and cannot be scored. False
 * when the damper has a price, or when config_unpriced_pods_warning applies (it says
 * more). */
bool pricing_unpriced_damper_warning(const frugal_config_t *cfg, char *buf, size_t size);

#endif
