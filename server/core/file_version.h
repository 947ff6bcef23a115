/* What identifies one version of a file, to notice that it changed without reading it:
 * replacing it (a rename, or the symlink swap of a Kubernetes ConfigMap or Secret
 * volume) changes the inode, rewriting it changes the size or the modification time, and
 * a chmod or chown its status change time (a file that could not be read is read again
 * once its permissions are fixed). */
#ifndef FRUGAL_FILE_VERSION_H
#define FRUGAL_FILE_VERSION_H

#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>

typedef struct file_version {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    struct timespec ctime;
} file_version_t;

/* The version of the file at path (symlinks followed) into *v: 0, or -1 when it cannot be
 * stat'ed (*v zeroed). */
int file_version_of(const char *path, file_version_t *v);

/* Whether a and b are the same version. */
bool file_version_equal(const file_version_t *a, const file_version_t *b);

#endif
