/* SPDX-License-Identifier: MIT */
/*
 * The guest agent's file-write loop against a hostile agent, and the run's deadline on every
 * guest operation (issue 24 class 8): an agent that answers every guest-file-write with
 * `count: 1` made agent-file send 262,144 commands for 256 KiB, 24 s past a 5 s run timeout.
 * Now a short or empty count is an error at the first command, and no guest operation starts
 * after the run's deadline.
 */
#include <glib.h>
#include <string.h>

#include "agent.h"
#include "machine.h"
#include "run.h"
#include "util.h"

struct agent_fake {
	long long answer; /* the count it answers; -2: the size it was sent (an honest agent) */
	unsigned sleep_ms;
	size_t calls;
	size_t bytes;
};

static int fake_send(void *ud, const void *buf, size_t n, long long *count, char **err)
{
	(void)buf;
	(void)err;
	struct agent_fake *a = ud;
	a->calls++;
	if (a->sleep_ms)
		g_usleep(a->sleep_ms * 1000);
	*count = a->answer == -2 ? (long long)n : a->answer;
	if (*count > 0)
		a->bytes += (size_t)*count;
	return 0;
}

static void test_write_progress(void)
{
	const size_t len = 256 * 1024, chunk = 96 * 1024;
	char *buf = g_malloc0(len);
	char *err = NULL;
	/* an honest agent: one command per chunk */
	struct agent_fake a = { .answer = -2 };
	g_assert_cmpint(agent_write_loop(buf, len, chunk, fake_send, &a, &err), ==, 0);
	g_assert_cmpuint(a.calls, ==, 3);
	g_assert_cmpuint(a.bytes, ==, len);
	/* count: 1 (the red team's agent): an error at the first command, not 262,144 of them */
	a = (struct agent_fake){ .answer = 1 };
	g_assert_cmpint(agent_write_loop(buf, len, chunk, fake_send, &a, &err), ==, -1);
	g_assert_cmpuint(a.calls, ==, 1);
	g_assert_cmpstr(err, ==,
			"guest-file-write wrote 1 of 98304 bytes: the guest agent made a short "
			"write");
	g_free(err);
	err = NULL;
	/* count: 0, a missing count (-1) and more than it was sent */
	long long bad[] = { 0, -1, 98305 };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
		a = (struct agent_fake){ .answer = bad[i] };
		g_assert_cmpint(agent_write_loop(buf, len, chunk, fake_send, &a, &err), ==, -1);
		g_assert_cmpuint(a.calls, ==, 1);
		g_assert_nonnull(strstr(err, "guest-file-write wrote"));
		g_free(err);
		err = NULL;
	}
	g_free(buf);
}

static void test_write_deadline(void)
{
	const size_t len = 1000 * 1024, chunk = 1024;
	char *buf = g_malloc0(len);
	char *err = NULL;
	/* a deadline already passed: nothing is sent */
	run_set_deadline(now_ns() - 1, 5000 * 1000000ull);
	struct agent_fake a = { .answer = -2 };
	g_assert_cmpint(agent_write_loop(buf, len, chunk, fake_send, &a, &err), ==, -1);
	g_assert_cmpuint(a.calls, ==, 0);
	g_assert_cmpstr(err, ==,
			"guest-file-write: the run timeout (5000 ms) passed with 1024000 bytes "
			"still to write");
	g_free(err);
	err = NULL;
	/* an honest but slow agent (5 ms a command, 1,000 commands): the loop ends at the
	   deadline, 50 ms on, with the rest unsent (which call that is depends on the host's
	   load; that it stops before the end does not) */
	run_set_deadline(now_ns() + 50 * 1000000ull, 50 * 1000000ull);
	a = (struct agent_fake){ .answer = -2, .sleep_ms = 5 };
	g_assert_cmpint(agent_write_loop(buf, len, chunk, fake_send, &a, &err), ==, -1);
	g_assert_cmpuint(a.calls, <, 1000);
	g_assert_nonnull(strstr(err, "the run timeout (50 ms) passed"));
	g_free(err);
	run_set_deadline(0, 0);
	g_free(buf);
}

/* A machine whose guest operations count their calls. */
static size_t op_calls;
static unsigned last_timeout;

static int op_write(struct machine *m, struct machine_guest *g, int64_t handle, const void *buf,
		    size_t len, size_t chunk, struct machine_err *e)
{
	(void)m, (void)g, (void)handle, (void)buf, (void)len, (void)chunk, (void)e;
	op_calls++;
	return 0;
}

static int op_exec(struct machine *m, struct machine_guest *g, const char *const *argv,
		   const void *input, size_t input_len, unsigned timeout_ms,
		   struct machine_exec_result *r, struct machine_err *e)
{
	(void)m, (void)g, (void)argv, (void)input, (void)input_len, (void)r, (void)e;
	op_calls++;
	last_timeout = timeout_ms;
	return 0;
}

static void test_machine_deadline(void)
{
	static const struct machine_guest_ops gops = { .file_write = op_write, .exec = op_exec };
	static const struct machine_ops ops = { .name = "counting", .guest = &gops };
	struct machine m = { .ops = &ops };
	struct machine_guest g = { .name = (char *)"g" };
	struct machine_err e = { 0 };
	struct machine_exec_result r;
	const char *argv[] = { "true", NULL };
	/* no deadline: the operations run, with the timeouts they were given */
	g_assert_cmpint(machine_guest_file_write(&m, &g, 1, "x", 1, 1, &e), ==, 0);
	g_assert_cmpint(machine_guest_exec(&m, &g, argv, NULL, 0, 600000, &r, &e), ==, 0);
	g_assert_cmpuint(last_timeout, ==, 600000);
	/* 10 s left: a command's 10 min shrinks to what is left */
	run_set_deadline(now_ns() + 10ull * 1000000000ull, 10ull * 1000000000ull);
	g_assert_cmpint(machine_guest_exec(&m, &g, argv, NULL, 0, 600000, &r, &e), ==, 0);
	g_assert_cmpuint(last_timeout, <=, 10000);
	g_assert_cmpuint(last_timeout, >, 0);
	/* past it: no operation starts, the error says why */
	op_calls = 0;
	run_set_deadline(now_ns() - 1, 5000 * 1000000ull);
	g_assert_cmpint(machine_guest_file_write(&m, &g, 1, "x", 1, 1, &e), ==, -1);
	g_assert_cmpint(e.kind, ==, MACHINE_ERR_TIMEOUT);
	g_assert_cmpstr(e.msg, ==, "cannot write a guest file: the run timeout (5000 ms) passed");
	machine_err_clear(&e);
	g_assert_cmpint(machine_guest_exec(&m, &g, argv, NULL, 0, 600000, &r, &e), ==, -1);
	machine_err_clear(&e);
	g_assert_cmpuint(op_calls, ==, 0);
	run_set_deadline(0, 0);
	g_assert_cmpint(machine_guest_file_write(&m, &g, 1, "x", 1, 1, &e), ==, 0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/agent/write-progress", test_write_progress);
	g_test_add_func("/agent/write-deadline", test_write_deadline);
	g_test_add_func("/agent/machine-deadline", test_machine_deadline);
	return g_test_run();
}
