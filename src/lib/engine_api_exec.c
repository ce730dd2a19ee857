/*
 * engine_api_exec.c - exec and archive requests: URLs, bodies, answers
 *
 * See engine_api_exec.h.  Every function here is one request (exec
 * create, start, inspect; archive GET, PUT, HEAD) and says nothing about
 * when to make it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <archive.h>
#include <archive_entry.h>
#include <json-c/json.h>

#include "dl.h"
#include "engine_api_exec.h"
#include "error.h"

/* ---- exec ------------------------------------------------------------ */

static json_object *string_array(const char *const *v, size_t n)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < n; i++) {
		json_object *s = json_object_new_string(v[i]);

		if (!s || json_object_array_add(a, s) < 0) {
			json_object_put(s);
			json_object_put(a);
			return NULL;
		}
	}
	return a;
}

static json_object *exec_create_body(const struct hutch__exec_spec *spec)
{
	json_object *body = json_object_new_object();
	json_object *cmd = string_array(spec->argv, spec->argc);
	json_object *env = spec->env_count ?
				   string_array(spec->env, spec->env_count) :
				   NULL;

	if (!body || !cmd || (spec->env_count && !env)) {
		json_object_put(body);
		json_object_put(cmd);
		json_object_put(env);
		return NULL;
	}
	json_object_object_add(body, "AttachStdin",
			       json_object_new_boolean(spec->attach_stdin));
	json_object_object_add(body, "AttachStdout",
			       json_object_new_boolean(1));
	json_object_object_add(body, "AttachStderr",
			       json_object_new_boolean(1));
	json_object_object_add(body, "Tty", json_object_new_boolean(spec->tty));
	json_object_object_add(body, "Cmd", cmd);
	if (env)
		json_object_object_add(body, "Env", env);
	if (spec->workdir)
		json_object_object_add(body, "WorkingDir",
				       json_object_new_string(spec->workdir));
	if (spec->user)
		json_object_object_add(body, "User",
				       json_object_new_string(spec->user));
	return body;
}

/* The id from an exec create answer.  It goes into URL paths, so only
 * hex digits are accepted. */
static int exec_id(json_object *answer, char *id, size_t idsz,
		   hutch_error **err)
{
	json_object *v;
	const char *s;

	if (!answer || !json_object_object_get_ex(answer, "Id", &v) ||
	    !json_object_is_type(v, json_type_string))
		return hutch__error_set(
			err, HUTCH_EPROTO,
			"create exec: the engine gave no exec id");
	s = json_object_get_string(v);
	if (!*s || strlen(s) >= idsz ||
	    strspn(s, "0123456789abcdef") != strlen(s))
		return hutch__error_set(err, HUTCH_EPROTO,
					"create exec: unusable exec id '%.80s'",
					s);
	snprintf(id, idsz, "%s", s);
	return 0;
}

int hutch__api_exec_create(hutch_engine *e, const char *container,
			   const struct hutch__exec_spec *spec, char *id,
			   size_t idsz, const char *what, hutch_error **err)
{
	json_object *body = exec_create_body(spec), *out = NULL;
	char path[256];
	int rc;

	if (!body)
		return hutch__error_oom(err);
	snprintf(path, sizeof(path), "/containers/%s/exec", container);
	rc = hutch__engine_call(e, "POST", path, body, &out, NULL, what, err);
	json_object_put(body);
	if (rc < 0)
		return rc;
	rc = exec_id(out, id, idsz, err);
	json_object_put(out);
	return rc;
}

/* The terminal's size as the caller tells it, sent on when it changed. */
struct resizer {
	hutch_engine *e;
	const char *id;
	const struct hutch__exec_stream *stream;
	unsigned short rows, cols;
	int sent;
};

static void resize_tick(void *p)
{
	struct resizer *z = p;
	unsigned short rows = 24, cols = 80;
	hutch_error *err = NULL;

	if (z->stream->tty_size &&
	    z->stream->tty_size(&rows, &cols, z->stream->tty_payload) < 0) {
		if (z->sent)
			return; /* unknown now: keep what it had */
		rows = 24;
		cols = 80;
	}
	if (rows == 0 || cols == 0 ||
	    (z->sent && rows == z->rows && cols == z->cols))
		return;
	/* A failed resize (the exec just ended) is not the command's
	 * failure: the next change tries again. */
	if (hutch__api_exec_resize(z->e, z->id, rows, cols, "resize exec",
				   &err) == 0) {
		z->rows = rows;
		z->cols = cols;
		z->sent = 1;
	}
	hutch_error_free(err);
}

/* With stdin or a terminal: the upgraded connection (see http.h). */
static int exec_start_upgraded(hutch_engine *e, const char *id,
			       const char *path, const char *body,
			       const struct hutch__exec_stream *stream,
			       hutch__response *resp, hutch_error **err)
{
	struct resizer z = { e, id, stream, 0, 0, 0 };
	hutch__upgrade_request req = {
		.path = path,
		.body = body,
		.body_len = strlen(body),
		.sink = stream->sink,
		.sink_payload = stream->payload,
		.deadline_ms = stream->deadline_ms,
		.on_deadline = stream->on_deadline,
		.cancel = stream->cancel,
		.cancel2 = stream->cancel2,
		.input = stream->input,
		.input_len = stream->input_len,
		.input_fd = stream->input_fd,
		/* A terminal has no end of file to send (^D is the
		 * terminal's), and Docker ends a TTY exec's output stream
		 * when the input half-closes: the output would be lost. */
		.no_half_close = stream->tty,
		.tick = stream->tty ? resize_tick : NULL,
		.tick_payload = &z,
	};
	int rc = hutch__http_upgrade(e, &req, resp, err);

	if (stream->input_taken)
		*stream->input_taken = resp->input_taken;
	return rc;
}

int hutch__api_exec_start(hutch_engine *e, const char *id,
			  const struct hutch__exec_stream *stream,
			  int *streamed, const char *what, hutch_error **err)
{
	const char *body = stream->tty ? "{\"Detach\":false,\"Tty\":true}" :
					 "{\"Detach\":false,\"Tty\":false}";
	hutch__request req = {
		.method = "POST",
		.body = body,
		.body_len = strlen(body),
		.sink = stream->sink,
		.sink_payload = stream->payload,
		.deadline_ms = stream->deadline_ms,
		.on_deadline = stream->on_deadline,
		.cancel = stream->cancel,
	};
	hutch__response resp = HUTCH__RESPONSE_INIT;
	char path[192];
	int rc;

	snprintf(path, sizeof(path), "/exec/%s/start", id);
	req.path = path;
	if (stream->input_taken)
		*stream->input_taken = 0;
	if (stream->input || stream->input_fd >= 0 || stream->tty)
		rc = exec_start_upgraded(e, id, path, body, stream, &resp, err);
	else
		rc = hutch__http(e, &req, &resp, err);
	/* The status is known even when the transfer broke mid-stream. */
	*streamed = resp.status == 101 ||
		    (resp.status >= 200 && resp.status < 300);
	if (rc == 0 && !*streamed)
		rc = hutch__engine_error(err, resp.status, resp.body.data,
					 resp.body.len, what);
	hutch__response_free(&resp);
	return rc;
}

int hutch__api_exec_resize(hutch_engine *e, const char *id, unsigned short rows,
			   unsigned short cols, const char *what,
			   hutch_error **err)
{
	char path[256];

	snprintf(path, sizeof(path), "/exec/%s/resize?h=%u&w=%u", id,
		 (unsigned int)rows, (unsigned int)cols);
	return hutch__engine_call(e, "POST", path, NULL, NULL, NULL, what, err);
}

int hutch__api_exec_inspect(hutch_engine *e, const char *id,
			    struct hutch__exec_info *out, const char *what,
			    hutch_error **err)
{
	json_object *obj = NULL, *v;
	char path[192];
	int rc;

	snprintf(path, sizeof(path), "/exec/%s/json", id);
	rc = hutch__engine_call(e, "GET", path, NULL, &obj, NULL, what, err);
	if (rc < 0)
		return rc;
	memset(out, 0, sizeof(*out));
	out->running = obj && json_object_object_get_ex(obj, "Running", &v) &&
		       json_object_get_boolean(v);
	if (obj && json_object_object_get_ex(obj, "ExitCode", &v) &&
	    json_object_is_type(v, json_type_int)) {
		out->has_exit_code = 1;
		out->exit_code = json_object_get_int(v);
	}
	if (obj && json_object_object_get_ex(obj, "Pid", &v))
		out->pid = json_object_get_int(v);
	json_object_put(obj);
	return 0;
}

/* ---- a container's archive ------------------------------------------ */

/* "/containers/NAME/archive?path=PATH", newly allocated. */
static char *archive_url(const char *container, const char *path)
{
	char *esc = hutch__url_escape(path), *url = NULL;

	if (esc && asprintf(&url, "/containers/%s/archive?path=%s", container,
			    esc) < 0)
		url = NULL;
	free(esc);
	return url;
}

/* Make `req` at the archive URL of `path` in `container`: 0 when the
 * engine answered (any status, in resp), or the transfer's error. */
static int archive_call(hutch_engine *e, const char *container,
			const char *path, hutch__request *req,
			hutch__response *resp, hutch_error **err)
{
	char *url = archive_url(container, path);
	int rc;

	if (!url)
		return hutch__error_oom(err);
	req->path = url;
	rc = hutch__http(e, req, resp, err);
	req->path = NULL;
	free(url);
	return rc;
}

/* Docker says 404 both for a missing container and a missing path; its
 * message tells them apart (Podman: "no container with name or ID"). */
static int container_missing(const char *body, size_t len)
{
	char *msg = hutch__engine_error_message(body, len);
	int missing = msg && (strstr(msg, "No such container") ||
			      strstr(msg, "no container with"));

	free(msg);
	return missing;
}

int hutch__api_archive_get(hutch_engine *e, const char *container,
			   const char *path, hutch__sink_fn sink, void *payload,
			   int *complete, int *path_missing, const char *what,
			   hutch_error **err)
{
	hutch__request req = { .method = "GET",
			       .sink = sink,
			       .sink_payload = payload };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	int rc;

	*complete = 0;
	*path_missing = 0;
	rc = archive_call(e, container, path, &req, &resp, err);
	if (rc == 0)
		*complete = resp.status == 200 && !resp.sink_aborted;
	if (rc < 0 || resp.status == 200)
		goto out;
	if (resp.status == 404 &&
	    !container_missing(resp.body.data, resp.body.len)) {
		char *m = hutch__engine_error_message(resp.body.data,
						      resp.body.len);

		*path_missing = 1;
		rc = hutch__error_set_engine(err, HUTCH_ENOTFOUND, 404, m,
					     "%s: '%.200s' not found", what,
					     path);
		free(m);
		goto out;
	}
	rc = hutch__engine_error(err, resp.status, resp.body.data,
				 resp.body.len, what);
out:
	hutch__response_free(&resp);
	return rc;
}

/* The first entry of a tar in memory, when it is a regular file of at
 * most `max` bytes. */
static char *first_file(const char *tar, size_t len, size_t max)
{
	struct archive *a = archive_read_new();
	struct archive_entry *entry;
	char *data = NULL;
	la_int64_t size;

	if (!a || archive_read_support_format_tar(a) != ARCHIVE_OK ||
	    archive_read_open_memory(a, tar, len) != ARCHIVE_OK ||
	    archive_read_next_header(a, &entry) != ARCHIVE_OK ||
	    archive_entry_filetype(entry) != AE_IFREG)
		goto out;
	size = archive_entry_size(entry);
	if (size < 0 || size > (la_int64_t)max)
		goto out;
	data = calloc(1, (size_t)size + 1);
	if (data &&
	    archive_read_data(a, data, (size_t)size) != (la_ssize_t)size) {
		free(data);
		data = NULL;
	}
out:
	archive_read_free(a);
	return data;
}

char *hutch__api_archive_file(hutch_engine *e, const char *container,
			      const char *path, size_t max, long *status,
			      hutch_error **err)
{
	hutch__request req = { .method = "GET" };
	hutch__response resp = HUTCH__RESPONSE_INIT;
	char *data = NULL;

	if (hutch__dl_archive(err) < 0 ||
	    archive_call(e, container, path, &req, &resp, err) < 0)
		resp.status = 0;
	if (status)
		*status = resp.status;
	if (resp.status == 200)
		data = first_file(resp.body.data, resp.body.len, max);
	hutch__response_free(&resp);
	return data;
}
