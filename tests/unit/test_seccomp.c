/*
 * test_seccomp.c - the agent's syscall filter (src/agent/seccomp.c)
 *
 * Each test forks a child that installs the filter (it cannot be removed:
 * the test process itself must stay unfiltered), makes the syscalls, and
 * reports each result through shared memory; the parent checks them and,
 * on the files, what the kernel really did.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "../../src/agent/agent.h"

/* The result of one syscall: 0, or the errno it failed with. */
struct results {
	int installed;
	int r[32];
};

static char dir[PATH_MAX];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/hutch-seccomp-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static const char *in_dir(const char *name)
{
	static char path[4][PATH_MAX + 64];
	static int next;
	char *p = path[next++ % 4];

	snprintf(p, PATH_MAX + 64, "%s/%s", dir, name);
	return p;
}

static int res(long rc)
{
	return rc < 0 ? errno : 0;
}

/* Run @probe in a filtered child; its results. */
static struct results run_filtered(void (*probe)(struct results *))
{
	struct results *shared = mmap(NULL, sizeof(*shared),
				      PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct results out;
	int status;
	pid_t pid;

	cr_assert_neq(shared, MAP_FAILED);
	memset(shared, 0xff, sizeof(*shared));
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int rc = agent_seccomp_install();

		shared->installed = rc;
		if (rc == 0)
			probe(shared);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the filtered child died: status 0x%x", status);
	out = *shared;
	munmap(shared, sizeof(*shared));
	cr_assert_eq(out.installed, 0, "install: %s", strerror(-out.installed));
	return out;
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "%s: %s", path, strerror(errno));
	return st.st_mode;
}

static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* ---- the chmod family ------------------------------------------------ */

static void probe_chmod(struct results *o)
{
	int fd = open(in_dir("f"), O_RDWR);

	o->r[0] = res(fchmod(fd, 04755));
	o->r[1] = res(chmod(in_dir("f"), 02755));
	o->r[2] = res(fchmodat(AT_FDCWD, in_dir("f"), 06755, 0));
	o->r[3] = res(
		syscall(452 /* fchmodat2 */, AT_FDCWD, in_dir("f"), 04700, 0));
	o->r[4] = res(chmod(in_dir("d"), 02775)); /* chmod g+s on a directory */
	/* Upper bits of the register do not hide a set-id bit. */
	o->r[5] = res(syscall(SYS_fchmod, fd, 0xffffffff00000000UL | 04755));
	/* What stays allowed: plain modes, the sticky bit. */
	o->r[6] = res(fchmod(fd, 0700));
	o->r[7] = res(chmod(in_dir("d"), 01777));
	o->r[8] = res(fchmodat(AT_FDCWD, in_dir("f"), 0640, 0));
	close(fd);
}

Test(seccomp, chmod_family_refuses_set_id_bits, .init = make_dir,
     .fini = remove_dir)
{
	struct results o;
	int fd = open(in_dir("f"), O_CREAT | O_WRONLY, 0644);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(mkdir(in_dir("d"), 0755), 0);
	o = run_filtered(probe_chmod);
	for (int i = 0; i <= 5; i++)
		cr_assert_eq(o.r[i], EPERM, "probe %d: %s", i,
			     strerror(o.r[i]));
	for (int i = 6; i <= 8; i++)
		cr_assert_eq(o.r[i], 0, "probe %d: %s", i, strerror(o.r[i]));
	cr_assert_eq(mode_of(in_dir("f")) & 07777, 0640);
	cr_assert_eq(mode_of(in_dir("d")) & 07777, 01777);
}

/* ---- creating opens ---------------------------------------------------- */

static void probe_open(struct results *o)
{
	int fd;

	o->r[0] = res(open(in_dir("suid"), O_CREAT | O_WRONLY, 04755));
	o->r[1] = res(openat(AT_FDCWD, in_dir("sgid"),
			     O_CREAT | O_EXCL | O_RDWR, 02755));
	o->r[2] =
		res(syscall(SYS_openat, AT_FDCWD, in_dir("raw"),
			    O_CREAT | O_WRONLY, 0xffffffff00000000UL | 06777));
	/* O_TMPFILE: the file could be linked in later with that mode. */
	o->r[3] = res(open(dir, O_TMPFILE | O_WRONLY, 04755));
#ifdef SYS_creat
	o->r[4] = res(syscall(SYS_creat, in_dir("creat"), 02755));
#else
	o->r[4] = EPERM;
#endif
#ifdef SYS_open
	o->r[5] = res(
		syscall(SYS_open, in_dir("open"), O_CREAT | O_WRONLY, 04755));
#else
	o->r[5] = EPERM;
#endif
	/* Allowed: a plain mode; and a mode the kernel ignores (no O_CREAT). */
	fd = open(in_dir("plain"), O_CREAT | O_WRONLY, 0755);
	o->r[6] = res(fd);
	if (fd >= 0)
		close(fd);
	fd = (int)syscall(SYS_openat, AT_FDCWD, in_dir("plain"), O_RDONLY,
			  04755);
	o->r[7] = res(fd);
	if (fd >= 0)
		close(fd);
	fd = open(dir, O_TMPFILE | O_WRONLY, 0600);
	o->r[8] = res(fd);
	if (fd >= 0)
		close(fd);
}

Test(seccomp, creating_opens_refuse_set_id_modes, .init = make_dir,
     .fini = remove_dir)
{
	struct results o = run_filtered(probe_open);

	for (int i = 0; i <= 5; i++)
		cr_assert_eq(o.r[i], EPERM, "probe %d: %s", i,
			     strerror(o.r[i]));
	for (int i = 6; i <= 8; i++)
		cr_assert_eq(o.r[i], 0, "probe %d: %s", i, strerror(o.r[i]));
	cr_assert(!exists(in_dir("suid")) && !exists(in_dir("sgid")) &&
		  !exists(in_dir("raw")) && !exists(in_dir("creat")) &&
		  !exists(in_dir("open")));
	cr_assert_eq(mode_of(in_dir("plain")) & 07000, 0);
}

/* ---- mknod ------------------------------------------------------------- */

static void probe_mknod(struct results *o)
{
	o->r[0] = res(mknod(in_dir("reg"), S_IFREG | 04755, 0));
	o->r[1] = res(mknodat(AT_FDCWD, in_dir("reg0"), 02755,
			      0)); /* type 0: regular */
	o->r[2] = res(mknod(in_dir("null"), S_IFCHR | 0666, makedev(1, 3)));
	o->r[3] = res(mknod(in_dir("loop"), S_IFBLK | 0600, makedev(7, 0)));
	o->r[4] = res(mknod(in_dir("whiteout"), S_IFCHR, 0));
#ifdef SYS_mknod
	o->r[5] = res(syscall(SYS_mknod, in_dir("raw"), S_IFCHR | 0666,
			      makedev(1, 3)));
#else
	o->r[5] = EPERM;
#endif
	/* Allowed: FIFOs, sockets, plain regular files. */
	o->r[6] = res(mkfifo(in_dir("fifo"), 0644));
	o->r[7] = res(mknod(in_dir("sock"), S_IFSOCK | 0644, 0));
	o->r[8] = res(mknod(in_dir("plain"), S_IFREG | 0644, 0));
}

Test(seccomp, mknod_refuses_devices_and_set_id_bits, .init = make_dir,
     .fini = remove_dir)
{
	struct results o = run_filtered(probe_mknod);

	/* The test may run as root with CAP_MKNOD: only the filter refuses. */
	for (int i = 0; i <= 5; i++)
		cr_assert_eq(o.r[i], EPERM, "probe %d: %s", i,
			     strerror(o.r[i]));
	for (int i = 6; i <= 8; i++)
		cr_assert_eq(o.r[i], 0, "probe %d: %s", i, strerror(o.r[i]));
	cr_assert(!exists(in_dir("reg")) && !exists(in_dir("reg0")) &&
		  !exists(in_dir("null")) && !exists(in_dir("loop")) &&
		  !exists(in_dir("whiteout")) && !exists(in_dir("raw")));
	cr_assert(S_ISFIFO(mode_of(in_dir("fifo"))));
}

/* ---- syscalls whose mode the filter cannot see --------------------------- */

static void probe_nosys(struct results *o)
{
	struct {
		unsigned long long flags, mode, resolve;
	} how = { O_CREAT | O_WRONLY, 04755, 0 };
	char params[120] = { 0 };

	o->r[0] = res(syscall(437 /* openat2 */, AT_FDCWD, in_dir("o2"), &how,
			      sizeof(how)));
	o->r[1] = res(syscall(425 /* io_uring_setup */, 4, params));
	o->r[2] = res(syscall(426 /* io_uring_enter */, -1, 0, 0, 0, NULL, 0));
	o->r[3] = res(syscall(427 /* io_uring_register */, -1, 0, NULL, 0));
}

Test(seccomp, openat2_and_io_uring_look_absent, .init = make_dir,
     .fini = remove_dir)
{
	struct results o = run_filtered(probe_nosys);

	for (int i = 0; i <= 3; i++)
		cr_assert_eq(o.r[i], ENOSYS, "probe %d: %s", i,
			     strerror(o.r[i]));
	cr_assert(!exists(in_dir("o2")));
}

/* ---- other ABIs on x86_64 ------------------------------------------------ */

#if defined(__x86_64__)
/* An i386 syscall from this 64-bit process: seccomp sees it with
 * AUDIT_ARCH_I386 and the i386 numbers, as for a 32-bit binary. */
static long int80(long nr, long a, long b, long c)
{
	long r;

	__asm__ volatile("int $0x80"
			 : "=a"(r)
			 : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory", "r8", "r9", "r10", "r11");
	return r;
}

static void probe_other_abis(struct results *o)
{
	int fd = open(in_dir("f"), O_RDWR);
	/* int 0x80 passes 32-bit pointers: the path must live below 4 GiB. */
	char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	snprintf(low, 4096, "%s", in_dir("f"));
	o->r[0] = (int)-int80(94 /* fchmod */, fd, 04755, 0);
	o->r[1] = (int)-int80(15 /* chmod */, (long)low, 02755, 0);
	o->r[2] = (int)-int80(306 /* fchmodat */, AT_FDCWD, (long)low, 06755);
	o->r[3] =
		(int)-int80(5 /* open */, (long)low, O_CREAT | O_WRONLY, 04755);
	snprintf(low, 4096, "%s", in_dir("n"));
	o->r[4] = (int)-int80(14 /* mknod */, (long)low, S_IFCHR | 0600, 0x103);
	o->r[5] = (int)-int80(437 /* openat2 */, AT_FDCWD, (long)low, 0);
	/* x32: the x86_64 arch with bit 30 in the number. */
	o->r[6] = res(syscall(0x40000000L | SYS_fchmod, fd, 04755));
	/* Allowed through the i386 table: a plain mode. */
	o->r[7] = (int)-int80(94 /* fchmod */, fd, 0600, 0);
	close(fd);
}

/* The children below that may die at an int $0x80 die of the signal
 * itself: a sanitizer build's SIGSEGV handler would make it an exit. */
static void segv_kills(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
}

/* Whether this kernel takes an i386 syscall from a 64-bit process at all:
 * a kernel built or booted without IA32 emulation (ia32_emulation=0, and
 * some hypervisors) kills it with SIGSEGV at the int $0x80.  Asked in a
 * child of its own, without the filter. */
static int i386_entry_exists(void)
{
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		segv_kills();
		_exit(int80(20 /* getpid */, 0, 0, 0) == (long)getpid() ? 0 :
									  1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
		return 0;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "i386 getpid without the filter: status 0x%x", status);
	return 1;
}

/* Where there is no i386 entry, the route is closed by the kernel: the
 * filtered child that tries it dies, and the file keeps its mode. */
static void probe_x32(struct results *o)
{
	int fd = open(in_dir("f"), O_RDWR);

	o->r[6] = res(syscall(0x40000000L | SYS_fchmod, fd, 04755));
	close(fd);
}

static void probe_i386_absent(void)
{
	int fd = open(in_dir("f"), O_RDWR);

	int80(94 /* fchmod */, fd, 04755, 0);
	close(fd);
}

Test(seccomp, i386_and_x32_syscalls_are_covered, .init = make_dir,
     .fini = remove_dir)
{
	struct results o;
	int fd = open(in_dir("f"), O_CREAT | O_WRONLY, 0644), status;
	pid_t pid;

	cr_assert_geq(fd, 0);
	close(fd);
	if (!i386_entry_exists()) {
		cr_log_info("this kernel has no i386 syscall entry: only "
			    "that the route stays closed is checked");
		o = run_filtered(probe_x32);
		cr_assert_eq(o.r[6], ENOSYS, "x32 fchmod: %s",
			     strerror(o.r[6]));
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			segv_kills();
			if (agent_seccomp_install() == 0)
				probe_i386_absent();
			_exit(0);
		}
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV,
			  "the filtered child's i386 fchmod: status 0x%x",
			  status);
		cr_assert_eq(mode_of(in_dir("f")) & 07777, 0644);
		return;
	}
	o = run_filtered(probe_other_abis);
	for (int i = 0; i <= 4; i++)
		cr_assert_eq(o.r[i], EPERM, "probe %d: %s", i,
			     strerror(o.r[i]));
	cr_assert_eq(o.r[5], ENOSYS, "openat2: %s", strerror(o.r[5]));
	cr_assert_eq(o.r[6], ENOSYS, "x32 fchmod: %s", strerror(o.r[6]));
	cr_assert_eq(o.r[7], 0, "i386 fchmod 0600: %s", strerror(o.r[7]));
	cr_assert_eq(mode_of(in_dir("f")) & 07777, 0600);
	cr_assert(!exists(in_dir("n")));
}
#endif
