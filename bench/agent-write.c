/* SPDX-License-Identifier: MIT */
/*
 * The agent-file ceiling for bench/methods.sh: the plainest guest-file-write loop through
 * libvirt (virDomainQemuAgentCommand, as virsh qemu-agent-command does, without a process per
 * command: virsh cannot pass a 128 KiB chunk's JSON as one argument, and its shell mode is slow
 * on long lines). No ferry code: open, write CHUNK raw bytes as base64 per command, close.
 *
 *   bench-agent-write URI DOMAIN CHUNK GUESTDIR FILE...
 * writes every FILE to GUESTDIR/<its base name> and prints the seconds it took (host clock).
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libvirt/libvirt-qemu.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>
#include <openssl/evp.h>

static char *command(virDomainPtr dom, const char *json)
{
	char *r = virDomainQemuAgentCommand(dom, json, 30, 0);
	if (!r) {
		fprintf(stderr, "bench-agent-write: %s\n", virGetLastErrorMessage());
		exit(1);
	}
	return r;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: bench-agent-write URI DOMAIN CHUNK GUESTDIR FILE...\n");
		return 2;
	}
	size_t chunk = strtoul(argv[3], NULL, 10);
	virConnectPtr conn = virConnectOpen(argv[1]);
	virDomainPtr dom = conn ? virDomainLookupByName(conn, argv[2]) : NULL;
	if (!dom || chunk == 0) {
		fprintf(stderr, "bench-agent-write: no domain '%s' or no chunk size\n", argv[2]);
		return 1;
	}
	unsigned char *buf = malloc(chunk);
	size_t jcap = chunk * 2 + 4096;
	char *json = malloc(jcap);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 5; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 1;
		}
		char *base = basename(argv[i]);
		snprintf(json, jcap,
			 "{\"execute\":\"guest-file-open\",\"arguments\":{\"path\":\"%s/%s\","
			 "\"mode\":\"w\"}}",
			 argv[4], base);
		char *r = command(dom, json);
		char *p = strstr(r, "\"return\":");
		long long h = p ? strtoll(p + 9, NULL, 10) : -1;
		free(r);
		size_t n;
		while ((n = fread(buf, 1, chunk, f)) > 0) {
			int k =
			    snprintf(json, jcap,
				     "{\"execute\":\"guest-file-write\",\"arguments\":{\"handle\":"
				     "%lld,\"buf-b64\":\"",
				     h);
			k += EVP_EncodeBlock((unsigned char *)json + k, buf, (int)n);
			snprintf(json + k, jcap - (size_t)k, "\"}}");
			free(command(dom, json));
		}
		fclose(f);
		snprintf(json, jcap,
			 "{\"execute\":\"guest-file-close\",\"arguments\":{\"handle\":%lld}}", h);
		free(command(dom, json));
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.3f\n", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	free(buf);
	free(json);
	virDomainFree(dom);
	virConnectClose(conn);
	return 0;
}
