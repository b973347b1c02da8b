/* SPDX-License-Identifier: MIT */
/* The private network of a run (netns.h): namespace, bridge, taps, sockets inside. */
#include "netns.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "proc.h"
#include "util.h"

#define NETNS_DIR        "/run/netns"
#define NETNS_GUESTS_MAX 200

struct tap {
	char *name;
	bool adopted;
};

struct netns {
	const struct run *run;
	char *name;
	char *path; /* NETNS_DIR/name */
	char *alias;
	unsigned next_guest;
	unsigned host_addrs; /* bit i: NETNS_HOST_ADDR's i-th successor is on the bridge */
	struct tap *taps;
	size_t n_taps, cap_taps;
	struct netns *next;
};

static struct netns *all;
static unsigned next_tap; /* tap names are per process: "fy<pid>n<k>" */

/* Run `ip ARGS...`; NULL-terminated argv without "ip". */
static int ip(char **out, char **err, const char *const *args)
{
	const char *argv[24] = { "ip" };
	size_t n = 1;
	for (; args[n - 1] && n < ELEMENTSOF(argv) - 1; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	return proc_run(argv, out, err);
}
#define IP(err, ...) ip(NULL, err, (const char *const[]){ __VA_ARGS__, NULL })

/* `ip ARGS` whose failure does not matter (removing what may be gone already). */
#define IP_QUIET(...)                                                                              \
	do {                                                                                       \
		char *e_ = NULL;                                                                   \
		(void)IP(&e_, __VA_ARGS__);                                                        \
		free(e_);                                                                          \
	} while (0)

const char *netns_name(const struct netns *ns)
{
	return ns->name;
}

struct netns *netns_find(const struct run *run)
{
	for (struct netns *ns = all; ns; ns = ns->next)
		if (ns->run == run)
			return ns;
	return NULL;
}

static void netns_free(struct netns *ns)
{
	for (size_t i = 0; i < ns->n_taps; i++)
		free(ns->taps[i].name);
	free(ns->taps);
	free(ns->name);
	free(ns->path);
	free(ns->alias);
	free(ns);
}

/* run_close(): after the domains; removes taps, bridge and namespace. */
static void netns_remove(void *data)
{
	struct netns *ns = data;
	for (struct netns **p = &all; *p; p = &(*p)->next)
		if (*p == ns) {
			*p = ns->next;
			break;
		}
	for (size_t i = 0; i < ns->n_taps; i++)
		netns_tap_remove(ns, ns->taps[i].name);
	/* explicitly: a socket still open somewhere would keep the namespace and its links */
	IP_QUIET("-n", ns->name, "link", "del", "dev", NETNS_BRIDGE);
	IP_QUIET("netns", "del", ns->name);
	netns_free(ns);
}

struct netns *netns_of_run(struct run *run, char **err)
{
	struct netns *ns = netns_find(run);
	if (ns)
		return ns;
	ns = xcalloc(1, sizeof(*ns));
	ns->run = run;
	ns->name = xasprintf("ferry-%s-net", run_id(run));
	ns->path = xasprintf("%s/%s", NETNS_DIR, ns->name);
	ns->alias = xasprintf("%s %s %ld", NETNS_ALIAS, run_id(run), (long)getpid());
	_cleanup_free_ char *e = NULL;
	if (IP(&e, "netns", "add", ns->name) < 0) {
		*err = xasprintf("cannot create network namespace '%s': %s", ns->name, e);
		netns_free(ns);
		return NULL;
	}
	ns->next = all;
	all = ns;
	run_defer(run, netns_remove, ns);
	if (IP(&e, "-n", ns->name, "link", "set", "lo", "up") < 0 ||
	    IP(&e, "-n", ns->name, "link", "add", NETNS_BRIDGE, "type", "bridge") < 0 ||
	    IP(&e, "-n", ns->name, "link", "set", "dev", NETNS_BRIDGE, "alias", ns->alias) < 0 ||
	    IP(&e, "-n", ns->name, "addr", "add", NETNS_HOST_ADDR "/24", "dev", NETNS_BRIDGE) < 0 ||
	    IP(&e, "-n", ns->name, "link", "set", "dev", NETNS_BRIDGE, "up") < 0) {
		*err = xasprintf("cannot set up the bridge in network namespace '%s': %s", ns->name,
				 e);
		return NULL; /* run_close removes what exists */
	}
	return ns;
}

int netns_tap_create(struct netns *ns, unsigned queues, char **tap, char **guest_addr, char **err)
{
	if (ns->next_guest >= NETNS_GUESTS_MAX) {
		*err = xasprintf("the private network has room for %d guests per run",
				 NETNS_GUESTS_MAX);
		return -1;
	}
	_cleanup_free_ char *name = xasprintf("fy%ldn%u", (long)getpid(), next_tap++);
	_cleanup_free_ char *e = NULL;
	int r = queues > 1 ? IP(&e, "tuntap", "add", "dev", name, "mode", "tap", "multi_queue")
			   : IP(&e, "tuntap", "add", "dev", name, "mode", "tap");
	if (r < 0) {
		*err = xasprintf("cannot create tap '%s': %s", name, e);
		return -1;
	}
	ns->taps = xgrow(ns->taps, &ns->cap_taps, ns->n_taps + 1, sizeof(*ns->taps));
	ns->taps[ns->n_taps++] = (struct tap){ xstrdup(name), false };
	/* the marker first: from here on `ferry doctor --reap` can prove the tap is ferry's */
	if (IP(&e, "link", "set", "dev", name, "alias", ns->alias) < 0) {
		*err = xasprintf("cannot mark tap '%s': %s", name, e);
		return -1;
	}
	*guest_addr = xasprintf("10.0.2.%u", NETNS_GUEST_FIRST + ns->next_guest++);
	*tap = TAKE_PTR(name);
	return 0;
}

int netns_tap_adopt(struct netns *ns, const char *tap, char **err)
{
	_cleanup_free_ char *e = NULL;
	if (IP(&e, "link", "set", "dev", tap, "netns", ns->name) < 0) {
		*err = xasprintf("cannot move tap '%s' into network namespace '%s': %s", tap,
				 ns->name, e);
		return -1;
	}
	for (size_t i = 0; i < ns->n_taps; i++)
		if (STREQ(ns->taps[i].name, tap))
			ns->taps[i].adopted = true;
	if (IP(&e, "-n", ns->name, "link", "set", "dev", tap, "master", NETNS_BRIDGE, "up") < 0) {
		*err =
		    xasprintf("cannot attach tap '%s' to the bridge in '%s': %s", tap, ns->name, e);
		return -1;
	}
	return 0;
}

void netns_tap_remove(struct netns *ns, const char *tap)
{
	for (size_t i = 0; i < ns->n_taps; i++) {
		if (!STREQ(ns->taps[i].name, tap))
			continue;
		/* a tap whose move failed is still in the root namespace */
		if (ns->taps[i].adopted)
			IP_QUIET("-n", ns->name, "link", "del", "dev", tap);
		else
			IP_QUIET("link", "del", "dev", tap);
		free(ns->taps[i].name);
		memmove(&ns->taps[i], &ns->taps[i + 1], (ns->n_taps - i - 1) * sizeof(*ns->taps));
		ns->n_taps--;
		return;
	}
}

int netns_host_addr(struct netns *ns, unsigned index, char **addr, char **err)
{
	if (index >= NETNS_HOST_ADDRS) {
		*err = xasprintf("the private network has %d host addresses", NETNS_HOST_ADDRS);
		return -1;
	}
	/* NETNS_HOST_ADDR is 10.0.2.2: the others follow it, below the guests' */
	_cleanup_free_ char *a = xasprintf("10.0.2.%u", 2 + index);
	if (index > 0 && !(ns->host_addrs & (1u << index))) {
		_cleanup_free_ char *cidr = xasprintf("%s/24", a), *e = NULL;
		if (IP(&e, "-n", ns->name, "addr", "add", cidr, "dev", NETNS_BRIDGE) < 0) {
			*err = xasprintf("cannot add address %s in network namespace '%s': %s", a,
					 ns->name, e);
			return -1;
		}
	}
	ns->host_addrs |= 1u << index;
	*addr = TAKE_PTR(a);
	return 0;
}

/* "ip netns exec NAME argv...": full has room for n entries; -1 with *err when argv is longer */
static int in_netns(const struct netns *ns, const char *const *argv, const char **full, size_t n,
		    char **err)
{
	size_t k = 0;
	full[k++] = "ip";
	full[k++] = "netns";
	full[k++] = "exec";
	full[k++] = ns->name;
	for (size_t i = 0; argv[i]; i++) {
		if (k + 1 >= n) {
			*err = xasprintf("'%s': too many arguments", argv[0]);
			return -1;
		}
		full[k++] = argv[i];
	}
	full[k] = NULL;
	return 0;
}

int netns_run(const struct netns *ns, const char *const *argv, char **out, char **err)
{
	const char *full[32];
	if (in_netns(ns, argv, full, ELEMENTSOF(full), err) < 0)
		return -1;
	return proc_run(full, out, err);
}

int netns_spawn(const struct netns *ns, const char *const *argv, const struct proc_opts *o,
		struct proc_result *r, char **err)
{
	/* a client's command line grows with the dataset (scp names every top-level entry) */
	size_t n = 0;
	while (argv[n])
		n++;
	_cleanup_free_ const char **full = xcalloc(n + 5, sizeof(*full));
	*r = (struct proc_result){ 0 };
	if (in_netns(ns, argv, full, n + 5, err) < 0)
		return -1;
	return proc_spawn(full, o, r, err);
}

/* ---- sockets inside the namespace ---- */

struct sock_req {
	const char *path;
	int domain, type;
	int fd;
	int error;
	const char *what;
};

/* setns() changes the namespace of the calling thread only: a short-lived thread enters the
 * namespace and creates the socket, which keeps that namespace for good. */
static void *sock_thread(void *arg)
{
	struct sock_req *r = arg;
	int nsfd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0) {
		r->error = errno;
		r->what = "open";
		return NULL;
	}
	if (setns(nsfd, CLONE_NEWNET) < 0) {
		r->error = errno;
		r->what = "setns";
		close(nsfd);
		return NULL;
	}
	close(nsfd);
	r->fd = socket(r->domain, r->type, 0);
	if (r->fd < 0) {
		r->error = errno;
		r->what = "socket";
	}
	return NULL;
}

int netns_socket(const struct netns *ns, int domain, int type, char **err)
{
	struct sock_req r = { .path = ns->path, .domain = domain, .type = type, .fd = -1 };
	pthread_t t;
	int rc = pthread_create(&t, NULL, sock_thread, &r);
	if (rc != 0) {
		*err = xasprintf("a socket in '%s': thread: %s", ns->name, strerror(rc));
		return -1;
	}
	pthread_join(t, NULL);
	if (r.fd < 0) {
		*err = xasprintf("a socket in '%s': %s: %s", ns->name, r.what, strerror(r.error));
		return -1;
	}
	return r.fd;
}

/* ---- leftovers (ferry doctor) ---- */

/* The pid in an alias "ferry-run <run id> <pid>" found in text after "alias ", or -1; *id gets
 * the run id (caller frees). */
static long alias_owner(const char *text, char **id)
{
	const char *a = strstr(text, "alias " NETNS_ALIAS " ");
	if (!a)
		return -1;
	a += strlen("alias " NETNS_ALIAS " ");
	size_t idl = strcspn(a, " \n\\");
	if (idl == 0 || a[idl] != ' ')
		return -1;
	char *end;
	errno = 0;
	long pid = strtol(a + idl + 1, &end, 10);
	if (errno || end == a + idl + 1 || pid <= 0 ||
	    (*end && *end != '\n' && *end != ' ' && *end != '\\'))
		return -1;
	if (id)
		*id = xstrndup(a, idl);
	return pid;
}

static void leftover_namespaces(bool reap, struct netns_leftovers *o)
{
	_cleanup_(closedirp) DIR *d = opendir(NETNS_DIR);
	if (!d)
		return; /* no namespaces at all */
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		size_t len = strlen(n);
		if (strncmp(n, "ferry-", 6) != 0 || len < 10 || !STREQ(n + len - 4, "-net"))
			continue;
		/* the marker: the bridge inside carries the alias of the run named by the
		 * namespace */
		_cleanup_free_ char *out = NULL, *e = NULL, *id = NULL;
		if (ip(&out, &e,
		       (const char *const[]){ "-n", n, "-o", "link", "show", "dev", NETNS_BRIDGE,
					      NULL }) < 0)
			continue;
		long pid = alias_owner(out, &id);
		_cleanup_free_ char *want = pid > 0 ? xasprintf("ferry-%s-net", id) : NULL;
		if (pid <= 0 || !STREQ(want, n))
			continue;
		if (proc_alive(pid) && pid != (long)getpid()) {
			o->live++;
			continue;
		}
		o->stale_ns++;
		if (!reap)
			continue;
		_cleanup_free_ char *links = NULL;
		(void)ip(&links, &e, (const char *const[]){ "-n", n, "-o", "link", "show", NULL });
		/* the taps ferry moved in carry its alias; delete them, then the namespace */
		char *save = NULL;
		for (char *l = links ? strtok_r(links, "\n", &save) : NULL; l;
		     l = strtok_r(NULL, "\n", &save)) {
			if (alias_owner(l, NULL) != pid)
				continue;
			char *c = strchr(l, ':');
			if (!c)
				continue;
			c += 2;
			c[strcspn(c, ":@ ")] = '\0';
			IP_QUIET("-n", n, "link", "del", "dev", c);
		}
		/* what the run started in there (share driver smb's smbd) would keep the namespace
		 * alive after its name is gone: only ferry starts processes in it */
		_cleanup_free_ char *pids = NULL;
		(void)ip(&pids, &e, (const char *const[]){ "netns", "pids", n, NULL });
		for (char *p = pids ? strtok_r(pids, "\n", &save) : NULL; p;
		     p = strtok_r(NULL, "\n", &save)) {
			long pid_in = strtol(p, NULL, 10);
			if (pid_in > 1 && pid_in != (long)getpid())
				kill((pid_t)pid_in, SIGKILL);
		}
		_cleanup_free_ char *e2 = NULL;
		if (IP(&e2, "netns", "del", n) == 0)
			o->reaped_ns++;
	}
}

static void leftover_taps(bool reap, struct netns_leftovers *o)
{
	_cleanup_free_ char *out = NULL, *e = NULL;
	if (ip(&out, &e, (const char *const[]){ "-o", "link", "show", "type", "tun", NULL }) < 0)
		return;
	char *save = NULL;
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		long pid = alias_owner(l, NULL);
		char *c = strchr(l, ':');
		if (pid <= 0 || !c)
			continue;
		c += 2;
		c[strcspn(c, ":@ ")] = '\0';
		_cleanup_free_ char *prefix = xasprintf("fy%ldn", pid);
		if (strncmp(c, prefix, strlen(prefix)) != 0)
			continue;
		if (proc_alive(pid) && pid != (long)getpid()) {
			o->live++;
			continue;
		}
		o->stale_taps++;
		_cleanup_free_ char *e2 = NULL;
		if (reap && IP(&e2, "link", "del", "dev", c) == 0)
			o->reaped_taps++;
	}
}

int netns_leftovers(bool reap, struct netns_leftovers *out, char **err)
{
	*out = (struct netns_leftovers){ 0 };
	const char *argv[] = { "ip", "-V", NULL };
	_cleanup_free_ char *e = NULL;
	if (proc_run(argv, NULL, &e) < 0) {
		*err = xasprintf("cannot list network namespaces: %s", e);
		return -1;
	}
	leftover_namespaces(reap, out);
	leftover_taps(reap, out);
	return 0;
}
