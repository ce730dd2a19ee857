/* Generated from src/agent/hutch-agent: do not edit. */
#define HUTCH_AGENT_BUILD "e86c7d8ed4b320f8"
