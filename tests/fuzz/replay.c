/* SPDX-License-Identifier: MIT */
/*
 * Run fuzz corpus files through the harness without libFuzzer (systemd's fuzz-main.c, fio's
 * t/fuzz/onefile.c): a directory argument means every file in it. Under ASan or valgrind this
 * is the regression test for every input that once crashed.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int n_run;

static int run_file(const char *path)
{
	size_t len = 0;
	char *buf = read_file(path, &len);
	if (!buf) {
		printf("not ok %d - %s: cannot read\n", ++n_run, path);
		return -1;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	free(buf);
	printf("ok %d - %s\n", ++n_run, path);
	return 0;
}

static int compare(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = 0;

	if (!d) {
		printf("not ok %d - %s: cannot open\n", ++n_run, dir);
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		names = xgrow(names, &cap, n + 1, sizeof(*names));
		names[n++] = xasprintf("%s/%s", dir, e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), compare); /* a stable order for the TAP output */
	for (size_t i = 0; i < n; i++) {
		if (run_file(names[i]) < 0)
			r = -1;
		free(names[i]);
	}
	free(names);
	return r;
}

int main(int argc, char **argv)
{
	int r = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			r |= run_dir(argv[i]) < 0;
		else
			r |= run_file(argv[i]) < 0;
	}
	printf("1..%d\n", n_run);
	if (n_run == 0)
		return 1; /* an empty corpus would make this test pass without testing anything */
	return r ? 1 : 0;
}
