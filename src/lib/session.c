/*
 * session.c - a session handle: its options, checked; open, free, getters
 *
 * The hot path (a command in a running session) never comes here: exec
 * talks to the container by name and only calls hutch_session_ensure()
 * when the engine says the container is missing or stopped.
 *
 * The session's volume ("hutch-NAME") is its record: its labels hold the
 * configuration the session was made with, so a container removed from
 * outside comes back with the same image, workspace and environment.  For a
 * session on a host directory the volume is only that record.
 *
 * The rest of the session code, by job: session_record.c (the recorded
 * configuration: labels, adopt, mismatch), session_create.c (volumes, the
 * container's lockdown, the agent, the workspace's owner),
 * session_ensure.c (bringing the container up, racers included),
 * session_list.c (list, inspect, remove), session_image_user.c (the
 * images' "sandbox" accounts).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_chan.h"
#include "beneath.h"
#include "common.h"
#include "error.h"
#include "session_internal.h"

const char *hutch_default_image(void)
{
	return HUTCH_DEFAULT_IMAGE;
}

int hutch_session_name_valid(const char *name)
{
	size_t n;

	if (!name)
		return 0;
	n = strlen(name);
	if (n == 0 || n > 63)
		return 0;
	if (!((name[0] >= 'a' && name[0] <= 'z') ||
	      (name[0] >= 'A' && name[0] <= 'Z') ||
	      (name[0] >= '0' && name[0] <= '9')))
		return 0;
	return strspn(name,
		      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789_.-") == n;
}

static int env_valid(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq && eq != kv && strlen(kv) < 65536;
}

void hutch_session_free(hutch_session *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->container);
	free(s->volume);
	free(s->image);
	free(s->workspace);
	for (size_t i = 0; i < s->env_count; i++)
		free(s->env[i]);
	free(s->env);
	free(s->sysvol);
	free(s->user);
	for (size_t i = 0; i < s->cap_count; i++)
		free(s->caps[i]);
	free(s->caps);
	free(s->network);
	hutch__session_secrets_free(s->secrets);
	hutch__chan_free(s->chan);
	free(s);
}

/* Capabilities a session may add back (names as the engines take them).
 * "ALL" is allowed: the caller asked for it by name. */
static const char *const known_caps[] = {
	"ALL",
	"AUDIT_CONTROL",
	"AUDIT_READ",
	"AUDIT_WRITE",
	"BLOCK_SUSPEND",
	"BPF",
	"CHECKPOINT_RESTORE",
	"CHOWN",
	"DAC_OVERRIDE",
	"DAC_READ_SEARCH",
	"FOWNER",
	"FSETID",
	"IPC_LOCK",
	"IPC_OWNER",
	"KILL",
	"LEASE",
	"LINUX_IMMUTABLE",
	"MAC_ADMIN",
	"MAC_OVERRIDE",
	"MKNOD",
	"NET_ADMIN",
	"NET_BIND_SERVICE",
	"NET_BROADCAST",
	"NET_RAW",
	"PERFMON",
	"SETFCAP",
	"SETGID",
	"SETPCAP",
	"SETUID",
	"SYS_ADMIN",
	"SYS_BOOT",
	"SYS_CHROOT",
	"SYS_MODULE",
	"SYS_NICE",
	"SYS_PACCT",
	"SYS_PTRACE",
	"SYS_RAWIO",
	"SYS_RESOURCE",
	"SYS_TIME",
	"SYS_TTY_CONFIG",
	"SYSLOG",
	"WAKE_ALARM",
};

/* "net_raw" or "CAP_NET_RAW" -> "NET_RAW"; NULL when unknown. */
static char *cap_normalize(const char *name)
{
	char up[32];
	const char *bare;
	size_t n = strlen(name);

	if (n == 0 || n >= sizeof(up))
		return NULL;
	for (size_t i = 0; i <= n; i++)
		up[i] = (char)(name[i] >= 'a' && name[i] <= 'z' ? name[i] - 32 :
								  name[i]);
	bare = strncmp(up, "CAP_", 4) == 0 ? up + 4 : up;
	for (size_t i = 0; i < HUTCH_ARRAY_SIZE(known_caps); i++)
		if (strcmp(bare, known_caps[i]) == 0)
			return strdup(known_caps[i]);
	return NULL;
}

/* A user as the engines take it: NAME, UID or UID:GID (names too), made of
 * the characters passwd names use.  No resolution here: the container's
 * /etc/passwd decides, when it starts. */
int hutch__session_user_valid(const char *u)
{
	size_t n = strlen(u), colon = strcspn(u, ":");

	return n > 0 && n <= 64 && colon > 0 && u[0] != '-' &&
	       strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-:") == n &&
	       (colon == n || (colon + 1 < n && !strchr(u + colon + 1, ':')));
}

/* An engine network name ("none", "bridge", a user-defined network). */
int hutch__session_network_valid(const char *net)
{
	size_t n = strlen(net);

	return n > 0 && n <= 64 &&
	       ((net[0] >= 'a' && net[0] <= 'z') ||
		(net[0] >= 'A' && net[0] <= 'Z') ||
		(net[0] >= '0' && net[0] <= '9')) &&
	       strspn(net,
		      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		      "0123456789_.-") == n;
}

/* The lockdown options: checked, copied, and marked as asked for. */
static int open_lockdown(hutch_session *s, const hutch_session_options *o,
			 hutch_error **err)
{
	if (o->user) {
		if (!hutch__session_user_valid(o->user))
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"invalid user '%.80s': expected NAME, UID or UID:GID",
				o->user);
		if (!(s->user = strdup(o->user)))
			return hutch__error_oom(err);
		s->set |= HUTCH__SET_USER;
	}
	if (o->memory) {
		if (o->memory < HUTCH_SESSION_MIN_MEMORY)
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"memory limit %lld bytes is too small: at least %lld (6 MiB)",
				(long long)o->memory,
				(long long)HUTCH_SESSION_MIN_MEMORY);
		s->memory = o->memory;
		s->set |= HUTCH__SET_MEMORY;
	}
	if (o->nano_cpus) {
		if (o->nano_cpus < 10000000 ||
		    o->nano_cpus > 1024LL * 1000000000LL)
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"CPU limit %.2f is out of range: 0.01 to 1024 CPUs",
				(double)o->nano_cpus / 1e9);
		s->nano_cpus = o->nano_cpus;
		s->set |= HUTCH__SET_CPUS;
	}
	if (o->pids) {
		if (o->pids < HUTCH_SESSION_MIN_PIDS || o->pids > 4194304)
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"process limit %lld is out of range: %d to 4194304 (hutch's "
				"agent needs a few)",
				(long long)o->pids, HUTCH_SESSION_MIN_PIDS);
		s->pids = o->pids;
		s->set |= HUTCH__SET_PIDS;
	}
	if (o->cap_add) {
		if (o->cap_add_count > HUTCH_ARRAY_SIZE(known_caps))
			return hutch__error_set(err, HUTCH_EINVALID,
						"too many capabilities (%zu)",
						o->cap_add_count);
		s->caps = calloc(o->cap_add_count + 1, sizeof(char *));
		if (!s->caps)
			return hutch__error_oom(err);
		for (size_t i = 0; i < o->cap_add_count; i++) {
			char *c = o->cap_add[i] ? cap_normalize(o->cap_add[i]) :
						  NULL;

			if (!c)
				return hutch__error_set(
					err, HUTCH_EINVALID,
					"unknown capability '%.40s' (e.g. NET_BIND_SERVICE, "
					"CAP_SYS_PTRACE)",
					o->cap_add[i] ? o->cap_add[i] : "");
			s->caps[s->cap_count++] = c;
		}
		s->set |= HUTCH__SET_CAPS;
	}
	if (o->network) {
		if (!hutch__session_network_valid(o->network))
			return hutch__error_set(err, HUTCH_EINVALID,
						"invalid network name '%.80s'",
						o->network);
		if (!(s->network = strdup(o->network)))
			return hutch__error_oom(err);
		s->set |= HUTCH__SET_NETWORK;
	}
	if (o->read_only) {
		s->read_only = o->read_only > 0;
		s->set |= HUTCH__SET_READONLY;
	}
	s->recreate = o->recreate != 0;
	return 0;
}

/* The image of a session whose caller named none. */
const char *hutch__session_unasked_image(void)
{
	const char *env = getenv("HUTCH_IMAGE");

	return env && *env ? env : HUTCH_DEFAULT_IMAGE;
}

/* The host workspace, resolved and checked. */
static int open_workspace(hutch_session *s, const char *path, hutch_error **err)
{
	/* Resolved now, on the host, so the bind mount names exactly the
	 * directory the user meant; and through no symlink: another
	 * session whose workspace holds this path could have put one
	 * there, to have this session mount a host directory of its
	 * choosing (the rule of sync's host directories). */
	int fd = hutch__open_nosymlinks(path, O_PATH);
	char self[64], real[PATH_MAX];
	ssize_t n = -1;

	if (fd >= 0) {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		n = readlink(self, real, sizeof(real) - 1);
		close(fd);
	}
	if (n <= 0 || (size_t)n >= sizeof(real) - 1 || real[0] != '/')
		return hutch__error_set(
			err, HUTCH_EINVALID,
			errno == ELOOP ?
				"workspace '%.200s' goes through a symlink, which "
				"hutch does not follow (a sandbox could have put it "
				"there): give its real path, as `realpath` prints it" :
				"workspace '%.200s': %s",
			path,
			errno == ENOTDIR ? "not a directory" : strerror(errno));
	real[n] = '\0';
	/* The engine would bind-mount another directory: its JSON
	 * decoder turns bad bytes into U+FFFD. */
	if (hutch__error_if_not_utf8(err, "workspace", real, strlen(real)) < 0)
		return HUTCH_EINVALID;
	s->workspace = strdup(real);
	if (!s->workspace)
		return hutch__error_oom(err);
	s->set |= HUTCH__SET_WORKSPACE;
	return 0;
}

/* The environment asked for, checked. */
static int open_env(hutch_session *s, const hutch_session_options *o,
		    hutch_error **err)
{
	s->env = calloc(o->env_count, sizeof(char *));
	if (!s->env)
		return hutch__error_oom(err);
	for (size_t i = 0; i < o->env_count; i++) {
		if (!env_valid(o->env[i]))
			return hutch__error_set(
				err, HUTCH_EINVALID,
				"invalid environment entry '%.80s': expected K=V",
				o->env[i]);
		if (hutch__error_if_not_utf8(err, "environment entry",
					     o->env[i], strlen(o->env[i])) < 0)
			return HUTCH_EINVALID;
		s->env[i] = strdup(o->env[i]);
		if (!s->env[i])
			return hutch__error_oom(err);
		s->env_count++;
	}
	s->set |= HUTCH__SET_ENV;
	return 0;
}

int hutch_session_open(hutch_session **out, hutch_engine *engine,
		       const char *name, const hutch_session_options *opts,
		       hutch_error **err)
{
	hutch_session *s;
	const char *image = NULL;

	if (!hutch_session_name_valid(name))
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"invalid session name '%.80s': use 1 to 63 letters, digits, '_', '.' "
			"or '-', starting with a letter or digit",
			name ? name : "");
	if (opts && opts->version != HUTCH_SESSION_OPTIONS_VERSION)
		return hutch__error_set(
			err, HUTCH_EINVALID,
			"unsupported hutch_session_options version %u",
			opts->version);
	s = calloc(1, sizeof(*s));
	if (!s)
		return hutch__error_oom(err);
	s->engine = engine;
	s->name = strdup(name);
	if (asprintf(&s->container, "hutch-%s", name) < 0)
		s->container = NULL;
	s->volume = s->container ? strdup(s->container) : NULL;
	/* '_' never starts a session name, so "hutch_NAME" is nobody's
	 * workspace volume. */
	if (asprintf(&s->sysvol, "hutch_%s", name) < 0)
		s->sysvol = NULL;
	s->memory = HUTCH_SESSION_DEFAULT_MEMORY;
	s->nano_cpus = HUTCH_SESSION_DEFAULT_NANO_CPUS;
	s->pids = HUTCH_SESSION_DEFAULT_PIDS;
	s->ensure.vol_uid = s->ensure.vol_gid = -1;
	s->podman = -1;
	s->network = strdup("none");

	if (opts && opts->image && *opts->image) {
		image = opts->image;
		s->set |= HUTCH__SET_IMAGE;
	} else {
		image = hutch__session_unasked_image();
	}
	s->image = strdup(image);
	if (!s->name || !s->container || !s->volume || !s->sysvol ||
	    !s->image || !s->network)
		goto oom;
	if (opts) {
		free(s->network);
		s->network = NULL;
		if (!opts->network && !(s->network = strdup("none")))
			goto oom;
		int rc = open_lockdown(s, opts, err);

		if (rc < 0) {
			hutch_session_free(s);
			return rc;
		}
	}

	if (opts && opts->workspace) {
		int rc = open_workspace(s, opts->workspace, err);

		if (rc < 0) {
			hutch_session_free(s);
			return rc;
		}
	}
	if (opts && opts->env_count) {
		int rc = open_env(s, opts, err);

		if (rc < 0) {
			hutch_session_free(s);
			return rc;
		}
	}
	if (opts && opts->secret_count) {
		int rc = hutch_session_set_secrets(s, opts->secrets,
						   opts->secret_count, err);

		if (rc < 0) {
			hutch_session_free(s);
			return rc;
		}
	}
	*out = s;
	return 0;
oom:
	hutch_session_free(s);
	return hutch__error_oom(err);
}

const char *hutch_session_name(const hutch_session *s)
{
	return s->name;
}

hutch_engine *hutch_session_engine(const hutch_session *s)
{
	return s->engine;
}

void hutch_session_set_create(hutch_session *s, int allow)
{
	s->no_create = !allow;
}

int hutch_session_was_created(const hutch_session *s)
{
	return s->new_record;
}

const char *hutch__session_container(const hutch_session *s)
{
	return s->container;
}

/* "NET_RAW,SYS_PTRACE" -> the session's list; -1 when out of memory. */
int hutch__session_caps_from_text(hutch_session *s, const char *text)
{
	char **caps = calloc(HUTCH_ARRAY_SIZE(known_caps) + 1, sizeof(char *));
	size_t n = 0;

	if (!caps)
		return -1;
	for (const char *p = text; *p && n < HUTCH_ARRAY_SIZE(known_caps);) {
		size_t len = strcspn(p, ",");
		char name[32];

		if (len > 0 && len < sizeof(name)) {
			memcpy(name, p, len);
			name[len] = '\0';
			/* Only names hutch knows: labels can be edited. */
			if ((caps[n] = cap_normalize(name)))
				n++;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	for (size_t i = 0; i < s->cap_count; i++)
		free(s->caps[i]);
	free(s->caps);
	s->caps = caps;
	s->cap_count = n;
	return 0;
}
