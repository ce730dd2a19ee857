/*
 * dl.c - libarchive and libcurl, loaded at their first use (see dl.h)
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "dl.h"

/* dlsym() answers a void *; POSIX makes it convertible to a function
 * pointer, which memcpy below relies on being the same size. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
	       "function pointers are not the size of void *");

/* The destructors before a load, or after a failed one: there is no
 * object of the library yet, so what a cleanup path hands them is NULL
 * (dl.h). */
static int archive_free_none(struct archive *a)
{
	(void)a;
	return ARCHIVE_OK;
}

static void archive_entry_free_none(struct archive_entry *entry)
{
	(void)entry;
}

static void curl_easy_cleanup_none(CURL *easy)
{
	(void)easy;
}

static CURLMcode curl_multi_cleanup_none(CURLM *multi)
{
	(void)multi;
	return CURLM_OK;
}

static CURLSHcode curl_share_cleanup_none(CURLSH *share)
{
	(void)share;
	return CURLSHE_OK;
}

static void curl_free_none(void *p)
{
	(void)p;
}

static void curl_slist_free_all_none(struct curl_slist *list)
{
	(void)list;
}

struct hutch__dl_archive_syms hutch__dl_archive_syms = {
	.sym_archive_entry_free = archive_entry_free_none,
	.sym_archive_read_free = archive_free_none,
	.sym_archive_write_free = archive_free_none,
};

struct hutch__dl_curl_syms hutch__dl_curl_syms = {
	.sym_curl_easy_cleanup = curl_easy_cleanup_none,
	.sym_curl_free = curl_free_none,
	.sym_curl_multi_cleanup = curl_multi_cleanup_none,
	.sym_curl_share_cleanup = curl_share_cleanup_none,
	.sym_curl_slist_free_all = curl_slist_free_all_none,
};

/* The outcome of a load, written inside its pthread_once only. */
struct outcome {
	int rc;
	char why[512]; /* dlerror()'s words are a path and a reason */
};

static int failed(struct outcome *o, const char *soname, const char *why)
{
	snprintf(o->why, sizeof(o->why), "cannot load %s: %s", soname,
		 why ? why : "unknown error");
	o->rc = HUTCH_EFAILED;
	return -1;
}

/* One symbol into `slot`; the caller's table is not the live one, so a
 * failure halfway leaves the live table as it was. */
static int resolve(void *handle, const char *soname, const char *name,
		   void *slot, struct outcome *o)
{
	void *p;

	dlerror();
	p = dlsym(handle, name);
	if (!p)
		return failed(o, soname, dlerror());
	memcpy(slot, &p, sizeof(p));
	return 0;
}

/* RTLD_LOCAL: the libraries' symbols stay out of the global scope, where
 * they could satisfy (or clash with) some other object's references.
 * The handle is never closed: the table points into the library. */
static void *open_lib(const char *soname, struct outcome *o)
{
	void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (!handle)
		failed(o, soname, dlerror());
	return handle;
}

/* `name` only beside # and ##: an argument used otherwise is expanded
 * first, and dl.h's macro of that name would replace it. */
#define RESOLVE(name)                                             \
	if (resolve(handle, soname, #name, &t.sym_##name, o) < 0) \
		goto fail;

static pthread_once_t archive_once = PTHREAD_ONCE_INIT;
static struct outcome archive_outcome;

static void archive_load(void)
{
	struct hutch__dl_archive_syms t;
	struct outcome *o = &archive_outcome;
	const char *soname = HUTCH_LIBARCHIVE_SONAME;
	void *handle = open_lib(soname, o);

	if (!handle)
		return;
	HUTCH_DL_ARCHIVE_SYMBOLS(RESOLVE)
	hutch__dl_archive_syms = t;
	return;
fail:
	dlclose(handle);
}

int hutch__dl_archive(hutch_error **err)
{
	pthread_once(&archive_once, archive_load);
	if (archive_outcome.rc < 0)
		return hutch__error_set(err, archive_outcome.rc, "%s",
					archive_outcome.why);
	return 0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static struct outcome curl_outcome;

static void curl_load(void)
{
	struct hutch__dl_curl_syms t;
	struct outcome *o = &curl_outcome;
	const char *soname = HUTCH_LIBCURL_SONAME;
	void *handle = open_lib(soname, o);

	if (!handle)
		return;
	HUTCH_DL_CURL_SYMBOLS(RESOLVE)
	/* Before any other libcurl call, and once: curl_global_init is not
	 * thread-safe before libcurl 7.84, and this once is what makes it
	 * so here.  Its state is never cleaned up, as the library stays. */
	if (t.sym_curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(o->why, sizeof(o->why),
			 "libcurl (%s) failed to initialise", soname);
		o->rc = HUTCH_EFAILED;
		return;
	}
	hutch__dl_curl_syms = t;
	return;
fail:
	dlclose(handle);
}

int hutch__dl_curl(hutch_error **err)
{
	pthread_once(&curl_once, curl_load);
	if (curl_outcome.rc < 0)
		return hutch__error_set(err, curl_outcome.rc, "%s",
					curl_outcome.why);
	return 0;
}
