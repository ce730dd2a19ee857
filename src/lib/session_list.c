/*
 * session_list.c - describing and removing sessions
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "common.h"
#include "engine_api.h"
#include "error.h"
#include "session_internal.h"

static int remove_container(hutch_session *s, hutch_error **err)
{
	return hutch__session_remove_container(s, NULL, err);
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
	const char *ws = hutch__label_get(labels, HUTCH_LABEL_WORKSPACE);
	const char *created = hutch__label_get(labels, HUTCH_LABEL_CREATED);

	if (!i->name)
		i->name = dup_or_null(
			hutch__label_get(labels, HUTCH_LABEL_SESSION));
	if (!i->image)
		i->image = dup_or_null(
			hutch__label_get(labels, HUTCH_LABEL_IMAGE));
	if (!i->hutch_version)
		i->hutch_version = dup_or_null(
			hutch__label_get(labels, HUTCH_LABEL_VERSION));
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
		i->user =
			dup_or_null(hutch__label_get(labels, HUTCH_LABEL_USER));
	if (i->memory < 0)
		i->memory = hutch__label_int(labels, HUTCH_LABEL_MEMORY);
	if (i->nano_cpus < 0)
		i->nano_cpus = hutch__label_int(labels, HUTCH_LABEL_CPUS);
	if (i->pids < 0)
		i->pids = hutch__label_int(labels, HUTCH_LABEL_PIDS);
	if (!i->cap_add)
		i->cap_add =
			dup_or_null(hutch__label_get(labels, HUTCH_LABEL_CAPS));
	if (!i->network)
		i->network = dup_or_null(
			hutch__label_get(labels, HUTCH_LABEL_NETWORK));
	if (i->read_only < 0)
		i->read_only =
			(int)hutch__label_int(labels, HUTCH_LABEL_READONLY);
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
	    !(name = hutch__label_get(*labels, HUTCH_LABEL_SESSION)) ||
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
			if (i &&
			    (hutch__label_get(labels, HUTCH_LABEL_SYSTEM) !=
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
