/*
 * test_races.c - hostile tests (see doc/threat-model.md)
 */
#include "harness.h"
