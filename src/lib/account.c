/*
 * account.c - the session user, as the container knows it
 *
 * The uid and gid that sync-in writes into every tar header are the
 * session user's; hutch__container_owner is the one place that decides
 * them.
 *
 * Both engines honour the numeric uid/gid of the headers on PUT (Docker
 * 20.10 and Podman 4.3.1, measured).  Their own "copyUIDGID=1" is not
 * used: Docker 20.10 resolves a named user with the host's getent and
 * fails ("getent unable to find entry"), and with no user it keeps the
 * headers anyway; Podman chowns to the container's user.  So hutch
 * resolves the user itself, from the container's Config.User and its
 * /etc/passwd and /etc/group, and writes the numbers.  The session user
 * is the one hutch created the container with (session.c: the image's
 * "sandbox" user, 1000:1000, a bind mount's owner, or --user).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "../shared/agent_protocol.h"
#include "account.h"
#include "engine_api.h"
#include "engine_api_exec.h"
#include "engine_internal.h"
#include "error.h"
#include "session_internal.h"

/* Largest /etc/passwd or /etc/group read to resolve the session user. */
#define MAX_ACCOUNT_DB (1024u * 1024u)

/* Look NAME (or a numeric id) up in a passwd or group file; `field` 2 is
 * the id, 3 the passwd entry's group.  -1 when it is not there. */
static long account_lookup(const char *db, const char *name, int field)
{
	const char *line = db;

	while (line && *line) {
		const char *end = strchr(line, '\n'), *f[5] = { line };
		size_t len = end ? (size_t)(end - line) : strlen(line);
		int k = 1;

		for (size_t i = 0; i < len && k < 5; i++)
			if (line[i] == ':')
				f[k++] = line + i + 1;
		if (k >= 4 && (size_t)(f[1] - f[0] - 1) == strlen(name) &&
		    strncmp(f[0], name, strlen(name)) == 0) {
			char *e;
			long v = strtol(f[field], &e, 10);

			if (e != f[field] && *e == ':' && v >= 0)
				return v;
		}
		line = end ? end + 1 : NULL;
	}
	return -1;
}

/* The group of the passwd entry whose uid is `uid`, -1 when none. */
static long group_of_uid(const char *passwd, long uid)
{
	const char *line = passwd;
	char id[32];
	long g = -1;

	snprintf(id, sizeof(id), "%ld", uid);
	while (g < 0 && line && *line) {
		const char *f2 = strchr(line, ':');

		f2 = f2 ? strchr(f2 + 1, ':') : NULL;
		if (f2 && strncmp(f2 + 1, id, strlen(id)) == 0 &&
		    f2[1 + strlen(id)] == ':')
			g = strtol(f2 + 2 + strlen(id), NULL, 10);
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return g;
}

static char *account_db(hutch_engine *e, const char *container,
			const char *path, long *status)
{
	return hutch__api_archive_file(e, container, path, MAX_ACCOUNT_DB,
				       status, NULL);
}

/* Config.User of the container, "" when it runs as the engine's default
 * (root). */
static int config_user(hutch_engine *e, const char *container, char *user,
		       size_t usersz, hutch_error **err)
{
	json_object *obj = NULL, *cfg, *v;
	int rc;

	rc = hutch__api_container_inspect(
		e, container, &obj, "inspect the session's container", err);
	if (rc < 0)
		return rc;
	user[0] = '\0';
	if (json_object_object_get_ex(obj, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "User", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(user, usersz, "%s", json_object_get_string(v));
	json_object_put(obj);
	return 0;
}

int hutch__container_owner(hutch_engine *e, const char *container,
			   unsigned int *uid, unsigned int *gid,
			   hutch_error **err)
{
	char user[256], *grp, *passwd = NULL, *group = NULL, *end;
	long u = 0, g = -1;
	int rc;

	if ((rc = config_user(e, container, user, sizeof(user), err)) < 0)
		return rc;
	*uid = 0;
	*gid = 0;
	if (!user[0])
		return 0; /* the engine runs as root */
	grp = strchr(user, ':');
	if (grp)
		*grp++ = '\0';
	u = strtol(user, &end, 10);
	if (!user[0] || *end || u < 0) {
		passwd = account_db(e, container, "/etc/passwd", NULL);
		u = passwd ? account_lookup(passwd, user, 2) : -1;
		if (u < 0) {
			free(passwd);
			return hutch__error_set(
				err, HUTCH_EFAILED,
				"session user '%.100s' is not in the container's /etc/passwd",
				user);
		}
	}
	if (grp && *grp) {
		g = strtol(grp, &end, 10);
		if (*end || g < 0) {
			group = account_db(e, container, "/etc/group", NULL);
			g = group ? account_lookup(group, grp, 2) : -1;
			free(group);
			if (g < 0) {
				free(passwd);
				return hutch__error_set(
					err, HUTCH_EFAILED,
					"session group '%.100s' is not in the container's /etc/group",
					grp);
			}
		}
	} else {
		/* A user without a group gets its passwd entry's group, as
		 * the engines do for processes; 0 when there is none. */
		if (!passwd)
			passwd = account_db(e, container, "/etc/passwd", NULL);
		if (passwd) {
			g = account_lookup(passwd, user, 3);
			/* Find the entry by uid when the user was numeric. */
			if (g < 0)
				g = group_of_uid(passwd, u);
		}
		if (g < 0)
			g = 0;
	}
	free(passwd);
	*uid = (unsigned int)u;
	*gid = (unsigned int)g;
	return 0;
}

long hutch__container_account_id(hutch_engine *e, const char *container,
				 const char *name, long *gid)
{
	long status = 0;
	char *passwd = account_db(e, container, "/etc/passwd", &status);
	long u = passwd ? account_lookup(passwd, name, 2) : -1;

	if (gid)
		*gid = passwd ? account_lookup(passwd, name, 3) : -1;
	free(passwd);
	/* Not read, and not because it is missing: nobody knows. */
	return !passwd && status != 404 && status != 200 ? -2 : u;
}

/* ---- a command's own user (hutch_exec_options.user) ------------------ */

/* The largest id the engines take: (uid_t)-1 means "no change". */
#define MAX_ID 4294967294UL

/* A number in NAME's place: 1 with *id, 0 when it is a name. */
static int numeric_id(const char *s, unsigned long *id)
{
	char *end;

	if (!*s || strspn(s, "0123456789") != strlen(s))
		return 0;
	errno = 0;
	*id = strtoul(s, &end, 10);
	/* Too large: read as a name, which no file has. */
	return errno == 0 && *id <= MAX_ID;
}

int hutch__user_spec_valid(const char *spec)
{
	const char *colon = strchr(spec, ':');
	size_t n = strlen(spec), u = colon ? (size_t)(colon - spec) : n;

	/* NAME or NAME:GROUP, each 1..64 of the characters passwd names
	 * use, no second ':' (it would be a passwd field separator), not
	 * an option ('-'). */
	return u > 0 && u <= 64 &&
	       (!colon || (n - u - 1 > 0 && n - u - 1 <= 64)) &&
	       spec[0] != '-' && (!colon || colon[1] != '-') &&
	       strspn(spec, "abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:") == n &&
	       (!colon || !strchr(colon + 1, ':'));
}

/*
 * HUTCH_AGENT_OWNER_UID owns /.hutch and the agent in every session
 * (agent_blob.c), and that ownership is all that keeps a command from
 * renaming the agent away and putting its own in its place: the session
 * has no CAP_DAC_OVERRIDE or CAP_FOWNER, so only the owner of the
 * directory may write it.  A command running as that uid would be the
 * owner.  It is checked on the number, after any name was looked up, so
 * no name the sandbox writes into /etc/passwd leads there; and the engine
 * gets the number, so nothing looks the name up again afterwards.
 */
static int reserved(const char *spec, unsigned long uid, hutch_error **err)
{
	if (uid != HUTCH_AGENT_OWNER_UID)
		return 0;
	return hutch__error_set(
		err, HUTCH_EINVALID,
		"user '%.140s' is uid %u, which hutch reserves for the owner of "
		"its agent: a command may not run as it",
		spec, HUTCH_AGENT_OWNER_UID);
}

int hutch__container_user(hutch_engine *e, const char *container,
			  const char *spec, int running, unsigned int *uid,
			  unsigned int *gid, hutch_error **err)
{
	char user[72], *grp;
	unsigned long u, g = 0;
	long status = 0, v;
	char *passwd = NULL, *group = NULL;
	int rc = 0, have_g = 0;

	if (!hutch__user_spec_valid(spec))
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"invalid user '%.140s': expected USER or USER:GROUP, names "
			"or numbers",
			spec);
	snprintf(user, sizeof(user), "%s", spec);
	grp = strchr(user, ':');
	if (grp)
		*grp++ = '\0';
	if (grp && numeric_id(grp, &g))
		have_g = 1;
	if (numeric_id(user, &u)) {
		/* Refused before anything is read: the number is final. */
		if ((rc = reserved(spec, u, err)) < 0)
			return rc;
		if (have_g)
			goto done;
	}
	/* A name, or a uid whose group comes from its passwd entry: the
	 * container's own file (the sandbox may have changed it; what it
	 * says only decides which uid its own command runs as, and that uid
	 * is checked below whatever the file says). */
	passwd = account_db(e, container, "/etc/passwd", &status);
	if (!passwd && status != 200 && status != 404)
		return hutch__error_set(
			err, HUTCH_EFAILED,
			"cannot read the session's /etc/passwd (engine answered %ld)",
			status);
	/* The engine says 404 for a missing container as for a missing
	 * file: unless the caller knows it runs, let it make sure. */
	if (status == 404 && !running)
		return hutch__error_set(
			err, HUTCH_ENOTFOUND,
			"no /etc/passwd in the session's container, or no container");
	if (!numeric_id(user, &u)) {
		v = passwd ? account_lookup(passwd, user, 2) : -1;
		if (v < 0 || (unsigned long)v > MAX_ID) {
			rc = hutch__error_set(
				err, HUTCH_EINVALID,
				"no user '%.64s' in the session's /etc/passwd",
				user);
			goto out;
		}
		u = (unsigned long)v;
		if ((rc = reserved(spec, u, err)) < 0)
			goto out;
		if (!grp) {
			v = account_lookup(passwd, user, 3);
			g = v >= 0 && (unsigned long)v <= MAX_ID ?
				    (unsigned long)v :
				    0;
			have_g = 1;
		}
	}
	if (!grp && !have_g) {
		/* A uid alone: its passwd entry's group, as the engines do;
		 * 0 when it has none (the engines' default too). */
		v = passwd ? group_of_uid(passwd, (long)u) : -1;
		g = v >= 0 && (unsigned long)v <= MAX_ID ? (unsigned long)v : 0;
		have_g = 1;
	}
	if (!have_g) {
		group = account_db(e, container, "/etc/group", &status);
		v = group ? account_lookup(group, grp, 2) : -1;
		if (v < 0 || (unsigned long)v > MAX_ID) {
			rc = hutch__error_set(
				err, HUTCH_EINVALID,
				"no group '%.64s' in the session's /etc/group",
				grp);
			goto out;
		}
		g = (unsigned long)v;
	}
done:
	*uid = (unsigned int)u;
	*gid = (unsigned int)g;
out:
	free(passwd);
	free(group);
	return rc;
}

int hutch__session_owner(hutch_session *s, unsigned int *uid, unsigned int *gid,
			 hutch_error **err)
{
	return hutch__container_owner(hutch_session_engine(s),
				      hutch__session_container(s), uid, gid,
				      err);
}

long hutch__account_id(hutch_session *s, const char *name, long *gid)
{
	return hutch__container_account_id(hutch_session_engine(s),
					   hutch__session_container(s), name,
					   gid);
}
