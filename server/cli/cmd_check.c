/* `frugal check -c FILE`: validate a config without starting anything. Exit 0 with the
 * one-screen summary on stdout, 1 with every `FILE:LINE:COL: message` line on stderr,
 * 2 on a usage error. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "config_summary.h"
#include "log.h"
#include "pem.h"
#include "pricing.h"

static int check_usage(FILE *f, int status) {
    fprintf(f, "usage: frugal check -c FILE\n"
               "  validate FILE; print a summary, or every problem as FILE:LINE:COL: message\n");
    return status;
}

void cmd_log_lines(const char *text) {
    for (const char *line = text, *end; line != NULL && *line != '\0'; line = end + 1) {
        end = strchr(line, '\n');
        if (end == NULL)
            end = line + strlen(line) - 1;
        log_error("%.*s", (int)(end - line + (*end != '\n')), line);
    }
}

int cmd_load_config(const char *path, frugal_config_t **cfg) {
    char *errors = NULL;
    int rc = config_load(path, cfg, &errors);
    if (rc == 0)
        return 0;
    bool json = log_get_format() == LOG_FORMAT_JSON;
    if (errors != NULL && json)
        cmd_log_lines(errors);
    else if (errors != NULL)
        fputs(errors, stderr);
    else if (json)
        log_error("%s: %s", path, frugal_err_describe(rc));
    else
        fprintf(stderr, "%s: %s\n", path, frugal_err_describe(rc));
    free(errors);
    return 1;
}

/* A warning for each TLS listener whose files frugal serve would refuse (missing,
 * expired, another key's): not an error, since a config is often checked away from the
 * machine that holds its certificates. */
static void check__tls_files(const frugal_config_t *cfg) {
    for (size_t i = 0; i < cfg->listeners_count; i++) {
        const listener_config_t *l = &cfg->listeners[i];
        if (l->tls_cert == NULL)
            continue;
        const char *const paths[PEM_TLS_FILES] = {[PEM_TLS_CERT] = l->tls_cert,
                                                  [PEM_TLS_KEY] = l->tls_key,
                                                  [PEM_TLS_CA] = l->tls_client_ca};
        char *pem[PEM_TLS_FILES];
        frugal_err_t err;
        frugal_err_clear(&err);
        if (pem_load_tls(paths, pem, &err) != 0) {
            fprintf(stderr, "warning: listener %s: %s: frugal serve here would refuse it\n",
                    l->address, err.msg);
            continue;
        }
        pem_free_tls(pem);
    }
}

int cmd_check(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            return check_usage(stdout, 0);
        }
        const char *value = NULL;
        if (strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "frugal check: %s needs a file\n", a);
                return check_usage(stderr, 2);
            }
            value = argv[++i];
        } else if (strncmp(a, "--config=", 9) == 0) {
            value = a + 9;
        } else {
            fprintf(stderr, "frugal check: unexpected argument \"%s\"\n", a);
            return check_usage(stderr, 2);
        }
        if (path != NULL) {
            fprintf(stderr, "frugal check: -c given twice\n");
            return check_usage(stderr, 2);
        }
        path = value;
    }
    if (path == NULL || path[0] == '\0') {
        fprintf(stderr, "frugal check: -c FILE is required\n");
        return check_usage(stderr, 2);
    }

    frugal_config_t *cfg = NULL;
    if (cmd_load_config(path, &cfg) != 0)
        return 1;
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        if (config_group_has_options(&cfg->node_groups[i].options)) {
            char msg[300];
            config_format_options_warning(cfg->node_groups[i].spec.id, msg, sizeof(msg));
            fprintf(stderr, "warning: %s\n", msg);
        }
    }
    for (size_t i = 0; i < cfg->node_groups_count; i++) {
        size_t twin = config_spot_twin(cfg, i);
        if (twin < cfg->node_groups_count) {
            char msg[400];
            config_format_spot_twin_warning(cfg->node_groups[i].spec.id,
                                            cfg->node_groups[twin].spec.id, msg, sizeof(msg));
            fprintf(stderr, "warning: %s\n", msg);
        }
    }
    char inert[512];
    if (config_unpriced_pods_warning(cfg, inert, sizeof(inert)))
        fprintf(stderr, "warning: %s\n", inert);
    if (pricing_unpriced_damper_warning(cfg, inert, sizeof(inert)))
        fprintf(stderr, "warning: %s\n", inert);
    if (config_autoprov_limits_warning(cfg, inert, sizeof(inert)))
        fprintf(stderr, "warning: %s\n", inert);
    check__tls_files(cfg);
    config_summary_print(cfg, stdout);
    config_free(cfg);
    return fflush(stdout) == 0 ? 0 : 1;
}
