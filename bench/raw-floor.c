/*
 * raw-floor - the engine's own floor for running `true` in a container:
 * exec create, exec start and exec inspect on one keep-alive libcurl
 * connection, nothing else.  The benchmark compares `hutch exec` with it.
 *
 *   raw-floor unix:///path/to/engine.sock CONTAINER [ITERATIONS [CMD...]]
 *   raw-floor unix:///path/to/engine.sock --create IMAGE NAME
 *
 * Prints the mean milliseconds per exec over the iterations (after one
 * warm-up when ITERATIONS > 1), so it can serve both as a whole process
 * (ITERATIONS=1) and as an in-process loop.  CMD (default `true`) is run
 * instead of `true`; its output is read and dropped.
 *
 * --create is the floor of a new sandbox: container create (no network,
 * sleeping forever) and start, two requests, milliseconds printed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <curl/curl.h>

struct buf {
	char data[65536];
	size_t len;
};

static size_t keep(char *p, size_t size, size_t n, void *u)
{
	struct buf *b = u;
	size_t len = size * n, room = sizeof(b->data) - 1 - b->len;

	if (len > room)
		len = room;
	memcpy(b->data + b->len, p, len);
	b->len += len;
	b->data[b->len] = '\0';
	return size * n;
}

static long call(CURL *c, const char *sock, const char *method,
		 const char *path, const char *body, struct buf *out)
{
	char url[512];
	struct curl_slist *h = NULL;
	long status = 0;

	snprintf(url, sizeof(url), "http://localhost/v1.41%s", path);
	out->len = 0;
	out->data[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, sock);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, keep);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
	if (body) {
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	} else {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (curl_easy_perform(c) != CURLE_OK)
		return -1;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(h);
	return status;
}

static char cmd_json[8192] = "[\"true\"]";

/* CMD... as a JSON array of strings (", \ and control bytes escaped). */
static int set_cmd(char **argv, int argc)
{
	size_t n = 0;

	n += (size_t)snprintf(cmd_json + n, sizeof(cmd_json) - n, "[");
	for (int i = 0; i < argc; i++) {
		n += (size_t)snprintf(cmd_json + n, sizeof(cmd_json) - n,
				      "%s\"", i ? "," : "");
		for (const unsigned char *p = (const unsigned char *)argv[i];
		     *p && n < sizeof(cmd_json) - 16; p++)
			n += (size_t)snprintf(cmd_json + n,
					      sizeof(cmd_json) - n,
					      *p == '"' || *p == '\\' ? "\\%c" :
					      *p < 0x20 ? "\\u%04x" :
							  "%c",
					      *p);
		n += (size_t)snprintf(cmd_json + n, sizeof(cmd_json) - n, "\"");
		if (n >= sizeof(cmd_json) - 16)
			return -1;
	}
	snprintf(cmd_json + n, sizeof(cmd_json) - n, "]");
	return 0;
}

static int create_start(CURL *c, const char *sock, const char *image,
			const char *name)
{
	struct buf out;
	char path[512], body[1024];

	snprintf(path, sizeof(path), "/containers/create?name=%s", name);
	snprintf(body, sizeof(body),
		 "{\"Image\":\"%s\",\"Cmd\":[\"sleep\",\"2147483647\"],"
		 "\"HostConfig\":{\"NetworkMode\":\"none\",\"Init\":true}}",
		 image);
	if (call(c, sock, "POST", path, body, &out) != 201) {
		fprintf(stderr, "raw-floor: create: %s\n", out.data);
		return -1;
	}
	snprintf(path, sizeof(path), "/containers/%s/start", name);
	if (call(c, sock, "POST", path, "", &out) != 204) {
		fprintf(stderr, "raw-floor: start: %s\n", out.data);
		return -1;
	}
	return 0;
}

static int one_exec(CURL *c, const char *sock, const char *container)
{
	struct buf out;
	char path[512], id[128], body[sizeof(cmd_json) + 128];
	const char *p;

	snprintf(path, sizeof(path), "/containers/%s/exec", container);
	snprintf(body, sizeof(body),
		 "{\"AttachStdout\":true,\"AttachStderr\":true,\"Cmd\":%s}",
		 cmd_json);
	if (call(c, sock, "POST", path, body, &out) != 201)
		return -1;
	p = strstr(out.data, "\"Id\":\"");
	if (!p || sscanf(p + 6, "%64[0-9a-f]", id) != 1)
		return -1;
	snprintf(path, sizeof(path), "/exec/%s/start", id);
	if (call(c, sock, "POST", path, "{\"Detach\":false,\"Tty\":false}",
		 &out) != 200)
		return -1;
	snprintf(path, sizeof(path), "/exec/%s/json", id);
	/* Poll as hutch must: Podman may say "running" for a moment. */
	for (;;) {
		if (call(c, sock, "GET", path, NULL, &out) != 200)
			return -1;
		if (strstr(out.data, "\"Running\":false"))
			return 0;
	}
}

int main(int argc, char **argv)
{
	struct timespec a, b;
	const char *sock;
	CURL *c;
	int n;

	if (argc < 3 || strncmp(argv[1], "unix://", 7) != 0 ||
	    (strcmp(argv[2], "--create") == 0 && argc != 5)) {
		fprintf(stderr,
			"usage: raw-floor unix:///SOCKET CONTAINER [ITERATIONS [CMD...]]\n"
			"       raw-floor unix:///SOCKET --create IMAGE NAME\n");
		return 2;
	}
	sock = argv[1] + 7;
	n = argc > 3 ? atoi(argv[3]) : 1;
	if (n < 1)
		n = 1;
	if (argc > 4 && strcmp(argv[2], "--create") != 0 &&
	    set_cmd(argv + 4, argc - 4) < 0) {
		fprintf(stderr, "raw-floor: command too long\n");
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	c = curl_easy_init();
	if (!c)
		return 1;
	if (strcmp(argv[2], "--create") == 0) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		if (create_start(c, sock, argv[3], argv[4]) < 0)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("%.3f\n", (b.tv_sec - a.tv_sec) * 1e3 +
					 (b.tv_nsec - a.tv_nsec) / 1e6);
		curl_easy_cleanup(c);
		return 0;
	}
	if (n > 1 && one_exec(c, sock, argv[2]) < 0) {
		fprintf(stderr, "raw-floor: exec failed\n");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++) {
		if (one_exec(c, sock, argv[2]) < 0) {
			fprintf(stderr, "raw-floor: exec failed\n");
			return 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.3f\n",
	       ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6) /
		       n);
	curl_easy_cleanup(c);
	curl_global_cleanup();
	return 0;
}
