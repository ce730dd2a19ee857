/*
 * proc.h - the on-disk layout of a background process, shared by its
 * writer (spawn.c, the supervisor) and its readers (procs.c: ps, logs,
 * wait; proctree.c: kill)
 *
 * HUTCH_AGENT_PROC_DIR/ID/ holds, all written by the supervisor:
 *   meta            "pid N\nsup PID START\nuid N\nstarted MS\n"
 *   argv            the command line, NUL-separated (first ARGV_KEEP bytes)
 *   log.OFFSET      output segments (OFFSET: 16 hex digits, the payload
 *                   offset of the segment's first byte); records of a
 *                   5-byte header (stream '1' or '2', payload length as
 *                   32-bit little endian, 1..LOG_RECORD_MAX) and the payload
 *   end             once the main process has ended:
 *                   "exit CODE ENDED_MS OUTPUT_BYTES\n" or
 *                   "signal SIG ENDED_MS OUTPUT_BYTES\n" (renamed into place)
 *
 * The directory is the session user's (in a sticky, world-writable
 * parent), so whatever runs in the session can forge any of it.  Readers
 * trust nothing they read there beyond "this is what the directory says":
 * every file is opened with O_NOFOLLOW | O_NONBLOCK and must be a regular
 * file, every read is capped, every number is range-checked.
 */
#ifndef HUTCH_AGENT_PROC_H
#define HUTCH_AGENT_PROC_H

#include "agent.h"

#define PROC_META "meta"
#define PROC_ARGV "argv"
#define PROC_END "end"
#define PROC_END_TMP "end.tmp"
#define PROC_LOG_PREFIX "log."
#define PROC_LOG_NAME_LEN (sizeof(PROC_LOG_PREFIX) - 1 + 16)

/* Records carry at most one pipe read. */
#define LOG_RECORD_MAX 65536u
#define LOG_HEADER 5
/* A segment is closed once it holds this many bytes (headers included),
 * and only the current and the previous one are kept: on disk at most
 * HUTCH_AGENT_LOG_KEEP bytes, of which at least half the last output. */
#define LOG_SEGMENT_MAX (HUTCH_AGENT_LOG_KEEP / 2)
/* The argv file. */
#define ARGV_KEEP 4096

#endif /* HUTCH_AGENT_PROC_H */
