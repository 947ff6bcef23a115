#include "file_version.h"

#include <string.h>

int file_version_of(const char *path, file_version_t *v) {
    struct stat st;
    memset(v, 0, sizeof(*v));
    if (stat(path, &st) != 0)
        return -1;
    v->dev = st.st_dev;
    v->ino = st.st_ino;
    v->size = st.st_size;
    v->mtime = st.st_mtim;
    v->ctime = st.st_ctim;
    return 0;
}

bool file_version_equal(const file_version_t *a, const file_version_t *b) {
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
           a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}
