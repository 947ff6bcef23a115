/* Unit tests of server/cli/config_summary.c: `frugal check`'s one-screen summary names
 * the listeners with their security, the state, the groups (at most 12, then a count)
 * and the autoprovisioning limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "config_summary.h"

static frugal_config_t *load_ok(const char *text) {
    frugal_config_t *cfg = NULL;
    char *errors = NULL;
    int rc = config_load_string("t.yaml", text, strlen(text), &cfg, &errors);
    if (rc != 0)
        fprintf(stderr, "unexpected errors:\n%s", errors != NULL ? errors : "(none)\n");
    assert_int_equal(rc, 0);
    return cfg;
}

/* The summary of cfg, in buf. */
static void summary_of(const frugal_config_t *cfg, char *buf, size_t size) {
    memset(buf, 0, size);
    FILE *f = fmemopen(buf, size - 1, "w");
    assert_non_null(f);
    config_summary_print(cfg, f);
    fclose(f);
}

static size_t count_lines(const char *s) {
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_full_config(void **state) {
    (void)state;
    frugal_config_t *cfg = load_ok("listen:\n"
                                   "  - address: 127.0.0.1:8086\n"
                                   "  - address: 0.0.0.0:8443\n"
                                   "    tls: {cert: /etc/frugal/tls/tls.crt, key: "
                                   "/etc/frugal/tls/tls.key, client_ca: /etc/frugal/tls/ca.crt}\n"
                                   "state_file: /var/lib/frugal/state.yaml\n"
                                   "ops_listen: 0.0.0.0:8087\n"
                                   "limits: {receive_timeout: 10s, idle_timeout: 0s}\n"
                                   "node_groups:\n"
                                   "  - {id: pool-a, machine_type: n1-standard-2, max_size: 10}\n"
                                   "autoprovisioning:\n"
                                   "  enabled: true\n"
                                   "  limits: {max_cpu: 64, max_memory: 256Gi}\n");
    char buf[4096];
    summary_of(cfg, buf, sizeof(buf));
    assert_true(strncmp(buf, "t.yaml: OK\n", 11) == 0);
    assert_non_null(strstr(buf, "0.0.0.0:8443 (TLS, client certificates required)"));
    assert_non_null(strstr(buf, "pool-a"));
    assert_non_null(strstr(buf, "/var/lib/frugal/state.yaml"));
    assert_non_null(strstr(buf, "limits cpu 0..64, memory 0..256Gi"));
    assert_non_null(
        strstr(buf, "ops_listen        0.0.0.0:8087 (plain HTTP: /healthz, /readyz, /metrics)\n"));
    assert_non_null(strstr(buf, "receive timeout 10s, idle timeout off\n"));
    assert_non_null(strstr(buf, "(200 more from NewNodeGroup)"));
    assert_true(count_lines(buf) <= 24);
    config_free(cfg);
}

/* An exec provider: the names of the hook's params and files (never their values), and
 * reconciliation. */
static void test_exec_provider(void **state) {
    (void)state;
    char secret[] = "/tmp/frugal-summary-XXXXXX";
    int fd = mkstemp(secret);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "s3cret", 6), 6);
    close(fd);
    char text[1024];
    snprintf(text, sizeof(text),
             "provider:\n"
             "  kind: exec\n"
             "  command: /bin/true\n"
             "  params: {image: debian-12, network: br0}\n"
             "  env_from_files: {API_TOKEN: %s}\n"
             "  reconcile_interval: 1m\n"
             "  reconcile_delete_unknown: true\n"
             "node_groups:\n"
             "  - {id: pool-a, machine_type: n1-standard-2, max_size: 10}\n",
             secret);
    frugal_config_t *cfg = load_ok(text);
    char buf[4096];
    summary_of(cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "hook inputs       params image, network; files API_TOKEN\n"));
    assert_null(strstr(buf, "s3cret"));
    assert_null(strstr(buf, "debian-12"));
    assert_non_null(strstr(buf, "reconcile         every 1m; a running machine missing from 2 "
                                "lists is replaced; machines frugal does not know are deleted\n"));
    config_free(cfg);
    unlink(secret);
    cfg = load_ok("provider: {kind: exec, command: /bin/true}\n"
                  "node_groups:\n"
                  "  - {id: pool-a, machine_type: n1-standard-2}\n");
    summary_of(cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "hook inputs       params none; files none\n"));
    assert_non_null(strstr(buf, "reconcile         off\n"));
    config_free(cfg);
}

/* Beyond 12 groups the summary stays one screen: the rest is a count. */
static void test_many_groups(void **state) {
    (void)state;
    char text[4096] = "node_groups:\n";
    for (int i = 0; i < 15; i++) {
        size_t n = strlen(text);
        snprintf(text + n, sizeof(text) - n,
                 "  - {id: g%02d, machine_type: n1-standard-1, max_size: 1}\n", i);
    }
    frugal_config_t *cfg = load_ok(text);
    char buf[8192];
    summary_of(cfg, buf, sizeof(buf));
    assert_non_null(strstr(buf, "g09"));
    assert_null(strstr(buf, "g10"));
    assert_non_null(strstr(buf, "... and 5 more"));
    assert_true(count_lines(buf) <= 24);
    config_free(cfg);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_config),
        cmocka_unit_test(test_exec_provider),
        cmocka_unit_test(test_many_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
