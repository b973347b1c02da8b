/* SPDX-License-Identifier: MIT */
/*
 * The kernel: the XZ payload of Debian's bzImage, decompressed into the vmlinux when it has a PVH
 * entry note, and the ELF readers the builder needs (sections, DT_NEEDED, PT_INTERP).
 */
#include <elf.h>
#include <errno.h>
#include <zlib.h>

#include "cleanup.h"
#include "guest-build.h"

/* ------------------------------------------------------------------------------------------ */
/* the kernel: XZ payload of the bzImage, ELF checks */

static const unsigned char xz_magic[6] = { 0xfd, '7', 'z', 'X', 'Z', 0x00 };

ssize_t guest_find_xz(const unsigned char *buf, size_t len)
{
	const unsigned char *p =
	    len >= sizeof(xz_magic) ? memmem(buf, len, xz_magic, sizeof(xz_magic)) : NULL;
	return p ? (ssize_t)(p - buf) : -1;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * Length of the XZ stream that starts at buf (with the magic), or 0 when no valid footer is
 * found. libarchive's xz reader decodes concatenated streams and fails on anything after the
 * stream (a bzImage keeps the decompressed size and code there), so the stream must be cut at its
 * end. The end is the first 12-byte stream footer ("YZ" magic, 4-byte aligned) whose CRC32 over
 * Backward Size + Stream Flags holds, whose flags equal the header's and whose Backward Size
 * points at an Index indicator byte (0x00).
 */
static size_t xz_stream_length(const unsigned char *buf, size_t len)
{
	if (len < 24 || memcmp(buf, xz_magic, sizeof(xz_magic)) != 0)
		return 0;
	for (size_t p = 12; p + 12 <= len; p += 4) {
		const unsigned char *f = buf + p;
		if (f[10] != 'Y' || f[11] != 'Z' || f[8] != buf[6] || f[9] != buf[7])
			continue;
		if ((uint32_t)crc32(0, f + 4, 6) != le32(f))
			continue;
		uint64_t index_size = ((uint64_t)le32(f + 4) + 1) * 4;
		if (index_size > p - 12 || buf[p - index_size] != 0x00)
			continue;
		return p + 12;
	}
	return 0;
}

int guest_xz_decompress(const unsigned char *buf, size_t len, unsigned char **out, size_t *outlen,
			char **err)
{
	_cleanup_(archive_read_freep) struct archive *a = archive_read_new();
	struct archive_entry *e;
	size_t slen = xz_stream_length(buf, len);
	unsigned char *o = NULL;
	size_t n = 0, cap = 0;

	if (slen == 0)
		return guest_err(err, -EINVAL, "no complete XZ stream found");
	archive_read_support_filter_xz(a);
	archive_read_support_format_raw(a);
	if (archive_read_open_memory(a, buf, slen) != ARCHIVE_OK ||
	    archive_read_next_header(a, &e) != ARCHIVE_OK)
		return guest_err(err, -EIO, "cannot decompress XZ stream: %s",
				 archive_error_string(a));
	for (;;) {
		o = xgrow(o, &cap, n + (1 << 20), 1);
		la_ssize_t r = archive_read_data(a, o + n, cap - n);
		if (r == 0)
			break;
		if (r < 0) {
			free(o);
			return guest_err(err, -EIO, "cannot decompress XZ stream: %s",
					 archive_error_string(a));
		}
		n += (size_t)r;
	}
	*out = o;
	*outlen = n;
	return 0;
}

/* The ELF header, when buf is a well-formed little-endian x86-64 ELF64 with in-range tables. */
static const Elf64_Ehdr *elf64(const unsigned char *buf, size_t len)
{
	const Elf64_Ehdr *h = (const void *)buf;

	if (len < sizeof(*h) || memcmp(buf, ELFMAG, SELFMAG) != 0 || buf[EI_CLASS] != ELFCLASS64 ||
	    buf[EI_DATA] != ELFDATA2LSB)
		return NULL;
	/* the buffers come from malloc (16-byte aligned): the casts below are aligned when the
	 * table offsets are */
	if (h->e_phnum &&
	    (h->e_phoff % 8 || h->e_phentsize != sizeof(Elf64_Phdr) || h->e_phoff > len ||
	     (uint64_t)h->e_phnum * sizeof(Elf64_Phdr) > len - h->e_phoff))
		return NULL;
	if (h->e_shnum &&
	    (h->e_shoff % 8 || h->e_shentsize != sizeof(Elf64_Shdr) || h->e_shoff > len ||
	     (uint64_t)h->e_shnum * sizeof(Elf64_Shdr) > len - h->e_shoff ||
	     h->e_shstrndx >= h->e_shnum))
		return NULL;
	return h;
}

static bool range_ok(uint64_t off, uint64_t size, size_t len)
{
	return off <= len && size <= len - off;
}

/* Does one SHT_NOTE/PT_NOTE area hold a "Xen" note of type XEN_ELFNOTE_PHYS32_ENTRY? */
static bool notes_have_pvh(const unsigned char *p, uint64_t size)
{
	uint64_t off = 0;
	while (off + 12 <= size) {
		uint32_t namesz = le32(p + off), descsz = le32(p + off + 4),
			 type = le32(p + off + 8);
		uint64_t name_off = off + 12;
		uint64_t desc_off = name_off + (((uint64_t)namesz + 3) & ~(uint64_t)3);
		uint64_t next = desc_off + (((uint64_t)descsz + 3) & ~(uint64_t)3);
		if (next > size)
			return false;
		/* XEN_ELFNOTE_PHYS32_ENTRY from xen/include/public/elfnote.h */
		if (type == 18 && namesz == 4 && memcmp(p + name_off, "Xen", 4) == 0)
			return true;
		off = next;
	}
	return false;
}

bool guest_elf_has_pvh(const unsigned char *buf, size_t len)
{
	const Elf64_Ehdr *h = elf64(buf, len);

	if (!h)
		return false;
	const Elf64_Phdr *ph = (const void *)(buf + h->e_phoff);
	for (unsigned i = 0; i < h->e_phnum; i++)
		if (ph[i].p_type == PT_NOTE && range_ok(ph[i].p_offset, ph[i].p_filesz, len) &&
		    notes_have_pvh(buf + ph[i].p_offset, ph[i].p_filesz))
			return true;
	return false;
}

/* The bytes of section `name` of an ELF64 (NULL when absent or out of range). */
const unsigned char *elf_section(const unsigned char *buf, size_t len, const char *name,
				 size_t *size)
{
	const Elf64_Ehdr *h = elf64(buf, len);
	if (!h || !h->e_shnum)
		return NULL;
	const Elf64_Shdr *sh = (const void *)(buf + h->e_shoff);
	const Elf64_Shdr *strs = &sh[h->e_shstrndx];
	if (!range_ok(strs->sh_offset, strs->sh_size, len))
		return NULL;
	for (unsigned i = 0; i < h->e_shnum; i++) {
		if (sh[i].sh_name >= strs->sh_size)
			continue;
		const char *n = (const char *)buf + strs->sh_offset + sh[i].sh_name;
		size_t maxn = strs->sh_size - sh[i].sh_name;
		if (strnlen(n, maxn) == maxn || !STREQ(n, name))
			continue;
		if (sh[i].sh_type == SHT_NOBITS || !range_ok(sh[i].sh_offset, sh[i].sh_size, len))
			return NULL;
		*size = sh[i].sh_size;
		return buf + sh[i].sh_offset;
	}
	return NULL;
}

/* DT_NEEDED names of a shared object or executable (through .dynamic and its string table). */
int elf_needed(const unsigned char *buf, size_t len, char ***names, size_t *n, char **err)
{
	const Elf64_Ehdr *h = elf64(buf, len);
	size_t cap = 0;

	*names = NULL;
	*n = 0;
	if (!h)
		return guest_err(err, -EINVAL, "not an x86-64 ELF file");
	const Elf64_Shdr *sh = (const void *)(buf + h->e_shoff);
	for (unsigned i = 0; i < h->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNAMIC)
			continue;
		if (sh[i].sh_link >= h->e_shnum || sh[i].sh_offset % 8 ||
		    !range_ok(sh[i].sh_offset, sh[i].sh_size, len))
			return guest_err(err, -EINVAL, "bad .dynamic section");
		const Elf64_Shdr *str = &sh[sh[i].sh_link];
		if (!range_ok(str->sh_offset, str->sh_size, len))
			return guest_err(err, -EINVAL, "bad dynamic string table");
		const Elf64_Dyn *d = (const void *)(buf + sh[i].sh_offset);
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*d) && d[k].d_tag != DT_NULL; k++) {
			if (d[k].d_tag != DT_NEEDED || d[k].d_un.d_val >= str->sh_size)
				continue;
			const char *s = (const char *)buf + str->sh_offset + d[k].d_un.d_val;
			size_t maxn = str->sh_size - d[k].d_un.d_val;
			*names = xgrow(*names, &cap, *n + 1, sizeof(char *));
			(*names)[(*n)++] = xstrndup(s, strnlen(s, maxn));
		}
	}
	return 0;
}

/* PT_INTERP of an executable ("/lib64/ld-linux-x86-64.so.2"), malloc'ed, or NULL. */
char *elf_interp(const unsigned char *buf, size_t len)
{
	const Elf64_Ehdr *h = elf64(buf, len);
	if (!h)
		return NULL;
	const Elf64_Phdr *ph = (const void *)(buf + h->e_phoff);
	for (unsigned i = 0; i < h->e_phnum; i++)
		if (ph[i].p_type == PT_INTERP && range_ok(ph[i].p_offset, ph[i].p_filesz, len))
			return xstrndup(
			    (const char *)buf + ph[i].p_offset,
			    strnlen((const char *)buf + ph[i].p_offset, ph[i].p_filesz));
	return NULL;
}

/* Write the kernel a VM boots: the uncompressed vmlinux when it has a PVH entry, else the
 * bzImage. *why says which and why. */
int write_kernel(struct build *b, const char *dir, bool *pvh, char **why, char **err)
{
	_cleanup_free_ char *path = xasprintf("%s/kernel", dir);
	_cleanup_free_ unsigned char *vmlinux = NULL;
	_cleanup_free_ char *xerr = NULL;
	size_t len = 0;
	ssize_t off = guest_find_xz(b->vmlinuz, b->vmlinuz_len);

	*pvh = false;
	if (off < 0) {
		*why = xstrdup("bzImage: no XZ payload in the bzImage");
	} else if (guest_xz_decompress(b->vmlinuz + off, b->vmlinuz_len - (size_t)off, &vmlinux,
				       &len, &xerr) < 0) {
		*why = xasprintf("bzImage: the XZ payload does not decompress: %s", xerr);
	} else if (!guest_elf_has_pvh(vmlinux, len)) {
		*why = xstrdup("bzImage: the decompressed payload is not an ELF with a PVH entry "
			       "note");
	} else {
		*pvh = true;
		*why =
		    xstrdup("vmlinux from the bzImage's XZ payload, booted through its PVH entry "
			    "(XEN_ELFNOTE_PHYS32_ENTRY)");
		return guest_write_file(path, vmlinux, len, 0644, err);
	}
	return guest_write_file(path, b->vmlinuz, b->vmlinuz_len, 0644, err);
}
