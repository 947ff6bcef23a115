/* The state file and the file backend (state_file.h). */
#include "state_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "state_lock.h"
#include "strbuf.h"

/* ------------------------------------------------------------------------------------
 * The file: read, durable write, previous generation
 * ---------------------------------------------------------------------------------- */

/* Whether the previous generation prev loads; why (the load's error) when it does not:
 * the way back offered must be one that works. */
static bool state__previous_loads(const char *prev, char *why, size_t size) {
    state_t st;
    frugal_err_t e = {0};
    if (state_load(prev, &st, &e) == 0) {
        state_free(&st);
        return true;
    }
    snprintf(why, size, "%s", e.msg);
    return false;
}

/* Append to a checksum error where the previous good generation is and how to restore
 * it (or that there is none, or that it is damaged too). */
static void state__hint_previous(const char *path, frugal_err_t *err) {
    char prev[PATH_MAX];
    char msg[FRUGAL_ERR_MSG_MAX], why[FRUGAL_ERR_MSG_MAX];
    snprintf(prev, sizeof(prev), "%s" STATE_PREVIOUS_SUFFIX, path);
    snprintf(msg, sizeof(msg), "%s", err->msg);
    if (access(prev, F_OK) != 0)
        frugal_err_set(err, FRUGAL_EINVAL,
                       "%s; no previous generation %s exists: restore the file from a backup, or "
                       "move it away and start with --init-state",
                       msg, prev);
    else if (state__previous_loads(prev, why, sizeof(why)))
        frugal_err_set(err, FRUGAL_EINVAL,
                       "%s; the previous good generation is %s: to restore it (losing the last "
                       "change), stop frugal and run: cp %s %s",
                       msg, prev, prev, path);
    else
        frugal_err_set(err, FRUGAL_EINVAL,
                       "%s; the previous generation is damaged too (%s): restore the file from a "
                       "backup, or move both away and start with --init-state",
                       msg, why);
}

int state_load(const char *path, state_t *out, frugal_err_t *err) {
    int rc;
    memset(out, 0, sizeof(*out));
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        if (errno == ENOENT)
            return frugal_err_set(err, FRUGAL_ENOTFOUND, "%s: no such file", path);
        return frugal_err_set(err, FRUGAL_EIO, "%s: cannot open: %s", path, strerror(errno));
    }
    strbuf_t text = {0};
    int got = strbuf_read_stream(&text, f, SIZE_MAX);
    fclose(f);
    strbuf_append(&text, "", 0); /* an empty file is "" */
    if (got == 0 && text.failed)
        got = ENOMEM;
    if (got == ENOMEM)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "%s: out of memory", path);
    else if (got != 0)
        rc = frugal_err_set(err, FRUGAL_EIO, "%s: read error: %s", path, strerror(got));
    else
        rc = state_parse(path, text.data, text.len, out, err);
    strbuf_free(&text);
    return rc;
}

static int state__fsync_dir(const char *path, frugal_err_t *err) {
    char *dir = strdup(path);
    if (dir == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    char *slash = strrchr(dir, '/');
    const char *d = ".";
    if (slash == dir) {
        d = "/";
    } else if (slash != NULL) {
        *slash = '\0';
        d = dir;
    }
    int fd = open(d, O_RDONLY | O_DIRECTORY);
    int rc = 0;
    if (fd < 0) {
        rc = frugal_err_set(err, FRUGAL_EIO, "%s: cannot open directory: %s", d, strerror(errno));
    } else {
        if (fsync(fd) != 0 && errno != EINVAL)
            rc = frugal_err_set(err, FRUGAL_EIO, "%s: fsync of directory: %s", d, strerror(errno));
        close(fd);
    }
    free(dir);
    return rc;
}

/* Keep the file about to be replaced as PATH.prev (a hard link: no copy, no extra
 * fsync; the directory sync after the rename covers it). Best effort: a missing file
 * (the first write) or a filesystem without links only loses the previous generation. */
static void state__keep_previous(const char *path) {
    char prev[PATH_MAX];
    if ((size_t)snprintf(prev, sizeof(prev), "%s" STATE_PREVIOUS_SUFFIX, path) >= sizeof(prev))
        return;
    if (unlink(prev) != 0 && errno != ENOENT)
        return;
    if (link(path, prev) != 0 && errno != ENOENT)
        log_debug("keeping %s as %s: %s", path, prev, strerror(errno));
}

static int state__write_file(const char *path, const char *data, size_t len, frugal_err_t *err) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 5);
    int rc = 0;
    if (tmp == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    memcpy(tmp, path, plen);
    memcpy(tmp + plen, ".tmp", 5);

    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = frugal_err_set(err, FRUGAL_EIO, "%s: cannot create: %s", tmp, strerror(errno));
        goto fail_open;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = frugal_err_set(err, FRUGAL_EIO, "%s: write: %s", tmp, strerror(errno));
            goto fail_write;
        }
        off += (size_t)n;
    }
    if (fsync(fd) != 0) {
        rc = frugal_err_set(err, FRUGAL_EIO, "%s: fsync: %s", tmp, strerror(errno));
        goto fail_write;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = frugal_err_set(err, FRUGAL_EIO, "%s: close: %s", tmp, strerror(errno));
        goto fail_write;
    }
    fd = -1;
    state__keep_previous(path);
    if (rename(tmp, path) != 0) {
        rc = frugal_err_set(err, FRUGAL_EIO, "%s: rename to %s: %s", tmp, path, strerror(errno));
        goto fail_write;
    }
    free(tmp);
    /* The rename is the commit point: the file now holds the change, so a failing sync of
     * the directory must not report the change as refused (memory and file would then
     * disagree). It is retried once and logged; the data itself is already synced. */
    frugal_err_t sync_err;
    frugal_err_clear(&sync_err);
    if (state__fsync_dir(path, &sync_err) != 0 && state__fsync_dir(path, &sync_err) != 0)
        log_error("%s (the change is written; a power loss now could lose it)", sync_err.msg);
    return 0;

fail_write:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
fail_open:
    free(tmp);
    return rc;
}

/* Timed for frugal_state_write_seconds, failures included. */
int state_write_file(const char *path, const char *data, size_t len, frugal_err_t *err) {
    double t0 = clock_mono_ms_exact();
    int rc = state__write_file(path, data, len, err);
    metrics_observe(METRICS_STATE_WRITE_SECONDS, (clock_mono_ms_exact() - t0) / 1e3, NULL, NULL);
    return rc;
}

int state_save(const char *path, const group_t *const *groups, size_t n, frugal_err_t *err) {
    char *data = NULL;
    size_t len = 0;
    int rc = state_format(groups, n, &data, &len, err);
    if (rc != 0)
        return rc;
    rc = state_write_file(path, data, len, err);
    free(data);
    return rc;
}

/* ------------------------------------------------------------------------------------
 * The file backend: the whole file written on every commit, its flock as the lock
 * ---------------------------------------------------------------------------------- */

typedef struct file_backend {
    char *path;
    char *description;
    int lock_fd;
    /* What the file holds as of the last commit, so that a commit of the same state
     * writes nothing and PATH.prev stays the generation before it (a clean stop, whose
     * final persist follows the acknowledged writes, would otherwise make it a copy). */
    char *held;
    size_t held_len;
} file_backend_t;

/* Make the file at path, as it is, durable (it may have been put there unsynced, by a
 * `cp` of the previous generation say); needs no free space. */
static int state__sync_existing(const char *path, frugal_err_t *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return frugal_err_set(err, FRUGAL_EIO, "%s: cannot open: %s", path, strerror(errno));
    int rc = 0;
    if (fsync(fd) != 0)
        rc = frugal_err_set(err, FRUGAL_EIO, "%s: fsync: %s", path, strerror(errno));
    close(fd);
    return rc != 0 ? rc : state__fsync_dir(path, err);
}

/* Whether the file at path holds exactly data[0..len). */
static bool state__file_holds(const char *path, const char *data, size_t len) {
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return false;
    char buf[65536];
    size_t at = 0, n;
    bool same = true;
    while (same && (n = fread(buf, 1, sizeof(buf), fp)) > 0) {
        same = at + n <= len && memcmp(buf, data + at, n) == 0;
        at += n;
    }
    same = same && !ferror(fp) && at == len;
    fclose(fp);
    return same;
}

static int file_load(state_backend_t *b, state_t *out, frugal_err_t *err) {
    file_backend_t *f = b->impl;
    int rc = state_load(f->path, out, err);
    /* The advice is for the state a server runs on, not for a file given to import; and
     * for a damaged file (any refusal but a newer frugal's format, which .prev shares). */
    if (rc == FRUGAL_EINVAL && err != NULL &&
        strstr(err->msg, "unsupported state format version") == NULL)
        state__hint_previous(f->path, err);
    if (rc == 0 && out->version < STATE_FORMAT_VERSION)
        log_info("state file %s is format version %d: its next write (serve's first) stores it "
                 "as version %d (checksummed), the original staying as %s" STATE_PREVIOUS_SUFFIX
                 " until the change after",
                 f->path, out->version, STATE_FORMAT_VERSION, f->path);
    return rc;
}

static int file_commit(state_backend_t *b, const state_commit_t *c, frugal_err_t *err) {
    file_backend_t *f = b->impl;
    char *data = NULL;
    size_t len = 0;
    int rc = state_format(c->view, c->count, &data, &len, err);
    if (rc != 0)
        return rc;
    if (f->held != NULL && f->held_len == len && memcmp(f->held, data, len) == 0) {
        free(data);
        return 0;
    }
    /* The start commits the state it loaded: when that is what the file holds, nothing
     * is written, so a full disk does not keep a server from starting (and answering
     * reads) on the state it had. */
    if (f->held == NULL && state__file_holds(f->path, data, len))
        rc = state__sync_existing(f->path, err);
    else
        rc = state_write_file(f->path, data, len, err);
    free(f->held);
    f->held = rc == 0 ? data : NULL; /* after a failure, what the file holds is unknown */
    f->held_len = rc == 0 ? len : 0;
    if (rc != 0)
        free(data);
    return rc;
}

static int file_lock(state_backend_t *b, frugal_err_t *err) {
    file_backend_t *f = b->impl;
    if (f->lock_fd >= 0)
        return 0;
    return state_lock_acquire(f->path, &f->lock_fd, err);
}

/* Whether the directory of path holds nothing but what a new volume has (lost+found)
 * and path's own lock (taken before this check): else, into other, the first other
 * entry, which says a state lived here before (under another state_file, or lost). */
static bool state__dir_is_new(const char *path, char *other, size_t size) {
    char dir[PATH_MAX], lock[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash != NULL ? slash + 1 : path;
    if (slash == NULL)
        snprintf(dir, sizeof(dir), ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    snprintf(lock, sizeof(lock), "%s.lock", base);
    DIR *d = opendir(dir);
    if (d == NULL) {
        snprintf(other, size, "%s (unreadable: %s)", dir, strerror(errno));
        return false;
    }
    bool fresh = true;
    for (struct dirent *e; fresh && (e = readdir(d)) != NULL;) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strcmp(n, "lost+found") == 0 ||
            strcmp(n, lock) == 0)
            continue;
        fresh = false;
        snprintf(other, size, "%s/%.200s", dir, n);
    }
    closedir(d);
    return fresh;
}

static int file_check_present(state_backend_t *b, const char *config_path, state_init_t init,
                              frugal_err_t *err) {
    file_backend_t *f = b->impl;
    if (access(f->path, F_OK) == 0)
        return 0;
    if (errno != ENOENT)
        return frugal_err_set(err, FRUGAL_EIO, "state file %s: %s", f->path, strerror(errno));
    char prev[PATH_MAX];
    snprintf(prev, sizeof(prev), "%s" STATE_PREVIOUS_SUFFIX, f->path);
    bool has_prev = access(prev, F_OK) == 0;
    const char *config_arg = config_path != NULL ? config_path : "CONFIG";
    /* A previous generation says frugal has run on this volume: the file was lost, not
     * never written. Only a deliberate --init-state starts afresh over it. */
    char why[FRUGAL_ERR_MSG_MAX];
    if (init != STATE_INIT_DELIBERATE && has_prev && !state__previous_loads(prev, why, sizeof(why)))
        return frugal_err_set(
            err, FRUGAL_EPRECOND,
            "state file %s does not exist, and its previous generation is damaged (%s): frugal "
            "has run here before. Restore the file from a backup; to start afresh deliberately, "
            "start once with: frugal serve -c %s --init-state",
            f->path, why, config_arg);
    if (init != STATE_INIT_DELIBERATE && has_prev)
        return frugal_err_set(
            err, FRUGAL_EPRECOND,
            "state file %s does not exist, but its previous generation %s does: frugal has run "
            "here before. To restore it (losing at most the last change), run: cp %s %s; to "
            "start afresh deliberately, start once with: frugal serve -c %s --init-state",
            f->path, prev, prev, f->path, config_arg);
    char other[PATH_MAX + 256];
    if (init == STATE_INIT_NEW_VOLUME && !state__dir_is_new(f->path, other, sizeof(other)))
        return frugal_err_set(
            err, FRUGAL_EPRECOND,
            "state file %s does not exist, and its directory is not a new volume (it holds %s): "
            "--init-new-volume initialises only an empty one. Check that state_file in %s names "
            "the file frugal wrote before; to start afresh there deliberately, use --init-state",
            f->path, other, config_path != NULL ? config_path : "the configuration");
    if (init != STATE_INIT_NEVER) {
        log_warn("state file %s does not exist: initialising it from the configuration, every "
                 "node group at its initial size",
                 f->path);
        return 0;
    }
    return frugal_err_set(
        err, FRUGAL_EPRECOND,
        "state file %s does not exist: refusing to start with every node group at its initial "
        "size and no instances. Check that the volume holding it is mounted and that state_file "
        "in %s names the right path. To initialise a new state deliberately, start once with: "
        "frugal serve -c %s --init-state (or run: frugal state init -c %s)",
        f->path, config_path != NULL ? config_path : "the configuration", config_arg, config_arg);
}

static const char *file_describe(const state_backend_t *b) {
    const file_backend_t *f = b->impl;
    return f->description;
}

static void file_destroy(state_backend_t *b) {
    file_backend_t *f = b->impl;
    state_lock_release(f->lock_fd);
    free(f->held);
    free(f->path);
    free(f->description);
    free(f);
    free(b);
}

static const state_backend_ops_t file_ops = {
    .kind = "file",
    .load = file_load,
    .commit = file_commit,
    .lock = file_lock,
    .check_present = file_check_present,
    .exclude = file_lock,
    .describe = file_describe,
    .destroy = file_destroy,
};

int state_backend_file_create(const char *path, state_backend_t **out, frugal_err_t *err) {
    *out = NULL;
    state_backend_t *b = calloc(1, sizeof(*b));
    file_backend_t *f = calloc(1, sizeof(*f));
    size_t n = strlen(path) + sizeof("state file ");
    char *d = malloc(n);
    char *p = strdup(path);
    if (b == NULL || f == NULL || d == NULL || p == NULL) {
        free(b);
        free(f);
        free(d);
        free(p);
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    }
    snprintf(d, n, "state file %s", path);
    f->path = p;
    f->description = d;
    f->lock_fd = -1;
    b->ops = &file_ops;
    b->impl = f;
    *out = b;
    return 0;
}
