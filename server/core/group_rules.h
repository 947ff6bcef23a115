/* The rules a node group's labels and taints obey, wherever the group comes from: the
 * configuration (an operator's groups and label sets), the state (the groups frugal
 * made), NewNodeGroup (a client's request) and the proposals (the groups frugal offers).
 * Each problem has one wording; the caller says where it is (a file position, a field).
 * The names themselves follow Kubernetes' rules (k8s_name.h). */
#ifndef FRUGAL_GROUP_RULES_H
#define FRUGAL_GROUP_RULES_H

#include <stdbool.h>
#include <stddef.h>

typedef enum group_rule {
    GROUP_RULE_OK = 0,
    GROUP_RULE_KEY,      /* the key is not a qualified name */
    GROUP_RULE_VALUE,    /* the value is not a label value */
    GROUP_RULE_RESERVED, /* a label frugal sets on the template itself */
    GROUP_RULE_EFFECT,   /* not a taint effect */
} group_rule_t;

/* Whether key=value may be a label of a group (value NULL: the key alone is checked);
 * when not, why is written to buf (when not NULL): `invalid label key "K": REASON`,
 * `invalid label value "V" for key K: REASON`, or, unless by_operator (an operator may
 * set what the template sets: the group's label wins), `label K is set by frugal from
 * the machine type and zone` (or, for frugal.io/node-group, that it names a node's
 * group). */
group_rule_t group_rules_label(const char *key, const char *value, bool by_operator, char *buf,
                               size_t size);

/* Whether key=value:effect may be a taint of a group (any of them NULL: not checked;
 * value "": none); when not, why is written to buf (when not NULL): `invalid taint key
 * "K": REASON`, `invalid taint value "V": REASON`, `invalid taint effect "E": want
 * NoSchedule, PreferNoSchedule or NoExecute`. */
group_rule_t group_rules_taint(const char *key, const char *value, const char *effect, char *buf,
                               size_t size);

/* Whether name=value may be an extra resource of a group's nodes (value NULL: the name
 * alone is checked); when not, why is written to buf (when not NULL): `invalid resource
 * name "N": REASON` or `invalid quantity "V" for resource N: want a quantity >= 0`. */
group_rule_t group_rules_resource(const char *name, const char *value, char *buf, size_t size);

/* A label key, a taint's key and effect, or a resource given twice: `label K given twice`,
 * `taint K:E given twice`, `resource N given twice`, into buf. */
void group_rules_label_twice(const char *key, char *buf, size_t size);
void group_rules_taint_twice(const char *key, const char *effect, char *buf, size_t size);
void group_rules_resource_twice(const char *name, char *buf, size_t size);

#endif
