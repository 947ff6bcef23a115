/* The wire names shared by the server's service tables and every client (ctl, bench,
 * tests): short spellings of the generated protobuf-c type names, and the full gRPC
 * method paths. A method path is written here once, so a server table and a client that
 * disagree on it cannot compile. Only macros: the user includes the .pb-c.h it needs
 * (externalgrpc.pb-c.h for EG, frugal.pb-c.h for AP). */
#ifndef FRUGAL_WIRE_NAMES_H
#define FRUGAL_WIRE_NAMES_H

/* clusterautoscaler.cloudprovider.v1.externalgrpc: EG(NodeGroup) is the message type,
 * EG_INIT(NODE_GROUP) its initializer, EG_DESC(node_group) a pointer to its
 * descriptor. */
#define EG(name) Clusterautoscaler__Cloudprovider__V1__Externalgrpc__##name
#define EG_INIT(NAME) CLUSTERAUTOSCALER__CLOUDPROVIDER__V1__EXTERNALGRPC__##NAME##__INIT
#define EG_DESC(name) (&clusterautoscaler__cloudprovider__v1__externalgrpc__##name##__descriptor)

/* frugal.v1: the same three for the Autoprovisioning service's messages. */
#define AP(name) Frugal__V1__##name
#define AP_INIT(NAME) FRUGAL__V1__##NAME##__INIT
#define AP_DESC(name) (&frugal__v1__##name##__descriptor)

/* Full service names (what the health service answers for). */
#define WIRE_SERVICE_CLOUDPROVIDER "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider"
#define WIRE_SERVICE_AUTOPROVISIONING "frugal.v1.Autoprovisioning"
#define WIRE_SERVICE_EXPANDER "grpcplugin.Expander"
#define WIRE_SERVICE_HEALTH "grpc.health.v1.Health"

/* "/<service>/<method>". */
#define WIRE_PATH_CP(method) "/" WIRE_SERVICE_CLOUDPROVIDER "/" method
#define WIRE_PATH_AP(method) "/" WIRE_SERVICE_AUTOPROVISIONING "/" method

/* CloudProvider. */
#define WIRE_CP_NODE_GROUPS WIRE_PATH_CP("NodeGroups")
#define WIRE_CP_NODE_GROUP_FOR_NODE WIRE_PATH_CP("NodeGroupForNode")
#define WIRE_CP_PRICING_NODE_PRICE WIRE_PATH_CP("PricingNodePrice")
#define WIRE_CP_PRICING_POD_PRICE WIRE_PATH_CP("PricingPodPrice")
#define WIRE_CP_GPU_LABEL WIRE_PATH_CP("GPULabel")
#define WIRE_CP_GET_AVAILABLE_GPU_TYPES WIRE_PATH_CP("GetAvailableGPUTypes")
#define WIRE_CP_CLEANUP WIRE_PATH_CP("Cleanup")
#define WIRE_CP_REFRESH WIRE_PATH_CP("Refresh")
#define WIRE_CP_TARGET_SIZE WIRE_PATH_CP("NodeGroupTargetSize")
#define WIRE_CP_INCREASE_SIZE WIRE_PATH_CP("NodeGroupIncreaseSize")
#define WIRE_CP_DELETE_NODES WIRE_PATH_CP("NodeGroupDeleteNodes")
#define WIRE_CP_DECREASE_TARGET_SIZE WIRE_PATH_CP("NodeGroupDecreaseTargetSize")
#define WIRE_CP_NODES WIRE_PATH_CP("NodeGroupNodes")
#define WIRE_CP_TEMPLATE_NODE_INFO WIRE_PATH_CP("NodeGroupTemplateNodeInfo")
#define WIRE_CP_GET_OPTIONS WIRE_PATH_CP("NodeGroupGetOptions")

/* frugal.v1.Autoprovisioning. */
#define WIRE_AP_GET_AVAILABLE_MACHINE_TYPES WIRE_PATH_AP("GetAvailableMachineTypes")
#define WIRE_AP_NEW_NODE_GROUP WIRE_PATH_AP("NewNodeGroup")
#define WIRE_AP_NODE_GROUP_CREATE WIRE_PATH_AP("NodeGroupCreate")
#define WIRE_AP_NODE_GROUP_DELETE WIRE_PATH_AP("NodeGroupDelete")
#define WIRE_AP_NODE_GROUP_INFO WIRE_PATH_AP("NodeGroupInfo")
#define WIRE_AP_GET_RESOURCE_LIMITER WIRE_PATH_AP("GetResourceLimiter")
#define WIRE_AP_PROPOSE_NODE_GROUPS WIRE_PATH_AP("ProposeNodeGroups")

/* grpcplugin.Expander and grpc.health.v1.Health. */
#define WIRE_EXPANDER_BEST_OPTIONS "/" WIRE_SERVICE_EXPANDER "/BestOptions"
/* The request metadata key with which `frugal ctl best-options` asks BestOptions for
 * every option's figures from its one decision, not only the winners' (docs/wire.md).
 * CA never sends it. */
#define WIRE_EXPLAIN_METADATA "frugal-explain"
#define WIRE_HEALTH_CHECK "/" WIRE_SERVICE_HEALTH "/Check"

#endif
