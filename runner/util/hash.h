/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 through OpenSSL's EVP interface, and its lower-case hex form; XXH3-128 through
 * libxxhash beside it, for verify in guests that carry ferry-sum (manifest.h): the manifest's
 * SHA-256 stays the dataset's identity, and the XXH3-128 of a file is only ever taken in the
 * same read as a SHA-256 that matched the manifest (sha256_xxh128_fd()).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_BYTES 32
#define SHA256_HEX   65 /* 64 hex digits and the NUL */
#define XXH128_BYTES 16
#define XXH128_HEX   33 /* 32 hex digits and the NUL */

/* The 2 * len lower-case hex digits of buf into out, NUL-terminated (out holds 2 * len + 1). */
void hex_encode(const void *buf, size_t len, char *out);
/* 64 lower-case hex digits of a digest, NUL-terminated. */
void sha256_hex(const unsigned char sha[SHA256_BYTES], char out[SHA256_HEX]);
/* Parse the 64 hex digits (either case) hex starts with into a digest (what follows them is not
 * looked at); 0, or -1 when they are not hex digits. */
int sha256_parse(const char *hex, unsigned char out[SHA256_BYTES]);

/* The digest of a buffer (aborts like xmalloc when libcrypto cannot allocate). */
void sha256_buf(const void *data, size_t len, unsigned char out[SHA256_BYTES]);
/* The same as hex. */
void sha256_buf_hex(const void *data, size_t len, char out[SHA256_HEX]);

/* The digest of everything read from fd until end of file; *size (may be NULL) gets the byte
 * count. Returns 0, or -1 with errno set (a read error). */
int sha256_fd(int fd, unsigned char out[SHA256_BYTES], uint64_t *size);
/* The hex digest of the file at path (opened read-only, O_NOFOLLOW not implied); 0 or -1 with
 * errno set. */
int sha256_file_hex(const char *path, char out[SHA256_HEX], uint64_t *size);

/* 32 lower-case hex digits of an XXH3-128 digest (canonical, big-endian: as `xxhsum -H2` and
 * ferry-sum print it), NUL-terminated. */
void xxh128_hex(const unsigned char x[XXH128_BYTES], char out[XXH128_HEX]);
/* Parse the 32 hex digits hex starts with; 0, or -1 when they are not hex digits. */
int xxh128_parse(const char *hex, unsigned char out[XXH128_BYTES]);
/* SHA-256 and XXH3-128 (canonical; xxh NULL: SHA-256 only, as sha256_fd()) of everything read
 * from fd, in one pass; *size (may be NULL) gets the byte count. Returns 0, or -1 with errno set (a
 * read error). */
int sha256_xxh128_fd(int fd, unsigned char sha[SHA256_BYTES], unsigned char xxh[XXH128_BYTES],
		     uint64_t *size);
