/* Helpers shared by the command-line tools (`frugal ctl`, `frugal plan`): allocation
 * that exits on out-of-memory, whole-file reading, YAML scalars and aligned tables on
 * stdout. A CLI may exit on out-of-memory; the daemon never uses these. */
#ifndef FRUGAL_CLI_H
#define FRUGAL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Print "error: out of memory" and exit 1. */
void cli_die_nomem(void) __attribute__((noreturn));

/* calloc(n, size) (at least one byte); prints "error: out of memory" and exits 1 when
 * that fails. */
void *cli_xcalloc(size_t n, size_t size);

/* A malloc'ed copy of s (NULL reads as ""); exits like cli_xcalloc on out-of-memory. */
char *cli_xstrdup(const char *s);

/* Read all of f into a malloc'ed, NUL-terminated buffer (*len excludes the NUL).
 * 0, ENOMEM or the read error's errno (EISDIR for a directory); on error *data and *len
 * are untouched and f is left open. */
int cli_read_stream(FILE *f, char **data, size_t *len);

/* cli_read_stream on the file at path. 0, or an errno value (fopen's, ENOMEM, EIO). */
int cli_read_file(const char *path, char **data, size_t *len);

/* A file written through a temporary file and a rename, so that a partial file is never
 * left: cli_tmp_open, writes to f, then cli_tmp_close. A symbolic link stays a link: the
 * file it names is replaced. A path that is not a regular file (/dev/stdout, a pipe) is
 * written straight through, as nothing can be renamed over it. */
typedef struct cli_tmp_file {
    FILE *f;
    char *tmp;  /* TARGET.tmp.PID, created exclusively; NULL when written straight through */
    char *dest; /* the file renamed over: path, or the file its link names */
} cli_tmp_file_t;

/* Open the temporary file (or the path itself, see above) for writing into t->f. 0, or
 * an errno value (nothing to close; EISDIR for a directory). */
int cli_tmp_open(cli_tmp_file_t *t, const char *path);

/* Close t; when keep, rename it over its destination, else remove it. 0, or an errno
 * value (the temporary file removed). */
int cli_tmp_close(cli_tmp_file_t *t, bool keep);

/* The value of "KEY=VALUE" (just past the first '='), or NULL when arg has no '=' or
 * an empty key; *key_len gets the key's length. */
const char *cli_split_kv(const char *arg, size_t *key_len);

/* The one YAML writer of every command's `-o yaml`, so that all of them quote alike:
 * keys the program names (field names) are written plain, and every string that comes
 * from data (ids, names, label keys and values, quantities, messages) is written
 * double-quoted, whatever its text. Numbers and booleans are printed plain by the
 * callers. */

/* Write s (NULL reads as "") to stdout as a double-quoted YAML scalar: '"' and '\'
 * backslash-escaped, control characters as \xHH. Safe whatever the text. */
void cli_yaml_str(const char *s);

/* "<indent spaces>key: value\n" with key written as is (a field name) and value by
 * cli_yaml_str. */
void cli_yaml_kv(int indent, const char *key, const char *value);

/* "<indent spaces>- key: value\n": the first field of a sequence item, key as is and
 * value by cli_yaml_str. */
void cli_yaml_item_kv(int indent, const char *key, const char *value);

/* "<indent spaces>key: value\n" of a map whose keys are data (labels, resources): key
 * and value both by cli_yaml_str. */
void cli_yaml_pair(int indent, const char *key, const char *value);

/* A column-aligned table of copied cells; zero-initialise with ncols set. */
typedef struct cli_table {
    size_t ncols;
    size_t nrows; /* including the header row */
    size_t cap;
    char **cells; /* row-major */
} cli_table_t;

/* Append a row of t->ncols cells (const char *, NULL reads as ""); exits like
 * cli_xcalloc on out-of-memory. */
void cli_table_row(cli_table_t *t, ...);

/* Print t to stdout, each row indented by indent spaces, columns two spaces apart and
 * padded only up to the row's last non-empty cell; then free the cells and leave t
 * empty (ncols kept). */
void cli_table_flush(cli_table_t *t, int indent);

#endif
