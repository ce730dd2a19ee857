/*
 * secrets.c - hutch_session_set_secrets and redacting errors
 */
#include <stdlib.h>
#include <string.h>

#include <hutch/session.h>

#include "error.h"
#include "secrets.h"
#include "utf8.h"

void hutch__session_secrets_free(struct hutch__session_secrets *sec)
{
	if (!sec)
		return;
	for (size_t i = 0; i < sec->count; i++) {
		if (sec->env[i]) {
			explicit_bzero(sec->env[i], strlen(sec->env[i]));
			free(sec->env[i]);
		}
	}
	free(sec->env);
	hutch__secrets_free(sec->set);
	free(sec);
}

const hutch__secrets *hutch__session_redaction(const hutch_session *s)
{
	return s && s->secrets ? s->secrets->set : NULL;
}

/* NAME as the shell takes it: what can follow `$` in a command. */
static size_t name_len(const char *kv)
{
	size_t n = 0;

	if (!((kv[0] >= 'A' && kv[0] <= 'Z') ||
	      (kv[0] >= 'a' && kv[0] <= 'z') || kv[0] == '_'))
		return 0;
	while ((kv[n] >= 'A' && kv[n] <= 'Z') ||
	       (kv[n] >= 'a' && kv[n] <= 'z') ||
	       (kv[n] >= '0' && kv[n] <= '9') || kv[n] == '_')
		n++;
	return kv[n] == '=' && n <= 255 ? n : 0;
}

int hutch_session_set_secrets(hutch_session *s, const char *const *secrets,
			      size_t count, hutch_error **err)
{
	struct hutch__session_secrets *sec = NULL;
	const char **values = NULL;
	size_t *lens = NULL;
	const char *why = NULL;
	int rc;

	if (!s || (count && !secrets))
		return hutch__error_set(err, HUTCH_EINVALID,
					"secrets: no session or no list");
	if (count > HUTCH_SECRETS_MAX)
		return hutch__error_set(err, HUTCH_EINVALID,
					"%zu secrets given, at most %u", count,
					HUTCH_SECRETS_MAX);
	/* Messages name a secret by its NAME, never by anything after '='. */
	for (size_t i = 0; i < count; i++) {
		size_t n = secrets[i] ? name_len(secrets[i]) : 0;

		if (!n)
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"secret %zu is not NAME=VALUE with NAME made of "
				"letters, digits and '_'",
				i + 1);
		for (size_t j = 0; j < i; j++)
			if (strncmp(secrets[j], secrets[i], n + 1) == 0)
				return hutch__error_set(
					err, HUTCH_EINVALID,
					"secret %.*s is given twice", (int)n,
					secrets[i]);
	}
	if (count == 0) {
		hutch__session_secrets_free(s->secrets);
		s->secrets = NULL;
		return 0;
	}
	sec = calloc(1, sizeof(*sec));
	values = calloc(count, sizeof(*values));
	lens = calloc(count, sizeof(*lens));
	if (sec)
		sec->env = calloc(count, sizeof(*sec->env));
	if (!sec || !values || !lens || !sec->env)
		goto oom;
	for (size_t i = 0; i < count; i++) {
		size_t n = name_len(secrets[i]);

		values[i] = secrets[i] + n + 1;
		lens[i] = strlen(values[i]);
		if (lens[i] < HUTCH_SECRET_MIN_LEN ||
		    lens[i] > HUTCH_SECRET_MAX_LEN) {
			rc = hutch__error_set(
				err, HUTCH_EINVALID,
				"secret %.*s: its value is %zu bytes; redaction "
				"needs %u to %u",
				(int)n, secrets[i], lens[i],
				HUTCH_SECRET_MIN_LEN, HUTCH_SECRET_MAX_LEN);
			goto fail;
		}
		/* The engine would change a value that is not UTF-8 (its JSON
		 * decoder puts U+FFFD in): refused, without quoting it. */
		if (hutch__utf8_valid_len(values[i], lens[i]) != lens[i]) {
			rc = hutch__error_set(
				err, HUTCH_EINVALID,
				"secret %.*s: its value is not valid UTF-8",
				(int)n, secrets[i]);
			goto fail;
		}
		sec->env[i] = strdup(secrets[i]);
		if (!sec->env[i])
			goto oom;
		sec->count++;
	}
	rc = hutch__secrets_new(&sec->set, values, lens, count, &why);
	if (rc == -2)
		goto oom;
	if (rc < 0) {
		rc = hutch__error_set(err, HUTCH_EINVALID, "secrets: %s", why);
		goto fail;
	}
	hutch__session_secrets_free(s->secrets);
	s->secrets = sec;
	free(values);
	free(lens);
	return 0;
oom:
	rc = hutch__error_oom(err);
fail:
	hutch__session_secrets_free(sec);
	free(values);
	free(lens);
	return rc;
}

static void redact_field(char **field, const hutch__secrets *set)
{
	char *clean;

	if (!*field)
		return;
	clean = hutch__redact_buffer(set, *field, strlen(*field), 0, NULL);
	if (!clean) {
		/* Out of memory: an empty text, never an unredacted one. */
		explicit_bzero(*field, strlen(*field));
		return;
	}
	free(*field);
	*field = clean;
}

void hutch__error_redact(hutch_error *err, const hutch__secrets *set)
{
	if (!err || !set)
		return;
	redact_field(&err->message, set);
	redact_field(&err->engine_message, set);
	redact_field(&err->detail, set);
}
