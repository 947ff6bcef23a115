/* The memory limit of the cgroup frugal runs in (a container's limits.memory, a systemd
 * unit's MemoryMax), read from the cgroup filesystem: cgroup v2's memory.max, else cgroup
 * v1's memory.limit_in_bytes. Each is looked up first in the process's own cgroup (its
 * path in /proc/self/cgroup, under the mount), then at the root of the mount, which is
 * the container's own cgroup when the runtime gives it a cgroup namespace or bind-mounts
 * it there. */
#ifndef FRUGAL_CGROUP_H
#define FRUGAL_CGROUP_H

#include <stddef.h>
#include <stdint.h>

typedef enum cgroup_limit {
    CGROUP_LIMIT_SET,        /* *bytes holds the limit */
    CGROUP_LIMIT_NONE,       /* no cgroup memory file, or it says unlimited */
    CGROUP_LIMIT_UNREADABLE, /* a limit file exists but cannot be read or parsed */
} cgroup_limit_t;

/* Where the cgroup filesystem is mounted: $FRUGAL_CGROUP_ROOT when set (for tests
 * only), else /sys/fs/cgroup. */
const char *cgroup_root(void);

/* The file naming this process's cgroups: /proc/self/cgroup, or NULL when
 * $FRUGAL_CGROUP_ROOT replaces the mount (a test's tree knows nothing of this process). */
const char *cgroup_self(void);

/* Read the memory limit under root, for the process whose cgroups self lists (NULL:
 * root's files only). *bytes is set with CGROUP_LIMIT_SET; file (size bytes) gets the
 * path read, and with CGROUP_LIMIT_UNREADABLE the reason too. */
cgroup_limit_t cgroup_memory_limit(const char *root, const char *self, int64_t *bytes, char *file,
                                   size_t size);

/* The memory budget when limits.memory is not set: 75 % of the cgroup's limit when there
 * is one, else default_bytes (also when the limit cannot be read). why says which and
 * why, for the log. Returns what the limit lookup found. */
cgroup_limit_t cgroup_memory_budget(const char *root, const char *self, int64_t default_bytes,
                                    int64_t *budget, char *why, size_t size);

#endif
