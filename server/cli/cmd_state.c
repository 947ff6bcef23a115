/* `frugal state init|export|import -c FILE`: initialise the configured state (file or
 * etcd) as a first `frugal serve --init-state` would, or move it to and from a state file
 * (docs/state-format.md), e.g. from the file backend to etcd: export with the old config,
 * import with the new one. Exit 0, 1 on an error (named on stderr), 2 on a usage error. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <grpc/grpc.h>

#include "cluster.h"
#include "commands.h"
#include "config.h"
#include "provider.h"
#include "state.h"
#include "state_backend.h"
#include "state_file.h"
#include "store.h"

static int state_usage(FILE *f, int status) {
    fprintf(f, "usage: frugal state init -c FILE              the configured state, every node "
               "group at its initial size\n"
               "                                               (as serve --init-state; refused "
               "when it exists)\n"
               "       frugal state export -c FILE [-o OUT]   the configured state as a state "
               "file (stdout without -o)\n"
               "       frugal state import -c FILE IN         IN (a state file) into the "
               "configured state, which must be empty\n");
    return status;
}

/* The groups of st as the const pointers state_format and commits take. */
static const group_t **state__view(const state_t *st) {
    const group_t **v = calloc(st->count + 1, sizeof(*v));
    for (size_t i = 0; v != NULL && i < st->count; i++)
        v[i] = &st->groups[i];
    return v;
}

/* v in the order a server keeps its groups: the configured ones in the config's order,
 * then the others as loaded (etcd lists its keys by name), so that a state moved from a
 * file to etcd and back is the same file. */
static void state__config_order(const frugal_config_t *cfg, const group_t **v, size_t n) {
    size_t placed = 0;
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        for (size_t j = placed; j < n; j++) {
            if (strcmp(v[j]->spec.id, cfg->node_groups[i].spec.id) != 0)
                continue;
            const group_t *g = v[j];
            memmove(&v[placed + 1], &v[placed], (j - placed) * sizeof(*v));
            v[placed++] = g;
            break;
        }
    }
}

/* A state that does not exist is refused, not exported as empty: imported, that would
 * wipe every group's target and instances (a volume not mounted, a wrong path). */
static int state__export(const frugal_config_t *cfg, state_backend_t *b, const char *out,
                         frugal_err_t *err) {
    /* Written over the configured state file, the export would replace a live state
     * behind its server's back. */
    struct stat so, ss;
    if (out != NULL && cfg->state_file != NULL && stat(out, &so) == 0 &&
        stat(cfg->state_file, &ss) == 0 && so.st_dev == ss.st_dev && so.st_ino == ss.st_ino)
        return frugal_err_set(err, FRUGAL_EINVAL,
                              "%s is the configured state file itself: export to another path "
                              "(nothing was written)",
                              out);
    state_t st;
    int rc = state_backend_load(b, &st, err);
    if (rc == FRUGAL_ENOTFOUND)
        rc = frugal_err_set(err, FRUGAL_ENOTFOUND,
                            "%s does not exist: nothing to export (nothing was written)",
                            state_backend_describe(b));
    if (rc != 0)
        return rc;
    const group_t **view = state__view(&st);
    char *text = NULL;
    size_t len = 0;
    if (view != NULL)
        state__config_order(cfg, view, st.count);
    if (view == NULL)
        rc = frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    else if ((rc = state_format(view, st.count, &text, &len, err)) == 0) {
        if (out != NULL)
            rc = state_write_file(out, text, len, err);
        else if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0)
            rc = frugal_err_set(err, FRUGAL_EIO, "cannot write to stdout: %s", strerror(errno));
    }
    if (rc == 0)
        fprintf(stderr, "exported %zu node groups from %s\n", st.count, state_backend_describe(b));
    free(text);
    free(view);
    state_free(&st);
    return rc;
}

static int state__import(state_backend_t *b, const char *in, frugal_err_t *err) {
    state_t st, cur;
    int rc = state_load(in, &st, err);
    if (rc != 0)
        return rc;
    /* A running server must not overwrite the import (the file backend's lock). */
    if ((rc = state_backend_exclude(b, err)) != 0) {
        state_free(&st);
        return rc;
    }
    rc = state_backend_load(b, &cur, err);
    if (rc == 0) {
        rc = frugal_err_set(err, FRUGAL_EEXISTS,
                            "%s already holds a state (%zu node groups): import only into an "
                            "empty one (nothing was written)",
                            state_backend_describe(b), cur.count);
        state_free(&cur);
    } else if (rc == FRUGAL_ENOTFOUND) {
        const group_t **view = state__view(&st);
        state_commit_t c = {.view = view,
                            .count = st.count,
                            .changed = view,
                            .changed_count = st.count,
                            .import = true};
        rc = view == NULL ? frugal_err_set(err, FRUGAL_ENOMEM, "out of memory")
                          : state_backend_commit(b, &c, err);
        if (rc == 0)
            fprintf(stderr, "imported %zu node groups into %s\n", st.count,
                    state_backend_describe(b));
        free(view);
    }
    state_free(&st);
    return rc;
}

/* The state a first `frugal serve --init-state` writes: the cluster opened on an empty
 * state and closed again, without serving. Refused, with nothing written, when the state
 * exists (or cannot be read). */
static int state__init(const frugal_config_t *cfg, state_backend_t *b, frugal_err_t *err) {
    state_t cur;
    int rc = state_backend_exclude(b, err);
    if (rc == 0 && (rc = state_backend_load(b, &cur, err)) == 0) {
        rc = frugal_err_set(err, FRUGAL_EEXISTS,
                            "%s already holds a state (%zu node groups): it is initialised "
                            "(nothing was written)",
                            state_backend_describe(b), cur.count);
        state_free(&cur);
    }
    if (rc != FRUGAL_ENOTFOUND)
        return rc;
    provider_t *provider = NULL;
    cluster_t *cluster = NULL;
    if ((rc = provider_create(cfg, &provider, err)) == 0 &&
        (rc = cluster_open(cfg, provider, b, &cluster, err)) == 0) {
        fprintf(stderr, "initialised %s with %zu node groups\n", state_backend_describe(b),
                cluster_groups_count(cluster));
        cluster_close(cluster);
    }
    provider_destroy(provider);
    return rc;
}

int cmd_state(int argc, char **argv) {
    const char *path = NULL, *out = NULL, *in = NULL, *verb = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return state_usage(stdout, 0);
        if ((strcmp(a, "-c") == 0 || strcmp(a, "-o") == 0) && i + 1 < argc) {
            const char **dst = a[1] == 'c' ? &path : &out;
            if (*dst != NULL) {
                fprintf(stderr, "frugal state: %s given twice\n", a);
                return state_usage(stderr, 2);
            }
            *dst = argv[++i];
        } else if (a[0] == '-') {
            fprintf(stderr, "frugal state: unexpected option \"%s\"\n", a);
            return state_usage(stderr, 2);
        } else if (verb == NULL) {
            verb = a;
        } else if (in == NULL) {
            in = a;
        } else {
            fprintf(stderr, "frugal state: unexpected argument \"%s\"\n", a);
            return state_usage(stderr, 2);
        }
    }
    bool init = verb != NULL && strcmp(verb, "init") == 0;
    bool export = verb != NULL && strcmp(verb, "export") == 0;
    bool import = verb != NULL && strcmp(verb, "import") == 0;
    if (path == NULL || (!init && !export && !import) || (!import && in != NULL) ||
        (!export && out != NULL) || (import && in == NULL))
        return state_usage(stderr, 2);
    frugal_config_t *cfg = NULL;
    if (cmd_load_config(path, &cfg) != 0)
        return 1;
    grpc_init();
    frugal_err_t err = {0};
    state_backend_t *b = NULL;
    int rc = store_open(cfg, &b, &err);
    if (rc == 0 && b == NULL)
        rc = frugal_err_set(&err, FRUGAL_EINVAL, "%s: no state configured (state or state_file)",
                            path);
    if (rc == 0)
        rc = init     ? state__init(cfg, b, &err)
             : export ? state__export(cfg, b, out, &err)
                      : state__import(b, in, &err);
    if (rc != 0)
        fprintf(stderr, "frugal state %s: %s\n", verb, err.msg);
    state_backend_destroy(b);
    grpc_shutdown_blocking();
    config_free(cfg);
    return rc == 0 ? 0 : 1;
}
