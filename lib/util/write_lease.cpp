// SPDX-License-Identifier: MIT
#include "util/write_lease.hpp"

#include "util/private_fd_table.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

namespace wz {

namespace {

// The innermost lease held on this thread; each lease links to the one held before it.
thread_local write_lease* innermost = nullptr;

}  // namespace

int write_lease::take(int fd, bool stop_on_break) {
    if (held()) {
        return -EBUSY;
    }
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
        return -errno;
    }
    if (!S_ISREG(st.st_mode)) {
        return -EINVAL;
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) {
        return -errno;
    }
    if ((flags & O_ACCMODE) != O_RDWR) {
        return -EBADF;
    }
    const int existing = ::fcntl(fd, F_GETLEASE);
    if (existing < 0) {
        return -errno;
    }
    if (existing != F_UNLCK) {
        return -EEXIST;
    }
    const int signal = ::fcntl(fd, F_GETSIG);
    struct ::f_owner_ex owner {};
    if (signal < 0 || ::fcntl(fd, F_GETOWN_EX, &owner) != 0) {
        return -errno;
    }
    if (::fcntl(fd, F_SETSIG, SIGURG) != 0) {
        return -errno;
    }
    if (::fcntl(fd, F_SETLEASE, F_WRLCK) != 0) {
        const int err = errno;
        (void)::fcntl(fd, F_SETSIG, signal);  // wz: ignored-error (restoring what it was; nothing else changed)
        return -err;
    }
    // No owner: a break signals no one (the lease itself stays; broken() polls for breaks).
    struct ::f_owner_ex none {};
    none.type = F_OWNER_PID;
    none.pid = 0;
    if (::fcntl(fd, F_SETOWN_EX, &none) != 0) {
        const int err = errno;
        (void)::fcntl(fd, F_SETLEASE, F_UNLCK);  // wz: ignored-error (undoing a half-taken lease)
        (void)::fcntl(fd, F_SETSIG, signal);     // wz: ignored-error (as above)
        (void)::fcntl(fd, F_SETOWN_EX, &owner);  // wz: ignored-error (as above)
        return -err;
    }
    fd_ = fd;
    stop_on_break_ = stop_on_break;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    saved_direct_ = flags & O_DIRECT;
    saved_signal_ = signal;
    saved_owner_type_ = owner.type;
    saved_owner_pid_ = owner.pid;
    outer_ = innermost;
    innermost = this;
    return 0;
}

bool write_lease::broken() const {
    // F_GETLEASE answers the type the lease is being broken to (F_UNLCK for an open for
    // writing or a truncate, F_RDLCK for an open for reading) while a break is pending, and
    // F_UNLCK once the kernel has taken it back: anything but F_WRLCK means someone waits.
    return held() && ::fcntl(fd_, F_GETLEASE) != F_WRLCK;
}

int write_lease::set_direct(bool on) const {
    if (!held()) {
        return -EBADF;
    }
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags < 0) {
        return -errno;
    }
    const int want = on ? (flags | O_DIRECT) : (flags & ~O_DIRECT);
    if (want != flags && ::fcntl(fd_, F_SETFL, want) != 0) {
        return -errno;
    }
    return 0;
}

void write_lease::release() noexcept {
    if (!held()) {
        return;
    }
    (void)::fcntl(fd_, F_SETLEASE, F_UNLCK);  // wz: ignored-error (a lease the kernel took back is gone already)
    const int flags = ::fcntl(fd_, F_GETFL);
    if (flags >= 0 && (flags & O_DIRECT) != saved_direct_) {
        (void)::fcntl(fd_, F_SETFL, (flags & ~O_DIRECT) | saved_direct_);  // wz: ignored-error (best effort restore)
    }
    (void)::fcntl(fd_, F_SETSIG, saved_signal_);  // wz: ignored-error (best effort restore)
    struct ::f_owner_ex owner {};
    owner.type = static_cast<__pid_type>(saved_owner_type_);
    owner.pid = saved_owner_pid_;
    (void)::fcntl(fd_, F_SETOWN_EX, &owner);  // wz: ignored-error (best effort restore)
    // Leases end in the order they began on a thread (scopes nest); unlink this one wherever
    // it is, so a misordered release cannot leave a dangling pointer behind.
    for (write_lease** p = &innermost; *p != nullptr; p = &(*p)->outer_) {
        if (*p == this) {
            *p = outer_;
            break;
        }
    }
    fd_ = -1;
    outer_ = nullptr;
}

const write_lease* write_lease::held_on(int fd) {
    if (innermost == nullptr || fd < 0) {
        return nullptr;
    }
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
        return nullptr;
    }
    for (const write_lease* l = innermost; l != nullptr; l = l->outer_) {
        if (l->dev_ == st.st_dev && l->ino_ == st.st_ino) {
            return l;
        }
    }
    return nullptr;
}

namespace {

bool all_digits(const char* s) {
    if (*s == '\0') {
        return false;
    }
    for (; *s != '\0'; ++s) {
        if (*s < '0' || *s > '9') {
            return false;
        }
    }
    return true;
}

struct dir_closer {
    void operator()(DIR* d) const { (void)::closedir(d); }  // wz: ignored-error (read-only walk)
};

// Does the descriptor directory DIR ("/proc/1234/fd") hold an open description of the file?
bool fd_dir_has(const std::string& dir, dev_t dev, ino_t ino, int skip_fd) {
    std::unique_ptr<DIR, dir_closer> d(::opendir(dir.c_str()));
    if (!d) {
        return false;
    }
    while (const dirent* e = ::readdir(d.get())) {
        if (!all_digits(e->d_name) || std::atoi(e->d_name) == skip_fd) {
            continue;
        }
        struct ::stat st {};
        // stat follows the magic link to the open file itself (never opens it).
        if (::stat((dir + "/" + e->d_name).c_str(), &st) == 0 && st.st_dev == dev && st.st_ino == ino) {
            return true;
        }
    }
    return false;
}

// Does /proc/PID/maps map the file? Its lines carry "MAJOR:MINOR INODE" in hex and decimal.
bool maps_have(const std::string& maps, dev_t dev, ino_t ino) {
    std::ifstream in(maps);
    std::string line;
    while (std::getline(in, line)) {
        unsigned long long start = 0, end = 0, off = 0, inode = 0;
        unsigned maj = 0, min = 0;
        char perms[8] = {};
        if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms, &off, &maj, &min,
                        &inode) == 7 &&
            inode == ino && makedev(maj, min) == dev) {
            return true;
        }
    }
    return false;
}

}  // namespace

std::string to_string(const file_holder& h) {
    return h.self ? fmt::format("pid {} ({}, this process)", h.pid, h.comm) : fmt::format("pid {} ({})", h.pid, h.comm);
}

std::vector<file_holder> file_holders(dev_t dev, ino_t ino, int self_fd, std::size_t max) {
    std::vector<file_holder> out;
    std::unique_ptr<DIR, dir_closer> proc(::opendir("/proc"));
    if (!proc) {
        return out;
    }
    const pid_t self = ::getpid();
    while (const dirent* e = ::readdir(proc.get())) {
        if (out.size() >= max) {
            break;
        }
        if (!all_digits(e->d_name)) {
            continue;
        }
        const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
        const std::string base = fmt::format("/proc/{}", pid);
        // This process: the calling thread's own table, less the descriptor that holds the
        // file for the call, and, from a call's table of its own (util/private_fd_table.hpp),
        // the process's table too, where the caller's other descriptors are.
        const bool open = pid == self ? fd_dir_has("/proc/thread-self/fd", dev, ino, self_fd) ||
                                            (private_fd_table::active() && fd_dir_has(base + "/fd", dev, ino, -1))
                                      : fd_dir_has(base + "/fd", dev, ino, -1);
        if (!open && !maps_have(base + "/maps", dev, ino)) {
            continue;
        }
        file_holder h;
        h.pid = pid;
        h.self = pid == self;
        std::ifstream c(base + "/comm");
        std::getline(c, h.comm);
        out.push_back(std::move(h));
    }
    return out;
}

}  // namespace wz
