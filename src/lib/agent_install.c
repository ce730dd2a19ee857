/*
 * agent_install.c - giving a session made by another hutch this build's agent
 *
 * Every exec runs the agent at HUTCH_AGENT_RUN_PATH, a name that carries
 * this build's hash (agent_blob.h).  A container whose agent came from
 * another build (a session made by an older hutch, still running or
 * stopped and started again) has no file there, and the runtime refuses
 * the exec before anything of the command ran: runc and crun exit 126 or
 * 127 and say so, naming the path, as the stream's first and only output
 * (Docker 20.10: on stdout, "OCI runtime exec failed: ... exec:
 * \"PATH\": stat PATH: no such file or directory"; Podman 4.3: on stderr,
 * "Error: runc: exec failed: ...").  Then the library installs its agent
 * and runs the command once more.
 *
 * A command can print the same words.  So the text only makes us ask the
 * engine (an archive HEAD) whether the file is really missing, and only a
 * 404 installs and runs again.  That answer is trustworthy: the file and
 * its directory belong to HUTCH_AGENT_OWNER_UID, a uid no session and no
 * command may run as, so no command could have removed it after the exec
 * started; missing now means missing then, when the runtime refused.
 */
#include <string.h>

#include "agent_blob.h"
#include "agent_install.h"
#include "engine_api.h"
#include "session_internal.h"

int hutch__agent_missing_text(const char *data, size_t len)
{
	static const char path[] = HUTCH_AGENT_RUN_PATH;

	return memmem(data, len, path, sizeof(path) - 1) != NULL;
}

int hutch__agent_install_if_missing(hutch_session *s, hutch_error **err)
{
	int rc = hutch__api_archive_exists(s->engine, s->container,
					   HUTCH_AGENT_RUN_PATH,
					   "look for the agent", err);

	if (rc != 0)
		return rc < 0 ? rc : 0; /* there: not ours to run again */
	rc = hutch__session_put_agent(s, err);
	return rc < 0 ? rc : 1;
}
