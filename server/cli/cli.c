/* Command-line helpers: see cli.h. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strbuf.h"
#include "utf8.h"

void cli_die_nomem(void) {
    fputs("error: out of memory\n", stderr);
    exit(1);
}

void *cli_xcalloc(size_t n, size_t size) {
    void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
    if (p == NULL)
        cli_die_nomem();
    return p;
}

char *cli_xstrdup(const char *s) {
    char *p = strdup(s != NULL ? s : "");
    if (p == NULL)
        cli_die_nomem();
    return p;
}

int cli_read_stream(FILE *f, char **data, size_t *len) {
    strbuf_t b = {0};
    int rc = strbuf_read_stream(&b, f, SIZE_MAX);
    strbuf_append(&b, "", 0); /* nothing read is "" */
    size_t n = b.len;
    char *text = rc == 0 ? strbuf_take(&b) : NULL;
    strbuf_free(&b);
    if (rc == 0 && text == NULL)
        rc = ENOMEM;
    if (rc == 0)
        *data = text, *len = n;
    return rc;
}

int cli_read_file(const char *path, char **data, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return errno != 0 ? errno : EIO;
    int rc = cli_read_stream(f, data, len);
    fclose(f);
    return rc;
}

/* The temporary files open now, removed when SIGINT or SIGTERM ends the process (a
 * replay stopped by hand leaves no FILE.tmp.PID behind); a slot is NULL when free. */
#define CLI__TMP_SLOTS 4
static char *volatile cli__tmp_open_now[CLI__TMP_SLOTS];

static void cli__tmp_on_signal(int sig) {
    for (int i = 0; i < CLI__TMP_SLOTS; i++)
        if (cli__tmp_open_now[i] != NULL)
            unlink(cli__tmp_open_now[i]);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void cli__tmp_track(char *tmp, char *untrack) {
    static bool handled;
    if (!handled) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = cli__tmp_on_signal;
        sigemptyset(&sa.sa_mask);
        sigaddset(&sa.sa_mask, SIGINT);
        sigaddset(&sa.sa_mask, SIGTERM);
        const int stops[] = {SIGINT, SIGTERM};
        for (size_t i = 0; i < sizeof(stops) / sizeof(*stops); i++) {
            struct sigaction was;
            if (sigaction(stops[i], NULL, &was) == 0 && was.sa_handler != SIG_IGN)
                sigaction(stops[i], &sa, NULL); /* one ignored (nohup, a background job) stays */
        }
        handled = true;
    }
    for (int i = 0; i < CLI__TMP_SLOTS; i++)
        if (cli__tmp_open_now[i] == untrack) {
            cli__tmp_open_now[i] = tmp;
            return;
        }
}

int cli_tmp_open(cli_tmp_file_t *t, const char *path) {
    memset(t, 0, sizeof(*t));
    struct stat st, link;
    bool exists = stat(path, &st) == 0;
    bool is_link = lstat(path, &link) == 0 && S_ISLNK(link.st_mode);
    if (exists && S_ISDIR(st.st_mode))
        return EISDIR;
    errno = 0;
    /* Nothing can be renamed over a device or a pipe, nor made through a dangling link. */
    if ((exists && !S_ISREG(st.st_mode)) || (!exists && is_link)) {
        if ((t->f = fopen(path, "w")) == NULL)
            return errno != 0 ? errno : EIO;
        return 0;
    }
    t->dest = is_link ? realpath(path, NULL) : strdup(path);
    size_t n = t->dest != NULL ? strlen(t->dest) + 32 : 0;
    if (t->dest == NULL || (t->tmp = malloc(n)) == NULL) {
        int e = t->dest == NULL && errno != 0 ? errno : ENOMEM;
        free(t->dest);
        t->dest = NULL;
        return e;
    }
    /* A name of this process's own, created exclusively: a FILE.tmp of the user's, or of
     * another run writing the same file, is never overwritten nor removed. */
    snprintf(t->tmp, n, "%s.tmp.%ld", t->dest, (long)getpid());
    errno = 0;
    int fd = open(t->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 || (t->f = fdopen(fd, "w")) == NULL) {
        int e = errno != 0 ? errno : EIO;
        if (fd >= 0) {
            close(fd);
            remove(t->tmp);
        }
        free(t->tmp);
        free(t->dest);
        memset(t, 0, sizeof(*t));
        return e;
    }
    cli__tmp_track(t->tmp, NULL);
    return 0;
}

int cli_tmp_close(cli_tmp_file_t *t, bool keep) {
    errno = 0;
    int e = ferror(t->f) ? EIO : 0;
    if (fclose(t->f) != 0 && e == 0)
        e = errno != 0 ? errno : EIO;
    if (t->tmp != NULL) {
        cli__tmp_track(NULL, t->tmp);
        if (keep && e == 0 && rename(t->tmp, t->dest) != 0)
            e = errno != 0 ? errno : EIO;
        if (!keep || e != 0)
            remove(t->tmp);
    }
    free(t->tmp);
    free(t->dest);
    memset(t, 0, sizeof(*t));
    return e;
}

const char *cli_split_kv(const char *arg, size_t *key_len) {
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg)
        return NULL;
    *key_len = (size_t)(eq - arg);
    return eq + 1;
}

void cli_yaml_str(const char *s) {
    putchar('"');
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    size_t left = strlen((const char *)p);
    while (*p) {
        /* A byte that is no UTF-8 text (a server echoing what it was sent) is escaped
         * too: a YAML stream must be UTF-8, so the output still parses. */
        size_t k = *p >= 0x80 ? utf8_sequence(p, left) : 1;
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f || k == 0)
            printf("\\x%02x", *p);
        else
            fwrite(p, 1, k, stdout);
        k = k > 0 ? k : 1;
        p += k;
        left -= k;
    }
    putchar('"');
}

void cli_yaml_kv(int indent, const char *key, const char *value) {
    printf("%*s%s: ", indent, "", key);
    cli_yaml_str(value);
    putchar('\n');
}

void cli_yaml_item_kv(int indent, const char *key, const char *value) {
    printf("%*s- %s: ", indent, "", key);
    cli_yaml_str(value);
    putchar('\n');
}

void cli_yaml_pair(int indent, const char *key, const char *value) {
    printf("%*s", indent, "");
    cli_yaml_str(key);
    fputs(": ", stdout);
    cli_yaml_str(value);
    putchar('\n');
}

void cli_table_row(cli_table_t *t, ...) {
    if (t->nrows == t->cap) {
        t->cap = t->cap == 0 ? 8 : t->cap * 2;
        char **bigger = realloc(t->cells, t->cap * t->ncols * sizeof(char *));
        if (bigger == NULL)
            cli_die_nomem();
        t->cells = bigger;
    }
    va_list ap;
    va_start(ap, t);
    for (size_t c = 0; c < t->ncols; c++)
        t->cells[t->nrows * t->ncols + c] = cli_xstrdup(va_arg(ap, const char *));
    va_end(ap);
    t->nrows++;
}

void cli_table_flush(cli_table_t *t, int indent) {
    size_t *width = cli_xcalloc(t->ncols, sizeof(size_t));
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            size_t n = strlen(t->cells[r * t->ncols + c]);
            if (n > width[c])
                width[c] = n;
        }
    }
    for (size_t r = 0; r < t->nrows; r++) {
        char **row = &t->cells[r * t->ncols];
        /* Pad only up to the last non-empty cell: no trailing blanks. */
        size_t last = 0;
        for (size_t c = 0; c < t->ncols; c++) {
            if (row[c][0] != '\0')
                last = c;
        }
        printf("%*s", indent, "");
        for (size_t c = 0; c <= last; c++) {
            if (c < last)
                printf("%-*s  ", (int)width[c], row[c]);
            else
                fputs(row[c], stdout);
        }
        putchar('\n');
        for (size_t c = 0; c < t->ncols; c++)
            free(row[c]);
    }
    free(width);
    free(t->cells);
    t->cells = NULL;
    t->nrows = t->cap = 0;
}
