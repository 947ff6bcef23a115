/* The single-writer lock of a state file: while one `frugal serve` holds it, no other
 * process can serve the same state (two writers would each acknowledge changes the other
 * then overwrites).
 *
 * The lock is an exclusive flock on PATH.lock, not on PATH itself: every save renames a
 * new file over PATH, so a lock on PATH's inode would not outlive the first write. The
 * holder writes its pid into the lock file so that a refused process can name it. A state
 * file that is a symbolic link is refused (FRUGAL_EINVAL): the lock of the link's name is
 * not the lock of its target's. Deleting PATH.lock while a server holds it defeats the
 * lock: it is documented as a file to leave alone. */
#ifndef FRUGAL_STATE_LOCK_H
#define FRUGAL_STATE_LOCK_H

#include "errors.h"

/* Take the lock of the state file at path without waiting. On 0, *fd holds it until
 * state_lock_release. FRUGAL_EEXISTS naming the holder's pid when another process holds
 * it, FRUGAL_EIO naming the lock file and errno when it cannot be opened; *fd is -1 on
 * failure. */
int state_lock_acquire(const char *path, int *fd, frugal_err_t *err);

/* Release a lock taken by state_lock_acquire (fd < 0 is a no-op). The lock file stays:
 * removing it would let a third process lock a new file while a second still waits. */
void state_lock_release(int fd);

#endif
