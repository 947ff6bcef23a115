#include "state_lock.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

/* Whether fd is still the file at lock: one deleted (or replaced) between our open and
 * our flock is a lock nobody else will ever look at. */
static bool state_lock__current(int fd, const char *lock) {
    struct stat held, named;
    return fstat(fd, &held) == 0 && stat(lock, &named) == 0 && held.st_dev == named.st_dev &&
           held.st_ino == named.st_ino;
}

/* A state file that is a symbolic link is refused: each save renames a new file over
 * PATH, which would replace the link, and the lock of PATH would not be the lock of the
 * link's target that another server may name. */
static int state_lock__refuse_link(const char *path, frugal_err_t *err) {
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
        return 0;
    char target[512];
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    target[n > 0 ? (size_t)n : 0] = '\0';
    return frugal_err_set(err, FRUGAL_EINVAL,
                          "state file %s is a symbolic link (to %s): every save replaces the "
                          "file, which would replace the link, and two names of one file would "
                          "not share a lock: give the file's own path",
                          path, target);
}

int state_lock_acquire(const char *path, int *fd, frugal_err_t *err) {
    *fd = -1;
    int rc = state_lock__refuse_link(path, err);
    if (rc != 0)
        return rc;
    size_t n = strlen(path) + sizeof(".lock");
    char *lock = malloc(n);
    if (lock == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    snprintf(lock, n, "%s.lock", path);
    int f = -1;
    for (int attempt = 0; attempt < 3 && f < 0; attempt++) {
        if ((f = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0) {
            rc = frugal_err_set(err, FRUGAL_EIO, "cannot open state lock %s: %s", lock,
                                strerror(errno));
            break;
        }
        if (flock(f, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            char pid[32] = "";
            ssize_t got = e == EWOULDBLOCK ? pread(f, pid, sizeof(pid) - 1, 0) : -1;
            pid[got > 0 ? (size_t)got : 0] = '\0';
            pid[strcspn(pid, "\n")] = '\0';
            rc = e == EWOULDBLOCK
                     ? frugal_err_set(err, FRUGAL_EEXISTS,
                                      "state file %s is in use by another frugal serve (pid %s, "
                                      "lock %s): only one process may serve a state file",
                                      path, pid[0] ? pid : "unknown", lock)
                     : frugal_err_set(err, FRUGAL_EIO, "cannot lock %s: %s", lock, strerror(e));
            close(f);
            f = -1;
            break;
        }
        if (!state_lock__current(f, lock)) {
            close(f);
            f = -1;
            rc = frugal_err_set(err, FRUGAL_EIO,
                                "cannot lock %s: it is deleted or replaced "
                                "as it is locked, again and again",
                                lock);
        }
    }
    if (f < 0) {
        free(lock);
        return rc;
    }
    char pid[32];
    int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(f, 0) != 0 || pwrite(f, pid, (size_t)len, 0) != len)
        log_warn("cannot record the pid in %s: %s", lock, strerror(errno));
    free(lock);
    *fd = f;
    return 0;
}

void state_lock_release(int fd) {
    if (fd >= 0)
        close(fd);
}
