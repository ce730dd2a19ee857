/*
 * http.h - connection pool of an engine handle
 */
#ifndef HUTCH_HTTP_H
#define HUTCH_HTTP_H

#include <hutch/engine.h>

/* Close every pooled connection. */
void hutch__http_pool_free(hutch_engine *e);

/* Share TLS sessions and DNS answers between the engine's connections.
 * 0, or -1 (the connections then work without sharing). */
int hutch__http_share_init(hutch_engine *e);

/* One-time process-wide libcurl setup; safe to call from many threads. */
int hutch__http_global_init(void);

#endif
