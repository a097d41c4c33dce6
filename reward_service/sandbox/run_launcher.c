/* The run launcher: what a run process does to itself between its spawn and its program,
 * for the runs that exec one (compiled programs, their builds, script runtimes).
 *
 * The zygote starts it by posix_spawn (`run_launcher.spawn`): the spawn shares the zygote's
 * memory until this file is exec'd, so a run costs neither a copy of the zygote's page
 * tables nor copy-on-write of its heap, nor an interpreter between fork and exec. It does,
 * in `confine.Confinement._apply`'s order, exactly what that does for a forked run: a
 * session of its own; the run's pipes on fds 0-3 (3 close-on-exec), the program's file at
 * EXEC_FD and nothing else open; the run's uid (or no capabilities); the exec_once
 * supervisor thread; rlimits; not dumpable, the parent-death signal, the zygote still its
 * parent; no_new_privs; landlock; seccomp last (with a listener for the supervisor); then
 * execveat(EXEC_FD, "", argv, envp, AT_EMPTY_PATH). A step that fails writes
 * "<step>: errno <n>" to fd 3 and exits 125 before the program runs (`CONFINEMENT_FAILED`);
 * a failed exec is told on stderr, status 127 (`runners.EXEC_FAILED`).
 *
 * Freestanding: no C library, so no start-up code runs either (glibc's reads the CPU's
 * cache sizes by CPUID, which a virtual machine traps: a tenth of a millisecond a process).
 * x86_64 and aarch64. Its command line, before "--" and the program's argv (envp is the
 * program's environment):
 *   zygote=PID            the parent it must still have
 *   uid=UID               switch to UID (gid too, no groups); absent: drop capabilities
 *   rlimit=R,SOFT,HARD    each at most the hard limit inherited (repeated)
 *   dir=PATH              its working directory
 *   exec=FD               the program's file, moved to EXEC_FD
 *   ruleset=FD            a landlock ruleset to restrict itself with
 *   filter=HEX            a seccomp program; pid=I its instruction I gets this pid as k
 *   listen                the filter's exec waits for this process's supervisor thread
 *   stderr=stdout         fd 2 becomes fd 1 (a build's messages, in order)
 * `probe` alone (argv[1]) writes "launcher ok" to stdout: the zygote's check, run through
 * every layer with this file as the program.
 */

#include <asm/unistd.h>
#include <linux/capability.h>
#include <linux/fcntl.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/ioctl.h>
#include <linux/prctl.h>
#include <linux/resource.h>
#include <linux/sched.h>
#include <linux/seccomp.h>

#define EXEC_FD 256        /* confine.EXEC_FD */
#define REPORT_FD 3        /* confine.REPORT_FD */
#define RULESET_FD 4       /* where confine keeps a run's ruleset until restrict_self */
#define CONFINEMENT_FAILED 125
#define EXEC_FAILED 127
#define MAX_INSTRUCTIONS 4096 /* BPF_MAXINSNS */
#define MAX_RLIMITS 8
#define MAX_PID_SLOTS 16
#define SIGKILL 9
#define ESRCH 3
#define EINTR 4
#define ENOENT 2
#define ENOSYS 38

typedef unsigned long size_t;

/* ---- system calls ---------------------------------------------------------------- */

#if defined(__x86_64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
    long ret;
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}

/* A thread on `stack` running `fn`, which must not return into this frame: it exits. */
static long start_thread(long flags, void *stack, void (*fn)(void)) {
    long ret;
    register long r10 __asm__("r10") = 0;
    register long r8 __asm__("r8") = 0;
    register void (*r12)(void) __asm__("r12") = fn;
    __asm__ volatile("syscall\n\t"
                     "test %%rax, %%rax\n\t"
                     "jnz 1f\n\t"
                     "xor %%ebp, %%ebp\n\t"
                     "call *%%r12\n\t"
                     "mov %[exit], %%eax\n\t"
                     "xor %%edi, %%edi\n\t"
                     "syscall\n\t"
                     "hlt\n"
                     "1:"
                     : "=a"(ret)
                     : "a"((long)__NR_clone), "D"(flags), "S"(stack), "d"(0L), "r"(r10),
                       "r"(r8), "r"(r12), [exit] "i"(__NR_exit)
                     : "rcx", "r11", "memory");
    return ret;
}

__asm__(".text\n"
        ".global _start\n"
        "_start:\n"
        "  xor %rbp, %rbp\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call launch\n"
        "  hlt\n");
#elif defined(__aarch64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ volatile("svc 0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory");
    return x0;
}

static long start_thread(long flags, void *stack, void (*fn)(void)) {
    register long x8 __asm__("x8") = __NR_clone;
    register long x0 __asm__("x0") = flags;
    register long x1 __asm__("x1") = (long)stack;
    register long x2 __asm__("x2") = 0;
    register long x3 __asm__("x3") = 0;
    register long x4 __asm__("x4") = 0;
    register void (*x19)(void) __asm__("x19") = fn;
    __asm__ volatile("svc 0\n\t"
                     "cbnz x0, 1f\n\t"
                     "mov x29, xzr\n\t"
                     "blr x19\n\t"
                     "mov x0, xzr\n\t"
                     "mov x8, %[exit]\n\t"
                     "svc 0\n"
                     "1:"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x19),
                       [exit] "i"(__NR_exit)
                     : "memory", "x30");
    return x0;
}

__asm__(".text\n"
        ".global _start\n"
        "_start:\n"
        "  mov x29, xzr\n"
        "  mov x0, sp\n"
        "  bl launch\n"
        "  brk #0\n");
#else
#error "the run launcher is written for x86_64 and aarch64"
#endif

#define sys0(n) sys6(n, 0, 0, 0, 0, 0, 0)
#define sys1(n, a) sys6(n, (long)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) sys6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define sys5(n, a, b, c, d, e) sys6(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

/* The compiler may call these for copies and clears of its own. */
void *memset(void *s, int c, size_t n) {
    unsigned char *p = s;
    while (n--) *p++ = (unsigned char)c;
    return s;
}

void *memcpy(void *d, const void *s, size_t n) {
    unsigned char *q = d;
    const unsigned char *p = s;
    while (n--) *q++ = *p++;
    return d;
}

static size_t length(const char *s) {
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

static void put(int fd, const char *s) { sys3(__NR_write, fd, s, length(s)); }

static void put_number(int fd, unsigned long n) {
    char digits[24];
    int i = sizeof digits - 1;
    digits[i] = 0;
    do {
        digits[--i] = (char)('0' + n % 10);
        n /= 10;
    } while (n && i > 0);
    put(fd, digits + i);
}

static __attribute__((noreturn)) void leave(int status) {
    for (;;) sys1(__NR_exit_group, status);
}

/* A step failed: say which on the report pipe, before the program ever ran. */
static __attribute__((noreturn)) void fail(const char *step, long ret) {
    put(REPORT_FD, step);
    put(REPORT_FD, ": errno ");
    put_number(REPORT_FD, (unsigned long)-ret);
    leave(CONFINEMENT_FAILED);
}

static void check(const char *step, long ret) {
    if (ret < 0) fail(step, ret);
}

/* ---- the command line --------------------------------------------------------------- */

static const char *after(const char *arg, const char *key) {
    while (*key)
        if (*arg++ != *key++) return 0;
    return arg;
}

static int same(const char *a, const char *b) {
    while (*a && *a == *b) a++, b++;
    return *a == *b;
}

/* A decimal number and what follows it; *bad set when there is none. */
static unsigned long number(const char **at, int *bad) {
    const char *p = *at;
    unsigned long n = 0;
    if (*p < '0' || *p > '9') *bad = 1;
    while (*p >= '0' && *p <= '9') n = n * 10 + (unsigned long)(*p++ - '0');
    *at = p;
    return n;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

struct limit {
    unsigned long resource, soft, hard;
};

static struct sock_filter program[MAX_INSTRUCTIONS];
static struct limit limits[MAX_RLIMITS];
static unsigned long pid_slots[MAX_PID_SLOTS];

/* ---- exec_once's supervisor -------------------------------------------------------- */

static volatile int listener = -1;
static volatile int given = 0; /* a futex: the listener is there */
static unsigned char thread_stack[16384] __attribute__((aligned(16)));

/* Let the first exec asked about go on, then close the listener (exec_once.Supervisor). */
static void answer_once(void) {
    while (!__atomic_load_n(&given, __ATOMIC_ACQUIRE))
        sys4(__NR_futex, &given, FUTEX_WAIT, 0, 0);
    int fd = listener;
    for (;;) {
        struct seccomp_notif call;
        struct seccomp_notif_resp reply;
        memset(&call, 0, sizeof call);
        long ret = sys3(__NR_ioctl, fd, SECCOMP_IOCTL_NOTIF_RECV, &call);
        if (ret == 0) {
            memset(&reply, 0, sizeof reply);
            reply.id = call.id;
            reply.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
            ret = sys3(__NR_ioctl, fd, SECCOMP_IOCTL_NOTIF_SEND, &reply);
            if (ret == 0) break;
        }
        if (ret != -ENOENT && ret != -EINTR) break; /* ENOENT: interrupted, asked again */
    }
    sys1(__NR_close, fd);
}

/* ---- the run ------------------------------------------------------------------------ */

static void close_from(unsigned int first, unsigned int last) {
    if (first > last) return;
    if (sys3(__NR_close_range, first, last, 0) != -ENOSYS) return;
    struct rlimit64 open_files;
    unsigned long top = 65536;
    if (sys4(__NR_prlimit64, 0, RLIMIT_NOFILE, 0, &open_files) == 0 && open_files.rlim_cur < top)
        top = open_files.rlim_cur;
    for (unsigned long fd = first; fd <= last && fd < top; fd++) sys1(__NR_close, fd);
}

void __attribute__((noreturn, used)) launch(long *stack) {
    int argc = (int)stack[0];
    char **argv = (char **)(stack + 1);
    char **envp = argv + argc + 1;
    int bad = 0, switch_uid = 0, listen = 0, stderr_to_stdout = 0;
    long exec_fd = -1, ruleset = -1;
    unsigned long zygote = 0, uid = 0, instructions = 0, slots = 0, rlimits = 0;
    const char *dir = 0, *v;
    char **program_argv = 0;

    if (argc == 2 && same(argv[1], "probe")) {
        put(1, "launcher ok\n");
        leave(0);
    }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        v = "";
        if (same(arg, "--")) {
            program_argv = argv + i + 1;
            break;
        } else if ((v = after(arg, "zygote="))) {
            zygote = number(&v, &bad);
        } else if ((v = after(arg, "uid="))) {
            uid = number(&v, &bad);
            switch_uid = 1;
        } else if ((v = after(arg, "rlimit="))) {
            if (rlimits == MAX_RLIMITS) bad = 1;
            struct limit *l = &limits[rlimits++ % MAX_RLIMITS];
            l->resource = number(&v, &bad);
            bad |= *v++ != ',';
            l->soft = number(&v, &bad);
            bad |= *v++ != ',';
            l->hard = number(&v, &bad);
        } else if ((v = after(arg, "dir="))) {
            dir = v;
            v += length(v);
        } else if ((v = after(arg, "exec="))) {
            exec_fd = (long)number(&v, &bad);
        } else if ((v = after(arg, "ruleset="))) {
            ruleset = (long)number(&v, &bad);
        } else if ((v = after(arg, "filter="))) {
            size_t n = length(v);
            if (n % 16 || n / 16 > MAX_INSTRUCTIONS) bad = 1;
            unsigned char *bytes = (unsigned char *)program;
            for (size_t j = 0; !bad && j < n; j += 2) {
                int high = hex_digit(v[j]), low = hex_digit(v[j + 1]);
                if (high < 0 || low < 0) bad = 1;
                bytes[j / 2] = (unsigned char)(high << 4 | low);
            }
            instructions = n / 16;
            v += n;
        } else if ((v = after(arg, "pid="))) {
            if (slots == MAX_PID_SLOTS) bad = 1;
            pid_slots[slots++ % MAX_PID_SLOTS] = number(&v, &bad);
        } else if (same(arg, "listen")) {
            listen = 1;
            v = "";
        } else if (same(arg, "stderr=stdout")) {
            stderr_to_stdout = 1;
            v = "";
        } else {
            bad = 1;
        }
        if (!v || *v) bad = 1;
    }
    if (bad || !program_argv || !program_argv[0] || !dir || exec_fd < 0 || !zygote ||
        (listen && !instructions))
        fail("launcher", -22); /* EINVAL: the zygote's call was wrong */
    for (unsigned long i = 0; i < slots; i++)
        if (pid_slots[i] >= instructions) fail("launcher", -22);

    /* a session of its own; fds 0-3, the ruleset at 4 until it is used, the program's
       file at EXEC_FD; fd 3 and EXEC_FD close on exec */
    check("process", sys0(__NR_setsid));
    long moved = sys3(__NR_fcntl, exec_fd, F_DUPFD_CLOEXEC, EXEC_FD + 1);
    check("process", moved);
    check("process", sys3(__NR_dup3, moved, EXEC_FD, O_CLOEXEC));
    sys1(__NR_close, moved);
    if (ruleset >= 0 && ruleset != RULESET_FD)
        check("process", sys3(__NR_dup3, ruleset, RULESET_FD, O_CLOEXEC));
    if (stderr_to_stdout) check("process", sys3(__NR_dup3, 1, 2, 0));
    check("process", sys3(__NR_fcntl, REPORT_FD, F_SETFD, FD_CLOEXEC));
    close_from(ruleset >= 0 ? RULESET_FD + 1 : RULESET_FD, EXEC_FD - 1);
    close_from(EXEC_FD + 1, ~0U);

    if (switch_uid) {
        check("uid", sys2(__NR_setgroups, 0, 0));
        check("uid", sys3(__NR_setresgid, uid, uid, uid));
        check("uid", sys3(__NR_setresuid, uid, uid, uid));
    } else {
        struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct data[2];
        memset(data, 0, sizeof data);
        check("capabilities", sys2(__NR_capset, &header, data));
    }
    if (listen) {
        long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                     CLONE_SYSVSEM;
        check("exec_once", start_thread(flags, thread_stack + sizeof thread_stack, answer_once));
    }
    for (unsigned long i = 0; i < rlimits; i++) {
        struct rlimit64 old, new;
        check("rlimits", sys4(__NR_prlimit64, 0, limits[i].resource, 0, &old));
        new.rlim_cur = limits[i].soft;
        new.rlim_max = limits[i].hard;
        if (old.rlim_max != RLIM64_INFINITY) {
            if (new.rlim_cur > old.rlim_max) new.rlim_cur = old.rlim_max;
            if (new.rlim_max > old.rlim_max) new.rlim_max = old.rlim_max;
        }
        check("rlimits", sys4(__NR_prlimit64, 0, limits[i].resource, &new, 0));
    }
    check("process", sys1(__NR_chdir, dir));
    check("process", sys2(__NR_prctl, PR_SET_DUMPABLE, 0));
    check("process", sys2(__NR_prctl, PR_SET_PDEATHSIG, SIGKILL));
    if ((unsigned long)sys0(__NR_getppid) != zygote) fail("process", -ESRCH);
    check("process", sys5(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    if (ruleset >= 0) {
        check("landlock", sys2(__NR_landlock_restrict_self, RULESET_FD, 0));
        sys1(__NR_close, RULESET_FD);
    }
    if (instructions) {
        long pid = sys0(__NR_getpid);
        for (unsigned long i = 0; i < slots; i++) program[pid_slots[i]].k = (unsigned int)pid;
        struct sock_fprog fprog = {(unsigned short)instructions, program};
        if (listen) {
            long fd = sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
                           SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
            check("seccomp", fd);
            listener = (int)fd;
            __atomic_store_n(&given, 1, __ATOMIC_RELEASE);
            sys3(__NR_futex, &given, FUTEX_WAKE, 1);
        } else {
            check("seccomp", sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog));
        }
    }
    long ret = sys5(__NR_execveat, EXEC_FD, "", program_argv, envp, AT_EMPTY_PATH);
    put(2, "sandbox: exec of ");
    put(2, program_argv[0]);
    put(2, " failed: errno ");
    put_number(2, (unsigned long)-ret);
    put(2, "\n");
    leave(EXEC_FAILED);
}
