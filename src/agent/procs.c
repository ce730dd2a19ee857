/*
 * procs.c - "ps", "logs" and "wait": reading background processes
 *
 * Everything here reads HUTCH_AGENT_PROC_DIR, which the session can write
 * (proc.h says what is there and why none of it is trusted).  The rules,
 * kept at every open and read below:
 *   - directories are opened with O_DIRECTORY | O_NOFOLLOW below a held
 *     fd, files with O_NOFOLLOW | O_NONBLOCK and must then be regular
 *     (fstat): a symlink to /etc/shadow is never followed, a FIFO never
 *     blocks us and is never read;
 *   - every read is capped (metadata: a few KiB; a log segment: the part
 *     of it the supervisor could have written, LOG_SEGMENT_MAX), and so is
 *     every list (entries scanned, segments);
 *   - every answer is one JSON object written by jsonw (valid UTF-8,
 *     everything escaped) under a hard size cap.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "jsonw.h"
#include "proc.h"
#include "utf8.h"

#define SCAN_MAX 4096 /* directory entries of one process looked at */
#define LIST_MAX 1024 /* entries ps lists */
#define SEG_MAX 16    /* log segments looked at */
#define PS_ANSWER_MAX (6u << 20)
#define ANSWER_CAP (8u << 20)
#define TAIL_MAX 100000
#define WAIT_RECHECK_MS 1000

enum pstate {
	ST_RUNNING,
	ST_EXITED,
	ST_KILLED,
	ST_LOST
};
static const char *const state_names[] = { "running", "exited", "killed",
					   "lost" };

struct pinfo {
	char id[HUTCH_AGENT_TAG_MAX + 1];
	pid_t pid, sup;
	unsigned long long sup_start;
	unsigned int uid;
	unsigned long long started, ended;
	enum pstate state;
	int code, sig;
	unsigned long long out_bytes, dropped;
	bool out_known; /* out_bytes from the end record */
	char argv[ARGV_KEEP];
	size_t argv_len;
};

/* --- careful reads ------------------------------------------------------ */

/* A regular file @name in @dir, opened without following a symlink and
 * without blocking on a FIFO; -1 otherwise. */
static int open_regular(int dir, const char *name, struct stat *st)
{
	struct stat tmp;
	int fd = openat(dir, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (!st)
		st = &tmp;
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

/* At most @cap - 1 bytes of a small file, NUL-terminated; -1 if none. */
static ssize_t read_small(int dir, const char *name, char *buf, size_t cap)
{
	size_t total = 0;
	ssize_t n;
	int fd = open_regular(dir, name, NULL);

	if (fd < 0)
		return -1;
	while (total < cap - 1) {
		n = read(fd, buf + total, cap - 1 - total);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += (size_t)n;
	}
	close(fd);
	buf[total] = '\0';
	return (ssize_t)total;
}

static int open_proc_dir(void)
{
	return open(HUTCH_AGENT_PROC_DIR,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int open_entry(int procfd, const char *id)
{
	return openat(procfd, id,
		      O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* --- log segments -------------------------------------------------------- */

struct seg {
	unsigned long long start;
	char name[PROC_LOG_NAME_LEN + 1];
};

static int cmp_seg(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/* The segments of an entry, in order; at most SEG_MAX. */
static size_t list_segments(int dir, struct seg *segs)
{
	struct dirent *de;
	size_t n = 0, scanned = 0;
	char *end;
	int fd = dup(dir);
	DIR *d;

	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	/* The dup shares the offset of every earlier walk: start over. */
	rewinddir(d);
	while ((de = readdir(d)) && scanned++ < SCAN_MAX && n < SEG_MAX) {
		if (strlen(de->d_name) != PROC_LOG_NAME_LEN ||
		    strncmp(de->d_name, PROC_LOG_PREFIX,
			    sizeof(PROC_LOG_PREFIX) - 1))
			continue;
		segs[n].start = strtoull(
			de->d_name + sizeof(PROC_LOG_PREFIX) - 1, &end, 16);
		if (*end)
			continue;
		memcpy(segs[n].name, de->d_name, PROC_LOG_NAME_LEN + 1);
		n++;
	}
	closedir(d);
	qsort(segs, n, sizeof(segs[0]), cmp_seg);
	return n;
}

/* Called for each piece of output at or after the reader's offset;
 * returns how many of @len bytes it took (less: stop there). */
typedef size_t (*piece_fn)(char stream, unsigned long long off,
			   const char *data, size_t len, void *arg);

struct reader {
	char *win; /* a window on the segment file */
	size_t win_len;
	off_t win_off;
};

#define WINDOW (LOG_RECORD_MAX + LOG_HEADER)

/* s[off .. off+len) through the window, refilled as needed; NULL on a
 * short file (a record cut by a full disk, or a forged file). */
static const char *seg_bytes(struct reader *r, int fd, off_t off, size_t len)
{
	ssize_t n;

	if (off >= r->win_off &&
	    off + (off_t)len <= r->win_off + (off_t)r->win_len)
		return r->win + (off - r->win_off);
	do
		n = pread(fd, r->win, WINDOW, off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		n = 0;
	r->win_off = off;
	r->win_len = (size_t)n;
	return (size_t)n >= len ? r->win : NULL;
}

/*
 * Walk the output from payload offset @from: every piece goes to @fn (may
 * be NULL: only count).  *@dropped gets where the kept output begins,
 * *@next where this walk stopped (the end of the output, or where @fn
 * stopped taking).  Bounded: each segment is read up to LOG_SEGMENT_MAX
 * bytes however large the file, and a record that does not parse ends it.
 */
static int walk_output(int dir, unsigned long long from, piece_fn fn, void *arg,
		       unsigned long long *dropped, unsigned long long *next)
{
	struct seg segs[SEG_MAX];
	struct reader r = { 0 };
	size_t n = list_segments(dir, segs), i, len, want, took;
	unsigned long long pos = 0, seg_end;
	const unsigned char *h;
	const char *data;
	struct stat st;
	off_t off, size;
	bool stop = false;
	int fd;

	*dropped = n ? segs[0].start : 0;
	*next = from;
	if (from < *dropped)
		*next = from = *dropped;
	r.win = malloc(WINDOW);
	if (!r.win)
		return -1;
	for (i = 0; i < n && !stop; i++) {
		/* A gap between segments (one removed under us): skip it. */
		pos = segs[i].start;
		fd = open_regular(dir, segs[i].name, &st);
		if (fd < 0)
			continue;
		size = st.st_size < (off_t)LOG_SEGMENT_MAX ?
			       st.st_size :
			       (off_t)LOG_SEGMENT_MAX;
		r.win_off = 0;
		r.win_len = 0;
		for (off = 0; off + LOG_HEADER <= size;) {
			h = (const unsigned char *)seg_bytes(&r, fd, off,
							     LOG_HEADER);
			if (!h)
				break;
			len = (size_t)h[1] | (size_t)h[2] << 8 |
			      (size_t)h[3] << 16 | (size_t)h[4] << 24;
			if ((h[0] != '1' && h[0] != '2') || len == 0 ||
			    len > LOG_RECORD_MAX ||
			    off + LOG_HEADER + (off_t)len > size)
				break;
			seg_end = pos + len;
			if (seg_end > from && fn) {
				/* Read now: fetching the payload may refill
				 * the window that `h` points into. */
				char stream = (char)h[0];

				want = (size_t)(seg_end -
						(pos > from ? pos : from));
				data = seg_bytes(&r, fd, off + LOG_HEADER, len);
				if (!data)
					break;
				data += len - want;
				took = fn(stream, seg_end - want, data, want,
					  arg);
				if (took < want) {
					*next = seg_end - want + took;
					stop = true;
					break;
				}
			}
			pos = seg_end;
			off += LOG_HEADER + (off_t)len;
		}
		close(fd);
		if (!stop && pos > *next)
			*next = pos;
	}
	free(r.win);
	return 0;
}

/* --- one entry ------------------------------------------------------------ */

static bool parse_ull(const char *s, const char *key, unsigned long long *v)
{
	const char *p = strstr(s, key);
	char *end;

	if (!p || (p != s && p[-1] != '\n'))
		return false;
	p += strlen(key);
	if (*p < '0' || *p > '9')
		return false;
	*v = strtoull(p, &end, 10);
	return end != p;
}

/* Whether @pid still is the supervisor of @id that started at @start. */
static bool supervisor_alive(const char *id, pid_t pid,
			     unsigned long long start)
{
	char path[64], buf[512];
	const char *want[] = { HUTCH_AGENT_CMD_SPAWN, HUTCH_AGENT_OPT_ID, id };
	unsigned long long now_start;
	size_t alen, wlen, i;
	const char *p, *end;
	ssize_t n;
	pid_t ppid;
	int fd;

	if (pid <= 1 || proctree_identity(pid, &now_start, &ppid) < 0 ||
	    now_start != start)
		return false;
	/* Its command line: AGENT spawn --id ID (the pid may have been
	 * reused by now; start time and command line both must match). */
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return false;
	p = buf;
	end = buf + n;
	alen = strnlen(p, (size_t)n);
	if (alen == (size_t)n || !agent_argv0_ok(p))
		return false;
	p += alen + 1;
	for (i = 0; i < 3; i++) {
		wlen = strlen(want[i]) + 1;
		if ((size_t)(end - p) < wlen || memcmp(p, want[i], wlen))
			return false;
		p += wlen;
	}
	return true;
}

/* Fill @pi from the entry @dir; -1 when it is not (yet) an entry. */
static int load_info(int dir, const char *id, struct pinfo *pi, bool count)
{
	char buf[512], word[16];
	unsigned long long v, dropped, next;
	int code;
	ssize_t n;

	memset(pi, 0, sizeof(*pi));
	snprintf(pi->id, sizeof(pi->id), "%s", id);
	if (read_small(dir, PROC_META, buf, sizeof(buf)) <= 0)
		return -1;
	if (!parse_ull(buf, "pid ", &v) || v > INT_MAX)
		return -1;
	pi->pid = (pid_t)v;
	if (parse_ull(buf, "sup ", &v) && v <= INT_MAX) {
		const char *p = strstr(buf, "sup ");

		pi->sup = (pid_t)v;
		p = strchr(p + 4, ' ');
		if (p)
			pi->sup_start = strtoull(p + 1, NULL, 10);
	}
	if (parse_ull(buf, "uid ", &v) && v <= UINT_MAX)
		pi->uid = (unsigned int)v;
	if (parse_ull(buf, "started ", &v))
		pi->started = v;
	n = read_small(dir, PROC_ARGV, pi->argv, sizeof(pi->argv));
	pi->argv_len = n > 0 ? (size_t)n : 0;

	pi->state = ST_RUNNING;
	pi->code = pi->sig = -1;
	if (read_small(dir, PROC_END, buf, sizeof(buf)) > 0 &&
	    sscanf(buf, "%15s %d %llu %llu", word, &code, &pi->ended,
		   &pi->out_bytes) == 4 &&
	    code >= 0 && code < 256) {
		pi->out_known = true;
		if (!strcmp(word, "signal")) {
			pi->state = ST_KILLED;
			pi->sig = code;
		} else {
			pi->state = ST_EXITED;
			pi->code = code;
		}
	} else if (!supervisor_alive(id, pi->sup, pi->sup_start)) {
		/* Gone without saying how the command ended: the container
		 * was restarted, or the supervisor killed. */
		pi->state = ST_LOST;
	}
	if (count) {
		walk_output(dir, 0, NULL, NULL, &dropped, &next);
		pi->dropped = dropped;
		/* The end record's count, unless more was written after
		 * (by what the command left running). */
		if (!pi->out_known || next > pi->out_bytes)
			pi->out_bytes = next;
	}
	return 0;
}

static void emit_info(struct jsonw *w, const struct pinfo *pi, bool with_id)
{
	size_t i, len;

	if (with_id)
		jsonw_strz(w, "id", pi->id);
	jsonw_open(w, "argv", '[');
	for (i = 0; i < pi->argv_len; i += len + 1) {
		len = strnlen(pi->argv + i, pi->argv_len - i);
		jsonw_str(w, NULL, pi->argv + i, len);
	}
	jsonw_close(w, ']');
	jsonw_int(w, "pid", pi->pid);
	jsonw_int(w, "uid", pi->uid);
	jsonw_strz(w, "state", state_names[pi->state]);
	if (pi->state == ST_EXITED)
		jsonw_int(w, "exit_code", pi->code);
	else
		jsonw_null(w, "exit_code");
	if (pi->state == ST_KILLED)
		jsonw_int(w, "signal", pi->sig);
	else
		jsonw_null(w, "signal");
	jsonw_int(w, "started_ms", (long long)pi->started);
	if (pi->state == ST_EXITED || pi->state == ST_KILLED)
		jsonw_int(w, "ended_ms", (long long)pi->ended);
	else
		jsonw_null(w, "ended_ms");
	jsonw_int(w, "output_bytes", (long long)pi->out_bytes);
	jsonw_int(w, "dropped_bytes", (long long)pi->dropped);
}

static int emit(struct jsonw *w)
{
	int rc = jsonw_emit(w, STDOUT_FILENO);

	if (rc < 0)
		agent_err("cannot write the answer: %m");
	jsonw_free(w);
	return rc < 0 ? HUTCH_AGENT_EXIT_INTERNAL : 0;
}

/* The entry of @id, or NOTAG (said on stderr). */
static int find_entry(const char *id, int *procfd, int *dir)
{
	if (!agent_tag_valid(id)) {
		agent_err("invalid id (want 1-%d of [A-Za-z0-9_-])",
			  HUTCH_AGENT_TAG_MAX);
		return HUTCH_AGENT_EXIT_USAGE;
	}
	*procfd = open_proc_dir();
	*dir = *procfd >= 0 ? open_entry(*procfd, id) : -1;
	if (*dir < 0) {
		agent_err("no background process '%s'", id);
		if (*procfd >= 0)
			close(*procfd);
		return HUTCH_AGENT_EXIT_NOTAG;
	}
	return 0;
}

int proc_find_supervisor(const char *id, pid_t *pid, unsigned long long *start)
{
	struct pinfo *pi = malloc(sizeof(*pi));
	int procfd, dir, rc = -1;

	if (!pi)
		return -1;
	procfd = open_proc_dir();
	dir = procfd >= 0 ? open_entry(procfd, id) : -1;
	if (dir >= 0) {
		rc = 1;
		/* The supervisor outlives the main process while what it left
		 * still writes: it is found whatever the entry's state. */
		if (load_info(dir, id, pi, false) == 0 &&
		    supervisor_alive(id, pi->sup, pi->sup_start)) {
			*pid = pi->sup;
			*start = pi->sup_start;
			rc = 0;
		}
		close(dir);
	}
	if (procfd >= 0)
		close(procfd);
	free(pi);
	return rc;
}

/* --- ps ---------------------------------------------------------------- */

static int cmp_started(const void *a, const void *b)
{
	const struct pinfo *x = *(struct pinfo *const *)a,
			   *y = *(struct pinfo *const *)b;

	if (x->started != y->started)
		return (x->started > y->started) - (x->started < y->started);
	return strcmp(x->id, y->id);
}

int agent_ps(int argc, char **argv)
{
	struct pinfo **list;
	struct dirent *de;
	struct jsonw w;
	size_t n = 0, i;
	bool truncated = false;
	int procfd, dir;
	DIR *d;

	(void)argv;
	if (argc != 1) {
		agent_err("usage: hutch-agent ps");
		return HUTCH_AGENT_EXIT_USAGE;
	}
	list = calloc(LIST_MAX, sizeof(*list));
	if (!list) {
		agent_err("out of memory");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	procfd = open_proc_dir();
	/* No directory (an older layout): no background processes. */
	d = procfd >= 0 ? fdopendir(dup(procfd)) : NULL;
	if (d)
		rewinddir(d);
	/*
	 * Every entry is looked at, however many there are: memory is
	 * bounded by the LIST_MAX entries listed, not by the scan, so empty
	 * or junk directories the session made (it may: the directory is
	 * sticky and writable by all) cannot push real processes out of the
	 * listing.  The time is the session's own, under the exec's timeout.
	 */
	while (d && (de = readdir(d))) {
		if (n >= LIST_MAX) {
			truncated = true;
			break;
		}
		if (!agent_tag_valid(de->d_name))
			continue;
		dir = open_entry(procfd, de->d_name);
		if (dir < 0)
			continue;
		list[n] = malloc(sizeof(**list));
		if (list[n] && load_info(dir, de->d_name, list[n], true) == 0)
			n++;
		else
			free(list[n]);
		close(dir);
	}
	if (d)
		closedir(d);
	if (procfd >= 0)
		close(procfd);
	qsort(list, n, sizeof(*list), cmp_started);

	jsonw_init(&w, ANSWER_CAP);
	jsonw_open(&w, NULL, '{');
	jsonw_open(&w, "processes", '[');
	for (i = 0; i < n; i++) {
		/* An entry costs at most ~6 x ARGV_KEEP: stop well before
		 * the cap, so the answer stays whole. */
		if (w.len > PS_ANSWER_MAX) {
			truncated = true;
			break;
		}
		jsonw_open(&w, NULL, '{');
		emit_info(&w, list[i], true);
		jsonw_close(&w, '}');
	}
	jsonw_close(&w, ']');
	if (truncated)
		jsonw_bool(&w, "truncated", true);
	jsonw_close(&w, '}');
	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
	return emit(&w);
}

/* --- waiting for a change ------------------------------------------------ */

/* An inotify watch on the entry, through its held fd (never a path the
 * session could swap); -1 when inotify is not there: we then poll. */
static int watch_entry(int dir)
{
	char path[64];
	int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);

	if (fd < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dir);
	if (inotify_add_watch(fd, path,
			      IN_MODIFY | IN_CREATE | IN_MOVED_TO |
				      IN_CLOSE_WRITE | IN_DELETE_SELF |
				      IN_ONLYDIR) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Until something changes in the entry, or WAIT_RECHECK_MS (a supervisor
 * that died says nothing). */
static void wait_change(int ifd)
{
	struct pollfd p = { ifd, POLLIN, 0 };
	char buf[4096];

	if (ifd < 0) {
		struct timespec ts = { 0, 100 * 1000000L };

		nanosleep(&ts, NULL);
		return;
	}
	if (poll(&p, 1, WAIT_RECHECK_MS) > 0)
		while (read(ifd, buf, sizeof(buf)) > 0)
			;
}

/* --- wait ---------------------------------------------------------------- */

int agent_wait(int argc, char **argv)
{
	struct pinfo *pi;
	struct jsonw w;
	int procfd, dir, ifd, rc;

	if (argc != 2) {
		agent_err("usage: hutch-agent wait ID");
		return HUTCH_AGENT_EXIT_USAGE;
	}
	if ((rc = find_entry(argv[1], &procfd, &dir)))
		return rc;
	close(procfd);
	pi = malloc(sizeof(*pi));
	if (!pi) {
		agent_err("out of memory");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	ifd = watch_entry(dir);
	for (;;) {
		/* Not yet an entry (meta not written): the supervisor is
		 * about to; a forged entry without one waits as long as
		 * the caller does. */
		if (load_info(dir, argv[1], pi, false) == 0 &&
		    pi->state != ST_RUNNING)
			break;
		wait_change(ifd);
	}
	load_info(dir, argv[1], pi, true);
	jsonw_init(&w, ANSWER_CAP);
	jsonw_open(&w, NULL, '{');
	emit_info(&w, pi, true);
	jsonw_close(&w, '}');
	free(pi);
	if (ifd >= 0)
		close(ifd);
	close(dir);
	return emit(&w);
}

/* --- logs ---------------------------------------------------------------- */

struct logs_opts {
	const char *id;
	unsigned long long from;
	unsigned long long tail; /* lines; 0: all */
	bool has_tail, follow, json;
	size_t max;
};

static int parse_logs(int argc, char **argv, struct logs_opts *o)
{
	unsigned long long v;
	int i;

	o->max = HUTCH_AGENT_LOGS_MAX_DEFAULT;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : "";

		if (!strcmp(a, "--follow")) {
			o->follow = true;
		} else if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "--from")) {
			if (agent_parse_num(val, 1ULL << 62, &o->from) < 0)
				goto bad;
			i++;
		} else if (!strcmp(a, "--tail")) {
			if (agent_parse_num(val, TAIL_MAX, &o->tail) < 0)
				goto bad;
			o->has_tail = true;
			i++;
		} else if (!strcmp(a, "--max")) {
			if (agent_parse_num(val, HUTCH_AGENT_LOGS_MAX, &v) <
				    0 ||
			    v == 0)
				goto bad;
			o->max = (size_t)v;
			i++;
		} else if (a[0] != '-' && !o->id) {
			o->id = a;
		} else {
			goto bad;
		}
	}
	if (!o->id || (o->json && (o->follow || o->has_tail)))
		goto bad;
	return 0;
bad:
	agent_err("usage: hutch-agent logs ID [--from N] [--tail LINES] "
		  "[--follow] | logs ID --json [--from N] [--max BYTES] "
		  "(--tail 0..%d, --max 1..%u)",
		  TAIL_MAX, HUTCH_AGENT_LOGS_MAX);
	return -1;
}

static size_t to_fds(char stream, unsigned long long off, const char *data,
		     size_t len, void *arg)
{
	int fd = stream == '2' ? STDERR_FILENO : STDOUT_FILENO;
	size_t done = 0;
	ssize_t n;

	(void)off;
	while (done < len) {
		n = write(fd, data + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*(bool *)arg = true; /* the reader went away */
			break;
		}
		done += (size_t)n;
	}
	return done;
}

/* --tail: the offsets of the last tail + 1 newlines, in a ring. */
struct tailr {
	unsigned long long *ring;
	size_t cap, count;
	unsigned long long end;
	char last;
};

static size_t tail_scan(char stream, unsigned long long off, const char *data,
			size_t len, void *arg)
{
	struct tailr *t = arg;
	const char *p = data, *nl;

	(void)stream;
	while ((nl = memchr(p, '\n', len - (size_t)(p - data)))) {
		t->ring[t->count++ % t->cap] =
			off + (unsigned long long)(nl - data);
		p = nl + 1;
	}
	t->end = off + len;
	t->last = data[len - 1];
	return len;
}

/* Where the last @lines lines begin (tail -n). */
static unsigned long long tail_start(int dir, unsigned long long lines,
				     unsigned long long from)
{
	struct tailr t = { 0 };
	unsigned long long dropped, next, start = from;
	size_t back;

	t.cap = (size_t)lines + 1;
	t.ring = malloc(t.cap * sizeof(*t.ring));
	if (!t.ring)
		return from;
	walk_output(dir, from, tail_scan, &t, &dropped, &next);
	if (lines == 0) {
		start = next;
	} else {
		/* A last line without its newline counts as a line. */
		back = t.count && t.last == '\n' ? (size_t)lines + 1 :
						   (size_t)lines;
		if (t.count >= back)
			start = t.ring[(t.count - back) % t.cap] + 1;
	}
	free(t.ring);
	return start > from ? start : from;
}

struct jsonr {
	char *out, *err;
	size_t out_len, err_len, room;
};

static size_t to_json(char stream, unsigned long long off, const char *data,
		      size_t len, void *arg)
{
	struct jsonr *j = arg;
	size_t take = len;

	(void)off;
	if (take > j->room) {
		/* Never split a character at the cut: the next call starts
		 * where this one stopped, on a whole one. */
		take = hutch__utf8_cut(data, len, j->room);
		if (take == 0 && j->out_len + j->err_len == 0)
			take = j->room; /* nothing taken yet: take bytes */
	}
	if (stream == '2') {
		memcpy(j->err + j->err_len, data, take);
		j->err_len += take;
	} else {
		memcpy(j->out + j->out_len, data, take);
		j->out_len += take;
	}
	j->room -= take;
	return take;
}

static int logs_json(int dir, const struct logs_opts *o)
{
	struct jsonr j = { 0 };
	struct pinfo *pi = malloc(sizeof(*pi));
	unsigned long long dropped, next;
	struct jsonw w;

	j.out = malloc(o->max);
	j.err = malloc(o->max);
	j.room = o->max;
	if (!pi || !j.out || !j.err) {
		free(pi);
		free(j.out);
		free(j.err);
		agent_err("out of memory");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	/* The state before the output: an "exited" answer has all of it. */
	if (load_info(dir, o->id, pi, true) < 0) {
		memset(pi, 0, sizeof(*pi));
		snprintf(pi->id, sizeof(pi->id), "%s", o->id);
		pi->state = ST_RUNNING;
		pi->code = pi->sig = -1;
	}
	walk_output(dir, o->from, to_json, &j, &dropped, &next);
	jsonw_init(&w, ANSWER_CAP);
	jsonw_open(&w, NULL, '{');
	jsonw_strz(&w, "id", o->id);
	jsonw_int(&w, "from",
		  (long long)(o->from > dropped ? o->from : dropped));
	jsonw_int(&w, "next", (long long)next);
	jsonw_int(&w, "dropped", (long long)dropped);
	jsonw_str(&w, "stdout", j.out, j.out_len);
	jsonw_str(&w, "stderr", j.err, j.err_len);
	emit_info(&w, pi, false);
	jsonw_close(&w, '}');
	free(pi);
	free(j.out);
	free(j.err);
	return emit(&w);
}

int agent_logs(int argc, char **argv)
{
	struct logs_opts o = { 0 };
	struct pinfo *pi;
	unsigned long long dropped, pos;
	bool gone = false, done;
	int procfd, dir, ifd = -1, rc;

	if (parse_logs(argc, argv, &o) < 0)
		return HUTCH_AGENT_EXIT_USAGE;
	if ((rc = find_entry(o.id, &procfd, &dir)))
		return rc;
	close(procfd);
	if (o.json) {
		rc = logs_json(dir, &o);
		close(dir);
		return rc;
	}
	/* The reader may go away (follow): a write error, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	pi = malloc(sizeof(*pi));
	if (!pi) {
		agent_err("out of memory");
		return HUTCH_AGENT_EXIT_INTERNAL;
	}
	pos = o.has_tail ? tail_start(dir, o.tail, o.from) : o.from;
	if (o.follow)
		ifd = watch_entry(dir);
	for (;;) {
		/* Whether it had ended before this pass: then the pass
		 * reads all it wrote. */
		done = !o.follow || (load_info(dir, o.id, pi, false) == 0 &&
				     pi->state != ST_RUNNING);
		walk_output(dir, pos, to_fds, &gone, &dropped, &pos);
		if (done || gone)
			break;
		wait_change(ifd);
	}
	free(pi);
	if (ifd >= 0)
		close(ifd);
	close(dir);
	return gone ? HUTCH_AGENT_EXIT_FAIL : 0;
}
