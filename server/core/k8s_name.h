/* Kubernetes names: the one validator of every name frugal takes from its config or its
 * clients and puts on a node (label keys and values, taint keys, values and effects,
 * resource names, node group ids), with the API server's own rules, so that a node
 * group frugal accepts never yields a node Kubernetes would refuse. Also the labels
 * frugal sets on a node by itself, which a group may not set. */
#ifndef FRUGAL_K8S_NAME_H
#define FRUGAL_K8S_NAME_H

#include <stdbool.h>

/* Longest DNS-1123 label, and longest name part of a qualified name or label value. */
#define K8S_NAME_MAX 63
/* Longest DNS-1123 subdomain (the prefix of a qualified name). */
#define K8S_NAME_SUBDOMAIN_MAX 253

/* Whether s is a DNS-1123 label: 1-63 of [a-z0-9-], starting and ending with an
 * alphanumeric. NULL is not. */
bool k8s_name_is_dns_label(const char *s);

/* Why key is not a qualified name, or NULL when it is one. A qualified name is what
 * Kubernetes takes as a label key, a taint key or a resource name: an optional prefix
 * that is a DNS-1123 subdomain (dot-separated DNS-1123 labels, at most 253 characters)
 * followed by '/', then a name of 1-63 of [A-Za-z0-9._-] starting and ending with an
 * alphanumeric. The reason is a static phrase fit to follow `invalid label key "K": `.
 * NULL is not a qualified name. */
const char *k8s_name_key_problem(const char *key);

/* Why value is not a label value, or NULL when it is one: empty, or 1-63 of
 * [A-Za-z0-9._-] starting and ending with an alphanumeric. Taint values follow the
 * same rule. NULL counts as empty. The reason is a static phrase. */
const char *k8s_name_value_problem(const char *value);

/* Whether key is a qualified name (k8s_name_key_problem finds nothing). */
bool k8s_name_is_key(const char *key);

/* Whether value is a label or taint value (k8s_name_value_problem finds nothing). */
bool k8s_name_is_value(const char *value);

/* Whether effect is a taint effect: NoSchedule, PreferNoSchedule or NoExecute. */
bool k8s_name_is_taint_effect(const char *effect);

/* Whether key is a label the template node of a group sets by itself from the machine
 * type (instance type, GPU type, os, arch), the zone (zone, region) and the node's
 * name (hostname). A group's own labels may not set one: its template, and its nodes,
 * would no longer say what they are; nor does a proposal put one in a label set. */
bool k8s_name_is_reserved_label(const char *key);

#endif
