/* What a hook prints, checked (docs/hooks.md): the provider id of a create (its first
 * line) and the machines of a list (one `PROVIDER_ID [STATE]` per line). Pure functions;
 * a refusal says precisely what is wrong so that the operator can fix the hook. */
#ifndef FRUGAL_HOOK_OUTPUT_H
#define FRUGAL_HOOK_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

/* Why id cannot be a provider id (it holds whitespace or a control character), written
 * to buf; NULL when it can. */
const char *hook_output_id_problem(const char *id, char *buf, size_t size);

/* One machine of a list. */
typedef struct hook_machine {
    char *id;
    char *state; /* "" when the line has none */
} hook_machine_t;

typedef struct hook_listing {
    hook_machine_t *items;
    size_t count;
} hook_listing_t;

/* Parse the output of `HOOK list GROUP` (len bytes, not necessarily NUL-terminated)
 * into *out (empty on entry): one machine per line, PROVIDER_ID then optionally one
 * STATE word, separated by spaces or tabs; blank lines are skipped, a machine listed
 * twice counts once. 0; -1 with the reason (naming the line) in why when a line is
 * malformed (out stays empty); FRUGAL_ENOMEM. */
int hook_output_parse_list(const char *text, size_t len, hook_listing_t *out, char *why,
                           size_t size);

/* Whether id is listed. */
bool hook_listing_has(const hook_listing_t *l, const char *id);

void hook_listing_clear(hook_listing_t *l);

#endif
