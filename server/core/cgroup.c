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

cgroup_limit_t cgroup_memory_limit(const char *root, int64_t *bytes, char *file, size_t size) {
    static const char *const candidates[] = {"memory.max", "memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
        snprintf(file, size, "%s/%s", root, candidates[i]);
        /* a file that is absent means this hierarchy is not the one in use */
        if (access(file, F_OK) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof(path), "%s", file);
        return cgroup__read(path, bytes, file, size);
    }
    file[0] = '\0';
    return CGROUP_LIMIT_NONE;
}

cgroup_limit_t cgroup_memory_budget(const char *root, int64_t default_bytes, int64_t *budget,
                                    char *why, size_t size) {
    char file[512];
    int64_t limit = 0;
    cgroup_limit_t r = cgroup_memory_limit(root, &limit, file, sizeof(file));
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
