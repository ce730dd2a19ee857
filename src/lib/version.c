/*
 * version.c
 */
#include <hutch/hutch.h>

#include "common.h"

const char *hutch_version(void)
{
	return PACKAGE_VERSION;
}
