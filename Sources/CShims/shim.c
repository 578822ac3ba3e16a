#define _GNU_SOURCE
#include "CShims.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/userfaultfd.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/ioctl.h>
#include <string.h>
#include <stdio.h>

_Static_assert(CShims_MFD_CLOEXEC == MFD_CLOEXEC, "MFD_CLOEXEC");
_Static_assert(CShims_MFD_ALLOW_SEALING == MFD_ALLOW_SEALING, "MFD_ALLOW_SEALING");
_Static_assert(CShims_F_ADD_SEALS == F_ADD_SEALS, "F_ADD_SEALS");
_Static_assert(CShims_F_SEAL_SEAL == F_SEAL_SEAL, "F_SEAL_SEAL");
_Static_assert(CShims_F_SEAL_SHRINK == F_SEAL_SHRINK, "F_SEAL_SHRINK");
_Static_assert(CShims_F_SEAL_GROW == F_SEAL_GROW, "F_SEAL_GROW");
_Static_assert(CShims_F_SEAL_FUTURE_WRITE == F_SEAL_FUTURE_WRITE, "F_SEAL_FUTURE_WRITE");

struct cmsghdr *CShims_CMSG_FIRSTHDR(const struct msghdr *message) { return CMSG_FIRSTHDR(message); }
struct cmsghdr *CShims_CMSG_NXTHDR(struct msghdr *message, struct cmsghdr *header) { return CMSG_NXTHDR(message, header); }
unsigned char *CShims_CMSG_DATA(struct cmsghdr *header) { return CMSG_DATA(header); }
size_t CShims_CMSG_SPACE(size_t length) { return CMSG_SPACE(length); }
size_t CShims_CMSG_LEN(size_t length) { return CMSG_LEN(length); }

int CShims_memfd_create(const char *name, unsigned int flags) { return memfd_create(name, flags); }
int CShims_punch_hole(int fd, long long offset, long long length) {
    return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, offset, length);
}
int CShims_open_unnamed(const char *directory) { return open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600); }
int CShims_start_writeback(int fd, long long offset, long long length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

int CShims_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
int CShims_accept_cloexec(int listener) { return accept4(listener, NULL, NULL, SOCK_CLOEXEC); }
int CShims_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
int CShims_spawn_closefrom(posix_spawn_file_actions_t *actions, int lowest) { return posix_spawn_file_actions_addclosefrom_np(actions, lowest); }

/* Landlock's uapi as of ABI 6 (Linux 6.12); Debian 12's headers predate network rules (ABI 4)
   and the scopes. */
struct landlock_scoped_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};
struct landlock_net_port_attr {
    uint64_t allowed_access;
    uint64_t port;
};
struct landlock_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));
#define LANDLOCK_VERSION_FLAG (1U << 0)
#define LANDLOCK_RULE_BENEATH 1
/* File rights by ABI: 1 has the first 13, 2 adds REFER, 3 TRUNCATE, 5 IOCTL_DEV. */
#define LANDLOCK_FS_EXECUTE (1ULL << 0)
#define LANDLOCK_FS_WRITE_FILE (1ULL << 1)
#define LANDLOCK_FS_READ_FILE (1ULL << 2)
#define LANDLOCK_FS_READ_DIR (1ULL << 3)
#define LANDLOCK_FS_TRUNCATE (1ULL << 14)
#define LANDLOCK_FS_IOCTL_DEV (1ULL << 15)
#define LANDLOCK_FS_ABI1 ((1ULL << 13) - 1)
/* The rights that apply to a file (the rest are a folder's). */
#define LANDLOCK_FS_OF_A_FILE (LANDLOCK_FS_EXECUTE | LANDLOCK_FS_WRITE_FILE | LANDLOCK_FS_READ_FILE | LANDLOCK_FS_TRUNCATE | LANDLOCK_FS_IOCTL_DEV)
#define LANDLOCK_RULE_NET_PORT 2
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define LANDLOCK_SCOPE_ABSTRACT_UNIX (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNALS (1ULL << 1)

int CShims_landlock_abi(void) {
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_VERSION_FLAG);
    return abi < 0 ? 0 : (int)abi;
}

/* Every file right this kernel's Landlock knows, so none is left unhandled (and so allowed). */
static uint64_t landlock_file_rights(int abi) {
    uint64_t rights = LANDLOCK_FS_ABI1;
    if (abi >= 2) rights |= 1ULL << 13; /* REFER */
    if (abi >= 3) rights |= LANDLOCK_FS_TRUNCATE;
    if (abi >= 5) rights |= LANDLOCK_FS_IOCTL_DEV;
    return rights;
}

/* Allows `access` (of `handled`) beneath each of `paths`; a file gets only a file's rights.
   Runs in the clone: system calls only. */
static int allow_beneath(int ruleset, char *const *paths, int count, uint64_t access, uint64_t handled) {
    for (int i = 0; i < count; i++) {
        int fd = open(paths[i], O_PATH | O_CLOEXEC);
        if (fd < 0) continue; /* gone meanwhile: nothing there to allow */
        struct stat status;
        uint64_t allowed = access & handled;
        if (fstat(fd, &status) < 0 || !S_ISDIR(status.st_mode)) allowed &= LANDLOCK_FS_OF_A_FILE;
        struct landlock_beneath_attr rule = { .allowed_access = allowed, .parent_fd = fd };
        long added = allowed == 0 ? 0 : syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_BENEATH, &rule, 0);
        close(fd);
        if (added < 0) return -1;
    }
    return 0;
}

#if defined(__x86_64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "add this architecture's AUDIT_ARCH_*"
#endif
#define REFUSE (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define LOAD_LOW_WORD_OF_ARGUMENT(n) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[n]))
/* Refuses call `number` outright: jumps over the refusal unless it is that call. */
#define REFUSE_CALL(number) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, number, 0, 1), BPF_STMT(BPF_RET | BPF_K, REFUSE)

/* Another architecture's numbers (i386 through int 0x80) and x32's would get past a
   number-only filter, so a filter refuses them first; then it loads the call's number. */
#if defined(__x86_64__)
#define REFUSE_X32 BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U /* __X32_SYSCALL_BIT */, 0, 1), BPF_STMT(BPF_RET | BPF_K, REFUSE),
#else
#define REFUSE_X32
#endif
#define NATIVE_CALLS_ONLY \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)), \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 1, 0), \
    BPF_STMT(BPF_RET | BPF_K, REFUSE), \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)), \
    REFUSE_X32

/* The checks on arguments come last, as they replace the call's number in the accumulator. */
static struct sock_filter confinement_filter[] = {
    NATIVE_CALLS_ONLY
    /* A System V segment outlives its mappings and is no process's memory: uncountable. */
    REFUSE_CALL(__NR_shmget),
    REFUSE_CALL(__NR_ptrace),
    REFUSE_CALL(__NR_process_vm_readv),
    REFUSE_CALL(__NR_process_vm_writev),
    /* io_uring's operations pass no seccomp filter: they would bring back every refusal below. */
    REFUSE_CALL(__NR_io_uring_setup),
    /* What Landlock's TCP connect rules do not see (Linux 6.18): a connection opened by
       sendto/sendmsg/sendmmsg with MSG_FASTOPEN, and MPTCP and SCTP sockets. */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 5),
    LOAD_LOW_WORD_OF_ARGUMENT(2),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_MPTCP, 2, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_SCTP, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_STMT(BPF_RET | BPF_K, REFUSE),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmsg, 0, 4),
    LOAD_LOW_WORD_OF_ARGUMENT(2),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, REFUSE),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendto, 1, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_sendmmsg, 0, 3),
    LOAD_LOW_WORD_OF_ARGUMENT(3),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, REFUSE),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

/* What runs inside the sandbox may not make namespaces, mounts or files of its own that no
   walk of /proc can see: a nested user namespace mounts a tmpfs nobody counts; a memfd sent
   to itself and closed is held by no process; keyrings, perf buffers, io_uring rings and
   userfaultfd are kernel memory or ways around the filter. bwrap needs all of this itself, so
   this program goes to bwrap (--add-seccomp-fd), which installs it just before it execs the
   extension. clone3 gets ENOSYS, since its flags sit behind a pointer: glibc then uses clone. */
static const int sandbox_refused[] = {
    __NR_unshare, __NR_setns, __NR_mount, __NR_umount2, __NR_pivot_root, __NR_chroot,
    __NR_fsopen, __NR_fsconfig, __NR_fsmount, __NR_fspick, __NR_move_mount, __NR_open_tree,
    __NR_mount_setattr, __NR_keyctl, __NR_add_key, __NR_request_key, __NR_perf_event_open,
    __NR_io_uring_setup, __NR_io_uring_enter, __NR_io_uring_register, __NR_userfaultfd,
    __NR_memfd_create, __NR_memfd_secret,
};
#define CLONE_NAMESPACES (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET)

int CShims_sandbox_filter(void) {
    struct sock_filter program[96];
    unsigned short n = 0;
    program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 1, 0);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, REFUSE);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#if defined(__x86_64__)
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000U /* __X32_SYSCALL_BIT */, 0, 1);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, REFUSE);
#endif
    for (size_t i = 0; i < sizeof sandbox_refused / sizeof sandbox_refused[0]; i++) {
        program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)sandbox_refused[i], 0, 1);
        program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, REFUSE);
    }
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA));
    /* Shared anonymous memory keeps every page after all but one of them are unmapped, where
       no walk sees them: mmap with MAP_ANONYMOUS and MAP_SHARED or MAP_SHARED_VALIDATE. */
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_mmap, 0, 5);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[3]));
    /* MAP_SHARED's bit is set in MAP_SHARED_VALIDATE too, never in MAP_PRIVATE. */
    program[n++] = (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, MAP_ANONYMOUS | MAP_SHARED);
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MAP_ANONYMOUS | MAP_SHARED, 0, 1);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, REFUSE);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    /* clone's flags are its first argument; their low 32 bits hold every CLONE_NEW*. */
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
    program[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NAMESPACES, 0, 1);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, REFUSE);
    program[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    _Static_assert(6 + 2 * sizeof sandbox_refused / sizeof sandbox_refused[0] + 13 <= 96, "program size");
    int fd = memfd_create("openreplaykit-seccomp", MFD_CLOEXEC);
    if (fd < 0) return -errno;
    size_t size = n * sizeof program[0];
    if (write(fd, program, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
        int error = errno ? errno : EIO;
        close(fd);
        return -error;
    }
    return fd;
}

#define MAX_HANDED 16

struct confined_child {
    const struct CShims_confined_spawn *spawn;
    int lowest;
    /* Landlock's ABI, asked before the clone. */
    int abi;
    int error;
};

/* Runs in the clone, which shares our memory until it execs (as posix_spawn's does): only
   system calls, no allocation, no locks. */
static int confined_child_main(void *argument) {
    struct confined_child *child = argument;
    const struct CShims_confined_spawn *spawn = child->spawn;
    struct sigaction defaults = { .sa_handler = SIG_DFL };
    for (int number = 1; number < NSIG; number++) sigaction(number, &defaults, NULL);
    if (setsid() < 0) goto failed;
    /* Copies above every target first, so no dup2 overwrites a source still to be copied. */
    int copies[MAX_HANDED];
    for (int i = 0; i < spawn->count; i++) {
        copies[i] = fcntl(spawn->sources[i], F_DUPFD, child->lowest);
        if (copies[i] < 0) goto failed;
    }
    for (int i = 0; i < spawn->count; i++) {
        if (dup2(copies[i], spawn->targets[i]) < 0) goto failed;
    }
    if (syscall(SYS_close_range, child->lowest, ~0U, 0) < 0) goto failed;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) goto failed;
    if (spawn->scope || spawn->limit_connect || spawn->limit_files) {
        uint64_t files = spawn->limit_files ? landlock_file_rights(child->abi) : 0;
        struct landlock_scoped_attr attributes = {
            .handled_access_fs = files,
            .handled_access_net = spawn->limit_connect ? LANDLOCK_ACCESS_NET_CONNECT_TCP : 0,
            .scoped = spawn->scope ? LANDLOCK_SCOPE_ABSTRACT_UNIX | LANDLOCK_SCOPE_SIGNALS : 0 };
        int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attributes, sizeof attributes, 0);
        if (ruleset < 0) goto failed;
        uint64_t reading = LANDLOCK_FS_EXECUTE | LANDLOCK_FS_READ_FILE | LANDLOCK_FS_READ_DIR | LANDLOCK_FS_IOCTL_DEV;
        if (files && (allow_beneath(ruleset, spawn->readable, spawn->readable_count, reading, files) < 0
                      || allow_beneath(ruleset, spawn->writable, spawn->writable_count, files, files) < 0)) {
            close(ruleset);
            goto failed;
        }
        for (int i = 0; spawn->limit_connect && i < spawn->connect_port_count; i++) {
            struct landlock_net_port_attr port = { .allowed_access = LANDLOCK_ACCESS_NET_CONNECT_TCP, .port = spawn->connect_ports[i] };
            if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_NET_PORT, &port, 0) < 0) {
                close(ruleset);
                goto failed;
            }
        }
        long restricted = syscall(SYS_landlock_restrict_self, ruleset, 0);
        close(ruleset);
        if (restricted < 0) goto failed;
    }
    struct sock_fprog program = {
        .len = (unsigned short)(sizeof confinement_filter / sizeof confinement_filter[0]), .filter = confinement_filter };
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) < 0) goto failed;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(spawn->path, spawn->argv, spawn->envp);
failed:
    child->error = errno ? errno : EINVAL;
    _exit(127);
}

int CShims_spawn_confined(const struct CShims_confined_spawn *spawn) {
    if (spawn->count > MAX_HANDED) return -EINVAL;
    int lowest = 3;
    for (int i = 0; i < spawn->count; i++) {
        if (spawn->targets[i] + 1 > lowest) lowest = spawn->targets[i] + 1;
    }
    const size_t stackSize = 128 * 1024;
    void *stack = mmap(NULL, stackSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return -errno;
    /* No handler of ours may run in the clone before it has reset them all. */
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    struct confined_child child = { .spawn = spawn, .lowest = lowest, .abi = spawn->limit_files ? CShims_landlock_abi() : 0, .error = 0 };
    int pid = clone(confined_child_main, (char *)stack + stackSize, CLONE_VM | CLONE_VFORK | SIGCHLD, &child);
    int error = pid < 0 ? errno : child.error;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    munmap(stack, stackSize);
    if (pid < 0) return -error;
    if (error != 0) {
        waitpid(pid, NULL, 0);
        return -error;
    }
    return pid;
}

/* Refuses every new userfaultfd: the call, and the device's USERFAULTFD_IOC_NEW
   (/dev/userfaultfd, which only its permissions guard). */
static struct sock_filter no_new_userfaultfd_filter[] = {
    NATIVE_CALLS_ONLY
    REFUSE_CALL(__NR_userfaultfd),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 3),
    LOAD_LOW_WORD_OF_ARGUMENT(1),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, USERFAULTFD_IOC_NEW, 0, 1),
    BPF_STMT(BPF_RET | BPF_K, REFUSE),
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
};

int CShims_refuse_new_userfaultfds(void) {
    /* What seccomp asks of a process without CAP_SYS_ADMIN; a confined one has it already. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -errno;
    struct sock_fprog program = {
        .len = (unsigned short)(sizeof no_new_userfaultfd_filter / sizeof no_new_userfaultfd_filter[0]),
        .filter = no_new_userfaultfd_filter };
    /* Every thread at once: one started by a library before this call is no way around it. */
    long result = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &program);
    if (result < 0) return -errno;
    return result == 0 ? 0 : -EAGAIN;  /* the id of a thread that could not take the filter */
}

void CShims_disable_transparent_huge_pages(void) { prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0); }

void CShims_malloc_fix_mmap_threshold(void) { mallopt(M_MMAP_THRESHOLD, 128 * 1024); }

void CShims_malloc_trim(void) { malloc_trim(0); }

void CShims_malloc_one_arena(void) { mallopt(M_ARENA_MAX, 1); }

size_t CShims_malloc_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

/* Memory a socket holds in the kernel, from its SK_MEMINFO: what waits to be read, what is
   queued to be sent (TCP's write queue; a unix socket's datagrams wait in its peer's queue
   but are charged to the sender), and what is reserved ahead. */
static unsigned long meminfo_bytes(const struct rtattr *attribute) {
    if (RTA_PAYLOAD(attribute) < SK_MEMINFO_VARS * sizeof(uint32_t)) return 0;
    const uint32_t *info = RTA_DATA(attribute);
    uint32_t sent = info[SK_MEMINFO_WMEM_ALLOC] > info[SK_MEMINFO_WMEM_QUEUED] ? info[SK_MEMINFO_WMEM_ALLOC] : info[SK_MEMINFO_WMEM_QUEUED];
    return (unsigned long)info[SK_MEMINFO_RMEM_ALLOC] + sent + info[SK_MEMINFO_FWD_ALLOC] + info[SK_MEMINFO_OPTMEM]
        + info[SK_MEMINFO_BACKLOG];
}

/* One sock_diag dump: sends `request`, adds (inode, bytes) for every socket answered. */
static int dump_sockets(int fd, void *request, size_t length, int family, struct CShims_socket_memory *out, long capacity,
                        long *count) {
    struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
    struct nlmsghdr *header = request;
    header->nlmsg_len = (uint32_t)length;
    header->nlmsg_type = SOCK_DIAG_BY_FAMILY;
    header->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    if (sendto(fd, request, length, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) return -errno;
    static __thread char buffer[32768] __attribute__((aligned(NLMSG_ALIGNTO)));
    for (;;) {
        ssize_t received = recv(fd, buffer, sizeof buffer, 0);
        if (received < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        int left = (int)received;
        for (struct nlmsghdr *message = (struct nlmsghdr *)buffer; NLMSG_OK(message, left); message = NLMSG_NEXT(message, left)) {
            if (message->nlmsg_type == NLMSG_DONE) return 0;
            if (message->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *error = NLMSG_DATA(message);
                return error->error;
            }
            unsigned long inode;
            struct rtattr *attribute;
            int attributes;
            int wanted;
            if (family == AF_UNIX) {
                const struct unix_diag_msg *socket = NLMSG_DATA(message);
                inode = socket->udiag_ino;
                attribute = (struct rtattr *)(socket + 1);
                attributes = (int)(message->nlmsg_len - NLMSG_LENGTH(sizeof *socket));
                wanted = UNIX_DIAG_MEMINFO;
            } else {
                const struct inet_diag_msg *socket = NLMSG_DATA(message);
                inode = socket->idiag_inode;
                attribute = (struct rtattr *)(socket + 1);
                attributes = (int)(message->nlmsg_len - NLMSG_LENGTH(sizeof *socket));
                wanted = INET_DIAG_SKMEMINFO;
            }
            unsigned long bytes = 0;
            for (; RTA_OK(attribute, attributes); attribute = RTA_NEXT(attribute, attributes)) {
                if (attribute->rta_type == wanted) bytes = meminfo_bytes(attribute);
            }
            if (inode == 0 || bytes == 0) continue;
            if (*count < capacity) out[*count] = (struct CShims_socket_memory){ .inode = inode, .bytes = bytes };
            (*count)++;
        }
    }
}

long CShims_list_socket_memory(struct CShims_socket_memory *out, long capacity) {
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (fd < 0) return -errno;
    long result = CShims_list_socket_memory_on(fd, out, capacity);
    close(fd);
    return result;
}

long CShims_list_socket_memory_on(int fd, struct CShims_socket_memory *out, long capacity) {
    long count = 0;
    struct { struct nlmsghdr header; struct unix_diag_req request; } unix_request = {
        .request = { .sdiag_family = AF_UNIX, .udiag_states = ~0U, .udiag_show = UDIAG_SHOW_MEMINFO } };
    int result = dump_sockets(fd, &unix_request, sizeof unix_request, AF_UNIX, out, capacity, &count);
    const int families[] = { AF_INET, AF_INET6 }, protocols[] = { IPPROTO_TCP, IPPROTO_UDP };
    for (int f = 0; f < 2 && result == 0; f++) {
        for (int p = 0; p < 2 && result == 0; p++) {
            struct { struct nlmsghdr header; struct inet_diag_req_v2 request; } inet_request = {
                .request = { .sdiag_family = (uint8_t)families[f], .sdiag_protocol = (uint8_t)protocols[p],
                             .idiag_ext = 1 << (INET_DIAG_SKMEMINFO - 1), .idiag_states = ~0U } };
            result = dump_sockets(fd, &inet_request, sizeof inet_request, AF_INET, out, capacity, &count);
        }
    }
    return result < 0 ? result : count;
}

#define NS_GET_USERNS_REQUEST 0xb701 /* linux/nsfs.h */

/* sock_diag lists the sockets of its own socket's network namespace only, and a socket is
   made in the namespace of the thread that makes it. A forked child (single-threaded, as
   joining a user namespace needs) joins the sandbox's network namespace, first the user
   namespace that owns it when not root (its owner, our uid, has every capability there),
   makes the socket and hands it back. The child makes system calls only. */
int CShims_sock_diag_socket_of(int pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/ns/net", pid);
    int netns = open(path, O_RDONLY | O_CLOEXEC);
    if (netns < 0) return -errno;
    int userns = geteuid() == 0 ? -1 : ioctl(netns, NS_GET_USERNS_REQUEST);
    int pair[2];
    if ((geteuid() != 0 && userns < 0) || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0) {
        int error = errno;
        close(netns);
        if (userns >= 0) close(userns);
        return -error;
    }
    pid_t child = fork();
    if (child == 0) {
        if (userns >= 0 && setns(userns, CLONE_NEWUSER) < 0) _exit(1);
        if (setns(netns, CLONE_NEWNET) < 0) _exit(2);
        int diag = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
        if (diag < 0) _exit(3);
        char control[CMSG_SPACE(sizeof(int))] = { 0 };
        char byte = 1;
        struct iovec part = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(header), &diag, sizeof diag);
        _exit(sendmsg(pair[1], &message, 0) == 1 ? 0 : 4);
    }
    int error = child < 0 ? errno : 0;
    close(pair[1]);
    close(netns);
    if (userns >= 0) close(userns);
    int diag = -1;
    if (child > 0) {
        char control[CMSG_SPACE(sizeof(int))] = { 0 };
        char byte;
        struct iovec part = { .iov_base = &byte, .iov_len = 1 };
        struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control };
        if (recvmsg(pair[0], &message, MSG_CMSG_CLOEXEC) == 1) {
            struct cmsghdr *header = CMSG_FIRSTHDR(&message);
            if (header && header->cmsg_type == SCM_RIGHTS) memcpy(&diag, CMSG_DATA(header), sizeof diag);
        }
        int status = 0;
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
        if (diag < 0) error = WIFEXITED(status) && WEXITSTATUS(status) == 1 ? EPERM : EACCES;
    }
    close(pair[0]);
    return diag >= 0 ? diag : -error;
}
