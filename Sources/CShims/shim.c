#define _GNU_SOURCE
#include "CShims.h"
#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int CShims_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
int CShims_accept_cloexec(int listener) { return accept4(listener, NULL, NULL, SOCK_CLOEXEC); }
int CShims_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
int CShims_spawn_closefrom(posix_spawn_file_actions_t *actions, int lowest) { return posix_spawn_file_actions_addclosefrom_np(actions, lowest); }
