#include "pem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pem_read_file(const char *path, char **out, frugal_err_t *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return frugal_err_set(err, FRUGAL_EIO, "cannot open %s: %s", path, strerror(errno));
    char *buf = malloc(PEM_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        return frugal_err_set(err, FRUGAL_ENOMEM, "%s: out of memory", path);
    }
    size_t len = fread(buf, 1, PEM_FILE_MAX + 1, f);
    int rc = 0;
    if (ferror(f))
        rc = frugal_err_set(err, FRUGAL_EIO, "cannot read %s: %s", path, strerror(errno));
    else if (len > PEM_FILE_MAX)
        rc = frugal_err_set(err, FRUGAL_EINVAL, "%s: larger than %u bytes, not a PEM file", path,
                            PEM_FILE_MAX);
    else if (len == 0)
        rc = frugal_err_set(err, FRUGAL_EINVAL, "%s: empty file", path);
    fclose(f);
    if (rc != 0) {
        free(buf);
        return rc;
    }
    buf[len] = '\0';
    char *shrunk = realloc(buf, len + 1);
    *out = shrunk != NULL ? shrunk : buf;
    return 0;
}
