#include "cgroup.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* cgroup v1 writes "no limit" as the largest page-aligned int64 (9223372036854771712);
 * anything from 2^62 up is treated as unlimited. */
#define CGROUP_UNLIMITED_FROM ((int64_t)1 << 62)

const char *cgroup_root(void) {
    const char *root = getenv("FRUGAL_CGROUP_ROOT");
    return root != NULL && root[0] != '\0' ? root : "/sys/fs/cgroup";
}

/* Parse the first line of path: "max" (v2) or a byte count. */
static cgroup_limit_t cgroup__read(const char *path, int64_t *bytes, char *why, size_t size) {
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(why, size, "%s: %s", path, strerror(errno));
        return CGROUP_LIMIT_UNREADABLE;
    }
    char line[64] = "";
    bool ok = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    if (ok && strcmp(line, "max") == 0)
        return CGROUP_LIMIT_NONE;
    char *end = NULL;
    errno = 0;
    long long v = ok ? strtoll(line, &end, 10) : 0;
    if (!ok || end == line || *end != '\0' || errno != 0 || v <= 0) {
        snprintf(why, size, "%s: not a byte count: \"%.32s\"", path, line);
        return CGROUP_LIMIT_UNREADABLE;
    }
    if (v >= CGROUP_UNLIMITED_FROM)
        return CGROUP_LIMIT_NONE;
    *bytes = (int64_t)v;
    return CGROUP_LIMIT_SET;
}

const char *cgroup_self(void) {
    const char *root = getenv("FRUGAL_CGROUP_ROOT");
    return root != NULL && root[0] != '\0' ? NULL : "/proc/self/cgroup";
}

/* The process's path in the v2 hierarchy ("0::PATH") or in v1's memory controller
 * ("N:...,memory,...:PATH") from self, into path; false when self lists none. */
static bool cgroup__self_path(const char *self, bool v2, char *path, size_t size) {
    FILE *f = self != NULL ? fopen(self, "r") : NULL;
    if (f == NULL)
        return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        char *controllers = strchr(line, ':');
        char *p = controllers != NULL ? strchr(controllers + 1, ':') : NULL;
        if (p == NULL)
            continue;
        *p++ = '\0';
        *controllers++ = '\0';
        if (v2) {
            found = strcmp(line, "0") == 0 && controllers[0] == '\0';
        } else {
            char *save = NULL;
            for (char *c = strtok_r(controllers, ",", &save); c != NULL && !found;
                 c = strtok_r(NULL, ",", &save))
                found = strcmp(c, "memory") == 0;
        }
        if (found)
            snprintf(path, size, "%s", strcmp(p, "/") == 0 ? "" : p);
    }
    fclose(f);
    return found && path[0] != '\0';
}

cgroup_limit_t cgroup_memory_limit(const char *root, const char *self, int64_t *bytes, char *file,
                                   size_t size) {
    /* v2 before v1; in each, the process's own cgroup before the root of the mount */
    static const struct {
        bool v2;
        const char *dir, *name;
    } hierarchies[] = {{true, "", "memory.max"}, {false, "/memory", "memory.limit_in_bytes"}};
    for (size_t i = 0; i < sizeof(hierarchies) / sizeof(hierarchies[0]); i++) {
        char own[512] = "";
        bool has_own = cgroup__self_path(self, hierarchies[i].v2, own, sizeof(own));
        for (int at_root = has_own ? 0 : 1; at_root <= 1; at_root++) {
            snprintf(file, size, "%s%s%s/%s", root, hierarchies[i].dir, at_root ? "" : own,
                     hierarchies[i].name);
            /* a file that is absent means this hierarchy (or cgroup) is not the one in use */
            if (access(file, F_OK) != 0)
                continue;
            char path[1024];
            snprintf(path, sizeof(path), "%s", file);
            return cgroup__read(path, bytes, file, size);
        }
    }
    file[0] = '\0';
    return CGROUP_LIMIT_NONE;
}

cgroup_limit_t cgroup_memory_budget(const char *root, const char *self, int64_t default_bytes,
                                    int64_t *budget, char *why, size_t size) {
    char file[1024];
    int64_t limit = 0;
    cgroup_limit_t r = cgroup_memory_limit(root, self, &limit, file, sizeof(file));
    switch (r) {
    case CGROUP_LIMIT_SET:
        *budget = limit / 4 * 3;
        snprintf(why, size, "75%% of the cgroup memory limit %" PRId64 " bytes (%s)", limit, file);
        break;
    case CGROUP_LIMIT_NONE:
        *budget = default_bytes;
        snprintf(why, size, "the default, 2 x max_message_bytes + 64Mi: no cgroup memory limit");
        break;
    case CGROUP_LIMIT_UNREADABLE:
        *budget = default_bytes;
        snprintf(why, size,
                 "the default, 2 x max_message_bytes + 64Mi: the cgroup memory limit cannot be "
                 "read (%s)",
                 file);
        break;
    }
    return r;
}
