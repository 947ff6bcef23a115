/* `frugal ctl`: the operator's client of the server's own API (README.md, "frugal ctl").
 * server/cli/ctl.c parses the global options, opens the client and dispatches to a
 * verb; verbs live in small files by service (ctl_cloud_provider.c for CloudProvider and
 * health, ctl_best_options.c for the expander, ctl_autoprov.c for
 * frugal.v1.Autoprovisioning; ctl.c keeps `raw`). All of them call the server through
 * ctl_call.c; ctl.c and ctl_cloud_provider.c share the argument helpers of ctl_args.c.
 * Neither ctl_call.c nor ctl_args.c calls any of them. */
#ifndef FRUGAL_CTL_H
#define FRUGAL_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <protobuf-c/protobuf-c.h>

#include "rpc_client.h"

typedef enum ctl_format { CTL_FORMAT_TABLE, CTL_FORMAT_YAML } ctl_format_t;

/* A verb gets its own arguments (argv[0] is the verb) and returns the exit status:
 * 0 on gRPC OK, 1 otherwise (ctl_call has printed "STATUS_NAME: message" to stderr),
 * 2 for usage errors. */
typedef int (*ctl_verb_fn)(rpc_client_t *client, ctl_format_t format, int argc, char **argv);

typedef struct ctl_verb {
    const char *name;
    const char *usage; /* arguments, e.g. "ID DELTA" */
    ctl_verb_fn run;
} ctl_verb_t;

/* Verb tables of the other files, concatenated by ctl.c. */
extern const ctl_verb_t ctl_verbs_cloud_provider[];
extern const size_t ctl_verbs_cloud_provider_count;
extern const ctl_verb_t ctl_verbs_best_options[];
extern const size_t ctl_verbs_best_options_count;
extern const ctl_verb_t ctl_verbs_autoprov[];
extern const size_t ctl_verbs_autoprov_count;

/* Pack req, call method, and unpack the reply as resp_desc into *resp (free with
 * protobuf_c_message_free_unpacked). On a non-OK status prints "NAME: message" to
 * stderr and returns 1; on success 0. */
int ctl_call(rpc_client_t *client, const char *method, const ProtobufCMessage *req,
             const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp);

/* ctl_call with the request metadata md[0..md_count). */
int ctl_call_metadata(rpc_client_t *client, const char *method, const grpc_metadata *md,
                      size_t md_count, const ProtobufCMessage *req,
                      const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp);

/* Argument helpers (ctl_args.c). */

/* The value of option argv[*i] ("--opt V"), advancing *i; NULL (said why) when missing. */
const char *ctl_optarg(int argc, char **argv, int *i);

/* Numbers and durations of arguments: true with *out set, or false. ctl_parse_int32 and
 * ctl_parse_hours say what is wrong on stderr; ctl_parse_double and ctl_parse_duration
 * leave that to the caller. */
bool ctl_parse_int32(const char *s, int32_t *out);
bool ctl_parse_double(const char *s, double *out);
bool ctl_parse_hours(const char *s, double *out);
bool ctl_parse_duration(const char *s, int64_t *out);

/* The verb called name in verbs[0..count), or NULL. */
const ctl_verb_t *ctl_verb_find(const ctl_verb_t *verbs, size_t count, const char *name);

/* Print "usage: frugal ctl [OPTIONS] VERB USAGE" for verb as verbs[0..count) has it;
 * returns 2, the exit status of a usage error. */
int ctl_usage_verb(const ctl_verb_t *verbs, size_t count, const char *verb);

#endif
