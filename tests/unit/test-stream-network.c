/* SPDX-License-Identifier: MIT */
/*
 * The network method's host side (methods/netserve.c) without a guest: the exact guest command
 * lines, run by the host's busybox with only busybox applets on PATH (or by dash and GNU wget as
 * the Debian guest has them), pull the dataset from its HTTP server whole, file by file and in N
 * streams at once, and a client without the run's token gets nothing; a push lands only after
 * the token line.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dataset.h"
#include "fs.h"
#include "manifest.h"
#include "methods/netserve.h"
#include "methods/stream.h"
#include "stream-busybox.h"
#include "util.h"

/* The GNU/Debian guest's userland instead of busybox: dash as sh, the host's own tools. */
static bool gnu_guest;

static int run_guest_sh(const char *bin, const char *cmd, char **serr)
{
	char *path = g_strdup_printf("PATH=%s", gnu_guest ? "/usr/bin:/bin" : bin);
	const char *argv[] = { gnu_guest ? "/bin/dash" : busybox, "sh", "-c", cmd, NULL };
	if (gnu_guest)
		argv[1] = "-c", argv[2] = cmd, argv[3] = NULL;
	const char *envp[] = { path, NULL };
	int status = 0;
	GError *gerr = NULL;
	if (!g_spawn_sync(NULL, (char **)argv, (char **)envp, G_SPAWN_DEFAULT, NULL, NULL, NULL,
			  serr, &status, &gerr))
		g_error("spawn: %s", gerr->message);
	g_free(path);
	return g_spawn_check_wait_status(status, NULL) ? 0 : -1;
}

/* A tree whose names the old line-based list broke: blanks, a CR, leading '-'. */
static char *awkward_tree(const char *base, struct manifest **m)
{
	char *src = g_build_filename(base, "awkward", NULL);
	static const char *const dirs[] = { "-dir", " lead dir", "-dir/sub" };
	static const char *const files[] = { "a\rb", " lead",   "trail ",       "-dash",
					     "-",    "-dir/-x", " lead dir/ y", "-dir/sub/--z\r" };
	g_assert_cmpint(g_mkdir(src, 0755), ==, 0);
	for (size_t i = 0; i < G_N_ELEMENTS(dirs); i++) {
		char *d = g_build_filename(src, dirs[i], NULL);
		g_assert_cmpint(g_mkdir(d, 0755), ==, 0);
		g_free(d);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(files); i++) {
		char *f = g_build_filename(src, files[i], NULL);
		char *data = g_strdup_printf("content of file %zu\n", i);
		g_assert_true(g_file_set_contents(f, data, -1, NULL));
		g_free(data);
		g_free(f);
	}
	char *l = g_build_filename(src, "-link", NULL);
	g_assert_cmpint(symlink("-dash", l), ==, 0);
	g_free(l);
	char *err = NULL;
	if (dataset_scan(src, m, &err) < 0)
		g_error("%s", err);
	g_assert_cmpuint((*m)->n_skipped, ==, 0);
	return src;
}

static char *http_get(int port, const char *path, char **body)
{
	int c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	g_assert_cmpint(connect(c, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
	char *req = g_strdup_printf("GET %s HTTP/1.0\r\n\r\n", path);
	g_assert_cmpint(write(c, req, strlen(req)), ==, (ssize_t)strlen(req));
	GString *resp = g_string_new(NULL);
	char buf[4096];
	ssize_t n;
	while ((n = read(c, buf, sizeof(buf))) > 0)
		g_string_append_len(resp, buf, n);
	close(c);
	g_free(req);
	char *status = g_strndup(resp->str, strcspn(resp->str, "\r"));
	const char *b = strstr(resp->str, "\r\n\r\n");
	*body = g_strdup(b ? b + 4 : "");
	g_string_free(resp, TRUE);
	return status;
}

static void test_network_pull(void)
{
	if (!busybox) {
		g_test_skip("no busybox on this host to play the guest");
		return;
	}
	if (gnu_guest && (access("/bin/dash", X_OK) < 0 || access("/usr/bin/wget", X_OK) < 0)) {
		g_test_skip("no dash or GNU wget on this host to play the Debian guest");
		return;
	}
	char *base = g_dir_make_tmp("ferry-test-net-XXXXXX", NULL);
	struct manifest *m = NULL;
	char *src = awkward_tree(base, &m);
	char *bin = applets(base);
	static const char *const more[] = { "wget", "xargs", "ln" };
	for (size_t i = 0; i < G_N_ELEMENTS(more); i++) {
		char *l = g_build_filename(bin, more[i], NULL);
		g_assert_cmpint(symlink(busybox, l), ==, 0);
		g_free(l);
	}
	struct server srv;
	server_init(&srv);
	char *err = NULL;
	if (server_start(&srv, NULL, src, m, 10000, &err) < 0)
		g_error("%s", err);
	g_assert_cmpuint(strlen(srv.token), ==, NETSERVE_TOKEN_LEN);

	/* another local user without the token: 404, nothing of the dataset, no run failure */
	char *body = NULL;
	char *st = http_get(srv.port, "/.ferry-list", &body);
	g_assert_nonnull(strstr(st, "404"));
	g_assert_cmpstr(body, ==, "");
	g_free(st), g_free(body);
	st = http_get(srv.port, "/00000000000000000000000000000000/f/1", &body);
	g_assert_nonnull(strstr(st, "404"));
	g_assert_null(strstr(body, "content of file"));
	g_free(st), g_free(body);
	g_assert_cmpuint(srv.rejected, ==, 2);

	/* the guest's pull, with the exact command line, into a fresh directory */
	char *out = g_build_filename(base, "landed", NULL);
	g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
	char *url = g_strdup_printf("http://127.0.0.1:%d/%s", srv.port, srv.token);
	char *cmd = netserve_pull_files_command(url, out);
	char *serr = NULL;
	if (run_guest_sh(bin, cmd, &serr) < 0)
		g_error("'%s' failed: %s", cmd, serr);
	server_stop(&srv);
	g_assert_null(srv.err);
	char *why = NULL;
	if (!dataset_intact(m, out, true, &why))
		g_error("pulled tree: %s", why);
	/* a second token differs (one per server start) */
	char other[NETSERVE_TOKEN_LEN + 1];
	g_assert_cmpint(netserve_token(other), ==, 0);
	g_assert_cmpstr(other, !=, srv.token);
	free(srv.err);
	g_free(serr), free(cmd), g_free(url), g_free(out);
	rm_tree(base, NULL);
	g_free(bin), g_free(src), g_free(base);
	manifest_free(m);
}

/* The same pull with the Debian guest's tools: dash (no pipefail), GNU wget and xargs. */
static void test_network_pull_gnu(void)
{
	gnu_guest = true;
	test_network_pull();
	gnu_guest = false;
}

/* streams: N parts pulled at once (files one by one, and one tar per connection) land whole. */
static void test_network_pull_streams(void)
{
	if (!busybox) {
		g_test_skip("no busybox on this host to play the guest");
		return;
	}
	char *base = g_dir_make_tmp("ferry-test-streams-XXXXXX", NULL);
	struct manifest *m = NULL;
	char *src = awkward_tree(base, &m);
	char *bin = applets(base);
	static const char *const more[] = { "wget", "xargs", "ln" };
	for (size_t i = 0; i < G_N_ELEMENTS(more); i++) {
		char *l = g_build_filename(bin, more[i], NULL);
		g_assert_cmpint(symlink(busybox, l), ==, 0);
		g_free(l);
	}
	/* the split: every part has every directory, every file is in exactly one part */
	struct manifest parts[3];
	size_t *index[3];
	netserve_split(m, 3, parts, index);
	for (size_t i = 0; i < m->n; i++) {
		unsigned in = 0;
		for (unsigned k = 0; k < 3; k++)
			for (size_t j = 0; j < parts[k].n; j++)
				in += index[k][j] == i;
		g_assert_cmpuint(in, ==, m->entries[i].type == MANIFEST_DIR ? 3 : 1);
	}
	netserve_parts_clear(parts, index, 3);
	static const struct plan_archive tar = { 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_NONE, 0 };
	for (int round = 0; round < 2; round++) {
		const struct plan_archive *a = round ? &tar : NULL;
		struct server srv;
		server_init(&srv);
		char *err = NULL;
		if (server_start_streams(&srv, a, src, m, 3, -1, NULL, 10000, &err) < 0)
			g_error("%s", err);
		char *out = g_strdup_printf("%s/landed-%d", base, round);
		g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
		char *url = g_strdup_printf("http://127.0.0.1:%d/%s", srv.port, srv.token);
		char *cmds[3];
		for (unsigned k = 0; k < 3; k++) {
			if (a) {
				char *src_cmd =
				    g_strdup_printf("wget -q -O - %s/stream/%u", url, k);
				cmds[k] = stream_unpack_command(a, src_cmd, out);
				g_free(src_cmd);
			} else {
				cmds[k] = netserve_pull_part_command(url, k, out);
			}
		}
		char *cmd = netserve_parallel_command(cmds, 3);
		char *serr = NULL;
		if (run_guest_sh(bin, cmd, &serr) < 0)
			g_error("'%s' failed: %s", cmd, serr);
		server_stop(&srv);
		g_assert_null(srv.err);
		char *why = NULL;
		if (!dataset_intact(m, out, true, &why))
			g_error("pulled over 3 streams (%s): %s", a ? "tar" : "files", why);
		for (unsigned k = 0; k < 3; k++)
			free(cmds[k]);
		free(cmd), g_free(serr), g_free(url), g_free(out);
		free(srv.err);
	}
	/* one failing stream fails the whole */
	char *bad[2] = { (char *)"true", (char *)"exit 3" };
	char *cmd = netserve_parallel_command(bad, 2);
	char *serr = NULL;
	g_assert_cmpint(run_guest_sh(bin, cmd, &serr), <, 0);
	free(cmd), g_free(serr);
	rm_tree(base, NULL);
	g_free(bin), g_free(src), g_free(base);
	manifest_free(m);
}

/* The push side: the guest unpacks only after the token line; without it, nothing lands. */
static void test_network_push_token(void)
{
	if (!busybox) {
		g_test_skip("no busybox on this host to play the guest");
		return;
	}
	char *base = g_dir_make_tmp("ferry-test-push-XXXXXX", NULL);
	struct manifest *m = NULL;
	char *src = awkward_tree(base, &m);
	char *bin = applets(base);
	char *nc = g_build_filename(bin, "nc", NULL);
	g_assert_cmpint(symlink(busybox, nc), ==, 0);
	static const struct plan_archive tar = { 0, PLAN_ARCHIVE_TAR, PLAN_COMPRESS_NONE, 0 };
	char token[NETSERVE_TOKEN_LEN + 1];
	g_assert_cmpint(netserve_token(token), ==, 0);
	for (int round = 0; round < 2; round++) {
		/* round 0: an intruder's stream without the token; round 1: ferry's */
		char *err = NULL;
		int port = 0;
		int fd = loopback_socket(false, &port, &err);
		g_assert_cmpint(fd, >=, 0);
		close(fd);
		char *out = g_strdup_printf("%s/push-%d", base, round);
		g_assert_cmpint(g_mkdir(out, 0755), ==, 0);
		char *source = netserve_push_source(port, token);
		char *cmd = stream_unpack_command(&tar, source, out);
		char *path = g_strdup_printf("PATH=%s", bin);
		const char *argv[] = { busybox, "sh", "-c", cmd, NULL };
		const char *envp[] = { path, NULL };
		GPid pid;
		GError *gerr = NULL;
		if (!g_spawn_async(NULL, (char **)argv, (char **)envp,
				   G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDERR_TO_DEV_NULL, NULL,
				   NULL, &pid, &gerr))
			g_error("spawn: %s", gerr->message);
		int c = -1;
		for (int i = 0; i < 200 && c < 0; i++) {
			c = socket(AF_INET, SOCK_STREAM, 0);
			struct sockaddr_in sa = { .sin_family = AF_INET,
						  .sin_port = htons((uint16_t)port),
						  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
			if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
				close(c);
				c = -1;
				g_usleep(20000);
			}
		}
		g_assert_cmpint(c, >=, 0);
		if (round == 1) {
			char line[NETSERVE_TOKEN_LEN + 2];
			snprintf(line, sizeof(line), "%s\n", token);
			g_assert_cmpint(write(c, line, strlen(line)), ==, (ssize_t)strlen(line));
		} else {
			const char *bad = "ffffffffffffffffffffffffffffffff\n";
			g_assert_cmpint(write(c, bad, strlen(bad)), ==, (ssize_t)strlen(bad));
		}
		uint64_t bytes = 0;
		(void)stream_pack(&tar, src, m, c, 5000, &bytes, &err);
		free(err), err = NULL;
		finish_connection(c);
		int status = 0;
		g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
		g_spawn_close_pid(pid);
		char *why = NULL;
		if (round == 1) {
			g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
			if (!dataset_intact(m, out, true, &why))
				g_error("pushed tree: %s", why);
		} else {
			g_assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
			GDir *d = g_dir_open(out, 0, NULL);
			g_assert_null(g_dir_read_name(d)); /* nothing injected */
			g_dir_close(d);
		}
		free(why);
		g_free(path), free(cmd), free(source), g_free(out);
	}
	rm_tree(base, NULL);
	g_free(nc), g_free(bin), g_free(src), g_free(base);
	manifest_free(m);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	busybox = g_find_program_in_path("busybox");
	g_test_add_func("/stream/network-pull", test_network_pull);
	g_test_add_func("/stream/network-pull-gnu", test_network_pull_gnu);
	g_test_add_func("/stream/network-push-token", test_network_push_token);
	g_test_add_func("/stream/network-pull-streams", test_network_pull_streams);
	int r = g_test_run();
	g_free(busybox);
	return r;
}
