/*
 * hutch/hutch.h - everything libhutch offers
 */
#ifndef HUTCH_HUTCH_H
#define HUTCH_HUTCH_H

#include <hutch/error.h>
#include <hutch/engine.h>
#include <hutch/fleet.h>
#include <hutch/session.h>
#include <hutch/exec.h>
#include <hutch/portfwd.h>
#include <hutch/fs.h>
#include <hutch/process.h>
#include <hutch/sync.h>
#include <hutch/image.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version, e.g. "0.1.0".  Static. */
const char *hutch_version(void);

#ifdef __cplusplus
}
#endif
#endif
