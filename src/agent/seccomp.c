/*
 * seccomp.c - the agent's syscall filter: no set-id bits, no device nodes
 *
 * A session's workspace can be a host directory (hutch up --workspace).
 * The host runs what is in it through its own mount, where nosuid and
 * no-new-privileges do not apply, so a file the sandbox makes there with
 * S_ISUID is a way into the account of its owner for every local user:
 * root's with --user root (root needs no capability to chmod its own
 * files), the directory owner's otherwise.  S_ISGID does the same for the
 * group, and a device node would give the host's users the device.
 *
 * The kernel never gives a file a set-id bit or a device type that no
 * syscall asked for (a new directory in a setgid directory inherits
 * S_ISGID from its parent: the parent already had it), and only these
 * syscalls ask: the chmod family, the creating opens (their mode) and
 * mknod.  This filter answers EPERM when one of them asks for S_ISUID,
 * S_ISGID, a character or a block device.  Everything else is allowed
 * here; the engine's own profile still applies, as seccomp filters stack
 * and the strictest answer wins.
 *
 * The agent installs it in itself before it does anything else (main.c),
 * whatever its command: PID 1 ("sleep"), every command ("run") and every
 * file tool ("fs").  A filter is inherited by every child and kept across
 * execve, and a process cannot remove one, so everything a session runs
 * is under it.  Two things keep the agent itself trustworthy (session_create.c,
 * agent_blob.c): the session cannot replace it (its directory and file are
 * owned by a user the session does not run as), and it is not readable by
 * the session, so the kernel makes it undumpable from its execve on and a
 * command cannot ptrace it in the instant before the filter is in place.
 *
 * Classic BPF, no libseccomp: the agent is a static binary with no
 * dependencies.  Arguments are read as their low 32 bits: the kernel reads
 * modes and open flags as 32-bit (or smaller) integers, so the upper half
 * of a register cannot change what it does.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

/* Numbers newer than some kernel headers; the same on x86_64, i386 and
 * the generic table (aarch64). */
#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#endif
#ifndef __NR_io_uring_enter
#define __NR_io_uring_enter 426
#endif
#ifndef __NR_io_uring_register
#define __NR_io_uring_register 427
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

/* The kernel's open flags that make it use the mode argument
 * (build_open_flags: O_CREAT, or O_TMPFILE, which holds __O_TMPFILE).
 * The same values on x86 (64 and 32 bit) and arm64. */
#define OPEN_CREAT 0100U
#define OPEN_TMPFILE 020000000U

#define SETID_BITS ((uint32_t)(S_ISUID | S_ISGID))

#if defined(__x86_64__) && !defined(__ILP32__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
/* 32-bit programs (int 0x80, or a 32-bit binary) make i386 syscalls,
 * which seccomp sees with this arch and the i386 numbers. */
#define COMPAT_ARCH AUDIT_ARCH_I386
/* x32 syscalls come with the x86_64 arch and this bit in the number. */
#define NATIVE_NR_LIMIT 0x40000000U
#elif defined(__aarch64__) && defined(__AARCH64EL__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
/* No compat table: 32-bit ARM programs are killed (see below). */
#else
/* An agent without its filter would drop the guarantee without a word:
 * refuse to build instead.  Another architecture needs its AUDIT_ARCH,
 * its numbers (and its compat ABI's, if the kernel has one) here. */
#error "hutch-agent's seccomp filter knows x86_64 and aarch64 only"
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#else
#define ARG_LO(i) (offsetof(struct seccomp_data, args) + 8 * (i) + 4)
#endif

enum rule_kind {
	/* chmod family: refuse a mode with a set-id bit */
	R_MODE,
	/* open family: the same, when the flags make the kernel use the mode */
	R_OPEN,
	/* mknod family: refuse set-id bits and device types */
	R_MKNOD,
	/* answer ENOSYS: callers fall back to a syscall the filter can read */
	R_NOSYS,
};

struct rule {
	int nr;
	enum rule_kind kind;
	unsigned char mode_arg;	 /* R_MODE, R_OPEN, R_MKNOD */
	unsigned char flags_arg; /* R_OPEN */
};

/*
 * The native table.  The path-taking forms without "at" exist on x86_64
 * only; the generic table (aarch64) has only the *at forms.
 */
static const struct rule native_rules[] = {
#ifdef __NR_chmod
	{ __NR_chmod, R_MODE, 1, 0 }, /* chmod(path, mode) */
#endif
	{ __NR_fchmod, R_MODE, 1, 0 },	  /* fchmod(fd, mode) */
	{ __NR_fchmodat, R_MODE, 2, 0 },  /* fchmodat(dfd, path, mode) */
	{ __NR_fchmodat2, R_MODE, 2, 0 }, /* fchmodat2(dfd, path, mode, fl) */
#ifdef __NR_open
	{ __NR_open, R_OPEN, 2, 1 }, /* open(path, flags, mode) */
#endif
	{ __NR_openat, R_OPEN, 3, 2 }, /* openat(dfd, path, flags, mode) */
#ifdef __NR_creat
	{ __NR_creat, R_MODE, 1, 0 }, /* creat(path, mode): always creates */
#endif
#ifdef __NR_mknod
	{ __NR_mknod, R_MKNOD, 1, 0 }, /* mknod(path, mode, dev) */
#endif
	{ __NR_mknodat, R_MKNOD, 2, 0 }, /* mknodat(dfd, path, mode, dev) */
	/* openat2's mode is in a struct behind a pointer, which seccomp
	 * cannot read: refused as if the kernel had none, so that callers
	 * use openat, whose mode is checked above. */
	{ __NR_openat2, R_NOSYS, 0, 0 },
	/* io_uring runs opens (IORING_OP_OPENAT, with a mode) in the kernel
	 * without a syscall per operation, out of seccomp's sight: refused as
	 * if the kernel had none (Docker's newer profiles do the same). */
	{ __NR_io_uring_setup, R_NOSYS, 0, 0 },
	{ __NR_io_uring_enter, R_NOSYS, 0, 0 },
	{ __NR_io_uring_register, R_NOSYS, 0, 0 },
};

#ifdef COMPAT_ARCH
/* i386 numbers (arch/x86/entry/syscalls/syscall_32.tbl); argument
 * positions as on x86_64. */
static const struct rule compat_rules[] = {
	{ 15, R_MODE, 1, 0 },	/* chmod */
	{ 94, R_MODE, 1, 0 },	/* fchmod */
	{ 306, R_MODE, 2, 0 },	/* fchmodat */
	{ 452, R_MODE, 2, 0 },	/* fchmodat2 */
	{ 5, R_OPEN, 2, 1 },	/* open */
	{ 295, R_OPEN, 3, 2 },	/* openat */
	{ 8, R_MODE, 1, 0 },	/* creat */
	{ 14, R_MKNOD, 1, 0 },	/* mknod */
	{ 297, R_MKNOD, 2, 0 }, /* mknodat */
	{ 437, R_NOSYS, 0, 0 }, /* openat2 */
	{ 425, R_NOSYS, 0, 0 }, /* io_uring_setup */
	{ 426, R_NOSYS, 0, 0 }, /* io_uring_enter */
	{ 427, R_NOSYS, 0, 0 }, /* io_uring_register */
};
#endif

/* Far more than the rules need; a program that does not fit is refused
 * (agent_seccomp_install fails) rather than cut short. */
#define PROG_MAX 256

struct prog {
	struct sock_filter ins[PROG_MAX];
	unsigned int n;
};

static void put(struct prog *p, struct sock_filter ins)
{
	if (p->n < PROG_MAX)
		p->ins[p->n] = ins;
	p->n++;
}

static void stmt(struct prog *p, uint16_t code, uint32_t k)
{
	put(p, (struct sock_filter)BPF_STMT(code, k));
}

static void jump(struct prog *p, uint16_t code, uint32_t k, uint8_t jt,
		 uint8_t jf)
{
	put(p, (struct sock_filter)BPF_JUMP(code, k, jt, jf));
}

#define RET_ALLOW SECCOMP_RET_ALLOW
#define RET_EPERM (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define RET_ENOSYS (SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA))

/*
 * One ABI's rules.  On entry nothing is loaded; each rule's block starts
 * with a compare of the syscall number in A, and a block that loads an
 * argument always ends in a return, so A still holds the number for the
 * next block.  Each number appears once in a table, so a block that
 * matched can return ALLOW itself.  The jump offsets below are counted by
 * hand: "skip N" is the number of instructions of the block after the
 * jump.
 */
static void abi_section(struct prog *p, const struct rule *rules, size_t n,
			uint32_t nr_limit)
{
	stmt(p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
	if (nr_limit) {
		/* Numbers of another ABI on the same arch (x32): as if the
		 * syscall did not exist, which is what the kernel says for
		 * a number it does not know (so a probe with -1 still gets
		 * its ENOSYS). */
		jump(p, BPF_JMP | BPF_JGE | BPF_K, nr_limit, 0, 1);
		stmt(p, BPF_RET | BPF_K, RET_ENOSYS);
	}
	for (size_t i = 0; i < n; i++) {
		const struct rule *r = &rules[i];

		switch (r->kind) {
		case R_MODE:
			/* chmod(…, 04755), creat(…, 02755): EPERM. */
			jump(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)r->nr, 0,
			     4);
			stmt(p, BPF_LD | BPF_W | BPF_ABS, ARG_LO(r->mode_arg));
			jump(p, BPF_JMP | BPF_JSET | BPF_K, SETID_BITS, 0, 1);
			stmt(p, BPF_RET | BPF_K, RET_EPERM);
			stmt(p, BPF_RET | BPF_K, RET_ALLOW);
			break;
		case R_OPEN:
			/* The kernel ignores the mode unless the flags hold
			 * O_CREAT or __O_TMPFILE (an O_TMPFILE file can be
			 * linked in later with that mode): only then is it
			 * checked, so opens without them are never refused
			 * for what happens to be in the mode register. */
			jump(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)r->nr, 0,
			     6);
			stmt(p, BPF_LD | BPF_W | BPF_ABS, ARG_LO(r->flags_arg));
			jump(p, BPF_JMP | BPF_JSET | BPF_K,
			     OPEN_CREAT | OPEN_TMPFILE, 0, 3);
			stmt(p, BPF_LD | BPF_W | BPF_ABS, ARG_LO(r->mode_arg));
			jump(p, BPF_JMP | BPF_JSET | BPF_K, SETID_BITS, 0, 1);
			stmt(p, BPF_RET | BPF_K, RET_EPERM);
			stmt(p, BPF_RET | BPF_K, RET_ALLOW);
			break;
		case R_MKNOD:
			/* mknod makes regular files too (S_IFREG, or type 0),
			 * so set-id bits are refused as for chmod; and device
			 * nodes, whatever the capabilities (a node made in a
			 * host directory with --cap-add MKNOD would open the
			 * host's device to the host's users; the whiteout
			 * 0:0 needs no capability and is useless here).
			 * FIFOs and sockets stay allowed. */
			jump(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)r->nr, 0,
			     7);
			stmt(p, BPF_LD | BPF_W | BPF_ABS, ARG_LO(r->mode_arg));
			jump(p, BPF_JMP | BPF_JSET | BPF_K, SETID_BITS, 4, 0);
			stmt(p, BPF_ALU | BPF_AND | BPF_K, S_IFMT);
			jump(p, BPF_JMP | BPF_JEQ | BPF_K, S_IFCHR, 2, 0);
			jump(p, BPF_JMP | BPF_JEQ | BPF_K, S_IFBLK, 1, 0);
			stmt(p, BPF_RET | BPF_K, RET_ALLOW);
			stmt(p, BPF_RET | BPF_K, RET_EPERM);
			break;
		case R_NOSYS:
			jump(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)r->nr, 0,
			     1);
			stmt(p, BPF_RET | BPF_K, RET_ENOSYS);
			break;
		}
	}
	stmt(p, BPF_RET | BPF_K, RET_ALLOW);
}

static void append(struct prog *to, const struct prog *from)
{
	for (unsigned int i = 0; i < from->n && i < PROG_MAX; i++)
		put(to, from->ins[i]);
}

/*
 * The whole program: the arch first (a syscall number means nothing
 * without it), then the ABI's section; any other arch is killed.  Kill,
 * not an error: a program of an ABI this filter has no numbers for could
 * otherwise make the very syscalls refused above, and every one of its
 * syscalls failing would leave it spinning.  On x86_64 that is nothing a
 * kernel runs today besides x86_64, x32 and i386; on arm64, 32-bit ARM
 * programs (where the kernel runs them).
 */
static int build(struct prog *p)
{
	static struct prog native, compat;

	native.n = compat.n = p->n = 0;
#ifdef NATIVE_NR_LIMIT
	abi_section(&native, native_rules,
		    sizeof(native_rules) / sizeof(native_rules[0]),
		    NATIVE_NR_LIMIT);
#else
	abi_section(&native, native_rules,
		    sizeof(native_rules) / sizeof(native_rules[0]), 0);
#endif
#ifdef COMPAT_ARCH
	abi_section(&compat, compat_rules,
		    sizeof(compat_rules) / sizeof(compat_rules[0]), 0);
#endif
	if (native.n > PROG_MAX || compat.n > PROG_MAX)
		return -1;

	stmt(p, BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	jump(p, BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0);
	stmt(p, BPF_JMP | BPF_JA, native.n); /* over the native section */
	append(p, &native);
#ifdef COMPAT_ARCH
	jump(p, BPF_JMP | BPF_JEQ | BPF_K, COMPAT_ARCH, 1, 0);
	stmt(p, BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	append(p, &compat);
#else
	stmt(p, BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
	return p->n > PROG_MAX ? -1 : 0;
}

int agent_seccomp_install(void)
{
	static struct prog p;
	struct sock_fprog fprog;

	if (build(&p) < 0)
		return -E2BIG;
	fprog.len = (unsigned short)p.n;
	fprog.filter = p.ins;
	/*
	 * Installing a filter without CAP_SYS_ADMIN needs no_new_privs.  The
	 * engines already set it (hutch asks for no-new-privileges); setting
	 * it again costs nothing and keeps this working if they did not.
	 */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* The seccomp() syscall would also take SECCOMP_FILTER_FLAG_TSYNC,
	 * which a single-threaded agent does not need; prctl is there since
	 * Linux 3.5. */
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) < 0)
		return -errno;
	return 0;
}
