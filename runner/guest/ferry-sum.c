/* SPDX-License-Identifier: MIT */
/*
 * ferry-sum: the built-in guest's verify lister (issue 29). It lists the current directory the
 * way the verify command's `find . -type f -exec sha256sum {} +` does, with XXH3-128 (libxxhash)
 * in place of SHA-256:
 *   "<32 hex digits>  ./<path>\n"          for every regular file, and with -l
 *   "symlink <target>\t./<path>\n"         for every symbolic link (never followed).
 * The hex is XXH128's canonical (big-endian) form, as `xxhsum -H2` prints it.
 *
 * Why a program of ferry's own: under TCG the guest's CPU is emulated, and busybox's SHA-256
 * hashes about 20-30 MB/s there, while XXH3 hashes several times faster; Debian's xxhsum is
 * dynamically linked, and its start alone (the loader and libc under TCG) cost 110-170 ms in
 * the built-in guest, as much as hashing the quickstart's 8 MiB. This one is linked statically
 * (glibc and libxxhash), so it starts like busybox. It runs in the guest only; a guest without
 * it verifies with SHA-256 (manifest_guest_command()).
 *
 * Exit 0, or 1 with a message on stderr (an unreadable file or directory: the verify fails as
 * the busybox command would), or 2 on a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

static bool links;
static unsigned char buf[1 << 18];

static int hash_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	XXH3_state_t *st = XXH3_createState();
	if (!st || XXH3_128bits_reset(st) != XXH_OK) {
		close(fd);
		errno = ENOMEM;
		return -1;
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			XXH3_freeState(st);
			close(fd);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		XXH3_128bits_update(st, buf, (size_t)n);
	}
	XXH128_canonical_t c;
	XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
	XXH3_freeState(st);
	close(fd);
	for (size_t i = 0; i < sizeof(c.digest); i++)
		printf("%02x", c.digest[i]);
	printf("  %s\n", path);
	return 0;
}

static int visit(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)ftw;
	switch (type) {
	case FTW_F:
		if (!S_ISREG(sb->st_mode))
			return 0; /* find -type f: regular files only */
		if (hash_file(path) < 0) {
			fprintf(stderr, "ferry-sum: %s: %s\n", path, strerror(errno));
			return 1;
		}
		return 0;
	case FTW_SL:
	case FTW_SLN:
		if (links) {
			char target[4096];
			ssize_t n = readlink(path, target, sizeof(target) - 1);
			if (n < 0) {
				fprintf(stderr, "ferry-sum: %s: %s\n", path, strerror(errno));
				return 1;
			}
			target[n] = '\0';
			printf("symlink %s\t%s\n", target, path);
		}
		return 0;
	case FTW_DNR:
	case FTW_NS: fprintf(stderr, "ferry-sum: %s: cannot read\n", path); return 1;
	default: return 0;
	}
}

int main(int argc, char **argv)
{
	int c;
	while ((c = getopt(argc, argv, "l")) != -1) {
		if (c != 'l') {
			fprintf(stderr, "usage: ferry-sum [-l]\n");
			return 2;
		}
		links = true;
	}
	if (optind != argc) {
		fprintf(stderr, "usage: ferry-sum [-l]\n");
		return 2;
	}
	int r = nftw(".", visit, 64, FTW_PHYS);
	if (r < 0) {
		fprintf(stderr, "ferry-sum: .: %s\n", strerror(errno));
		return 1;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "ferry-sum: write error\n");
		return 1;
	}
	return r == 0 ? 0 : 1;
}
