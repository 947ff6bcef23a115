#include "state_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "log.h"

int state_lock_acquire(const char *path, int *fd, frugal_err_t *err) {
    *fd = -1;
    size_t n = strlen(path) + sizeof(".lock");
    char *lock = malloc(n);
    if (lock == NULL)
        return frugal_err_set(err, FRUGAL_ENOMEM, "out of memory");
    snprintf(lock, n, "%s.lock", path);
    int f = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (f < 0) {
        int rc =
            frugal_err_set(err, FRUGAL_EIO, "cannot open state lock %s: %s", lock, strerror(errno));
        free(lock);
        return rc;
    }
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char pid[32] = "";
        ssize_t got = e == EWOULDBLOCK ? pread(f, pid, sizeof(pid) - 1, 0) : -1;
        pid[got > 0 ? (size_t)got : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        int rc = e == EWOULDBLOCK
                     ? frugal_err_set(err, FRUGAL_EEXISTS,
                                      "state file %s is in use by another frugal serve (pid %s, "
                                      "lock %s): only one process may serve a state file",
                                      path, pid[0] ? pid : "unknown", lock)
                     : frugal_err_set(err, FRUGAL_EIO, "cannot lock %s: %s", lock, strerror(e));
        close(f);
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
