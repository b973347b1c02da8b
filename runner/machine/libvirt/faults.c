/* SPDX-License-Identifier: MIT */
/* Test-only fault injection (faults.h). */
#include "faults.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <time.h>

#include "agent.h"
#include "util.h"

#define FAULT_SH_MS 120000u

void machine_faults_from_env(struct machine_faults *f)
{
	const char *c = getenv("FERRY_TEST_CORRUPT"), *t = getenv("FERRY_TEST_FAULT");
	f->corrupt = c && *c ? xstrdup(c) : NULL;
	f->fault = t && *t ? xstrdup(t) : NULL;
}

void machine_faults_clear(struct machine_faults *f)
{
	free(f->corrupt);
	free(f->fault);
	f->corrupt = f->fault = NULL;
}

/* The fault FERRY_TEST_FAULT asks for in this cell ("KIND@CELL;KIND@CELL": cell ids hold commas),
 * or NULL. */
static char *fault_for(const char *spec, const char *cell)
{
	if (!spec)
		return NULL;
	_cleanup_free_ char *dup = xstrdup(spec);
	for (char *sv = NULL, *t = strtok_r(dup, ";", &sv); t; t = strtok_r(NULL, ";", &sv)) {
		char *at = strchr(t, '@');
		if (at && STREQ(at + 1, cell))
			return xstrndup(t, (size_t)(at - t));
	}
	return NULL;
}

unsigned long machine_fault_slow_ms(const char *spec, const struct machine_where *w)
{
	if (w->warmup || (w->point != MACHINE_DURING_TRANSFER && w->point != MACHINE_END_TRANSFER))
		return 0;
	_cleanup_free_ char *kind = fault_for(spec, w->cell);
	if (!kind || (!STREQ(kind, "slow") && strncmp(kind, "slow=", 5)))
		return 0;
	bool pct = kind[4] == '=' && kind[strlen(kind) - 1] == '%';
	if ((w->point == MACHINE_END_TRANSFER) != pct)
		return 0;
	unsigned long n = kind[4] == '=' ? strtoul(kind + 5, NULL, 10) : 1000;
	/* P% of the transfer so far, in ms, rounded to the nearest */
	return pct ? (unsigned long)((w->elapsed_ns * n / 100u + 500000u) / 1000000u) : n;
}

static void guest_sh(struct vm *vm, const char *cmd)
{
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	_cleanup_free_ char *err = NULL;
	agent_run(vm_domain(vm), argv, FAULT_SH_MS, NULL, &err);
}

static void corrupt(const char *rel, struct vm *vm)
{
	_cleanup_free_ char *q = xasprintf("%s/%s", MACHINE_LANDING, rel);
	_cleanup_free_ char *qq = shell_quote(q);
	_cleanup_free_ char *cmd = xasprintf(
	    "printf '\\132\\132\\132\\132' | dd of=%s bs=4 count=1 conv=notrunc 2>/dev/null", qq);
	guest_sh(vm, cmd);
}

static void fault(const char *kind, struct vm *vm)
{
	if (STREQ(kind, "destroy")) {
		virDomainDestroy(vm_domain(vm));
	} else if (STREQ(kind, "killga")) {
		/* keep init from respawning it: replace the binary's path, then kill */
		const char *argv[] = { "/bin/sh", "-c",
				       "(sleep 1; mv /usr/sbin/qemu-ga /usr/sbin/qemu-ga.off; "
				       "killall -9 qemu-ga) >/dev/null 2>&1 </dev/null &",
				       NULL };
		struct agent_exec_result r = { 0 };
		_cleanup_free_ char *err = NULL;
		agent_exec(vm_domain(vm), argv, NULL, 0, 10000, &r, &err);
		agent_exec_result_clear(&r);
		sleep(3);
	} else if (STREQ(kind, "fill")) {
		guest_sh(vm, "dd if=/dev/zero of=" MACHINE_LANDING "/fill bs=1M 2>/dev/null; true");
	}
}

void machine_faults_inject(const struct machine_faults *f, struct vm *vm,
			   const struct machine_where *w)
{
	if (w->point == MACHINE_BEFORE_VERIFY && f->corrupt && !w->warmup) {
		corrupt(f->corrupt, vm);
	} else if (w->point == MACHINE_BEFORE_TRANSFER && w->run_index == 0) {
		_cleanup_free_ char *kind = fault_for(f->fault, w->cell);
		if (kind)
			fault(kind, vm);
	} else if (w->point == MACHINE_DURING_TRANSFER || w->point == MACHINE_END_TRANSFER) {
		unsigned long ms = machine_fault_slow_ms(f->fault, w);
		if (ms)
			run_sleep_ms(ms);
	}
}
