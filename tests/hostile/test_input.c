/*
 * test_input.c - hostile tests (see doc/threat-model.md)
 */
#include "harness.h"
