/* Short names for the generated Kubernetes message types (proto/k8s/). */
#ifndef FRUGAL_K8S_H
#define FRUGAL_K8S_H

#include "k8s/core.pb-c.h"
#include "k8s/meta.pb-c.h"
#include "k8s/resource.pb-c.h"

typedef K8s__Io__Api__Core__V1__Node k8s_node_t;
typedef K8s__Io__Api__Core__V1__NodeSpec k8s_node_spec_t;
typedef K8s__Io__Api__Core__V1__NodeStatus k8s_node_status_t;
typedef K8s__Io__Api__Core__V1__NodeCondition k8s_node_condition_t;
typedef K8s__Io__Api__Core__V1__Taint k8s_taint_t;
typedef K8s__Io__Api__Core__V1__Pod k8s_pod_t;
typedef K8s__Io__Api__Core__V1__PodSpec k8s_pod_spec_t;
typedef K8s__Io__Api__Core__V1__Container k8s_container_t;
typedef K8s__Io__Api__Core__V1__ResourceRequirements k8s_resource_requirements_t;
typedef K8s__Io__Api__Core__V1__Toleration k8s_toleration_t;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta k8s_object_meta_t;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Time k8s_time_t;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__OwnerReference k8s_owner_reference_t;
typedef K8s__Io__Apimachinery__Pkg__Api__Resource__Quantity k8s_quantity_t;

/* Resource names frugal reads. */
#define K8S_RESOURCE_CPU "cpu"
#define K8S_RESOURCE_MEMORY "memory"
#define K8S_RESOURCE_PODS "pods"
#define K8S_RESOURCE_EPHEMERAL_STORAGE "ephemeral-storage"
#define K8S_RESOURCE_NVIDIA_GPU "nvidia.com/gpu"
#define K8S_RESOURCE_AMD_GPU "amd.com/gpu"
#define K8S_RESOURCE_HUGEPAGES_PREFIX "hugepages-"

/* Well-known labels. */
#define K8S_LABEL_INSTANCE_TYPE "node.kubernetes.io/instance-type"
#define K8S_LABEL_ZONE "topology.kubernetes.io/zone"
#define K8S_LABEL_REGION "topology.kubernetes.io/region"
#define K8S_LABEL_HOSTNAME "kubernetes.io/hostname"
#define K8S_LABEL_OS "kubernetes.io/os"
#define K8S_LABEL_ARCH "kubernetes.io/arch"
/* Deprecated, but kubelet still sets them on every node, and older charts select them. */
#define K8S_LABEL_OS_BETA "beta.kubernetes.io/os"
#define K8S_LABEL_ARCH_BETA "beta.kubernetes.io/arch"
#define FRUGAL_LABEL_NODE_GROUP "frugal.io/node-group"
/* GPULabel answered to CA: nodes with GPUs carry it, valued with the GPU type. */
#define FRUGAL_GPU_LABEL "cloud.google.com/gke-accelerator"

#endif
