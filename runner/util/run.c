/* SPDX-License-Identifier: MIT */
#include "run.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fs.h"
#include "util.h"

struct owned {
	char *key;
	const struct run_owned_ops *ops;
	void *data;
};

struct deferred {
	void (*fn)(void *data);
	void *data;
};

struct run {
	char *id;
	char *dir;
	unsigned next_domain;
	struct owned *owned;
	size_t n_owned, cap_owned;
	struct deferred *deferred;
	size_t n_deferred, cap_deferred;
	struct run *next; /* in open_runs */
};

/* What ends a run early, cleaning up (ferry(1) SIGNALS). */
static const int run_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM };

/* Every open run, for the atexit backstop. */
static struct run *open_runs;
static volatile sig_atomic_t got_signal; /* the first signal */
static volatile sig_atomic_t n_signals;
static int sig_pipe[2] = { -1, -1 };

/* The second signal's deadline passed: the cleanup hangs. Exit as the first signal says; the
 * domains die with the connection (auto-destroy), the run directory is left for doctor --reap. */
static void on_deadline(int sig)
{
	(void)sig;
	_exit(128 + got_signal);
}

static void on_signal(int sig)
{
	int saved = errno;
	/* nothing to clean up, or a third signal: die the default way at once */
	if (!open_runs || n_signals >= 2) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	if (n_signals++ == 0) {
		got_signal = sig;
	} else {
		/* a second signal: go on cleaning up what can be, but for RUN_SECOND_SIGNAL_S at
		 * most */
		struct sigaction sa = { .sa_handler = on_deadline };
		sigemptyset(&sa.sa_mask);
		sigaction(SIGALRM, &sa, NULL);
		alarm(RUN_SECOND_SIGNAL_S);
	}
	if (sig_pipe[1] >= 0) {
		char c = (char)sig;
		/* non-blocking: a full pipe already says "interrupted" */
		ssize_t r = write(sig_pipe[1], &c, 1);
		(void)r;
	}
	errno = saved;
}

static void cleanup_at_exit(void)
{
	while (open_runs)
		run_close(open_runs, NULL);
}

static void install_handlers(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		sig_pipe[0] = sig_pipe[1] = -1;
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ELEMENTSOF(run_signals); i++)
		sigaction(run_signals[i], &sa, NULL);
	atexit(cleanup_at_exit);
}

int run_interrupted(void)
{
	return got_signal;
}

void run_sleep_ms(unsigned long ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !run_interrupted())
		;
}

static _Atomic uint64_t deadline_ns, deadline_timeout_ns;

void run_set_deadline(uint64_t mono_ns, uint64_t timeout_ns)
{
	deadline_timeout_ns = mono_ns ? timeout_ns : 0;
	deadline_ns = mono_ns;
}

unsigned run_deadline_timeout_ms(void)
{
	uint64_t t = deadline_timeout_ns / 1000000u;
	return t > UINT_MAX ? UINT_MAX : (unsigned)t;
}

bool run_deadline_passed(void)
{
	uint64_t d = deadline_ns;
	return d && now_ns() >= d;
}

unsigned run_deadline_clamp_ms(unsigned timeout_ms)
{
	uint64_t d = deadline_ns, now = now_ns();
	if (!d)
		return timeout_ms;
	uint64_t left = d > now ? (d - now + 999999) / 1000000 : 1;
	return left < timeout_ms ? (unsigned)left : timeout_ms;
}

int run_signal_fd(void)
{
	return sig_pipe[0];
}

const char *run_base_dir(void)
{
	const char *e = getenv("FERRY_RUN_DIR");
	return e && *e ? e : RUN_DIR_DEFAULT;
}

struct run *run_open(char **err)
{
	const char *base = run_base_dir();
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32];

	install_handlers();
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	if (mkdir_p(base, 0755, NULL) < 0) {
		*err = xasprintf("cannot create the run directory '%s': %s", base, strerror(errno));
		return NULL;
	}
	struct run *r = xcalloc(1, sizeof(*r));
	/* two runs of one process in the same second get a suffix */
	for (unsigned i = 0;; i++) {
		free(r->id);
		r->id = i ? xasprintf("%s-%ld.%u", stamp, (long)getpid(), i)
			  : xasprintf("%s-%ld", stamp, (long)getpid());
		free(r->dir);
		r->dir = xasprintf("%s/%s", base, r->id);
		if (mkdir(r->dir, 0755) == 0)
			break;
		if (errno != EEXIST || i > 1000) {
			*err = xasprintf("cannot create the run directory '%s': %s", r->dir,
					 strerror(errno));
			free(r->id);
			free(r->dir);
			free(r);
			return NULL;
		}
	}
	/* mkdir applies the umask: QEMU (libvirt-qemu) must traverse it */
	chmod(r->dir, 0755);
	r->next = open_runs;
	open_runs = r;
	return r;
}

const char *run_id(const struct run *r)
{
	return r->id;
}

const char *run_dir(const struct run *r)
{
	return r->dir;
}

char *run_path(struct run *r, const char *sub, const char *name)
{
	/* names come from plans (cell ids hold sweep values, VM and entry names): one component
	 * each, so "x/../../../tmp/trap" stays a name inside the run directory */
	_cleanup_free_ char *leaf = path_component(name);
	if (sub) {
		_cleanup_free_ char *d = xasprintf("%s/%s", r->dir, sub);
		(void)mkdir_p(d, 0755, NULL);
		return xasprintf("%s/%s", d, leaf);
	}
	return xasprintf("%s/%s", r->dir, leaf);
}

char *run_domain_name(struct run *r)
{
	return xasprintf("ferry-%s-%u", r->id, r->next_domain++);
}

void run_own(struct run *r, const char *key, const struct run_owned_ops *ops, void *data)
{
	r->owned = xgrow(r->owned, &r->cap_owned, r->n_owned + 1, sizeof(*r->owned));
	r->owned[r->n_owned++] = (struct owned){ xstrdup(key), ops, data };
}

void run_disown(struct run *r, const char *key)
{
	/* destroyed by its owner after its run was closed: run_close already destroyed it */
	bool open = false;
	for (struct run *p = open_runs; p && !open; p = p->next)
		open = p == r;
	if (!open)
		return;
	for (size_t i = 0; i < r->n_owned; i++) {
		if (STREQ(r->owned[i].key, key)) {
			r->owned[i].ops->release(r->owned[i].data);
			free(r->owned[i].key);
			memmove(&r->owned[i], &r->owned[i + 1],
				(r->n_owned - i - 1) * sizeof(*r->owned));
			r->n_owned--;
			return;
		}
	}
}

void run_defer(struct run *r, void (*fn)(void *data), void *data)
{
	r->deferred = xgrow(r->deferred, &r->cap_deferred, r->n_deferred + 1, sizeof(*r->deferred));
	r->deferred[r->n_deferred++] = (struct deferred){ fn, data };
}

int run_close(struct run *r, char **err)
{
	int ret = 0;
	if (!r)
		return 0;
	for (struct run **p = &open_runs; *p; p = &(*p)->next) {
		if (*p == r) {
			*p = r->next;
			break;
		}
	}
	/* newest first: a domain may use files created after an earlier one */
	for (size_t i = r->n_owned; i-- > 0;) {
		struct owned *o = &r->owned[i];
		_cleanup_free_ char *why = NULL;
		if (o->ops->destroy(o->data, &why) < 0) {
			if (err && !*err)
				*err = TAKE_PTR(why);
			ret = -1;
		}
		o->ops->release(o->data);
		free(o->key);
	}
	free(r->owned);
	for (size_t i = r->n_deferred; i-- > 0;)
		r->deferred[i].fn(r->deferred[i].data);
	free(r->deferred);
	if (rm_tree(r->dir, NULL) < 0) {
		if (err && !*err)
			*err = xasprintf("cannot remove the run directory '%s': %s", r->dir,
					 strerror(errno));
		ret = -1;
	}
	free(r->id);
	free(r->dir);
	free(r);
	return ret;
}

bool run_parse_domain_name(const char *name, char **id, long *pid)
{
	if (strncmp(name, "ferry-", 6) != 0)
		return false;
	const char *s = name + 6;
	const char *last = strrchr(s, '-');
	if (!last || last == s)
		return false;
	/* the run id is "STAMP-PID" or "STAMP-PID.K" */
	_cleanup_free_ char *rid = xstrndup(s, (size_t)(last - s));
	const char *dash = strchr(rid, '-');
	if (!dash || !last[1])
		return false;
	char *end;
	errno = 0;
	long p = strtol(dash + 1, &end, 10);
	if (errno || end == dash + 1 || (*end && *end != '.') || p <= 0)
		return false;
	if (pid)
		*pid = p;
	if (id)
		*id = TAKE_PTR(rid);
	return true;
}
