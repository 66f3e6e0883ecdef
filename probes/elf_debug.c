// SPDX-License-Identifier: MIT
/*
 * Separate debug files, found as gdb (and bcc, so bpftrace) finds them:
 * by build id under /usr/lib/debug/.build-id/, then by the
 * .gnu_debuglink name (with its CRC-32, zlib's polynomial) next to the
 * object, in its .debug/ directory, or under /usr/lib/debug.  Debian's
 * -dbg packages install the first kind; `objcopy --add-gnu-debuglink`
 * makes the second.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>
#include <zlib.h>

#include "probes/elf_syms.h"

#define DEBUG_DIR "/usr/lib/debug"

static bool is_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode);
}

/* /usr/lib/debug/.build-id/ab/cdef....debug, from the NT_GNU_BUILD_ID note */
static int by_build_id(Elf *e, char *out, size_t outlen)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		GElf_Nhdr nh;
		Elf_Data *d;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff))) {
			const unsigned char *id = (unsigned char *)d->d_buf + doff;
			size_t len;

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)d->d_buf + noff, "GNU", 4) ||
			    nh.n_descsz < 2 || nh.n_descsz > 64)
				continue;
			len = snprintf(out, outlen, DEBUG_DIR "/.build-id/%02x/",
				       id[0]);
			for (size_t i = 1; i < nh.n_descsz && len < outlen; i++)
				len += snprintf(out + len, outlen - len, "%02x", id[i]);
			if (len < outlen)
				snprintf(out + len, outlen - len, ".debug");
			return is_file(out) ? 0 : -ENOENT;
		}
	}
	return -ENOENT;
}

static int crc_of(const char *path, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		c = crc32(c, buf, (uInt)n);
	close(fd);
	if (n < 0)
		return -EIO;
	*crc = (uint32_t)c;
	return 0;
}

/* The .gnu_debuglink section: a file name, padding to 4, a CRC-32. */
static int debuglink(Elf *e, char *name, size_t namelen, uint32_t *crc)
{
	Elf_Scn *scn = NULL;
	size_t shstr;

	if (elf_getshdrstrndx(e, &shstr))
		return -ENOENT;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *sn;
		size_t len;

		if (!gelf_getshdr(scn, &sh))
			continue;
		sn = elf_strptr(e, shstr, sh.sh_name);
		if (!sn || strcmp(sn, ".gnu_debuglink"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return -ENOENT;
		len = strnlen(d->d_buf, d->d_size);
		if (!len || len >= namelen || ((len + 4) & ~3u) + 4 > d->d_size)
			return -ENOENT;
		memcpy(name, d->d_buf, len);
		name[len] = 0;
		memcpy(crc, (char *)d->d_buf + ((len + 4) & ~3u), 4);
		return 0;
	}
	return -ENOENT;
}

static int by_debuglink(Elf *e, const char *path, char *out, size_t outlen)
{
	char name[NAME_MAX + 1], dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	uint32_t want, got;

	if (!slash || debuglink(e, name, sizeof(name), &want))
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	for (int i = 0; i < 3; i++) {
		if (i == 0)
			snprintf(out, outlen, "%s/%s", dir, name);
		else if (i == 1)
			snprintf(out, outlen, "%s/.debug/%s", dir, name);
		else
			snprintf(out, outlen, DEBUG_DIR "%s/%s", dir, name);
		/* a link naming the object itself is no debug file */
		if (!strcmp(out, path) || !is_file(out))
			continue;
		if (!crc_of(out, &got) && got == want)
			return 0;
	}
	return -ENOENT;
}

int syms_debug_file(struct Elf *e, const char *path, char *out,
		    size_t outlen)
{
	if (!by_build_id(e, out, outlen))
		return 0;
	return by_debuglink(e, path, out, outlen);
}
