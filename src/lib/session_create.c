/*
 * session_create.c - making a session: its volumes, its locked-down
 * container, the agent inside, and the workspace's owner
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <archive.h>
#include <archive_entry.h>
#include <json-c/json.h>

#include "agent_blob.h"
#include "beneath.h"
#include "common.h"
#include "dl.h"
#include "engine_api.h"
#include "error.h"
#include "session_internal.h"

/* A volume of the session's name that hutch did not make: never used,
 * never removed. */
static int not_made_by_hutch(hutch_error **err, const char *volume)
{
	return hutch__error_set(
		err, HUTCH_ECONFLICT,
		"volume '%s' exists but was not made by hutch; remove it or pick "
		"another session name",
		volume);
}

/* Make the system volume hold this configuration as its record: the one
 * a container removed from outside comes back with.  A record for another
 * configuration (before --recreate, from an older hutch, or made beside a
 * workspace volume that is gone) is replaced; the volume only holds the
 * agent, which is put there again anyway, and the engines refuse to
 * remove it while a container uses it. */
static int ensure_sysvol(hutch_session *s, hutch_error **err)
{
	json_object *vol = NULL, *labels;
	char hash[17], diff[1024];
	const char *had;
	int rc, stale;

	hutch__session_config_hash(s, hash);
	labels = hutch__session_sysvol_labels(s, &vol, &stale);
	had = hutch__label_get(labels, HUTCH_LABEL_CONFIG);
	if (had && strcmp(had, hash) == 0) {
		json_object_put(vol);
		return 0;
	}
	json_object_put(vol);
	if (vol && !labels && !stale) {
		s->ensure.refused = 1;
		return not_made_by_hutch(err, s->sysvol);
	}
	if (vol) {
		rc = hutch__api_volume_remove(
			s->engine, s->sysvol,
			"replace the session's system volume", err);
		if (rc < 0 && rc != HUTCH_ENOTFOUND)
			return rc;
	}
	labels = hutch__session_labels_new(s, (long long)time(NULL));
	if (!labels)
		return hutch__error_oom(err);
	json_object_object_add(labels, HUTCH_LABEL_SYSTEM,
			       json_object_new_string(s->name));
	if (s->ensure.vol_token[0])
		json_object_object_add(
			labels, HUTCH_LABEL_VOLUME_OF,
			json_object_new_string(s->ensure.vol_token));
	rc = hutch__api_volume_create(s->engine, s->sysvol, labels, NULL,
				      "create the session's system volume",
				      err);
	json_object_put(labels);
	if (rc < 0 && rc != HUTCH_ECONFLICT)
		return rc;
	if (rc == HUTCH_ECONFLICT && err) {
		hutch_error_free(*err);
		*err = NULL;
	}
	/* Success does not say we made it: Docker answers a create of a
	 * volume that exists with success.  Its labels say who did. */
	labels = hutch__session_sysvol_labels(s, &vol, &stale);
	had = hutch__label_get(labels, HUTCH_LABEL_CONFIG);
	rc = 0;
	if (labels && hutch__session_made_by_me(s, labels)) {
		s->ensure.made_volumes |= MADE_SYSTEM_VOLUME;
	} else if (!had || strcmp(had, hash) != 0) {
		/* A racer recorded another configuration meanwhile (an
		 * unlabelled one: an engine made it for a container). */
		s->ensure.refused = 1;
		diff[0] = '\0';
		if (labels)
			hutch__session_mismatch(s, labels, diff, sizeof(diff));
		if (!labels && !stale)
			rc = not_made_by_hutch(err, s->sysvol);
		else if (diff[0])
			rc = hutch__session_mismatch_error(diff, err);
		else
			rc = hutch__error_set(
				err, HUTCH_ECONFLICT,
				"another hutch recorded other settings for it at the same "
				"time; try again");
	}
	json_object_put(vol);
	return rc;
}

/* 1 on Podman, 0 on Docker: only Podman serves its own API beside the
 * Docker one (GET /version costs Podman seconds; this does not). */
static int is_podman(hutch_session *s, hutch_error **err)
{
	int rc;

	if (s->podman >= 0)
		return s->podman;
	rc = hutch__api_is_podman(s->engine, err);
	if (rc >= 0)
		s->podman = rc;
	return rc;
}

/*
 * The owner a new workspace volume can be given when it is made, as
 * "uid=U,gid=G" in *opt: Podman's local driver takes it (Docker's does not
 * without a device to mount), and keeps it at the first start, which saves
 * the archive request own_workspace() would make.  Only for a volume that
 * is the workspace and a user known by number: the default, or "U:G".
 * 1 when there is one, 0 when not, or an error.
 */
static int volume_owner_option(hutch_session *s, char *opt, size_t optsz,
			       hutch_error **err)
{
	const char *user = s->user ? s->user : HUTCH_SESSION_DEFAULT_USER;
	unsigned long uid, gid;
	int end = 0, podman;

	if (s->workspace ||
	    sscanf(user, "%9lu:%9lu%n", &uid, &gid, &end) != 2 || user[end] ||
	    !isdigit((unsigned char)user[0]) ||
	    !isdigit((unsigned char)strchr(user, ':')[1]))
		return 0;
	podman = is_podman(s, err);
	if (podman <= 0)
		return podman;
	snprintf(opt, optsz, "uid=%lu,gid=%lu", uid, gid);
	return 1;
}

/* The owner the engine says it gave the volume when it made it. */
static void volume_owner_read(hutch_session *s, json_object *vol)
{
	json_object *opts = NULL, *u = NULL, *g = NULL;
	char *end;

	s->ensure.vol_uid = s->ensure.vol_gid = -1;
	if (!json_object_object_get_ex(vol, "Options", &opts) ||
	    !json_object_object_get_ex(opts, "UID", &u) ||
	    !json_object_object_get_ex(opts, "GID", &g) ||
	    !json_object_is_type(u, json_type_string) ||
	    !json_object_is_type(g, json_type_string))
		return;
	s->ensure.vol_uid = strtol(json_object_get_string(u), &end, 10);
	if (*end || end == json_object_get_string(u) || s->ensure.vol_uid < 0) {
		s->ensure.vol_uid = -1;
		return;
	}
	s->ensure.vol_gid = strtol(json_object_get_string(g), &end, 10);
	if (*end || end == json_object_get_string(g) || s->ensure.vol_gid < 0)
		s->ensure.vol_uid = s->ensure.vol_gid = -1;
}

/* Sessions named in "no such session" errors: enough to spot a typo. */
#define NO_SESSION_NAMES 8

/* "no such session", with the sessions the engine has (their names when
 * there are few); the caller's context names the session.
 * HUTCH_ENOTFOUND. */
static int no_session(hutch_session *s, hutch_error **err)
{
	hutch_session_info *all = NULL;
	size_t n = 0, len = 0;
	char names[NO_SESSION_NAMES * 66] = "";

	if (hutch_session_list(&all, &n, s->engine, NULL) < 0)
		return hutch__error_set(err, HUTCH_ENOTFOUND,
					"no such session");
	/* The names come from the engine: never trusted to fit. */
	for (size_t i = 0; i < n && n <= NO_SESSION_NAMES; i++) {
		int w = snprintf(names + len, sizeof(names) - len, "%s%.63s",
				 i ? ", " : "", all[i].name);

		if (w < 0 || (size_t)w >= sizeof(names) - len)
			break;
		len += (size_t)w;
	}
	hutch_session_info_array_free(all, n);
	if (n == 0)
		return hutch__error_set(err, HUTCH_ENOTFOUND,
					"no such session (there are none; "
					"hutch up %s makes it)",
					s->name);
	if (n > NO_SESSION_NAMES)
		return hutch__error_set(err, HUTCH_ENOTFOUND,
					"no such session (there are %zu: "
					"hutch sessions lists them)",
					n);
	return hutch__error_set(err, HUTCH_ENOTFOUND,
				"no such session (there are: %s)", names);
}

static int image_missing(hutch_session *s, hutch_error **err)
{
	return hutch__error_set(
		err, HUTCH_ENOTFOUND,
		"image '%s' is not on the engine (build the default one with "
		"hutch-image-offline, or choose another with --image or "
		"HUTCH_IMAGE)",
		s->image);
}

/*
 * Find or make the session's volume, and adopt its record.  0, or
 * WAIT_FOR_MAKER when another call made the record a moment ago and has
 * not made its container yet, or an error.
 */
int hutch__session_ensure_volume(hutch_session *s, hutch_error **err)
{
	json_object *vol = NULL, *labels;
	char owner[64];
	long long latest, age;
	int rc, attempt, mine;

	for (attempt = 0; attempt < 2; attempt++) {
		hutch_error *lerr = NULL;

		rc = hutch__api_volume_inspect(s->engine, s->volume, &vol,
					       "session volume", &lerr);
		if (rc == 0) {
			labels = NULL;
			json_object_object_get_ex(vol, "Labels", &labels);
			if (!hutch__label_get(labels, HUTCH_LABEL_SESSION)) {
				json_object_put(vol);
				s->ensure.refused = 1;
				return not_made_by_hutch(err, s->volume);
			}
			/* Ours only when it carries this call's token: the
			 * create below succeeds on Docker for a volume a racer
			 * made, and fails on Podman, for the same race. */
			mine = hutch__session_made_by_me(s, labels);
			snprintf(
				s->ensure.vol_token,
				sizeof(s->ensure.vol_token), "%s",
				hutch__label_get(labels, HUTCH_LABEL_CREATION) ?
					hutch__label_get(labels,
							 HUTCH_LABEL_CREATION) :
					"");
			if (mine) {
				s->new_record = 1;
				s->ensure.made_volumes |= MADE_WORKSPACE_VOLUME;
			}
			volume_owner_read(s, vol);
			rc = hutch__session_adopt_volume_record(
				s, vol, labels, mine, &latest, err);
			/*
			 * A racer's record with no container yet: the racer
			 * makes it.  Making one from that record ourselves
			 * would carry settings of its that may fail (a user
			 * its image lacks), and its cleanup would remove the
			 * volumes under us.  A record in use before (settled)
			 * or left by a call that died (takeover) is ours to
			 * bring back.  Its maker is at most a few requests
			 * from its next step: a record whose last volume is
			 * older than RECORD_SETTLE_S was most likely left,
			 * not being made (a container removed from outside).
			 * Only most likely: a loaded machine can hold a maker
			 * up longer, so until such a record is older than any
			 * call runs (RACE_GIVEUP_MS) it is `foreign`, and its
			 * settings failing here are its maker's, not this
			 * call's (hutch_session_ensure).  A clock ahead of
			 * ours makes it look young: the wait is bounded by our
			 * own clock too.
			 */
			age = (long long)time(NULL) - latest;
			if (rc == 0 && !mine && !s->ensure.settled &&
			    !s->ensure.takeover && latest) {
				if (age < RECORD_SETTLE_S || s->ensure.held_off)
					rc = WAIT_FOR_MAKER;
				else if (age <= RACE_GIVEUP_MS / 1000)
					s->ensure.foreign = 1;
			}
			json_object_put(vol);
			return rc;
		}
		if (rc != HUTCH_ENOTFOUND)
			return hutch__error_pass(err, lerr, rc);
		hutch_error_free(lerr);

		/* No workspace volume: the session does not exist.  A caller
		 * that may not create one says which do instead. */
		if (s->no_create)
			return no_session(s, err);

		/* Nothing is made for an image the engine does not have:
		 * a record naming it would fail whoever adopts it. */
		rc = hutch_engine_image_exists(s->engine, s->image, err);
		if (rc == 0)
			return image_missing(s, err);
		if (rc < 0)
			return rc;

		rc = volume_owner_option(s, owner, sizeof(owner), err);
		if (rc < 0)
			return rc;
		labels = hutch__session_labels_new(s, (long long)time(NULL));
		if (!labels)
			return hutch__error_oom(err);
		lerr = NULL;
		rc = hutch__api_volume_create(s->engine, s->volume, labels,
					      rc == 1 ? owner : NULL,
					      "create session volume", &lerr);
		json_object_put(labels);
		/* Made, or a racer's: the GET above tells which. */
		if (rc == 0 || rc == HUTCH_ECONFLICT) {
			hutch_error_free(lerr);
			continue;
		}
		return hutch__error_pass(err, lerr, rc);
	}
	return hutch__error_set(
		err, HUTCH_EFAILED,
		"session volume '%s' vanished while it was created", s->volume);
}

/*
 * The container: locked down unless the caller chose otherwise.  Each
 * setting below closes one way out of, or around, the sandbox; the README's
 * threat model says what stays open.  `bind` holds the text of a host bind
 * (freed by the caller); `sp` points into `s` and `bind`.
 */
static int container_spec(const hutch_session *s, json_object *labels,
			  struct hutch__container_spec *sp, char **bind)
{
	/* The agent sleeps forever as the entry point: it is in the
	 * container whatever the image holds (no shell, no sleep needed).
	 * Its path has room for the channel's "run" agents' names
	 * (HUTCH_AGENT_PID1_PATH). */
	static const char *const entry[] = { HUTCH_AGENT_PID1_PATH,
					     HUTCH_AGENT_CMD_SLEEP };
	/*
	 * A host directory is mounted nosuid,nodev where the engine takes it:
	 * Podman does in Binds ("SRC:DST:OPTIONS", so not for a path with a
	 * ':'); Docker 20.10 takes no such option at all.  That only holds
	 * inside the container, where no-new-privileges already ignores
	 * set-id bits: the host runs a file through its own mount.  What keeps
	 * set-id files and device nodes out of a host directory is the
	 * agent's seccomp filter (src/agent/seccomp.c).
	 */
	int binds = s->workspace && s->podman == 1 &&
		    !strchr(s->workspace, ':');

	memset(sp, 0, sizeof(*sp));
	*bind = NULL;
	if (binds &&
	    asprintf(bind, "%s:/workspace:rw,nosuid,nodev", s->workspace) < 0) {
		*bind = NULL;
		return -1;
	}
	sp->image = s->image;
	sp->entrypoint = entry;
	sp->entrypoint_count = HUTCH_ARRAY_SIZE(entry);
	sp->empty_cmd = 1;
	sp->working_dir = "/workspace";
	/* Every exec runs as this user unless it says otherwise.  Root is
	 * uid 0 whether or not the image has a passwd file. */
	sp->user = strcmp(s->user, "root") == 0 ? "0:0" : s->user;
	sp->env = s->env;
	sp->env_count = s->env_count;
	sp->labels = labels;
	if (binds)
		sp->bind = *bind;
	else
		sp->mounts[sp->mount_count++] = (struct hutch__mount){
			s->workspace ? "bind" : "volume",
			s->workspace ? s->workspace : s->volume, "/workspace"
		};
	/* The agent and the file tools' staging directory live in a volume
	 * of their own: the archive API writes into volumes even when the
	 * root filesystem is read-only (Docker refuses the root then), and
	 * a tmpfs would not do (Docker's archive PUT lands beneath it). */
	sp->mounts[sp->mount_count++] =
		(struct hutch__mount){ "volume", s->sysvol, HUTCH_AGENT_DIR };
	sp->network_mode = s->network;
	sp->network_disabled = strcmp(s->network, "none") == 0;
	sp->stop_timeout = 2;
	sp->lockdown = 1;
	/* No engine init: hutch's agent is PID 1.  It reaps orphans as an
	 * init does, and unlike tini or catatonit it does not pass on the
	 * SIGTERM that a command running as the same user sends to PID 1,
	 * which would stop the container.  The kernel already keeps SIGKILL
	 * and SIGSTOP from inside away from a namespace's init. */
	sp->init = 0;
	/* No capabilities at all, not even the engines' defaults (CHOWN,
	 * DAC_OVERRIDE, SETUID, NET_RAW...), unless given back by name; and
	 * no-new-privileges, so setuid binaries and file capabilities in the
	 * image cannot raise a command above the user it started as. */
	sp->cap_drop_all = 1;
	sp->cap_add = s->caps;
	sp->cap_add_count = s->cap_count;
	sp->no_new_privileges = 1;
	/* Limits that hold for everything in the container together: a fork
	 * bomb meets PidsLimit, an allocation the OOM killer (no swap beyond
	 * the limit: MemorySwap equals Memory), a busy loop its CPU share. */
	sp->pids_limit = s->pids;
	sp->memory = s->memory;
	sp->memory_swap = s->memory;
	sp->nano_cpus = s->nano_cpus;
	if (s->read_only) {
		sp->read_only_rootfs = 1;
		/* /tmp stays writable, in memory (it counts towards the
		 * memory limit); /workspace is a volume or a bind mount. */
		sp->tmpfs_target = "/tmp";
		sp->tmpfs_options = "rw,nosuid,nodev,mode=1777";
	}
	return 0;
}

/* A tar of one directory entry `name` owned by uid:gid, mode 0755. */
static int dir_tar(char *buf, size_t cap, size_t *used, const char *name,
		   unsigned int uid, unsigned int gid)
{
	struct archive *a = hutch__dl_archive(NULL) == 0 ? archive_write_new() :
							   NULL;
	int ok = a &&
		 archive_write_set_format_pax_restricted(a) == ARCHIVE_OK &&
		 archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK &&
		 archive_write_open_memory(a, buf, cap, used) == ARCHIVE_OK &&
		 hutch__tar_add_owned(a, name, AE_IFDIR, 0755, uid, gid, NULL,
				      0) == 0 &&
		 archive_write_close(a) == ARCHIVE_OK;

	archive_write_free(a);
	return ok ? 0 : -1;
}

/* Docker, read-only root: the archive API refuses "/", so the archive
 * goes in through a container that is never started, with the session's
 * system volume at HUTCH_AGENT_DIR and, with `workspace`, its workspace
 * volume at /workspace, the same as the session's container. */
static int put_through_helper(hutch_session *s, const char *tar, size_t len,
			      int workspace, const char *what,
			      hutch_error **err)
{
	static const char *const entry[] = { HUTCH_AGENT_PATH };
	struct hutch__container_spec sp = {
		.image = s->image,
		.entrypoint = entry,
		.entrypoint_count = 1,
		.mounts = { { "volume", s->sysvol, HUTCH_AGENT_DIR },
			    { "volume", s->volume, "/workspace" } },
		.mount_count = workspace ? 2 : 1,
		.network_mode = "none",
		.network_disabled = 1,
	};
	char name[128], hex[25];
	int rc;

	if (hutch__random_hex(hex, 9) < 0)
		return hutch__error_oom(err);
	snprintf(name, sizeof(name), "hutch_%s_own-%s", s->name, hex);
	rc = hutch__api_container_create(
		s->engine, name, &sp, NULL, 0,
		"create a helper to prepare the session's volumes", err);
	if (rc < 0)
		return rc;
	rc = hutch__api_archive_put(s->engine, name, "/", 0, tar, len, what,
				    err);
	hutch__api_container_remove(s->engine, name, 1, "remove the helper",
				    NULL);
	return rc;
}

/*
 * Put the agent (hutch__agent_tar) into the session's container, and with
 * `workspace` the workspace volume's owner in the same archive (Docker).
 * The archive is PUT at "/", as only there does an entry set the owner of
 * HUTCH_AGENT_DIR, the system volume's own root (measured: Docker 20.10
 * and Podman 4.3 apply a ".hutch/" entry's owner there; both ignore a "."
 * entry PUT at /.hutch).  That owner is what keeps the session from
 * replacing the agent, see agent_blob.c.  On Docker with a read-only root
 * it goes through a helper container.  The engines unlink an existing
 * file before extracting, so an agent running as the entry point keeps its
 * old inode and nothing is interrupted.
 */
int hutch__session_install_agent(hutch_session *s, int workspace,
				 const char *what, hutch_error **err)
{
	unsigned int uid, gid;
	size_t len = 0;
	char *tar;
	int rc, podman;

	/* The session's uid by number, through the image's passwd for a
	 * name: the agent's owner must not be it (hutch__agent_owner). */
	rc = hutch__session_owner(s, &uid, &gid, err);
	if (rc < 0)
		return rc;
	/* The agent's owner is reserved: a session running as it could
	 * replace the agent, and with it the seccomp filter (agent_blob.c). */
	if (uid == HUTCH_AGENT_OWNER_UID)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"the session's user is uid %u, which hutch reserves for "
			"its agent; choose another user",
			uid);
	podman = is_podman(s, err);
	if (podman < 0)
		return podman;
	if ((rc = hutch__dl_archive(err)) < 0)
		return rc;
	tar = hutch__agent_tar(uid, workspace ? "workspace" : NULL, uid, gid,
			       &len);
	if (!tar)
		return hutch__error_oom(err);
	if (podman || !s->read_only)
		rc = hutch__api_archive_put(s->engine, s->container, "/", 0,
					    tar, len, what, err);
	else
		rc = put_through_helper(s, tar, len, workspace, what, err);
	free(tar);
	return rc;
}

int hutch__session_put_agent(hutch_session *s, hutch_error **err)
{
	return hutch__session_install_agent(
		s, 0, "update the agent in the container", err);
}

/*
 * A workspace volume belongs to the session's user, so its commands can
 * write there: a new volume is root's unless the image had a /workspace to
 * copy it from.  Only the volume's root is touched; what is in it keeps
 * its owners.  A bind-mounted workspace is left alone (its owner is the
 * default user, or the caller chose).
 *
 * The engines disagree on how: Docker applies the owner of a "workspace"
 * entry PUT at "/" (prepare() puts one in the agent's archive, through a
 * helper on a read-only root) but ignores a "." entry; Podman ignores the
 * former and applies the container user to a "./" entry with
 * copyUIDGID=1 (measured: Docker 20.10, Podman 4.3).  On Podman this is
 * done once the container runs: at its first start Podman gives a new
 * volume the owner of the directory it is mounted on (root's /workspace,
 * made for the working directory), undoing an earlier change.
 */
int hutch__session_own_workspace(hutch_session *s, hutch_error **err)
{
	unsigned int uid, gid;
	char tar[8192];
	size_t used = 0;
	int rc;

	/* Docker: done by prepare(), in the agent's archive. */
	if (s->workspace || s->ensure.owned)
		return 0;
	rc = hutch__session_owner(s, &uid, &gid, err);
	if (rc < 0)
		return rc;
	if (s->ensure.vol_uid == (long)uid && s->ensure.vol_gid == (long)gid)
		return 0; /* the engine made the volume with this owner */
	if ((rc = hutch__dl_archive(err)) < 0)
		return rc;
	if (dir_tar(tar, sizeof(tar), &used, "./", uid, gid) < 0)
		return hutch__error_oom(err);
	return hutch__api_archive_put(s->engine, s->container, "/workspace", 1,
				      tar, used, "give the workspace its owner",
				      err);
}

/*
 * Make a new container ready to start: the agent, and on Docker also the
 * workspace volume's owner in the same archive (Docker gives a new volume
 * the image's /workspace when the container is created, and keeps the
 * owner set now at the start), which saves own_workspace() its request.
 * Podman: the agent alone (a volume's owner is set when it is made, or
 * once the container runs).
 */
int hutch__session_prepare(hutch_session *s, hutch_error **err)
{
	int rc, podman;

	s->ensure.owned = 0;
	podman = is_podman(s, err);
	if (podman < 0)
		return podman;
	rc = hutch__session_install_agent(s, !s->workspace && !podman,
					  "copy the agent into the container",
					  err);
	if (rc == 0 && !s->workspace && !podman)
		s->ensure.owned = 1;
	return rc;
}

int hutch__session_start(hutch_session *s, hutch_error **err)
{
	/* The engine resolves a host workspace's path again at every start:
	 * a symlink put on it since the session was made (by a session whose
	 * own workspace holds it) is refused here.  This narrows the window,
	 * it cannot close it: do not nest one session's workspace in
	 * another's (doc/threat-model.md). */
	if (s->workspace) {
		int fd = hutch__open_nosymlinks(s->workspace, O_PATH);

		if (fd < 0)
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"workspace '%.200s': %s; not starting the session",
				s->workspace,
				errno == ELOOP ?
					"it goes through a symlink now" :
					strerror(errno));
		close(fd);
	}
	return hutch__api_container_start(s->engine, s->container,
					  "start the session's container", err);
}

/*
 * The user commands run as, when the caller chose none and the record has
 * none: a bind-mounted workspace's owner (so the files the session writes
 * are the owner's on the host), else 1000:1000, which needs no passwd
 * entry; create() then prefers the image's "sandbox" user by name when it
 * has other ids.  Never root by default.
 */
int hutch__session_default_user(hutch_session *s, hutch_error **err)
{
	struct stat st;

	s->ensure.probe_user = 0;
	if (s->user)
		return 0;
	if (s->workspace) {
		if (stat(s->workspace, &st) < 0)
			return hutch__error_set(err, HUTCH_EINVALID,
						"workspace '%.200s': %s",
						s->workspace, strerror(errno));
		if (st.st_uid == 0)
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"workspace '%.200s' belongs to root, and commands run as an "
				"unprivileged user: give it to one (chown 1000:1000 DIR) or "
				"choose the user (--user UID:GID, or --user root)",
				s->workspace);
		if (asprintf(&s->user, "%u:%u", (unsigned int)st.st_uid,
			     (unsigned int)st.st_gid) < 0) {
			s->user = NULL;
			return hutch__error_oom(err);
		}
		return 0;
	}
	s->ensure.probe_user = 1;
	s->user = strdup(HUTCH_SESSION_DEFAULT_USER);
	return s->user ? 0 : hutch__error_oom(err);
}

/* 1 when volume `name` is there without hutch's labels (an engine made
 * it), 0 otherwise, a failed look included. */
static int engine_made(hutch_session *s, const char *name)
{
	json_object *vol = NULL, *labels = NULL;
	int made = 0;

	if (hutch__session_volume_get(s, name, &vol, NULL) == 0) {
		json_object_object_get_ex(vol, "Labels", &labels);
		made = !hutch__label_get(labels, HUTCH_LABEL_SESSION);
	}
	json_object_put(vol);
	return made;
}

/*
 * The container this call just made mounts the session's two volumes by
 * name, and an engine makes a volume of that name, unlabelled, when there
 * is none: a volume seen a moment ago and removed since (a failed maker's
 * cleanup, while this call brought up its record) comes back as nobody's,
 * and every later call would refuse it as "not made by hutch".  0 when
 * both are hutch's; else the container and the volumes the engine made
 * for it go (looked at again first: a racer doing the same may have
 * removed one, and another made a record since; the engines refuse to
 * remove a volume in use) and HUTCH_ECONFLICT tells hutch_session_ensure
 * to look again.  A failed look counts as hutch's: nothing is removed on
 * doubt.
 */
static int mounts_labelled(hutch_session *s, hutch_error **err)
{
	const char *name[2] = { s->volume, s->sysvol };
	int made[2];

	for (int i = 0; i < 2; i++)
		made[i] = engine_made(s, name[i]);
	if (!made[0] && !made[1])
		return 0;
	hutch__api_container_remove(s->engine, s->ensure.made_id, 1,
				    "remove the session's container", NULL);
	s->ensure.made_id[0] = '\0';
	for (int i = 0; i < 2; i++)
		if (made[i] && engine_made(s, name[i]))
			hutch__api_volume_remove(
				s->engine, name[i],
				"remove a volume the engine made", NULL);
	return hutch__error_set(err, HUTCH_ECONFLICT,
				"a session volume went while its container "
				"was made; trying again");
}

int hutch__session_create_container(hutch_session *s, hutch_error **err)
{
	struct hutch__container_spec sp;
	json_object *labels;
	char *bind;
	int rc;

	rc = ensure_sysvol(s, err);
	if (rc < 0)
		return rc;
	/* container_spec() mounts a host workspace as Podman or Docker
	 * takes it. */
	if (s->workspace) {
		rc = is_podman(s, err);
		if (rc < 0)
			return rc;
	}
	labels = hutch__session_labels_new(s, (long long)time(NULL));
	if (!labels || container_spec(s, labels, &sp, &bind) < 0) {
		json_object_put(labels);
		return hutch__error_oom(err);
	}
	/* The name is taken atomically: created means ours (made_id). */
	rc = hutch__api_container_create(s->engine, s->container, &sp,
					 s->ensure.made_id,
					 sizeof(s->ensure.made_id),
					 "create the session's container", err);
	free(bind);
	json_object_put(labels);
	if (rc == 0)
		rc = mounts_labelled(s, err);
	if (rc == HUTCH_ENOTFOUND)
		hutch__error_wrap(
			err, rc,
			"image '%s' is not on the engine (build the "
			"default one with hutch-image-offline, or choose "
			"another with --image or HUTCH_IMAGE)",
			s->image);
	return rc;
}

/*
 * A session this call began but could not bring up leaves nothing behind:
 * the volumes it made (holding nothing yet but the image's /workspace and
 * the agent) go too, so its record does not keep the settings that failed
 * (an image not on the engine, a user the image lacks) for the next
 * command to trip over.  Volumes that were there before are kept.
 */
void hutch__session_forget_new_volumes(hutch_session *s)
{
	/*
	 * The system volume first: while the workspace volume is there, a
	 * racer waits for this call's container (ensure_volume) and makes
	 * nothing, so the system volume removed is the one made here.  The
	 * other way round, a racer could make the next workspace volume,
	 * read this call's failed record from the system volume still
	 * there, and mount it once removed, as an engine-made volume.
	 */
	const char *name[2] = { s->sysvol, s->volume };
	int bit[2] = { MADE_SYSTEM_VOLUME, MADE_WORKSPACE_VOLUME };
	json_object *vol, *labels;
	int ours;

	for (int i = 0; i < 2; i++) {
		if (!(s->ensure.made_volumes & bit[i]))
			continue;
		/* Still the one we made (a --recreate racer replaces a
		 * system volume)?  The engines refuse to remove one that a
		 * container uses: a racer that took it over keeps it. */
		vol = labels = NULL;
		ours = hutch__session_volume_get(s, name[i], &vol, NULL) == 0 &&
		       json_object_object_get_ex(vol, "Labels", &labels) &&
		       hutch__session_made_by_me(s, labels);
		json_object_put(vol);
		if (ours)
			hutch__api_volume_remove(s->engine, name[i],
						 "remove the session volume",
						 NULL);
	}
	s->ensure.made_volumes = 0;
}
