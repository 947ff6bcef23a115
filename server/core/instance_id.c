#include "instance_id.h"

#include <string.h>

const char *instance_id_group(const char *id, size_t *len) {
    size_t scheme = sizeof(INSTANCE_ID_SCHEME) - 1;
    if (id == NULL || strncmp(id, INSTANCE_ID_SCHEME, scheme) != 0)
        return NULL;
    const char *group = id + scheme, *slash = strchr(group, '/');
    if (slash == NULL)
        return NULL;
    *len = (size_t)(slash - group);
    return group;
}
