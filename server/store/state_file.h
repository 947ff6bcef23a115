/* The state file: state.h's text read and durably written (tmp, fsync, rename, fsync of
 * the directory, the previous generation kept as PATH.prev), and the file backend that
 * keeps a cluster's state in it, with state_lock.c's flock as its single-writer lock. */
#ifndef FRUGAL_STATE_FILE_H
#define FRUGAL_STATE_FILE_H

#include <stddef.h>

#include "errors.h"
#include "group.h"
#include "state.h"
#include "state_backend.h"

/* The previous generation of the file, kept by every write: PATH.prev. */
#define STATE_PREVIOUS_SUFFIX ".prev"

/* Read and parse path. FRUGAL_ENOTFOUND when it does not exist, FRUGAL_EIO when it
 * cannot be read, else as state_parse. (The file backend's load adds to a checksum
 * mismatch where the previous generation is and how to restore it.) */
int state_load(const char *path, state_t *out, frugal_err_t *err);

/* Durably replace path with the serialisation of groups: write PATH.tmp, fsync it,
 * rename it over path, fsync the directory. FRUGAL_EIO (naming the step and errno)
 * leaves path as it was. */
int state_save(const char *path, const group_t *const *groups, size_t n, frugal_err_t *err);

/* The same for text already formatted. */
int state_write_file(const char *path, const char *data, size_t len, frugal_err_t *err);

/* The file backend on path. Nothing is read or locked before load or lock. */
int state_backend_file_create(const char *path, state_backend_t **out, frugal_err_t *err);

#endif
