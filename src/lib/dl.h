/*
 * dl.h - libarchive and libcurl, loaded at their first use
 *
 * libhutch has no DT_NEEDED on either library: between them they pull in
 * some forty shared objects (TLS, Kerberos, LDAP, libxml2, ICU's data),
 * which every process linking libhutch would map and relocate at start,
 * `hutch version` included.  Instead each library is dlopen'd by its
 * SONAME (found by configure, config.h) the first time hutch needs it,
 * and the functions hutch calls are looked up once, under pthread_once.
 *
 * Include this header instead of <archive.h>, <archive_entry.h> and
 * <curl/curl.h>.  The calls keep their names: each is a macro for the
 * pointer in the table below, typed by the library's own declaration, so
 * the headers stay the source of truth for every signature.  Whatever
 * calls one must first have had 0 from hutch__dl_archive() or
 * hutch__dl_curl(), at the entry point that starts using the library.
 *
 * The destructors (archive_*_free, curl_*_cleanup, curl_free,
 * curl_slist_free_all) may be called with NULL before the library is
 * loaded, as a cleanup path does after a failed load: they do nothing.
 */
#ifndef HUTCH_DL_H
#define HUTCH_DL_H

#ifdef HUTCH_DL_LINKED
/* A program that links libarchive itself (the fuzz targets, which build
 * sync_out.c alone), or http.c compiled again for curl.h's type checks
 * only (Makefile.am): the calls are the libraries' own. */
#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>

#include "error.h"

static inline int hutch__dl_archive(hutch_error **err)
{
	(void)err;
	return 0;
}

int hutch__dl_curl(hutch_error **err);
#else

/* libcurl's type-checking wrappers of the variadic setopt and getinfo
 * call the real functions by name, which would bring back the link. */
#ifndef CURL_DISABLE_TYPECHECK
#define CURL_DISABLE_TYPECHECK 1
#endif

#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>

#include "error.h"

/* The libarchive functions hutch calls. */
#define HUTCH_DL_ARCHIVE_SYMBOLS(X)              \
	X(archive_entry_clear)                   \
	X(archive_entry_filetype)                \
	X(archive_entry_free)                    \
	X(archive_entry_hardlink)                \
	X(archive_entry_mtime)                   \
	X(archive_entry_mtime_is_set)            \
	X(archive_entry_mtime_nsec)              \
	X(archive_entry_new)                     \
	X(archive_entry_pathname)                \
	X(archive_entry_perm)                    \
	X(archive_entry_set_filetype)            \
	X(archive_entry_set_gid)                 \
	X(archive_entry_set_hardlink)            \
	X(archive_entry_set_mtime)               \
	X(archive_entry_set_pathname)            \
	X(archive_entry_set_perm)                \
	X(archive_entry_set_rdevmajor)           \
	X(archive_entry_set_rdevminor)           \
	X(archive_entry_set_size)                \
	X(archive_entry_set_symlink)             \
	X(archive_entry_set_uid)                 \
	X(archive_entry_size)                    \
	X(archive_entry_symlink)                 \
	X(archive_error_string)                  \
	X(archive_read_data)                     \
	X(archive_read_data_block)               \
	X(archive_read_data_skip)                \
	X(archive_read_free)                     \
	X(archive_read_new)                      \
	X(archive_read_next_header)              \
	X(archive_read_open)                     \
	X(archive_read_open_memory)              \
	X(archive_read_support_format_tar)       \
	X(archive_set_error)                     \
	X(archive_write_close)                   \
	X(archive_write_data)                    \
	X(archive_write_free)                    \
	X(archive_write_header)                  \
	X(archive_write_new)                     \
	X(archive_write_open)                    \
	X(archive_write_open_memory)             \
	X(archive_write_set_bytes_in_last_block) \
	X(archive_write_set_bytes_per_block)     \
	X(archive_write_set_format_option)       \
	X(archive_write_set_format_pax_restricted)

/* The libcurl functions hutch calls. */
#define HUTCH_DL_CURL_SYMBOLS(X)    \
	X(curl_easy_cleanup)        \
	X(curl_easy_escape)         \
	X(curl_easy_getinfo)        \
	X(curl_easy_init)           \
	X(curl_easy_perform)        \
	X(curl_easy_recv)           \
	X(curl_easy_reset)          \
	X(curl_easy_send)           \
	X(curl_easy_setopt)         \
	X(curl_easy_strerror)       \
	X(curl_free)                \
	X(curl_global_init)         \
	X(curl_multi_add_handle)    \
	X(curl_multi_cleanup)       \
	X(curl_multi_info_read)     \
	X(curl_multi_init)          \
	X(curl_multi_perform)       \
	X(curl_multi_poll)          \
	X(curl_multi_remove_handle) \
	X(curl_multi_setopt)        \
	X(curl_share_cleanup)       \
	X(curl_share_init)          \
	X(curl_share_setopt)        \
	X(curl_slist_append)        \
	X(curl_slist_free_all)

/* A pointer typed by the library's declaration of `name`: this comes
 * before the macros below, so `name` is still the library's here. */
#define HUTCH_DL_POINTER(name) __typeof__(name) *sym_##name;

struct hutch__dl_archive_syms {
	HUTCH_DL_ARCHIVE_SYMBOLS(HUTCH_DL_POINTER)
};

struct hutch__dl_curl_syms {
	HUTCH_DL_CURL_SYMBOLS(HUTCH_DL_POINTER)
};

#undef HUTCH_DL_POINTER

/* Filled once by a successful load and never changed after; read without
 * a lock, as pthread_once orders the load before any caller's return. */
extern struct hutch__dl_archive_syms hutch__dl_archive_syms;
extern struct hutch__dl_curl_syms hutch__dl_curl_syms;

/*
 * Load libarchive, once per process; thread-safe.  0, or HUTCH_EFAILED
 * with "cannot load libarchive.so.13: <why>" in *err (err may be NULL):
 * the same answer to every later call, as the load is not retried.
 */
int hutch__dl_archive(hutch_error **err);

/*
 * Load libcurl and run curl_global_init(), once per process under the
 * same pthread_once (curl_global_init is not thread-safe in older
 * libcurl, and must come before any other call).  0, or HUTCH_EFAILED
 * with why in *err (err may be NULL).
 */
int hutch__dl_curl(hutch_error **err);

/* The calls by their own names.  (One line per function: the
 * preprocessor cannot define macros from the lists above.  A function
 * missing here would be called directly and need the link again, which
 * tests/dl.test catches; one missing above fails to compile.) */
#define archive_entry_clear (*hutch__dl_archive_syms.sym_archive_entry_clear)
#define archive_entry_filetype \
	(*hutch__dl_archive_syms.sym_archive_entry_filetype)
#define archive_entry_free (*hutch__dl_archive_syms.sym_archive_entry_free)
#define archive_entry_hardlink \
	(*hutch__dl_archive_syms.sym_archive_entry_hardlink)
#define archive_entry_mtime (*hutch__dl_archive_syms.sym_archive_entry_mtime)
#define archive_entry_mtime_is_set \
	(*hutch__dl_archive_syms.sym_archive_entry_mtime_is_set)
#define archive_entry_mtime_nsec \
	(*hutch__dl_archive_syms.sym_archive_entry_mtime_nsec)
#define archive_entry_new (*hutch__dl_archive_syms.sym_archive_entry_new)
#define archive_entry_pathname \
	(*hutch__dl_archive_syms.sym_archive_entry_pathname)
#define archive_entry_perm (*hutch__dl_archive_syms.sym_archive_entry_perm)
#define archive_entry_set_filetype \
	(*hutch__dl_archive_syms.sym_archive_entry_set_filetype)
#define archive_entry_set_gid \
	(*hutch__dl_archive_syms.sym_archive_entry_set_gid)
#define archive_entry_set_hardlink \
	(*hutch__dl_archive_syms.sym_archive_entry_set_hardlink)
#define archive_entry_set_mtime \
	(*hutch__dl_archive_syms.sym_archive_entry_set_mtime)
#define archive_entry_set_pathname \
	(*hutch__dl_archive_syms.sym_archive_entry_set_pathname)
#define archive_entry_set_perm \
	(*hutch__dl_archive_syms.sym_archive_entry_set_perm)
#define archive_entry_set_rdevmajor \
	(*hutch__dl_archive_syms.sym_archive_entry_set_rdevmajor)
#define archive_entry_set_rdevminor \
	(*hutch__dl_archive_syms.sym_archive_entry_set_rdevminor)
#define archive_entry_set_size \
	(*hutch__dl_archive_syms.sym_archive_entry_set_size)
#define archive_entry_set_symlink \
	(*hutch__dl_archive_syms.sym_archive_entry_set_symlink)
#define archive_entry_set_uid \
	(*hutch__dl_archive_syms.sym_archive_entry_set_uid)
#define archive_entry_size (*hutch__dl_archive_syms.sym_archive_entry_size)
#define archive_entry_symlink \
	(*hutch__dl_archive_syms.sym_archive_entry_symlink)
#define archive_error_string (*hutch__dl_archive_syms.sym_archive_error_string)
#define archive_read_data (*hutch__dl_archive_syms.sym_archive_read_data)
#define archive_read_data_block \
	(*hutch__dl_archive_syms.sym_archive_read_data_block)
#define archive_read_data_skip \
	(*hutch__dl_archive_syms.sym_archive_read_data_skip)
#define archive_read_free (*hutch__dl_archive_syms.sym_archive_read_free)
#define archive_read_new (*hutch__dl_archive_syms.sym_archive_read_new)
#define archive_read_next_header \
	(*hutch__dl_archive_syms.sym_archive_read_next_header)
#define archive_read_open (*hutch__dl_archive_syms.sym_archive_read_open)
#define archive_read_open_memory \
	(*hutch__dl_archive_syms.sym_archive_read_open_memory)
#define archive_read_support_format_tar \
	(*hutch__dl_archive_syms.sym_archive_read_support_format_tar)
#define archive_set_error (*hutch__dl_archive_syms.sym_archive_set_error)
#define archive_write_close (*hutch__dl_archive_syms.sym_archive_write_close)
#define archive_write_data (*hutch__dl_archive_syms.sym_archive_write_data)
#define archive_write_free (*hutch__dl_archive_syms.sym_archive_write_free)
#define archive_write_header (*hutch__dl_archive_syms.sym_archive_write_header)
#define archive_write_new (*hutch__dl_archive_syms.sym_archive_write_new)
#define archive_write_open (*hutch__dl_archive_syms.sym_archive_write_open)
#define archive_write_open_memory \
	(*hutch__dl_archive_syms.sym_archive_write_open_memory)
#define archive_write_set_bytes_in_last_block \
	(*hutch__dl_archive_syms.sym_archive_write_set_bytes_in_last_block)
#define archive_write_set_bytes_per_block \
	(*hutch__dl_archive_syms.sym_archive_write_set_bytes_per_block)
#define archive_write_set_format_option \
	(*hutch__dl_archive_syms.sym_archive_write_set_format_option)
#define archive_write_set_format_pax_restricted \
	(*hutch__dl_archive_syms.sym_archive_write_set_format_pax_restricted)

/* <curl/curl.h> defines these four as function-like macros (the type
 * checks, or a check of the argument count without them). */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_share_setopt
#undef curl_multi_setopt
#define curl_easy_cleanup (*hutch__dl_curl_syms.sym_curl_easy_cleanup)
#define curl_easy_escape (*hutch__dl_curl_syms.sym_curl_easy_escape)
#define curl_easy_getinfo (*hutch__dl_curl_syms.sym_curl_easy_getinfo)
#define curl_easy_init (*hutch__dl_curl_syms.sym_curl_easy_init)
#define curl_easy_perform (*hutch__dl_curl_syms.sym_curl_easy_perform)
#define curl_easy_recv (*hutch__dl_curl_syms.sym_curl_easy_recv)
#define curl_easy_reset (*hutch__dl_curl_syms.sym_curl_easy_reset)
#define curl_easy_send (*hutch__dl_curl_syms.sym_curl_easy_send)
#define curl_easy_setopt (*hutch__dl_curl_syms.sym_curl_easy_setopt)
#define curl_easy_strerror (*hutch__dl_curl_syms.sym_curl_easy_strerror)
#define curl_free (*hutch__dl_curl_syms.sym_curl_free)
#define curl_global_init (*hutch__dl_curl_syms.sym_curl_global_init)
#define curl_multi_add_handle (*hutch__dl_curl_syms.sym_curl_multi_add_handle)
#define curl_multi_cleanup (*hutch__dl_curl_syms.sym_curl_multi_cleanup)
#define curl_multi_info_read (*hutch__dl_curl_syms.sym_curl_multi_info_read)
#define curl_multi_init (*hutch__dl_curl_syms.sym_curl_multi_init)
#define curl_multi_perform (*hutch__dl_curl_syms.sym_curl_multi_perform)
#define curl_multi_poll (*hutch__dl_curl_syms.sym_curl_multi_poll)
#define curl_multi_remove_handle \
	(*hutch__dl_curl_syms.sym_curl_multi_remove_handle)
#define curl_multi_setopt (*hutch__dl_curl_syms.sym_curl_multi_setopt)
#define curl_share_cleanup (*hutch__dl_curl_syms.sym_curl_share_cleanup)
#define curl_share_init (*hutch__dl_curl_syms.sym_curl_share_init)
#define curl_share_setopt (*hutch__dl_curl_syms.sym_curl_share_setopt)
#define curl_slist_append (*hutch__dl_curl_syms.sym_curl_slist_append)
#define curl_slist_free_all (*hutch__dl_curl_syms.sym_curl_slist_free_all)

#endif /* HUTCH_DL_LINKED */
#endif
