/*
 * agent_bin.S - the static hutch-agent binary, embedded in libhutch
 *
 * libhutch copies the agent into every container it creates, so it must
 * carry the bytes itself: no install path to find at run time, and a
 * library and its agent can never come from different builds.
 */
	.section .rodata
	.balign 16
	.globl hutch__agent_start
	.hidden hutch__agent_start
	.type hutch__agent_start, @object
hutch__agent_start:
	.incbin "hutch-agent"
	.globl hutch__agent_end
	.hidden hutch__agent_end
hutch__agent_end:
	.byte 0
	.section .note.GNU-stack,"",@progbits
