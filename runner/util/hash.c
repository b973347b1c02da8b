/* SPDX-License-Identifier: MIT */
#include "hash.h"

#include <errno.h>
#include <fcntl.h>

#include <xxhash.h>

#include "cleanup.h"
#include "util.h"

void hex_encode(const void *buf, size_t len, char *out)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *b = buf;
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = hex[b[i] >> 4];
		out[2 * i + 1] = hex[b[i] & 15];
	}
	out[2 * len] = '\0';
}

void sha256_hex(const unsigned char sha[SHA256_BYTES], char out[SHA256_HEX])
{
	hex_encode(sha, SHA256_BYTES, out);
}

static int hex_parse(const char *hex, unsigned char *out, int n)
{
	for (int i = 0; i < n; i++) {
		int hi = hex_digit_value(hex[2 * i]),
		    lo = hi < 0 ? -1 : hex_digit_value(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

int sha256_parse(const char *hex, unsigned char out[SHA256_BYTES])
{
	return hex_parse(hex, out, SHA256_BYTES);
}

void xxh128_hex(const unsigned char x[XXH128_BYTES], char out[XXH128_HEX])
{
	hex_encode(x, XXH128_BYTES, out);
}

int xxh128_parse(const char *hex, unsigned char out[XXH128_BYTES])
{
	return hex_parse(hex, out, XXH128_BYTES);
}

static _noreturn_ void crypto_oom(void)
{
	/* libcrypto only fails here on allocation failure: treat it like xmalloc does */
	fputs("ferry: out of memory (SHA-256)\n", stderr);
	abort();
}

void sha256_buf(const void *data, size_t len, unsigned char out[SHA256_BYTES])
{
	unsigned int n = 0;
	if (!EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) || n != SHA256_BYTES)
		crypto_oom();
}

void sha256_buf_hex(const void *data, size_t len, char out[SHA256_HEX])
{
	unsigned char md[SHA256_BYTES];
	sha256_buf(data, len, md);
	sha256_hex(md, out);
}

int sha256_fd(int fd, unsigned char out[SHA256_BYTES], uint64_t *size)
{
	return sha256_xxh128_fd(fd, out, NULL, size);
}

int sha256_file_hex(const char *path, char out[SHA256_HEX], uint64_t *size)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	unsigned char md[SHA256_BYTES];
	if (fd < 0 || sha256_fd(fd, md, size) < 0)
		return -1;
	sha256_hex(md, out);
	return 0;
}

static void xxh3_freep(XXH3_state_t **s)
{
	XXH3_freeState(*s);
}

int sha256_xxh128_fd(int fd, unsigned char sha[SHA256_BYTES], unsigned char xxh[XXH128_BYTES],
		     uint64_t *size)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	_cleanup_(xxh3_freep) XXH3_state_t *st = xxh ? XXH3_createState() : NULL;
	unsigned char buf[1 << 16];
	uint64_t total = 0;

	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ||
	    (xxh && (!st || XXH3_128bits_reset(st) != XXH_OK)))
		crypto_oom();
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		if (!EVP_DigestUpdate(ctx, buf, (size_t)r) ||
		    (st && XXH3_128bits_update(st, buf, (size_t)r) != XXH_OK))
			crypto_oom();
		total += (uint64_t)r;
	}
	if (!EVP_DigestFinal_ex(ctx, sha, NULL))
		crypto_oom();
	if (xxh) {
		XXH128_canonical_t c;
		XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
		memcpy(xxh, c.digest, XXH128_BYTES);
	}
	if (size)
		*size = total;
	return 0;
}
