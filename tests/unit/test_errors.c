/*
 * Unit tests: engine answers become typed errors that keep the engine's
 * own message, for Docker's and Podman's body shapes.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "engine_internal.h"
#include "error.h"

struct answer {
	long status;
	const char *body;
	int code;
	const char *message; /* expected engine message */
};

/* What the two engines really answer (see ENGINES.md in the project's
 * shared notes), plus the shapes in between. */
static const struct answer answers[] = {
	/* exec create on a stopped container */
	{ 409, "{\"message\":\"Container 3f2a is not running\"}",
	  HUTCH_ENOTRUNNING, "Container 3f2a is not running" },
	{ 500,
	  "{\"cause\":\"container state improper\",\"message\":\"can only create exec "
	  "sessions on running containers: container state improper\",\"response\":500}",
	  HUTCH_ENOTRUNNING,
	  "can only create exec sessions on running containers: container state improper" },
	/* exec start after the container was killed */
	{ 404, "{\"message\":\"No such exec instance: 1234\"}", HUTCH_ENOTFOUND,
	  "No such exec instance: 1234" },
	{ 409,
	  "{\"cause\":\"container is not running\",\"message\":\"cannot exec in a "
	  "container that is not running; container is not running\",\"response\":409}",
	  HUTCH_ENOTRUNNING, NULL },
	/* container removed */
	{ 404, "{\"message\":\"No such container: hutch-x\"}", HUTCH_ENOTFOUND,
	  NULL },
	{ 404,
	  "{\"cause\":\"no such container\",\"message\":\"no container with name or ID "
	  "\\\"hutch-x\\\" found: no such container\",\"response\":404}",
	  HUTCH_ENOTFOUND, NULL },
	/* name clash on create */
	{ 409,
	  "{\"message\":\"Conflict. The container name \\\"/hutch-x\\\" is already in "
	  "use by container \\\"ab\\\".\"}",
	  HUTCH_ECONFLICT, NULL },
	{ 500,
	  "{\"cause\":\"that name is already in use\",\"message\":\"creating container "
	  "storage: the container name \\\"hutch-x\\\" is already in use\",\"response\":500}",
	  HUTCH_ECONFLICT, NULL },
	/* Podman's volume clash */
	{ 500,
	  "{\"cause\":\"volume already exists\",\"message\":\"volume with name hutch-x "
	  "already exists: volume already exists\",\"response\":500}",
	  HUTCH_ECONFLICT, NULL },
	/* plain statuses with unknown words */
	{ 400, "{\"message\":\"invalid reference format\"}", HUTCH_EINVALID,
	  "invalid reference format" },
	{ 500, "{\"message\":\"something broke\"}", HUTCH_EFAILED,
	  "something broke" },
	{ 404, "{\"message\":\"No such image: nope:latest\"}", HUTCH_ENOTFOUND,
	  NULL },
	/* not JSON at all */
	{ 502, "<html>Bad gateway</html>", HUTCH_EFAILED,
	  "<html>Bad gateway</html>" },
	{ 500, "", HUTCH_EFAILED, NULL },
	{ 500, "{\"message\":\"\"}", HUTCH_EFAILED, NULL },
};

Test(errors, both_engines_shapes_map_to_codes)
{
	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		const struct answer *a = &answers[i];
		hutch_error *err = NULL;
		int rc = hutch__engine_error(&err, a->status, a->body,
					     strlen(a->body), "create exec");

		cr_assert_eq(rc, a->code, "answer %zu: code %d, want %d", i, rc,
			     a->code);
		cr_assert_not_null(err);
		cr_assert_eq(hutch_error_code(err), a->code);
		cr_assert_eq(hutch_error_http_status(err), a->status);
		cr_assert(strncmp(hutch_error_message(err),
				  "create exec: ", 13) == 0,
			  "message '%s' lacks its context",
			  hutch_error_message(err));
		cr_assert_null(strchr(hutch_error_message(err), '\n'));
		if (a->message) {
			cr_assert_str_eq(hutch_error_engine_message(err),
					 a->message, "answer %zu", i);
			cr_assert_not_null(
				strstr(hutch_error_message(err), a->message));
		}
		hutch_error_free(err);
	}
}

Test(errors, messages_are_one_line)
{
	hutch_error *err = NULL;
	const char body[] = "{\"message\":\"line one\\nline two\\r\\n\"}";

	hutch__engine_error(&err, 500, body, strlen(body), "x");
	cr_assert_str_eq(hutch_error_message(err),
			 "x: line one line two (HTTP 500)");
	hutch_error_free(err);
}

Test(errors, wrap_adds_context_in_front)
{
	hutch_error *err = NULL;

	cr_assert_eq(hutch__error_set(&err, HUTCH_ENOTFOUND, "no %s", "thing"),
		     HUTCH_ENOTFOUND);
	cr_assert_eq(hutch__error_wrap(&err, HUTCH_EFAILED, "session '%s'",
				       "s1"),
		     HUTCH_ENOTFOUND);
	cr_assert_str_eq(hutch_error_message(err), "session 's1': no thing");
	/* a second layer naming the same session does not say it twice */
	hutch__error_wrap(&err, HUTCH_EFAILED, "session '%s'", "s1");
	cr_assert_str_eq(hutch_error_message(err), "session 's1': no thing");
	/* another context, or one that is only a prefix of it, is added */
	hutch__error_wrap(&err, HUTCH_EFAILED, "session 's'");
	cr_assert_str_eq(hutch_error_message(err),
			 "session 's': session 's1': no thing");
	hutch_error_free(err);
	/* NULL error slots are allowed everywhere */
	cr_assert_eq(hutch__error_set(NULL, HUTCH_EINVALID, "ignored"),
		     HUTCH_EINVALID);
	cr_assert_eq(hutch__error_wrap(NULL, HUTCH_EINVALID, "ignored"),
		     HUTCH_EINVALID);
	hutch_error_free(NULL);
}

Test(errors, oom_error_is_static_and_safe_to_free)
{
	hutch_error *err = NULL;

	cr_assert_eq(hutch__error_oom(&err), HUTCH_ENOMEM);
	cr_assert_str_eq(hutch_error_message(err), "out of memory");
	hutch__error_wrap(&err, HUTCH_ENOMEM, "context");
	cr_assert_str_eq(hutch_error_message(err), "out of memory");
	hutch_error_free(err);
}
