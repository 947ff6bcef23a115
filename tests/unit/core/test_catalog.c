/* Unit tests of server/core/catalog.c: the builtin table, lookups, and a cross-check
 * against tests/data/gce-n1.yaml (the public price list it was transcribed from). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <yaml.h>

#include "catalog.h"

static void test_counts_and_lookup(void **state) {
    (void)state;
    assert_int_equal(catalog_machines_count, 22);
    assert_int_equal(catalog_gpus_count, 5);

    const catalog_machine_t *m = catalog_find_machine("n1-standard-2");
    assert_non_null(m);
    assert_int_equal(m->cpu, 2);
    assert_true(m->memory_gb == 7.5);
    assert_true(m->price == 0.095);
    assert_true(m->preemptible_price == 0.02);
    assert_int_equal(catalog_machine_memory_bytes(m), 8053063680LL);

    m = catalog_find_machine("n1-highcpu-96");
    assert_non_null(m);
    assert_int_equal(m->cpu, 96);
    assert_true(m->price == 3.402);
    assert_true(m->preemptible_price == 0.72);

    m = catalog_find_machine("n1-standard-1");
    assert_non_null(m);
    assert_int_equal(catalog_machine_memory_bytes(m), 4026531840LL);

    m = catalog_find_machine("n1-highcpu-2");
    assert_non_null(m);
    assert_int_equal(catalog_machine_memory_bytes(m), 1932735283LL); /* 1.8 x 2^30 rounded */

    assert_null(catalog_find_machine("n1-standard-3"));
    assert_null(catalog_find_machine(""));
    assert_null(catalog_find_machine(NULL));
    assert_null(catalog_find_machine("N1-STANDARD-2"));

    const catalog_gpu_t *g = catalog_find_gpu("nvidia-tesla-t4");
    assert_non_null(g);
    assert_true(g->price == 0.35);
    assert_true(g->preemptible_price == 0.11);
    g = catalog_find_gpu("nvidia-tesla-k80");
    assert_non_null(g);
    assert_true(g->preemptible_price == 0.0375);
    assert_null(catalog_find_gpu("nvidia-tesla-a100"));
    assert_null(catalog_find_gpu(NULL));
}

static void test_table_sane(void **state) {
    (void)state;
    for (size_t i = 0; i < catalog_machines_count; i++) {
        const catalog_machine_t *m = &catalog_machines[i];
        assert_true(m->cpu >= 1 && m->cpu <= 96);
        assert_true(m->memory_gb > 0);
        assert_true(m->price > m->preemptible_price);
        assert_true(m->preemptible_price > 0);
        assert_ptr_equal(catalog_find_machine(m->name), m);
        for (size_t j = i + 1; j < catalog_machines_count; j++)
            assert_string_not_equal(m->name, catalog_machines[j].name);
    }
    for (size_t i = 0; i < catalog_gpus_count; i++)
        assert_ptr_equal(catalog_find_gpu(catalog_gpus[i].name), &catalog_gpus[i]);
}

/* --- cross-check with the YAML source --- */

static const char *yaml_scalar(yaml_document_t *doc, yaml_node_t *map, const char *key) {
    assert_int_equal(map->type, YAML_MAPPING_NODE);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        if (k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0) {
            assert_int_equal(v->type, YAML_SCALAR_NODE);
            return (const char *)v->data.scalar.value;
        }
    }
    fail_msg("key %s missing", key);
    return NULL;
}

static yaml_node_t *yaml_child(yaml_document_t *doc, yaml_node_t *map, const char *key) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
            return yaml_document_get_node(doc, p->value);
    }
    fail_msg("key %s missing", key);
    return NULL;
}

static double num(const char *s) {
    char *end;
    double d = strtod(s, &end);
    assert_true(end != s && *end == '\0');
    return d;
}

static void test_matches_yaml(void **state) {
    (void)state;
    const char *src = getenv("FRUGAL_SOURCE_DIR");
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/data/gce-n1.yaml", src != NULL ? src : ".");
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        print_message("skipping: %s not found\n", path);
        skip();
        return;
    }

    yaml_parser_t parser;
    yaml_document_t doc;
    assert_true(yaml_parser_initialize(&parser));
    yaml_parser_set_input_file(&parser, f);
    assert_true(yaml_parser_load(&parser, &doc));
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    assert_non_null(root);
    assert_int_equal(root->type, YAML_MAPPING_NODE);

    yaml_node_t *machines = yaml_child(&doc, root, "machine_types");
    assert_int_equal(machines->type, YAML_SEQUENCE_NODE);
    size_t n = 0;
    for (yaml_node_item_t *it = machines->data.sequence.items.start;
         it < machines->data.sequence.items.top; it++, n++) {
        yaml_node_t *m = yaml_document_get_node(&doc, *it);
        const char *name = yaml_scalar(&doc, m, "name");
        const catalog_machine_t *c = catalog_find_machine(name);
        if (c == NULL)
            fail_msg("%s is in the YAML but not in the table", name);
        assert_ptr_equal(c, &catalog_machines[n]); /* same order */
        assert_true(c->cpu == (int)num(yaml_scalar(&doc, m, "cpu")));
        assert_true(c->memory_gb == num(yaml_scalar(&doc, m, "memory_gb")));
        assert_true(c->price == num(yaml_scalar(&doc, m, "price")));
        assert_true(c->preemptible_price == num(yaml_scalar(&doc, m, "preemptible_price")));
    }
    assert_int_equal(n, catalog_machines_count);

    yaml_node_t *gpus = yaml_child(&doc, root, "gpu_types");
    assert_int_equal(gpus->type, YAML_SEQUENCE_NODE);
    n = 0;
    for (yaml_node_item_t *it = gpus->data.sequence.items.start; it < gpus->data.sequence.items.top;
         it++, n++) {
        yaml_node_t *g = yaml_document_get_node(&doc, *it);
        const char *name = yaml_scalar(&doc, g, "name");
        const catalog_gpu_t *c = catalog_find_gpu(name);
        if (c == NULL)
            fail_msg("GPU %s is in the YAML but not in the table", name);
        assert_true(c->price == num(yaml_scalar(&doc, g, "price")));
        assert_true(c->preemptible_price == num(yaml_scalar(&doc, g, "preemptible_price")));
    }
    assert_int_equal(n, catalog_gpus_count);

    yaml_node_t *linear = yaml_child(&doc, root, "linear");
    assert_true(CATALOG_LINEAR_CPU == num(yaml_scalar(&doc, linear, "cpu")));
    assert_true(CATALOG_LINEAR_MEMORY_GB == num(yaml_scalar(&doc, linear, "memory_gb")));
    assert_true(CATALOG_LINEAR_GPU == num(yaml_scalar(&doc, linear, "gpu")));

    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_and_lookup),
        cmocka_unit_test(test_table_sane),
        cmocka_unit_test(test_matches_yaml),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
