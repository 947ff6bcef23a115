/* A YAML document loaded with libyaml into a tree of nodes that remember where they
 * came from (1-based line and column), so that a config module can report
 * `FILE:LINE:COL: key: reason` for any value it rejects. Generic: knows nothing about
 * frugal's keys. Anchors and aliases are refused (a config does not need them and they
 * allow exponential expansion); a stream holds at most one document. */
#ifndef FRUGAL_YAML_TREE_H
#define FRUGAL_YAML_TREE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum yaml_tree_type {
    YAML_TREE_SCALAR = 0,
    YAML_TREE_SEQUENCE,
    YAML_TREE_MAPPING,
} yaml_tree_type_t;

typedef struct yaml_tree_node yaml_tree_node_t;

typedef struct yaml_tree_pair {
    yaml_tree_node_t *key;
    yaml_tree_node_t *value;
} yaml_tree_pair_t;

struct yaml_tree_node {
    yaml_tree_type_t type;
    int line; /* 1-based position of the node's first character */
    int column;
    union {
        struct {
            char *text; /* NUL-terminated; len excludes the terminator */
            size_t len;
            bool plain; /* unquoted and untagged: may be a number, bool or null */
        } scalar;
        struct {
            yaml_tree_node_t **items;
            size_t count;
        } sequence;
        struct {
            yaml_tree_pair_t *items; /* in document order */
            size_t count;
        } mapping;
    } u;
};

/* Where and why a document could not be loaded. */
typedef struct yaml_tree_error {
    int line; /* 1-based; 0 when unknown */
    int column;
    /* Where the construct holding the problem began (a mapping left open, a quoted
     * scalar); 0 when the parser names none. */
    int context_line;
    int context_column;
    char message[256]; /* the problem, without a position */
} yaml_tree_error_t;

/* err's message for a reader, with where its context began: "… (line L, column C)", or
 * "… (column C)" when the text parsed was one line. Written into buf, which it returns. */
const char *yaml_tree_error_text(const yaml_tree_error_t *err, bool one_line, char *buf,
                                 size_t size);

/* Parse text[0..len) into *out. An empty stream (nothing, or only comments) yields
 * *out == NULL and 0. Returns 0, or -1 with *err filled (syntax errors carry libyaml's
 * position; aliases, several documents, nesting deeper than 64 and out of memory are
 * reported the same way). */
int yaml_tree_load(const char *text, size_t len, yaml_tree_node_t **out, yaml_tree_error_t *err);

/* Free a tree returned by yaml_tree_load; NULL is fine. */
void yaml_tree_free(yaml_tree_node_t *node);

/* A plain scalar that YAML reads as null ("", "~", "null"). */
bool yaml_tree_is_null(const yaml_tree_node_t *node);

/* The value of key in a mapping (scalar keys compared by text), NULL when absent or
 * when node is not a mapping. */
const yaml_tree_node_t *yaml_tree_mapping_get(const yaml_tree_node_t *node, const char *key);

/* "a scalar", "a sequence" or "a mapping", for messages. */
const char *yaml_tree_type_name(yaml_tree_type_t type);

#endif
