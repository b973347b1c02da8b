/* SPDX-License-Identifier: MIT */
/*
 * Report files written all or nothing: a temporary file next to the target, renamed over it at
 * the end (the same scheme as results_write()).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>

#include "reporters.h"

int report_output_open(struct report_output *o, const char *path, char **err)
{
	*o = (struct report_output){ 0 };
	o->path = xstrdup(path);
	if (STREQ(path, "-")) {
		o->f = stdout;
		return 0;
	}
	_cleanup_free_ char *dcopy = xstrdup(path), *bcopy = xstrdup(path);
	const char *dir = dirname(dcopy), *base = basename(bcopy);
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		*err = xasprintf("%s: is a directory", path);
		goto fail;
	}
	o->tmp = xasprintf("%s/.%s.XXXXXX", dir, base);
	int fd = mkostemp(o->tmp, O_CLOEXEC);
	if (fd < 0) {
		*err =
		    xasprintf("%s: cannot create a file in '%s': %s", path, dir, strerror(errno));
		goto fail;
	}
	(void)fchmod(fd, 0644);
	o->f = fdopen(fd, "w");
	if (!o->f) {
		*err = xasprintf("%s: %s", path, strerror(errno));
		close(fd);
		unlink(o->tmp);
		goto fail;
	}
	return 0;
fail:
	free(o->tmp);
	free(o->path);
	*o = (struct report_output){ 0 };
	return -1;
}

int report_output_commit(struct report_output *o, char **err)
{
	int rc = 0;
	if (!o->f)
		return 0;
	if (!o->tmp) {
		if (fflush(o->f) != 0 || ferror(o->f)) {
			*err = xasprintf("standard output: %s", strerror(errno));
			rc = -1;
		}
		o->f = NULL;
		free(o->path);
		o->path = NULL;
		return rc;
	}
	const char *what = NULL;
	int e = 0;
	if (fflush(o->f) != 0 || ferror(o->f))
		what = "write", e = errno;
	else if (fsync(fileno(o->f)) < 0)
		what = "fsync", e = errno;
	if (fclose(o->f) != 0 && !what)
		what = "close", e = errno;
	o->f = NULL;
	if (!what && rename(o->tmp, o->path) < 0)
		what = "rename", e = errno;
	if (what) {
		unlink(o->tmp);
		*err = xasprintf("%s: %s: %s", o->path, what, e ? strerror(e) : "i/o error");
		rc = -1;
	}
	free(o->tmp);
	free(o->path);
	o->tmp = o->path = NULL;
	return rc;
}

void report_output_abort(struct report_output *o)
{
	if (o->f && o->tmp)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	*o = (struct report_output){ 0 };
}
