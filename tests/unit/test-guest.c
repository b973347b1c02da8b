/* SPDX-License-Identifier: MIT */
/*
 * The built-in guest's building blocks: the reproducible cpio writer, the XZ payload finder and
 * decompressor, the PVH note check, .modinfo parsing and module load ordering. Nothing here
 * downloads or boots anything.
 */
#include <archive.h>
#include <archive_entry.h>
#include <elf.h>
#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "guest-build.h"
#include "guest.h"
#include "util.h"

/* ---- cpio ---- */

static void fill_tree(struct guest_tree *t, bool reversed)
{
	static const char hello[] = "hello\n";
	static const char script[] = "#!/bin/sh\necho hi\n";

	/* the same content added in two different orders must give the same archive */
	if (!reversed) {
		guest_tree_add_dir(t, "etc", 0755);
		guest_tree_add_file(t, "etc/hello", 0644, hello, sizeof(hello) - 1);
		guest_tree_add_file(t, "init", 0755, script, sizeof(script) - 1);
		guest_tree_add_symlink(t, "bin/sh", "/bin/busybox");
		guest_tree_add_file(t, "bin/busybox", 0755, "BB", 2);
		guest_tree_add_chardev(t, "dev/console", 0600, 5, 1);
		guest_tree_add_file(t, "a-b", 0644, "", 0);
	} else {
		guest_tree_add_file(t, "a-b", 0644, "", 0);
		guest_tree_add_chardev(t, "dev/console", 0600, 5, 1);
		guest_tree_add_file(t, "bin/busybox", 0755, "XX", 2);
		guest_tree_add_file(t, "bin/busybox", 0755, "BB", 2); /* replaces */
		guest_tree_add_symlink(t, "bin/sh", "/bin/busybox");
		guest_tree_add_file(t, "init", 0755, script, sizeof(script) - 1);
		guest_tree_add_file(t, "etc/hello", 0644, hello, sizeof(hello) - 1);
	}
}

static char *write_tree(bool reversed, int64_t mtime, size_t *len)
{
	struct guest_tree t = { 0 };
	char *err = NULL;
	g_autofree char *dir = g_dir_make_tmp("ferry-guest-XXXXXX", NULL);
	g_autofree char *path = g_build_filename(dir, "t.cpio", NULL);

	fill_tree(&t, reversed);
	g_assert_cmpint(guest_cpio_write(&t, path, mtime, &err), ==, 0);
	g_assert_null(err);
	guest_tree_clear(&t);
	char *data = read_file(path, len);
	g_assert_nonnull(data);
	g_unlink(path);
	g_rmdir(dir);
	return data;
}

static void test_cpio_reproducible(void)
{
	size_t l1, l2, l3;
	_cleanup_free_ char *a = write_tree(false, 0, &l1);
	_cleanup_free_ char *b = write_tree(true, 0, &l2);
	_cleanup_free_ char *c = write_tree(false, 1700000000, &l3);

	g_assert_cmpuint(l1, ==, l2);
	g_assert_true(memcmp(a, b, l1) == 0);
	/* a different mtime must change the bytes: the test would pass vacuously otherwise */
	g_assert_cmpuint(l1, ==, l3);
	g_assert_false(memcmp(a, c, l1) == 0);
	/* newc magic */
	g_assert_true(memcmp(a, "070701", 6) == 0);
}

static void test_cpio_sorted_fixed(void)
{
	size_t len;
	_cleanup_free_ char *data = write_tree(true, 1234, &len);
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	static const char *const expect[] = { "a-b",         "bin", "bin/busybox", "bin/sh", "dev",
					      "dev/console", "etc", "etc/hello",   "init" };
	size_t n = 0;

	archive_read_support_format_cpio(a);
	g_assert_cmpint(archive_read_open_memory(a, data, len), ==, ARCHIVE_OK);
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		g_assert_cmpuint(n, <, ELEMENTSOF(expect));
		g_assert_cmpstr(archive_entry_pathname(e), ==, expect[n]);
		g_assert_cmpint(archive_entry_mtime(e), ==, 1234);
		g_assert_cmpint(archive_entry_uid(e), ==, 0);
		g_assert_cmpint(archive_entry_gid(e), ==, 0);
		g_assert_cmpint(archive_entry_ino64(e), ==, (la_int64_t)n + 1);
		if (STREQ(expect[n], "bin/sh")) {
			g_assert_cmpint(archive_entry_filetype(e), ==, AE_IFLNK);
			g_assert_cmpstr(archive_entry_symlink(e), ==, "/bin/busybox");
		} else if (STREQ(expect[n], "bin/busybox")) {
			char buf[8] = { 0 };
			g_assert_cmpint(archive_entry_filetype(e), ==, AE_IFREG);
			g_assert_cmpint(archive_entry_perm(e), ==, 0755);
			g_assert_cmpint(archive_read_data(a, buf, sizeof(buf)), ==, 2);
			g_assert_cmpstr(buf, ==, "BB");
		} else if (STREQ(expect[n], "dev/console")) {
			g_assert_cmpint(archive_entry_filetype(e), ==, AE_IFCHR);
			g_assert_cmpint(archive_entry_rdevmajor(e), ==, 5);
			g_assert_cmpint(archive_entry_rdevminor(e), ==, 1);
		} else if (STREQ(expect[n], "bin")) {
			/* parents are added implicitly, world-readable for QEMU's user */
			g_assert_cmpint(archive_entry_filetype(e), ==, AE_IFDIR);
			g_assert_cmpint(archive_entry_perm(e), ==, 0755);
		}
		n++;
	}
	g_assert_cmpuint(n, ==, ELEMENTSOF(expect));
	archive_read_free(a);
}

/* ---- XZ ---- */

static unsigned char *xz_compress(const void *data, size_t len, size_t *outlen)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	size_t cap = len + 65536, used = 0;
	unsigned char *out = xmalloc(cap);

	g_assert_cmpint(archive_write_set_format_raw(a), ==, ARCHIVE_OK);
	g_assert_cmpint(archive_write_add_filter_xz(a), ==, ARCHIVE_OK);
	g_assert_cmpint(archive_write_open_memory(a, out, cap, &used), ==, ARCHIVE_OK);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_pathname(e, "data");
	archive_entry_set_size(e, (la_int64_t)len);
	g_assert_cmpint(archive_write_header(a, e), ==, ARCHIVE_OK);
	g_assert_cmpint(archive_write_data(a, data, len), ==, (la_ssize_t)len);
	g_assert_cmpint(archive_write_close(a), ==, ARCHIVE_OK);
	archive_entry_free(e);
	archive_write_free(a);
	*outlen = used;
	return out;
}

static void test_xz_find(void)
{
	static const unsigned char none[] = "no magic here \xfd\x37\x7a\x58\x5a";
	unsigned char buf[64] = { 0 };

	g_assert_cmpint(guest_find_xz(none, sizeof(none) - 1), ==, -1);
	g_assert_cmpint(guest_find_xz(buf, 3), ==, -1);
	memcpy(buf + 37, "\xfd\x37\x7a\x58\x5a\x00", 6);
	g_assert_cmpint(guest_find_xz(buf, sizeof(buf)), ==, 37);
	/* a truncated magic at the very end is not a stream */
	g_assert_cmpint(guest_find_xz(buf, 42), ==, -1);
}

static void test_xz_payload(void)
{
	/* a fake "bzImage": setup code, the XZ payload, then the 4-byte size and more code, like
	 * arch/x86/boot/compressed lays it out; the tail must not reach the decompressor */
	size_t plen = 300000, zlen;
	_cleanup_free_ unsigned char *plain = xmalloc(plen);
	for (size_t i = 0; i < plen; i++)
		plain[i] = (unsigned char)((i * 7) ^ (i >> 8));
	_cleanup_free_ unsigned char *z = xz_compress(plain, plen, &zlen);
	static const unsigned char head[] = "MZ setup code YZ \x01\x02";
	static const unsigned char tail[] = "\xe0\x93\x04\x00 more code YZ YZ \xfd"
					    "7zXZ";
	size_t total = sizeof(head) + zlen + sizeof(tail);
	_cleanup_free_ unsigned char *img = xmalloc(total);
	memcpy(img, head, sizeof(head));
	memcpy(img + sizeof(head), z, zlen);
	memcpy(img + sizeof(head) + zlen, tail, sizeof(tail));

	ssize_t off = guest_find_xz(img, total);
	g_assert_cmpint(off, ==, (ssize_t)sizeof(head));

	unsigned char *out = NULL;
	size_t outlen = 0;
	char *err = NULL;
	g_assert_cmpint(guest_xz_decompress(img + off, total - (size_t)off, &out, &outlen, &err),
			==, 0);
	g_assert_null(err);
	g_assert_cmpuint(outlen, ==, plen);
	g_assert_true(memcmp(out, plain, plen) == 0);
	free(out);

	/* cut inside the stream: no footer, a clear error */
	g_assert_cmpint(guest_xz_decompress(img + off, zlen / 2, &out, &outlen, &err), <, 0);
	g_assert_nonnull(err);
	free(err);
}

/* ---- ELF: PVH note and .modinfo ---- */

/* A minimal ELF64 with one PT_NOTE segment holding one note of the given name and type. */
static unsigned char *elf_with_note(const char *name, uint32_t type, size_t *len)
{
	size_t namesz = strlen(name) + 1, nameal = (namesz + 3) & ~(size_t)3;
	size_t notesz = 12 + nameal + 8;
	size_t off = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr);
	unsigned char *b = xcalloc(1, off + notesz);
	Elf64_Ehdr *h = (Elf64_Ehdr *)(void *)b;
	Elf64_Phdr *ph = (Elf64_Phdr *)(void *)(b + sizeof(*h));
	uint32_t hdr[3] = { (uint32_t)namesz, 8, type };

	memcpy(h->e_ident, ELFMAG, SELFMAG);
	h->e_ident[EI_CLASS] = ELFCLASS64;
	h->e_ident[EI_DATA] = ELFDATA2LSB;
	h->e_ident[EI_VERSION] = EV_CURRENT;
	h->e_type = ET_EXEC;
	h->e_machine = EM_X86_64;
	h->e_phoff = sizeof(*h);
	h->e_phentsize = sizeof(Elf64_Phdr);
	h->e_phnum = 1;
	ph->p_type = PT_NOTE;
	ph->p_offset = off;
	ph->p_filesz = notesz;
	memcpy(b + off, hdr, sizeof(hdr));
	memcpy(b + off + 12, name, namesz);
	*len = off + notesz;
	return b;
}

static void test_pvh_note(void)
{
	size_t len;
	_cleanup_free_ unsigned char *pvh = elf_with_note("Xen", 18, &len);
	g_assert_true(guest_elf_has_pvh(pvh, len));
	/* truncated: the note runs past the end of the file */
	g_assert_false(guest_elf_has_pvh(pvh, len - 4));

	_cleanup_free_ unsigned char *other = elf_with_note("Xen", 17, &len);
	g_assert_false(guest_elf_has_pvh(other, len));
	_cleanup_free_ unsigned char *gnu = elf_with_note("GNU", 18, &len);
	g_assert_false(guest_elf_has_pvh(gnu, len));
	g_assert_false(guest_elf_has_pvh((const unsigned char *)"MZ not an elf", 13));
}

/* A minimal ELF64 relocatable object with a .modinfo section. */
static unsigned char *ko_with_modinfo(const char *modinfo, size_t milen, size_t *len)
{
	static const char shstr[] = "\0.modinfo\0.shstrtab";
	size_t mi_off = sizeof(Elf64_Ehdr);
	size_t str_off = mi_off + milen;
	size_t sh_off = (str_off + sizeof(shstr) + 7) & ~(size_t)7;
	size_t total = sh_off + 3 * sizeof(Elf64_Shdr);
	unsigned char *b = xcalloc(1, total);
	Elf64_Ehdr *h = (Elf64_Ehdr *)(void *)b;
	Elf64_Shdr *sh = (Elf64_Shdr *)(void *)(b + sh_off);

	memcpy(h->e_ident, ELFMAG, SELFMAG);
	h->e_ident[EI_CLASS] = ELFCLASS64;
	h->e_ident[EI_DATA] = ELFDATA2LSB;
	h->e_type = ET_REL;
	h->e_machine = EM_X86_64;
	h->e_shoff = sh_off;
	h->e_shentsize = sizeof(Elf64_Shdr);
	h->e_shnum = 3;
	h->e_shstrndx = 2;
	memcpy(b + mi_off, modinfo, milen);
	memcpy(b + str_off, shstr, sizeof(shstr));
	sh[1].sh_name = 1;
	sh[1].sh_type = SHT_PROGBITS;
	sh[1].sh_offset = mi_off;
	sh[1].sh_size = milen;
	sh[2].sh_name = 10;
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = str_off;
	sh[2].sh_size = sizeof(shstr);
	*len = total;
	return b;
}

static void test_modinfo(void)
{
	static const char mi[] = "license=GPL\0depends=virtio_ring,virtio\0retpoline=Y\0"
				 "name=virtio-pci\0vermagic=6.1.0 SMP";
	static const char nodeps[] = "name=crc16\0depends=";
	size_t len;
	struct guest_module m;
	char *err = NULL;

	_cleanup_free_ unsigned char *ko = ko_with_modinfo(mi, sizeof(mi), &len);
	g_assert_cmpint(guest_modinfo_parse(ko, len, &m, &err), ==, 0);
	g_assert_cmpstr(m.name, ==, "virtio_pci");
	g_assert_cmpstr(m.deps[0], ==, "virtio_ring");
	g_assert_cmpstr(m.deps[1], ==, "virtio");
	g_assert_null(m.deps[2]);
	guest_module_clear(&m);

	_cleanup_free_ unsigned char *ko2 = ko_with_modinfo(nodeps, sizeof(nodeps), &len);
	g_assert_cmpint(guest_modinfo_parse(ko2, len, &m, &err), ==, 0);
	g_assert_cmpstr(m.name, ==, "crc16");
	g_assert_null(m.deps[0]);
	guest_module_clear(&m);

	g_assert_cmpint(guest_modinfo_parse((const unsigned char *)"junk", 4, &m, &err), <, 0);
	g_assert_nonnull(err);
	free(err);
	guest_module_clear(&m);
}

/* ---- module order ---- */

static char *deps_a[] = { (char *)"jbd2", (char *)"mbcache", (char *)"crc16", NULL };
static char *deps_jbd2[] = { (char *)"crc16", NULL };
static char *deps_none[] = { NULL };
static char *deps_vfat[] = { (char *)"fat", NULL };
static char *deps_cyc1[] = { (char *)"cyc_b", NULL };
static char *deps_cyc2[] = { (char *)"cyc-a", NULL };
static char *deps_missing[] = { (char *)"nowhere", NULL };

static const struct guest_module mods[] = {
	{ (char *)"ext4", (char *)"fs/ext4/ext4.ko", deps_a },
	{ (char *)"crc16", (char *)"lib/crc16.ko", deps_none },
	{ (char *)"jbd2", (char *)"fs/jbd2/jbd2.ko", deps_jbd2 },
	{ (char *)"mbcache", (char *)"fs/mbcache.ko", deps_none },
	{ (char *)"vfat", (char *)"fs/fat/vfat.ko", deps_vfat },
	{ (char *)"fat", (char *)"fs/fat/fat.ko", deps_none },
	{ (char *)"crc32c_generic", (char *)"crypto/crc32c_generic.ko", deps_none },
	{ (char *)"cyc_a", (char *)"cyc_a.ko", deps_cyc1 },
	{ (char *)"cyc_b", (char *)"cyc_b.ko", deps_cyc2 },
	{ (char *)"broken", (char *)"broken.ko", deps_missing },
};

static void assert_order(const char *const *wanted, size_t nw, const char *const *expect, size_t ne)
{
	size_t *order = NULL, n = 0;
	char *err = NULL;

	g_assert_cmpint(guest_module_order(mods, ELEMENTSOF(mods), wanted, nw, &order, &n, &err),
			==, 0);
	g_assert_null(err);
	g_assert_cmpuint(n, ==, ne);
	for (size_t i = 0; i < n; i++)
		g_assert_cmpstr(mods[order[i]].name, ==, expect[i]);
	free(order);
}

static void test_module_order(void)
{
	/* dependencies first, wanted order kept, shared dependencies once */
	const char *const w1[] = { "crc32c_generic", "ext4", "vfat" };
	const char *const e1[] = { "crc32c_generic", "crc16", "jbd2", "mbcache",
				   "ext4",           "fat",   "vfat" };
	assert_order(w1, ELEMENTSOF(w1), e1, ELEMENTSOF(e1));

	/* a wanted module already pulled in as a dependency is not repeated; '-' equals '_' */
	const char *const w2[] = { "jbd2", "ext4", "crc32c-generic" };
	const char *const e2[] = { "crc16", "jbd2", "mbcache", "ext4", "crc32c_generic" };
	assert_order(w2, ELEMENTSOF(w2), e2, ELEMENTSOF(e2));
}

static void test_module_order_errors(void)
{
	size_t *order = NULL, n = 0;
	char *err = NULL;
	const char *const cyc[] = { "cyc_a" };
	const char *const missing[] = { "ext4", "nosuch" };
	const char *const broken[] = { "broken" };

	g_assert_cmpint(guest_module_order(mods, ELEMENTSOF(mods), cyc, 1, &order, &n, &err), ==,
			-ELOOP);
	g_assert_nonnull(strstr(err, "cycle"));
	g_clear_pointer(&err, free);
	g_assert_cmpint(guest_module_order(mods, ELEMENTSOF(mods), missing, 2, &order, &n, &err),
			==, -ENOENT);
	g_assert_nonnull(strstr(err, "'nosuch'"));
	g_clear_pointer(&err, free);
	g_assert_cmpint(guest_module_order(mods, ELEMENTSOF(mods), broken, 1, &order, &n, &err), ==,
			-ENOENT);
	g_assert_nonnull(strstr(err, "'nowhere' needed by 'broken'"));
	g_clear_pointer(&err, free);
}

/* ---- the cache ---- */

/* A build prunes the other keyed guests, but not the one `current` named before it and not
 * one a run holds (the run of another ferry, whose ferry-sum is another key, booting from it):
 * the hold keeps it until it is let go, and the next prune removes it. */
static void test_cache_prune_hold(void)
{
	char *dir = g_dir_make_tmp("ferry-guest-XXXXXX", NULL);
	g_assert_nonnull(dir);
	static const char *const keys[] = { "11111111111111111111111111111111",
					    "22222222222222222222222222222222",
					    "33333333333333333333333333333333",
					    "44444444444444444444444444444444" };
	char *path[4];
	for (size_t i = 0; i < 4; i++) {
		path[i] = g_build_filename(dir, keys[i], NULL);
		g_assert_cmpint(g_mkdir(path[i], 0755), ==, 0);
		char *f = g_build_filename(path[i], "kernel", NULL);
		g_assert_true(g_file_set_contents(f, "k", 1, NULL));
		g_free(f);
	}
	char *cur = g_build_filename(dir, "current", NULL);
	g_assert_cmpint(symlink(keys[0], cur), ==, 0);
	int hold = guest_cache_hold(path[2]);
	g_assert_cmpint(hold, >=, 0);
	/* a new build of key 1: 0 was current, 2 is held, 3 goes */
	guest_cache_prune(dir, keys[1]);
	g_assert_true(g_file_test(path[0], G_FILE_TEST_IS_DIR));
	g_assert_true(g_file_test(path[1], G_FILE_TEST_IS_DIR));
	g_assert_true(g_file_test(path[2], G_FILE_TEST_IS_DIR));
	g_assert_false(g_file_test(path[3], G_FILE_TEST_EXISTS));
	/* let go: the next prune removes it */
	close(hold);
	guest_cache_prune(dir, keys[1]);
	g_assert_false(g_file_test(path[2], G_FILE_TEST_EXISTS));
	g_assert_true(g_file_test(path[0], G_FILE_TEST_IS_DIR));
	g_assert_cmpint(guest_cache_hold(path[3]), ==, -1);
	for (size_t i = 0; i < 4; i++) {
		char *f = g_build_filename(path[i], "kernel", NULL);
		g_remove(f);
		g_rmdir(path[i]);
		g_free(f);
		g_free(path[i]);
	}
	g_remove(cur);
	g_free(cur);
	g_assert_cmpint(g_rmdir(dir), ==, 0);
	g_free(dir);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/guest/cpio/reproducible", test_cpio_reproducible);
	g_test_add_func("/guest/cpio/sorted-fixed", test_cpio_sorted_fixed);
	g_test_add_func("/guest/xz/find", test_xz_find);
	g_test_add_func("/guest/xz/payload", test_xz_payload);
	g_test_add_func("/guest/elf/pvh-note", test_pvh_note);
	g_test_add_func("/guest/elf/modinfo", test_modinfo);
	g_test_add_func("/guest/modules/order", test_module_order);
	g_test_add_func("/guest/modules/order-errors", test_module_order_errors);
	g_test_add_func("/guest/cache/prune-hold", test_cache_prune_hold);
	return g_test_run();
}
