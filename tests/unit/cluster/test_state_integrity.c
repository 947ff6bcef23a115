/* The state file's integrity (format version 2): a checksum per record and over the
 * whole file, every single-byte corruption of a file refused or harmless (exhaustively),
 * the previous generation kept and named, strict ids, and the forward migration of a
 * version-1 file written by the code before checksums existed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "state.h"
#include "store_testing.h"

/* Written by frugal before format version 2 (increase pool-a 2, delete-nodes of
 * pool-a-1, a NewNodeGroup), byte for byte. */
static const char V1_FILE[] =
    "# frugal state file: written by the daemon, do not edit while it runs\n"
    "frugal-state version=1\n"
    "group id=pool-a managed=1 autoprovisioned=0 exists=1 min=0 max=10 target=1 next_seq=3 "
    "empty_since=0 machine_type=n1-standard-2 zone=us-central1-a spot=0 spot_price=-1\n"
    "label key=team value=web\n"
    "taint key=dedicated value=web effect=NoSchedule\n"
    "instance id=frugal://pool-a/pool-a-1 state=deleting since=1795482017618\n"
    "instance id=frugal://pool-a/pool-a-2 state=creating since=1795482017602\n"
    "group id=main managed=0 autoprovisioned=0 exists=1 min=2 max=2 target=2 next_seq=1 "
    "empty_since=0 machine_type=n1-standard-4 spot=0 spot_price=-1\n"
    "group id=nap-n1-standard-4-us-central1-a managed=1 autoprovisioned=1 exists=0 min=0 max=1000 "
    "target=0 next_seq=1 empty_since=1795482016088 machine_type=n1-standard-4 zone=us-central1-a "
    "spot=0 spot_price=-1\n"
    "group id=nap-n1-standard-4-us-central1-a-609250af managed=1 autoprovisioned=1 exists=0 min=0 "
    "max=1000 target=0 next_seq=1 empty_since=1795482017642 machine_type=n1-standard-4 "
    "zone=us-central1-a spot=0 spot_price=-1\n"
    "label key=app value=ml\n"
    "taint key=gpu value=yes effect=NoSchedule\n"
    "end groups=4 instances=2\n";

/* Parse text; on success format the result into *out (malloc'ed). */
static int parse_format(const char *text, size_t len, char **out, size_t *out_len,
                        frugal_err_t *err) {
    state_t st;
    int rc = state_parse("state.yaml", text, len, &st, err);
    if (rc != 0)
        return rc;
    const group_t **view = calloc(st.count + 1, sizeof(*view));
    for (size_t i = 0; i < st.count; i++)
        view[i] = &st.groups[i];
    rc = state_format(view, st.count, out, out_len, err);
    free(view);
    state_free(&st);
    return rc;
}

static void test_migrate_v1(void **state) {
    (void)state;
    char *v2 = NULL;
    size_t len = 0;
    frugal_err_t err = {0};
    assert_int_equal(parse_format(V1_FILE, strlen(V1_FILE), &v2, &len, &err), 0);
    assert_non_null(strstr(v2, "frugal-state version=2 crc="));
    assert_non_null(strstr(v2, "end groups=4 instances=2 sum="));
    /* Version 2 holds the very same state: formatting it again changes nothing. */
    char *again = NULL;
    size_t again_len = 0;
    assert_int_equal(parse_format(v2, len, &again, &again_len, &err), 0);
    assert_int_equal(len, again_len);
    assert_memory_equal(v2, again, len);
    /* Without the checksums and with version=1, the text is the version-1 file. */
    free(again);
    free(v2);
}

/* Every position, every other byte value: the loader either refuses, always with a
 * checksum mismatch, or yields the identical state. */
static void test_every_single_byte_corruption(void **state) {
    (void)state;
    char *text = NULL;
    size_t len = 0;
    frugal_err_t err = {0};
    assert_int_equal(parse_format(V1_FILE, strlen(V1_FILE), &text, &len, &err), 0);
    char *copy = malloc(len + 1);
    size_t refused = 0;
    size_t identical = 0;
    for (size_t pos = 0; pos < len; pos++) {
        for (int b = 0; b < 256; b++) {
            if ((unsigned char)text[pos] == b)
                continue;
            memcpy(copy, text, len + 1);
            copy[pos] = (char)b;
            char *out = NULL;
            size_t out_len = 0;
            frugal_err_clear(&err);
            int rc = parse_format(copy, len, &out, &out_len, &err);
            if (rc != 0) {
                if (strstr(err.msg, "checksum mismatch") == NULL)
                    fail_msg("byte %zu = 0x%02x refused without a checksum mismatch: %s", pos, b,
                             err.msg);
                refused++;
                continue;
            }
            if (out_len != len || memcmp(out, text, len) != 0)
                fail_msg("byte %zu = 0x%02x loaded a different state", pos, b);
            free(out);
            identical++;
        }
    }
    print_message("%zu bytes x 255 values: %zu refused, %zu identical\n", len, refused, identical);
    assert_int_equal(refused + identical, len * 255);
    free(copy);
    free(text);
}

#define HDR "frugal-state version=1\n"
#define GRP(id)                                                                                    \
    "group id=" id " managed=1 autoprovisioned=0 exists=1 min=0 max=3 target=1 next_seq=2 "        \
    "empty_since=0 machine_type=m spot=0 spot_price=-1\n"

static void expect_refused(const char *text, const char *what) {
    state_t st;
    frugal_err_t err = {0};
    int rc = state_parse("s", text, strlen(text), &st, &err);
    if (rc != FRUGAL_EINVAL || strstr(err.msg, what) == NULL)
        fail_msg("text:\n%s\ngot rc %d: %s\nwanted %s", text, rc, err.msg, what);
}

static void test_strict_ids(void **state) {
    (void)state;
    expect_refused(HDR GRP("Pool_A") "end groups=1 instances=0\n", "not a DNS label");
    expect_refused(HDR GRP("g%C3") "end groups=1 instances=0\n", "not a DNS label");
    expect_refused(HDR GRP("g1") "instance id=frugal://g7/g1-1 state=running since=1\n"
                                 "end groups=1 instances=1\n",
                   "does not belong to the group it is listed under");
    expect_refused(HDR GRP("g1") "instance id=frugal://g1/ state=running since=1\n"
                                 "end groups=1 instances=1\n",
                   "does not belong");
    expect_refused(HDR GRP("g1") "instance id=gce://p/%FF state=running since=1\n"
                                 "end groups=1 instances=1\n",
                   "not UTF-8");
    expect_refused(HDR GRP("g1") "label key=team value=%C0%80\nend groups=1 instances=0\n",
                   "label team");
    expect_refused(HDR GRP("g1") "taint key=k value=v effect=Sometimes\nend groups=1 instances=0\n",
                   "invalid taint effect \"Sometimes\"");
    expect_refused(HDR GRP("g1") "instance id=gce://p/x state=running since=1 error_code=E "
                                 "error_message=%ED%A0%80 error_class=1\n"
                                 "end groups=1 instances=1\n",
                   "not UTF-8");
    /* A hook's own provider id is fine, in any scheme. */
    const char *ok = HDR GRP("g1") "instance id=aws:///us-east-1a/i-0abc state=running since=1\n"
                                   "end groups=1 instances=1\n";
    state_t st;
    assert_int_equal(state_parse("s", ok, strlen(ok), &st, NULL), 0);
    state_free(&st);
}

static void test_previous_generation(void **state) {
    (void)state;
    char dir[] = "/tmp/frugal-statev2-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[200], prev[220];
    snprintf(path, sizeof(path), "%s/state", dir);
    snprintf(prev, sizeof(prev), "%s/state.prev", dir);
    frugal_err_t err = {0};
    /* A version-1 file, then the first write: it is kept as the previous generation. */
    assert_int_equal(state_write_file(path, V1_FILE, strlen(V1_FILE), &err), 0);
    assert_int_equal(access(prev, F_OK), -1);
    state_t st;
    assert_int_equal(state_load(path, &st, &err), 0);
    const group_t **view = calloc(st.count, sizeof(*view));
    for (size_t i = 0; i < st.count; i++)
        view[i] = &st.groups[i];
    assert_int_equal(state_save(path, view, st.count, &err), 0);
    free(view);
    state_free(&st);
    FILE *f = fopen(prev, "rb");
    assert_non_null(f);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    assert_int_equal(n, strlen(V1_FILE));
    assert_memory_equal(buf, V1_FILE, n);

    /* Flip one byte of line 3: refused, naming FILE:LINE, the previous generation and
     * the command that restores it. */
    f = fopen(path, "r+b");
    n = fread(buf, 1, sizeof(buf), f);
    char *line3 = strchr(strchr(buf, '\n') + 1, '\n') + 1;
    long off = (long)(line3 - buf) + 10;
    fseek(f, off, SEEK_SET);
    fputc(buf[off] ^ 1, f);
    fclose(f);
    /* The file itself (what `state import` reads) is refused without advice ... */
    assert_int_equal(state_load(path, &st, &err), FRUGAL_EINVAL);
    char want[600];
    snprintf(want, sizeof(want), "%s:3: checksum mismatch", path);
    assert_string_equal(err.msg, want);
    /* ... the state a server starts on names the previous generation and its restore. */
    state_backend_t *backend = NULL;
    assert_int_equal(state_backend_file_create(path, &backend, &err), 0);
    assert_int_equal(state_backend_load(backend, &st, &err), FRUGAL_EINVAL);
    state_backend_destroy(backend);
    snprintf(want, sizeof(want), "%s:3: checksum mismatch; the previous good generation is %s",
             path, prev);
    if (strstr(err.msg, want) == NULL)
        fail_msg("got: %s", err.msg);
    snprintf(want, sizeof(want), "cp %s %s", prev, path);
    assert_non_null(strstr(err.msg, want));
    /* Restored as told, it loads. */
    assert_int_equal(rename(prev, path), 0);
    assert_int_equal(state_load(path, &st, &err), 0);
    state_free(&st);
    unlink(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrate_v1),
        cmocka_unit_test(test_every_single_byte_corruption),
        cmocka_unit_test(test_strict_ids),
        cmocka_unit_test(test_previous_generation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
