/*
 * confine.c - what a command may do to the agent that runs it
 *
 * A command runs as the same user as its "run" agent, and with no
 * capabilities anywhere that is all the kernel asks before it lets one
 * process kill, stop or ptrace another.  A command that ended its agent
 * (kill -9 $PPID, pkill -f, kill -1, SIGIO...) would leave its processes
 * to the container's init, outside the tree that the timeout, a
 * cancellation and the end of a command given secrets kill.  So between
 * fork and exec the child confines itself, for good: a seccomp filter and
 * a Landlock domain are inherited by everything it starts, through fork,
 * exec, setsid and re-parenting alike, and neither can ever be lifted.
 * no_new_privs, which every session has anyway, is what lets an
 * unprivileged process install both.
 *
 * The agent itself is not dumpable (run.c), so ptrace and /proc/PID/mem
 * of it need CAP_SYS_PTRACE, which no session has.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>

#include "agent.h"

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define NATIVE_ARCH AUDIT_ARCH_I386
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NATIVE_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#define NATIVE_ARCH AUDIT_ARCH_S390X
#elif defined(__riscv) && __riscv_xlen == 64
#define NATIVE_ARCH AUDIT_ARCH_RISCV64
#else
#error "confine.c: unknown architecture for the seccomp filter"
#endif

#ifndef F_SETOWN_EX
#define F_SETOWN_EX 15
#endif
#ifndef FIOSETOWN
#define FIOSETOWN 0x8901
#endif
#ifndef SIOCSPGRP
#define SIOCSPGRP 0x8902
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424 /* the same number on every arch */
#endif

/* The low 32 bits of argument @i: pids, fcntl and ioctl commands are
 * ints, and the kernel ignores the upper half of the register. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(i) ((uint32_t)offsetof(struct seccomp_data, args[i]))
#else
#define ARG_LO(i) ((uint32_t)offsetof(struct seccomp_data, args[i]) + 4)
#endif

#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((e)&SECCOMP_RET_DATA))
#define MAX_INSNS 256

struct prog {
	struct sock_filter f[MAX_INSNS];
	unsigned int n;
	bool overflow;
};

/* The numbers one arch gives the calls the filter looks at; -1: none. */
struct nrs {
	long kill, tkill, tgkill, sigqueue, tgsigqueue, prlimit, pidfd_signal;
	long fcntl, fcntl64, ioctl;
};

static void put(struct prog *p, uint16_t code, uint32_t k, uint8_t jt,
		uint8_t jf)
{
	if (p->n >= MAX_INSNS) {
		p->overflow = true;
		return;
	}
	p->f[p->n++] = (struct sock_filter)BPF_JUMP(code, k, jt, jf);
}

static void load(struct prog *p, uint32_t off)
{
	put(p, BPF_LD | BPF_W | BPF_ABS, off, 0, 0);
}

/*
 * One block per call: "not this call" jumps over the block, and every
 * block ends in its own returns, so each jump stays short and local.
 * @args: which arguments name a target (1: args[0], 2: args[0] and [1]);
 * any of them equal to one of @v refuses the call with EPERM.
 */
static void block_targets(struct prog *p, long nr, int nargs, const uint32_t *v,
			  int nv)
{
	int body = nargs * (1 + nv) + 2, pos = 0;

	if (nr < 0)
		return;
	load(p, offsetof(struct seccomp_data, nr));
	put(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, (uint8_t)body);
	for (int a = 0; a < nargs; a++) {
		load(p, ARG_LO(a));
		pos++;
		for (int i = 0; i < nv; i++, pos++)
			/* To the EPERM return, the block's last instruction. */
			put(p, BPF_JMP | BPF_JEQ | BPF_K, v[i],
			    (uint8_t)(body - 1 - pos - 1), 0);
	}
	put(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
	put(p, BPF_RET | BPF_K, RET_ERRNO(EPERM), 0, 0);
}

static void block_all(struct prog *p, long nr, int err)
{
	if (nr < 0)
		return;
	load(p, offsetof(struct seccomp_data, nr));
	put(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 1);
	put(p, BPF_RET | BPF_K, RET_ERRNO(err), 0, 0);
}

/* fcntl(fd, F_SETOWN, @v...) and F_SETOWN_EX, whose target sits in
 * memory the filter cannot read: refused as an old kernel would. */
static void block_setown(struct prog *p, long nr, const uint32_t *v, int nv)
{
	int body = 4 + nv + 3;

	if (nr < 0)
		return;
	load(p, offsetof(struct seccomp_data, nr));
	put(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, (uint8_t)body);
	load(p, ARG_LO(1));
	put(p, BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN_EX, (uint8_t)(body - 3), 0);
	put(p, BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN, 0, (uint8_t)(1 + nv));
	load(p, ARG_LO(2));
	for (int i = 0; i < nv; i++)
		put(p, BPF_JMP | BPF_JEQ | BPF_K, v[i], (uint8_t)(nv - i), 0);
	put(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
	put(p, BPF_RET | BPF_K, RET_ERRNO(EPERM), 0, 0);
	put(p, BPF_RET | BPF_K, RET_ERRNO(EINVAL), 0, 0);
}

/* ioctl FIOSETOWN and SIOCSPGRP: F_SETOWN through a pointer. */
static void block_ioctl_setown(struct prog *p, long nr)
{
	if (nr < 0)
		return;
	load(p, offsetof(struct seccomp_data, nr));
	put(p, BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 0, 5);
	load(p, ARG_LO(1));
	put(p, BPF_JMP | BPF_JEQ | BPF_K, FIOSETOWN, 2, 0);
	put(p, BPF_JMP | BPF_JEQ | BPF_K, SIOCSPGRP, 1, 0);
	put(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
	put(p, BPF_RET | BPF_K, RET_ERRNO(EPERM), 0, 0);
}

/*
 * Every call of one arch that can signal the agent or have the kernel do
 * it: kill() aimed at it, at its process group or at -1 (everything the
 * caller may signal), the thread-directed and queued variants,
 * F_SETOWN (SIGIO, SIGURG, or any signal F_SETSIG picks, SIGKILL
 * included), prlimit64 on it (a lowered RLIMIT_CPU has the kernel send
 * SIGXCPU and SIGKILL) and pidfd_send_signal, whose pidfd (or /proc/PID
 * directory fd) the filter cannot see through: ENOSYS, as on a kernel
 * before 5.1, so programs fall back to kill().
 */
static void arch_section(struct prog *p, uint32_t arch, const struct nrs *n,
			 bool x32, pid_t agent, pid_t pgrp, pid_t parent)
{
	uint32_t kill_v[5], one[2], own_v[5];
	int nkill = 0, nown = 0, none = 0;
	unsigned int start, jump_at;

	kill_v[nkill++] = (uint32_t)agent;
	kill_v[nkill++] = (uint32_t)-1;
	own_v[nown++] = (uint32_t)agent;
	/* F_SETOWN(-1) is process group 1: PID 1, which ignores such a
	 * signal (run.c, from_engine), and the channel's handlers (chan.c),
	 * which do not, the command's own among them.  kill() cannot name
	 * group 1 (kill(-1) is everything, blocked above); F_SETOWN can. */
	own_v[nown++] = (uint32_t)-1;
	one[none++] = (uint32_t)agent;
	if (pgrp > 1) {
		kill_v[nkill++] = (uint32_t)-pgrp;
		own_v[nown++] = (uint32_t)-pgrp;
	}
	if (parent > 1) {
		/* A channel handler leads a process group of its own (chan.c),
		 * so its group is refused too. */
		kill_v[nkill++] = (uint32_t)parent;
		kill_v[nkill++] = (uint32_t)-parent;
		own_v[nown++] = (uint32_t)parent;
		own_v[nown++] = (uint32_t)-parent;
		one[none++] = (uint32_t)parent;
	}

	load(p, offsetof(struct seccomp_data, arch));
	jump_at = p->n;
	put(p, BPF_JMP | BPF_JEQ | BPF_K, arch, 0, 0); /* patched below */
	start = p->n;
	if (x32) {
		/* x32 shares x86_64's arch value, its calls have bit 30 set:
		 * refused outright rather than mapped one by one. */
		load(p, offsetof(struct seccomp_data, nr));
		put(p, BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1);
		put(p, BPF_RET | BPF_K, RET_ERRNO(ENOSYS), 0, 0);
	}
	block_targets(p, n->kill, 1, kill_v, nkill);
	block_targets(p, n->tkill, 1, one, none);
	block_targets(p, n->tgkill, 2, one, none);
	block_targets(p, n->sigqueue, 1, one, none);
	block_targets(p, n->tgsigqueue, 2, one, none);
	block_targets(p, n->prlimit, 1, one, none);
	block_all(p, n->pidfd_signal, ENOSYS);
	block_setown(p, n->fcntl, own_v, nown);
	block_setown(p, n->fcntl64, own_v, nown);
	block_ioctl_setown(p, n->ioctl);
	put(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW, 0, 0);
	if (p->n - start > 255) {
		p->overflow = true;
		return;
	}
	if (!p->overflow)
		p->f[jump_at].jf = (uint8_t)(p->n - start);
}

static int install_filter(pid_t agent, pid_t pgrp, pid_t parent)
{
	static const struct nrs native = {
		SYS_kill,
		SYS_tkill,
		SYS_tgkill,
		SYS_rt_sigqueueinfo,
		SYS_rt_tgsigqueueinfo,
		SYS_prlimit64,
		SYS_pidfd_send_signal,
#ifdef SYS_fcntl
		SYS_fcntl,
#else
		-1,
#endif
#if defined(SYS_fcntl64) && !defined(__x86_64__)
		SYS_fcntl64,
#else
		-1,
#endif
		SYS_ioctl,
	};
#ifdef __x86_64__
	/* int $0x80 reaches the i386 table from any x86_64 process. */
	static const struct nrs i386 = {
		37, 238, 270, 178, 335, 340, 424, 55, 221, 54,
	};
#endif
	static struct prog p;
	struct sock_fprog fprog;

	memset(&p, 0, sizeof(p));
#ifdef __x86_64__
	arch_section(&p, NATIVE_ARCH, &native, true, agent, pgrp, parent);
	arch_section(&p, AUDIT_ARCH_I386, &i386, false, agent, pgrp, parent);
#else
	arch_section(&p, NATIVE_ARCH, &native, false, agent, pgrp, parent);
#endif
	/* Any other arch (arm32 under arm64...): its numbers are not
	 * mapped here, so none of its calls run. */
	put(&p, BPF_RET | BPF_K, RET_ERRNO(ENOSYS), 0, 0);
	if (p.overflow) {
		errno = E2BIG;
		return -1;
	}
	fprog.len = (unsigned short)p.n;
	fprog.filter = p.f;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
}

/*
 * A Landlock domain of the command's own.  Landlock refuses a process in
 * a domain ptrace access to any process outside it (Linux 5.13 on), so
 * no command can read another command's /proc/PID/environ (where
 * secrets are), mem, fds or cwd, nor those of the agents or init, nor
 * trace them.  Signals are not scoped: a later command may still stop a
 * server an earlier one left running.  Handling one access right is what
 * makes a domain; the one chosen, making block devices, needs CAP_MKNOD
 * and so was impossible already.
 *
 * A domain also refuses every link and rename into another directory
 * (EXDEV) unless it handles LANDLOCK_ACCESS_FS_REFER and a rule grants
 * it: `mv a/f b/`, `ln`, `git mv` and the file tools' move would fail.
 * From ABI 2 (Linux 5.19) the domain handles it and grants it beneath
 * "/", everywhere alike, which is what lets a rename through: Landlock
 * allows one when the destination is no less restricted than the source.
 * ABI 1 has no such right, and there such renames stay refused.
 */
static int domain_ruleset(bool refer)
{
	struct landlock_ruleset_attr attr;
	struct landlock_path_beneath_attr everywhere;
	int fd, ret;

	memset(&attr, 0, sizeof(attr));
	attr.handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_BLOCK;
	if (refer)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
	/* Only the first member: the size tells an older kernel that the
	 * newer fields are not used. */
	fd = (int)syscall(SYS_landlock_create_ruleset, &attr,
			  sizeof(attr.handled_access_fs), 0);
	if (fd < 0 || !refer)
		return fd;
	memset(&everywhere, 0, sizeof(everywhere));
	everywhere.allowed_access = LANDLOCK_ACCESS_FS_REFER;
	everywhere.parent_fd = open("/", O_PATH | O_CLOEXEC);
	ret = everywhere.parent_fd < 0 ?
		      -1 :
		      (int)syscall(SYS_landlock_add_rule, fd,
				   LANDLOCK_RULE_PATH_BENEATH, &everywhere, 0);
	if (everywhere.parent_fd >= 0)
		close(everywhere.parent_fd);
	if (ret < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int enter_domain(void)
{
	int abi, fd, ret;

	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0,
			   LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1)
		return -1;
	/* Should the rule be refused, a domain that refuses renames
	 * between directories still keeps the secrets: better than none. */
	fd = abi >= 2 ? domain_ruleset(true) : -1;
	if (fd < 0)
		fd = domain_ruleset(false);
	if (fd < 0)
		return -1;
	ret = (int)syscall(SYS_landlock_restrict_self, fd, 0);
	close(fd);
	return ret;
}

int confine_command(pid_t agent, pid_t agent_pgrp, pid_t parent)
{
	int ret = 0;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	/*
	 * Best effort, both: a kernel before 5.13 has no Landlock, one
	 * booted without it or an engine profile that refuses either call
	 * leaves the command unconfined, as hutch was before (README).
	 */
	if (enter_domain() < 0)
		ret = -1;
	if (install_filter(agent, agent_pgrp, parent) < 0)
		ret = -1;
	return ret;
}
