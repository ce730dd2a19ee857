/*
 * test_setuid.c - hostile tests (see doc/threat-model.md)
 */
#include "harness.h"
