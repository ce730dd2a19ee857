/*
 * untar.c - the "untar" command: unpack a tar from stdin into the
 * workspace, as the session's user
 *
 * Why not the engine's archive PUT: the engine extracts as root, inside
 * the container, through whatever the session made of the directories it
 * extracts into; a session that swaps a directory for a symlink while the
 * engine works has root write, chmod or chown files outside the workspace
 * (measured on both engines: files put in /.hutch, the agent chmod-ed so
 * that no command ran any more).  Here the unpacking runs as the session's
 * own user, under the agent's seccomp filter: whatever a racing session
 * makes of its workspace, nothing is written that the session could not
 * have written itself.  The checks below (no symlink followed, names made
 * beside their final place and renamed into it) only keep a hostile
 * workspace from scattering the caller's files elsewhere in it.
 *
 * The archive is the one hutch's sync-in writes (src/lib/sync_in.c): ustar
 * headers, pax extended headers for long names, large sizes and exact
 * times; GNU long names are read too.  Directories, regular files and
 * symlinks are made; anything else is skipped and counted.  Memory stays
 * bounded whatever the archive: one block buffer, pax headers up to 1 MiB,
 * and the list of directories whose mode and time are set at the end.
 *
 * Answer (stdout, one JSON object): {"files", "dirs", "symlinks", "bytes",
 * "skipped"}, or {"error": {"code", "message"}} with exit 1 (2: usage).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "fs_path.h"
#include "jsonw.h"

#define UNTAR_DEFAULT_ROOT "/workspace"
#define BLOCK 512
#define IOBUF (64 * 1024)
#define PAX_MAX (1 << 20)
/* Directories whose mode and times wait for their contents: past these,
 * a directory gets them at once (its time then moves with what is put
 * in it later). */
#define FIXUPS_MAX 262144
#define FIXUP_BYTES_MAX (32u << 20)
#define ANSWER_MAX 8192

struct in {
	char buf[IOBUF];
	size_t pos, len;
	int eof;
};

struct fixup {
	char *rel;
	mode_t mode;
	struct timespec mtime;
};

struct untar {
	struct in in;
	int dest; /* O_PATH of the destination directory */
	/* The parent last used, held: most entries share it. */
	char parent_rel[PATH_MAX];
	int parent_fd;
	struct fixup *fix;
	size_t nfix, capfix, fixbytes;
	unsigned long long files, dirs, symlinks, bytes, skipped;
	/* The failure, for the answer. */
	const char *code;
	char msg[1024];
};

/* One entry, from its headers. */
struct entry {
	char name[PATH_MAX];
	char link[PATH_MAX];
	char type;
	mode_t mode;
	unsigned long long size;
	struct timespec mtime;
};

__attribute__((format(printf, 3, 4))) static int
failed(struct untar *u, const char *code, const char *fmt, ...)
{
	va_list ap;

	if (u->code)
		return -1; /* the first failure is the one told */
	va_start(ap, fmt);
	vsnprintf(u->msg, sizeof(u->msg), fmt, ap);
	va_end(ap);
	u->code = code;
	return -1;
}

/* --- reading stdin -------------------------------------------------------- */

/* More input when what was read is used up: 1 with bytes to take, 0 at
 * the end of stdin, -1 on failure. */
static int in_fill(struct untar *u)
{
	struct in *in = &u->in;

	while (in->pos == in->len && !in->eof) {
		ssize_t r = read(STDIN_FILENO, in->buf, sizeof(in->buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return failed(u, HUTCH_AGENT_ERR_IO,
				      "reading the archive: %s",
				      strerror(errno));
		if (r == 0)
			in->eof = 1;
		in->pos = 0;
		in->len = r > 0 ? (size_t)r : 0;
	}
	return in->pos < in->len;
}

/* Exactly @n bytes into @dst (NULL: dropped): 0, or -1 at a short end. */
static int in_read(struct untar *u, char *dst, size_t n)
{
	struct in *in = &u->in;

	while (n) {
		size_t take;
		int rc = in_fill(u);

		if (rc < 0)
			return -1;
		if (rc == 0)
			return failed(u, HUTCH_AGENT_ERR_INVALID,
				      "the archive ends in the middle of an "
				      "entry");
		take = in->len - in->pos < n ? in->len - in->pos : n;
		if (dst) {
			memcpy(dst, in->buf + in->pos, take);
			dst += take;
		}
		in->pos += take;
		n -= take;
	}
	return 0;
}

/* The padding after @size bytes of data. */
static int in_pad(struct untar *u, unsigned long long size)
{
	size_t pad = (size_t)((BLOCK - size % BLOCK) % BLOCK);

	return pad ? in_read(u, NULL, pad) : 0;
}

/* --- headers -------------------------------------------------------------- */

/* An octal field (spaces and NULs around it), or base-256 (GNU, for big
 * sizes): 0, or -1 when it is neither. */
static int field_num(const unsigned char *f, size_t n, unsigned long long *out)
{
	unsigned long long v = 0;
	size_t i = 0;
	int digits = 0;

	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return -1; /* negative, or more than 64 bits */
		for (i = 1; i < n; i++) {
			if (v >> 56)
				return -1;
			v = v << 8 | f[i];
		}
		*out = v;
		return 0;
	}
	while (i < n && (f[i] == ' ' || f[i] == '\0') && !digits)
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
		if (v >> 60)
			return -1;
		v = v << 3 | (unsigned long long)(f[i] - '0');
	}
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return -1;
	*out = v;
	return 0;
}

static int checksum_ok(const unsigned char *h)
{
	unsigned long long want;
	unsigned long sum = 0;

	if (field_num(h + 148, 8, &want) < 0)
		return 0;
	for (int i = 0; i < BLOCK; i++)
		sum += (i >= 148 && i < 156) ? ' ' : h[i];
	return sum == want;
}

static int all_zero(const unsigned char *h)
{
	for (int i = 0; i < BLOCK; i++)
		if (h[i])
			return 0;
	return 1;
}

/* "N.NNN" seconds of a pax time. */
static void pax_time(const char *v, struct timespec *ts)
{
	long long s = 0, ns = 0;
	int digits = 0;

	if (*v < '0' || *v > '9')
		return; /* before 1970, or not a time: keep the header's */
	for (int n = 0; *v >= '0' && *v <= '9'; v++, n++) {
		if (n == 18)
			return; /* past any time: keep the header's */
		s = s * 10 + (*v - '0');
	}
	if (*v == '.')
		for (v++; *v >= '0' && *v <= '9' && digits < 9; v++, digits++)
			ns = ns * 10 + (*v - '0');
	for (; digits < 9; digits++)
		ns *= 10;
	ts->tv_sec = (time_t)s;
	ts->tv_nsec = ns;
}

/* Records "LEN key=value\n" of a pax header, into @e. */
static int pax_parse(struct untar *u, char *p, size_t n, struct entry *e,
		     int *has_size)
{
	while (n) {
		size_t len = 0, i = 0, klen, vlen;
		char *key, *val, *eq;

		while (i < n && p[i] >= '0' && p[i] <= '9' && len < PAX_MAX)
			len = len * 10 + (size_t)(p[i++] - '0');
		if (i == 0 || i >= n || p[i] != ' ' || len <= i + 1 ||
		    len > n || p[len - 1] != '\n')
			return failed(u, HUTCH_AGENT_ERR_INVALID,
				      "a damaged pax header in the archive");
		key = p + i + 1;
		eq = memchr(key, '=', len - i - 1);
		if (!eq)
			return failed(u, HUTCH_AGENT_ERR_INVALID,
				      "a damaged pax header in the archive");
		klen = (size_t)(eq - key);
		val = eq + 1;
		vlen = (size_t)(p + len - 1 - val);
		val[vlen] = '\0'; /* over the '\n' */
		if (klen == 4 && !memcmp(key, "path", 4)) {
			if (vlen >= sizeof(e->name) || memchr(val, 0, vlen))
				return failed(u, HUTCH_AGENT_ERR_INVALID,
					      "a name in the archive is too "
					      "long or holds a NUL");
			memcpy(e->name, val, vlen + 1);
		} else if (klen == 8 && !memcmp(key, "linkpath", 8)) {
			if (vlen >= sizeof(e->link) || memchr(val, 0, vlen))
				return failed(u, HUTCH_AGENT_ERR_INVALID,
					      "a link target in the archive "
					      "is too long or holds a NUL");
			memcpy(e->link, val, vlen + 1);
		} else if (klen == 4 && !memcmp(key, "size", 4)) {
			char *end;

			/* Digits only: strtoull would take a sign and
			 * blanks ("-1" as its largest value). */
			errno = 0;
			e->size = strtoull(val, &end, 10);
			if (errno || val[0] < '0' || val[0] > '9' || *end)
				return failed(u, HUTCH_AGENT_ERR_INVALID,
					      "a damaged size in the archive");
			*has_size = 1;
		} else if (klen == 5 && !memcmp(key, "mtime", 5)) {
			pax_time(val, &e->mtime);
		}
		p += len;
		n -= len;
	}
	return 0;
}

/* Data of a pax or GNU long-name entry, NUL-terminated, bounded. */
static int read_meta(struct untar *u, unsigned long long size, char **out)
{
	char *p;

	if (size > PAX_MAX)
		return failed(u, HUTCH_AGENT_ERR_TOO_BIG,
			      "an extended header of %llu bytes in the "
			      "archive (at most %d)",
			      size, PAX_MAX);
	p = malloc((size_t)size + 1);
	if (!p)
		return failed(u, HUTCH_AGENT_ERR_IO, "out of memory");
	if (in_read(u, p, (size_t)size) < 0 || in_pad(u, size) < 0) {
		free(p);
		return -1;
	}
	p[size] = '\0';
	*out = p;
	return 0;
}

/* The next entry: 1, 0 at the end of the archive, -1 on failure. */
static int next_entry(struct untar *u, struct entry *e)
{
	unsigned char h[BLOCK];
	int has_name = 0, has_link = 0, has_size = 0;

	memset(e, 0, sizeof(*e));
	for (;;) {
		unsigned long long size, mode, mtime;
		char *meta = NULL;

		/* The end of the input before the archive's end marker:
		 * a cut upload (the library's walker failed, or the
		 * transfer broke) that must not pass for a whole one. */
		int more = in_fill(u);

		if (more == 0)
			return failed(u, HUTCH_AGENT_ERR_INVALID,
				      "the archive was cut: it ends without "
				      "its end marker");
		if (more < 0 || in_read(u, (char *)h, BLOCK) < 0)
			return -1;
		if (all_zero(h))
			return 0;
		if (!checksum_ok(h) || field_num(h + 124, 12, &size) < 0 ||
		    field_num(h + 100, 8, &mode) < 0 ||
		    field_num(h + 136, 12, &mtime) < 0)
			return failed(u, HUTCH_AGENT_ERR_INVALID,
				      "the input is not a tar archive (a "
				      "damaged header)");
		if (h[156] == 'x' || h[156] == 'L' || h[156] == 'K') {
			if (read_meta(u, size, &meta) < 0)
				return -1;
			if (h[156] == 'x') {
				int rc = pax_parse(u, meta, (size_t)size, e,
						   &has_size);

				has_name |= e->name[0] != '\0';
				has_link |= e->link[0] != '\0';
				free(meta);
				if (rc < 0)
					return -1;
				continue;
			}
			if (strlen(meta) >= PATH_MAX) {
				free(meta);
				return failed(u, HUTCH_AGENT_ERR_INVALID,
					      "a name in the archive is too "
					      "long");
			}
			strcpy(h[156] == 'L' ? e->name : e->link, meta);
			if (h[156] == 'L')
				has_name = 1;
			else
				has_link = 1;
			free(meta);
			continue;
		}
		if (h[156] == 'g') {
			/* Global pax header: nothing hutch writes uses it. */
			if (in_read(u, NULL, (size_t)size) < 0 ||
			    in_pad(u, size) < 0)
				return -1;
			continue;
		}
		if (!has_name) {
			/* ustar: prefix "/" name. */
			if (!memcmp(h + 257, "ustar", 5) && h[345])
				snprintf(e->name, sizeof(e->name),
					 "%.155s/%.100s", (char *)h + 345,
					 (char *)h);
			else
				snprintf(e->name, sizeof(e->name), "%.100s",
					 (char *)h);
		}
		if (!has_link)
			snprintf(e->link, sizeof(e->link), "%.100s",
				 (char *)h + 157);
		if (!has_size)
			e->size = size;
		if (!e->mtime.tv_sec && !e->mtime.tv_nsec)
			e->mtime.tv_sec = (time_t)mtime;
		e->type = (char)(h[156] ? h[156] : '0');
		e->mode = (mode_t)(mode & 07777);
		return 1;
	}
}

/* --- names ------------------------------------------------------------------ */

/*
 * An entry's name made plain: "./" in front and trailing slashes dropped;
 * then every component must be a real name (no "", ".", ".."), nothing
 * absolute.  hutch's sync-in writes nothing else; anything else is a
 * damaged or foreign archive, refused whole.
 */
static int plain_name(char *name)
{
	size_t n;
	char *p = name;

	while (p[0] == '.' && p[1] == '/')
		p += 2;
	memmove(name, p, strlen(p) + 1);
	for (n = strlen(name); n > 0 && name[n - 1] == '/'; n--)
		name[n - 1] = '\0';
	if (!*name || *name == '/')
		return 0;
	for (p = name; *p;) {
		char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);

		if (len == 0 || (len == 1 && p[0] == '.') ||
		    (len == 2 && p[0] == '.' && p[1] == '.') || len > NAME_MAX)
			return 0;
		p = *end ? end + 1 : end;
	}
	return 1;
}

/* --- making things ------------------------------------------------------ */

/*
 * The directory @rel under the destination, as an O_PATH fd: each
 * component opened beneath the one before with O_NOFOLLOW, made (0755)
 * when missing.  A symlink or a file on the way is not followed nor
 * replaced: the entry fails (directory entries come before what is in
 * them, and those do replace what is in their way, see make_dir).
 */
static int open_dir(struct untar *u, const char *rel)
{
	char comp[NAME_MAX + 1];
	const char *p = rel;
	int fd = dup(u->dest);

	while (fd >= 0 && *p) {
		const char *end = strchrnul(p, '/');
		size_t len = (size_t)(end - p);
		int next;

		memcpy(comp, p, len);
		comp[len] = '\0';
		next = openat(fd, comp,
			      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT &&
		    (mkdirat(fd, comp, 0755) == 0 || errno == EEXIST))
			next = openat(fd, comp,
				      O_PATH | O_DIRECTORY | O_NOFOLLOW |
					      O_CLOEXEC);
		close(fd);
		fd = next;
		p = *end ? end + 1 : end;
	}
	return fd;
}

/* The held directory of @name's parent; *base is its last component. */
static int parent_of(struct untar *u, char *name, const char **base)
{
	char *slash = strrchr(name, '/');
	const char *rel = "";

	*base = name;
	if (slash) {
		*slash = '\0';
		rel = name;
		*base = slash + 1;
	}
	if (u->parent_fd >= 0 && !strcmp(u->parent_rel, rel)) {
		if (slash)
			*slash = '/';
		return u->parent_fd;
	}
	if (u->parent_fd >= 0)
		close(u->parent_fd);
	u->parent_fd = open_dir(u, rel);
	snprintf(u->parent_rel, sizeof(u->parent_rel), "%s",
		 u->parent_fd >= 0 ? rel : "");
	if (u->parent_fd < 0) {
		int e = errno;

		failed(u, HUTCH_AGENT_ERR_NOT_DIR,
		       "'%s' is not a directory in the workspace (%s)", rel,
		       strerror(e));
	}
	if (slash)
		*slash = '/';
	return u->parent_fd;
}

/* Put the new entry @tmp in place of @base, in @dfd: renameat replaces a
 * file or symlink without following it; a directory there is the
 * session's and is kept (the entry fails). */
static int put_in_place(struct untar *u, int dfd, const char *tmp,
			const char *base, const char *whole)
{
	if (renameat(dfd, tmp, dfd, base) == 0)
		return 0;
	int e = errno;

	unlinkat(dfd, tmp, 0);
	if (e == EISDIR || e == ENOTEMPTY || e == EEXIST)
		return failed(u, HUTCH_AGENT_ERR_IS_DIR,
			      "'%s' is a directory in the workspace: not "
			      "replaced by a file",
			      whole);
	return failed(u, HUTCH_AGENT_ERR_IO, "'%s': %s", whole, strerror(e));
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int make_file(struct untar *u, struct entry *e)
{
	char tmp[NAME_MAX + 1];
	unsigned long long left = e->size;
	struct timespec times[2];
	const char *base;
	int dfd, fd = -1, tries;

	dfd = parent_of(u, e->name, &base);
	if (dfd < 0)
		return -1;
	for (tries = 0; tries < 16 && fd < 0; tries++) {
		agent_temp_name(tmp, sizeof(tmp), base);
		fd = openat(dfd, tmp,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		return failed(u, HUTCH_AGENT_ERR_IO, "'%s': %s", e->name,
			      strerror(errno));
	while (left) {
		struct in *in = &u->in;
		size_t take;

		int more = in_fill(u);

		if (more <= 0) {
			if (more == 0)
				failed(u, HUTCH_AGENT_ERR_INVALID,
				       "the archive ends in the middle of "
				       "'%s'",
				       e->name);
			goto fail;
		}
		take = in->len - in->pos;
		if (take > left)
			take = (size_t)left;
		if (write_all(fd, in->buf + in->pos, take) < 0) {
			failed(u, HUTCH_AGENT_ERR_IO, "writing '%s': %s",
			       e->name, strerror(errno));
			goto fail;
		}
		in->pos += take;
		left -= take;
		u->bytes += take;
	}
	if (in_pad(u, e->size) < 0)
		goto fail;
	times[0].tv_sec = 0;
	times[0].tv_nsec = UTIME_OMIT;
	times[1] = e->mtime;
	/* Set-id bits never: the seccomp filter would refuse the chmod. */
	if (fchmod(fd, e->mode & 01777) < 0 || futimens(fd, times) < 0) {
		failed(u, HUTCH_AGENT_ERR_IO, "'%s': %s", e->name,
		       strerror(errno));
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		failed(u, HUTCH_AGENT_ERR_IO, "writing '%s': %s", e->name,
		       strerror(errno));
		unlinkat(dfd, tmp, 0);
		return -1;
	}
	if (put_in_place(u, dfd, tmp, base, e->name) < 0)
		return -1;
	u->files++;
	return 0;
fail:
	close(fd);
	unlinkat(dfd, tmp, 0);
	return -1;
}

static int make_symlink(struct untar *u, struct entry *e)
{
	char tmp[NAME_MAX + 1];
	const char *base;
	int dfd, tries, rc = -1;

	if (!e->link[0])
		return failed(u, HUTCH_AGENT_ERR_INVALID,
			      "symlink '%s' in the archive has no target",
			      e->name);
	dfd = parent_of(u, e->name, &base);
	if (dfd < 0)
		return -1;
	/* The target is stored as it is and never followed here. */
	for (tries = 0; tries < 16 && rc < 0; tries++) {
		agent_temp_name(tmp, sizeof(tmp), base);
		rc = symlinkat(e->link, dfd, tmp);
		if (rc < 0 && errno != EEXIST)
			break;
	}
	if (rc < 0)
		return failed(u, HUTCH_AGENT_ERR_IO, "'%s': %s", e->name,
			      strerror(errno));
	if (put_in_place(u, dfd, tmp, base, e->name) < 0)
		return -1;
	u->symlinks++;
	return 0;
}

/* Mode and time of directory @rel, set now through a fresh walk. */
static void dir_finish(struct untar *u, const char *rel, mode_t mode,
		       const struct timespec *mtime)
{
	struct timespec times[2] = { { 0, UTIME_OMIT }, *mtime };
	char self[64];
	int fd = open_dir(u, rel);

	if (fd < 0)
		return; /* gone meanwhile: the session's doing */
	/* fchmod and futimens do not take an O_PATH fd: through /proc,
	 * which reopens this very directory. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	chmod(self, mode & 01777);
	utimensat(AT_FDCWD, self, times, 0);
	close(fd);
}

static int make_dir(struct untar *u, struct entry *e)
{
	const char *base;
	struct stat st;
	int dfd;

	dfd = parent_of(u, e->name, &base);
	if (dfd < 0)
		return -1;
	/* What the host has replaces what the workspace had, as docker cp
	 * does: a file or symlink in the way goes (never followed). */
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    !S_ISDIR(st.st_mode) && unlinkat(dfd, base, 0) < 0)
		return failed(u, HUTCH_AGENT_ERR_IO, "'%s': %s", e->name,
			      strerror(errno));
	if (mkdirat(dfd, base, 0700) < 0 && errno != EEXIST)
		return failed(u, HUTCH_AGENT_ERR_IO, "'%s': %s", e->name,
			      strerror(errno));
	u->dirs++;
	/* Mode and time once its contents are in (they would change the
	 * time; a read-only mode would keep them out). */
	if (u->nfix < FIXUPS_MAX &&
	    u->fixbytes + strlen(e->name) + 1 <= FIXUP_BYTES_MAX) {
		if (u->nfix == u->capfix) {
			size_t cap = u->capfix ? u->capfix * 2 : 256;
			struct fixup *f = realloc(u->fix, cap * sizeof(*f));

			if (!f)
				return failed(u, HUTCH_AGENT_ERR_IO,
					      "out of memory");
			u->fix = f;
			u->capfix = cap;
		}
		u->fix[u->nfix].rel = strdup(e->name);
		if (!u->fix[u->nfix].rel)
			return failed(u, HUTCH_AGENT_ERR_IO, "out of memory");
		u->fix[u->nfix].mode = e->mode;
		u->fix[u->nfix].mtime = e->mtime;
		u->fixbytes += strlen(e->name) + 1;
		u->nfix++;
	} else {
		/* No room to wait: its mode now, with the owner's access
		 * kept so that its contents can still go in; its time moves
		 * with them. */
		dir_finish(u, e->name, e->mode | S_IRWXU, &e->mtime);
	}
	return 0;
}

static int unpack(struct untar *u)
{
	struct entry *e = malloc(sizeof(*e));
	int rc;

	if (!e)
		return failed(u, HUTCH_AGENT_ERR_IO, "out of memory");
	while ((rc = next_entry(u, e)) == 1) {
		if (!plain_name(e->name)) {
			rc = failed(u, HUTCH_AGENT_ERR_INVALID,
				    "an entry of the archive is not a plain "
				    "relative name");
			break;
		}
		switch (e->type) {
		case '0':
		case '7':
			rc = make_file(u, e);
			break;
		case '5':
			rc = make_dir(u, e);
			break;
		case '2':
			rc = make_symlink(u, e);
			break;
		default:
			/* Hard links, devices, fifos: hutch's sync-in
			 * sends none; never made here. */
			u->skipped++;
			rc = in_read(u, NULL, (size_t)e->size) < 0 ||
					     in_pad(u, e->size) < 0 ?
				     -1 :
				     0;
			break;
		}
		if (rc < 0)
			break;
	}
	free(e);
	/* Deepest first: a parent made read-only does not keep its
	 * children from theirs. */
	for (size_t i = u->nfix; i-- > 0;) {
		dir_finish(u, u->fix[i].rel, u->fix[i].mode, &u->fix[i].mtime);
		free(u->fix[i].rel);
	}
	free(u->fix);
	u->fix = NULL;
	return rc < 0 ? -1 : 0;
}

/* --- the command ------------------------------------------------------------ */

static int answer(struct untar *u, int rc)
{
	struct jsonw w;
	int code;

	jsonw_init(&w, ANSWER_MAX);
	jsonw_open(&w, NULL, '{');
	if (rc < 0) {
		jsonw_open(&w, "error", '{');
		jsonw_strz(&w, "code", u->code ? u->code : HUTCH_AGENT_ERR_IO);
		jsonw_strz(&w, "message",
			   u->code ? u->msg : "the unpacking failed");
		jsonw_close(&w, '}');
		code = u->code && !strcmp(u->code, HUTCH_AGENT_ERR_USAGE) ?
			       HUTCH_AGENT_EXIT_USAGE :
			       HUTCH_AGENT_EXIT_FAIL;
	} else {
		jsonw_int(&w, "files", (long long)u->files);
		jsonw_int(&w, "dirs", (long long)u->dirs);
		jsonw_int(&w, "symlinks", (long long)u->symlinks);
		jsonw_int(&w, "bytes", (long long)u->bytes);
		jsonw_int(&w, "skipped", (long long)u->skipped);
		code = HUTCH_AGENT_EXIT_OK;
	}
	jsonw_close(&w, '}');
	if (jsonw_emit(&w, STDOUT_FILENO) < 0) {
		agent_err("untar: writing the answer: %m");
		code = HUTCH_AGENT_EXIT_FAIL;
	}
	jsonw_free(&w);
	return code;
}

/* The destination directory, resolved beneath the root as the file tools
 * resolve a path, made when missing (its parents too). */
static int open_dest(struct untar *u, const struct fsp_root *root,
		     const char *dest)
{
	struct fsp_res res;
	int rc = fsp_resolve(root, dest, FSP_MKDIR, &res), fd;

	if (rc == FSP_ESCAPE)
		return failed(u, HUTCH_AGENT_ERR_ESCAPE,
			      "'%s' resolves outside %s", dest, root->path);
	if (rc)
		return failed(u, HUTCH_AGENT_ERR_IO, "'%s': %s", dest,
			      strerror(-rc));
	if (res.fd >= 0) {
		if (!S_ISDIR(res.st.st_mode)) {
			fsp_res_close(&res);
			return failed(u, HUTCH_AGENT_ERR_NOT_DIR,
				      "'%s' is not a directory", dest);
		}
		fd = dup(res.fd);
	} else if (res.parent >= 0) {
		if (mkdirat(res.parent, res.name, 0755) < 0 && errno != EEXIST)
			fd = -1;
		else
			fd = openat(res.parent, res.name,
				    O_PATH | O_DIRECTORY | O_NOFOLLOW |
					    O_CLOEXEC);
	} else {
		fd = -1;
		errno = ENOENT;
	}
	int e = errno;

	fsp_res_close(&res);
	if (fd < 0)
		return failed(u, HUTCH_AGENT_ERR_IO, "'%s': %s", dest,
			      strerror(e));
	u->dest = fd;
	return 0;
}

int agent_untar(int argc, char **argv)
{
	struct untar *u = calloc(1, sizeof(*u));
	struct fsp_root root = { .fd = -1 };
	const char *root_path = UNTAR_DEFAULT_ROOT, *dest = NULL;
	int i, rc = -1, code, opts = 1;

	if (!u) {
		agent_err("untar: out of memory");
		return HUTCH_AGENT_EXIT_FAIL;
	}
	/* Other processes of the session's user may not read or write its
	 * stdin through /proc, nor trace it: what it unpacks is the
	 * caller's. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	u->dest = -1;
	u->parent_fd = -1;
	for (i = 1; i < argc; i++) {
		if (opts && !strcmp(argv[i], "--")) {
			opts = 0;
		} else if (opts && !strcmp(argv[i], "--root") && i + 1 < argc &&
			   argv[i + 1][0] == '/') {
			root_path = argv[++i];
		} else if (opts && argv[i][0] == '-') {
			failed(u, HUTCH_AGENT_ERR_USAGE,
			       "untar: unknown option '%.64s'", argv[i]);
			goto out;
		} else if (!dest) {
			dest = argv[i];
		} else {
			failed(u, HUTCH_AGENT_ERR_USAGE,
			       "untar: one DEST at most");
			goto out;
		}
	}
	rc = fsp_root_open(&root, root_path);
	if (rc) {
		failed(u, HUTCH_AGENT_ERR_IO, "root '%s': %s", root_path,
		       strerror(-rc));
		rc = -1;
		goto out;
	}
	if ((rc = open_dest(u, &root, dest && *dest ? dest : ".")) == 0)
		rc = unpack(u);
out:
	code = answer(u, rc);
	if (u->parent_fd >= 0)
		close(u->parent_fd);
	if (u->dest >= 0)
		close(u->dest);
	fsp_root_close(&root);
	free(u);
	return code;
}
