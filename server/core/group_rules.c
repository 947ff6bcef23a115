#include "group_rules.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "k8s.h"
#include "k8s_name.h"
#include "quantity.h"

static group_rule_t group_rules__fail(group_rule_t rule, char *buf, size_t size, const char *fmt,
                                      ...) __attribute__((format(printf, 4, 5)));

/* Write why into buf (when there is one); return rule. */
static group_rule_t group_rules__fail(group_rule_t rule, char *buf, size_t size, const char *fmt,
                                      ...) {
    if (buf != NULL && size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
    }
    return rule;
}

group_rule_t group_rules_label(const char *key, const char *value, bool by_operator, char *buf,
                               size_t size) {
    const char *problem = k8s_name_key_problem(key);
    if (problem != NULL)
        return group_rules__fail(GROUP_RULE_KEY, buf, size, "invalid label key \"%s\": %s", key,
                                 problem);
    if (!by_operator && k8s_name_is_reserved_label(key))
        return group_rules__fail(GROUP_RULE_RESERVED, buf, size,
                                 "label %s is set by frugal from the machine type and zone", key);
    /* NodeGroupForNode trusts it: on an autoprovisioned group it would name another group. */
    if (!by_operator && strcmp(key, FRUGAL_LABEL_NODE_GROUP) == 0)
        return group_rules__fail(GROUP_RULE_RESERVED, buf, size,
                                 "label %s names a node's group: an operator sets it on the "
                                 "nodes of a configured group, never on an autoprovisioned one",
                                 key);
    if (value != NULL && (problem = k8s_name_value_problem(value)) != NULL)
        return group_rules__fail(GROUP_RULE_VALUE, buf, size,
                                 "invalid label value \"%s\" for key %s: %s", value, key, problem);
    return GROUP_RULE_OK;
}

group_rule_t group_rules_taint(const char *key, const char *value, const char *effect, char *buf,
                               size_t size) {
    const char *problem;
    if (key != NULL && (problem = k8s_name_key_problem(key)) != NULL)
        return group_rules__fail(GROUP_RULE_KEY, buf, size, "invalid taint key \"%s\": %s", key,
                                 problem);
    if (value != NULL && (problem = k8s_name_value_problem(value)) != NULL)
        return group_rules__fail(GROUP_RULE_VALUE, buf, size, "invalid taint value \"%s\": %s",
                                 value, problem);
    if (effect != NULL && !k8s_name_is_taint_effect(effect))
        return group_rules__fail(GROUP_RULE_EFFECT, buf, size,
                                 "invalid taint effect \"%s\": want NoSchedule, PreferNoSchedule "
                                 "or NoExecute",
                                 effect);
    return GROUP_RULE_OK;
}

group_rule_t group_rules_resource(const char *name, const char *value, char *buf, size_t size) {
    const char *problem = k8s_name_key_problem(name);
    if (problem != NULL)
        return group_rules__fail(GROUP_RULE_KEY, buf, size, "invalid resource name \"%s\": %s",
                                 name, problem);
    int64_t q;
    if (value != NULL && (quantity_parse_value(value, &q, NULL) != 0 || q < 0))
        return group_rules__fail(GROUP_RULE_VALUE, buf, size,
                                 "invalid quantity \"%s\" for resource %s: want a quantity >= 0",
                                 value, name);
    return GROUP_RULE_OK;
}

void group_rules_label_twice(const char *key, char *buf, size_t size) {
    snprintf(buf, size, "label %s given twice", key);
}

void group_rules_taint_twice(const char *key, const char *effect, char *buf, size_t size) {
    snprintf(buf, size, "taint %s:%s given twice", key, effect);
}

void group_rules_resource_twice(const char *name, char *buf, size_t size) {
    snprintf(buf, size, "resource %s given twice", name);
}
