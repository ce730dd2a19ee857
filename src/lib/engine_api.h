/*
 * engine_api.h - the engine's calls, typed: containers, volumes, images,
 * archives (the few the sessions make), and the engine itself
 *
 * The one place (with engine_api_exec.h for exec and attach) that knows
 * how Docker and Podman spell a request: the URL, the query, the JSON
 * body, and where an answer keeps what hutch reads.  Callers say what they
 * want; the session code decides how a container is locked down and hands
 * that over as a struct hutch__container_spec.
 *
 * Conventions: `what` starts the error message ("start the session's
 * container: ..."), so errors keep saying what the caller was doing.
 * Functions return 0 or a negative HUTCH_E* code with *err set; "find"
 * functions return 1 (there), 0 (the engine answered 404; no error) or a
 * negative code.  json_object answers belong to the caller (json_object_put).
 */
#ifndef HUTCH_ENGINE_API_H
#define HUTCH_ENGINE_API_H

#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include <hutch/engine.h>
#include <hutch/error.h>

#include "http.h"

/* ---- containers ------------------------------------------------------- */

/* A mount of a volume ("volume") or a host directory ("bind"). */
struct hutch__mount {
	const char *type;
	const char *source;
	const char *target;
};

/*
 * A container to create.  Zero/NULL fields are left out of the request
 * (the engine's default), except where a field says otherwise; `lockdown`
 * adds the settings that only a session's own container carries.  Borrowed
 * pointers, for the duration of the call.
 */
struct hutch__container_spec {
	const char *image;
	const char *const *entrypoint; /* the command; entrypoint_count items */
	size_t entrypoint_count;
	int empty_cmd;		 /* send an empty Cmd: the image's is not run */
	const char *working_dir; /* NULL: the image's */
	const char *user;	 /* NULL: the image's */
	char *const *env;	 /* "K=V" */
	size_t env_count;
	json_object *labels; /* borrowed; NULL: none */
	struct hutch__mount mounts[4];
	size_t mount_count;
	const char *bind; /* one "SRC:DST:OPTIONS" host bind, or NULL */
	const char *network_mode;
	int network_disabled;
	int stop_timeout; /* seconds; 0: the engine's */

	/* With `lockdown`: all of these are sent, zero included. */
	int lockdown;
	int init;		  /* the engine's init as PID 1 */
	int cap_drop_all;	  /* CapDrop ["ALL"] */
	char *const *cap_add;	  /* capabilities given back */
	size_t cap_add_count;	  /* */
	int no_new_privileges;	  /* SecurityOpt */
	int64_t pids_limit;	  /* PidsLimit */
	int64_t memory;		  /* Memory */
	int64_t memory_swap;	  /* MemorySwap (memory + swap) */
	int64_t nano_cpus;	  /* NanoCpus */
	int read_only_rootfs;	  /* ReadonlyRootfs */
	const char *tmpfs_target; /* a tmpfs mount, or NULL */
	const char *tmpfs_options;
};

/* Create container `name`; its Id lands in `id` (may be NULL).  The name
 * is taken atomically: HUTCH_ECONFLICT when it is taken. */
int hutch__api_container_create(hutch_engine *e, const char *name,
				const struct hutch__container_spec *spec,
				char *id, size_t idsz, const char *what,
				hutch_error **err);
int hutch__api_container_start(hutch_engine *e, const char *container,
			       const char *what, hutch_error **err);
int hutch__api_container_unpause(hutch_engine *e, const char *container,
				 const char *what, hutch_error **err);
/* Remove a container by name or id; `force` also stops it. */
int hutch__api_container_remove(hutch_engine *e, const char *container,
				int force, const char *what, hutch_error **err);
/* The container's inspection (Id, Image, Config.Labels, State...). */
int hutch__api_container_inspect(hutch_engine *e, const char *container,
				 json_object **out, const char *what,
				 hutch_error **err);
/* Same, 1/0 for there/404; `out` may be NULL. */
int hutch__api_container_find(hutch_engine *e, const char *container,
			      json_object **out, const char *what,
			      hutch_error **err);
/* What the agent's channel needs to know of a container (agent_chan.c). */
struct hutch__container_agent_info {
	int running; /* State.Running */
	long pid;    /* State.Pid, as the engine's host sees it; 0: none */
	char hostname[256]; /* Config.Hostname, "" when none or too long */
	/* The host path of the volume mounted at HUTCH_AGENT_DIR (its
	 * Source), "" when there is none or it is too long. */
	char agent_source[4096];
};
/* Inspect `container` for the above: 0, or the engine's error (a missing
 * container is HUTCH_ENOTFOUND). */
int hutch__api_container_agent_info(hutch_engine *e, const char *container,
				    struct hutch__container_agent_info *out,
				    const char *what, hutch_error **err);
/* Containers carrying `label` ("KEY" or "KEY=VALUE"): all of them with
 * `all`, else the running ones; an array in *out. */
int hutch__api_container_list(hutch_engine *e, const char *label, int all,
			      json_object **out, const char *what,
			      hutch_error **err);

/* ---- archives (the few the sessions and gc make) ------------------------ */

/* PUT tar `data` (len bytes) into `container` (running or not) at `dir`;
 * with `copy_uidgid` the engine gives the extracted entries the container
 * user's owner (Podman's copyUIDGID). */
int hutch__api_archive_put(hutch_engine *e, const char *container,
			   const char *dir, int copy_uidgid, const char *data,
			   size_t len, const char *what, hutch_error **err);
/* HEAD of `path` in `container`: 1 with the engine's stat header
 * (X-Docker-Container-Path-Stat) in `stat` when the engine answered 200,
 * 0 for any other answer (no error), or a transport error. */
int hutch__api_archive_stat(hutch_engine *e, const char *container,
			    const char *path, char *stat, size_t statsz,
			    hutch_error **err);

/* Whether `path` exists in `container`: 1 (HEAD answered 200), 0 (404),
 * or an error for any other answer. */
int hutch__api_archive_exists(hutch_engine *e, const char *container,
			      const char *path, const char *what,
			      hutch_error **err);

/* ---- volumes -------------------------------------------------------------- */

/* Create volume `name` with `labels` (borrowed) and, when not NULL, the
 * local driver's "o" option.  Docker answers success for a volume that
 * exists, Podman HUTCH_ECONFLICT: the labels say who made it. */
int hutch__api_volume_create(hutch_engine *e, const char *name,
			     json_object *labels, const char *driver_opt_o,
			     const char *what, hutch_error **err);
/* The volume's inspection (Labels, CreatedAt, Options). */
int hutch__api_volume_inspect(hutch_engine *e, const char *name,
			      json_object **out, const char *what,
			      hutch_error **err);
/* Same, 1/0 for there/404; `out` may be NULL. */
int hutch__api_volume_find(hutch_engine *e, const char *name, json_object **out,
			   const char *what, hutch_error **err);
int hutch__api_volume_remove(hutch_engine *e, const char *name,
			     const char *what, hutch_error **err);
/* Volumes carrying `label`: the engine's answer ({"Volumes": [...]}). */
int hutch__api_volume_list(hutch_engine *e, const char *label,
			   json_object **out, const char *what,
			   hutch_error **err);

/* ---- images and the engine ------------------------------------------------ */

/* The image's inspection; `image` must be a valid reference (checked by
 * the caller: it goes into the path as it is). */
int hutch__api_image_inspect(hutch_engine *e, const char *image,
			     json_object **out, const char *what,
			     hutch_error **err);
/* From the image's inspection: its ID into `id` (may be NULL; "" unless
 * a whole "sha256:" and 64 hex digits), *match (may be NULL) 1 when its
 * labels hold every "KEY=VALUE" of `labels` (none given: 0), *named (may
 * be NULL) 1 when it has a name (a repository tag).  HUTCH_ENOTFOUND when
 * there is no image. */
int hutch__api_image_facts(hutch_engine *e, const char *image, char *id,
			   size_t idsz, const char *const *labels,
			   size_t nlabels, int *match, int *named,
			   const char *what, hutch_error **err);
/*
 * POST /images/create?fromSrc=- with the tar pulled from `source` (any
 * compression the engine reads), as image `ref` (NAME:TAG, checked by the
 * caller: it goes into the query escaped but unparsed).  `changes` are
 * Dockerfile instructions ("ENV K=V", "WORKDIR /w"), each sent as a
 * `changes` parameter.  Returns 0 when the engine answered 200 with no
 * error in its progress stream (Docker reports some failures there).
 */
int hutch__api_image_import(hutch_engine *e, const char *ref,
			    const char *const *changes, size_t nchanges,
			    hutch__source_fn source, void *payload,
			    const hutch_cancel *cancel, const char *what,
			    hutch_error **err);
/*
 * One instruction of an import's `changes` that carries a value
 * (ENV KEY=VALUE, WORKDIR, USER; @key, @keylen bytes, only for ENV), in
 * *@out (free it),
 * so that the image gets @value byte for byte: the engines read these
 * differently.  Docker parses them as a Dockerfile would (quotes,
 * backslashes and $VARIABLE expansion); Podman strips one pair of double
 * quotes around an ENV value and takes everything else as it is.  The
 * caller has refused newlines (each would start another instruction).
 * 0, or -1 (out of memory).
 */
int hutch__api_image_change(int podman, const char *instr, const char *key,
			    size_t keylen, const char *value, char **out);
/* DELETE /images/IMAGE (`image` checked as for inspect). */
int hutch__api_image_remove(hutch_engine *e, const char *image, int force,
			    const char *what, hutch_error **err);
/* GET /_ping (unversioned). */
int hutch__api_ping(hutch_engine *e, hutch_error **err);
/* GET /version (unversioned): the engine's JSON answer. */
int hutch__api_version(hutch_engine *e, json_object **out, hutch_error **err);
/* Ask the engine (GET /version) which API version it speaks and use it
 * from now on; an engine's handle calls this when the engine says the
 * version hutch pins is too new for it (http.c). */
int hutch__api_negotiate(hutch_engine *e, hutch_error **err);
/* 1 on Podman, 0 on Docker: only Podman serves its own API beside the
 * Docker one (GET /version costs Podman seconds; this does not). */
int hutch__api_is_podman(hutch_engine *e, hutch_error **err);

#endif
