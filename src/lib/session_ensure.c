/*
 * session_ensure.c - bringing a session's container up, with any number
 * of other processes doing the same for the same session
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "common.h"
#include "engine_api.h"
#include "error.h"
#include "session_internal.h"

/* How long a process that lost the creation race waits for the winner to
 * start the container before it finishes the job itself. */
#define RACE_TAKEOVER_MS 10000

/* What an inspection of the session's container found. */
struct seen {
	char state[32]; /* "running", "created", "exited"... */
	char id[80];
	int mine; /* this ensure made it (HUTCH_LABEL_CREATION) */
};

/* The container's state (see hutch__session_state), in `c` (may be NULL);
 * with `diff`, also the settings asked for that its record does not have
 * (mismatch()). */
static int state_of(hutch_session *s, struct seen *c, char *diff, size_t diffsz,
		    hutch_error **err)
{
	json_object *obj = NULL, *st, *v, *labels = NULL, *cfg;
	struct seen ignored;
	int rc;

	if (!c)
		c = &ignored;
	memset(c, 0, sizeof(*c));
	rc = hutch__api_container_inspect(s->engine, s->container, &obj,
					  "inspect the session's container",
					  err);
	if (rc < 0)
		return rc;
	if (json_object_object_get_ex(obj, "Config", &cfg) &&
	    json_object_object_get_ex(cfg, "Labels", &labels) &&
	    !hutch__label_get(labels, HUTCH_LABEL_SESSION)) {
		json_object_put(obj);
		return hutch__error_set(
			err, HUTCH_ECONFLICT,
			"container '%s' exists but was not made by hutch; remove it "
			"or pick another session name",
			s->container);
	}
	c->mine = hutch__session_made_by_me(s, labels);
	if (json_object_object_get_ex(obj, "Id", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(c->id, sizeof(c->id), "%s", json_object_get_string(v));
	if (diff)
		hutch__session_mismatch(s, labels, diff, diffsz);
	if (!s->workspace && labels) {
		/* The container's host workspace, for start()'s check. */
		const char *ws =
			hutch__label_get(labels, HUTCH_LABEL_WORKSPACE);

		if (ws && *ws == '/')
			s->workspace = strdup(ws);
	}
	rc = 0;
	snprintf(c->state, sizeof(c->state), "unknown");
	if (json_object_object_get_ex(obj, "State", &st)) {
		if (json_object_object_get_ex(st, "Status", &v) &&
		    json_object_is_type(v, json_type_string))
			snprintf(c->state, sizeof(c->state), "%s",
				 json_object_get_string(v));
		if (json_object_object_get_ex(st, "Running", &v) &&
		    json_object_get_boolean(v) &&
		    strcmp(c->state, "paused") != 0)
			rc = 1;
	}
	json_object_put(obj);
	return rc;
}

int hutch__session_state(hutch_session *s, char *state, size_t statesz,
			 hutch_error **err)
{
	struct seen c;
	int rc = state_of(s, &c, NULL, 0, err);

	if (rc >= 0)
		snprintf(state, statesz, "%s", c.state);
	return rc;
}

/* Remove the container `id` names (NULL: whatever has the session's
 * name).  By id, a container seen a moment ago is the one removed, never
 * one a racer made since under the same name. */
/* Podman on a loaded machine: a forced remove whose stop waited too long
 * for the container's exit ("cannot remove container ... as it could not
 * be stopped: timed out waiting for file .../exits/ID", HTTP 500, seen in
 * CI with 64 sessions removed at once) leaves the container stopping;
 * asked again a moment later, Podman removes it. */
#define REMOVE_TRIES 4
#define REMOVE_RETRY_MS 1000

int hutch__session_remove_container(hutch_session *s, const char *id,
				    hutch_error **err)
{
	hutch_error *lerr = NULL;
	const char *said;
	int rc;

	for (int tries = 1;; tries++) {
		rc = hutch__api_container_remove(
			s->engine, id && *id ? id : s->container, 1,
			"remove the session's container", &lerr);
		said = lerr ? hutch_error_engine_message(lerr) : NULL;
		if (rc >= 0 || rc == HUTCH_ENOTFOUND || tries == REMOVE_TRIES ||
		    !said || !strstr(said, "could not be stopped"))
			break;
		hutch_error_free(lerr);
		lerr = NULL;
		hutch__sleep_ms(REMOVE_RETRY_MS);
	}
	if (rc == HUTCH_ENOTFOUND)
		rc = 0;
	return hutch__error_pass(err, lerr, rc);
}

/* Make the volumes (or adopt them) and the container: 0 when this call
 * made the container, WAIT_FOR_MAKER, HUTCH_ECONFLICT when a racer's
 * container took the name first (unless s->ensure.refused), or an error. */
static int create(hutch_session *s, hutch_error **err)
{
	int rc;

	if (hutch__session_reset_unasked(s) < 0)
		return hutch__error_oom(err);
	s->ensure.foreign = 0;
	rc = hutch__session_ensure_volume(s, err);
	if (rc != 0)
		return rc;
	rc = hutch__session_default_user(s, err);
	if (rc == 0)
		rc = hutch__session_create_container(s, err);
	return rc;
}

/*
 * A container just made with the default 1000:1000: when the image has a
 * "sandbox" user with other ids, it is the one to use, by name; 1 when
 * the container must be made again for it.  Asked once it runs: Podman
 * takes seconds to read a file from a container that never ran.  hutch's
 * images have sandbox as 1000:1000, so they never pay for the second
 * container.
 */
static int wants_sandbox_user(hutch_session *s, hutch_error **err)
{
	json_object *obj = NULL, *v;
	char id[128] = "";
	long gid = -1, uid;

	if (!s->ensure.probe_user)
		return 0;
	s->ensure.probe_user = 0;
	/* Each image is read once per engine handle (a batch makes many
	 * sessions of one image). */
	if (hutch__api_container_find(s->engine, s->container, &obj,
				      "inspect the session's container",
				      NULL) == 1 &&
	    json_object_object_get_ex(obj, "Image", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(id, sizeof(id), "%s", json_object_get_string(v));
	json_object_put(obj);
	if (!hutch__image_user(id, &uid, &gid)) {
		uid = hutch__account_id(s, "sandbox", &gid);
		if (uid == -2) {
			hutch__image_user_drop(id);
			return 0; /* as before the probe: 1000:1000 */
		}
		hutch__image_user_keep(id, uid, gid);
	}
	if (uid < 0 || (uid == 1000 && gid == 1000))
		return 0;
	free(s->user);
	if (!(s->user = strdup("sandbox")))
		return hutch__error_oom(err);
	s->user_chosen = 1;
	return 1;
}

/* Keep *lerr as the last failure of settings taken over from another
 * call; the one before is dropped. */
static void adopted_failure(hutch_error **adopted, hutch_error **lerr)
{
	hutch_error_free(*adopted);
	*adopted = *lerr;
	*lerr = NULL;
}

/*
 * Bring the session's container up, making what is missing.  Any number of
 * processes may do this at once for one session, each with its own
 * settings; what keeps each from running with another's:
 *  - a call knows what it made by its token (HUTCH_LABEL_CREATION), never
 *    by the engine's answer (Docker's volume create succeeds for a volume
 *    that exists, a name taken a moment ago is a racer's);
 *  - a container the call did not make is compared with the settings
 *    asked for whenever it is seen, also one that beat this call's create;
 *  - a new session's record is brought up by the call that made it, the
 *    others wait for its container (up to RACE_TAKEOVER_MS), so a racer's
 *    settings that cannot work (a user its image lacks) fail that racer
 *    alone, and its cleanup never pulls volumes from under another;
 *  - a maker that takes longer than that (a loaded machine) is taken for
 *    dead and its record or container brought up by another call; when
 *    that fails, the failure is the maker's settings', not the call's:
 *    it undoes what it made and waits again (up to RACE_GIVEUP_MS), for
 *    the maker fails in turn and removes what it made;
 *  - a call that fails removes its own container and volumes only.
 *
 * It stays one function, over 100 lines: each turn of the loop looks at
 * the container once and decides from that one sight, and the reasons
 * above hold only when read with all the branches side by side.
 */
int hutch_session_ensure(hutch_session *s, int *created, hutch_error **err)
{
	unsigned long long begun = hutch__now_ms(), since = 0, waiting = 0, now;
	struct seen c;
	char diff[1024];
	int rc, made = 0, waited = 0, recreate = s->recreate;
	/* The last failure of settings this call took over, not its own. */
	hutch_error *adopted = NULL;

	if (created)
		*created = 0;
	s->new_record = 0;
	s->recreated = 0;
	s->ensure.refused = 0;
	s->ensure.made_volumes = 0;
	s->ensure.made_id[0] = '\0';
	s->ensure.settled = 0;
	s->ensure.takeover = 0;
	s->ensure.foreign = 0;
	s->ensure.held_off = 0;
	s->ensure.vol_token[0] = '\0';
	if (hutch__random_hex(s->ensure.token, sizeof(s->ensure.token)) < 0)
		return hutch__error_set(
			err, HUTCH_EFAILED,
			"session '%s': no randomness for its creation token: %s",
			s->name, strerror(errno));
	for (;;) {
		hutch_error *lerr = NULL;
		int fresh;

		now = hutch__now_ms();
		rc = state_of(s, &c, diff, sizeof(diff), &lerr);
		fresh = rc >= 0 && strcmp(c.state, "created") == 0;
		/* One that ran is in use; one that exited may be a racer's
		 * whose settings failed at its start. */
		if (rc >= 0 && (strcmp(c.state, "running") == 0 ||
				strcmp(c.state, "paused") == 0))
			s->ensure.settled = 1;
		if (rc >= 0 && !c.mine) {
			/* --recreate replaces the first container it finds
			 * that is not its own, once that one is past its
			 * creation (a racer's may be about to start). */
			if (recreate && !fresh) {
				recreate = 0;
				rc = hutch__session_remove_container(s, c.id,
								     &lerr);
				if (rc < 0)
					goto fail;
				s->recreated = 1;
				continue;
			}
			if (!recreate && diff[0]) {
				rc = hutch__session_mismatch_error(diff, &lerr);
				goto fail;
			}
		}
		if (rc == 1)
			break;
		/* Racers that keep taking the name from each other, or a
		 * container that never starts: not forever. */
		if (now - begun > RACE_GIVEUP_MS) {
			hutch_error_free(lerr);
			goto stuck;
		}
		if (rc == HUTCH_ENOTFOUND) {
			hutch_error_free(lerr);
			lerr = NULL;
			rc = create(s, &lerr);
			if (rc == WAIT_FOR_MAKER) {
				/* Bounded by our clock: a maker that died leaves
				 * its record to us. */
				if (!waiting)
					waiting = now;
				else if (now - waiting >= RACE_TAKEOVER_MS)
					s->ensure.takeover = 1;
				hutch__sleep_ms(waited++ < 20 ? 25 : 100);
				continue;
			}
			if (rc == HUTCH_ECONFLICT && !s->ensure.refused) {
				/* A racer's container took the name: compared
				 * with what we asked for above. */
				hutch_error_free(lerr);
				continue;
			}
			if (rc < 0)
				goto fail;
			made = 1;
			rc = hutch__session_prepare(s, &lerr);
			if (rc == 0)
				rc = hutch__session_start(s, &lerr);
			if (rc == 0)
				rc = hutch__session_own_workspace(s, &lerr);
			if (rc == 0 &&
			    (rc = wants_sandbox_user(s, &lerr)) == 1 &&
			    (rc = hutch__session_remove_container(
				     s, s->ensure.made_id, &lerr)) == 0)
				s->ensure.made_id[0] = '\0';
			if (rc < 0 &&
			    (s->ensure.takeover || s->ensure.foreign ||
			     adopted) &&
			    !s->new_record) {
				/* A record taken over from a maker we took
				 * for dead, or one old enough to look left
				 * but young enough that its maker may be at
				 * work (a loaded machine), whose settings
				 * failed: not ours.  A maker that was only
				 * slow removes it when it fails in turn; wait
				 * for that again, and hold off its record
				 * meanwhile (held_off), for trying it at
				 * once would only take the name from it. */
				if (s->ensure.made_id[0])
					hutch__session_remove_container(
						s, s->ensure.made_id, NULL);
				s->ensure.made_id[0] = '\0';
				made = 0;
				s->ensure.takeover = 0;
				s->ensure.foreign = 0;
				s->ensure.held_off = 1;
				waiting = now;
				adopted_failure(&adopted, &lerr);
				hutch__sleep_ms(100);
				continue;
			}
			if (rc < 0)
				goto fail;
			continue;
		}
		if (rc < 0)
			goto fail;

		/* It exists and is not running. */
		if (!since)
			since = now;
		if (fresh && !c.mine && now - since < RACE_TAKEOVER_MS) {
			/* Someone else is between create and start. */
			hutch__sleep_ms(waited++ < 20 ? 25 : 100);
			continue;
		}
		if (strcmp(c.state, "paused") == 0) {
			rc = hutch__api_container_unpause(
				s->engine, s->container,
				"unpause the session's container", &lerr);
		} else if (strcmp(c.state, "dead") == 0 ||
			   strcmp(c.state, "removing") == 0) {
			/* Broken beyond starting: by its id, so that a racer's
			 * new one of the name is not the one removed. */
			rc = hutch__session_remove_container(s, c.id, &lerr);
		} else {
			/* Not own_workspace(): this handle may not know
			 * the session's workspace, and the owner of a bind
			 * mount's directory must never be changed. */
			if (fresh)
				rc = hutch__session_install_agent(
					s, 0,
					"copy the agent into the container",
					&lerr);
			if (rc >= 0)
				rc = hutch__session_start(s, &lerr);
		}
		if (rc < 0 && fresh && !c.mine && rc != HUTCH_ECONFLICT &&
		    rc != HUTCH_ENOTFOUND) {
			/* Another call's container, never started, that we
			 * tried to start for it: its settings failed, not
			 * ours.  Its maker, if only slow, removes it. */
			since = now;
			adopted_failure(&adopted, &lerr);
			hutch__sleep_ms(100);
			continue;
		}
		if (rc < 0 && rc != HUTCH_ECONFLICT && rc != HUTCH_ENOTFOUND)
			goto fail;
		hutch_error_free(lerr);
		if (rc < 0)
			hutch__sleep_ms(50);
		continue;
fail:
		/* What this call made and could not bring up (a user the
		 * image lacks, say) is not left for the next command to trip
		 * over; what others made is theirs. */
		if (s->ensure.made_id[0]) {
			hutch__session_remove_container(s, s->ensure.made_id,
							NULL);
			s->ensure.made_id[0] = '\0';
		}
		hutch__session_forget_new_volumes(s);
		hutch_error_free(adopted);
		hutch__error_wrap(&lerr, rc, "session '%s'", s->name);
		return hutch__error_pass(err, lerr, rc);
	}
	hutch_error_free(adopted);
	if (created)
		*created = made;
	return 0;
stuck:
	if (adopted) {
		rc = hutch__error_set(
			err, HUTCH_ETIMEOUT,
			"session '%s': the container another call made did not "
			"come up within %d s: %s",
			s->name, RACE_GIVEUP_MS / 1000,
			hutch_error_message(adopted));
		hutch_error_free(adopted);
		return rc;
	}
	return hutch__error_set(
		err, HUTCH_ETIMEOUT,
		"session '%s': the container did not come up within %d s",
		s->name, RACE_GIVEUP_MS / 1000);
}
