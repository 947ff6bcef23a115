#include "yaml_tree.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

/* Deep enough for any config, shallow enough that recursion cannot exhaust the stack. */
#define YAML_TREE_MAX_DEPTH 64

typedef struct tree_loader {
    yaml_parser_t parser;
    yaml_tree_error_t *err;
    const char *text; /* the input, for the line and column of a byte offset */
    size_t len;
} tree_loader_t;

static int loader_fail(tree_loader_t *ld, const yaml_mark_t *mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int loader_fail(tree_loader_t *ld, const yaml_mark_t *mark, const char *fmt, ...) {
    va_list ap;
    ld->err->line = mark != NULL ? (int)mark->line + 1 : 0;
    ld->err->column = mark != NULL ? (int)mark->column + 1 : 0;
    ld->err->context_line = 0;
    ld->err->context_column = 0;
    va_start(ap, fmt);
    vsnprintf(ld->err->message, sizeof(ld->err->message), fmt, ap);
    va_end(ap);
    return -1;
}

/* Next event, or -1 with libyaml's own description of the syntax error. */
static int loader_next(tree_loader_t *ld, yaml_event_t *ev) {
    if (yaml_parser_parse(&ld->parser, ev)) {
        return 0;
    }
    const yaml_parser_t *p = &ld->parser;
    const char *problem = p->problem != NULL ? p->problem : "invalid YAML";
    if (p->error == YAML_MEMORY_ERROR) {
        return loader_fail(ld, NULL, "out of memory");
    }
    if (p->error == YAML_READER_ERROR) {
        /* The reader reports a byte offset only (an invalid byte: NUL, bad UTF-8). */
        yaml_mark_t mark = {.line = 0, .column = 0};
        for (size_t i = 0; i < p->problem_offset && i < ld->len; i++) {
            if (ld->text[i] == '\n') {
                mark.line++;
                mark.column = 0;
            } else if (((unsigned char)ld->text[i] & 0xC0) != 0x80) {
                mark.column++; /* columns count characters, as libyaml's marks do */
            }
        }
        return loader_fail(ld, &mark, "%s (byte offset %zu)", problem, p->problem_offset);
    }
    if (p->context != NULL) {
        loader_fail(ld, &p->problem_mark, "%s %s", problem, p->context);
        ld->err->context_line = (int)p->context_mark.line + 1;
        ld->err->context_column = (int)p->context_mark.column + 1;
        return -1;
    }
    return loader_fail(ld, &p->problem_mark, "%s", problem);
}

const char *yaml_tree_error_text(const yaml_tree_error_t *err, bool one_line, char *buf,
                                 size_t size) {
    if (err->context_line == 0)
        snprintf(buf, size, "%s", err->message);
    else if (one_line)
        snprintf(buf, size, "%s (column %d)", err->message, err->context_column);
    else
        snprintf(buf, size, "%s (line %d, column %d)", err->message, err->context_line,
                 err->context_column);
    return buf;
}

static yaml_tree_node_t *node_new(tree_loader_t *ld, yaml_tree_type_t type,
                                  const yaml_mark_t *mark) {
    yaml_tree_node_t *n = calloc(1, sizeof(*n));
    if (n == NULL) {
        loader_fail(ld, mark, "out of memory");
        return NULL;
    }
    n->type = type;
    n->line = (int)mark->line + 1;
    n->column = (int)mark->column + 1;
    return n;
}

static int node_append_item(yaml_tree_node_t *seq, yaml_tree_node_t *item) {
    yaml_tree_node_t **items =
        realloc(seq->u.sequence.items, (seq->u.sequence.count + 1) * sizeof(*items));
    if (items == NULL) {
        return -1;
    }
    items[seq->u.sequence.count++] = item;
    seq->u.sequence.items = items;
    return 0;
}

static int node_append_pair(yaml_tree_node_t *map, yaml_tree_node_t *key, yaml_tree_node_t *value) {
    yaml_tree_pair_t *items =
        realloc(map->u.mapping.items, (map->u.mapping.count + 1) * sizeof(*items));
    if (items == NULL) {
        return -1;
    }
    items[map->u.mapping.count].key = key;
    items[map->u.mapping.count].value = value;
    map->u.mapping.count++;
    map->u.mapping.items = items;
    return 0;
}

/* Build the node that starts with *ev (already read; consumed here) and everything
 * nested in it. */

/* A plain scalar tagged !!bool, !!int, !!float or !!null is read as its untagged self
 * (the tag only says what it already is); !!str and other tags keep it a string. */
static bool loader_typed_tag(const yaml_event_t *ev) {
    static const char *const typed[] = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                                        "tag:yaml.org,2002:float", "tag:yaml.org,2002:null"};
    const char *tag = (const char *)ev->data.scalar.tag;
    for (size_t i = 0; tag != NULL && i < sizeof(typed) / sizeof(*typed); i++)
        if (strcmp(tag, typed[i]) == 0)
            return true;
    return false;
}
static int loader_build(tree_loader_t *ld, yaml_event_t *ev, int depth, yaml_tree_node_t **out) {
    yaml_tree_node_t *n = NULL;
    yaml_mark_t start = ev->start_mark;
    *out = NULL;

    if (depth > YAML_TREE_MAX_DEPTH) {
        yaml_event_delete(ev);
        return loader_fail(ld, &start, "nesting deeper than %d levels", YAML_TREE_MAX_DEPTH);
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        if (ev->data.scalar.anchor != NULL) {
            yaml_event_delete(ev);
            return loader_fail(ld, &start, "YAML anchors are not supported");
        }
        n = node_new(ld, YAML_TREE_SCALAR, &start);
        if (n == NULL) {
            yaml_event_delete(ev);
            return -1;
        }
        size_t len = ev->data.scalar.length;
        n->u.scalar.text = malloc(len + 1);
        if (n->u.scalar.text == NULL) {
            yaml_event_delete(ev);
            free(n);
            return loader_fail(ld, &start, "out of memory");
        }
        memcpy(n->u.scalar.text, ev->data.scalar.value, len);
        n->u.scalar.text[len] = '\0';
        n->u.scalar.len = len;
        n->u.scalar.plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                            (ev->data.scalar.plain_implicit || loader_typed_tag(ev));
        yaml_event_delete(ev);
        *out = n;
        return 0;
    }
    case YAML_ALIAS_EVENT:
        yaml_event_delete(ev);
        return loader_fail(ld, &start, "YAML aliases are not supported");
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool is_map = ev->type == YAML_MAPPING_START_EVENT;
        bool anchored =
            is_map ? ev->data.mapping_start.anchor != NULL : ev->data.sequence_start.anchor != NULL;
        yaml_event_delete(ev);
        if (anchored) {
            return loader_fail(ld, &start, "YAML anchors are not supported");
        }
        n = node_new(ld, is_map ? YAML_TREE_MAPPING : YAML_TREE_SEQUENCE, &start);
        if (n == NULL) {
            return -1;
        }
        for (;;) {
            yaml_event_t child;
            if (loader_next(ld, &child) != 0) {
                goto fail;
            }
            if (child.type == YAML_SEQUENCE_END_EVENT || child.type == YAML_MAPPING_END_EVENT) {
                yaml_event_delete(&child);
                break;
            }
            yaml_tree_node_t *key = NULL;
            if (loader_build(ld, &child, depth + 1, &key) != 0) {
                goto fail;
            }
            if (!is_map) {
                if (node_append_item(n, key) != 0) {
                    yaml_tree_free(key);
                    loader_fail(ld, &start, "out of memory");
                    goto fail;
                }
                continue;
            }
            yaml_tree_node_t *value = NULL;
            if (loader_next(ld, &child) != 0 || loader_build(ld, &child, depth + 1, &value) != 0) {
                yaml_tree_free(key);
                goto fail;
            }
            if (node_append_pair(n, key, value) != 0) {
                yaml_tree_free(key);
                yaml_tree_free(value);
                loader_fail(ld, &start, "out of memory");
                goto fail;
            }
        }
        *out = n;
        return 0;
    }
    default:
        yaml_event_delete(ev);
        return loader_fail(ld, &start, "unexpected YAML event");
    }
fail:
    yaml_tree_free(n);
    return -1;
}

int yaml_tree_load(const char *text, size_t len, yaml_tree_node_t **out, yaml_tree_error_t *err) {
    tree_loader_t ld = {.err = err, .text = text, .len = len};
    yaml_tree_node_t *root = NULL;
    yaml_event_t ev;
    int rc = -1;

    *out = NULL;
    memset(err, 0, sizeof(*err));
    if (!yaml_parser_initialize(&ld.parser)) {
        return loader_fail(&ld, NULL, "out of memory");
    }
    yaml_parser_set_input_string(&ld.parser, (const unsigned char *)text, len);

    if (loader_next(&ld, &ev) != 0) { /* STREAM-START */
        goto done;
    }
    yaml_event_delete(&ev);
    if (loader_next(&ld, &ev) != 0) {
        goto done;
    }
    if (ev.type == YAML_STREAM_END_EVENT) { /* no document at all */
        yaml_event_delete(&ev);
        rc = 0;
        goto done;
    }
    yaml_event_delete(&ev); /* DOCUMENT-START */
    if (loader_next(&ld, &ev) != 0 || loader_build(&ld, &ev, 0, &root) != 0) {
        goto done;
    }
    if (loader_next(&ld, &ev) != 0) { /* DOCUMENT-END */
        goto done;
    }
    yaml_event_delete(&ev);
    if (loader_next(&ld, &ev) != 0) {
        goto done;
    }
    if (ev.type != YAML_STREAM_END_EVENT) {
        yaml_mark_t mark = ev.start_mark;
        yaml_event_delete(&ev);
        loader_fail(&ld, &mark, "only one YAML document is allowed");
        goto done;
    }
    yaml_event_delete(&ev);
    if (yaml_tree_is_null(root)) { /* "---" alone: an empty document */
        yaml_tree_free(root);
        root = NULL;
    }
    *out = root;
    root = NULL;
    rc = 0;
done:
    yaml_tree_free(root);
    yaml_parser_delete(&ld.parser);
    return rc;
}

void yaml_tree_free(yaml_tree_node_t *node) {
    if (node == NULL) {
        return;
    }
    switch (node->type) {
    case YAML_TREE_SCALAR:
        free(node->u.scalar.text);
        break;
    case YAML_TREE_SEQUENCE:
        for (size_t i = 0; i < node->u.sequence.count; i++) {
            yaml_tree_free(node->u.sequence.items[i]);
        }
        free(node->u.sequence.items);
        break;
    case YAML_TREE_MAPPING:
        for (size_t i = 0; i < node->u.mapping.count; i++) {
            yaml_tree_free(node->u.mapping.items[i].key);
            yaml_tree_free(node->u.mapping.items[i].value);
        }
        free(node->u.mapping.items);
        break;
    }
    free(node);
}

bool yaml_tree_is_null(const yaml_tree_node_t *node) {
    if (node == NULL || node->type != YAML_TREE_SCALAR || !node->u.scalar.plain) {
        return false;
    }
    const char *t = node->u.scalar.text;
    return t[0] == '\0' || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 ||
           strcmp(t, "Null") == 0 || strcmp(t, "NULL") == 0;
}

const yaml_tree_node_t *yaml_tree_mapping_get(const yaml_tree_node_t *node, const char *key) {
    if (node == NULL || node->type != YAML_TREE_MAPPING) {
        return NULL;
    }
    for (size_t i = 0; i < node->u.mapping.count; i++) {
        const yaml_tree_node_t *k = node->u.mapping.items[i].key;
        if (k->type == YAML_TREE_SCALAR && strcmp(k->u.scalar.text, key) == 0) {
            return node->u.mapping.items[i].value;
        }
    }
    return NULL;
}

const char *yaml_tree_type_name(yaml_tree_type_t type) {
    switch (type) {
    case YAML_TREE_SCALAR:
        return "a scalar";
    case YAML_TREE_SEQUENCE:
        return "a sequence";
    case YAML_TREE_MAPPING:
        return "a mapping";
    }
    return "a node";
}
