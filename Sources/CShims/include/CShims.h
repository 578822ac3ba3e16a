#ifndef CSHIMS_H
#define CSHIMS_H
/* Helpers for what Swift cannot call directly: macros and _GNU_SOURCE-only APIs. */
#include <stddef.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

/* The CMSG_* macros as functions, for SCM_RIGHTS descriptor passing. */
struct cmsghdr *CShims_CMSG_FIRSTHDR(const struct msghdr *message);
struct cmsghdr *CShims_CMSG_NXTHDR(struct msghdr *message, struct cmsghdr *header);
unsigned char *CShims_CMSG_DATA(struct cmsghdr *header);
size_t CShims_CMSG_SPACE(size_t length);
size_t CShims_CMSG_LEN(size_t length);

/* memfd_create(2); declared by glibc only under _GNU_SOURCE. */
int CShims_memfd_create(const char *name, unsigned int flags);
/* fallocate(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE): the range's disk space given back, the
   file's size kept. 0, or -1 with errno. */
int CShims_punch_hole(int fd, long long offset, long long length);
/* open(directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600): a file with no name in the directory,
   gone with its last descriptor. */
int CShims_open_unnamed(const char *directory);
/* sync_file_range(SYNC_FILE_RANGE_WRITE): writeback of the range starts now, not waited for. */
int CShims_start_writeback(int fd, long long offset, long long length);

/* pidfd_open(2), which glibc 2.36 declares only in <sys/pidfd.h>: a descriptor that becomes
   readable when the process exits, so a child's end is waited for like any other event. */
int CShims_pidfd_open(int pid);

/* accept4(2) with SOCK_CLOEXEC: the accepted socket is never inherited by a child, not even
   one spawned between accept and a later fcntl. */
int CShims_accept_cloexec(int listener);

/* pipe2(2) with O_CLOEXEC: neither end reaches a child spawned meanwhile. */
int CShims_pipe_cloexec(int fds[2]);

/* posix_spawn_file_actions_addclosefrom_np (glibc 2.34): the child closes every descriptor
   from `lowest` up, a second wall behind close-on-exec for what it must never inherit. */
int CShims_spawn_closefrom(posix_spawn_file_actions_t *actions, int lowest);

/* The Landlock ABI version this kernel offers (0 when it has none): scoping abstract unix
   sockets and signals needs 6 (Linux 6.12). */
int CShims_landlock_abi(void);

/* How a confined child starts: descriptors to hand over, as (ours, number in the child),
   and which walls to raise before it execs. */
struct CShims_confined_spawn {
    const char *path;
    char *const *argv;
    char *const *envp;
    const int *sources;
    const int *targets;
    int count;
    /* Landlock: no abstract unix socket, no signal beyond its own domain (ABI >= 6). */
    int scope;
    /* Landlock: TCP connects only to these ports, on any address (ABI >= 4). */
    int limit_connect;
    const unsigned short *connect_ports;
    int connect_port_count;
    /* Landlock: files only beneath these paths (ABI >= 1): read and execute beneath
       `readable`, anything beneath `writable`; no other file or folder may be opened. A path
       that cannot be opened is skipped. */
    int limit_files;
    char *const *readable;
    int readable_count;
    char *const *writable;
    int writable_count;
};

/* Starts `spawn->path` in a new session with default signal handling and only the given
   descriptors, after PR_SET_NO_NEW_PRIVS, the Landlock scopes, connect and file rules (if asked)
   and a seccomp filter that refuses ptrace, process_vm_readv/writev, shmget, io_uring,
   MSG_FASTOPEN sends, MPTCP and SCTP sockets and, on x86_64, x32 and foreign-architecture
   system calls with EPERM. These are inherited by everything it runs and cannot be lifted.
   Posix_spawn has no hook for them, hence the clone here. Returns the pid, or -errno (the
   child's, if it could not raise a wall or exec). A child's PR_SET_PDEATHSIG fires when the
   *thread* that called this exits. */
int CShims_spawn_confined(const struct CShims_confined_spawn *spawn);

/* A memfd (close-on-exec, at offset 0) holding the seccomp program for what runs inside an
   extension's sandbox, for bwrap's --add-seccomp-fd; or -errno. Refused with EPERM: new
   namespaces (unshare, setns, clone with CLONE_NEW*), mounts and the new mount API, chroot,
   pivot_root, keyrings, perf_event_open, io_uring, userfaultfd, memfd_create, memfd_secret,
   and other architectures' calls; clone3 gets ENOSYS so that glibc falls back to clone. */
int CShims_sandbox_filter(void);

/* What one socket holds in the kernel: queued to be read or sent, and reserved. */
struct CShims_socket_memory {
    unsigned long inode;
    unsigned long bytes;
};
/* Every unix, TCP and UDP socket of this network namespace that holds memory, through
   NETLINK_SOCK_DIAG (unix_diag and inet_diag meminfo): fills up to `capacity` entries and
   returns how many there are (more than `capacity`: call again with room for them), or -errno. */
long CShims_list_socket_memory(struct CShims_socket_memory *out, long capacity);
/* The same, through `diag`, a NETLINK_SOCK_DIAG socket of another network namespace. */
long CShims_list_socket_memory_on(int diag, struct CShims_socket_memory *out, long capacity);
/* A NETLINK_SOCK_DIAG socket in the network namespace of process `pid`, or -errno. */
int CShims_sock_diag_socket_of(int pid);

/* glibc's <malloc.h>, which Swift's Glibc module leaves out. */
/* Keeps the mmap threshold at glibc's initial 128 KiB instead of letting it rise to the
   largest block freed so far (up to 32 MiB), so large blocks are unmapped as they are freed
   and the heaps' free tops are trimmed. */
void CShims_malloc_fix_mmap_threshold(void);
/* malloc_trim(0): gives the free pages of every arena back to the system. */
void CShims_malloc_trim(void);

/* From now on this process and its children may open no userfaultfd (the call, or
   /dev/userfaultfd): one more seccomp filter, on every thread. 0, or -errno. */
int CShims_refuse_new_userfaultfds(void);

/* prctl(PR_SET_THP_DISABLE): no transparent huge pages for this process and its children. */
void CShims_disable_transparent_huge_pages(void);

/* mallopt(M_ARENA_MAX, 1): one malloc arena for every thread. */
void CShims_malloc_one_arena(void);
/* Bytes the program holds from malloc now (mallinfo2: in use in the arenas plus mmapped blocks). */
size_t CShims_malloc_in_use(void);

/* Constants hidden behind _GNU_SOURCE; shim.c checks them against the real ones. */
#define CShims_MFD_CLOEXEC 0x0001U
#define CShims_MFD_ALLOW_SEALING 0x0002U
#define CShims_F_ADD_SEALS 1033
#define CShims_F_SEAL_SEAL 0x0001
#define CShims_F_SEAL_SHRINK 0x0002
#define CShims_F_SEAL_GROW 0x0004
#define CShims_F_SEAL_FUTURE_WRITE 0x0010
#endif
