/*
 * server.c - the MCP server loop: dispatch, workers, progress, cancellation
 *
 * Threads:
 *   main      reads stdin, answers initialize, ping and tools/list itself,
 *             checks a tools/call and hands it to a worker;
 *   workers   one per running tools/call, each with its own session handle
 *             and hutch_cancel on the shared engine;
 *   ticker    sends notifications/progress for calls that asked for them.
 * Every message goes out through send_msg(), one whole line under
 * `out_lock`, so lines from different threads never interleave.
 *
 * Lock order: srv->lock, then out_lock; never the other way round.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mcp.h"

#define LAST_LINE_MAX 160

struct call {
	struct server *srv;
	struct call *next;
	json_object *id;    /* the request's id (own reference) */
	json_object *args;  /* own reference */
	json_object *token; /* progressToken, or NULL */
	const mcp_tool *tool;
	hutch_cancel *cancel;
	int cancelled; /* by notifications/cancelled: no reply */
	uint64_t started_ms;
	uint64_t ticks; /* progress notifications sent */
	uint64_t out_bytes;
	char last[LAST_LINE_MAX]; /* the last line of output, for progress */
	size_t last_len;
	int last_done; /* `last` holds a whole line */
};

struct server {
	mcp_config cfg;
	int out_fd;
	pthread_mutex_t out_lock;
	int out_broken;

	pthread_mutex_t lock; /* everything below */
	pthread_cond_t cond;  /* a call ended; stopping */
	struct call *calls;
	unsigned ncalls;     /* workers alive; the cap counts these */
	unsigned nanswering; /* of them, past their tool: the reply is going */
	int stopping;
	const char *version;  /* negotiated revision */
	hutch_engine *engine; /* opened by the first tool call */
	int engine_used;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	va_list ap;
	char line[1024];
	int n;

	/* One write per line: stderr is shared with the workers. */
	n = snprintf(line, sizeof(line), "hutch mcp: ");
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* Nowhere left to say it. */
	}
}

/* --- output ---------------------------------------------------------------- */

/* Send one message and release it.  A failed write means the client is
 * gone: further messages are dropped, the loop ends on stdin's EOF. */
static void send_msg(struct server *srv, json_object *msg)
{
	const char *s;
	char *owned = NULL;
	size_t len, off = 0;

	if (!msg)
		return;
	s = mcp_to_wire(msg, &len, &owned);
	pthread_mutex_lock(&srv->out_lock);
	while (s && !srv->out_broken && off <= len) {
		/* The line and its newline; writev would do, but two writes
		 * under the lock are just as atomic for the reader. */
		const char *p = off < len ? s + off : "\n";
		size_t n = off < len ? len - off : 1;
		ssize_t w = write(srv->out_fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			srv->out_broken = 1;
			logf_("writing to stdout: %s; dropping messages from now on",
			      w < 0 ? strerror(errno) : "short write");
			break;
		}
		off += (size_t)w;
		if (off == len + 1)
			break;
	}
	pthread_mutex_unlock(&srv->out_lock);
	free(owned);
	json_object_put(msg);
}

static void send_error(struct server *srv, json_object *id, int code,
		       const char *m)
{
	send_msg(srv, mcp_error_reply(id, code, m));
}

/* --- the engine, lazily ----------------------------------------------------- */

/* The engine the session lives on (with several engines, the one it is
 * found on, or with `flags` HUTCH_FLEET_CREATE placed on). */
static int open_engine(const mcp_config *cfg, int flags, hutch_engine **out,
		       hutch_error **err)
{
	hutch_fleet *fleet;
	hutch_engine *e = NULL;
	int rc = hutch_fleet_open(&fleet, cfg->engine_urls, cfg->nengines, err);

	if (rc < 0)
		return rc;
	if (hutch_fleet_size(fleet) == 1)
		e = hutch_fleet_engine(fleet, 0);
	else
		rc = hutch_fleet_locate(fleet, cfg->session, flags, &e, NULL,
					err);
	if (rc == 0)
		*out = hutch_fleet_detach(fleet, e);
	hutch_fleet_free(fleet);
	return rc;
}

static int get_engine(hutch_engine **out, void *p, hutch_error **err)
{
	struct server *srv = p;
	int rc = 0;

	pthread_mutex_lock(&srv->lock);
	/* With one engine no request is made, so holding the lock is cheap;
	 * the first request is the tool's own.  With several, the first
	 * call finds or places the session; the others wait for it. */
	if (!srv->engine)
		rc = open_engine(&srv->cfg, HUTCH_FLEET_CREATE, &srv->engine,
				 err);
	if (rc == 0) {
		srv->engine_used = 1;
		*out = srv->engine;
	}
	pthread_mutex_unlock(&srv->lock);
	return rc;
}

/* --- progress -------------------------------------------------------------- */

/* exec's live output: remember how much and the last line, for the next
 * progress message.  Called from the worker. */
static void on_output(void *p, const char *data, size_t len)
{
	struct call *c = p;
	struct server *srv = c->srv;

	pthread_mutex_lock(&srv->lock);
	c->out_bytes += len;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)data[i];

		if (ch == '\n') {
			if (c->last_len)
				c->last_done = 1;
			continue;
		}
		if (c->last_done) {
			c->last_len = 0;
			c->last_done = 0;
		}
		/* Plain ASCII only: the line is cut at a byte count, and a
		 * cut multi-byte character would not be valid UTF-8. */
		if (c->last_len < sizeof(c->last) - 1)
			c->last[c->last_len++] =
				ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	pthread_mutex_unlock(&srv->lock);
}

/* Under srv->lock. */
static void send_progress(struct server *srv, struct call *c, uint64_t now)
{
	json_object *p = json_object_new_object();
	char msg[LAST_LINE_MAX + 96];
	uint64_t secs = (now - c->started_ms) / 1000u;
	int n;

	if (!p)
		return;
	c->ticks++;
	n = snprintf(msg, sizeof(msg), "%s running for %llu s",
		     mcp_tool_name(c->tool), (unsigned long long)secs);
	if (c->out_bytes)
		n += snprintf(msg + n, sizeof(msg) - (size_t)n,
			      ", %llu bytes of output",
			      (unsigned long long)c->out_bytes);
	if (c->last_len)
		snprintf(msg + n, sizeof(msg) - (size_t)n, "; last: %.*s",
			 (int)c->last_len, c->last);
	json_object_object_add(p, "progressToken", json_object_get(c->token));
	/* Must grow with every notification: the count of them does. */
	json_object_object_add(p, "progress",
			       json_object_new_int64((int64_t)c->ticks));
	/* "message" came with 2025-03-26. */
	if (mcp_version_has_annotations(srv->version))
		json_object_object_add(p, "message",
				       json_object_new_string(msg));
	send_msg(srv, mcp_notification("notifications/progress", p));
}

static void *ticker(void *p)
{
	struct server *srv = p;
	unsigned every = srv->cfg.progress_ms ? srv->cfg.progress_ms :
						MCP_DEFAULT_PROGRESS_MS;

	pthread_mutex_lock(&srv->lock);
	while (!srv->stopping) {
		struct timespec ts;
		uint64_t now;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += every / 1000u;
		ts.tv_nsec += (long)(every % 1000u) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&srv->cond, &srv->lock, &ts);
		if (srv->stopping)
			break;
		now = now_ms();
		for (struct call *c = srv->calls; c; c = c->next)
			if (c->token && !c->cancelled &&
			    now - c->started_ms >=
				    (c->ticks + 1) * (uint64_t)every)
				send_progress(srv, c, now);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

/* --- tools/call ------------------------------------------------------------ */

static void call_free(struct call *c)
{
	if (!c)
		return;
	json_object_put(c->id);
	json_object_put(c->args);
	json_object_put(c->token);
	hutch_cancel_free(c->cancel);
	free(c);
}

static void *worker(void *p)
{
	struct call *c = p;
	struct server *srv = c->srv;
	mcp_call_ctx ctx;
	json_object *result;
	int cancelled;

	memset(&ctx, 0, sizeof(ctx));
	ctx.engine = get_engine;
	ctx.server = srv;
	ctx.session = srv->cfg.session;
	ctx.sopts = &srv->cfg.sopts;
	ctx.cancel = c->cancel;
	ctx.output = on_output;
	ctx.payload = c;
	pthread_mutex_lock(&srv->lock);
	ctx.structured = mcp_version_has_structured(srv->version);
	pthread_mutex_unlock(&srv->lock);

	result = mcp_tool_call(c->tool, c->args, &ctx);
	if (!result)
		result = mcp_tool_error_result("hutch mcp: out of memory");

	/* Leave the list first: after this no progress message for the
	 * call can be sent, so none follows the reply. */
	pthread_mutex_lock(&srv->lock);
	for (struct call **pp = &srv->calls; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	cancelled = c->cancelled;
	srv->nanswering++;
	pthread_mutex_unlock(&srv->lock);

	/* A cancelled request gets no reply (the spec: the client has
	 * forgotten it). */
	if (!cancelled && result)
		send_msg(srv, mcp_result_reply(c->id, result));
	else
		json_object_put(result);

	pthread_mutex_lock(&srv->lock);
	srv->nanswering--;
	srv->ncalls--;
	pthread_cond_broadcast(&srv->cond);
	pthread_mutex_unlock(&srv->lock);
	call_free(c);
	return NULL;
}

/* The tool, its arguments (borrowed, may be NULL) and its progress token
 * (borrowed, may be NULL) of a tools/call: 0, or -1 after the error reply
 * was sent. */
static int call_params(struct server *srv, json_object *id, json_object *params,
		       const mcp_tool **tool, json_object **args,
		       json_object **token)
{
	json_object *name = NULL, *meta = NULL;
	char msg[400];

	if (!params || !json_object_object_get_ex(params, "name", &name) ||
	    !json_object_is_type(name, json_type_string)) {
		send_error(
			srv, id, MCP_INVALID_PARAMS,
			"invalid params: tools/call needs \"name\", a string");
		return -1;
	}
	*tool = mcp_tool_find(json_object_get_string(name));
	if (!*tool) {
		snprintf(msg, sizeof(msg),
			 "unknown tool '%.200s'; tools/list gives the tools",
			 json_object_get_string(name));
		send_error(srv, id, MCP_INVALID_PARAMS, msg);
		return -1;
	}
	if (json_object_object_get_ex(params, "arguments", args) &&
	    !json_object_is_type(*args, json_type_null) &&
	    !json_object_is_type(*args, json_type_object)) {
		send_error(srv, id, MCP_INVALID_PARAMS,
			   "invalid params: \"arguments\" must be an object");
		return -1;
	}
	if (!json_object_object_get_ex(params, "_meta", &meta))
		return 0;
	if (!json_object_is_type(meta, json_type_object)) {
		send_error(srv, id, MCP_INVALID_PARAMS,
			   "invalid params: \"_meta\" must be an object");
		return -1;
	}
	if (json_object_object_get_ex(meta, "progressToken", token) &&
	    !json_object_is_type(*token, json_type_string) &&
	    !json_object_is_type(*token, json_type_int)) {
		send_error(
			srv, id, MCP_INVALID_PARAMS,
			"invalid params: \"progressToken\" must be a string or "
			"an integer");
		return -1;
	}
	return 0;
}

/* The arguments checked against the tool's input schema, before anything
 * runs: a new reference ({} for none), or NULL after the reply was sent. */
static json_object *call_args(struct server *srv, json_object *id,
			      const mcp_tool *tool, json_object *args)
{
	json_object *empty = NULL;
	const char *version;
	char why[1000], msg[1200];

	pthread_mutex_lock(&srv->lock);
	version = srv->version;
	pthread_mutex_unlock(&srv->lock);
	if (!args || json_object_is_type(args, json_type_null))
		args = empty = json_object_new_object();
	if (mcp_schema_check(mcp_tool_input_schema(tool), args, "", why,
			     sizeof(why)) < 0) {
		snprintf(msg, sizeof(msg), "%s: invalid arguments: %s",
			 mcp_tool_name(tool), why);
		json_object_put(empty);
		if (mcp_version_args_as_tool_error(version))
			send_msg(srv, mcp_result_reply(
					      id, mcp_tool_error_result(msg)));
		else
			send_error(srv, id, MCP_INVALID_PARAMS, msg);
		return NULL;
	}
	return empty ? empty : json_object_get(args);
}

/* Register the call and start its worker thread, unless a call with its id
 * still runs or too many do; every refusal is answered here. */
static void call_start(struct server *srv, struct call *c)
{
	unsigned max = srv->cfg.max_calls ? srv->cfg.max_calls :
					    MCP_DEFAULT_MAX_CALLS;
	json_object *id = c->id;
	pthread_attr_t attr;
	pthread_t th;
	char msg[400];
	int rc;

	pthread_mutex_lock(&srv->lock);
	for (struct call *o = srv->calls; o; o = o->next) {
		if (mcp_id_equal(o->id, id)) {
			pthread_mutex_unlock(&srv->lock);
			send_error(
				srv, id, MCP_INVALID_REQUEST,
				"invalid request: a call with this id is still running");
			call_free(c);
			return;
		}
	}
	/* A worker whose reply the client may already hold still counts
	 * until its write returns: a client that calls again as soon as it
	 * reads a reply would be refused for a call it saw end. Wait for
	 * those (a write to the client, never a tool) rather than refuse;
	 * the threads stay bounded by the cap. */
	while (srv->ncalls >= max && srv->nanswering > 0 && !srv->stopping)
		pthread_cond_wait(&srv->cond, &srv->lock);
	if (srv->ncalls >= max) {
		pthread_mutex_unlock(&srv->lock);
		snprintf(
			msg, sizeof(msg),
			"%s: %u tool calls are already running, the most hutch runs at "
			"once; wait for one of them to finish and call again",
			mcp_tool_name(c->tool), max);
		send_msg(srv, mcp_result_reply(id, mcp_tool_error_result(msg)));
		call_free(c);
		return;
	}
	c->next = srv->calls;
	srv->calls = c;
	srv->ncalls++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create(&th, &attr, worker, c);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		srv->calls = c->next;
		srv->ncalls--;
		pthread_mutex_unlock(&srv->lock);
		snprintf(msg, sizeof(msg),
			 "cannot start a thread for the call: %s",
			 strerror(rc));
		send_error(srv, id, MCP_INTERNAL_ERROR, msg);
		call_free(c);
		return;
	}
	pthread_mutex_unlock(&srv->lock);
}

static void handle_call(struct server *srv, json_object *id,
			json_object *params)
{
	json_object *args = NULL, *token = NULL;
	const mcp_tool *tool = NULL;
	struct call *c;
	hutch_error *err = NULL;

	if (call_params(srv, id, params, &tool, &args, &token) < 0)
		return;
	if (!(args = call_args(srv, id, tool, args)))
		return;
	c = calloc(1, sizeof(*c));
	if (!c || hutch_cancel_new(&c->cancel, &err) < 0) {
		hutch_error_free(err);
		free(c);
		json_object_put(args);
		send_error(srv, id, MCP_INTERNAL_ERROR, "out of memory");
		return;
	}
	c->srv = srv;
	c->id = json_object_get(id);
	c->args = args;
	c->token = token ? json_object_get(token) : NULL;
	c->tool = tool;
	c->started_ms = now_ms();
	call_start(srv, c);
}

static void handle_cancelled(struct server *srv, json_object *params)
{
	json_object *rid = NULL;

	if (!params || !json_object_object_get_ex(params, "requestId", &rid))
		return;
	pthread_mutex_lock(&srv->lock);
	for (struct call *c = srv->calls; c; c = c->next) {
		if (mcp_id_equal(c->id, rid)) {
			/* The worker notices through the library, which
			 * kills the command's whole process tree. */
			c->cancelled = 1;
			hutch_cancel_raise(c->cancel);
			break;
		}
	}
	pthread_mutex_unlock(&srv->lock);
}

/* --- other requests -------------------------------------------------------- */

static void handle_initialize(struct server *srv, json_object *id,
			      json_object *params)
{
	json_object *v = NULL, *res, *caps, *tools, *info;
	const char *version;
	char *instr = NULL;

	if (!params ||
	    !json_object_object_get_ex(params, "protocolVersion", &v) ||
	    !json_object_is_type(v, json_type_string)) {
		send_error(
			srv, id, MCP_INVALID_PARAMS,
			"invalid params: initialize needs \"protocolVersion\", a string");
		return;
	}
	version = mcp_negotiate_version(json_object_get_string(v));
	pthread_mutex_lock(&srv->lock);
	srv->version = version;
	pthread_mutex_unlock(&srv->lock);

	res = json_object_new_object();
	caps = json_object_new_object();
	tools = json_object_new_object();
	info = json_object_new_object();
	if (!res || !caps || !tools || !info) {
		json_object_put(res);
		json_object_put(caps);
		json_object_put(tools);
		json_object_put(info);
		send_error(srv, id, MCP_INTERNAL_ERROR, "out of memory");
		return;
	}
	json_object_object_add(res, "protocolVersion",
			       json_object_new_string(version));
	json_object_object_add(tools, "listChanged",
			       json_object_new_boolean(0));
	json_object_object_add(caps, "tools", tools);
	json_object_object_add(res, "capabilities", caps);
	json_object_object_add(info, "name", json_object_new_string("hutch"));
	if (mcp_version_has_structured(version))
		json_object_object_add(info, "title",
				       json_object_new_string("hutch sandbox"));
	json_object_object_add(info, "version",
			       json_object_new_string(hutch_version()));
	json_object_object_add(res, "serverInfo", info);
	if (mcp_version_has_annotations(version) &&
	    asprintf(
		    &instr,
		    "The tools work in one persistent sandbox, the hutch session '%s': "
		    "a Linux container without network access. Its files live in "
		    "/workspace and stay between calls; file tools take paths relative "
		    "to /workspace. Use read_file, edit_file, write_file, grep, find, "
		    "list_dir, delete_file and move_file for files and exec for "
		    "everything else (building, running tests, installed tools).",
		    srv->cfg.session) >= 0) {
		json_object_object_add(res, "instructions",
				       json_object_new_string(instr));
		free(instr);
	}
	send_msg(srv, mcp_result_reply(id, res));
}

static void dispatch(struct server *srv, mcp_message *m)
{
	char msg[300];

	if (m->kind == MCP_MSG_RESPONSE)
		return; /* we send no requests; nothing to match it with */
	if (m->kind == MCP_MSG_NOTIFICATION) {
		if (strcmp(m->method, "notifications/cancelled") == 0)
			handle_cancelled(srv, m->params);
		/* notifications/initialized and anything unknown: nothing
		 * to do, and a notification is never answered. */
		return;
	}
	if (strcmp(m->method, "initialize") == 0) {
		handle_initialize(srv, m->id, m->params);
	} else if (strcmp(m->method, "ping") == 0) {
		send_msg(srv,
			 mcp_result_reply(m->id, json_object_new_object()));
	} else if (strcmp(m->method, "tools/list") == 0) {
		const char *version;

		pthread_mutex_lock(&srv->lock);
		version = srv->version;
		pthread_mutex_unlock(&srv->lock);
		send_msg(srv, mcp_result_reply(m->id, mcp_tools_list(version)));
	} else if (strcmp(m->method, "tools/call") == 0) {
		handle_call(srv, m->id, m->params);
	} else {
		snprintf(msg, sizeof(msg),
			 "method not found: '%.200s' (hutch offers tools only)",
			 m->method);
		send_error(srv, m->id, MCP_METHOD_NOT_FOUND, msg);
	}
}

/* --- the loop -------------------------------------------------------------- */

int mcp_serve(const mcp_config *cfg, int in_fd, int out_fd)
{
	struct server srv;
	mcp_reader *rd = NULL;
	pthread_t tick;
	int tick_started = 0, rc = 0, r;
	size_t max = cfg->max_message ? cfg->max_message :
					MCP_DEFAULT_MAX_MESSAGE;
	char toobig[128];

	memset(&srv, 0, sizeof(srv));
	srv.cfg = *cfg;
	srv.out_fd = out_fd;
	/* Until initialize says otherwise. */
	srv.version = mcp_protocol_versions[0];
	pthread_mutex_init(&srv.out_lock, NULL);
	pthread_mutex_init(&srv.lock, NULL);
	pthread_cond_init(&srv.cond, NULL);

	if (mcp_tools_init() < 0 ||
	    mcp_reader_new(&rd, in_fd, cfg->wake_fd, max) < 0) {
		logf_("cannot start: out of memory");
		rc = -1;
		goto out;
	}
	if (pthread_create(&tick, NULL, ticker, &srv) != 0) {
		logf_("cannot start the progress thread");
		rc = -1;
		goto out;
	}
	tick_started = 1;
	snprintf(
		toobig, sizeof(toobig),
		"invalid request: message larger than %zu bytes; it was dropped",
		max);

	for (;;) {
		const char *line;
		size_t len;
		mcp_message m;
		json_object *reply = NULL;

		r = mcp_reader_next(rd, &line, &len);
		if (r == MCP_READ_EOF || r == MCP_READ_WOKEN)
			break;
		if (r == MCP_READ_ERROR) {
			logf_("reading stdin: %s", strerror(errno));
			break;
		}
		if (r == MCP_READ_TOOBIG) {
			send_error(&srv, NULL, MCP_INVALID_REQUEST, toobig);
			continue;
		}
		if (len == 0 || strspn(line, " \t") == len)
			continue; /* a blank line is no message */
		if (mcp_message_parse(&m, line, len, &reply) < 0) {
			send_msg(&srv, reply);
			continue;
		}
		dispatch(&srv, &m);
		mcp_message_clear(&m);
	}

out:
	/* The client is gone (or we were told to stop): stop what runs, and
	 * wait, so no command is left running in the container. */
	pthread_mutex_lock(&srv.lock);
	srv.stopping = 1;
	for (struct call *c = srv.calls; c; c = c->next)
		hutch_cancel_raise(c->cancel);
	pthread_cond_broadcast(&srv.cond);
	while (srv.ncalls > 0)
		pthread_cond_wait(&srv.cond, &srv.lock);
	pthread_mutex_unlock(&srv.lock);
	if (tick_started)
		pthread_join(tick, NULL);

	if (cfg->remove_on_exit && (srv.engine_used || cfg->session_given)) {
		hutch_engine *e = NULL;
		hutch_error *err = NULL;
		int x = srv.engine ? 0 : open_engine(cfg, 0, &srv.engine, &err);

		e = srv.engine;
		if (x == 0)
			x = hutch_session_remove(e, cfg->session, &err);
		if (x < 0 && x != HUTCH_ENOTFOUND) {
			logf_("removing session '%s': %s", cfg->session,
			      hutch_error_message(err));
			rc = -1;
		}
		hutch_error_free(err);
	}
	hutch_engine_free(srv.engine);
	mcp_reader_free(rd);
	pthread_cond_destroy(&srv.cond);
	pthread_mutex_destroy(&srv.lock);
	pthread_mutex_destroy(&srv.out_lock);
	return rc;
}
