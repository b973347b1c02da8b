/* SPDX-License-Identifier: MIT */
/*
 * A run fanned out over several hosts (runner/exec/hosts.c) on the fake machine with the null
 * method: the units (which cells must share a host), every host used with one results file whose
 * cells name their host, a host whose connection is lost mid-run (its unfinished cell goes to
 * another host), a host that cannot be reached, and every host lost (cells left pending).
 * Each unit runs in a child process; the fake's script travels with fork().
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "compare.h"
#include "fake-run.h"
#include "plan.h"
#include "reporters.h"
#include "util.h"

static char *tmp_dir;

static const char *const plan_head =
    "ferry: 1\n"
    "name: t\n"
    "vms: {v: {guest: builtin}, w: {guest: builtin}}\n"
    "disks: {d: {kind: tmpfs, size: 64MiB}}\n"
    "datasets: {s: {files: 1, size: 1KiB}}\n"
    "methods: {a: {type: null}, b: {type: null}, c: {type: null}}\n";

static void hx_init(struct fake_run *t, const char *rest, const char *const *hosts, size_t n_hosts)
{
	char *text = g_strconcat(plan_head, rest, NULL);
	fake_run_init(t, tmp_dir, text, NULL);
	g_free(text);
	t->results_path = g_build_filename(tmp_dir, "results.json", NULL);
	t->o.results_path = t->results_path;
	t->o.hosts = hosts;
	t->o.n_hosts = n_hosts;
}

/* The host URI that ran the cell (its origin), or NULL. */
static const char *host_of(const struct results *r, const struct result_cell *c)
{
	if (c->origin < 0 || (size_t)c->origin >= r->n_origins)
		return NULL;
	return r->origins[c->origin].host;
}

static bool logged(GPtrArray *a, const char *needle)
{
	for (guint i = 0; i < a->len; i++)
		if (strstr(g_ptr_array_index(a, i), needle))
			return true;
	return false;
}

/* Which cells must share a host: a shared guest, a rotation; otherwise one cell each. */
static void test_units(void)
{
	static const struct {
		const char *run;
		size_t units;
	} cases[] = {
		{ "run: {vm: per-cell}\n", 6 },
		{ "run: {vm: per-run}\n", 6 },
		{ "run: {vm: shared}\n", 2 },                     /* one per vm */
		{ "run: {vm: shared, order: interleaved}\n", 2 }, /* turns on each guest */
		{ "run: {vm: shared, order: shuffled, seed: 3}\n", 2 },
		{ "run: {vm: per-cell, order: interleaved}\n", 1 }, /* one rotation */
		{ "run: {vm: per-run, order: shuffled, seed: 3}\n", 1 },
	};
	for (size_t k = 0; k < G_N_ELEMENTS(cases); k++) {
		struct fake_run t;
		char *rest =
		    g_strconcat("matrix: {vm: [v, w], method: [a, b, c]}\n", cases[k].run, NULL);
		hx_init(&t, rest, NULL, 0);
		g_free(rest);
		size_t n = matrix_n_cells(t.m);
		bool active[6] = { true, true, true, true, true, true };
		size_t unit_of[6];
		g_assert_cmpuint(n, ==, 6);
		g_assert_cmpuint(exec_host_units(t.p, t.m, active, unit_of), ==, cases[k].units);
		for (size_t i = 0; i < n; i++)
			g_assert_cmpuint(unit_of[i], <, cases[k].units);
		if (cases[k].units == 2) /* vm v's cells together, then w's */
			for (size_t i = 0; i < n; i++)
				g_assert_cmpuint(unit_of[i], ==,
						 strstr(matrix_cell_id(t.m, i), "vm=v") ? 0 : 1);
		/* inactive cells belong to no unit */
		active[1] = false;
		exec_host_units(t.p, t.m, active, unit_of);
		g_assert_cmpuint(unit_of[1], ==, SIZE_MAX);
		fake_run_clear(&t);
	}
}

/* Six cells over two hosts: all pass, both hosts ran cells, every cell names its host, and the
 * results file on disk is the merged one. */
static void test_fanout(void)
{
	const char *hosts[] = { "fake://a", "fake://b" };
	struct fake_run t;
	hx_init(&t, "matrix: {vm: [v, w], method: [a, b, c]}\nrun: {repeat: 2}\n", hosts, 2);
	fake_run_exec(&t);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 6);
	g_assert_cmpuint(t.res.hosts_lost, ==, 0);
	g_assert_cmpuint(t.r->n_origins, ==, 2);
	unsigned per_host[2] = { 0, 0 };
	GHashTable *boots = g_hash_table_new(g_int64_hash, g_int64_equal);
	for (size_t i = 0; i < t.r->n_cells; i++) {
		const struct result_cell *c = &t.r->cells[i];
		const char *h = host_of(t.r, c);
		g_assert_nonnull(h);
		per_host[STREQ(h, "fake://b")]++;
		g_assert_cmpuint(c->n_runs, ==, 2);
		/* per-cell guests: one boot per cell, ids unique over the hosts */
		g_assert_cmpint(c->runs[0].boot, ==, c->runs[1].boot);
		g_assert_false(g_hash_table_contains(boots, &c->runs[0].boot));
		g_hash_table_add(boots, &t.r->cells[i].runs[0].boot);
	}
	g_hash_table_destroy(boots);
	g_assert_cmpuint(per_host[0], >, 0);
	g_assert_cmpuint(per_host[1], >, 0);
	for (size_t o = 0; o < 2; o++) {
		g_assert_cmpstr(t.r->origins[o].provenance.hostname, ==,
				STREQ(t.r->origins[o].host, "fake://a") ? "fake:fake://a"
									: "fake:fake://b");
		g_assert_null(t.r->origins[o].lost);
	}
	g_assert_true(logged(t.lines, "host 1 (fake://a) runs "));
	g_assert_true(logged(t.lines, "host 2 (fake://b) runs "));
	/* the file says the same */
	char *err = NULL;
	struct results *back = results_read(t.results_path, &err);
	g_assert_null(err);
	g_assert_cmpuint(back->n_cells, ==, 6);
	g_assert_cmpuint(back->n_origins, ==, 2);
	for (size_t i = 0; i < back->n_cells; i++) {
		g_assert_cmpint(back->cells[i].status, ==, STATUS_PASSED);
		g_assert_cmpint(back->cells[i].origin, ==, t.r->cells[i].origin);
	}
	g_assert_nonnull(back->origins[0].host);
	results_free(back);
	fake_run_clear(&t);
}

/* Host b loses its connection at its first reset: that cell and the rest go to host a. */
static void test_host_lost(void)
{
	const char *hosts[] = { "fake://a", "fake://b" };
	struct fake_run t;
	hx_init(&t, "matrix: {vm: [v, w], method: [a, b, c]}\n", hosts, 2);
	t.fake.lost_uri = "fake://b";
	t.fake.lost_after = 1;
	fake_run_exec(&t);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 6);
	g_assert_cmpuint(t.res.hosts_lost, ==, 1);
	for (size_t i = 0; i < t.r->n_cells; i++) {
		g_assert_cmpstr(host_of(t.r, &t.r->cells[i]), ==, "fake://a");
		g_assert_cmpuint(t.r->cells[i].n_errors, ==, 0);
	}
	/* host b is in the results with why it failed */
	bool lost_named = false;
	for (size_t o = 0; o < t.r->n_origins; o++)
		if (STREQ(t.r->origins[o].host, "fake://b"))
			lost_named =
			    t.r->origins[o].lost &&
			    strstr(t.r->origins[o].lost, "connection to 'fake://b' is lost");
	g_assert_true(lost_named);
	g_assert_true(logged(t.errors, "host 2 (fake://b) failed: "));
	g_assert_true(logged(t.errors, "go to another host"));
	fake_run_clear(&t);
}

/* A host that cannot be reached at all: everything runs on the other. */
static void test_host_unreachable(void)
{
	const char *hosts[] = { "fake://a", "fake://b" };
	struct fake_run t;
	hx_init(&t, "matrix: {vm: [v], method: [a, b, c]}\n", hosts, 2);
	t.fake.lost_uri = "fake://a";
	t.fake.lost_after = 0;
	fake_run_exec(&t);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 3);
	g_assert_cmpuint(t.res.hosts_lost, ==, 1);
	for (size_t i = 0; i < t.r->n_cells; i++)
		g_assert_cmpstr(host_of(t.r, &t.r->cells[i]), ==, "fake://b");
	g_assert_true(logged(t.errors, "cannot connect to the fake host 'fake://a'"));
	fake_run_clear(&t);
}

/* Every host lost: the cells no host finished stay pending, without partial runs, and --resume
 * finishes them. */
static void test_all_hosts_lost(void)
{
	const char *hosts[] = { "fake://b", "fake://b" };
	struct fake_run t;
	hx_init(&t, "matrix: {vm: [v], method: [a, b, c]}\nrun: {repeat: 2}\n", hosts, 2);
	t.fake.lost_uri = "fake://b";
	t.fake.lost_after = 2; /* each host finishes its first run, then fails */
	fake_run_exec(&t);
	g_assert_cmpuint(t.res.hosts_lost, ==, 2);
	g_assert_cmpuint(t.res.counts[STATUS_PENDING], ==, 3);
	for (size_t i = 0; i < t.r->n_cells; i++)
		g_assert_cmpuint(t.r->cells[i].n_runs, ==, 0);
	g_assert_true(logged(t.errors, "stay pending"));
	/* --resume over hosts that work finishes them */
	char *err = NULL;
	struct results *earlier = results_read(t.results_path, &err);
	g_assert_null(err);
	const char *good[] = { "fake://a", "fake://c" };
	t.o.hosts = good;
	t.o.resume = earlier;
	results_free(t.r);
	t.r = NULL;
	fake_run_exec(&t);
	g_assert_true(t.r == earlier);
	g_assert_cmpuint(t.res.hosts_lost, ==, 0);
	g_assert_cmpuint(t.res.counts[STATUS_PASSED], ==, 3);
	for (size_t i = 0; i < t.r->n_cells; i++) {
		g_assert_cmpuint(t.r->cells[i].n_runs, ==, 2);
		const char *h = host_of(t.r, &t.r->cells[i]);
		g_assert_true(STREQ(h, "fake://a") || STREQ(h, "fake://c"));
	}
	fake_run_clear(&t);
}

/* The Markdown report of a fanned-out run names the hosts and the host of every raw run. */
static void test_markdown_hosts(void)
{
	const char *hosts[] = { "fake://a", "fake://b" };
	struct fake_run t;
	hx_init(&t, "matrix: {vm: [v, w], method: [a, b, c]}\n", hosts, 2);
	fake_run_exec(&t);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char *err = NULL;
	g_assert_cmpint(report_markdown(t.r, NULL, f, &err), ==, 0);
	fclose(f);
	g_assert_nonnull(strstr(buf, "### Hosts"));
	/* the origins in the order of the hosts on the command line */
	g_assert_nonnull(strstr(buf, "| 1 | fake://a | fake:fake://a |"));
	g_assert_nonnull(strstr(buf, "| 2 | fake://b | fake:fake://b |"));
	g_assert_nonnull(strstr(buf, "| cell | host | run |"));
	free(buf);
	/* one host that ran every cell: no hosts table, no host column */
	for (size_t i = 0; i < t.r->n_cells; i++)
		t.r->cells[i].origin = 0;
	f = open_memstream(&buf, &len);
	g_assert_cmpint(report_markdown(t.r, NULL, f, &err), ==, 0);
	fclose(f);
	g_assert_null(strstr(buf, "### Hosts"));
	g_assert_null(strstr(buf, "| cell | host |"));
	free(buf);
	fake_run_clear(&t);
}

/* compare: a cell measured on a host with another QEMU than in the baseline is refused like a
 * file of another QEMU; another hostname is only shown. */
static void test_compare_hosts(void)
{
	const char *hosts[] = { "fake://a", "fake://b" };
	struct fake_run t;
	hx_init(&t, "matrix: {vm: [v, w], method: [a, b, c]}\nrun: {repeat: 3}\n", hosts, 2);
	fake_run_exec(&t);
	char *err = NULL;
	struct results *base = results_read(t.results_path, &err);
	g_assert_null(err);
	struct compare_opts o = { 0 };
	const struct results *bases[] = { base };
	struct comparison *c = compare_results(bases, 1, t.r, &o, &err);
	g_assert_false(c->refused);
	comparison_free(c);
	/* host b of the candidate has another QEMU: refused, and said so once */
	for (size_t k = 0; k < t.r->n_origins; k++) {
		free(t.r->origins[k].provenance.qemu_version);
		t.r->origins[k].provenance.qemu_version =
		    xstrdup(STREQ(t.r->origins[k].host, "fake://b") ? "99.0.0" : "7.2.0");
	}
	for (size_t k = 0; k < base->n_origins; k++) {
		free(base->origins[k].provenance.qemu_version);
		base->origins[k].provenance.qemu_version = xstrdup("7.2.0");
	}
	c = compare_results(bases, 1, t.r, &o, &err);
	g_assert_true(c->refused);
	size_t qemu = 0;
	for (size_t i = 0; i < c->n_diffs; i++)
		if (STREQ(c->diffs[i].key, "qemu_version")) {
			qemu++;
			g_assert_cmpstr(c->diffs[i].cand, ==, "99.0.0");
		}
	g_assert_cmpuint(qemu, ==, 1);
	comparison_free(c);
	/* every cell of the baseline on host a, the candidate's on both: the hostnames differ
	 * for some cells, shown and not refused */
	for (size_t k = 0; k < t.r->n_origins; k++) {
		free(t.r->origins[k].provenance.qemu_version);
		t.r->origins[k].provenance.qemu_version = xstrdup("7.2.0");
	}
	int a = STREQ(base->origins[0].host, "fake://a") ? 0 : 1;
	for (size_t i = 0; i < base->n_cells; i++)
		base->cells[i].origin = a;
	c = compare_results(bases, 1, t.r, &o, &err);
	g_assert_false(c->refused);
	bool shown = false;
	for (size_t i = 0; i < c->n_diffs; i++)
		shown |= STREQ(c->diffs[i].key, "hostname") && !c->diffs[i].refusing;
	g_assert_true(shown);
	comparison_free(c);
	results_free(base);
	fake_run_clear(&t);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	tmp_dir = fake_dir_make("ferry-test-hosts");
	g_test_add_func("/hosts/units", test_units);
	g_test_add_func("/hosts/fanout", test_fanout);
	g_test_add_func("/hosts/lost", test_host_lost);
	g_test_add_func("/hosts/unreachable", test_host_unreachable);
	g_test_add_func("/hosts/all-lost", test_all_hosts_lost);
	g_test_add_func("/hosts/markdown", test_markdown_hosts);
	g_test_add_func("/hosts/compare", test_compare_hosts);
	int rc = g_test_run();
	fake_dir_remove(tmp_dir);
	return rc;
}
