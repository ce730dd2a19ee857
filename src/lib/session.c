/*
 * session.c - lazily created, persistent per-session containers
 *
 * The hot path (a command in a running session) never comes here: exec
 * talks to the container by name and only calls hutch_session_ensure()
 * when the engine says the container is missing or stopped.
 *
 * The session's volume ("hutch-NAME") is its record: its labels hold the
 * configuration the session was made with, so a container removed from
 * outside comes back with the same image, workspace and environment.  For a
 * session on a host directory the volume is only that record.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "engine_api.h"
#include "engine_internal.h"
#include "error.h"
#include "session_internal.h"
#include "timestamp.h"

/* How long a process that lost the creation race waits for the winner to
 * start the container before it finishes the job itself. */
#define RACE_TAKEOVER_MS 10000
#define RACE_GIVEUP_MS 60000

/* ensure_volume(), create(): another call is making this new session's
 * container; wait for it (see hutch_session_ensure). */
#define WAIT_FOR_MAKER 1
/* A record without a container whose newest volume is younger than this
 * (whole seconds, as the engines stamp them) may be a racer's, which is
 * making its container right now. */
#define RECORD_SETTLE_S 4

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
static int user_valid(const char *u)
{
	size_t n = strlen(u), colon = strcspn(u, ":");

	return n > 0 && n <= 64 && colon > 0 && u[0] != '-' &&
	       strspn(u, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_.-:") == n &&
	       (colon == n || (colon + 1 < n && !strchr(u + colon + 1, ':')));
}

/* An engine network name ("none", "bridge", a user-defined network). */
static int network_valid(const char *net)
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
		if (!user_valid(o->user))
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
		if (!network_valid(o->network))
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
static const char *unasked_image(void)
{
	const char *env = getenv("HUTCH_IMAGE");

	return env && *env ? env : HUTCH_DEFAULT_IMAGE;
}

int hutch_session_open(hutch_session **out, hutch_engine *engine,
		       const char *name, const hutch_session_options *opts,
		       hutch_error **err)
{
	hutch_session *s;
	const char *image = NULL;
	char real[PATH_MAX];

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
		image = unasked_image();
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
		/* Resolved now, on the host, so the bind mount names exactly the
		 * directory the user meant; and through no symlink: another
		 * session whose workspace holds this path could have put one
		 * there, to have this session mount a host directory of its
		 * choosing (the rule of sync's host directories). */
		int fd = hutch__open_nosymlinks(opts->workspace, O_PATH);
		char self[64];
		ssize_t n = -1;

		if (fd >= 0) {
			snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
			n = readlink(self, real, sizeof(real) - 1);
			close(fd);
		}
		if (n <= 0 || (size_t)n >= sizeof(real) - 1 || real[0] != '/') {
			hutch__error_set(
				err, HUTCH_EINVALID,
				errno == ELOOP ?
					"workspace '%.200s' goes through a symlink, which "
					"hutch does not follow (a sandbox could have put it "
					"there): give its real path, as `realpath` prints it" :
					"workspace '%.200s': %s",
				opts->workspace,
				errno == ENOTDIR ? "not a directory" :
						   strerror(errno));
			hutch_session_free(s);
			return HUTCH_EINVALID;
		}
		real[n] = '\0';
		/* The engine would bind-mount another directory: its JSON
		 * decoder turns bad bytes into U+FFFD. */
		if (hutch__error_if_not_utf8(err, "workspace", real,
					     strlen(real)) < 0) {
			hutch_session_free(s);
			return HUTCH_EINVALID;
		}
		s->workspace = strdup(real);
		if (!s->workspace)
			goto oom;
		s->set |= HUTCH__SET_WORKSPACE;
	}
	if (opts && opts->env_count) {
		s->env = calloc(opts->env_count, sizeof(char *));
		if (!s->env)
			goto oom;
		for (size_t i = 0; i < opts->env_count; i++) {
			if (!env_valid(opts->env[i])) {
				hutch__error_set(
					err, HUTCH_EINVALID,
					"invalid environment entry '%.80s': expected K=V",
					opts->env[i]);
				hutch_session_free(s);
				return HUTCH_EINVALID;
			}
			if (hutch__error_if_not_utf8(
				    err, "environment entry", opts->env[i],
				    strlen(opts->env[i])) < 0) {
				hutch_session_free(s);
				return HUTCH_EINVALID;
			}
			s->env[i] = strdup(opts->env[i]);
			if (!s->env[i])
				goto oom;
			s->env_count++;
		}
		s->set |= HUTCH__SET_ENV;
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

const char *hutch__session_container(const hutch_session *s)
{
	return s->container;
}

/* The lockdown settings as label values; `v` holds the text. */
struct lockdown_text {
	char memory[24], cpus[24], pids[24], caps[1024];
	const char *ro;
};

static void lockdown_text(const hutch_session *s, struct lockdown_text *t)
{
	size_t used = 0;

	snprintf(t->memory, sizeof(t->memory), "%lld", (long long)s->memory);
	snprintf(t->cpus, sizeof(t->cpus), "%lld", (long long)s->nano_cpus);
	snprintf(t->pids, sizeof(t->pids), "%lld", (long long)s->pids);
	t->caps[0] = '\0';
	/* Known names only (cap_normalize), at most all of them: fits. */
	for (size_t i = 0; i < s->cap_count; i++)
		used += (size_t)snprintf(t->caps + used, sizeof(t->caps) - used,
					 "%s%s", i ? "," : "", s->caps[i]);
	t->ro = s->read_only ? "1" : "0";
}

static unsigned long long fnv(unsigned long long h, const char *str, int end)
{
	for (const char *c = str; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	return (h ^ (unsigned int)end) * 1099511628211ULL;
}

/* FNV-1a over the configuration: a short, stable fingerprint for the
 * label, so a changed configuration can be told from the same one. */
static void config_hash(const hutch_session *s, char out[17])
{
	unsigned long long h = 1469598103934665603ULL;
	struct lockdown_text t;

	lockdown_text(s, &t);
	h = fnv(h, s->image, 0xff);
	h = fnv(h, s->workspace ? s->workspace : "", 0xff);
	for (size_t i = 0; i < s->env_count; i++)
		h = fnv(h, s->env[i], 0xfe);
	h = fnv(h, s->user ? s->user : "", 0xfd);
	h = fnv(h, t.memory, 0xfd);
	h = fnv(h, t.cpus, 0xfd);
	h = fnv(h, t.pids, 0xfd);
	h = fnv(h, t.caps, 0xfd);
	h = fnv(h, s->network ? s->network : "none", 0xfd);
	h = fnv(h, t.ro, 0xfd);
	snprintf(out, 17, "%016llx", h);
}

static json_object *labels_new(const hutch_session *s, long long created)
{
	json_object *labels = json_object_new_object(),
		    *env = json_object_new_array();
	char hash[17], when[32];
	struct lockdown_text t;

	if (!labels || !env) {
		json_object_put(labels);
		json_object_put(env);
		return NULL;
	}
	for (size_t i = 0; i < s->env_count; i++)
		json_object_array_add(env, json_object_new_string(s->env[i]));
	config_hash(s, hash);
	lockdown_text(s, &t);
	snprintf(when, sizeof(when), "%lld", created);
	json_object_object_add(labels, HUTCH_LABEL_SESSION,
			       json_object_new_string(s->name));
	json_object_object_add(labels, HUTCH_LABEL_VERSION,
			       json_object_new_string(PACKAGE_VERSION));
	json_object_object_add(labels, HUTCH_LABEL_CREATED,
			       json_object_new_string(when));
	json_object_object_add(labels, HUTCH_LABEL_IMAGE,
			       json_object_new_string(s->image));
	json_object_object_add(
		labels, HUTCH_LABEL_WORKSPACE,
		json_object_new_string(s->workspace ? s->workspace : ""));
	json_object_object_add(
		labels, HUTCH_LABEL_ENV,
		json_object_new_string(json_object_to_json_string_ext(
			env, JSON_C_TO_STRING_PLAIN)));
	/* A volume made before the user is known records none: the
	 * container's record, made after, has it. */
	if (s->user)
		json_object_object_add(labels, HUTCH_LABEL_USER,
				       json_object_new_string(s->user));
	json_object_object_add(labels, HUTCH_LABEL_MEMORY,
			       json_object_new_string(t.memory));
	json_object_object_add(labels, HUTCH_LABEL_CPUS,
			       json_object_new_string(t.cpus));
	json_object_object_add(labels, HUTCH_LABEL_PIDS,
			       json_object_new_string(t.pids));
	json_object_object_add(labels, HUTCH_LABEL_CAPS,
			       json_object_new_string(t.caps));
	json_object_object_add(labels, HUTCH_LABEL_NETWORK,
			       json_object_new_string(s->network ? s->network :
								   "none"));
	json_object_object_add(labels, HUTCH_LABEL_READONLY,
			       json_object_new_string(t.ro));
	json_object_object_add(labels, HUTCH_LABEL_CONFIG,
			       json_object_new_string(hash));
	/* Not part of the configuration: who made this volume or container. */
	if (s->ensure.token[0])
		json_object_object_add(labels, HUTCH_LABEL_CREATION,
				       json_object_new_string(s->ensure.token));
	json_object_put(env);
	return labels;
}

static const char *label_get(json_object *labels, const char *key)
{
	json_object *v;

	if (labels && json_object_is_type(labels, json_type_object) &&
	    json_object_object_get_ex(labels, key, &v) &&
	    json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return NULL;
}

static int64_t label_int(json_object *labels, const char *key)
{
	const char *v = label_get(labels, key);
	char *e;
	long long n;

	if (!v || !*v)
		return -1;
	n = strtoll(v, &e, 10);
	return *e || n < 0 ? -1 : (int64_t)n;
}

/* Whether this ensure made the volume or container of these labels: its
 * token is random and new, so nobody else's record carries it. */
static int made_by_me(const hutch_session *s, json_object *labels)
{
	const char *t = label_get(labels, HUTCH_LABEL_CREATION);

	return s->ensure.token[0] && t && strcmp(t, s->ensure.token) == 0;
}

/* "NET_RAW,SYS_PTRACE" -> the session's list; -1 when out of memory. */
static int caps_from_text(hutch_session *s, const char *text)
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

/* Take the configuration recorded on the volume or the container, so a
 * recreated container is what the session was; settings the caller asked
 * for stay (mismatch() has checked them first, or they replace the
 * record on purpose). */
static int adopt_record(hutch_session *s, json_object *labels)
{
	const char *image = label_get(labels, HUTCH_LABEL_IMAGE);
	const char *ws = label_get(labels, HUTCH_LABEL_WORKSPACE);
	const char *envs = label_get(labels, HUTCH_LABEL_ENV);
	const char *v;
	json_object *arr = NULL;
	char **env = NULL;
	size_t n = 0;
	int64_t num;

	if (!label_get(labels, HUTCH_LABEL_SESSION))
		return 0;
	if (envs && !(s->set & HUTCH__SET_ENV))
		arr = hutch__json_parse(envs, strlen(envs));
	if (arr && json_object_is_type(arr, json_type_array)) {
		n = json_object_array_length(arr);
		env = calloc(n ? n : 1, sizeof(char *));
		if (!env) {
			json_object_put(arr);
			return -1;
		}
		for (size_t i = 0; i < n; i++) {
			env[i] = strdup(json_object_get_string(
				json_object_array_get_idx(arr, i)));
			if (!env[i]) {
				n = i;
				break;
			}
		}
	}
	json_object_put(arr);
	if (image && *image && !(s->set & HUTCH__SET_IMAGE)) {
		free(s->image);
		s->image = strdup(image);
	}
	if (!(s->set & HUTCH__SET_WORKSPACE)) {
		free(s->workspace);
		s->workspace = ws && *ws ? strdup(ws) : NULL;
	}
	if (env) {
		for (size_t i = 0; i < s->env_count; i++)
			free(s->env[i]);
		free(s->env);
		s->env = env;
		s->env_count = n;
	}
	/* A record from before the lockdown has none of these: the
	 * defaults apply, which is the point of recreating it. */
	if (!(s->set & HUTCH__SET_USER) && !s->user_chosen &&
	    (v = label_get(labels, HUTCH_LABEL_USER)) && user_valid(v)) {
		free(s->user);
		if (!(s->user = strdup(v)))
			return -1;
	}
	if (!(s->set & HUTCH__SET_MEMORY) &&
	    (num = label_int(labels, HUTCH_LABEL_MEMORY)) >=
		    HUTCH_SESSION_MIN_MEMORY)
		s->memory = num;
	if (!(s->set & HUTCH__SET_CPUS) &&
	    (num = label_int(labels, HUTCH_LABEL_CPUS)) >= 10000000)
		s->nano_cpus = num;
	if (!(s->set & HUTCH__SET_PIDS) &&
	    (num = label_int(labels, HUTCH_LABEL_PIDS)) >=
		    HUTCH_SESSION_MIN_PIDS)
		s->pids = num;
	if (!(s->set & HUTCH__SET_CAPS) &&
	    (v = label_get(labels, HUTCH_LABEL_CAPS)) &&
	    caps_from_text(s, v) < 0)
		return -1;
	if (!(s->set & HUTCH__SET_NETWORK) &&
	    (v = label_get(labels, HUTCH_LABEL_NETWORK)) && network_valid(v)) {
		free(s->network);
		if (!(s->network = strdup(v)))
			return -1;
	}
	if (!(s->set & HUTCH__SET_READONLY) &&
	    (num = label_int(labels, HUTCH_LABEL_READONLY)) >= 0)
		s->read_only = num == 1;
	return s->image ? 0 : -1;
}

/*
 * Back to the settings the caller asked for, and the defaults for the
 * rest: before each attempt at making the session's container, so what was
 * adopted from a record that has gone since (a racer's, whose creation
 * failed) is not carried into a record of our own.  -1 when out of memory.
 */
static int reset_unasked(hutch_session *s)
{
	if (!(s->set & HUTCH__SET_IMAGE)) {
		char *image = strdup(unasked_image());

		if (!image)
			return -1;
		free(s->image);
		s->image = image;
	}
	if (!(s->set & HUTCH__SET_NETWORK)) {
		char *net = strdup("none");

		if (!net)
			return -1;
		free(s->network);
		s->network = net;
	}
	if (!(s->set & HUTCH__SET_WORKSPACE)) {
		free(s->workspace);
		s->workspace = NULL;
	}
	if (!(s->set & HUTCH__SET_ENV)) {
		for (size_t i = 0; i < s->env_count; i++)
			free(s->env[i]);
		free(s->env);
		s->env = NULL;
		s->env_count = 0;
	}
	/* A user found in the image (wants_sandbox_user) stays. */
	if (!(s->set & HUTCH__SET_USER) && !s->user_chosen) {
		free(s->user);
		s->user = NULL;
	}
	if (!(s->set & HUTCH__SET_CAPS)) {
		for (size_t i = 0; i < s->cap_count; i++)
			free(s->caps[i]);
		free(s->caps);
		s->caps = NULL;
		s->cap_count = 0;
	}
	if (!(s->set & HUTCH__SET_MEMORY))
		s->memory = HUTCH_SESSION_DEFAULT_MEMORY;
	if (!(s->set & HUTCH__SET_CPUS))
		s->nano_cpus = HUTCH_SESSION_DEFAULT_NANO_CPUS;
	if (!(s->set & HUTCH__SET_PIDS))
		s->pids = HUTCH_SESSION_DEFAULT_PIDS;
	if (!(s->set & HUTCH__SET_READONLY))
		s->read_only = 0;
	return 0;
}

/* "2g", "64m", "1536k" or bytes: how a limit was most likely written. */
static void fmt_size(char *out, size_t outsz, int64_t v)
{
	if (v < 0)
		snprintf(out, outsz, "none");
	else if (v && v % (1LL << 30) == 0)
		snprintf(out, outsz, "%lldg", (long long)(v >> 30));
	else if (v && v % (1LL << 20) == 0)
		snprintf(out, outsz, "%lldm", (long long)(v >> 20));
	else if (v && v % 1024 == 0)
		snprintf(out, outsz, "%lldk", (long long)(v >> 10));
	else
		snprintf(out, outsz, "%lld", (long long)v);
}

static void fmt_cpus(char *out, size_t outsz, int64_t nano)
{
	if (nano < 0)
		snprintf(out, outsz, "none");
	else if (nano % 1000000000 == 0)
		snprintf(out, outsz, "%lld", (long long)(nano / 1000000000));
	else
		snprintf(out, outsz, "%.2f", (double)nano / 1e9);
}

static void add_diff(char *out, size_t outsz, const char *what, const char *had,
		     const char *asked)
{
	size_t used = strlen(out);

	if (used < outsz)
		snprintf(out + used, outsz - used, "%s%s %s (asked %s)",
			 used ? ", " : "", what, had && *had ? had : "none",
			 asked && *asked ? asked : "none");
}

/*
 * The settings the caller asked for that differ from a record (a
 * container's labels, or a volume's): "memory 2g (asked 1g), user 1000:1000
 * (asked root)".  Empty when they agree.  Only what was asked for counts:
 * a command that names no settings uses the session as it is.
 */
static void mismatch(const hutch_session *s, json_object *labels, char *out,
		     size_t outsz)
{
	struct lockdown_text t;
	char a[64], b[64];
	const char *v;

	out[0] = '\0';
	if (!label_get(labels, HUTCH_LABEL_SESSION))
		return;
	lockdown_text(s, &t);
	if ((s->set & HUTCH__SET_IMAGE) &&
	    strcmp(s->image,
		   (v = label_get(labels, HUTCH_LABEL_IMAGE)) ? v : "") != 0)
		add_diff(out, outsz, "image", v, s->image);
	if (s->set & HUTCH__SET_WORKSPACE) {
		v = label_get(labels, HUTCH_LABEL_WORKSPACE);
		if (strcmp(s->workspace, v ? v : "") != 0)
			add_diff(out, outsz, "workspace",
				 v && *v ? v : "its volume", s->workspace);
	}
	if (s->set & HUTCH__SET_ENV) {
		json_object *env = json_object_new_array();
		const char *want;

		for (size_t i = 0; env && i < s->env_count; i++)
			json_object_array_add(
				env, json_object_new_string(s->env[i]));
		want = env ? json_object_to_json_string_ext(
				     env, JSON_C_TO_STRING_PLAIN) :
			     "";
		v = label_get(labels, HUTCH_LABEL_ENV);
		if (strcmp(want, v ? v : "[]") != 0)
			add_diff(out, outsz, "environment", "other",
				 "different");
		json_object_put(env);
	}
	if ((s->set & HUTCH__SET_USER) &&
	    strcmp(s->user,
		   (v = label_get(labels, HUTCH_LABEL_USER)) ? v : "") != 0)
		add_diff(out, outsz, "user", v ? v : "the image's", s->user);
	if ((s->set & HUTCH__SET_MEMORY) &&
	    label_int(labels, HUTCH_LABEL_MEMORY) != s->memory) {
		fmt_size(a, sizeof(a), label_int(labels, HUTCH_LABEL_MEMORY));
		fmt_size(b, sizeof(b), s->memory);
		add_diff(out, outsz, "memory", a, b);
	}
	if ((s->set & HUTCH__SET_CPUS) &&
	    label_int(labels, HUTCH_LABEL_CPUS) != s->nano_cpus) {
		fmt_cpus(a, sizeof(a), label_int(labels, HUTCH_LABEL_CPUS));
		fmt_cpus(b, sizeof(b), s->nano_cpus);
		add_diff(out, outsz, "cpus", a, b);
	}
	if ((s->set & HUTCH__SET_PIDS) &&
	    label_int(labels, HUTCH_LABEL_PIDS) != s->pids) {
		snprintf(a, sizeof(a), "%lld",
			 (long long)label_int(labels, HUTCH_LABEL_PIDS));
		add_diff(out, outsz, "pids",
			 label_int(labels, HUTCH_LABEL_PIDS) < 0 ? "none" : a,
			 t.pids);
	}
	if ((s->set & HUTCH__SET_CAPS) &&
	    strcmp(t.caps, (v = label_get(labels, HUTCH_LABEL_CAPS)) ?
				   v :
				   "(unknown)") != 0)
		add_diff(out, outsz, "cap-add", v, t.caps);
	if ((s->set & HUTCH__SET_NETWORK) &&
	    strcmp(s->network,
		   (v = label_get(labels, HUTCH_LABEL_NETWORK)) ? v : "") != 0)
		add_diff(out, outsz, "network", v ? v : "the engine's default",
			 s->network);
	if ((s->set & HUTCH__SET_READONLY) &&
	    label_int(labels, HUTCH_LABEL_READONLY) != (int64_t)s->read_only)
		add_diff(out, outsz, "read-only",
			 label_int(labels, HUTCH_LABEL_READONLY) == 1 ? "yes" :
									"no",
			 s->read_only ? "yes" : "no");
}

static int mismatch_error(const char *diff, hutch_error **err)
{
	return hutch__error_set(
		err, HUTCH_ECONFLICT,
		"it exists with another configuration: %s; use it as it is "
		"(leave those settings out), or recreate its container with them "
		"(hutch up --recreate; the workspace is kept)",
		diff);
}

/* GET a volume: 0 with *out, HUTCH_ENOTFOUND, or another error. */
static int volume_get(hutch_session *s, const char *name, json_object **out,
		      hutch_error **err)
{
	return hutch__api_volume_inspect(s->engine, name, out,
					 "inspect a session volume", err);
}

/*
 * The system volume's labels when it is this session's record (the volume
 * in *vol).  *stale: it is this session's, but was made beside another
 * workspace volume than the one there now (one a failed call was removing
 * when a racer made the next), so its record is not this one's.  Volumes
 * from a hutch without HUTCH_LABEL_VOLUME_OF are taken as they are.
 */
static json_object *sysvol_labels(hutch_session *s, json_object **vol,
				  int *stale)
{
	json_object *labels = NULL;
	const char *of, *beside;

	*vol = NULL;
	*stale = 0;
	if (volume_get(s, s->sysvol, vol, NULL) < 0)
		return NULL;
	json_object_object_get_ex(*vol, "Labels", &labels);
	of = label_get(labels, HUTCH_LABEL_SYSTEM);
	if (!of || strcmp(of, s->name) != 0)
		return NULL;
	beside = label_get(labels, HUTCH_LABEL_VOLUME_OF);
	if (beside && s->ensure.vol_token[0] &&
	    strcmp(beside, s->ensure.vol_token) != 0) {
		*stale = 1;
		return NULL;
	}
	return labels;
}

/* When the engine made volume `vol`, unix seconds; 0 when it does not say. */
static long long volume_made(json_object *vol)
{
	json_object *v;
	long long made;

	if (!json_object_object_get_ex(vol, "CreatedAt", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    hutch__time_parse(json_object_get_string(v), &made) < 0)
		return 0;
	return made;
}

/*
 * The session exists (its volume does) but its container does not: take
 * the latest record, the system volume's (the last container's settings,
 * written again by --recreate), else the workspace volume's (the first
 * ones).  Settings the caller asked for must agree with it, unless this
 * call made the record (`mine`) or replaces the container anyway.
 * *latest: when the newer of the two volumes was made.
 */
static int adopt_volume_record(hutch_session *s, json_object *vol,
			       json_object *vlabels, int mine,
			       long long *latest, hutch_error **err)
{
	json_object *sys = NULL, *labels;
	char diff[1024];
	int rc, stale;

	labels = sysvol_labels(s, &sys, &stale);
	*latest = volume_made(vol);
	if (labels && volume_made(sys) > *latest)
		*latest = volume_made(sys);
	if (!labels)
		labels = vlabels;
	if (!mine && !s->recreate) {
		mismatch(s, labels, diff, sizeof(diff));
		if (diff[0]) {
			json_object_put(sys);
			s->ensure.refused = 1;
			return mismatch_error(diff, err);
		}
	}
	rc = adopt_record(s, labels);
	json_object_put(sys);
	return rc < 0 ? hutch__error_oom(err) : 0;
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

	config_hash(s, hash);
	labels = sysvol_labels(s, &vol, &stale);
	had = label_get(labels, HUTCH_LABEL_CONFIG);
	if (had && strcmp(had, hash) == 0) {
		json_object_put(vol);
		return 0;
	}
	json_object_put(vol);
	if (vol && !labels && !stale) {
		s->ensure.refused = 1;
		return hutch__error_set(
			err, HUTCH_ECONFLICT,
			"volume '%s' exists but was not made by hutch; remove it or "
			"pick another session name",
			s->sysvol);
	}
	if (vol) {
		rc = hutch__api_volume_remove(
			s->engine, s->sysvol,
			"replace the session's system volume", err);
		if (rc < 0 && rc != HUTCH_ENOTFOUND)
			return rc;
	}
	labels = labels_new(s, (long long)time(NULL));
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
	labels = sysvol_labels(s, &vol, &stale);
	had = label_get(labels, HUTCH_LABEL_CONFIG);
	rc = 0;
	if (labels && made_by_me(s, labels)) {
		s->ensure.made_volumes |= MADE_SYSTEM_VOLUME;
	} else if (!had || strcmp(had, hash) != 0) {
		/* A racer recorded another configuration meanwhile (an
		 * unlabelled one: an engine made it for a container). */
		s->ensure.refused = 1;
		diff[0] = '\0';
		if (labels)
			mismatch(s, labels, diff, sizeof(diff));
		if (!labels && !stale)
			rc = hutch__error_set(
				err, HUTCH_ECONFLICT,
				"volume '%s' exists but was not made by hutch; remove it "
				"or pick another session name",
				s->sysvol);
		else if (diff[0])
			rc = mismatch_error(diff, err);
		else
			rc = hutch__error_set(
				err, HUTCH_ECONFLICT,
				"another hutch recorded other settings for it at the same "
				"time; try again");
	}
	json_object_put(vol);
	return rc;
}

static int is_podman(hutch_session *s, hutch_error **err);

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

static int image_missing(hutch_session *s, hutch_error **err)
{
	return hutch__error_set(
		err, HUTCH_ENOTFOUND,
		"image '%s' is not on the engine (build the default one with "
		"images/offline/build.sh, or choose another with --image or "
		"HUTCH_IMAGE)",
		s->image);
}

/*
 * Find or make the session's volume, and adopt its record.  0, or
 * WAIT_FOR_MAKER when another call made the record a moment ago and has
 * not made its container yet, or an error.
 */
static int ensure_volume(hutch_session *s, hutch_error **err)
{
	json_object *vol = NULL, *labels;
	char owner[64];
	long long latest;
	int rc, attempt, mine;

	for (attempt = 0; attempt < 2; attempt++) {
		hutch_error *lerr = NULL;

		rc = hutch__api_volume_inspect(s->engine, s->volume, &vol,
					       "session volume", &lerr);
		if (rc == 0) {
			labels = NULL;
			json_object_object_get_ex(vol, "Labels", &labels);
			if (!label_get(labels, HUTCH_LABEL_SESSION)) {
				json_object_put(vol);
				s->ensure.refused = 1;
				return hutch__error_set(
					err, HUTCH_ECONFLICT,
					"volume '%s' exists but was not made by hutch; "
					"remove it or pick another session name",
					s->volume);
			}
			/* Ours only when it carries this call's token: the
			 * create below succeeds on Docker for a volume a racer
			 * made, and fails on Podman, for the same race. */
			mine = made_by_me(s, labels);
			snprintf(s->ensure.vol_token,
				 sizeof(s->ensure.vol_token), "%s",
				 label_get(labels, HUTCH_LABEL_CREATION) ?
					 label_get(labels,
						   HUTCH_LABEL_CREATION) :
					 "");
			if (mine) {
				s->new_record = 1;
				s->ensure.made_volumes |= MADE_WORKSPACE_VOLUME;
			}
			volume_owner_read(s, vol);
			rc = adopt_volume_record(s, vol, labels, mine, &latest,
						 err);
			/*
			 * A racer's record with no container yet: the racer
			 * makes it.  Making one from that record ourselves
			 * would carry settings of its that may fail (a user
			 * its image lacks), and its cleanup would remove the
			 * volumes under us.  A record in use before (settled)
			 * or left by a call that died (takeover) is ours to
			 * bring back.  Its maker is at most a few requests
			 * from its next step: a record whose last volume is
			 * older than RECORD_SETTLE_S was left, not being made
			 * (a container removed from outside).  A clock ahead
			 * of ours makes it look young: the wait is bounded by
			 * our own clock too (hutch_session_ensure).
			 */
			if (rc == 0 && !mine && !s->ensure.settled &&
			    !s->ensure.takeover && latest &&
			    (long long)time(NULL) - latest < RECORD_SETTLE_S)
				rc = WAIT_FOR_MAKER;
			json_object_put(vol);
			return rc;
		}
		if (rc != HUTCH_ENOTFOUND)
			return hutch__error_pass(err, lerr, rc);
		hutch_error_free(lerr);

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
		labels = labels_new(s, (long long)time(NULL));
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
	 * container whatever the image holds (no shell, no sleep needed). */
	static const char *const entry[] = { HUTCH_AGENT_PATH, "sleep" };
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

int hutch__session_put_tar(hutch_session *s, const char *data, size_t len,
			   const char *what, hutch_error **err)
{
	/* Into the system volume: the archive API writes there whether or
	 * not the root filesystem is read-only. */
	return hutch__api_archive_put(s->engine, s->container, HUTCH_AGENT_DIR,
				      0, data, len, what, err);
}

/*
 * Record a use of the session that did not go through the agent (sync-in,
 * sync-out use the archive API): what the agent does for a command, as a
 * tiny archive PUT of the record, owned by the session user as when the
 * agent makes it.  Only where the record exists: a container made by an
 * older hutch has an agent that does not keep it, and must not get a
 * record that its commands would never update (the agent made the file
 * when the container started).  Best effort: errors are dropped.
 */
void hutch__session_mark_used(hutch_session *s, unsigned int uid,
			      unsigned int gid)
{
	char buf[8192], stat[1024];
	size_t used = 0;
	struct archive *a;
	const char *file = strrchr(HUTCH_LAST_USED_PATH, '/') + 1;
	int ok;

	if (hutch__api_archive_stat(s->engine, s->container,
				    HUTCH_LAST_USED_PATH, stat, sizeof(stat),
				    NULL) != 1)
		return;
	a = archive_write_new();
	ok = a && archive_write_set_format_pax_restricted(a) == ARCHIVE_OK &&
	     archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK &&
	     archive_write_open_memory(a, buf, sizeof(buf), &used) ==
		     ARCHIVE_OK &&
	     hutch__tar_add_owned(a, file, AE_IFREG, 0666, uid, gid, NULL, 0) ==
		     0 &&
	     archive_write_close(a) == ARCHIVE_OK;

	archive_write_free(a);
	if (ok)
		hutch__api_archive_put(s->engine, s->container,
				       HUTCH_AGENT_DIR "/" HUTCH_USE_DIR, 0,
				       buf, used, "record the session's use",
				       NULL);
}

/* A tar of one directory entry `name` owned by uid:gid, mode 0755. */
static int dir_tar(char *buf, size_t cap, size_t *used, const char *name,
		   unsigned int uid, unsigned int gid)
{
	struct archive *a = archive_write_new();
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
static int install_agent(hutch_session *s, int workspace, const char *what,
			 hutch_error **err)
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
	podman = is_podman(s, err);
	if (podman < 0)
		return podman;
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
	return install_agent(s, 0, "update the agent in the container", err);
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

static int own_workspace(hutch_session *s, hutch_error **err)
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
static int prepare(hutch_session *s, hutch_error **err)
{
	int rc, podman;

	s->ensure.owned = 0;
	podman = is_podman(s, err);
	if (podman < 0)
		return podman;
	rc = install_agent(s, !s->workspace && !podman,
			   "copy the agent into the container", err);
	if (rc == 0 && !s->workspace && !podman)
		s->ensure.owned = 1;
	return rc;
}

static int start(hutch_session *s, hutch_error **err)
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
	    !label_get(labels, HUTCH_LABEL_SESSION)) {
		json_object_put(obj);
		return hutch__error_set(
			err, HUTCH_ECONFLICT,
			"container '%s' exists but was not made by hutch; remove it "
			"or pick another session name",
			s->container);
	}
	c->mine = made_by_me(s, labels);
	if (json_object_object_get_ex(obj, "Id", &v) &&
	    json_object_is_type(v, json_type_string))
		snprintf(c->id, sizeof(c->id), "%s", json_object_get_string(v));
	if (diff)
		mismatch(s, labels, diff, diffsz);
	if (!s->workspace && labels) {
		/* The container's host workspace, for start()'s check. */
		const char *ws = label_get(labels, HUTCH_LABEL_WORKSPACE);

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
static int remove_container_id(hutch_session *s, const char *id,
			       hutch_error **err)
{
	hutch_error *lerr = NULL;
	int rc;

	rc = hutch__api_container_remove(s->engine,
					 id && *id ? id : s->container, 1,
					 "remove the session's container",
					 &lerr);
	if (rc == HUTCH_ENOTFOUND)
		rc = 0;
	return hutch__error_pass(err, lerr, rc);
}

static int remove_container(hutch_session *s, hutch_error **err)
{
	return remove_container_id(s, NULL, err);
}

/*
 * The user commands run as, when the caller chose none and the record has
 * none: a bind-mounted workspace's owner (so the files the session writes
 * are the owner's on the host), else 1000:1000, which needs no passwd
 * entry; create() then prefers the image's "sandbox" user by name when it
 * has other ids.  Never root by default.
 */
static int default_user(hutch_session *s, hutch_error **err)
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

static int create_container(hutch_session *s, hutch_error **err)
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
	labels = labels_new(s, (long long)time(NULL));
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
	if (rc == HUTCH_ENOTFOUND)
		hutch__error_wrap(
			err, rc,
			"image '%s' is not on the engine (build the "
			"default one with images/offline/build.sh, or choose "
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
static void forget_new_volumes(hutch_session *s)
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
		ours = volume_get(s, name[i], &vol, NULL) == 0 &&
		       json_object_object_get_ex(vol, "Labels", &labels) &&
		       made_by_me(s, labels);
		json_object_put(vol);
		if (ours)
			hutch__api_volume_remove(s->engine, name[i],
						 "remove the session volume",
						 NULL);
	}
	s->ensure.made_volumes = 0;
}

/* Make the volumes (or adopt them) and the container: 0 when this call
 * made the container, WAIT_FOR_MAKER, HUTCH_ECONFLICT when a racer's
 * container took the name first (unless s->ensure.refused), or an error. */
static int create(hutch_session *s, hutch_error **err)
{
	int rc;

	if (reset_unasked(s) < 0)
		return hutch__error_oom(err);
	rc = ensure_volume(s, err);
	if (rc != 0)
		return rc;
	rc = default_user(s, err);
	if (rc == 0)
		rc = create_container(s, err);
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
 *  - a call that fails removes its own container and volumes only.
 */
int hutch_session_ensure(hutch_session *s, int *created, hutch_error **err)
{
	unsigned long long begun = hutch__now_ms(), since = 0, waiting = 0, now;
	struct seen c;
	char diff[1024];
	int rc, made = 0, waited = 0, recreate = s->recreate;

	if (created)
		*created = 0;
	s->new_record = 0;
	s->recreated = 0;
	s->ensure.refused = 0;
	s->ensure.made_volumes = 0;
	s->ensure.made_id[0] = '\0';
	s->ensure.settled = 0;
	s->ensure.takeover = 0;
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
				rc = remove_container_id(s, c.id, &lerr);
				if (rc < 0)
					goto fail;
				s->recreated = 1;
				continue;
			}
			if (!recreate && diff[0]) {
				rc = mismatch_error(diff, &lerr);
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
			rc = prepare(s, &lerr);
			if (rc == 0)
				rc = start(s, &lerr);
			if (rc == 0)
				rc = own_workspace(s, &lerr);
			if (rc == 0 &&
			    (rc = wants_sandbox_user(s, &lerr)) == 1 &&
			    (rc = remove_container_id(s, s->ensure.made_id,
						      &lerr)) == 0)
				s->ensure.made_id[0] = '\0';
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
			rc = remove_container_id(s, c.id, &lerr);
		} else {
			/* Not own_workspace(): this handle may not know
			 * the session's workspace, and the owner of a bind
			 * mount's directory must never be changed. */
			if (fresh)
				rc = install_agent(
					s, 0,
					"copy the agent into the container",
					&lerr);
			if (rc >= 0)
				rc = start(s, &lerr);
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
			remove_container_id(s, s->ensure.made_id, NULL);
			s->ensure.made_id[0] = '\0';
		}
		forget_new_volumes(s);
		hutch__error_wrap(&lerr, rc, "session '%s'", s->name);
		return hutch__error_pass(err, lerr, rc);
	}
	if (created)
		*created = made;
	return 0;
stuck:
	return hutch__error_set(
		err, HUTCH_ETIMEOUT,
		"session '%s': the container did not come up within %d s",
		s->name, RACE_GIVEUP_MS / 1000);
}

/* ---- describing and removing sessions ------------------------------- */

void hutch_session_info_free(hutch_session_info *info)
{
	if (!info)
		return;
	hutch_session_info_array_free(info, 1);
}

static void info_clear(hutch_session_info *i)
{
	free(i->name);
	free(i->container);
	free(i->id);
	free(i->image);
	free(i->state);
	free(i->workspace);
	free(i->hutch_version);
	free(i->user);
	free(i->cap_add);
	free(i->network);
}

void hutch_session_info_array_free(hutch_session_info *infos, size_t count)
{
	if (!infos)
		return;
	for (size_t i = 0; i < count; i++)
		info_clear(&infos[i]);
	free(infos);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void info_from_labels(hutch_session_info *i, json_object *labels)
{
	const char *ws = label_get(labels, HUTCH_LABEL_WORKSPACE);
	const char *created = label_get(labels, HUTCH_LABEL_CREATED);

	if (!i->name)
		i->name = dup_or_null(label_get(labels, HUTCH_LABEL_SESSION));
	if (!i->image)
		i->image = dup_or_null(label_get(labels, HUTCH_LABEL_IMAGE));
	if (!i->hutch_version)
		i->hutch_version =
			dup_or_null(label_get(labels, HUTCH_LABEL_VERSION));
	if (!i->workspace && i->name) {
		if (ws && *ws)
			i->workspace = strdup(ws);
		else if (asprintf(&i->workspace, "volume:hutch-%s", i->name) <
			 0)
			i->workspace = NULL;
	}
	if (!i->created && created)
		i->created = strtoll(created, NULL, 10);
	if (!i->user)
		i->user = dup_or_null(label_get(labels, HUTCH_LABEL_USER));
	if (i->memory < 0)
		i->memory = label_int(labels, HUTCH_LABEL_MEMORY);
	if (i->nano_cpus < 0)
		i->nano_cpus = label_int(labels, HUTCH_LABEL_CPUS);
	if (i->pids < 0)
		i->pids = label_int(labels, HUTCH_LABEL_PIDS);
	if (!i->cap_add)
		i->cap_add = dup_or_null(label_get(labels, HUTCH_LABEL_CAPS));
	if (!i->network)
		i->network =
			dup_or_null(label_get(labels, HUTCH_LABEL_NETWORK));
	if (i->read_only < 0)
		i->read_only = (int)label_int(labels, HUTCH_LABEL_READONLY);
}

struct list {
	hutch_session_info *v;
	size_t n, alloc;
};

static hutch_session_info *list_find(struct list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return &l->v[i];
	if (l->n == l->alloc) {
		size_t alloc = l->alloc ? l->alloc * 2 : 16;
		hutch_session_info *v = realloc(l->v, alloc * sizeof(*v));

		if (!v)
			return NULL;
		l->v = v;
		l->alloc = alloc;
	}
	memset(&l->v[l->n], 0, sizeof(l->v[0]));
	l->v[l->n].memory = l->v[l->n].nano_cpus = l->v[l->n].pids = -1;
	l->v[l->n].read_only = -1;
	l->v[l->n].name = strdup(name);
	if (!l->v[l->n].name)
		return NULL;
	return &l->v[l->n++];
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const hutch_session_info *)a)->name,
		      ((const hutch_session_info *)b)->name);
}

/* The list entry for a container or volume that carries hutch's session
 * label (*out NULL when the item is not one of ours). */
static int labelled_entry(struct list *l, json_object *item,
			  hutch_session_info **out, json_object **labels,
			  hutch_error **err)
{
	const char *name;

	*out = NULL;
	if (!json_object_object_get_ex(item, "Labels", labels) ||
	    !(name = label_get(*labels, HUTCH_LABEL_SESSION)) ||
	    !hutch_session_name_valid(name))
		return 0;
	*out = list_find(l, name);
	return *out ? 0 : hutch__error_oom(err);
}

/* Add what the engine says about containers and volumes labelled as
 * hutch's; `only` limits the listing to one session. */
static int collect(struct list *l, hutch_engine *e, const char *only,
		   hutch_error **err)
{
	json_object *arr = NULL, *vols = NULL, *varr, *item, *labels, *v,
		    *names;
	char label[256];
	hutch_session_info *i;
	int rc;

	if (only)
		snprintf(label, sizeof(label), "%s=%s", HUTCH_LABEL_SESSION,
			 only);
	else
		snprintf(label, sizeof(label), "%s", HUTCH_LABEL_SESSION);
	rc = hutch__api_container_list(e, label, 1, &arr, "list containers",
				       err);
	if (rc < 0)
		goto out;
	for (size_t k = 0; json_object_is_type(arr, json_type_array) &&
			   k < json_object_array_length(arr);
	     k++) {
		item = json_object_array_get_idx(arr, k);
		rc = labelled_entry(l, item, &i, &labels, err);
		if (rc < 0)
			goto out;
		if (!i)
			continue;
		if (json_object_object_get_ex(item, "Names", &names) &&
		    json_object_is_type(names, json_type_array) &&
		    json_object_array_length(names) > 0) {
			const char *cn = json_object_get_string(
				json_object_array_get_idx(names, 0));

			free(i->container);
			i->container =
				dup_or_null(cn && cn[0] == '/' ? cn + 1 : cn);
		}
		if (json_object_object_get_ex(item, "Id", &v)) {
			free(i->id);
			i->id = dup_or_null(json_object_get_string(v));
		}
		if (json_object_object_get_ex(item, "State", &v) &&
		    json_object_is_type(v, json_type_string)) {
			free(i->state);
			i->state = strdup(json_object_get_string(v));
		}
		info_from_labels(i, labels);
	}

	rc = hutch__api_volume_list(e, label, &vols, "list volumes", err);
	if (rc < 0)
		goto out;
	/* A container's record comes first, then the system volume's (the
	 * last container's), then the workspace volume's (the first). */
	for (int pass = 0; pass < 2 && vols &&
			   json_object_object_get_ex(vols, "Volumes", &varr) &&
			   json_object_is_type(varr, json_type_array);
	     pass++) {
		for (size_t k = 0; k < json_object_array_length(varr); k++) {
			item = json_object_array_get_idx(varr, k);
			rc = labelled_entry(l, item, &i, &labels, err);
			if (rc < 0)
				goto out;
			if (i && (label_get(labels, HUTCH_LABEL_SYSTEM) !=
				  NULL) == (pass == 0))
				info_from_labels(i, labels);
		}
	}
	for (size_t k = 0; k < l->n; k++)
		if (!l->v[k].state && !(l->v[k].state = strdup("absent"))) {
			rc = hutch__error_oom(err);
			goto out;
		}
	rc = 0;
out:
	json_object_put(vols);
	json_object_put(arr);
	return rc;
}

int hutch_session_list(hutch_session_info **out, size_t *count, hutch_engine *e,
		       hutch_error **err)
{
	struct list l = { NULL, 0, 0 };
	int rc = collect(&l, e, NULL, err);

	if (rc < 0) {
		hutch_session_info_array_free(l.v, l.n);
		return rc;
	}
	if (l.n)
		qsort(l.v, l.n, sizeof(l.v[0]), by_name);
	*out = l.v;
	*count = l.n;
	return 0;
}

int hutch_session_inspect(hutch_session_info **out, hutch_session *s,
			  hutch_error **err)
{
	struct list l = { NULL, 0, 0 };
	int rc = collect(&l, s->engine, s->name, err);

	if (rc < 0) {
		hutch_session_info_array_free(l.v, l.n);
		return rc;
	}
	if (l.n == 0) {
		free(l.v);
		return hutch__error_set(err, HUTCH_ENOTFOUND, "no session '%s'",
					s->name);
	}
	for (size_t k = 1; k < l.n; k++)
		info_clear(&l.v[k]);
	*out = l.v;
	return 0;
}

int hutch_session_remove(hutch_engine *e, const char *name, hutch_error **err)
{
	hutch_session_info *info = NULL;
	hutch_session *s = NULL;
	hutch_error *lerr = NULL;
	int rc, removed = 0;

	rc = hutch_session_open(&s, e, name, NULL, err);
	if (rc < 0)
		return rc;
	/* Only what carries hutch's label for this session is removed: a
	 * container that merely has a matching name is left alone. */
	rc = hutch_session_inspect(&info, s, err);
	if (rc < 0)
		goto out;
	if (info->container) {
		rc = remove_container(s, err);
		if (rc < 0)
			goto out;
		removed = 1;
	}
	/* The system volume (agent, latest record): after the container,
	 * which used it; it may not exist (a session from before it). */
	rc = hutch__api_volume_remove(
		e, s->sysvol, "remove the session's system volume", err);
	if (rc == HUTCH_ENOTFOUND) {
		hutch_error_free(err ? *err : NULL);
		if (err)
			*err = NULL;
		rc = 0;
	} else if (rc < 0) {
		goto out;
	} else {
		removed = 1;
	}
	rc = hutch__api_volume_remove(e, s->volume,
				      "remove the session's volume", &lerr);
	if (rc == HUTCH_ENOTFOUND && removed) {
		hutch_error_free(lerr);
		rc = 0;
	} else if (rc < 0) {
		hutch__error_pass(err, lerr, rc);
	}
out:
	if (rc < 0)
		hutch__error_wrap(err, rc, "remove session '%s'", name);
	hutch_session_info_free(info);
	hutch_session_free(s);
	return rc;
}
