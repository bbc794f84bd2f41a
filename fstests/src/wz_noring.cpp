// SPDX-License-Identifier: MIT
// wz_noring: runs a command with io_uring refused to it and to its children, as a container's
// seccomp profile refuses it (Docker's default profile since 25.0, for one), without the
// host-wide kernel.io_uring_disabled: that setting reaches every process on the machine, so a
// test setting it would change the engine of whatever else runs beside it, a second test run
// included.
//
//   wz_noring [--errno EPERM|ENOSYS] COMMAND [ARG...]
//
// A seccomp filter (libseccomp) fails io_uring_setup, io_uring_enter and io_uring_register
// with the given errno (default EPERM, what container profiles return; ENOSYS is what a kernel
// built without io_uring, or a sandbox that does not know the call, returns), then COMMAND is
// executed in place of this process. Everything else is allowed. The filter sets
// no_new_privs, so a set-user-ID program that COMMAND starts does not gain privileges.
// Exit status: COMMAND's; 125 when the filter cannot be set up, 126/127 when COMMAND cannot be
// executed, 2 on bad usage.

#include <seccomp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

int usage() {
    std::fprintf(stderr, "usage: wz_noring [--errno EPERM|ENOSYS] COMMAND [ARG...]\n");
    return 2;
}

// Installs the filter; false (with the reason on stderr) when any step fails.
bool refuse_io_uring(int errnum) {
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (ctx == nullptr) {
        std::fprintf(stderr, "wz_noring: seccomp_init failed\n");
        return false;
    }
    bool ok = true;
    for (const char* name : {"io_uring_setup", "io_uring_enter", "io_uring_register"}) {
        const int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) {
            std::fprintf(stderr, "wz_noring: libseccomp does not know %s\n", name);
            ok = false;
            break;
        }
        // libseccomp returns a negative errno.
        const int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(static_cast<unsigned>(errnum)), nr, 0);
        if (rc != 0) {
            std::fprintf(stderr, "wz_noring: seccomp_rule_add %s: %s\n", name, std::strerror(-rc));
            ok = false;
            break;
        }
    }
    if (ok) {
        const int rc = seccomp_load(ctx);
        if (rc != 0) {
            std::fprintf(stderr, "wz_noring: seccomp_load: %s\n", std::strerror(-rc));
            ok = false;
        }
    }
    seccomp_release(ctx);
    return ok;
}

}  // namespace

int main(int argc, char** argv) {
    int errnum = EPERM;
    int first = 1;
    if (argc > 2 && std::string(argv[1]) == "--errno") {
        const std::string name = argv[2];
        if (name == "EPERM") {
            errnum = EPERM;
        } else if (name == "ENOSYS") {
            errnum = ENOSYS;
        } else {
            return usage();
        }
        first = 3;
    }
    if (first >= argc || argv[first][0] == '-') {
        return usage();
    }
    if (!refuse_io_uring(errnum)) {
        return 125;
    }
    ::execvp(argv[first], argv + first);
    const int err = errno;
    std::fprintf(stderr, "wz_noring: exec %s: %s\n", argv[first], std::strerror(err));
    return err == ENOENT ? 127 : 126;
}
