/*
 * fs.c - the "fs" subcommand: file tools confined to the workspace
 *
 * Protocol: doc/agent-protocol.md ("fs"), constants in agent_protocol.h.
 * One JSON object on stdout, exit 0 (ok), 1 (tool error) or 2 (usage).  Every path a user gives goes through
 * fs_path.c; directory walks below a resolved directory only ever open
 * names beneath an fd they hold, with O_NOFOLLOW, so they cannot leave it.
 *
 * Memory is bounded whatever the files: read streams, grep matches lines
 * in 64 KiB pieces with PCRE2 under a heap limit, edit refuses files over
 * 16 MiB, every list is capped and the whole answer stays under 8 MiB.
 */
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>

/* The agent is 8-bit only: one pcre2_*_8 set of functions, linked
 * statically (configure checks for libpcre2-8.a). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "agent.h"
#include "base64.h"
#include "editmatch.h"
#include "fs_path.h"
#include "glob.h"
#include "jsonw.h"
#include "utf8.h"

#define FS_DEFAULT_ROOT "/workspace"

#define READ_LIMIT_DEFAULT 2000
#define READ_BYTES_DEFAULT (256 << 10)
#define READ_BYTES_MAX (4 << 20)
#define EDIT_MAX (16 << 20)
#define GREP_MAX_DEFAULT 200
#define FIND_MAX_DEFAULT 1000
#define LS_MAX_DEFAULT 1000
#define LIST_MAX 100000 /* largest --max accepted */
#define INCLUDE_MAX 64	/* --include options */

#define OUT_MAX HUTCH_AGENT_FS_ANSWER_MAX /* whole answer */
#define OUT_SOFT (6 << 20)		  /* no new list entry past this */
#define WALK_DEPTH 64
#define DIR_ENTRIES_MAX 65536 /* names sorted per directory */
#define BINARY_PROBE 8192
#define CHUNK 65536
#define GREP_PIECE 65536 /* longer lines are matched in pieces */
#define GREP_TEXT_MAX 500
/* PCRE2 backtracks: a pattern such as (a+)+$ takes time exponential in the
 * length of a line it almost matches.  These bound one pcre2_match() (a
 * piece of a line): PCRE2's match limit (its own default, made explicit),
 * how deep backtracking nests, and the memory of its frames (KiB; PCRE2's
 * default is 20 GiB).  They stop exponential backtracking; a pattern that
 * is only quadratic in a long line is left to the library's timeout. */
#define GREP_MATCH_LIMIT 10000000
#define GREP_DEPTH_LIMIT 1000000
#define GREP_HEAP_LIMIT_KIB (64 << 10)
#define LOCK_WAIT_MS 15000 /* for another writer of the file */
#define EDIT_TRIES 4	   /* reads when the file changes under us */

#define EXIT_OK HUTCH_AGENT_EXIT_OK
#define EXIT_TOOL HUTCH_AGENT_EXIT_FAIL

/* replace_file(): the text's source ended before its length. */
#define TEXT_SHORT (-100100)

struct fs_opts {
	const char *tool;
	const char *root;
	const char *pos[2];
	int npos;
	const char *offset, *limit, *max_bytes, *max, *type;
	const char *from, *old_from, *new_from;
	const char *include[INCLUDE_MAX];
	int ninclude;
	bool icase, all;
	bool numbered, recursive, overwrite; /* read, delete, move */
};

/* A text of write or edit: the next @len bytes of @fd. */
struct text {
	int fd;	    /* -1: none */
	size_t len; /* exactly this many bytes, not "until end of file" */
	bool own;   /* fd is ours to close (not stdin) */
};

struct fs {
	struct fs_opts o;
	struct fsp_root root;
	struct jsonw out;
	struct text from, old_text, new_text; /* --from, --old-from, ... */
};

/* --- answers ------------------------------------------------------------ */

static int emit(struct fs *fs, int code)
{
	if (jsonw_emit(&fs->out, STDOUT_FILENO) < 0) {
		agent_err("fs: writing the answer: %m");
		return EXIT_TOOL;
	}
	return code;
}

/* Start an error object; the caller may add members, then fail_end(). */
__attribute__((format(printf, 3, 4))) static void
fail_begin(struct fs *fs, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	/* Discard whatever success answer was under way. */
	jsonw_free(&fs->out);
	jsonw_init(&fs->out, OUT_MAX);
	jsonw_open(&fs->out, NULL, '{');
	jsonw_open(&fs->out, "error", '{');
	jsonw_strz(&fs->out, "code", code);
	jsonw_str(&fs->out, "message", msg, (size_t)n);
}

static int fail_end(struct fs *fs, int exit_code)
{
	jsonw_close(&fs->out, '}');
	jsonw_close(&fs->out, '}');
	return emit(fs, exit_code);
}

#define fail(fs, code, ...)                                 \
	(fail_begin(fs, code, __VA_ARGS__),                 \
	 fail_end(fs, strcmp(code, HUTCH_AGENT_ERR_USAGE) ? \
			      EXIT_TOOL :                   \
			      HUTCH_AGENT_EXIT_USAGE))

/* Error for a failed resolution or open of the user's @path. */
static int fail_path(struct fs *fs, const char *path, int rc)
{
	switch (rc) {
	case FSP_ESCAPE:
		return fail(fs, HUTCH_AGENT_ERR_ESCAPE,
			    "'%s' resolves outside %s", path, fs->o.root);
	case FSP_NOTFILE:
		return fail(fs, HUTCH_AGENT_ERR_NOT_FILE,
			    "'%s' is not a regular file", path);
	case -ENOENT:
		return fail(fs, HUTCH_AGENT_ERR_NOT_FOUND,
			    "'%s': no such file or directory", path);
	case -ENOTDIR:
		return fail(fs, HUTCH_AGENT_ERR_NOT_DIR,
			    "'%s': not a directory", path);
	case -EISDIR:
		return fail(fs, HUTCH_AGENT_ERR_IS_DIR, "'%s' is a directory",
			    path);
	case -ELOOP:
		return fail(fs, HUTCH_AGENT_ERR_IO, "'%s': too many symlinks",
			    path);
	default:
		return fail(fs, HUTCH_AGENT_ERR_IO, "'%s': %s", path,
			    strerror(-rc));
	}
}

/* --- options ------------------------------------------------------------- */

/* The options that take a value, and where it goes (--include, which
 * may repeat, has a list of its own). */
#define VALUE_OPT(name, member)                        \
	{                                              \
		name, offsetof(struct fs_opts, member) \
	}
static const struct {
	const char *name;
	size_t off;
} value_opts[] = {
	VALUE_OPT("--root", root),
	VALUE_OPT("--offset", offset),
	VALUE_OPT("--limit", limit),
	VALUE_OPT("--max-bytes", max_bytes),
	VALUE_OPT("--from", from),
	VALUE_OPT("--old-from", old_from),
	VALUE_OPT("--new-from", new_from),
	VALUE_OPT("--max", max),
	VALUE_OPT("--type", type),
	{ "--include", 0 }, /* not a slot: see parse_args() */
};
#undef VALUE_OPT

#define TOOL_NAMES "read, write, edit, grep, find, ls, delete, move"

/* read --line-numbers, delete --recursive, move --overwrite: whether
 * @arg was one of them. */
static bool flag_option(const char *arg, struct fs_opts *o)
{
	bool *flag = !strcmp(arg, "--line-numbers") ? &o->numbered :
		     !strcmp(arg, "--recursive")    ? &o->recursive :
		     !strcmp(arg, "--overwrite")    ? &o->overwrite :
						      NULL;

	if (flag)
		*flag = true;
	return flag != NULL;
}

/*
 * Options may come before or after the tool name and between positional
 * arguments; "--" ends them (for a PATTERN that starts with '-').
 * Returns NULL, or a usage message.
 */
static const char *parse_args(int argc, char **argv, struct fs_opts *o)
{
	static char msg[128];
	bool opts = true;
	const char *arg, *val, *eq;
	size_t nlen, k;
	int i;

	for (i = 1; i < argc; i++) {
		arg = argv[i];
		if (opts && !strcmp(arg, "--")) {
			opts = false;
			continue;
		}
		if (opts && !strcmp(arg, "-i")) {
			o->icase = true;
			continue;
		}
		if (opts && !strcmp(arg, "--all")) {
			o->all = true;
			continue;
		}
		if (opts && flag_option(arg, o))
			continue;
		if (opts && arg[0] == '-' && arg[1]) {
			eq = strchr(arg, '=');
			nlen = eq ? (size_t)(eq - arg) : strlen(arg);
			for (k = 0;
			     k < sizeof(value_opts) / sizeof(*value_opts); k++)
				if (strlen(value_opts[k].name) == nlen &&
				    !strncmp(arg, value_opts[k].name, nlen))
					break;
			if (k == sizeof(value_opts) / sizeof(*value_opts)) {
				snprintf(msg, sizeof(msg),
					 "unknown option '%.64s'", arg);
				return msg;
			}
			if (eq) {
				val = eq + 1;
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				snprintf(msg, sizeof(msg), "%s needs a value",
					 value_opts[k].name);
				return msg;
			}
			if (!strcmp(value_opts[k].name, "--include")) {
				if (o->ninclude == INCLUDE_MAX)
					return "too many --include";
				o->include[o->ninclude++] = val;
			} else {
				*(const char **)((char *)o +
						 value_opts[k].off) = val;
			}
			continue;
		}
		if (!o->tool) {
			o->tool = arg;
			continue;
		}
		if (o->npos == 2)
			return "too many arguments";
		o->pos[o->npos++] = arg;
	}
	if (!o->tool)
		return "no tool given (" TOOL_NAMES ")";
	return NULL;
}

/* Which options and how many positionals each tool takes. */
static const char *check_args(const struct fs_opts *o, int *min_pos,
			      int *max_pos)
{
	const char *t = o->tool;
	bool read = !strcmp(t, HUTCH_AGENT_FS_READ),
	     write = !strcmp(t, HUTCH_AGENT_FS_WRITE);
	bool edit = !strcmp(t, HUTCH_AGENT_FS_EDIT),
	     grep = !strcmp(t, HUTCH_AGENT_FS_GREP);
	bool find = !strcmp(t, HUTCH_AGENT_FS_FIND),
	     ls = !strcmp(t, HUTCH_AGENT_FS_LS);
	bool del = !strcmp(t, HUTCH_AGENT_FS_DELETE),
	     move = !strcmp(t, HUTCH_AGENT_FS_MOVE);

	if (!read && !write && !edit && !grep && !find && !ls && !del && !move)
		return "unknown tool (" TOOL_NAMES ")";
	if ((o->offset || o->limit || o->max_bytes || o->numbered) && !read)
		return "--offset, --limit, --max-bytes and --line-numbers are "
		       "for read";
	if (o->recursive && !del)
		return "--recursive is for delete";
	if (o->overwrite && !move)
		return "--overwrite is for move";
	if (o->from && !write)
		return "--from is for write";
	if ((o->old_from || o->new_from || o->all) && !edit)
		return "--old-from, --new-from and --all are for edit";
	if ((o->ninclude || o->icase) && !grep)
		return "--include and -i are for grep";
	if (o->max && !grep && !find && !ls)
		return "--max is for grep, find and ls";
	if (o->type && !find)
		return "--type is for find";
	if (write && !o->from)
		return "write needs --from SRC";
	if (edit && (!o->old_from || !o->new_from))
		return "edit needs --old-from SRC and --new-from SRC";
	*min_pos = move ? 2 : ls ? 0 : 1;
	*max_pos = (grep || find || move) ? 2 : 1;
	if (o->npos < *min_pos)
		return grep ? "grep needs a PATTERN" :
		       find ? "find needs a GLOB" :
		       move ? "move needs FROM and TO" :
			      "a PATH is needed";
	if (o->npos > *max_pos)
		return "too many arguments";
	return NULL;
}

/* Decimal in [lo, hi]; values above hi are clamped when @clamp. */
static int parse_num(const char *s, long long lo, long long hi, bool clamp,
		     long long *out)
{
	long long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (v > (LLONG_MAX - 9) / 10)
			v = LLONG_MAX / 10; /* saturate, stays > hi */
		else
			v = v * 10 + (*s - '0');
	}
	if (v < lo)
		return -1;
	if (v > hi) {
		if (!clamp)
			return -1;
		v = hi;
	}
	*out = v;
	return 0;
}

/* --- text sources ------------------------------------------------------ */

/* Texts small enough travel in the exec's environment (saving latency):
 * "env:NAME" names a variable HUTCH_FS_* holding the text in base64. */
#define ENV_SOURCE HUTCH_AGENT_ENV_SOURCE
/* Larger ones on stdin: "stdin:LEN", the next LEN bytes of it.  Never a
 * file: nothing the engine extracts may land where the session writes
 * (HUTCH_AGENT_STDIN_SOURCE). */
#define STDIN_SOURCE HUTCH_AGENT_STDIN_SOURCE

/* A pipe holds this much without a reader; the library keeps environment
 * texts below it (48 KiB decoded). */
#define ENV_TEXT_PIPE_MAX HUTCH_AGENT_ENV_TEXT_MAX

/* Decode the base64 text of variable @name into a memfd positioned at 0
 * (or, where memfd_create is filtered, a pipe already holding it): the fd
 * to read it from, or -1; *@len is the text's length. */
static int env_text_fd(const char *name, size_t *len)
{
	const char *v;
	unsigned char out[3 * 1024];
	size_t n = 0, total = 0;
	hutch__b64 dec = HUTCH__B64_INIT;
	int fd, d, p[2] = { -1, -1 };

	if (strncmp(name, HUTCH_AGENT_ENV_PREFIX,
		    sizeof(HUTCH_AGENT_ENV_PREFIX) - 1) != 0 ||
	    !(v = getenv(name)))
		return -1;
	fd = memfd_create("hutch-text", MFD_CLOEXEC);
	if (fd < 0) {
		if (strlen(v) / 4 * 3 > ENV_TEXT_PIPE_MAX ||
		    pipe2(p, O_CLOEXEC) < 0)
			return -1;
		fd = p[1];
	}
	for (; *v && *v != '='; v++) {
		if ((d = hutch__b64_feed(&dec, (unsigned char)*v, &out[n])) < 0)
			goto fail;
		n += (size_t)d;
		if (n == sizeof(out)) {
			if (write(fd, out, n) != (ssize_t)n)
				goto fail;
			total += n;
			n = 0;
		}
	}
	if (n && write(fd, out, n) != (ssize_t)n)
		goto fail;
	*len = total + n;
	if (p[0] >= 0) {
		close(p[1]); /* the reader sees the end of the text */
		return p[0];
	}
	if (lseek(fd, 0, SEEK_SET) != 0)
		goto fail;
	return fd;
fail:
	close(fd);
	if (p[0] >= 0)
		close(p[0]);
	return -1;
}

/*
 * The source @spec of option @opt into @t, at most @max bytes: 0, or the
 * exit code of the answer that refused it.  Only a length is taken from
 * the command line: the bytes are read later, and exactly that many, so a
 * text cut short is told from a whole one (replace_file, read_text).
 */
static int take_text(struct fs *fs, const char *opt, const char *spec,
		     size_t max, struct text *t)
{
	long long len;

	if (!spec)
		return 0;
	if (!strncmp(spec, STDIN_SOURCE, sizeof(STDIN_SOURCE) - 1)) {
		/* Saturates past LLONG_MAX / 10: still over @max. */
		if (parse_num(spec + sizeof(STDIN_SOURCE) - 1, 0, LLONG_MAX,
			      false, &len) < 0)
			return fail(fs, HUTCH_AGENT_ERR_USAGE,
				    "%s '%.64s': LEN is not a decimal number",
				    opt, spec);
		if ((unsigned long long)len > max)
			return fail(fs, HUTCH_AGENT_ERR_TOO_BIG,
				    "%s '%.64s': the text is over %zu MiB; "
				    "nothing was written",
				    opt, spec, max >> 20);
		t->fd = STDIN_FILENO;
		t->len = (size_t)len;
		return 0;
	}
	if (!strncmp(spec, ENV_SOURCE, sizeof(ENV_SOURCE) - 1)) {
		t->fd = env_text_fd(spec + sizeof(ENV_SOURCE) - 1, &t->len);
		t->own = t->fd >= 0;
		if (t->fd >= 0 && t->len <= max)
			return 0;
		if (t->fd >= 0)
			return fail(fs, HUTCH_AGENT_ERR_TOO_BIG,
				    "%s '%.64s': the text is over %zu MiB; "
				    "nothing was written",
				    opt, spec, max >> 20);
	}
	return fail(fs, HUTCH_AGENT_ERR_USAGE,
		    "%s '%.64s' is neither stdin:LEN nor env:HUTCH_FS_* in "
		    "base64",
		    opt, spec);
}

/* The texts of write (up to HUTCH_AGENT_FS_TEXT_MAX) and edit (each up to
 * EDIT_MAX): 0, or the exit code of the answer that refused one. */
static int take_texts(struct fs *fs)
{
	int rc;

	if ((rc = take_text(fs, "--from", fs->o.from, HUTCH_AGENT_FS_TEXT_MAX,
			    &fs->from)) ||
	    (rc = take_text(fs, "--old-from", fs->o.old_from, EDIT_MAX,
			    &fs->old_text)) ||
	    (rc = take_text(fs, "--new-from", fs->o.new_from, EDIT_MAX,
			    &fs->new_text)))
		return rc;
	return 0;
}

static void text_close(struct text *t)
{
	if (t->own)
		close(t->fd);
	t->fd = -1;
	t->own = false;
}

/* Reads a whole file, at most @max bytes: 0, -EFBIG or -errno. */
static int slurp(int fd, size_t max, char **out, size_t *out_len)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, *nb;
	ssize_t n;
	int rc = 0;

	for (;;) {
		if (len == cap) {
			if (cap > max) {
				rc = -EFBIG;
				goto out;
			}
			cap = cap ? cap * 2 : CHUNK;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				rc = -ENOMEM;
				goto out;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	if (len > max) {
		rc = -EFBIG;
		goto out;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	buf = NULL;
out:
	free(buf);
	return rc;
}

/* --- helpers ---------------------------------------------------------- */

static const char *type_name(mode_t m)
{
	if (S_ISREG(m))
		return HUTCH_AGENT_TYPE_FILE;
	if (S_ISDIR(m))
		return HUTCH_AGENT_TYPE_DIR;
	if (S_ISLNK(m))
		return HUTCH_AGENT_TYPE_SYMLINK;
	return HUTCH_AGENT_TYPE_OTHER;
}

/* Fill @buf from @fd up to @want bytes or EOF. */
static ssize_t read_full(int fd, char *buf, size_t want)
{
	size_t got = 0;
	ssize_t n;

	while (got < want) {
		n = read(fd, buf + got, want - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/* "a" + "/" + "b", or "b" alone when "a" is the root ("" or "."). */
static int join(char *out, size_t cap, const char *a, const char *b)
{
	int n;

	if (!*a || !strcmp(a, "."))
		n = snprintf(out, cap, "%s", b);
	else
		n = snprintf(out, cap, "%s/%s", a, b);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* --- concurrent writers ----------------------------------------------- */

/*
 * Edits are read-modify-write: two at once would each write the file as
 * it was before the other, and one change would be lost while both said
 * they were made.  Every write and edit therefore holds an exclusive
 * flock on the file it replaces, from before it reads until after its
 * rename; the next one then reads what the previous one wrote.
 *
 * The lock is on the inode, and the rename puts a new inode at the name:
 * whoever waited on the old one finds, once it has the lock, that the name
 * holds another file (same_file()), and starts over on that one.  The
 * lock is advisory, so an edit also compares, right before its rename,
 * the file with what it read (unchanged()): a process that wrote it
 * without the lock is detected, except in the instant between that check
 * and the rename, which no system call closes.
 *
 * Any process of the session can take the same lock (the file tools run
 * as the session's user): that only delays edits of that file, for
 * LOCK_WAIT_MS, after which they fail with the "conflict" code.
 */

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Lock @fd exclusively before @deadline (now_ms()): 0, or -ETIMEDOUT.
 * A filesystem without flock (ENOLCK, EOPNOTSUPP) leaves the check of
 * unchanged() alone: 0 as well. */
static int lock_until(int fd, long long deadline)
{
	struct timespec pause = { 0, 1000000 };

	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK)
			return 0;
		if (now_ms() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
		if (pause.tv_nsec < 16000000)
			pause.tv_nsec *= 2;
	}
}

/* Whether @name in @dirfd is still the file open as @fd. */
static bool same_file(int dirfd, const char *name, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 &&
	       fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The file an edit read: replace it only if it still is what was read. */
struct expect {
	int fd;		  /* open on it, locked */
	struct stat st;	  /* after the lock, before the read */
	const char *data; /* its content as read */
	size_t len;
};

/* 0 when the name still holds the file read, unchanged since (identity,
 * size, times, content); -ESTALE when not; -errno. */
static int unchanged(int dirfd, const char *name, const struct expect *x)
{
	char buf[CHUNK];
	struct stat now;
	size_t off = 0;
	ssize_t n;

	if (fstat(x->fd, &now) < 0)
		return -errno;
	if (!same_file(dirfd, name, x->fd) || now.st_size != x->st.st_size ||
	    now.st_mtim.tv_sec != x->st.st_mtim.tv_sec ||
	    now.st_mtim.tv_nsec != x->st.st_mtim.tv_nsec ||
	    now.st_ctim.tv_sec != x->st.st_ctim.tv_sec ||
	    now.st_ctim.tv_nsec != x->st.st_ctim.tv_nsec)
		return -ESTALE;
	/* Times have the kernel's tick as their grain: two writes in one
	 * tick leave them as they were, the content does not. */
	for (;;) {
		n = pread(x->fd, buf, sizeof(buf), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		if ((size_t)n > x->len - off ||
		    memcmp(buf, x->data + off, (size_t)n))
			return -ESTALE;
		off += (size_t)n;
	}
	return off == x->len ? 0 : -ESTALE;
}

/* --- atomic replace ---------------------------------------------------- */

void agent_temp_name(char *out, size_t cap, const char *name)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char rnd[6];
	char sfx[7];

	/* getrandom() needs no /dev; the clock is a fine fallback, as
	 * O_EXCL makes a collision a retry, not a risk. */
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (unsigned char)((unsigned long)ts.tv_nsec >>
						 (i * 5)) ^
				 (unsigned char)getpid();
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		sfx[i] = set[rnd[i] % (sizeof(set) - 1)];
	sfx[6] = '\0';
	/* Keep the temp name within NAME_MAX however long NAME is. */
	snprintf(out, cap, ".%.200s.hutch-%s", name, sfx);
}

/*
 * Replace @name in the held directory @dirfd with new contents (the next
 * @len bytes of @src_fd, or @data/@len when src_fd < 0) through a temp
 * file and renameat(): readers see the old file or the new one, never a
 * mix.  A source that ends before @len bytes is TEXT_SHORT, and nothing
 * is renamed: a text cut short in transit is never taken for the whole
 * one.  Bytes after @len are not read (they are not the text's).  The
 * rename replaces whatever is at @name then, even a symlink swapped in,
 * without following it, and @dirfd is the directory we resolved, so the
 * write cannot land outside.  @old: the file being replaced (mode, less
 * set-id bits, and owner kept) or NULL.  @x (may be NULL): what an edit
 * read, checked last before the rename (-ESTALE when it changed).  Returns
 * 0 or -errno; the temp file never stays.
 */
static int replace_file(int dirfd, const char *name, int src_fd,
			const char *data, size_t len, const struct stat *old,
			const struct expect *x, mode_t *mode_out,
			unsigned long long *bytes)
{
	char tmp[NAME_MAX + 1], buf[CHUNK];
	/* The old file's mode without its set-id bits: the kernel drops them
	 * when a file is written without CAP_FSETID, and the agent's seccomp
	 * filter refuses to set them (the fchmod below would fail). */
	mode_t mode = old ? old->st_mode & 01777 : 0644;
	size_t off = 0, left = len;
	struct stat st;
	ssize_t n, w;
	int fd = -1, rc = 0, tries;

	*bytes = 0;
	for (tries = 0; tries < 16; tries++) {
		agent_temp_name(tmp, sizeof(tmp), name);
		fd = openat(dirfd, tmp,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0)
		return -errno;
	for (;;) {
		if (src_fd >= 0) {
			if (left == 0)
				break;
			n = read(src_fd, buf,
				 left < sizeof(buf) ? left : sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = -errno;
				goto out;
			}
			if (n == 0) {
				rc = TEXT_SHORT;
				goto out;
			}
			left -= (size_t)n;
			data = buf;
			len = (size_t)n;
			off = 0;
		} else if (off == len) {
			break;
		}
		while (off < len) {
			w = write(fd, data + off, len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				rc = -errno;
				goto out;
			}
			off += (size_t)w;
			*bytes += (unsigned long long)w;
		}
	}
	/* chown before chmod: chown clears set-id bits. */
	if (old && geteuid() == 0 && fstat(fd, &st) == 0 &&
	    (st.st_uid != old->st_uid || st.st_gid != old->st_gid) &&
	    fchown(fd, old->st_uid, old->st_gid) < 0) {
		rc = -errno;
		goto out;
	}
	if (fchmod(fd, mode) < 0 || fsync(fd) < 0) {
		rc = -errno;
		goto out;
	}
	rc = close(fd) < 0 ? -errno : 0;
	fd = -1;
	if (rc)
		goto out;
	/* As late as can be: the longer the write, the likelier a writer
	 * that does not take the lock came meanwhile. */
	if (x && (rc = unchanged(dirfd, name, x)) != 0)
		goto out;
	if (renameat(dirfd, tmp, dirfd, name) < 0)
		rc = -errno;
	*mode_out = mode;
out:
	if (fd >= 0)
		close(fd);
	if (rc)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

/* --- read ----------------------------------------------------------------- */

struct reader {
	long long offset, limit; /* 1-based first line, line count */
	size_t max_bytes;
	char *content;
	size_t clen, enc;  /* raw bytes, JSON cost so far */
	long long line;	   /* current line, 1-based */
	long long lines;   /* lines returned */
	size_t line_start; /* clen where the current line began */
	bool collecting, truncated;
	bool numbered; /* each line starts with its number, as cat -n's */
	bool in_line;  /* part of the current line was taken */
	long long next_offset;
};

/* cat -n's prefix of line @line: the number right-aligned in 6 columns
 * (more when it is longer), then a tab.  Its length; @buf holds 24. */
static size_t line_prefix(char *buf, long long line)
{
	int n = snprintf(buf, 24, "%6lld\t", line);

	return n > 0 && n < 24 ? (size_t)n : 0;
}

/* Append @n bytes at @s to the content, JSON cost @cost. */
static void reader_put(struct reader *r, const char *s, size_t n, size_t cost)
{
	memcpy(r->content + r->clen, s, n);
	r->clen += n;
	r->enc += cost;
}

/*
 * Take bytes of the current line; it ends with @eol.  With line numbers
 * the prefix is part of the content, so --max-bytes and the answer's cap
 * count it as they count the text: what they say was cut was cut.
 */
static void reader_take(struct reader *r, const char *s, size_t n, bool eol)
{
	char pre[24];
	size_t pl = 0, room, pcost, cost, cut;

	if (r->collecting && r->line >= r->offset) {
		if (r->numbered && !r->in_line)
			pl = line_prefix(pre, r->line);
		r->in_line = true;
		room = r->max_bytes - r->clen;
		pcost = jsonw_str_cost(pre, pl);
		cost = jsonw_str_cost(s, n);
		if (pl + n <= room && r->enc + pcost + cost <= OUT_SOFT) {
			reader_put(r, pre, pl, pcost);
			reader_put(r, s, n, cost);
		} else if (r->line_start == 0 && r->lines == 0) {
			/*
			 * The first line alone is over the cap: give what
			 * fits, cut at a UTF-8 boundary, and move on to the
			 * next line rather than ask for this one forever.
			 * A cap below the prefix's width cuts the prefix.
			 */
			if (pl > room)
				pl = room;
			reader_put(r, pre, pl, jsonw_str_cost(pre, pl));
			room -= pl;
			cut = hutch__utf8_cut(s, n, n <= room ? n : room);
			while (cut > 0 &&
			       r->enc + jsonw_str_cost(s, cut) > OUT_SOFT)
				cut = hutch__utf8_cut(s, cut, cut / 2);
			memcpy(r->content + r->clen, s, cut);
			r->clen += cut;
			r->lines = 1;
			r->collecting = false;
			r->truncated = true;
			r->next_offset = r->line + 1;
		} else {
			r->clen = r->line_start; /* drop the partial line */
			r->collecting = false;
			r->truncated = true;
			r->next_offset = r->line;
		}
	}
	if (!eol)
		return;
	r->in_line = false;
	if (r->collecting && r->line >= r->offset) {
		r->lines++;
		r->line_start = r->clen;
		if (r->lines == r->limit)
			r->collecting = false;
	}
	r->line++;
}

/* read's options into @r: 0, or the exit code of the answer that
 * refused one. */
static int read_options(struct fs *fs, struct reader *r)
{
	long long v;

	if (fs->o.offset &&
	    parse_num(fs->o.offset, 1, LLONG_MAX / 2, true, &r->offset) < 0)
		return fail(fs, HUTCH_AGENT_ERR_INVALID,
			    "--offset wants a line number >= 1");
	if (fs->o.limit &&
	    parse_num(fs->o.limit, 1, LLONG_MAX / 2, true, &r->limit) < 0)
		return fail(fs, HUTCH_AGENT_ERR_INVALID,
			    "--limit wants a number >= 1");
	if (fs->o.max_bytes) {
		if (parse_num(fs->o.max_bytes, 1, READ_BYTES_MAX, true, &v) < 0)
			return fail(fs, HUTCH_AGENT_ERR_INVALID,
				    "--max-bytes wants a number >= 1");
		r->max_bytes = (size_t)v;
	}
	return 0;
}

static int tool_read(struct fs *fs)
{
	const char *path = fs->o.npos ? fs->o.pos[0] : ".";
	struct reader r = { .offset = 1,
			    .limit = READ_LIMIT_DEFAULT,
			    .max_bytes = READ_BYTES_DEFAULT,
			    .line = 1,
			    .collecting = true,
			    .numbered = fs->o.numbered };
	unsigned long long size = 0;
	long long total;
	struct fsp_res res = { .parent = -1, .fd = -1 };
	char *buf = NULL, *p, *end, *nl;
	bool last_nl = true;
	struct stat st;
	ssize_t n;
	int fd = -1, rc;

	rc = read_options(fs, &r);
	if (rc)
		goto out;
	rc = fsp_open(&fs->root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, &res,
		      &fd);
	if (rc) {
		rc = fail_path(fs, path, rc);
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		rc = fail_path(fs, path, -errno);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = fail_path(fs, path, -EISDIR);
		goto out;
	}
	buf = malloc(CHUNK);
	r.content = malloc(r.max_bytes + 1);
	if (!buf || !r.content) {
		rc = fail_path(fs, path, -ENOMEM);
		goto out;
	}
	for (;;) {
		/* The first read fills the binary probe entirely. */
		n = size == 0 ? read_full(fd, buf, CHUNK) :
				read(fd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = fail_path(fs, path, -errno);
			goto out;
		}
		if (n == 0)
			break;
		if (size == 0 &&
		    memchr(buf, '\0',
			   (size_t)n < BINARY_PROBE ? (size_t)n :
						      BINARY_PROBE)) {
			rc = fail(fs, HUTCH_AGENT_ERR_BINARY,
				  "'%s' is a binary file (%lld bytes)", path,
				  (long long)st.st_size);
			goto out;
		}
		size += (unsigned long long)n;
		for (p = buf, end = buf + n; p < end; p = nl + 1) {
			nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl) {
				reader_take(&r, p, (size_t)(end - p), false);
				break;
			}
			reader_take(&r, p, (size_t)(nl + 1 - p), true);
		}
		last_nl = buf[n - 1] == '\n';
	}
	/* r.line is one past the last "\n"; a last line without one counts. */
	total = r.line - 1 + (size && !last_nl ? 1 : 0);
	if (!last_nl && size && r.collecting && r.line >= r.offset &&
	    r.clen > r.line_start)
		r.lines++; /* the unterminated last line was taken */
	if (!r.truncated && r.offset + r.lines <= total) {
		r.truncated = true;
		r.next_offset = r.offset + r.lines;
	}
	jsonw_open(&fs->out, NULL, '{');
	jsonw_strz(&fs->out, "path", res.rel);
	jsonw_str(&fs->out, "content", r.content, r.clen);
	jsonw_int(&fs->out, "offset", r.offset);
	jsonw_int(&fs->out, "lines", r.lines);
	jsonw_int(&fs->out, "total_lines", total);
	jsonw_int(&fs->out, "size", (long long)size);
	jsonw_bool(&fs->out, "truncated", r.truncated);
	if (r.truncated)
		jsonw_int(&fs->out, "next_offset", r.next_offset);
	if (r.numbered)
		jsonw_bool(&fs->out, "line_numbers", true);
	jsonw_close(&fs->out, '}');
	rc = emit(fs, EXIT_OK);
out:
	if (fd >= 0)
		close(fd);
	fsp_res_close(&res);
	free(buf);
	free(r.content);
	return rc;
}

/* --- write ---------------------------------------------------------------- */

static int fail_locked(struct fs *fs, const char *path)
{
	return fail(
		fs, HUTCH_AGENT_ERR_CONFLICT,
		"'%s' is locked by another process: waited %d s for another edit or "
		"write of it, or for a command of the session that holds a lock on "
		"it; nothing was written",
		path, LOCK_WAIT_MS / 1000);
}

static int tool_write(struct fs *fs)
{
	const char *path = fs->o.pos[0];
	struct fsp_res res = { .parent = -1, .fd = -1 };
	unsigned long long bytes;
	long long deadline = now_ms() + LOCK_WAIT_MS;
	bool exists;
	mode_t mode = 0644;
	struct stat st;
	char mstr[8];
	int fd = -1, rc;

	for (;;) {
		rc = fsp_resolve(&fs->root, path, FSP_MKDIR, &res);
		if (rc) {
			rc = fail_path(fs, path, rc);
			goto out;
		}
		exists = res.fd >= 0;
		if (res.parent < 0 || (exists && S_ISDIR(res.st.st_mode))) {
			rc = fail_path(fs, path, -EISDIR);
			goto out;
		}
		if (exists && !S_ISREG(res.st.st_mode)) {
			rc = fail_path(fs, path, FSP_NOTFILE);
			goto out;
		}
		if (!exists)
			break;
		/*
		 * Wait for an edit of the file to finish (see "concurrent
		 * writers"), or it would rename what it read before us over
		 * what we write.  Locking takes an open file: the one
		 * resolved, opened by name from its held parent.
		 */
		fd = openat(res.parent, res.name,
			    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
				    O_CLOEXEC);
		if (fd < 0) {
			/* One we may not read is replaced without it. */
			if (errno == EACCES)
				break;
			/* Gone, or a symlink swapped in: resolve again. */
			if (errno != ENOENT && errno != ELOOP) {
				rc = fail_path(fs, path, -errno);
				goto out;
			}
		} else {
			if (lock_until(fd, deadline) < 0) {
				rc = fail_locked(fs, path);
				goto out;
			}
			/* The file resolved, and still at the name (an
			 * edit we waited for renames its result over it):
			 * its mode and owner are the ones kept. */
			if (same_file(res.parent, res.name, fd) &&
			    fstat(fd, &st) == 0 && st.st_dev == res.st.st_dev &&
			    st.st_ino == res.st.st_ino) {
				res.st = st;
				break;
			}
		}
		/* Replaced meanwhile (the edit we waited for): again. */
		if (now_ms() >= deadline) {
			rc = fail_locked(fs, path);
			goto out;
		}
		if (fd >= 0)
			close(fd);
		fd = -1;
		fsp_res_close(&res);
	}
	/* Streamed: a text of up to 64 MiB in CHUNK bytes of memory. */
	rc = replace_file(res.parent, res.name, fs->from.fd, NULL, fs->from.len,
			  exists ? &res.st : NULL, NULL, &mode, &bytes);
	if (rc == TEXT_SHORT) {
		rc = fail(fs, HUTCH_AGENT_ERR_IO,
			  "the text of '%s' ended after %llu of its %zu bytes; "
			  "nothing was written",
			  path, bytes, fs->from.len);
		goto out;
	}
	if (rc) {
		rc = fail_path(fs, path, rc);
		goto out;
	}
	snprintf(mstr, sizeof(mstr), "%04o", (unsigned int)mode);
	jsonw_open(&fs->out, NULL, '{');
	jsonw_strz(&fs->out, "path", res.rel);
	jsonw_int(&fs->out, "bytes", (long long)bytes);
	jsonw_bool(&fs->out, "created", !exists);
	jsonw_strz(&fs->out, "mode", mstr);
	jsonw_close(&fs->out, '}');
	rc = emit(fs, EXIT_OK);
out:
	if (fd >= 0)
		close(fd);
	fsp_res_close(&res);
	return rc;
}

/* --- edit ----------------------------------------------------------------- */

/* Exactly the @t->len bytes of an edit's @what text, into a new buffer
 * (NUL-terminated): 0, or the exit code of the answer that refused it.
 * take_text() capped the length at EDIT_MAX. */
static int read_text(struct fs *fs, const struct text *t, const char *what,
		     char **out, size_t *len)
{
	char *buf = malloc(t->len + 1);
	ssize_t n;

	if (!buf)
		return fail(fs, HUTCH_AGENT_ERR_IO, "the %s text: %s", what,
			    strerror(ENOMEM));
	n = read_full(t->fd, buf, t->len);
	if (n < 0 || (size_t)n != t->len) {
		int e = errno;

		free(buf);
		if (n < 0)
			return fail(fs, HUTCH_AGENT_ERR_IO,
				    "reading the %s text: %s", what,
				    strerror(e));
		return fail(fs, HUTCH_AGENT_ERR_IO,
			    "the %s text ended after %zd of its %zu bytes; "
			    "nothing was written",
			    what, n, t->len);
	}
	buf[t->len] = '\0';
	*out = buf;
	*len = t->len;
	return 0;
}

/* "lines": the lines an edit matched (or would have, ambiguously). */
static void edit_lines(struct jsonw *w, const struct em_result *em)
{
	jsonw_open(w, "lines", '[');
	for (size_t i = 0; i < em->nlines; i++)
		jsonw_int(w, NULL, (long long)em->lines[i]);
	jsonw_close(w, ']');
}

/* The answer when em_edit() did not give an edited text (@em_rc). */
static int edit_refused(struct fs *fs, const char *path, int em_rc,
			const struct em_result *em)
{
	switch (em_rc) {
	case EM_NOMATCH:
		fail_begin(fs, HUTCH_AGENT_ERR_NO_MATCH,
			   "the old text was not found in '%s'", path);
		if (em->closest) {
			jsonw_open(&fs->out, "closest", '{');
			jsonw_int(&fs->out, "line",
				  (long long)em->closest_line);
			jsonw_strz(&fs->out, "text", em->closest);
			jsonw_close(&fs->out, '}');
		}
		return fail_end(fs, EXIT_TOOL);
	case EM_AMBIGUOUS:
		fail_begin(fs, HUTCH_AGENT_ERR_AMBIGUOUS,
			   "the old text occurs %zu times in '%s' (%s match); "
			   "add context so that it occurs once",
			   em->count, path, em_match_name(em->match));
		edit_lines(&fs->out, em);
		jsonw_int(&fs->out, "count", (long long)em->count);
		jsonw_strz(&fs->out, "match", em_match_name(em->match));
		return fail_end(fs, EXIT_TOOL);
	case EM_INVALID:
		return fail(fs, HUTCH_AGENT_ERR_INVALID,
			    "the old text is empty or the same "
			    "as the new one");
	case EM_TOOBIG:
		return fail(fs, HUTCH_AGENT_ERR_TOO_BIG,
			    "the edited '%s' would be over %u MiB", path,
			    EM_OUT_MAX >> 20);
	default:
		return fail_path(fs, path, -ENOMEM);
	}
}

/* The old and new texts of an edit: 0, or the exit code of the answer
 * that refused them. */
static int edit_texts(struct fs *fs, char **old, size_t *olen, char **new_text,
		      size_t *nlen)
{
	int rc;

	/* In this order: both may come from stdin, old first. */
	rc = read_text(fs, &fs->old_text, "old", old, olen);
	if (!rc)
		rc = read_text(fs, &fs->new_text, "new", new_text, nlen);
	if (rc)
		return rc;
	if (*olen == 0)
		return fail(fs, HUTCH_AGENT_ERR_INVALID,
			    "the old text is empty");
	if (*olen == *nlen && !memcmp(*old, *new_text, *olen))
		return fail(fs, HUTCH_AGENT_ERR_INVALID,
			    "the old and new texts are the same");
	return 0;
}

/* The whole text of the file to edit, open as @fd (@st): 0, or the exit
 * code of the answer that refused it (too big, binary, unreadable). */
static int edit_read_file(struct fs *fs, const char *path, int fd,
			  const struct stat *st, char **file, size_t *flen)
{
	int rc;

	if (st->st_size > EDIT_MAX)
		return fail(fs, HUTCH_AGENT_ERR_TOO_BIG,
			    "'%s' is over %d MiB (%lld bytes)", path,
			    EDIT_MAX >> 20, (long long)st->st_size);
	rc = slurp(fd, EDIT_MAX, file, flen);
	if (rc)
		return rc == -EFBIG ? fail(fs, HUTCH_AGENT_ERR_TOO_BIG,
					   "'%s' is over %d MiB", path,
					   EDIT_MAX >> 20) :
				      fail_path(fs, path, rc);
	if (memchr(*file, '\0', *flen < BINARY_PROBE ? *flen : BINARY_PROBE))
		return fail(fs, HUTCH_AGENT_ERR_BINARY,
			    "'%s' is a binary file (%zu bytes)", path, *flen);
	return 0;
}

static int tool_edit(struct fs *fs)
{
	const char *path = fs->o.pos[0];
	struct fsp_res res = { .parent = -1, .fd = -1 };
	struct em_result em = { 0 };
	char *old = NULL, *new_text = NULL, *file = NULL;
	size_t olen = 0, nlen = 0, flen = 0;
	unsigned long long bytes;
	long long deadline = now_ms() + LOCK_WAIT_MS;
	struct expect x;
	struct stat st;
	mode_t mode;
	int fd = -1, rc, em_rc = EM_OK, changed = 0;

	rc = edit_texts(fs, &old, &olen, &new_text, &nlen);
	if (rc)
		goto out;
	for (;;) {
		rc = fsp_open(&fs->root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY,
			      &res, &fd);
		if (!rc && fstat(fd, &st) < 0)
			rc = -errno;
		if (!rc && S_ISDIR(st.st_mode))
			rc = -EISDIR;
		if (rc) {
			rc = fail_path(fs, path, rc);
			goto out;
		}
		if (lock_until(fd, deadline) < 0) {
			rc = fail_locked(fs, path);
			goto out;
		}
		/* Locked, but the edit we waited for renamed its result over
		 * the file we opened: start over on the one there now. */
		if (!same_file(res.parent, res.name, fd) || fstat(fd, &st) < 0)
			goto again;
		rc = edit_read_file(fs, path, fd, &st, &file, &flen);
		if (rc)
			goto out;
		em_rc = em_edit(file, flen, old, olen, new_text, nlen,
				fs->o.all, &em);
		if (em_rc != EM_OK)
			break;
		x = (struct expect){
			.fd = fd, .st = st, .data = file, .len = flen
		};
		rc = replace_file(res.parent, res.name, -1, em.out, em.out_len,
				  &st, &x, &mode, &bytes);
		if (rc != -ESTALE)
			break;
		/* Written meanwhile by a process without the lock: edit
		 * what it wrote, a few times at most. */
		if (++changed >= EDIT_TRIES) {
			rc = fail(
				fs, HUTCH_AGENT_ERR_CONFLICT,
				"'%s' changed while it was being edited (a process of "
				"the session wrote it %d times meanwhile); nothing was "
				"written: read it again",
				path, changed);
			goto out;
		}
again:
		if (now_ms() >= deadline) {
			rc = fail_locked(fs, path);
			goto out;
		}
		close(fd);
		fd = -1;
		fsp_res_close(&res);
		em_result_free(&em);
		em = (struct em_result){ 0 };
		free(file);
		file = NULL;
	}
	if (em_rc != EM_OK) {
		rc = edit_refused(fs, path, em_rc, &em);
		goto out;
	}
	if (rc) {
		rc = fail_path(fs, path, rc);
		goto out;
	}
	jsonw_open(&fs->out, NULL, '{');
	jsonw_strz(&fs->out, "path", res.rel);
	jsonw_strz(&fs->out, "match", em_match_name(em.match));
	jsonw_int(&fs->out, "replacements", (long long)em.count);
	edit_lines(&fs->out, &em);
	jsonw_close(&fs->out, '}');
	rc = emit(fs, EXIT_OK);
out:
	/* The lock goes with the last descriptor of the file. */
	if (fd >= 0)
		close(fd);
	fsp_res_close(&res);
	em_result_free(&em);
	free(old);
	free(new_text);
	free(file);
	return rc;
}

/* --- directory walks ------------------------------------------------------ */

struct walker;
/* Called for every entry; @rel is relative to the root, @sub to the walk's
 * start.  Sets wk->stop to end the walk. */
typedef void (*visit_fn)(struct walker *wk, int dfd, const char *name,
			 const struct stat *st, const char *rel,
			 const char *sub);

struct walker {
	struct fs *fs;
	visit_fn visit;
	void *arg;
	bool skip_git;
	bool stop;
	bool truncated; /* a directory had too many entries */
	long long skipped_deep;
	char rel[PATH_MAX];
	size_t sub_off; /* where `sub` starts in rel */
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The names in @dfd, sorted bytewise (the C locale's order), at most
 * DIR_ENTRIES_MAX of them (*more is set when some were left out).  Takes
 * @dfd.  Returns the count or -errno; *out is freed with free_names().
 */
static long read_names(int dfd, char ***out, bool *more)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	char **names = NULL, **nn;
	size_t n = 0, cap = 0;
	long rc;

	*more = false;
	if (!d) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == DIR_ENTRIES_MAX) {
			*more = true;
			break;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nn = realloc(names, cap * sizeof(*names));
			if (!nn)
				goto nomem;
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (!names[n])
			goto nomem;
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	*out = names;
	return (long)n;
nomem:
	while (n)
		free(names[--n]);
	free(names);
	closedir(d);
	return -ENOMEM;
}

static void free_names(char **names, long n)
{
	while (n > 0)
		free(names[--n]);
	free(names);
}

/* rel[0..base) + "/" + name, without the "/" at the root. */
static int rel_push(char *rel, size_t cap, size_t base, const char *name)
{
	size_t n = strlen(name), sep = base ? 1 : 0;

	if (base + sep + n + 1 > cap)
		return -ENAMETOOLONG;
	if (sep)
		rel[base] = '/';
	memcpy(rel + base + sep, name, n + 1);
	return 0;
}

/* Walks the directory @dfd (an open fd, taken) whose path is wk->rel. */
static void walk_dir(struct walker *wk, int dfd, int depth)
{
	size_t base = strlen(wk->rel);
	char **names = NULL;
	struct stat st;
	bool more;
	long n, i;
	int cfd, pfd;

	/* Keep our own fd for the *at() calls: read_names() takes dfd. */
	pfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	n = read_names(dfd, &names, &more);
	if (pfd < 0 || n < 0)
		goto out;
	if (more)
		wk->truncated = true;
	for (i = 0; i < n && !wk->stop; i++) {
		if (fstatat(pfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (wk->skip_git && S_ISDIR(st.st_mode) &&
		    !strcmp(names[i], ".git"))
			continue;
		if (rel_push(wk->rel, sizeof(wk->rel), base, names[i]) < 0)
			continue;
		wk->visit(wk, pfd, names[i], &st, wk->rel,
			  wk->rel + (wk->sub_off ? wk->sub_off + 1 : 0));
		if (S_ISDIR(st.st_mode) && !wk->stop) {
			if (depth + 1 >= WALK_DEPTH) {
				wk->skipped_deep++;
			} else {
				/* O_NOFOLLOW|O_DIRECTORY: a directory swapped
				 * for a symlink is refused, not followed. */
				cfd = openat(pfd, names[i],
					     O_RDONLY | O_DIRECTORY |
						     O_NOFOLLOW | O_NONBLOCK |
						     O_CLOEXEC);
				if (cfd >= 0)
					walk_dir(wk, cfd, depth + 1);
			}
		}
		wk->rel[base] = '\0';
	}
out:
	if (pfd >= 0)
		close(pfd);
	free_names(names, n);
}

/*
 * Resolve the PATH a walk starts at.  A directory comes back open in
 * *dfd (reopened through the fd that was resolved, so no name is looked
 * up again); anything else leaves *dfd at -1 with res describing it.
 */
static int open_start(struct fs *fs, const char *path, struct fsp_res *res,
		      int *dfd)
{
	int rc;

	*dfd = -1;
	rc = fsp_resolve(&fs->root, path, 0, res);
	if (rc)
		return rc;
	if (res->fd < 0) {
		fsp_res_close(res);
		return -ENOENT;
	}
	if (S_ISDIR(res->st.st_mode)) {
		*dfd = openat(res->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (*dfd < 0) {
			rc = -errno;
			fsp_res_close(res);
			return rc;
		}
	}
	return 0;
}

/* A walk from @start_rel that calls @visit with @arg for every entry and
 * skips .git directories (grep and find). */
static void walk_init(struct walker *wk, struct fs *fs, const char *start_rel,
		      visit_fn visit, void *arg)
{
	memset(wk, 0, sizeof(*wk));
	wk->fs = fs;
	wk->visit = visit;
	wk->arg = arg;
	wk->skip_git = true;
	if (strcmp(start_rel, ".")) {
		/* fsp_resolve() already bounded it by PATH_MAX. */
		snprintf(wk->rel, sizeof(wk->rel), "%s", start_rel);
		wk->sub_off = strlen(wk->rel);
	}
}

/* --max of grep, find and ls into *@max: 0, or the exit code of the
 * answer that refused it. */
static int max_option(struct fs *fs, long long *max)
{
	if (fs->o.max && parse_num(fs->o.max, 1, LIST_MAX, false, max))
		return fail(fs, HUTCH_AGENT_ERR_INVALID, "--max wants 1..%d",
			    LIST_MAX);
	return 0;
}

/* --- grep ----------------------------------------------------------------- */

struct grep {
	pcre2_code *re;
	pcre2_match_context *mctx; /* the GREP_*_LIMITs */
	pcre2_match_data *md;
	long long max, count, files;
	bool truncated;
	/* A pcre2_match() that failed (a limit hit) ends the search; where. */
	int match_err;
	long long err_line;
	char err_path[PATH_MAX];
	char *buf;   /* CHUNK */
	char *piece; /* GREP_PIECE */
	size_t plen;
	int npiece;	/* pieces of the current line so far */
	bool line_done; /* the current line already matched */
	long long line;
};

static void grep_add(struct walker *wk, struct grep *g, const char *rel,
		     const char *text, size_t n)
{
	struct jsonw *w = &wk->fs->out;
	size_t cut = hutch__utf8_cut(text, n, GREP_TEXT_MAX);

	if (w->len > OUT_SOFT) {
		g->truncated = true;
		wk->stop = true;
		return;
	}
	jsonw_open(w, NULL, '{');
	jsonw_strz(w, "path", rel);
	jsonw_int(w, "line", g->line);
	if (cut < n) {
		char tmp[GREP_TEXT_MAX + 4];

		memcpy(tmp, text, cut);
		memcpy(tmp + cut, "\xe2\x80\xa6", 3); /* "..." as one char */
		jsonw_str(w, "text", tmp, cut + 3);
	} else {
		jsonw_str(w, "text", text, n);
	}
	jsonw_close(w, '}');
	if (++g->count >= g->max) {
		g->truncated = true;
		wk->stop = true;
	}
}

/* Match the piece of the current line gathered so far. */
static void grep_piece(struct walker *wk, struct grep *g, const char *rel,
		       bool eol)
{
	size_t n = g->plen;
	uint32_t flags = 0;
	int rc;

	if (!g->line_done && (n || g->npiece == 0)) {
		if (eol && n && g->piece[n - 1] == '\r')
			n--; /* CRLF files: "$" still matches */
		if (g->npiece > 0)
			flags |= PCRE2_NOTBOL;
		if (!eol)
			flags |= PCRE2_NOTEOL;
		/* The piece is untrusted bytes: PCRE2_MATCH_INVALID_UTF (at
		 * compile) lets invalid UTF-8 in it match nothing rather than
		 * fail the call; its length is given, so a NUL is a byte. */
		rc = pcre2_match(g->re, (PCRE2_SPTR)g->piece, n, 0, flags,
				 g->md, g->mctx);
		if (rc >= 0) {
			g->line_done = true;
			grep_add(wk, g, rel, g->piece, n);
		} else if (rc != PCRE2_ERROR_NOMATCH) {
			/* rel is the walker's, under PATH_MAX. */
			g->match_err = rc;
			g->err_line = g->line;
			snprintf(g->err_path, sizeof(g->err_path), "%s", rel);
			wk->stop = true;
		}
	}
	g->plen = 0;
	g->npiece++;
}

static void grep_fd(struct walker *wk, struct grep *g, int fd, const char *rel)
{
	char *p, *end, *nl;
	size_t take;
	ssize_t n;
	bool first = true;

	g->line = 1;
	g->plen = 0;
	g->npiece = 0;
	g->line_done = false;
	for (;;) {
		n = first ? read_full(fd, g->buf, CHUNK) :
			    read(fd, g->buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (first) {
			first = false;
			if (memchr(g->buf, '\0',
				   (size_t)n < BINARY_PROBE ? (size_t)n :
							      BINARY_PROBE))
				return; /* binary: skipped, not counted */
			g->files++;
		}
		for (p = g->buf, end = g->buf + n; p < end && !wk->stop;) {
			nl = memchr(p, '\n', (size_t)(end - p));
			take = (size_t)((nl ? nl : end) - p);
			if (take > GREP_PIECE - g->plen)
				take = GREP_PIECE - g->plen;
			memcpy(g->piece + g->plen, p, take);
			g->plen += take;
			p += take;
			if (nl && p == nl) {
				grep_piece(wk, g, rel, true);
				g->line++;
				g->npiece = 0;
				g->line_done = false;
				p++;
			} else if (g->plen == GREP_PIECE) {
				grep_piece(wk, g, rel, false);
			}
		}
		if (wk->stop)
			return;
	}
	if (first)
		g->files++; /* empty file */
	else if (g->plen)
		grep_piece(wk, g, rel, true);
}

static bool included(const struct fs *fs, const char *sub)
{
	if (!fs->o.ninclude)
		return true;
	for (int i = 0; i < fs->o.ninclude; i++)
		if (hutch__glob_match(fs->o.include[i], sub, false))
			return true;
	return false;
}

static void grep_visit(struct walker *wk, int dfd, const char *name,
		       const struct stat *st, const char *rel, const char *sub)
{
	struct grep *g = wk->arg;
	struct stat fst;
	int fd;

	if (!S_ISREG(st->st_mode) || !included(wk->fs, sub))
		return;
	fd = openat(dfd, name,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* Swapped for a fifo or device since the fstatat(): skip it. */
	if (fstat(fd, &fst) == 0 && S_ISREG(fst.st_mode))
		grep_fd(wk, g, fd, rel);
	close(fd);
}

/*
 * PATTERN with PCRE2, the syntax ripgrep and agents write (\d, \w, \s,
 * \b, (?i), lazy quantifiers, lookaround), into @g: 0, or the exit code of
 * the answer that refused it.
 *
 * Files are untrusted bytes, so UTF-8 mode comes with
 * PCRE2_MATCH_INVALID_UTF: an invalid sequence is matched by nothing (not
 * even '.') instead of failing the match.  PCRE2_UCP gives \d \w \s \b
 * their Unicode meaning, as ripgrep does.  \C (one byte, even inside a
 * UTF-8 character) is refused: it could step into the middle of one.  No
 * JIT: it maps executable memory, which the agent has no use for; the
 * interpreter runs under the match context's GREP_*_LIMITs.
 */
static int grep_compile(struct fs *fs, struct grep *g, const char *pattern)
{
	uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | PCRE2_UCP |
			PCRE2_NEVER_BACKSLASH_C;
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE off;
	int ec;

	if (fs->o.icase)
		opts |= PCRE2_CASELESS;
	g->re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts,
			      &ec, &off, NULL);
	if (!g->re) {
		/* A message cut to fit is still NUL-terminated. */
		pcre2_get_error_message(ec, msg, sizeof(msg));
		return fail(fs, HUTCH_AGENT_ERR_INVALID,
			    "bad regex '%s': %s at offset %zu", pattern,
			    (const char *)msg, (size_t)off);
	}
	g->mctx = pcre2_match_context_create(NULL);
	/* One pair of offsets: only whether a line matches is used. */
	g->md = pcre2_match_data_create(1, NULL);
	if (!g->mctx || !g->md)
		return fail(fs, HUTCH_AGENT_ERR_IO, "grep: %s",
			    strerror(ENOMEM));
	pcre2_set_match_limit(g->mctx, GREP_MATCH_LIMIT);
	pcre2_set_depth_limit(g->mctx, GREP_DEPTH_LIMIT);
	pcre2_set_heap_limit(g->mctx, GREP_HEAP_LIMIT_KIB);
	return 0;
}

/* The answer for a pcre2_match() that failed: a limit, mostly, which ends
 * the whole search rather than leave it silently incomplete. */
static int grep_match_failed(struct fs *fs, const struct grep *g,
			     const char *pattern)
{
	PCRE2_UCHAR msg[256];

	pcre2_get_error_message(g->match_err, msg, sizeof(msg));
	switch (g->match_err) {
	case PCRE2_ERROR_MATCHLIMIT:
	case PCRE2_ERROR_DEPTHLIMIT:
	case PCRE2_ERROR_HEAPLIMIT:
		return fail(fs, HUTCH_AGENT_ERR_INVALID,
			    "pattern too complex: '%s' gave up on %s line %lld "
			    "(%s); nested repeats such as (a+)+ backtrack "
			    "exponentially, simplify the pattern",
			    pattern, g->err_path, g->err_line,
			    (const char *)msg);
	default:
		return fail(fs, HUTCH_AGENT_ERR_IO,
			    "grep: matching '%s' on %s line %lld: %s", pattern,
			    g->err_path, g->err_line, (const char *)msg);
	}
}

static int tool_grep(struct fs *fs)
{
	const char *pattern = fs->o.pos[0];
	const char *path = fs->o.npos > 1 ? fs->o.pos[1] : ".";
	struct fsp_res res = { .parent = -1, .fd = -1 };
	struct grep g = { .max = GREP_MAX_DEFAULT };
	struct walker wk;
	int rc, dfd = -1, fd = -1, i;

	rc = max_option(fs, &g.max);
	if (rc)
		goto out;
	for (i = 0; i < fs->o.ninclude; i++) {
		if (!hutch__glob_valid(fs->o.include[i])) {
			rc = fail(fs, HUTCH_AGENT_ERR_INVALID,
				  "bad --include glob '%s'", fs->o.include[i]);
			goto out;
		}
	}
	rc = grep_compile(fs, &g, pattern);
	if (rc)
		goto out;
	g.buf = malloc(CHUNK);
	g.piece = malloc(GREP_PIECE);
	if (!g.buf || !g.piece) {
		rc = fail_path(fs, path, -ENOMEM);
		goto out;
	}
	rc = open_start(fs, path, &res, &dfd);
	if (!rc && dfd < 0) {
		/* A file: open it as the very file resolved. */
		fsp_res_close(&res);
		rc = fsp_open(&fs->root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY,
			      &res, &fd);
	}
	if (rc) {
		rc = fail_path(fs, path, rc);
		goto out;
	}
	walk_init(&wk, fs, res.rel, grep_visit, &g);
	jsonw_open(&fs->out, NULL, '{');
	jsonw_open(&fs->out, "matches", '[');
	if (dfd >= 0) {
		walk_dir(&wk, dfd, 0);
		dfd = -1;
	} else if (included(fs, res.name)) {
		grep_fd(&wk, &g, fd, res.rel);
	}
	if (g.match_err) {
		/* fail() drops the matches gathered so far. */
		rc = grep_match_failed(fs, &g, pattern);
		goto out;
	}
	jsonw_close(&fs->out, ']');
	jsonw_bool(&fs->out, "truncated", g.truncated || wk.truncated);
	jsonw_int(&fs->out, "files_scanned", g.files);
	if (wk.skipped_deep)
		jsonw_int(&fs->out, "skipped_deep", wk.skipped_deep);
	jsonw_close(&fs->out, '}');
	rc = emit(fs, EXIT_OK);
out:
	pcre2_match_data_free(g.md); /* the pcre2 frees accept NULL */
	pcre2_match_context_free(g.mctx);
	pcre2_code_free(g.re);
	if (dfd >= 0)
		close(dfd);
	if (fd >= 0)
		close(fd);
	fsp_res_close(&res);
	free(g.buf);
	free(g.piece);
	return rc;
}

/* --- find ----------------------------------------------------------------- */

struct find {
	const char *glob;
	char type; /* 0, 'f' or 'd' */
	long long max, count;
	bool truncated;
};

static void find_add(struct walker *wk, struct find *f, mode_t mode,
		     const char *rel, const char *sub)
{
	struct jsonw *w = &wk->fs->out;

	if ((f->type == 'f' && !S_ISREG(mode)) ||
	    (f->type == 'd' && !S_ISDIR(mode)) ||
	    !hutch__glob_match(f->glob, sub, false))
		return;
	if (w->len > OUT_SOFT) {
		f->truncated = true;
		wk->stop = true;
		return;
	}
	jsonw_open(w, NULL, '{');
	jsonw_strz(w, "path", rel);
	jsonw_strz(w, "type", type_name(mode));
	jsonw_close(w, '}');
	if (++f->count >= f->max) {
		f->truncated = true;
		wk->stop = true;
	}
}

static void find_visit(struct walker *wk, int dfd, const char *name,
		       const struct stat *st, const char *rel, const char *sub)
{
	find_add(wk, wk->arg, st->st_mode, rel, sub);
}

static int tool_find(struct fs *fs)
{
	const char *path = fs->o.npos > 1 ? fs->o.pos[1] : ".";
	struct fsp_res res = { .parent = -1, .fd = -1 };
	struct find f = { .glob = fs->o.pos[0], .max = FIND_MAX_DEFAULT };
	struct walker wk;
	int rc, dfd = -1;

	if (!hutch__glob_valid(f.glob)) {
		rc = fail(fs, HUTCH_AGENT_ERR_INVALID, "bad glob '%s'", f.glob);
		goto out;
	}
	rc = max_option(fs, &f.max);
	if (rc)
		goto out;
	if (fs->o.type) {
		if (strcmp(fs->o.type, "f") && strcmp(fs->o.type, "d")) {
			rc = fail(fs, HUTCH_AGENT_ERR_INVALID,
				  "--type wants f or d, not '%s'", fs->o.type);
			goto out;
		}
		f.type = fs->o.type[0];
	}
	rc = open_start(fs, path, &res, &dfd);
	if (rc) {
		rc = fail_path(fs, path, rc);
		goto out;
	}
	walk_init(&wk, fs, res.rel, find_visit, &f);
	jsonw_open(&fs->out, NULL, '{');
	jsonw_open(&fs->out, "entries", '[');
	if (dfd >= 0) {
		walk_dir(&wk, dfd, 0);
		dfd = -1;
	} else {
		/* PATH is not a directory: it is the only candidate. */
		find_add(&wk, &f, res.st.st_mode, res.rel, res.name);
	}
	jsonw_close(&fs->out, ']');
	jsonw_bool(&fs->out, "truncated", f.truncated || wk.truncated);
	if (wk.skipped_deep)
		jsonw_int(&fs->out, "skipped_deep", wk.skipped_deep);
	jsonw_close(&fs->out, '}');
	rc = emit(fs, EXIT_OK);
out:
	if (dfd >= 0)
		close(dfd);
	fsp_res_close(&res);
	return rc;
}

/* --- ls ------------------------------------------------------------------- */

static void ls_entry(struct jsonw *w, int dfd, const char *name,
		     const char *rel, const struct stat *st)
{
	char target[PATH_MAX];
	ssize_t n;

	jsonw_open(w, NULL, '{');
	jsonw_strz(w, "path", rel);
	jsonw_strz(w, "name", name);
	jsonw_strz(w, "type", type_name(st->st_mode));
	jsonw_int(w, "size", (long long)st->st_size);
	if (S_ISLNK(st->st_mode) && dfd >= 0) {
		n = readlinkat(dfd, name, target, sizeof(target));
		if (n >= 0 && (size_t)n < sizeof(target))
			jsonw_str(w, "target", target, (size_t)n);
	}
	jsonw_close(w, '}');
}

static int tool_ls(struct fs *fs)
{
	const char *path = fs->o.npos ? fs->o.pos[0] : ".";
	struct fsp_res res = { .parent = -1, .fd = -1 };
	long long max = LS_MAX_DEFAULT;
	char rel[PATH_MAX], **names = NULL;
	long n = 0, i, shown = 0;
	bool more = false;
	struct stat st;
	int rc, dfd = -1, pfd = -1;

	rc = max_option(fs, &max);
	if (rc)
		goto out;
	rc = open_start(fs, path, &res, &dfd);
	if (rc) {
		rc = fail_path(fs, path, rc);
		goto out;
	}
	jsonw_open(&fs->out, NULL, '{');
	jsonw_strz(&fs->out, "path", res.rel);
	jsonw_open(&fs->out, "entries", '[');
	if (dfd < 0) {
		/* A file: itself, as the one entry. */
		ls_entry(&fs->out, -1, res.name, res.rel, &res.st);
	} else {
		/* read_names() takes dfd; keep one for the *at() calls. */
		pfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
		rc = pfd < 0 ? -errno : 0;
		n = read_names(dfd, &names, &more);
		dfd = -1;
		if (n < 0 || rc) {
			rc = fail_path(fs, path, n < 0 ? (int)n : rc);
			goto out;
		}
		for (i = 0; i < n && shown < max; i++) {
			if (fstatat(pfd, names[i], &st, AT_SYMLINK_NOFOLLOW) <
			    0)
				continue;
			if (join(rel, sizeof(rel), res.rel, names[i]) < 0)
				continue;
			if (fs->out.len > OUT_SOFT) {
				more = true;
				break;
			}
			ls_entry(&fs->out, pfd, names[i], rel, &st);
			shown++;
		}
		if (i < n)
			more = true;
	}
	jsonw_close(&fs->out, ']');
	jsonw_bool(&fs->out, "truncated", more);
	jsonw_close(&fs->out, '}');
	rc = emit(fs, EXIT_OK);
out:
	if (dfd >= 0)
		close(dfd);
	if (pfd >= 0)
		close(pfd);
	free_names(names, n);
	fsp_res_close(&res);
	return rc;
}

/* --- delete and move ------------------------------------------------------ */

#define RM_DEPTH 128 /* directory levels a recursive delete goes down */
#define RM_PASSES 64 /* rounds of DIR_ENTRIES_MAX names per directory */

/*
 * A recursive delete.  It only ever goes down: each directory is opened
 * beneath the fd of its parent with O_NOFOLLOW|O_DIRECTORY, so a symlink
 * (one swapped in for a directory included) is removed as a link, never
 * followed; and it stays on the filesystem of the directory it deletes,
 * as rm --one-file-system does.
 */
struct rm {
	dev_t dev;
	long long removed;
	bool deep;	    /* stopped at RM_DEPTH */
	char rel[PATH_MAX]; /* the entry at hand, relative to the root */
};

static int rm_entry(struct rm *rm, int dfd, const char *name, int depth);

/* Remove everything in the directory open as @dfd (taken). */
static int rm_contents(struct rm *rm, int dfd, int depth)
{
	size_t base = strlen(rm->rel);
	char **names = NULL;
	bool more = true;
	long n, i;
	int rc = 0, pass, pfd;

	for (pass = 0; more && !rc; pass++) {
		if (pass == RM_PASSES) {
			rc = -EMLINK;
			break;
		}
		/* read_names() takes the fd; the copy shares the offset,
		 * which each round starts from the top again. */
		if (lseek(dfd, 0, SEEK_SET) < 0 ||
		    (pfd = fcntl(dfd, F_DUPFD_CLOEXEC, 3)) < 0) {
			rc = -errno;
			break;
		}
		n = read_names(pfd, &names, &more);
		if (n < 0) {
			rc = (int)n;
			break;
		}
		for (i = 0; i < n && !rc; i++) {
			rc = rel_push(rm->rel, sizeof(rm->rel), base, names[i]);
			if (!rc)
				rc = rm_entry(rm, dfd, names[i], depth);
			if (!rc)
				rm->rel[base] = '\0';
		}
		free_names(names, n);
		names = NULL;
	}
	close(dfd);
	return rc;
}

/*
 * Remove @name in @dfd, whatever it is, with everything in it.  Entries
 * gone meanwhile count as removed by someone else; one swapped for
 * another type between the look and the removal is looked at again.
 * Returns 0 or -errno; rm->rel then names the entry that failed.
 */
static int rm_entry(struct rm *rm, int dfd, const char *name, int depth)
{
	struct stat st;
	int cfd, rc, tries;

	for (tries = 0; tries < 3; tries++) {
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			return errno == ENOENT ? 0 : -errno;
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(dfd, name, 0) == 0) {
				rm->removed++;
				return 0;
			}
			if (errno == ENOENT)
				return 0;
			if (errno != EISDIR)
				return -errno;
			continue; /* a directory now */
		}
		if (st.st_dev != rm->dev)
			return -EXDEV;
		if (depth >= RM_DEPTH) {
			rm->deep = true;
			return -ELOOP;
		}
		cfd = openat(dfd, name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
				     O_CLOEXEC);
		if (cfd < 0) {
			if (errno == ENOENT)
				return 0;
			/* A symlink or a file swapped in: look again. */
			if (errno == ELOOP || errno == ENOTDIR)
				continue;
			return -errno;
		}
		rc = rm_contents(rm, cfd, depth + 1);
		if (rc)
			return rc;
		if (unlinkat(dfd, name, AT_REMOVEDIR) == 0) {
			rm->removed++;
			return 0;
		}
		if (errno == ENOENT)
			return 0;
		/* Filled again while we emptied it: once more. */
		if (errno != ENOTEMPTY && errno != EEXIST)
			return -errno;
	}
	return -EAGAIN;
}

/* Error for a path delete or move cannot act on (@what: "deleted"). */
static int fail_entry(struct fs *fs, const char *path, int rc, const char *what)
{
	if (rc == FSP_ROOT)
		return fail(fs, HUTCH_AGENT_ERR_INVALID,
			    "'%s' is %s itself, which is never %s", path,
			    fs->o.root, what);
	if (rc == -EINVAL)
		return fail(fs, HUTCH_AGENT_ERR_INVALID,
			    "'%s' ends in '.' or '..', not in a name", path);
	return fail_path(fs, path, rc);
}

/* Why a recursive delete stopped at rm->rel (@rc). */
static int fail_rm(struct fs *fs, const char *path, const struct rm *rm, int rc)
{
	char deep[48];
	const char *why = rc == -EXDEV	? "on another filesystem, not removed" :
			  rc == -EMLINK ? "more entries than can be removed" :
			  rc == -EAGAIN ? "replaced again and again while "
					  "being removed" :
					  strerror(-rc);

	if (rm->deep) {
		snprintf(deep, sizeof(deep), "deeper than %d levels", RM_DEPTH);
		why = deep;
	}
	return fail(fs, HUTCH_AGENT_ERR_IO,
		    "'%s' was not deleted completely: %lld entries removed, "
		    "then '%s': %s",
		    path, rm->removed, rm->rel, why);
}

static int tool_delete(struct fs *fs)
{
	const char *path = fs->o.pos[0];
	struct fsp_entry e = { .dir = -1 };
	struct rm *rm = NULL;
	long long removed = 1;
	int rc;

	rc = fsp_resolve_entry(&fs->root, path, 0, &e);
	if (rc) {
		rc = fail_entry(fs, path, rc, "deleted");
		goto out;
	}
	if (!e.exists) {
		rc = fail_path(fs, path, -ENOENT);
		goto out;
	}
	/* Only ever a name in the directory we hold: unlinkat() does not
	 * follow it, so a symlink goes, not what it points to. */
	if (fs->o.recursive) {
		rm = calloc(1, sizeof(*rm));
		if (!rm) {
			rc = fail_path(fs, path, -ENOMEM);
			goto out;
		}
		rm->dev = e.st.st_dev;
		snprintf(rm->rel, sizeof(rm->rel), "%s", e.rel);
		rc = rm_entry(rm, e.dir, e.name, 0);
		if (rc) {
			rc = fail_rm(fs, path, rm, rc);
			goto out;
		}
		removed = rm->removed;
	} else if (unlinkat(e.dir, e.name,
			    S_ISDIR(e.st.st_mode) ? AT_REMOVEDIR : 0) < 0) {
		if (errno == ENOTEMPTY || errno == EEXIST)
			rc = fail(fs, HUTCH_AGENT_ERR_NOT_EMPTY,
				  "'%s' is a directory that is not empty",
				  path);
		else
			rc = fail_path(fs, path, -errno);
		goto out;
	}
	jsonw_open(&fs->out, NULL, '{');
	jsonw_strz(&fs->out, "path", e.rel);
	jsonw_strz(&fs->out, "type", type_name(e.st.st_mode));
	jsonw_int(&fs->out, "removed", removed);
	jsonw_close(&fs->out, '}');
	rc = emit(fs, EXIT_OK);
out:
	free(rm);
	fsp_entry_close(&e);
	return rc;
}

/* renameat2() without replacing, where the filesystem cannot do it
 * (EINVAL) or the kernel is older than 3.15 (ENOSYS): look, then rename.
 * Between the two only the sandbox itself can put something at @to,
 * which could as well overwrite it directly: nothing it could not reach
 * is replaced.  0 or -errno. */
static int rename_noreplace(int fdir, const char *from, int tdir,
			    const char *to)
{
	struct stat st;

	if (renameat2(fdir, from, tdir, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (fstatat(tdir, to, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	return renameat(fdir, from, tdir, to) < 0 ? -errno : 0;
}

/* Error for a failed rename of FROM to TO. */
static int fail_move(struct fs *fs, const char *from, const char *to, int rc)
{
	switch (rc) {
	case -EEXIST:
		return fail(fs, HUTCH_AGENT_ERR_EXISTS, "'%s' exists", to);
	case -ENOTEMPTY:
		return fail(fs, HUTCH_AGENT_ERR_NOT_EMPTY,
			    "'%s' is a directory that is not empty: it is "
			    "not replaced",
			    to);
	case -EISDIR:
		return fail(fs, HUTCH_AGENT_ERR_IS_DIR,
			    "'%s' is a directory: only a directory replaces "
			    "it",
			    to);
	case -ENOTDIR:
		return fail(fs, HUTCH_AGENT_ERR_NOT_DIR,
			    "'%s' is not a directory: a directory does not "
			    "replace it",
			    to);
	case -EINVAL:
		return fail(fs, HUTCH_AGENT_ERR_INVALID,
			    "'%s' is inside '%s': a directory cannot move "
			    "into itself",
			    to, from);
	case -EXDEV:
		return fail(fs, HUTCH_AGENT_ERR_IO,
			    "'%s' and '%s' are on different filesystems", from,
			    to);
	default:
		return fail_path(fs, from, rc);
	}
}

static int tool_move(struct fs *fs)
{
	const char *from = fs->o.pos[0], *to = fs->o.pos[1];
	struct fsp_entry src = { .dir = -1 }, dst = { .dir = -1 };
	bool replaced;
	int rc;

	rc = fsp_resolve_entry(&fs->root, from, 0, &src);
	if (rc) {
		rc = fail_entry(fs, from, rc, "moved");
		goto out;
	}
	if (!src.exists) {
		rc = fail_path(fs, from, -ENOENT);
		goto out;
	}
	/* TO's missing directories are made as write makes them, once
	 * FROM is known to be there. */
	rc = fsp_resolve_entry(&fs->root, to, FSP_MKDIR, &dst);
	if (rc) {
		rc = fail_entry(fs, to, rc, "replaced");
		goto out;
	}
	if (dst.exists && dst.st.st_dev == src.st.st_dev &&
	    dst.st.st_ino == src.st.st_ino) {
		/* rename(2) does nothing for two names of one file (or one
		 * name twice): FROM would stay, said to be moved. */
		rc = fail(fs, HUTCH_AGENT_ERR_INVALID,
			  "'%s' and '%s' are the same file", from, to);
		goto out;
	}
	if (dst.exists && !fs->o.overwrite) {
		rc = fail_move(fs, from, to, -EEXIST);
		goto out;
	}
	replaced = dst.exists;
	/*
	 * Both names are taken in directories we hold, resolved beneath
	 * the root; rename() follows neither, so a symlink moves as a link
	 * and one at TO is replaced, never written through.  Without
	 * --overwrite, RENAME_NOREPLACE leaves whatever came to TO since
	 * the look above.
	 */
	if (fs->o.overwrite)
		rc = renameat(src.dir, src.name, dst.dir, dst.name) < 0 ?
			     -errno :
			     0;
	else
		rc = rename_noreplace(src.dir, src.name, dst.dir, dst.name);
	if (rc) {
		rc = rc == -ENOENT ? fail_path(fs, from, rc) :
				     fail_move(fs, from, to, rc);
		goto out;
	}
	jsonw_open(&fs->out, NULL, '{');
	jsonw_strz(&fs->out, "path", dst.rel);
	jsonw_strz(&fs->out, "from", src.rel);
	jsonw_strz(&fs->out, "type", type_name(src.st.st_mode));
	jsonw_bool(&fs->out, "replaced", replaced);
	jsonw_close(&fs->out, '}');
	rc = emit(fs, EXIT_OK);
out:
	fsp_entry_close(&src);
	fsp_entry_close(&dst);
	return rc;
}

/* --- entry ---------------------------------------------------------------- */

int agent_fs(int argc, char **argv)
{
	struct fs fs = { .from = { .fd = -1 },
			 .old_text = { .fd = -1 },
			 .new_text = { .fd = -1 },
			 .root = { .fd = -1 } };
	const char *msg;
	int rc, min_pos, max_pos;

	jsonw_init(&fs.out, OUT_MAX);
	msg = parse_args(argc, argv, &fs.o);
	if (msg) {
		rc = fail(&fs, HUTCH_AGENT_ERR_USAGE, "%s", msg);
		goto out;
	}
	msg = check_args(&fs.o, &min_pos, &max_pos);
	if (msg) {
		rc = fail(&fs, HUTCH_AGENT_ERR_USAGE, "%s", msg);
		goto out;
	}
	if ((rc = take_texts(&fs)) != 0)
		goto out;
	if (!fs.o.root)
		fs.o.root = FS_DEFAULT_ROOT;
	if (fs.o.root[0] != '/') {
		rc = fail(&fs, HUTCH_AGENT_ERR_USAGE,
			  "--root wants an absolute path");
		goto out;
	}
	rc = fsp_root_open(&fs.root, fs.o.root);
	if (rc) {
		rc = fail(&fs,
			  rc == -ENOENT ? HUTCH_AGENT_ERR_NOT_FOUND :
					  HUTCH_AGENT_ERR_IO,
			  "root '%s': %s", fs.o.root, strerror(-rc));
		goto out;
	}
	if (!strcmp(fs.o.tool, HUTCH_AGENT_FS_READ))
		rc = tool_read(&fs);
	else if (!strcmp(fs.o.tool, HUTCH_AGENT_FS_WRITE))
		rc = tool_write(&fs);
	else if (!strcmp(fs.o.tool, HUTCH_AGENT_FS_EDIT))
		rc = tool_edit(&fs);
	else if (!strcmp(fs.o.tool, HUTCH_AGENT_FS_GREP))
		rc = tool_grep(&fs);
	else if (!strcmp(fs.o.tool, HUTCH_AGENT_FS_FIND))
		rc = tool_find(&fs);
	else if (!strcmp(fs.o.tool, HUTCH_AGENT_FS_DELETE))
		rc = tool_delete(&fs);
	else if (!strcmp(fs.o.tool, HUTCH_AGENT_FS_MOVE))
		rc = tool_move(&fs);
	else
		rc = tool_ls(&fs);
out:
	text_close(&fs.from);
	text_close(&fs.old_text);
	text_close(&fs.new_text);
	fsp_root_close(&fs.root);
	jsonw_free(&fs.out);
	return rc;
}
