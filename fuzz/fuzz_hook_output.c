/* libFuzzer target: what an exec hook prints (providers/hook_output.c), handed over
 * without a terminating NUL: `HOOK list GROUP`'s machines (hook_output_parse_list) and
 * a create's provider id (hook_output_id_problem, on the input up to its first NUL).
 * Checks:
 * - a list parses (0) or is refused (-1) with a reason naming a line, and then empty;
 * - each machine's id and state are UTF-8 words without whitespace or control
 *   characters, the id not empty, no id listed twice, no more machines than lines;
 * - an id the create check accepts is such a word and not frugal://. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "fuzz.h"
#include "hook_output.h"
#include "utf8.h"

static bool word(const char *s) {
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= ' ' || c == 0x7f)
            return false;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size > 0 ? size : 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    hook_listing_t l = {0};
    char why[160];
    why[0] = '\0';
    int rc = hook_output_parse_list(text, size, &l, why, sizeof(why));
    if (rc == -1 && (strncmp(why, "line ", 5) != 0 || l.count != 0))
        __builtin_trap();
    if (rc != 0 && rc != -1 && rc != FRUGAL_ENOMEM)
        __builtin_trap();
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += text[i] == '\n';
    if (l.count > lines)
        __builtin_trap();
    for (size_t i = 0; i < l.count; i++) {
        const hook_machine_t *m = &l.items[i];
        if (m->id[0] == '\0' || !word(m->id) || !word(m->state) || !utf8_valid(m->id) ||
            !utf8_valid(m->state))
            __builtin_trap();
        for (size_t j = 0; j < i; j++)
            if (strcmp(l.items[j].id, m->id) == 0)
                __builtin_trap();
    }
    hook_listing_clear(&l);

    char *id = malloc(size + 1);
    if (id != NULL) {
        memcpy(id, data, size);
        id[size] = '\0';
        char buf[96];
        if (hook_output_id_problem(id, buf, sizeof(buf)) == NULL &&
            (id[0] == '\0' || !word(id) || !utf8_valid(id) || strncmp(id, "frugal://", 9) == 0))
            __builtin_trap();
        free(id);
    }
    free(text);
    return 0;
}
