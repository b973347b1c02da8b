/* SPDX-License-Identifier: MIT */
/* Generating a dataset into a directory, hashing it in the same pass (see dataset.h). */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "dataset-int.h"
#include "dataset.h"
#include "fs.h"
#include "run.h"
#include "util.h"

#define CHUNK (1u << 18)

/* mkdir with exact mode 0755 whatever the umask: QEMU (libvirt-qemu) and 9p must read it */
static int mkdir_0755(const char *path)
{
	if (mkdir(path, 0755) < 0)
		return -1;
	return chmod(path, 0755);
}

/*
 * Generation is a two-stage pipeline over RING buffers of CHUNK bytes (256 KiB: a buffer stays in
 * L2 from fill to write to hash; 1 MiB ones were hashed from DRAM, 1.0 vs 1.55 GB/s): this thread
 * fills a buffer and writes it, a hasher thread feeds it to SHA-256 and records the manifest entry.
 * The generator and write() cost about as much as SHA-256 (even with SHA-NI), so overlapping them
 * nearly halves the time on two cores; memory stays at RING buffers whatever the dataset size.
 */
#define RING 4

struct slot {
	unsigned char *buf;
	size_t len;
	bool first, last;
	char *rel;         /* with `last`: the file's relative path, handed over to the hasher */
	uint64_t size;     /* with `last`: the file's size */
	uint64_t dev, ino; /* with `last`: where it was written */
};

struct hash_pipe {
	pthread_mutex_t mu;
	pthread_cond_t filled, freed;
	struct slot slots[RING];
	uint64_t head, tail; /* head: slots posted by the producer; tail: slots hashed */
	bool done;           /* the producer posts nothing more */
	bool failed;         /* libcrypto failed in the hasher */
	struct manifest *m;
};

static void *hasher(void *arg)
{
	struct hash_pipe *p = arg;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx)
		p->failed = true;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		while (p->tail == p->head && !p->done)
			pthread_cond_wait(&p->filled, &p->mu);
		if (p->tail == p->head) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		struct slot *s = &p->slots[p->tail % RING];
		bool failed = p->failed;
		pthread_mutex_unlock(&p->mu);

		if (!failed) {
			unsigned char sha[32];
			if ((s->first && !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) ||
			    !EVP_DigestUpdate(ctx, s->buf, s->len) ||
			    (s->last && !EVP_DigestFinal_ex(ctx, sha, NULL)))
				failed = true;
			else if (s->last) {
				struct manifest_entry *e =
				    manifest_add(p->m, s->rel, MANIFEST_FILE, s->size, sha, NULL);
				e->dev = s->dev;
				e->ino = s->ino;
			}
		}
		if (s->last) {
			free(s->rel);
			s->rel = NULL;
		}

		pthread_mutex_lock(&p->mu);
		p->failed = failed;
		p->tail++;
		pthread_cond_signal(&p->freed);
		pthread_mutex_unlock(&p->mu);
	}
	EVP_MD_CTX_free(ctx);
	return NULL;
}

static struct slot *slot_get(struct hash_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	while (p->head - p->tail == RING)
		pthread_cond_wait(&p->freed, &p->mu);
	struct slot *s = &p->slots[p->head % RING];
	pthread_mutex_unlock(&p->mu);
	return s;
}

static void slot_post(struct hash_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	p->head++;
	pthread_cond_signal(&p->filled);
	pthread_mutex_unlock(&p->mu);
}

bool dataset_gen_cancelled(const struct dataset_gen_opts *o)
{
	if (o && o->cancelled)
		return o->cancelled(o->userdata);
	return run_interrupted() != 0;
}

/* The bytes written so far and in all, for opts->progress. */
struct gen_count {
	uint64_t done, total;
};

static int gen_file(const struct dataset_spec *spec, uint64_t index, const char *dir,
		    struct hash_pipe *p, const struct dataset_gen_opts *opts, struct gen_count *gc,
		    char **err)
{
	_cleanup_free_ char *rel = dataset_file_path(spec, index);
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, rel);
	uint64_t size = dataset_file_size(spec, index);
	_cleanup_close_ int fd =
	    open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	struct stat st;
	if (fd < 0 || fchmod(fd, 0644) < 0 || fstat(fd, &st) < 0)
		return dataset_err_errno(err, "create", path);
	uint64_t off = 0;
	do {
		if (dataset_gen_cancelled(opts)) {
			*err = xstrdup("interrupted");
			return -1;
		}
		size_t n = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		struct slot *s = slot_get(p);
		dataset_fill(spec, index, off, s->buf, n);
		if (write_all(fd, s->buf, n) < 0)
			return dataset_err_errno(err, "write", path);
		s->len = n;
		s->first = off == 0;
		off += n;
		s->last = off == size;
		if (s->last) {
			/* close before the hand-over: a failing close is a failed write */
			int r = close(fd);
			fd = -1;
			if (r < 0)
				return dataset_err_errno(err, "write", path);
			s->rel = TAKE_PTR(rel);
			s->size = size;
			s->dev = st.st_dev;
			s->ino = st.st_ino;
		}
		slot_post(p);
		gc->done += n;
		if (opts && opts->progress)
			opts->progress(opts->userdata, gc->done, gc->total, false);
	} while (off < size);
	return 0;
}

static int generate_into(const struct dataset_spec *spec, const char *dir,
			 const struct dataset_gen_opts *opts, struct manifest **out, char **err);

int dataset_generate(const struct dataset_spec *spec, const char *dir,
		     const struct dataset_gen_opts *opts, struct manifest **out, char **err)
{
	if (spec->path) {
		*err = xasprintf("dataset '%s' is a path dataset: nothing to generate", spec->path);
		return -1;
	}
	if (dataset_spec_check(spec, err) < 0)
		return -1;
	if (mkdir_0755(dir) < 0)
		return dataset_err_errno(err, "create directory", dir);
	if (generate_into(spec, dir, opts, out, err) < 0) {
		/* what was written is of no use to anyone: a killed generation is swept by the
		   next dataset_get() (remove_dead_temps()) */
		int e = errno;
		rm_tree(dir, NULL);
		errno = e;
		return -1;
	}
	return 0;
}

static int generate_into(const struct dataset_spec *spec, const char *dir,
			 const struct dataset_gen_opts *opts, struct manifest **out, char **err)
{
	struct stat rst;
	if (stat(dir, &rst) < 0)
		return dataset_err_errno(err, "create directory", dir);
	struct manifest *m = manifest_new();
	m->spec = dataset_spec_canonical(spec);
	m->root_dev = rst.st_dev;
	m->root_ino = rst.st_ino;
	if (spec->depth > 0 && spec->fanout > 0) {
		/* every directory of the tree, top level first, also those no file lands in */
		uint64_t count = 1;
		for (unsigned level = 1; level <= spec->depth; level++) {
			count *= spec->fanout;
			uint64_t stride = dataset_leaves(spec) / count;
			for (uint64_t i = 0; i < count; i++) {
				_cleanup_free_ char *rel =
				    dataset_leaf_dir(spec, i * stride, level);
				_cleanup_free_ char *p = xasprintf("%s/%s", dir, rel);
				if (mkdir_0755(p) < 0) {
					manifest_free(m);
					return dataset_err_errno(err, "create directory", p);
				}
				manifest_add(m, rel, MANIFEST_DIR, 0, NULL, NULL);
			}
		}
	}

	struct hash_pipe p = {
		.mu = PTHREAD_MUTEX_INITIALIZER,
		.filled = PTHREAD_COND_INITIALIZER,
		.freed = PTHREAD_COND_INITIALIZER,
		.m = m,
	};
	for (int i = 0; i < RING; i++)
		p.slots[i].buf = xmalloc(CHUNK);
	pthread_t th;
	int r = pthread_create(&th, NULL, hasher, &p);
	if (r != 0) {
		*err = xasprintf("cannot start the hashing thread: %s", strerror(r));
	} else {
		struct gen_count gc = { 0 };
		for (uint64_t i = 0; opts && opts->progress && i < spec->files; i++)
			gc.total += dataset_file_size(spec, i);
		for (uint64_t i = 0; r == 0 && i < spec->files; i++)
			r = gen_file(spec, i, dir, &p, opts, &gc, err);
		if (r == 0 && opts && opts->progress && !opts->no_sync)
			opts->progress(opts->userdata, gc.done, gc.total, true);
		pthread_mutex_lock(&p.mu);
		p.done = true;
		pthread_cond_signal(&p.filled);
		pthread_mutex_unlock(&p.mu);
		pthread_join(th, NULL);
		if (r == 0 && p.failed) {
			*err = xstrdup("SHA-256 failed in libcrypto");
			r = -1;
		}
	}
	for (int i = 0; i < RING; i++)
		free(p.slots[i].buf);
	if (r != 0) {
		manifest_free(m);
		return -1;
	}

	if (!(opts && opts->no_sync)) {
		_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0 || syncfs(dfd) < 0) {
			manifest_free(m);
			return dataset_err_errno(err, "sync", dir);
		}
	}
	if (manifest_finish(m, err) < 0) {
		manifest_free(m);
		return -1;
	}
	*out = m;
	return 0;
}
