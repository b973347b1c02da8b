/* SPDX-License-Identifier: MIT */
/* ferry's storage pool on a libvirt host that does not share ferry's filesystem (hoststore.h). */
#include "hoststore.h"
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libvirt/virterror.h>

#include <libxml/uri.h>

#include "cleanup.h"
#include "fs.h"
#include "hash.h"
#include "run.h"
#include "util.h"
#include "vm.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(virStoragePoolPtr, virStoragePoolFree)
DEFINE_TRIVIAL_CLEANUP_FUNC(virStorageVolPtr, virStorageVolFree)

struct hoststore {
	virConnectPtr conn;
	virStoragePoolPtr pool;
	struct run *run;
	char *prefix;  /* "ferry-<run id>-" */
	char **labels; /* run volumes created and not yet deleted */
	size_t n_labels, cap_labels;
};

bool hoststore_uri_remote(const char *uri)
{
	if (!uri)
		return false;
	xmlURIPtr u = xmlParseURI(uri);
	if (!u)
		return true; /* libvirt will refuse it; nothing is assumed local */
	const char *plus = u->scheme ? strchr(u->scheme, '+') : NULL;
	bool remote = (u->server && *u->server) || (plus && !STREQ(plus, "+unix"));
	xmlFreeURI(u);
	return remote;
}

/* The stores of the open runs, by connection (a process has few). */
static struct hoststore **stores;
static size_t n_stores;

struct hoststore *hoststore_find(virConnectPtr conn)
{
	for (size_t i = 0; i < n_stores; i++)
		if (stores[i]->conn == conn)
			return stores[i];
	return NULL;
}

static void unregister(struct hoststore *hs)
{
	for (size_t i = 0; i < n_stores; i++)
		if (stores[i] == hs) {
			stores[i] = stores[--n_stores];
			break;
		}
	if (!n_stores) {
		free(stores);
		stores = NULL;
	}
}

static const char pool_xml[] = "<pool type='dir'><name>" HOSTSTORE_POOL "</name>"
			       "<target><path>" HOSTSTORE_POOL_DIR "</path>"
			       "<permissions><mode>0755</mode></permissions></target></pool>";

/* ferry's pool on conn, defined, built and started when needed. Two ferry processes may do
 * this at once (a fan-out over two URIs of one host): whatever the other did first is fine. */
static virStoragePoolPtr pool_get(virConnectPtr conn, bool create, char **err)
{
	for (int attempt = 0; attempt < 3; attempt++) {
		virStoragePoolPtr p = virStoragePoolLookupByName(conn, HOSTSTORE_POOL);
		if (!p && !create)
			return NULL;
		if (!p) {
			p = virStoragePoolDefineXML(conn, pool_xml, 0);
			if (!p)
				continue; /* defined by another process meanwhile: look again */
			if (virStoragePoolBuild(p, 0) < 0) {
				*err = xasprintf("cannot build storage pool '" HOSTSTORE_POOL
						 "' at " HOSTSTORE_POOL_DIR ": %s",
						 virGetLastErrorMessage());
				virStoragePoolFree(p);
				return NULL;
			}
		}
		if (virStoragePoolIsActive(p) != 1 && virStoragePoolCreate(p, 0) < 0 &&
		    virStoragePoolIsActive(p) != 1) {
			*err = xasprintf("cannot start storage pool '" HOSTSTORE_POOL "': %s",
					 virGetLastErrorMessage());
			virStoragePoolFree(p);
			return NULL;
		}
		return p;
	}
	*err = xasprintf("cannot define storage pool '" HOSTSTORE_POOL "': %s",
			 virGetLastErrorMessage());
	return NULL;
}

static void run_cleanup(void *data)
{
	hoststore_free(data);
}

struct hoststore *hoststore_open(virConnectPtr conn, struct run *r, char **err)
{
	virStoragePoolPtr p = pool_get(conn, true, err);
	if (!p)
		return NULL;
	/* volumes another connection created are in libvirt's list already; files written
	 * behind libvirt's back are not ferry's business */
	struct hoststore *hs = xcalloc(1, sizeof(*hs));
	virConnectRef(conn);
	hs->conn = conn;
	hs->pool = p;
	hs->run = r;
	if (r) {
		hs->prefix = xasprintf("ferry-%s-", run_id(r));
		stores = xrealloc(stores, (n_stores + 1) * sizeof(*stores));
		stores[n_stores++] = hs;
		run_defer(r, run_cleanup, hs);
	}
	return hs;
}

void hoststore_free(struct hoststore *hs)
{
	if (!hs)
		return;
	/* what the run did not delete itself (an error path, an interrupt) */
	while (hs->n_labels)
		hoststore_delete(hs, hs->labels[hs->n_labels - 1]);
	free(hs->labels);
	unregister(hs);
	virStoragePoolFree(hs->pool);
	virConnectClose(hs->conn);
	free(hs->prefix);
	free(hs);
}

/* ---- upload and download streams ---- */

static int src_read(virStreamPtr st, char *data, size_t n, void *opaque)
{
	(void)st;
	ssize_t got;
	do
		got = read(*(int *)opaque, data, n);
	while (got < 0 && errno == EINTR);
	return got < 0 ? -1 : (int)got;
}

/* Where the next data or hole of the file starts (lseek SEEK_DATA/SEEK_HOLE). */
static int src_in_data(virStreamPtr st, int *in_data, long long *length, void *opaque)
{
	(void)st;
	int fd = *(int *)opaque;
	off_t cur = lseek(fd, 0, SEEK_CUR);
	off_t end = lseek(fd, 0, SEEK_END);
	if (cur < 0 || end < 0)
		return -1;
	off_t data, hole;
	int r = fd_next_data(fd, cur, end, &data, &hole);
	if (r < 0)
		return -1;
	/* a hole up to the next data, or up to the end */
	*in_data = r > 0 && data == cur;
	*length = (r == 0 ? end : *in_data ? hole : data) - cur;
	return lseek(fd, cur, SEEK_SET) < 0 ? -1 : 0;
}

static int src_skip(virStreamPtr st, long long offset, void *opaque)
{
	(void)st;
	return lseek(*(int *)opaque, (off_t)offset, SEEK_CUR) < 0 ? -1 : 0;
}

/* Upload the file at fd (size bytes) into vol, holes as holes. */
static int upload(struct hoststore *hs, virStorageVolPtr vol, int fd, uint64_t size,
		  const char *what, char **err)
{
	virStreamPtr st = virStreamNew(hs->conn, 0);
	if (!st) {
		*err = xasprintf("cannot upload %s: %s", what, virGetLastErrorMessage());
		return -1;
	}
	int rc = -1;
	if (virStorageVolUpload(vol, st, 0, size, VIR_STORAGE_VOL_UPLOAD_SPARSE_STREAM) < 0 ||
	    virStreamSparseSendAll(st, src_read, src_in_data, src_skip, &fd) < 0 ||
	    virStreamFinish(st) < 0) {
		*err = xasprintf("cannot upload %s to the host's storage pool '" HOSTSTORE_POOL
				 "': %s",
				 what, virGetLastErrorMessage());
		virStreamAbort(st);
	} else {
		rc = 0;
	}
	virStreamFree(st);
	return rc;
}

struct sink {
	char *buf;
	size_t len, max;
};

static int sink_write(virStreamPtr st, const char *data, size_t n, void *opaque)
{
	(void)st;
	struct sink *s = opaque;
	size_t room = s->max - s->len;
	size_t k = n < room ? n : room;
	memcpy(s->buf + s->len, data, k);
	s->len += k;
	return (int)n;
}

/* ---- volumes ---- */

static char *vol_xml(const char *name, uint64_t capacity, uint64_t allocation)
{
	return xasprintf("<volume><name>%s</name>"
			 "<capacity unit='bytes'>%" PRIu64 "</capacity>"
			 "<allocation unit='bytes'>%" PRIu64 "</allocation>"
			 "<target><format type='raw'/>"
			 "<permissions><mode>0644</mode></permissions></target></volume>",
			 name, capacity, allocation);
}

static virStorageVolPtr vol_create(struct hoststore *hs, const char *name, uint64_t capacity,
				   uint64_t allocation, char **err)
{
	_cleanup_free_ char *xml = vol_xml(name, capacity, allocation);
	virStorageVolPtr v = virStorageVolCreateXML(hs->pool, xml, 0);
	if (!v)
		*err = xasprintf("cannot create volume '%s' in the host's storage pool "
				 "'" HOSTSTORE_POOL "': %s",
				 name, virGetLastErrorMessage());
	return v;
}

static void vol_delete_name(struct hoststore *hs, const char *name)
{
	_cleanup_(virStorageVolFreep) virStorageVolPtr v =
	    virStorageVolLookupByName(hs->pool, name);
	if (v)
		(void)virStorageVolDelete(v, 0);
}

static char *vol_path(virStorageVolPtr v, const char *name, char **err)
{
	char *p = virStorageVolGetPath(v);
	if (!p)
		*err = xasprintf("cannot find the path of volume '%s': %s", name,
				 virGetLastErrorMessage());
	return p;
}

static int open_regular(const char *path, struct stat *st, char **err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, st) < 0) {
		*err = xasprintf("cannot open '%s': %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		*err = xasprintf("'%s' is %s, not a regular file", path, file_kind(st->st_mode));
		close(fd);
		return -1;
	}
	return fd;
}

char *hoststore_guest_volume_name(const char *local_path, const char *what, char **err)
{
	struct stat st;
	_cleanup_close_ int fd = open_regular(local_path, &st, err);
	if (fd < 0)
		return NULL;
	unsigned char sum[SHA256_BYTES];
	char hex[SHA256_HEX];
	uint64_t size = 0;
	if (sha256_fd(fd, sum, &size) < 0) {
		*err = xasprintf("cannot read '%s': %s", local_path, strerror(errno));
		return NULL;
	}
	sha256_hex(sum, hex);
	hex[16] = '\0';
	return xasprintf("guest-%s-%s", hex, what);
}

/*
 * Wait while volume v grows without its marker volume ok: another process is uploading it.
 * Returns the marker once it appears, NULL when v stopped growing for 5 s without one (an
 * upload that died half way) or went away.
 */
static virStorageVolPtr wait_upload(struct hoststore *hs, virStorageVolPtr v, const char *ok)
{
	unsigned long long last = 0;
	for (int still = 0; still < 50 && !run_interrupted(); still++) {
		virStorageVolPtr okv = virStorageVolLookupByName(hs->pool, ok);
		if (okv)
			return okv;
		virStorageVolInfo info;
		if (virStorageVolGetInfo(v, &info) < 0)
			return NULL;
		if (info.allocation != last) {
			last = info.allocation;
			still = 0;
		}
		run_sleep_ms(100);
	}
	return NULL;
}

int hoststore_guest_file(struct hoststore *hs, const char *local_path, const char *what,
			 char **remote_path, char **err)
{
	struct stat st;
	_cleanup_close_ int fd = open_regular(local_path, &st, err);
	if (fd < 0)
		return -1;
	unsigned char sum[SHA256_BYTES];
	char hex[SHA256_HEX];
	uint64_t size = 0;
	if (sha256_fd(fd, sum, &size) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
		*err = xasprintf("cannot read '%s': %s", local_path, strerror(errno));
		return -1;
	}
	sha256_hex(sum, hex);
	hex[16] = '\0';
	_cleanup_free_ char *name = xasprintf("guest-%s-%s", hex, what);
	_cleanup_free_ char *ok = xasprintf("%s.ok", name);
	_cleanup_(virStorageVolFreep) virStorageVolPtr okv =
	    virStorageVolLookupByName(hs->pool, ok);
	_cleanup_(virStorageVolFreep) virStorageVolPtr v =
	    virStorageVolLookupByName(hs->pool, name);
	if (okv && v) {
		*remote_path = vol_path(v, name, err);
		return *remote_path ? 0 : -1;
	}
	/* a volume without its marker: another ferry process (another host's URI may name this
	   same libvirtd) may be uploading it right now; take it once its marker appears */
	if (v && (okv = wait_upload(hs, v, ok))) {
		*remote_path = vol_path(v, name, err);
		return *remote_path ? 0 : -1;
	}
	/* none, or a half-uploaded one that stopped growing: upload it (again) */
	if (v) {
		(void)virStorageVolDelete(v, 0);
		virStorageVolFree(v);
	}
	v = vol_create(hs, name, size, 0, err);
	if (!v) {
		/* another ferry process created it a moment ago: take it once it is complete */
		v = virStorageVolLookupByName(hs->pool, name);
		if (!v)
			return -1;
		if (!okv && !(okv = wait_upload(hs, v, ok))) {
			free(*err);
			*err = xasprintf("another upload of the guest's %s into the host's storage "
					 "pool stopped before it completed",
					 what);
			return -1;
		}
		free(*err);
		*err = NULL;
		*remote_path = vol_path(v, name, err);
		return *remote_path ? 0 : -1;
	}
	_cleanup_free_ char *desc = xasprintf("the guest's %s", what);
	if (upload(hs, v, fd, size, desc, err) < 0) {
		(void)virStorageVolDelete(v, 0);
		return -1;
	}
	if (!okv) {
		okv = vol_create(hs, ok, 0, 0, err);
		/* another process completed the same upload and marked it first */
		if (!okv && !(okv = virStorageVolLookupByName(hs->pool, ok)))
			return -1;
		free(*err);
		*err = NULL;
	}
	*remote_path = vol_path(v, name, err);
	return *remote_path ? 0 : -1;
}

int hoststore_run_volume(struct hoststore *hs, const struct hoststore_vol *v,
			 const char *local_path, char **remote_path, char **err)
{
	_cleanup_close_ int fd = -1;
	struct stat st = { 0 };
	uint64_t capacity = v->capacity;
	if (local_path) {
		fd = open_regular(local_path, &st, err);
		if (fd < 0)
			return -1;
		if ((uint64_t)st.st_size > capacity)
			capacity = (uint64_t)st.st_size;
	}
	uint64_t allocation = v->preallocate ? capacity : 0;
	_cleanup_free_ char *name = xasprintf("%s%s", hs->prefix, v->label);
	_cleanup_(virStorageVolFreep) virStorageVolPtr vol =
	    vol_create(hs, name, capacity, allocation, err);
	if (!vol)
		return -1;
	hs->labels = xgrow(hs->labels, &hs->cap_labels, hs->n_labels + 1, sizeof(*hs->labels));
	hs->labels[hs->n_labels++] = xstrdup(v->label);
	if (local_path && upload(hs, vol, fd, (uint64_t)st.st_size, v->label, err) < 0) {
		hoststore_delete(hs, v->label);
		return -1;
	}
	*remote_path = vol_path(vol, name, err);
	if (!*remote_path) {
		hoststore_delete(hs, v->label);
		return -1;
	}
	return 0;
}

void hoststore_delete(struct hoststore *hs, const char *label)
{
	for (size_t i = 0; i < hs->n_labels; i++)
		if (STREQ(hs->labels[i], label)) {
			_cleanup_free_ char *name = xasprintf("%s%s", hs->prefix, label);
			vol_delete_name(hs, name);
			free(hs->labels[i]);
			memmove(&hs->labels[i], &hs->labels[i + 1],
				(hs->n_labels - i - 1) * sizeof(*hs->labels));
			hs->n_labels--;
			return;
		}
}

char *hoststore_tail(struct hoststore *hs, const char *label, size_t max)
{
	_cleanup_free_ char *name = xasprintf("%s%s", hs->prefix, label);
	_cleanup_(virStorageVolFreep) virStorageVolPtr v =
	    virStorageVolLookupByName(hs->pool, name);
	virStorageVolInfo info;
	/* the info is refreshed from the file: the console log grew since it was created */
	if (!v || virStorageVolGetInfo(v, &info) < 0)
		return NULL;
	unsigned long long off = info.capacity > max ? info.capacity - max : 0;
	struct sink s = { xmalloc(max + 1), 0, max };
	virStreamPtr st = virStreamNew(hs->conn, 0);
	if (!st || virStorageVolDownload(v, st, off, info.capacity - off, 0) < 0 ||
	    virStreamRecvAll(st, sink_write, &s) < 0 || virStreamFinish(st) < 0) {
		if (st) {
			virStreamAbort(st);
			virStreamFree(st);
		}
		free(s.buf);
		return NULL;
	}
	virStreamFree(st);
	s.buf[s.len] = '\0';
	return s.buf;
}

/* ---- leftovers ---- */

/* "ferry-<yyyymmddThhmmss>-<pid>-<label>" -> run id "<yyyymmddThhmmss>-<pid>" and pid. */
static bool parse_run_volume(const char *name, char **run, long *pid)
{
	if (strncmp(name, "ferry-", 6))
		return false;
	const char *id = name + 6;
	const char *dash = strchr(id, '-');
	if (!dash || dash - id != 15 || id[8] != 'T')
		return false;
	char *end;
	errno = 0;
	long p = strtol(dash + 1, &end, 10);
	if (errno || p <= 0 || end == dash + 1 || *end != '-')
		return false;
	*run = xstrndup(id, (size_t)(end - id));
	*pid = p;
	return true;
}

/* Whether a domain on conn belongs to run id (its metadata marker). */
static bool run_has_domain(virDomainPtr *doms, int n, const char *id)
{
	for (int i = 0; i < n; i++) {
		_cleanup_free_ char *rid = NULL;
		long pid;
		if (vm_domain_owner(doms[i], &rid, &pid) && STREQ(rid, id))
			return true;
	}
	return false;
}

/* Whether a guest volume ("guest-HASH-what" or its "....ok" marker) is one of keep. */
static bool guest_kept(const char *name, const char *const *keep)
{
	size_t n = strlen(name);
	if (n > 3 && STREQ(name + n - 3, ".ok"))
		n -= 3;
	for (size_t i = 0; keep[i]; i++)
		if (strlen(keep[i]) == n && !strncmp(keep[i], name, n))
			return true;
	return false;
}

/* Whether a domain on the host names path (a disk, kernel or initrd of its XML). */
static bool domain_uses(virDomainPtr *doms, int n, const char *path)
{
	for (int i = 0; i < n && path; i++) {
		_cleanup_free_ char *xml = virDomainGetXMLDesc(doms[i], 0);
		if (xml && strstr(xml, path))
			return true;
	}
	return false;
}

int hoststore_leftovers(virConnectPtr conn, bool reap, const char *const *keep,
			struct hoststore_leftovers *out, char **err)
{
	*out = (struct hoststore_leftovers){ 0 };
	vm_quiet_libvirt();
	_cleanup_(virStoragePoolFreep) virStoragePoolPtr p = pool_get(conn, false, err);
	if (!p)
		return *err ? -1 : 0;
	out->pool = true;
	if (virStoragePoolIsActive(p) != 1 && virStoragePoolCreate(p, 0) < 0) {
		*err = xasprintf("cannot start storage pool '" HOSTSTORE_POOL "': %s",
				 virGetLastErrorMessage());
		return -1;
	}
	(void)virStoragePoolRefresh(p, 0);
	virStorageVolPtr *vols = NULL;
	int nv = virStoragePoolListAllVolumes(p, &vols, 0);
	if (nv < 0) {
		*err = xasprintf("cannot list the volumes of storage pool '" HOSTSTORE_POOL "': %s",
				 virGetLastErrorMessage());
		return -1;
	}
	virDomainPtr *doms = NULL;
	int nd = virConnectListAllDomains(conn, &doms, 0);
	unsigned kept = 0;
	for (int i = 0; i < nv; i++) {
		const char *name = virStorageVolGetName(vols[i]);
		_cleanup_free_ char *run = NULL;
		long pid = 0;
		if (name && !strncmp(name, "guest-", 6)) {
			bool marker = strstr(name, ".ok") != NULL;
			_cleanup_free_ char *path = virStorageVolGetPath(vols[i]);
			if (!keep || nd < 0 || guest_kept(name, keep) ||
			    domain_uses(doms, nd, path)) {
				out->guest_files += !marker;
				kept++;
			} else {
				/* an older build's: no run of this build boots it */
				out->old_guest_files += !marker;
				if (reap && virStorageVolDelete(vols[i], 0) == 0)
					out->guest_reaped += !marker;
				else
					kept++;
			}
		} else if (name && parse_run_volume(name, &run, &pid)) {
			if (nd < 0 || proc_alive(pid) || run_has_domain(doms, nd, run)) {
				out->live++;
				kept++;
			} else {
				out->stale++;
				if (reap && virStorageVolDelete(vols[i], 0) == 0)
					out->reaped++;
				else
					kept++;
			}
		} else {
			kept++; /* not ferry's naming: left alone */
		}
		virStorageVolFree(vols[i]);
	}
	free(vols);
	for (int i = 0; i < nd; i++)
		virDomainFree(doms[i]);
	free(doms);
	(void)kept;
	return 0;
}
