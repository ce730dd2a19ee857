/* Generated from src/agent/hutch-agent: do not edit. */
#define HUTCH_AGENT_BUILD "5b9a872bc84e8715"
