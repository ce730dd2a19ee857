/*
 * session_internal.h - what the session files share, and what exec and
 * sync need to know about a session
 */
#ifndef HUTCH_SESSION_INTERNAL_H
#define HUTCH_SESSION_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include <hutch/session.h>

#define HUTCH_LABEL_SESSION "dev.hutch.session"
#define HUTCH_LABEL_VERSION "dev.hutch.version"
#define HUTCH_LABEL_CREATED "dev.hutch.created"
#define HUTCH_LABEL_IMAGE "dev.hutch.image"
#define HUTCH_LABEL_WORKSPACE "dev.hutch.workspace"
#define HUTCH_LABEL_ENV "dev.hutch.env"
#define HUTCH_LABEL_CONFIG "dev.hutch.config"
/* The locked-down settings (absent on sessions made before them). */
#define HUTCH_LABEL_USER "dev.hutch.user"
#define HUTCH_LABEL_MEMORY "dev.hutch.memory"
#define HUTCH_LABEL_CPUS "dev.hutch.nano-cpus"
#define HUTCH_LABEL_PIDS "dev.hutch.pids"
#define HUTCH_LABEL_CAPS "dev.hutch.cap-add"
#define HUTCH_LABEL_NETWORK "dev.hutch.network"
#define HUTCH_LABEL_READONLY "dev.hutch.read-only"
/* On the system volume ("hutch_NAME"): the session it belongs to.  Not
 * HUTCH_LABEL_SESSION, so listings do not take it for a session. */
#define HUTCH_LABEL_SYSTEM "dev.hutch.system-of"
/* A random token of the hutch_session_ensure() call that made the volume
 * or container: the engines answer a create of a volume that exists with
 * success (Docker) and a name is only a name, so this is how a call tells
 * what it made itself from what a racer made. */
#define HUTCH_LABEL_CREATION "dev.hutch.creation"
/* On the system volume: the HUTCH_LABEL_CREATION of the workspace volume
 * it was made beside.  Its record belongs to that workspace volume only:
 * one left by a call that failed (or a workspace volume removed from
 * outside) is never read as the record of the next one. */
#define HUTCH_LABEL_VOLUME_OF "dev.hutch.volume-of"

/* Which settings the caller of hutch_session_open asked for, as opposed
 * to defaults: only those are compared with a session's record. */
enum {
	HUTCH__SET_IMAGE = 1 << 0,
	HUTCH__SET_WORKSPACE = 1 << 1,
	HUTCH__SET_ENV = 1 << 2,
	HUTCH__SET_USER = 1 << 3,
	HUTCH__SET_MEMORY = 1 << 4,
	HUTCH__SET_CPUS = 1 << 5,
	HUTCH__SET_PIDS = 1 << 6,
	HUTCH__SET_CAPS = 1 << 7,
	HUTCH__SET_NETWORK = 1 << 8,
	HUTCH__SET_READONLY = 1 << 9,
};

/* ensure_volume(), create(): another call is making this new session's
 * container; wait for it (see hutch_session_ensure). */
#define WAIT_FOR_MAKER 1
/* A record without a container whose newest volume is younger than this
 * (whole seconds, as the engines stamp them) may be a racer's, which is
 * making its container right now. */
#define RECORD_SETTLE_S 4
/* How long hutch_session_ensure() tries at most; a record younger than
 * this may still have a maker at work. */
#define RACE_GIVEUP_MS 60000

/* hutch__ensure_state.made_volumes */
#define MADE_WORKSPACE_VOLUME 1
#define MADE_SYSTEM_VOLUME 2

/*
 * What one hutch_session_ensure() call knows while it runs: how it tells
 * what it made itself from what a racer made (session_ensure.c says why).
 * Reset at the start of each call; nothing outside the call reads it.
 */
struct hutch__ensure_state {
	char token[25];	       /* this call's HUTCH_LABEL_CREATION */
	char vol_token[25];    /* the workspace volume's HUTCH_LABEL_CREATION,
			       "" when it has none (older hutch) */
	char made_id[80];      /* Id of the container this call made, "" */
	int made_volumes;      /* made by this call: MADE_WORKSPACE_VOLUME,
			       MADE_SYSTEM_VOLUME */
	int refused;	       /* found another configuration, or a volume of
			       the session's name that hutch did not make */
	int settled;	       /* saw a container of the session running or
			       paused: its record is in use */
	int takeover;	       /* waited long enough for the call that made
			       the record to make its container */
	int foreign;	       /* adopted another call's record, young enough
			       that its maker may still be at work */
	int held_off;	       /* another call's settings failed here once:
			       wait for its maker before trying them again */
	int probe_user;	       /* the user is the default 1000:1000: look for
			       the image's "sandbox" once it runs */
	long vol_uid, vol_gid; /* owner the engine gave the workspace volume
				  when it made it, or -1 (ensure_volume) */
	int owned;	       /* the container being brought up got its
				  workspace owner with the agent (prepare) */
};

struct hutch_session {
	/* What the caller asked for (hutch_session_open), and what a record
	 * filled in for what it did not ask (adopt_record). */
	hutch_engine *engine; /* borrowed */
	char *name;
	char *container; /* "hutch-NAME" */
	char *volume;	 /* "hutch-NAME": workspace and first record */
	char *sysvol;	 /* "hutch_NAME": /.hutch and latest record */
	char *image;
	char *workspace; /* absolute host path, or NULL for the volume */
	char **env;
	size_t env_count;
	char *user; /* NULL: not chosen yet (the default) */
	int64_t memory, nano_cpus, pids;
	char **caps; /* capabilities added back, "NET_RAW"... */
	size_t cap_count;
	char *network;
	int read_only;
	unsigned int set; /* HUTCH__SET_* */
	int recreate;	  /* replace a container whose record differs */
	int no_create;	  /* a session that does not exist is an error,
			     not made (hutch_session_set_create) */
	int user_chosen;  /* the user was found in the image
			     (wants_sandbox_user): keep it over the record */
	struct hutch__session_secrets *secrets; /* NULL: none (secrets.c) */

	/* What this handle learnt about the engine. */
	int podman; /* the engine is Podman: 1, 0, -1 not asked */

	/* What the last ensure did (exec reads new_record). */
	int new_record; /* found no volume and made it: the session is
			   brand new, not recovered */
	int recreated;	/* replaced a container */

	struct hutch__ensure_state ensure; /* the ensure call running */

	/* The agent's channel as last found (agent_chan.c); NULL: not
	 * looked for yet. */
	struct hutch__chan *chan;
};

/* ---- the handle and its options (session.c) ---------------------------- */

int hutch__session_user_valid(const char *u);
int hutch__session_network_valid(const char *net);
/* The image of a session whose caller named none. */
const char *hutch__session_unasked_image(void);
/* "NET_RAW,SYS_PTRACE" -> the session's list; -1 when out of memory. */
int hutch__session_caps_from_text(hutch_session *s, const char *text);

/* ---- the recorded configuration (session_record.c) ------------------------ */

/* A label's string value, borrowed from `labels`, or NULL. */
const char *hutch__label_get(json_object *labels, const char *key);
/* A label's non-negative number, or -1. */
int64_t hutch__label_int(json_object *labels, const char *key);
/* The fingerprint of the configuration (HUTCH_LABEL_CONFIG). */
void hutch__session_config_hash(const hutch_session *s, char out[17]);
/* The labels recording this configuration, made at `created`. */
json_object *hutch__session_labels_new(const hutch_session *s,
				       long long created);
/* Whether this ensure made the volume or container of these labels. */
int hutch__session_made_by_me(const hutch_session *s, json_object *labels);
/* Back to the asked-for settings and the defaults; -1 out of memory. */
int hutch__session_reset_unasked(hutch_session *s);
/* The asked-for settings a record differs in, as text ("" when none). */
void hutch__session_mismatch(const hutch_session *s, json_object *labels,
			     char *out, size_t outsz);
/* HUTCH_ECONFLICT, saying what differs and what to do. */
int hutch__session_mismatch_error(const char *diff, hutch_error **err);
/* GET a volume: 0 with *out, HUTCH_ENOTFOUND, or another error. */
int hutch__session_volume_get(hutch_session *s, const char *name,
			      json_object **out, hutch_error **err);
/* The system volume's labels when it is this session's record. */
json_object *hutch__session_sysvol_labels(hutch_session *s, json_object **vol,
					  int *stale);
/* Adopt the latest record of a session whose container is gone. */
int hutch__session_adopt_volume_record(hutch_session *s, json_object *vol,
				       json_object *vlabels, int mine,
				       long long *latest, hutch_error **err);

/* ---- making a session (session_create.c) --------------------------------- */

/* Find or make the workspace volume and adopt its record: 0,
 * WAIT_FOR_MAKER, or an error. */
int hutch__session_ensure_volume(hutch_session *s, hutch_error **err);
/* Choose the user when neither the caller nor the record did. */
int hutch__session_default_user(hutch_session *s, hutch_error **err);
/* The system volume's record, then the container (its Id in made_id). */
int hutch__session_create_container(hutch_session *s, hutch_error **err);
/* Put the agent in (and with `workspace` the workspace's owner). */
int hutch__session_install_agent(hutch_session *s, int workspace,
				 const char *what, hutch_error **err);
/* Make a new container ready to start. */
int hutch__session_prepare(hutch_session *s, hutch_error **err);
/* Start the container, its host workspace checked again first. */
int hutch__session_start(hutch_session *s, hutch_error **err);
/* Give a workspace volume the session user's owner. */
int hutch__session_own_workspace(hutch_session *s, hutch_error **err);
/* Remove the volumes this ensure made (a failed call leaves nothing). */
void hutch__session_forget_new_volumes(hutch_session *s);

/* ---- bringing it up (session_ensure.c) ------------------------------------ */

/* Remove the container `id` names (NULL: the session's name); a missing
 * one is no error. */
int hutch__session_remove_container(hutch_session *s, const char *id,
				    hutch_error **err);

/* The uid and gid the session's commands run as, from the container's
 * Config.User and its /etc/passwd and /etc/group (sync.c). */
int hutch__session_owner(hutch_session *s, unsigned int *uid, unsigned int *gid,
			 hutch_error **err);
/* The uid of NAME in the container's /etc/passwd (and its group in *gid,
 * may be NULL), -1 when the file or the entry is missing, -2 when the
 * engine could not be asked (sync.c). */
long hutch__account_id(hutch_session *s, const char *name, long *gid);

/* Container name of the session.  Borrowed. */
const char *hutch__session_container(const hutch_session *s);

/* GET the container's state: 1 running, 0 exists but not running or
 * paused (its status in `state`), HUTCH_ENOTFOUND, HUTCH_ECONFLICT when the
 * name belongs to a container hutch did not make, or another error. */
int hutch__session_state(hutch_session *s, char *state, size_t statesz,
			 hutch_error **err);

/* Put this library's agent into the session's container (running or not),
 * owned as agent_blob.h says.  `what` starts the error message. */
int hutch__session_put_agent(hutch_session *s, hutch_error **err);

/* The "sandbox" account of image `id` if this process has read it: 1 and
 * *uid, *gid (-1 when the image has none).  0: the caller is to read it
 * and then call _keep with the answer, or _drop when it could not; while
 * it does, other callers for that image wait (at most a few seconds)
 * (session_image_user.c). */
int hutch__image_user(const char *id, long *uid, long *gid);
/* Remember what hutch__image_user will answer for image `id`. */
void hutch__image_user_keep(const char *id, long uid, long gid);
/* No answer for image `id` this time: a waiting caller reads it itself. */
void hutch__image_user_drop(const char *id);

/* A handle's secrets (secrets.c, secrets.h).  Accepts NULL. */
struct hutch__session_secrets;
void hutch__session_secrets_free(struct hutch__session_secrets *secrets);

#endif
