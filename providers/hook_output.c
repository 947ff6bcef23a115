#include "hook_output.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "instance_id.h"
#include "utf8.h"

static bool hook__blank(char c) {
    return c == ' ' || c == '\t';
}

/* Why the len bytes at s are no provider id, or NULL; bytes are numbered from first
 * (where s starts in what the hook printed). Bytes that are not UTF-8 are left to the
 * caller's check. */
static const char *hook__token_problem(const char *s, size_t len, size_t first, char *buf,
                                       size_t size) {
    static const char *const what[] = {
        [UTF8_SPACE] = "whitespace",
        [UTF8_CONTROL] = "the control character",
        [UTF8_INVISIBLE] = "the invisible character",
    };
    for (size_t i = 0; i < len;) {
        uint32_t cp = 0;
        size_t k = utf8_next((const unsigned char *)s + i, len - i, &cp);
        utf8_class_t class = k > 0 ? utf8_class(cp) : UTF8_VISIBLE;
        if (class == UTF8_SPACE && cp < 0x80)
            snprintf(buf, size, "holds whitespace at byte %zu", first + i);
        else if (class == UTF8_CONTROL && cp < 0x80)
            snprintf(buf, size, "holds the control character 0x%02x at byte %zu", (unsigned)cp,
                     first + i);
        else if (class != UTF8_VISIBLE)
            snprintf(buf, size, "holds %s U+%04X at byte %zu", what[class], (unsigned)cp,
                     first + i);
        if (class != UTF8_VISIBLE)
            return buf;
        i += k > 0 ? k : 1;
    }
    return NULL;
}

const char *hook_output_id_problem(const char *id, char *buf, size_t size) {
    if (id[0] == '\0')
        return "is empty or holds a NUL byte";
    const char *problem = hook__token_problem(id, strlen(id), 1, buf, size);
    if (problem != NULL)
        return problem;
    /* The state file, CA and the kubelet take ids as UTF-8 text; frugal://GROUP/NAME
     * names frugal's own placeholders (a create that printed no id), which such an id
     * would be taken for. */
    if (!utf8_valid(id))
        return "is not UTF-8 text";
    if (strncmp(id, INSTANCE_ID_SCHEME, sizeof(INSTANCE_ID_SCHEME) - 1) == 0)
        return "uses frugal's own placeholder scheme frugal://";
    return NULL;
}

bool hook_listing_has(const hook_listing_t *l, const char *id) {
    for (size_t i = 0; i < l->count; i++) {
        if (strcmp(l->items[i].id, id) == 0)
            return true;
    }
    return false;
}

void hook_listing_clear(hook_listing_t *l) {
    for (size_t i = 0; i < l->count; i++) {
        free(l->items[i].id);
        free(l->items[i].state);
    }
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

/* Split one line (without its newline) into id and state; -1 with why when malformed,
 * 1 when blank. */
static int hook__split(const char *s, size_t len, size_t lineno, const char **id, size_t *id_len,
                       const char **state, size_t *state_len, char *why, size_t size) {
    char detail[96];
    if (len > 0 && s[len - 1] == '\r')
        len--;
    size_t i = 0;
    while (i < len && hook__blank(s[i]))
        i++;
    if (i == len)
        return 1;
    *id = s + i;
    while (i < len && !hook__blank(s[i]))
        i++;
    *id_len = (size_t)(s + i - *id);
    while (i < len && hook__blank(s[i]))
        i++;
    *state = s + i;
    while (i < len && !hook__blank(s[i]))
        i++;
    *state_len = (size_t)(s + i - *state);
    while (i < len && hook__blank(s[i]))
        i++;
    if (i < len) {
        snprintf(why, size, "line %zu: more than PROVIDER_ID [STATE]", lineno);
        return -1;
    }
    const char *field = "provider id";
    const char *problem =
        hook__token_problem(*id, *id_len, (size_t)(*id - s) + 1, detail, sizeof(detail));
    if (problem == NULL) {
        field = "state";
        problem = hook__token_problem(*state, *state_len, (size_t)(*state - s) + 1, detail,
                                      sizeof(detail));
    }
    if (problem != NULL) {
        snprintf(why, size, "line %zu: the %s %s", lineno, field, problem);
        return -1;
    }
    return 0;
}

int hook_output_parse_list(const char *text, size_t len, hook_listing_t *out, char *why,
                           size_t size) {
    size_t lineno = 0;
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t end = nl != NULL ? (size_t)(nl - text) : len;
        const char *id, *state;
        size_t id_len = 0, state_len = 0;
        int rc =
            hook__split(text + at, end - at, ++lineno, &id, &id_len, &state, &state_len, why, size);
        at = end + 1;
        if (rc < 0) {
            hook_listing_clear(out);
            return -1;
        }
        if (rc > 0)
            continue;
        char *copy = strndup(id, id_len);
        char *st = strndup(state, state_len);
        if (copy == NULL || st == NULL) {
            free(copy);
            free(st);
            goto oom;
        }
        /* Ids are UTF-8 text wherever they go (the state, CA, the logs); so are states.
         * Checked on every line, a repeated id's too: any malformed line voids the list. */
        if (!utf8_valid(copy) || !utf8_valid(st)) {
            snprintf(why, size, "line %zu: the %s is not UTF-8 text", lineno,
                     utf8_valid(copy) ? "state" : "provider id");
            free(copy);
            free(st);
            hook_listing_clear(out);
            return -1;
        }
        if (hook_listing_has(out, copy)) {
            free(copy);
            free(st);
            continue;
        }
        hook_machine_t *items = realloc(out->items, (out->count + 1) * sizeof(*items));
        if (items == NULL) {
            free(copy);
            free(st);
            goto oom;
        }
        out->items = items;
        out->items[out->count++] = (hook_machine_t){.id = copy, .state = st};
    }
    return 0;
oom:
    hook_listing_clear(out);
    return FRUGAL_ENOMEM;
}
