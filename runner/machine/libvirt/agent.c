/* SPDX-License-Identifier: MIT */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>

#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>
#include <openssl/evp.h>

#include "run.h"
#include "util.h"

/* Seconds libvirt waits for one file or status command: each moves at most ~130 KB. */
#define AGENT_CMD_TIMEOUT_S 30

#define _cleanup_json_ _cleanup_(json_decrefp)

static char *b64_encode(const void *buf, size_t len)
{
	size_t out = 4 * ((len + 2) / 3);
	char *s = xmalloc(out + 1);
	int n = EVP_EncodeBlock((unsigned char *)s, buf, (int)len);
	s[n < 0 ? 0 : n] = '\0';
	return s;
}

bool agent_b64_decode(const char *s, char **buf, size_t *len)
{
	size_t n = strlen(s);
	if (n % 4 != 0)
		return false;
	unsigned char *out = xmalloc(n / 4 * 3 + 1);
	int r = n ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)n) : 0;
	if (r < 0) {
		free(out);
		return false;
	}
	/* EVP_DecodeBlock counts the padding as zero bytes */
	size_t pad = (n >= 1 && s[n - 1] == '=') + (n >= 2 && s[n - 2] == '=');
	size_t m = (size_t)r - pad;
	out[m] = '\0';
	*buf = (char *)out;
	*len = m;
	return true;
}

/* Sends the JSON text of command name; the rest as agent_command(). */
static int command_text(virDomainPtr dom, const char *name, const char *text, int timeout_s,
			json_t **ret, char **err)
{
	/* libvirt 9.0 corrupts the agent stream past ~200 KB and the agent stays broken a while */
	if (strlen(text) > AGENT_MAX_COMMAND) {
		*err =
		    xasprintf("agent command '%s' is %zu bytes of JSON, over the %d bytes libvirt "
			      "can send safely",
			      name, strlen(text), AGENT_MAX_COMMAND);
		return -1;
	}
	_cleanup_free_ char *reply = virDomainQemuAgentCommand(dom, text, timeout_s, 0);
	if (!reply) {
		*err = xasprintf("agent command '%s' failed: %s", name, virGetLastErrorMessage());
		return -1;
	}
	json_error_t jerr;
	_cleanup_json_ json_t *root = json_loads(reply, 0, &jerr);
	json_t *r = root ? json_object_get(root, "return") : NULL;
	if (!r) {
		json_t *e = root ? json_object_get(root, "error") : NULL;
		const char *desc = e ? json_string_value(json_object_get(e, "desc")) : NULL;
		*err = xasprintf("agent command '%s' failed: %s", name,
				 desc ? desc : "malformed reply");
		return -1;
	}
	if (ret)
		*ret = json_incref(r);
	return 0;
}

int agent_command(virDomainPtr dom, const char *name, json_t *args, int timeout_s, json_t **ret,
		  char **err)
{
	_cleanup_json_ json_t *cmd = json_pack("{s:s}", "execute", name);
	if (args)
		json_object_set_new(cmd, "arguments", args);
	_cleanup_free_ char *text = json_dumps(cmd, JSON_COMPACT);
	if (!text) {
		*err = xasprintf("cannot encode agent command '%s'", name);
		return -1;
	}
	return command_text(dom, name, text, timeout_s, ret, err);
}

int agent_ping(virDomainPtr dom, int timeout_s, char **err)
{
	return agent_command(dom, "guest-ping", NULL, timeout_s, NULL, err);
}

void agent_exec_result_clear(struct agent_exec_result *r)
{
	free(r->out);
	free(r->err);
	*r = (struct agent_exec_result){ 0 };
}

static bool take_b64(json_t *status, const char *key, char **buf, size_t *len)
{
	const char *s = json_string_value(json_object_get(status, key));
	if (!s) {
		*buf = xstrdup("");
		*len = 0;
		return true;
	}
	return agent_b64_decode(s, buf, len);
}

/* Polls guest-exec-status of pid until it exited, about a second at most, so the agent forgets
 * it; false when the agent did not answer. */
static bool collect_status(virDomainPtr dom, json_int_t pid)
{
	for (int i = 0; i < 100; i++) {
		json_t *st = NULL;
		_cleanup_free_ char *e = NULL;
		if (agent_command(dom, "guest-exec-status", json_pack("{s:I}", "pid", pid),
				  AGENT_CMD_TIMEOUT_S, &st, &e) < 0)
			return false;
		bool done = json_is_true(json_object_get(st, "exited"));
		json_decref(st);
		if (done)
			break;
		run_sleep_ms(10);
	}
	return true;
}

/*
 * The agent has no command to end a process it started: ask the guest's kill (a POSIX guest;
 * on others this fails and changes nothing), then collect the status so the agent forgets it.
 */
static void kill_in_guest(virDomainPtr dom, json_int_t pid)
{
	char num[32];
	snprintf(num, sizeof(num), "%lld", (long long)pid);
	json_t *args = json_pack("{s:s, s:[s,s], s:b}", "path", "kill", "arg", "-KILL", num,
				 "capture-output", 0);
	json_t *ret = NULL;
	_cleanup_free_ char *e = NULL;
	if (agent_command(dom, "guest-exec", args, AGENT_CMD_TIMEOUT_S, &ret, &e) < 0)
		return;
	json_int_t kpid = json_integer_value(json_object_get(ret, "pid"));
	json_decref(ret);
	if (collect_status(dom, kpid))
		collect_status(dom, pid);
}

int agent_exec(virDomainPtr dom, const char *const *argv, const void *input, size_t input_len,
	       unsigned timeout_ms, struct agent_exec_result *r, char **err)
{
	*r = (struct agent_exec_result){ 0 };
	if (!argv || !argv[0]) {
		*err = xstrdup("guest-exec needs a program");
		return -1;
	}
	if (input_len > AGENT_CHUNK) {
		*err = xasprintf("guest-exec input of %zu bytes is over the %d bytes one agent "
				 "command can carry",
				 input_len, AGENT_CHUNK);
		return -1;
	}
	json_t *args = json_pack("{s:s, s:b}", "path", argv[0], "capture-output", 1);
	json_t *arr = json_array();
	for (size_t i = 1; argv[i]; i++)
		json_array_append_new(arr, json_string(argv[i]));
	json_object_set_new(args, "arg", arr);
	if (input_len) {
		_cleanup_free_ char *b = b64_encode(input, input_len);
		json_object_set_new(args, "input-data", json_string(b));
	}
	_cleanup_json_ json_t *started = NULL;
	if (agent_command(dom, "guest-exec", args, AGENT_CMD_TIMEOUT_S, &started, err) < 0)
		return -1;
	json_int_t pid = json_integer_value(json_object_get(started, "pid"));

	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	unsigned wait = 2;
	for (;;) {
		_cleanup_json_ json_t *st = NULL;
		_cleanup_free_ char *e = NULL;
		if (agent_command(dom, "guest-exec-status", json_pack("{s:I}", "pid", pid),
				  AGENT_CMD_TIMEOUT_S, &st, &e) < 0) {
			*err = xasprintf("'%s' in the guest: %s", argv[0], e);
			return -1;
		}
		if (json_is_true(json_object_get(st, "exited"))) {
			json_t *code = json_object_get(st, "exitcode");
			json_t *sig = json_object_get(st, "signal");
			r->exit_code = code ? (int)json_integer_value(code) : -1;
			r->signal = sig ? (int)json_integer_value(sig) : 0;
			if (!take_b64(st, "out-data", &r->out, &r->out_len) ||
			    !take_b64(st, "err-data", &r->err, &r->err_len)) {
				agent_exec_result_clear(r);
				*err = xasprintf("'%s' in the guest: malformed base64 output",
						 argv[0]);
				return -1;
			}
			if (json_is_true(json_object_get(st, "out-truncated")) ||
			    json_is_true(json_object_get(st, "err-truncated"))) {
				agent_exec_result_clear(r);
				*err = xasprintf("'%s' in the guest: output truncated by the agent",
						 argv[0]);
				return -1;
			}
			return 0;
		}
		if (run_interrupted()) {
			*err = xasprintf("'%s' in the guest: interrupted", argv[0]);
			r->interrupted = true;
			return -1;
		}
		if (now_ns() >= deadline) {
			*err = xasprintf("'%s' in the guest did not finish within %u ms", argv[0],
					 timeout_ms);
			r->timed_out = true;
			kill_in_guest(dom, pid);
			return -1;
		}
		run_sleep_ms(wait);
		if (wait < 50)
			wait *= 2;
	}
}

int agent_run(virDomainPtr dom, const char *const *argv, unsigned timeout_ms, char **out,
	      char **err)
{
	struct agent_exec_result r;
	if (agent_exec(dom, argv, NULL, 0, timeout_ms, &r, err) < 0)
		return -1;
	if (r.exit_code != 0) {
		/* the program's own words, without the trailing newline */
		size_t n = r.err_len;
		while (n > 0 && r.err[n - 1] == '\n')
			n--;
		if (r.signal)
			*err = xasprintf("'%s' in the guest was killed by signal %d", argv[0],
					 r.signal);
		else
			*err = xasprintf("'%s' in the guest exited with status %d%s%.*s", argv[0],
					 r.exit_code, n ? ": " : "", (int)n, r.err);
		agent_exec_result_clear(&r);
		return -1;
	}
	if (out)
		*out = TAKE_PTR(r.out);
	agent_exec_result_clear(&r);
	return 0;
}

int agent_file_open(virDomainPtr dom, const char *path, const char *mode, int64_t *handle,
		    char **err)
{
	_cleanup_json_ json_t *ret = NULL;
	_cleanup_free_ char *e = NULL;
	if (agent_command(dom, "guest-file-open",
			  json_pack("{s:s, s:s}", "path", path, "mode", mode), AGENT_CMD_TIMEOUT_S,
			  &ret, &e) < 0) {
		*err = xasprintf("cannot open '%s' in the guest: %s", path, e);
		return -1;
	}
	if (!json_is_integer(ret)) {
		*err = xasprintf("cannot open '%s' in the guest: no handle in the reply", path);
		return -1;
	}
	*handle = json_integer_value(ret);
	return 0;
}

int agent_file_write(virDomainPtr dom, int64_t handle, const void *buf, size_t len, char **err)
{
	return agent_file_write_chunked(dom, handle, buf, len, AGENT_CHUNK, err);
}

int agent_write_loop(const void *buf, size_t len, size_t chunk, agent_write_fn send, void *ud,
		     char **err)
{
	const char *p = buf;
	while (len > 0) {
		size_t n = len < chunk ? len : chunk;
		if (run_interrupted()) {
			*err = xstrdup("guest-file-write: interrupted");
			return -1;
		}
		if (run_deadline_passed()) {
			*err =
			    xasprintf("guest-file-write: the run timeout (%u ms) passed with %zu "
				      "bytes still to write",
				      run_deadline_timeout_ms(), len);
			return -1;
		}
		long long count = -1;
		if (send(ud, p, n, &count, err) < 0)
			return -1;
		/* qemu-ga writes a whole buffer or fails (fwrite to a file): a short count is a
		   full disk or an agent that is not one, and letting it go on a byte at a time
		   would send a command per byte (256 KiB: 262,144 commands) */
		if (count != (long long)n) {
			*err =
			    xasprintf("guest-file-write wrote %lld of %zu bytes: the guest agent "
				      "made %s",
				      count, n, count > 0 ? "a short write" : "no progress");
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

struct write_cmd {
	virDomainPtr dom;
	int64_t handle;
	char *text;
	size_t cap;
};

static const char write_head[] =
    "{\"execute\":\"guest-file-write\",\"arguments\":{\"handle\":%lld,\"buf-b64\":\"";

static int send_write(void *ud, const void *buf, size_t n, long long *count, char **err)
{
	struct write_cmd *w = ud;
	int k = snprintf(w->text, w->cap, write_head, (long long)w->handle);
	k += EVP_EncodeBlock((unsigned char *)w->text + k, (const unsigned char *)buf, (int)n);
	memcpy(w->text + k, "\"}}", sizeof("\"}}"));
	_cleanup_json_ json_t *ret = NULL;
	if (command_text(w->dom, "guest-file-write", w->text, AGENT_CMD_TIMEOUT_S, &ret, err) < 0)
		return -1;
	json_t *c = json_object_get(ret, "count");
	*count = json_is_integer(c) ? (long long)json_integer_value(c) : -1;
	return 0;
}

int agent_file_write_chunked(virDomainPtr dom, int64_t handle, const void *buf, size_t len,
			     size_t chunk, char **err)
{
	if (chunk == 0)
		chunk = AGENT_CHUNK;
	if (chunk > AGENT_MAX_CHUNK) {
		*err =
		    xasprintf("guest-file-write chunk of %zu bytes is over the %d bytes one agent "
			      "command can carry",
			      chunk, AGENT_MAX_CHUNK);
		return -1;
	}
	/*
	 * The command's text is written here, base64 straight into it: base64 and an integer need
	 * no JSON escaping, and jansson's copy, UTF-8 check and dump of the 170 KB string cost
	 * 5-10 ms of host CPU per 128 KiB chunk (bench/RESULTS-methods.md), next to a guest
	 * round trip of 30-130 ms under TCG.
	 */
	size_t most = len < chunk ? len : chunk;
	struct write_cmd w = { .dom = dom, .handle = handle };
	w.cap = sizeof(write_head) + 24 + 4 * ((most + 2) / 3) + sizeof("\"}}");
	w.text = xmalloc(w.cap);
	int rc = agent_write_loop(buf, len, chunk, send_write, &w, err);
	free(w.text);
	return rc;
}

int agent_file_read(virDomainPtr dom, int64_t handle, void *buf, size_t max, size_t *n, bool *eof,
		    char **err)
{
	if (max > AGENT_CHUNK)
		max = AGENT_CHUNK;
	_cleanup_json_ json_t *ret = NULL;
	if (agent_command(
		dom, "guest-file-read",
		json_pack("{s:I, s:I}", "handle", (json_int_t)handle, "count", (json_int_t)max),
		AGENT_CMD_TIMEOUT_S, &ret, err) < 0)
		return -1;
	_cleanup_free_ char *data = NULL;
	size_t len;
	if (!take_b64(ret, "buf-b64", &data, &len) || len > max) {
		*err = xstrdup("guest-file-read: malformed reply");
		return -1;
	}
	memcpy(buf, data, len);
	*n = len;
	*eof = json_is_true(json_object_get(ret, "eof"));
	return 0;
}

int agent_file_close(virDomainPtr dom, int64_t handle, char **err)
{
	return agent_command(dom, "guest-file-close",
			     json_pack("{s:I}", "handle", (json_int_t)handle), AGENT_CMD_TIMEOUT_S,
			     NULL, err);
}

int agent_push_file(virDomainPtr dom, const char *host_path, const char *guest_path,
		    uint64_t *bytes, char **err)
{
	return agent_push_file_chunked(dom, host_path, guest_path, AGENT_CHUNK, bytes, err);
}

int agent_push_file_chunked(virDomainPtr dom, const char *host_path, const char *guest_path,
			    size_t chunk, uint64_t *bytes, char **err)
{
	if (chunk == 0)
		chunk = AGENT_CHUNK;
	if (chunk > AGENT_MAX_CHUNK) {
		*err =
		    xasprintf("guest-file-write chunk of %zu bytes is over the %d bytes one agent "
			      "command can carry",
			      chunk, AGENT_MAX_CHUNK);
		return -1;
	}
	_cleanup_close_ int fd = open(host_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = xasprintf("cannot open '%s': %s", host_path, strerror(errno));
		return -1;
	}
	int64_t h;
	if (agent_file_open(dom, guest_path, "w", &h, err) < 0)
		return -1;
	_cleanup_free_ char *buf = xmalloc(chunk);
	uint64_t total = 0;
	for (;;) {
		ssize_t r = read(fd, buf, chunk);
		if (r < 0 && errno == EINTR && !run_interrupted())
			continue;
		if (r < 0) {
			*err = xasprintf("cannot read '%s': %s", host_path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		if (run_deadline_passed()) {
			*err = xasprintf("cannot write '%s' in the guest: the run timeout (%u ms) "
					 "passed",
					 guest_path, run_deadline_timeout_ms());
			goto fail;
		}
		_cleanup_free_ char *e = NULL;
		if (agent_file_write_chunked(dom, h, buf, (size_t)r, chunk, &e) < 0) {
			*err = xasprintf("cannot write '%s' in the guest: %s", guest_path, e);
			goto fail;
		}
		total += (uint64_t)r;
	}
	if (agent_file_close(dom, h, err) < 0)
		return -1;
	if (bytes)
		*bytes = total;
	return 0;
fail:;
	_cleanup_free_ char *ignored = NULL;
	agent_file_close(dom, h, &ignored);
	return -1;
}

int agent_read_file(virDomainPtr dom, const char *guest_path, size_t max, char **buf, size_t *len,
		    char **err)
{
	int64_t h;
	if (agent_file_open(dom, guest_path, "r", &h, err) < 0)
		return -1;
	_cleanup_free_ char *data = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		data = xgrow(data, &cap, n + AGENT_CHUNK + 1, 1);
		size_t got;
		bool eof;
		_cleanup_free_ char *e = NULL;
		if (agent_file_read(dom, h, data + n, AGENT_CHUNK, &got, &eof, &e) < 0) {
			*err = xasprintf("cannot read '%s' in the guest: %s", guest_path, e);
			_cleanup_free_ char *ignored = NULL;
			agent_file_close(dom, h, &ignored);
			return -1;
		}
		n += got;
		if (n > max) {
			*err = xasprintf("'%s' in the guest is larger than %zu bytes", guest_path,
					 max);
			_cleanup_free_ char *ignored = NULL;
			agent_file_close(dom, h, &ignored);
			return -1;
		}
		if (eof || got == 0)
			break;
	}
	if (agent_file_close(dom, h, err) < 0)
		return -1;
	data = xgrow(data, &cap, n + 1, 1);
	data[n] = '\0';
	*buf = TAKE_PTR(data);
	*len = n;
	return 0;
}
