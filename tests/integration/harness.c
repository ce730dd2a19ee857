/*
 * harness.c - helpers of hutch's integration tests (see harness.h)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <curl/curl.h>
#include <json-c/json.h>

#include "harness.h"

#define API_PREFIX "/v1.41"
#define LABEL_SESSION "dev.hutch.session"
#define MAX_SESSIONS 32
#define MAX_ARGS 64

extern char **environ;

static char sessions[MAX_SESSIONS][64];
static size_t nsessions;
static unsigned int counter;
static char prefix[48];

/* ---- time ------------------------------------------------------------ */

double it_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void it_sleep(double seconds)
{
	struct timespec ts;

	if (seconds <= 0)
		return;
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* ---- environment ----------------------------------------------------- */

const char *it_engine(void)
{
	const char *e = getenv("HUTCH_TEST_ENGINE");

	cr_assert(
		e && *e,
		"HUTCH_TEST_ENGINE is not set: the integration tests need an engine "
		"(unix:///path/to/docker.sock or tcp://host:port); they never skip");
	return e;
}

const char *it_engine_name(void)
{
	const char *n = getenv("HUTCH_TEST_ENGINE_NAME");

	return n && *n ? n : "engine";
}

/* The Criterion runner forks (and re-executes) one worker per test; its
 * pid, the workers' parent, is common to the whole run.  Under --no-fork
 * every test runs in one process and the parent is the shell: still one
 * prefix per run. */
const char *it_run_prefix(void)
{
	if (!prefix[0])
		snprintf(prefix, sizeof(prefix), "it-%ld-", (long)getppid());
	return prefix;
}

const char *it_session(void)
{
	cr_assert_lt(nsessions, MAX_SESSIONS, "too many sessions in one test");
	snprintf(sessions[nsessions], sizeof(sessions[0]), "%s%ld-%u",
		 it_run_prefix(), (long)getpid(), ++counter);
	return sessions[nsessions++];
}

/* ---- marker files: which tests of this run are still running ---------- */

static void marker_dir(char *out, size_t outsz)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(out, outsz, "%s/hutch-%srun", tmp && *tmp ? tmp : "/tmp",
		 it_run_prefix());
}

static void marker_path(char *out, size_t outsz, pid_t pid)
{
	char dir[512];

	marker_dir(dir, sizeof(dir));
	snprintf(out, outsz, "%s/%ld", dir, (long)pid);
}

static void marker_set(int on)
{
	char dir[512], path[600];
	int fd;

	marker_dir(dir, sizeof(dir));
	marker_path(path, sizeof(path), getpid());
	if (on) {
		mkdir(dir, 0700);
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
	} else {
		unlink(path);
	}
}

/* ---- test life cycle ------------------------------------------------- */

static int curl_ready;

void it_begin(void)
{
	it_engine();
	if (!curl_ready) {
		cr_assert_eq(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
		curl_ready = 1;
	}
	nsessions = 0;
	marker_set(1);
}

void it_not_waited_for(void)
{
	marker_set(0);
}

void it_force_remove(const char *session)
{
	char path[256];
	it_result r = it_hutch("rm", "--force", session, NULL);

	it_result_free(&r);
	/* Whatever hutch could not remove (a broken build, a bug). */
	snprintf(path, sizeof(path), "/containers/hutch-%s?force=1", session);
	it_api("DELETE", path, NULL, NULL);
	snprintf(path, sizeof(path), "/volumes/hutch-%s", session);
	it_api("DELETE", path, NULL, NULL);
	snprintf(path, sizeof(path), "/volumes/hutch_%s", session);
	it_api("DELETE", path, NULL, NULL);
}

/* Remove the test's sessions.  With `check`, assert it worked and that
 * nothing carrying their labels is left. */
static void cleanup(int check)
{
	for (size_t i = 0; i < nsessions; i++) {
		it_result r;

		if (!check) {
			it_force_remove(sessions[i]);
			continue;
		}
		r = it_hutch("rm", "--force", sessions[i], NULL);
		cr_assert_eq(r.status, 0,
			     "hutch rm --force %s: exit %d, stderr: %s",
			     sessions[i], r.status, r.err);
		it_result_free(&r);
		cr_assert_eq(it_count_containers(sessions[i]), 0,
			     "a container of session %s is left after hutch rm",
			     sessions[i]);
		cr_assert_eq(it_count_volumes(sessions[i]), 0,
			     "a volume of session %s is left after hutch rm",
			     sessions[i]);
	}
	nsessions = 0;
}

void it_finish(void)
{
	cleanup(1);
}

void it_fini(void)
{
	/* Only reached with sessions left when the body failed half-way;
	 * the engine may be unset then, which it_hutch would assert on. */
	if (getenv("HUTCH_TEST_ENGINE") && *getenv("HUTCH_TEST_ENGINE"))
		cleanup(0);
	marker_set(0);
}

/* Runs in the runner after every test: drop the marker directory. */
ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	char dir[512], path[800];
	DIR *d;
	struct dirent *de;

	(void)stats;
	prefix[0] = '\0';
	/* In the runner, the run's pid is our own, not our parent's. */
	snprintf(prefix, sizeof(prefix), "it-%ld-", (long)getpid());
	marker_dir(dir, sizeof(dir));
	d = opendir(dir);
	if (d) {
		while ((de = readdir(d)))
			if (de->d_name[0] != '.') {
				snprintf(path, sizeof(path), "%s/%s", dir,
					 de->d_name);
				unlink(path);
			}
		closedir(d);
		rmdir(dir);
	}
	prefix[0] = '\0';
}

/* ---- running hutch --------------------------------------------------- */

/* HUTCH_BIN is usually libtool's wrapper script, which spends a shell and
 * a sed on every run before it execs the real program in .libs with
 * LD_LIBRARY_PATH set.  Do what it does directly: the tests run hutch a
 * hundred times.  `*libdir` is set when LD_LIBRARY_PATH must be. */
const char *it_hutch_program(const char **libdir)
{
	static char prog[2 * PATH_MAX + 16], dir[PATH_MAX];
	static int done;

	if (!done) {
		const char *slash = strrchr(HUTCH_BIN, '/');
		char head[2] = { 0 };
		int fd = open(HUTCH_BIN, O_RDONLY | O_CLOEXEC);

		done = 1;
		snprintf(prog, sizeof(prog), "%s", HUTCH_BIN);
		if (fd >= 0) {
			if (read(fd, head, 2) != 2)
				head[0] = '\0';
			close(fd);
		}
		if (slash && head[0] == '#' && head[1] == '!') {
			snprintf(dir, sizeof(dir), "%.*s/.libs",
				 (int)(slash - HUTCH_BIN), HUTCH_BIN);
			snprintf(prog, sizeof(prog), "%s/lt-%s", dir,
				 slash + 1);
			if (access(prog, X_OK) != 0)
				snprintf(prog, sizeof(prog), "%s/%s", dir,
					 slash + 1);
			if (access(prog, X_OK) != 0) {
				snprintf(prog, sizeof(prog), "%s", HUTCH_BIN);
				dir[0] = '\0';
			}
		}
	}
	*libdir = dir[0] ? dir : NULL;
	return prog;
}

void it_spawn(it_proc *p, const it_opts *o, const char *const *args)
{
	const char *libdir;
	static const it_opts none = { 0 };
	const char *argv[MAX_ARGS + 4];
	char **envp, *ldpath = NULL;
	int out[2], err[2], devnull;
	size_t n = 0;
	pid_t pid;

	memset(p, 0, sizeof(*p));
	p->o = o ? *o : none;
	argv[n++] = it_hutch_program(&libdir);
	if (!p->o.no_engine) {
		argv[n++] = "--engine";
		argv[n++] = it_engine();
	}
	for (size_t i = 0; args[i]; i++) {
		cr_assert_lt(n, MAX_ARGS + 3, "too many arguments");
		argv[n++] = args[i];
	}
	argv[n] = NULL;

	/* The child's environment, made before fork: no malloc after it. */
	for (n = 0; environ[n]; n++)
		;
	envp = calloc(n + 2, sizeof(char *));
	cr_assert_not_null(envp);
	for (n = 0; environ[n]; n++)
		envp[n] = environ[n];
	if (libdir) {
		const char *old = getenv("LD_LIBRARY_PATH");
		size_t k;

		cr_assert(asprintf(&ldpath, "LD_LIBRARY_PATH=%s%s%s", libdir,
				   old && *old ? ":" : "", old ? old : "") > 0);
		for (k = 0;
		     k < n && strncmp(envp[k], "LD_LIBRARY_PATH=", 16) != 0;
		     k++)
			;
		envp[k] = ldpath;
		if (k == n)
			n++;
	}
	envp[n] = NULL;

	cr_assert_eq(pipe2(out, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
	cr_assert_eq(pipe2(err, O_CLOEXEC), 0, "pipe: %s", strerror(errno));
	fflush(NULL);
	p->t0 = it_now();
	pid = fork();
	cr_assert_neq(pid, -1, "fork: %s", strerror(errno));
	if (pid == 0) {
		devnull = p->o.in_fd > 0 ? p->o.in_fd :
					   open("/dev/null", O_RDONLY);
		if (devnull < 0 || dup2(devnull, 0) < 0 ||
		    dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(126);
		signal(SIGPIPE, SIG_DFL);
		if (p->o.gate) {
			char c;

			close(p->o.gate[1]);
			while (read(p->o.gate[0], &c, 1) < 0 && errno == EINTR)
				;
		}
		execve(argv[0], (char *const *)argv, envp);
		dprintf(2, "harness: exec %s: %s\n", argv[0], strerror(errno));
		_exit(126);
	}
	free(envp);
	free(ldpath);
	close(out[1]);
	close(err[1]);
	p->pid = pid;
	p->out_fd = out[0];
	p->err_fd = err[0];
}

struct growbuf {
	char *data;
	size_t len, alloc;
};

static void grow_add(struct growbuf *b, const char *data, size_t len)
{
	if (b->len + len + 1 > b->alloc) {
		size_t alloc = b->alloc ? b->alloc : 4096;

		while (alloc < b->len + len + 1)
			alloc *= 2;
		b->data = realloc(b->data, alloc);
		cr_assert_not_null(b->data, "out of memory");
		b->alloc = alloc;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

it_result it_wait(it_proc *p)
{
	struct growbuf out = { 0 }, err = { 0 };
	it_chunk *chunks = NULL;
	size_t nchunks = 0, achunks = 0;
	double limit = p->o.limit > 0 ? p->o.limit : IT_RUN_LIMIT;
	double deadline = p->t0 + limit, now;
	struct pollfd pfd[2];
	char buf[65536];
	int status = 0, killed = 0;
	it_result r;

	memset(&r, 0, sizeof(r));
	while (p->out_fd >= 0 || p->err_fd >= 0) {
		int nfds = 0, timeout_ms;

		now = it_now();
		if (!killed && now >= deadline) {
			/* Hung: kill it and keep reading what it left. */
			kill(p->pid, SIGKILL);
			killed = 1;
			deadline = now + 5;
		} else if (killed && now >= deadline) {
			break; /* a grandchild keeps the pipes open */
		}
		timeout_ms = (int)((deadline - now) * 1000) + 1;
		if (p->out_fd >= 0)
			pfd[nfds++] = (struct pollfd){ .fd = p->out_fd,
						       .events = POLLIN };
		if (p->err_fd >= 0)
			pfd[nfds++] = (struct pollfd){ .fd = p->err_fd,
						       .events = POLLIN };
		if (poll(pfd, (nfds_t)nfds, timeout_ms) < 0) {
			cr_assert_eq(errno, EINTR, "poll: %s", strerror(errno));
			continue;
		}
		for (int i = 0; i < nfds; i++) {
			ssize_t n;
			int is_out = pfd[i].fd == p->out_fd;

			if (!pfd[i].revents)
				continue;
			n = read(pfd[i].fd, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				close(pfd[i].fd);
				if (is_out)
					p->out_fd = -1;
				else
					p->err_fd = -1;
				continue;
			}
			if (is_out) {
				grow_add(&out, buf, (size_t)n);
				if (p->o.record) {
					if (nchunks == achunks) {
						achunks = achunks ?
								  achunks * 2 :
								  64;
						chunks = realloc(
							chunks,
							achunks *
								sizeof(*chunks));
						cr_assert_not_null(
							chunks,
							"out of memory");
					}
					chunks[nchunks].t = it_now() - p->t0;
					chunks[nchunks].end = out.len;
					nchunks++;
				}
			} else {
				grow_add(&err, buf, (size_t)n);
			}
		}
	}
	if (p->out_fd >= 0)
		close(p->out_fd);
	if (p->err_fd >= 0)
		close(p->err_fd);
	p->out_fd = p->err_fd = -1;
	if (!killed) {
		/* Pipes closed: it is exiting.  Still bound the wait. */
		while (waitpid(p->pid, &status, WNOHANG) == 0) {
			if (it_now() >= deadline) {
				kill(p->pid, SIGKILL);
				killed = 1;
				waitpid(p->pid, &status, 0);
				break;
			}
			it_sleep(0.002);
		}
	} else {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, &status, 0);
	}
	r.wall = it_now() - p->t0;
	r.timed_out = killed;
	if (WIFEXITED(status)) {
		r.status = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		r.signaled = 1;
		r.status = 128 + WTERMSIG(status);
	}
	if (!out.data)
		grow_add(&out, "", 0);
	if (!err.data)
		grow_add(&err, "", 0);
	r.out = out.data;
	r.out_len = out.len;
	r.err = err.data;
	r.err_len = err.len;
	r.chunks = chunks;
	r.nchunks = nchunks;
	return r;
}

it_result it_hutch_v(const it_opts *o, const char *const *args)
{
	it_proc p;

	it_spawn(&p, o, args);
	return it_wait(&p);
}

static it_result hutch_va(const it_opts *o, const char *arg, va_list ap)
{
	const char *args[MAX_ARGS + 1];
	size_t n = 0;

	for (const char *a = arg; a; a = va_arg(ap, const char *)) {
		cr_assert_lt(n, MAX_ARGS, "too many arguments");
		args[n++] = a;
	}
	args[n] = NULL;
	return it_hutch_v(o, args);
}

it_result it_hutch(const char *arg, ...)
{
	va_list ap;
	it_result r;

	va_start(ap, arg);
	r = hutch_va(NULL, arg, ap);
	va_end(ap);
	return r;
}

it_result it_hutch_o(const it_opts *o, const char *arg, ...)
{
	va_list ap;
	it_result r;

	va_start(ap, arg);
	r = hutch_va(o, arg, ap);
	va_end(ap);
	return r;
}

void it_result_free(it_result *r)
{
	free(r->out);
	free(r->err);
	free(r->chunks);
	memset(r, 0, sizeof(*r));
}

size_t it_count_lines(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += s[i] == '\n';
	return n;
}

/* ---- JSON -------------------------------------------------------------- */

json_object *it_json(const char *s, size_t len)
{
	json_tokener *tok = json_tokener_new();
	json_object *o;
	size_t end;

	cr_assert_not_null(tok);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
					    JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, s, (int)len);
	cr_assert_eq(json_tokener_get_error(tok), json_tokener_success,
		     "not valid JSON (%s) in %zu bytes: %.300s",
		     json_tokener_error_desc(json_tokener_get_error(tok)), len,
		     s);
	cr_assert_not_null(o, "no JSON value in: %.300s", s);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	for (; end < len; end++)
		cr_assert(s[end] == '\n' || s[end] == ' ' || s[end] == '\t' ||
				  s[end] == '\r',
			  "trailing bytes after the JSON document: %.100s",
			  s + end);
	return o;
}

json_object *it_json_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	cr_assert(json_object_is_type(o, json_type_object),
		  "not a JSON object");
	cr_assert(json_object_object_get_ex(o, key, &v),
		  "JSON has no \"%s\": %s", key, json_object_to_json_string(o));
	return v;
}

/* ---- the engine, from outside hutch ---------------------------------- */

static size_t collect_body(char *data, size_t size, size_t nmemb, void *p)
{
	grow_add(p, data, size * nmemb);
	return size * nmemb;
}

long it_api(const char *method, const char *path, char **resp, size_t *resp_len)
{
	return it_api_json(method, path, NULL, resp, resp_len);
}

long it_api_json(const char *method, const char *path, const char *json,
		 char **resp, size_t *resp_len)
{
	const char *engine = it_engine();
	struct curl_slist *headers = NULL;
	struct growbuf body = { 0 };
	char url[2048];
	CURL *c = curl_easy_init();
	CURLcode rc;
	long status = 0;

	cr_assert_not_null(c);
	if (strncmp(engine, "unix://", 7) == 0 || engine[0] == '/') {
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH,
				 engine[0] == '/' ? engine : engine + 7);
		snprintf(url, sizeof(url), "http://localhost" API_PREFIX "%s",
			 path);
	} else if (strncmp(engine, "tcp://", 6) == 0 ||
		   strncmp(engine, "http://", 7) == 0) {
		snprintf(url, sizeof(url), "http://%s" API_PREFIX "%s",
			 strstr(engine, "://") + 3, path);
	} else {
		cr_assert_fail(
			"HUTCH_TEST_ENGINE '%s': use unix:///PATH or tcp://HOST:PORT",
			engine);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (strcmp(method, "POST") == 0 || json) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, json ? json : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE,
				 json ? (long)strlen(json) : 0L);
	}
	if (json) {
		headers = curl_slist_append(NULL,
					    "Content-Type: application/json");
		cr_assert_not_null(headers);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	rc = curl_easy_perform(c);
	cr_assert_eq(rc, CURLE_OK, "%s %s on %s: %s", method, path, engine,
		     curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(headers);
	if (!body.data)
		grow_add(&body, "", 0);
	if (resp) {
		*resp = body.data;
		if (resp_len)
			*resp_len = body.len;
	} else {
		free(body.data);
	}
	return status;
}

static json_object *api_json(const char *method, const char *path, long *status)
{
	char *body;
	size_t len;
	json_object *o = NULL;

	*status = it_api(method, path, &body, &len);
	if (*status >= 200 && *status < 300)
		o = it_json(body, len);
	free(body);
	return o;
}

int it_container_running(const char *session)
{
	char path[256];
	long status;
	json_object *o, *st, *v;
	int running;

	snprintf(path, sizeof(path), "/containers/hutch-%s/json", session);
	o = api_json("GET", path, &status);
	if (status == 404)
		return -1;
	cr_assert_eq(status, 200, "GET %s: HTTP %ld", path, status);
	running = json_object_object_get_ex(o, "State", &st) &&
		  json_object_object_get_ex(st, "Running", &v) &&
		  json_object_get_boolean(v);
	json_object_put(o);
	return running;
}

char *it_container_id(const char *session)
{
	char path[256], *id = NULL;
	long status;
	json_object *o, *v;

	snprintf(path, sizeof(path), "/containers/hutch-%s/json", session);
	o = api_json("GET", path, &status);
	if (status == 404)
		return NULL;
	cr_assert_eq(status, 200, "GET %s: HTTP %ld", path, status);
	if (json_object_object_get_ex(o, "Id", &v))
		id = strdup(json_object_get_string(v));
	json_object_put(o);
	return id;
}

/* Wait until the container is in state `want` (0 not running, -1 gone). */
static void wait_state(const char *session, int want, const char *what)
{
	double until = it_now() + 30;
	int st;

	while ((st = it_container_running(session)) != want &&
	       !(want == 0 && st == -1)) {
		cr_assert_lt(it_now(), until,
			     "container hutch-%s still %s 30 s after %s",
			     session, st == 1 ? "running" : "present", what);
		it_sleep(0.02);
	}
}

void it_container_kill(const char *session)
{
	char path[256];
	long status;

	snprintf(path, sizeof(path), "/containers/hutch-%s/kill", session);
	status = it_api("POST", path, NULL, NULL);
	cr_assert(status == 204 || status == 200, "POST %s: HTTP %ld", path,
		  status);
	wait_state(session, 0, "the kill");
}

void it_container_stop(const char *session)
{
	char path[256];
	long status;

	snprintf(path, sizeof(path), "/containers/hutch-%s/stop?t=1", session);
	status = it_api("POST", path, NULL, NULL);
	cr_assert(status == 204 || status == 200, "POST %s: HTTP %ld", path,
		  status);
	wait_state(session, 0, "the stop");
}

void it_container_remove(const char *session)
{
	char path[256];
	long status;

	snprintf(path, sizeof(path), "/containers/hutch-%s?force=1", session);
	status = it_api("DELETE", path, NULL, NULL);
	cr_assert(status == 204 || status == 200, "DELETE %s: HTTP %ld", path,
		  status);
	wait_state(session, -1, "the removal");
}

/* GET what=containers|volumes with a label filter, as parsed JSON. */
static json_object *list_labelled(const char *what, const char *label)
{
	char filter[256], path[512], *esc;
	CURL *c = curl_easy_init();
	long status;
	json_object *o;

	cr_assert_not_null(c);
	snprintf(filter, sizeof(filter), "{\"label\":[\"%s\"]}", label);
	esc = curl_easy_escape(c, filter, 0);
	cr_assert_not_null(esc);
	if (strcmp(what, "containers") == 0)
		snprintf(path, sizeof(path),
			 "/containers/json?all=1&filters=%s", esc);
	else
		snprintf(path, sizeof(path), "/volumes?filters=%s", esc);
	curl_free(esc);
	curl_easy_cleanup(c);
	o = api_json("GET", path, &status);
	cr_assert_eq(status, 200, "GET %s: HTTP %ld", path, status);
	return o;
}

static json_object *volume_array(json_object *o)
{
	json_object *arr = NULL;

	/* Docker: {"Volumes": [...] or null, "Warnings": ...}. */
	if (json_object_is_type(o, json_type_object))
		json_object_object_get_ex(o, "Volumes", &arr);
	return json_object_is_type(arr, json_type_array) ? arr : NULL;
}

int it_count_containers(const char *session)
{
	char label[128];
	json_object *o;
	int n;

	snprintf(label, sizeof(label), LABEL_SESSION "=%s", session);
	o = list_labelled("containers", label);
	cr_assert(json_object_is_type(o, json_type_array),
		  "container list is not an array");
	n = (int)json_object_array_length(o);
	json_object_put(o);
	return n;
}

/* Whether a row of top is the agent's PID 1 or a handler it keeps: the
 * command is the row's last string on both engines (Docker's CMD column;
 * Podman's one string ends with it). */
static int agents_own(json_object *row)
{
	size_t n = json_object_is_type(row, json_type_array) ?
			   json_object_array_length(row) :
			   0;
	const char *cmd = n ? json_object_get_string(
				      json_object_array_get_idx(row, n - 1)) :
			      NULL;
	const char *tail = "/hutch-agent sleep";
	size_t len = cmd ? strlen(cmd) : 0;

	return len >= strlen(tail) && !strcmp(cmd + len - strlen(tail), tail);
}

size_t it_count_processes(const char *session)
{
	char path[256];

	snprintf(path, sizeof(path), "/containers/hutch-%s/top", session);
	for (int tries = 0;; tries++) {
		char *body = NULL;
		size_t len = 0, n = 0;
		long status = it_api("GET", path, &body, &len);
		json_object *j = NULL, *procs = NULL;

		cr_assert(status == 200 || status == 500,
			  "top of hutch-%s: %ld %s", session, status, body);
		if (status == 200 && len > 0)
			j = json_tokener_parse(body);
		if (j && json_object_object_get_ex(j, "Processes", &procs) &&
		    json_object_is_type(procs, json_type_array)) {
			for (size_t i = 0; i < json_object_array_length(procs);
			     i++)
				n += !agents_own(
					json_object_array_get_idx(procs, i));
			json_object_put(j);
			free(body);
			return n;
		}
		cr_assert_lt(
			tries, 20,
			"top of hutch-%s answers no process list: %ld %.300s",
			session, status, body ? body : "");
		json_object_put(j);
		free(body);
		it_sleep(0.2);
	}
}

int it_count_volumes(const char *session)
{
	char label[128];
	json_object *o, *arr;
	int n;

	snprintf(label, sizeof(label), LABEL_SESSION "=%s", session);
	o = list_labelled("volumes", label);
	arr = volume_array(o);
	n = arr ? (int)json_object_array_length(arr) : 0;
	json_object_put(o);
	return n;
}

static void add_label_value(json_object *names, json_object *item,
			    const char *labels_key)
{
	json_object *labels, *v;

	if (json_object_object_get_ex(item, labels_key, &labels) &&
	    json_object_is_type(labels, json_type_object) &&
	    json_object_object_get_ex(labels, LABEL_SESSION, &v))
		json_object_array_add(
			names,
			json_object_new_string(json_object_get_string(v)));
}

json_object *it_all_names(void)
{
	json_object *names = json_object_new_array(), *cs, *vs, *varr, *item,
		    *n;
	long status;

	cr_assert_not_null(names);
	cs = api_json("GET", "/containers/json?all=1", &status);
	cr_assert_eq(status, 200, "GET /containers/json: HTTP %ld", status);
	for (size_t i = 0; i < json_object_array_length(cs); i++) {
		item = json_object_array_get_idx(cs, i);
		if (json_object_object_get_ex(item, "Names", &n) &&
		    json_object_is_type(n, json_type_array))
			for (size_t k = 0; k < json_object_array_length(n);
			     k++) {
				const char *s = json_object_get_string(
					json_object_array_get_idx(n, k));

				json_object_array_add(
					names,
					json_object_new_string(
						s[0] == '/' ? s + 1 : s));
			}
		add_label_value(names, item, "Labels");
	}
	json_object_put(cs);
	vs = api_json("GET", "/volumes", &status);
	cr_assert_eq(status, 200, "GET /volumes: HTTP %ld", status);
	varr = volume_array(vs);
	for (size_t i = 0; varr && i < json_object_array_length(varr); i++) {
		item = json_object_array_get_idx(varr, i);
		if (json_object_object_get_ex(item, "Name", &n))
			json_object_array_add(
				names, json_object_new_string(
					       json_object_get_string(n)));
		add_label_value(names, item, "Labels");
	}
	json_object_put(vs);
	return names;
}

/* ---- used by the leak check ------------------------------------------ */

int it_wait_other_tests(double limit)
{
	char dir[512];
	double until = it_now() + limit;
	int running;

	marker_dir(dir, sizeof(dir));
	for (;;) {
		DIR *d = opendir(dir);
		struct dirent *de;

		running = 0;
		while (d && (de = readdir(d))) {
			long pid;
			char *end;

			if (de->d_name[0] == '.')
				continue;
			pid = strtol(de->d_name, &end, 10);
			if (*end || pid <= 0 || pid == (long)getpid())
				continue;
			if (kill((pid_t)pid, 0) == 0 || errno == EPERM)
				running++;
		}
		if (d)
			closedir(d);
		if (running == 0 || it_now() >= until)
			return running;
		it_sleep(0.1);
	}
}
