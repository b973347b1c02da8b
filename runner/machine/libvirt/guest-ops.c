/* SPDX-License-Identifier: MIT */
/*
 * The guest operations of the libvirt machine (machine.h, struct machine_guest_ops): commands and
 * files through the guest agent (agent.h), disks, channels and port forwards through libvirt
 * (vm.h), the private network through the run's namespace (netns.h). Every failure carries the
 * agent's or libvirt's words in its msg, and libvirt's last error at the failing call in its
 * detail.
 */
#include "machine-libvirt.h"

#include <string.h>

#include <jansson.h>
#include <libvirt/virterror.h>

#include "agent.h"
#include "netns.h"
#include "run.h"
#include "util.h"

/* Seconds libvirt waits for one guest-exec or guest-exec-status answer. */
#define CMD_TIMEOUT_S 30

#define _cleanup_json_ _cleanup_(json_decrefp)

_Static_assert(AGENT_MAX_CHUNK == MACHINE_FILE_CHUNK_MAX, "machine.h's chunk is the agent's");
_Static_assert(AGENT_CHUNK == MACHINE_FILE_CHUNK_DEFAULT, "machine.h's chunk is the agent's");
_Static_assert(NETNS_HOST_ADDRS == MACHINE_NET_HOST_ADDRS, "machine.h's addresses are netns's");

static struct vm *vm_of(struct machine_guest *g)
{
	return ((struct lv_guest *)g)->vm;
}

static virDomainPtr dom_of(struct machine_guest *g)
{
	return vm_domain(vm_of(g));
}

/* Fill e from a failed call's message (taken; NULL: "unknown error") and libvirt's last error. */
static int fail(struct machine_err *e, enum machine_err_kind kind, char *msg)
{
	machine_err_clear(e);
	e->kind = kind;
	e->msg = msg ? msg : xstrdup("unknown error");
	const char *lv = virGetLastErrorMessage();
	if (lv && *lv && strcmp(lv, "no error") != 0)
		e->detail = xstrdup(lv);
	return -1;
}

static int lv_exec(struct machine *m, struct machine_guest *g, const char *const *argv,
		   const void *input, size_t input_len, unsigned timeout_ms,
		   struct machine_exec_result *r, struct machine_err *e)
{
	struct agent_exec_result ar;
	char *err = NULL;
	if (agent_exec(dom_of(g), argv, input, input_len, timeout_ms, &ar, &err) < 0) {
		enum machine_err_kind k = ar.timed_out     ? MACHINE_ERR_TIMEOUT
					  : ar.interrupted ? MACHINE_ERR_INTERRUPTED
							   : MACHINE_ERR_FAILED;
		return fail(e, k, err);
	}
	*r = (struct machine_exec_result){ ar.exit_code, ar.signal, ar.out,
					   ar.out_len,   ar.err,    ar.err_len };
	return 0;
}

static int lv_spawn(struct machine *m, struct machine_guest *g, const char *const *argv,
		    int64_t *pid, struct machine_err *e)
{
	json_t *arr = json_array();
	for (size_t i = 1; argv[i]; i++)
		json_array_append_new(arr, json_string(argv[i]));
	json_t *args =
	    json_pack("{s:s, s:o, s:b}", "path", argv[0], "arg", arr, "capture-output", 1);
	_cleanup_json_ json_t *ret = NULL;
	char *err = NULL;
	if (agent_command(dom_of(g), "guest-exec", args, CMD_TIMEOUT_S, &ret, &err) < 0)
		return fail(e, MACHINE_ERR_FAILED, err);
	json_t *p = json_object_get(ret, "pid");
	if (!json_is_integer(p))
		return fail(e, MACHINE_ERR_FAILED, xstrdup("guest-exec returned no pid"));
	*pid = json_integer_value(p);
	return 0;
}

/* Decode the agent's base64 output member into a NUL-terminated string ("" when absent). */
static char *b64_member(json_t *st, const char *key)
{
	const char *s = json_string_value(json_object_get(st, key));
	char *out;
	size_t n;
	if (!s || !agent_b64_decode(s, &out, &n))
		return xstrdup("");
	return out;
}

static int lv_proc_status(struct machine *m, struct machine_guest *g, int64_t pid,
			  struct machine_proc_status *st, struct machine_err *e)
{
	_cleanup_json_ json_t *js = NULL;
	char *err = NULL;
	if (agent_command(dom_of(g), "guest-exec-status", json_pack("{s:I}", "pid", pid),
			  CMD_TIMEOUT_S, &js, &err) < 0)
		return fail(e, MACHINE_ERR_FAILED, err);
	if (!json_is_true(json_object_get(js, "exited")))
		return 0;
	json_t *code = json_object_get(js, "exitcode");
	json_t *sig = json_object_get(js, "signal");
	st->exited = true;
	st->exit_code = code ? (int)json_integer_value(code) : -1;
	st->signal = !code && sig ? (int)json_integer_value(sig) : 0;
	st->out = b64_member(js, "out-data");
	st->err = b64_member(js, "err-data");
	return 0;
}

static void lv_proc_kill(struct machine *m, struct machine_guest *g, int64_t pid)
{
	/* children first (their parent pid is read from /proc), so a pipeline does not linger
	 * holding a channel port or a socket. The parent pid is read by the shell's own `read`,
	 * not by a process per /proc entry: a grep each, over the Debian guest's hundred and more
	 * processes and kernel threads under TCG and load, can outlast the 20 s below, and the
	 * timeout then kills this script before its kill, leaving the process running. */
	_cleanup_free_ char *cmd =
	    xasprintf("k() { for s in /proc/[0-9]*/status; do p=; "
		      "while read -r a b; do if [ \"$a\" = PPid: ]; then p=$b; break; fi; done "
		      "2>/dev/null <\"$s\"; if [ \"$p\" = \"$1\" ]; then c=${s#/proc/}; "
		      "k \"${c%%/status}\"; fi; done; kill -KILL \"$1\" 2>/dev/null; }; "
		      "k %lld; true",
		      (long long)pid);
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	struct agent_exec_result r = { 0 };
	_cleanup_free_ char *err = NULL;
	if (agent_exec(dom_of(g), argv, NULL, 0, 20000, &r, &err) == 0)
		agent_exec_result_clear(&r);
	/* collect the status so the agent forgets the process */
	for (int i = 0; i < 50; i++) {
		_cleanup_json_ json_t *st = NULL;
		_cleanup_free_ char *e = NULL;
		if (agent_command(dom_of(g), "guest-exec-status", json_pack("{s:I}", "pid", pid),
				  CMD_TIMEOUT_S, &st, &e) < 0 ||
		    json_is_true(json_object_get(st, "exited")))
			return;
		run_sleep_ms(20);
	}
}

static int lv_file_open(struct machine *m, struct machine_guest *g, const char *path,
			const char *mode, int64_t *handle, struct machine_err *e)
{
	char *err = NULL;
	return agent_file_open(dom_of(g), path, mode, handle, &err) < 0
		   ? fail(e, MACHINE_ERR_FAILED, err)
		   : 0;
}

static int lv_file_write(struct machine *m, struct machine_guest *g, int64_t handle,
			 const void *buf, size_t len, size_t chunk, struct machine_err *e)
{
	char *err = NULL;
	if (agent_file_write_chunked(dom_of(g), handle, buf, len, chunk, &err) < 0)
		return fail(e, run_interrupted() ? MACHINE_ERR_INTERRUPTED : MACHINE_ERR_FAILED,
			    err);
	return 0;
}

static int lv_file_read(struct machine *m, struct machine_guest *g, int64_t handle, void *buf,
			size_t max, size_t *n, bool *eof, struct machine_err *e)
{
	char *err = NULL;
	return agent_file_read(dom_of(g), handle, buf, max, n, eof, &err) < 0
		   ? fail(e, MACHINE_ERR_FAILED, err)
		   : 0;
}

static int lv_file_close(struct machine *m, struct machine_guest *g, int64_t handle,
			 struct machine_err *e)
{
	char *err = NULL;
	return agent_file_close(dom_of(g), handle, &err) < 0 ? fail(e, MACHINE_ERR_FAILED, err) : 0;
}

static int lv_push_file(struct machine *m, struct machine_guest *g, const char *host_path,
			const char *guest_path, size_t chunk, uint64_t *bytes,
			struct machine_err *e)
{
	char *err = NULL;
	if (agent_push_file_chunked(dom_of(g), host_path, guest_path, chunk, bytes, &err) < 0)
		return fail(e, run_interrupted() ? MACHINE_ERR_INTERRUPTED : MACHINE_ERR_FAILED,
			    err);
	return 0;
}

static int lv_read_file(struct machine *m, struct machine_guest *g, const char *path, size_t max,
			char **buf, size_t *len, struct machine_err *e)
{
	char *err = NULL;
	return agent_read_file(dom_of(g), path, max, buf, len, &err) < 0
		   ? fail(e, MACHINE_ERR_FAILED, err)
		   : 0;
}

static int lv_disk_plug(struct machine *m, struct machine_guest *g, const struct disk_config *d,
			unsigned timeout_ms, struct machine_err *e)
{
	char *err = NULL;
	return vm_disk_plug(vm_of(g), d, timeout_ms, &err) < 0 ? fail(e, MACHINE_ERR_FAILED, err)
							       : 0;
}

static int lv_disk_attach(struct machine *m, struct machine_guest *g, const struct disk_config *d,
			  unsigned timeout_ms, char **dev, struct machine_err *e)
{
	char *err = NULL;
	return vm_disk_attach(vm_of(g), d, timeout_ms, dev, &err) < 0
		   ? fail(e, MACHINE_ERR_FAILED, err)
		   : 0;
}

static char *lv_disk_wait_command(struct machine *m, const char *serial, unsigned timeout_ms)
{
	return vm_disk_wait_command(serial, timeout_ms);
}

static int lv_disk_unplug(struct machine *m, struct machine_guest *g, const char *serial,
			  unsigned timeout_ms, struct machine_err *e)
{
	char *err = NULL;
	return vm_disk_detach(vm_of(g), serial, timeout_ms, &err) < 0
		   ? fail(e, MACHINE_ERR_FAILED, err)
		   : 0;
}

static int lv_channel_open(struct machine *m, struct machine_guest *g, const char *name, int *fd,
			   struct machine_err *e)
{
	char *err = NULL;
	return vm_channel_open(vm_of(g), name, fd, &err) < 0 ? fail(e, MACHINE_ERR_FAILED, err) : 0;
}

static int lv_hostfwd(struct machine *m, struct machine_guest *g, int host_port, int guest_port,
		      struct machine_err *e)
{
	char *err = NULL;
	return vm_hostfwd_add(vm_of(g), host_port, guest_port, &err) < 0
		   ? fail(e, MACHINE_ERR_FAILED, err)
		   : 0;
}

static const char *lv_net_guest_addr(struct machine *m, struct machine_guest *g)
{
	return vm_nic_guest_addr(vm_of(g));
}

static int lv_net_socket(struct machine *m, int domain, int type, int *fd, const char **host_addr,
			 struct machine_err *e)
{
	struct netns *ns = netns_find(((struct lv_machine *)m)->run);
	if (!ns)
		return machine_err_set(e, MACHINE_ERR_FAILED, "the run has no private network");
	char *err = NULL;
	int s = netns_socket(ns, domain, type, &err);
	if (s < 0)
		return fail(e, MACHINE_ERR_FAILED, err);
	*fd = s;
	*host_addr = NETNS_HOST_ADDR;
	return 0;
}

static int lv_net_host_addr(struct machine *m, unsigned index, char **addr, struct machine_err *e)
{
	struct netns *ns = netns_find(((struct lv_machine *)m)->run);
	if (!ns)
		return machine_err_set(e, MACHINE_ERR_FAILED, "the run has no private network");
	char *err = NULL;
	return netns_host_addr(ns, index, addr, &err) < 0 ? fail(e, MACHINE_ERR_FAILED, err) : 0;
}

static int lv_net_run(struct machine *m, const char *const *argv, char **out, struct machine_err *e)
{
	struct netns *ns = netns_find(((struct lv_machine *)m)->run);
	if (!ns)
		return machine_err_set(e, MACHINE_ERR_FAILED, "the run has no private network");
	char *err = NULL;
	return netns_run(ns, argv, out, &err) < 0 ? fail(e, MACHINE_ERR_FAILED, err) : 0;
}

static int lv_net_spawn(struct machine *m, const char *const *argv, const struct proc_opts *o,
			struct proc_result *r, struct machine_err *e)
{
	struct netns *ns = netns_find(((struct lv_machine *)m)->run);
	if (!ns)
		return machine_err_set(e, MACHINE_ERR_FAILED, "the run has no private network");
	char *err = NULL;
	return netns_spawn(ns, argv, o, r, &err) < 0 ? fail(e, MACHINE_ERR_FAILED, err) : 0;
}

static const char *lv_nic_no_vhost_reason(struct machine *m, struct machine_guest *g)
{
	return vm_nic_no_vhost_reason(vm_of(g));
}

static bool lv_has_virtiofs(struct machine *m)
{
	return vm_virtiofsd_path() != NULL;
}

static bool lv_share_maps_links(struct machine *m)
{
	return true; /* QEMU's virtio-9p, security_model=mapped-xattr */
}

const struct machine_guest_ops machine_libvirt_guest_ops = {
	.exec = lv_exec,
	.spawn = lv_spawn,
	.proc_status = lv_proc_status,
	.proc_kill = lv_proc_kill,
	.file_open = lv_file_open,
	.file_write = lv_file_write,
	.file_read = lv_file_read,
	.file_close = lv_file_close,
	.push_file = lv_push_file,
	.read_file = lv_read_file,
	.disk_plug = lv_disk_plug,
	.disk_attach = lv_disk_attach,
	.disk_wait_command = lv_disk_wait_command,
	.disk_unplug = lv_disk_unplug,
	.channel_open = lv_channel_open,
	.hostfwd = lv_hostfwd,
	.net_guest_addr = lv_net_guest_addr,
	.net_socket = lv_net_socket,
	.net_host_addr = lv_net_host_addr,
	.net_run = lv_net_run,
	.net_spawn = lv_net_spawn,
	.nic_no_vhost_reason = lv_nic_no_vhost_reason,
	.has_virtiofs = lv_has_virtiofs,
	.share_maps_links = lv_share_maps_links,
};

struct machine_guest *machine_libvirt_guest_wrap(struct machine *m, struct vm *vm,
						 const struct disk_config *target,
						 const char *target_dev)
{
	(void)m;
	struct lv_guest *g = xcalloc(1, sizeof(*g));
	g->base.name = xstrdup(vm_name(vm));
	g->vm = vm;
	if (target) {
		g->target = *target;
		g->cfg.disk = NULL;
	}
	g->target_dev = target_dev ? xstrdup(target_dev) : NULL;
	return &g->base;
}

void machine_libvirt_guest_unwrap(struct machine_guest *mg)
{
	struct lv_guest *g = (struct lv_guest *)mg;
	if (!g)
		return;
	free(g->base.name);
	free(g->target_dev);
	free(g);
}
