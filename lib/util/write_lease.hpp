// SPDX-License-Identifier: MIT
#pragma once

// Exclusive use of a regular file for the length of a call: an exclusive write lease (fcntl
// F_SETLEASE F_WRLCK). The kernel grants it only while the holder's open file description is
// the file's only one: no other open for reading or writing, and no mapping, which keeps its
// description open (fs/locks.c check_conflicting_open counts i_writecount and i_readcount).
// From then on every open(2) and truncate(2) of the file, by anyone, waits until the lease is
// released (at most fs.lease-break-time, 45 s by default). While it is held nobody else can
// write, truncate or map the file, so zeroing from userspace cannot lose their writes or
// collide with their page cache, as fallocate(2) never does in the kernel.
//
// Three kernel facts shape this class:
// - Every open of the file breaks the lease, the holder's own included (a plain lease has no
//   notion of the breaker's owner). While a lease is held on a thread, reopen_self()
//   (util/reopen.hpp) hands out dup()s of the leased description instead of opening the file,
//   with O_DIRECT set or cleared on it as asked: one description serves every view, and users
//   of a view set the flag they need before each use (set_direct()).
// - A break is announced with a signal to the lease's owner, which F_SETLEASE makes the
//   calling process: SIGIO unless F_SETSIG names another, and SIGIO's default action ends the
//   process. A library must not send its caller signals: F_SETSIG names SIGURG (ignored by
//   default) before the lease is taken, F_SETOWN 0 right after leaves the break with no one to
//   signal (fs/fcntl.c send_sigio), and the holder polls F_GETLEASE, which answers F_UNLCK as
//   soon as a break is pending, at its command boundaries (broken()).
// - On a caller's descriptor the status flags, the owner and the signal are the caller's:
//   they are saved before the lease and restored when it is released.

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

namespace wz {

class write_lease {
public:
    write_lease() = default;
    write_lease(const write_lease&) = delete;
    write_lease& operator=(const write_lease&) = delete;
    ~write_lease() { release(); }

    // Takes the lease on FD's open file description (a regular file open read-write): 0, or
    // -errno: EAGAIN the file has another open description or a mapping (someone else has it
    // open); EBADF not open read-write; EEXIST the description already holds a lease (its
    // owner's, left alone); EINVAL, ENOLCK, EACCES (not the file's owner, no CAP_LEASE) and the
    // like: leases are not available here (NFS, some FUSE, fs.leases-enable = 0).
    // STOP_ON_BREAK: a run holding it stops at its next command boundary once it is broken
    // (broken()); otherwise the run keeps it to the end, and whoever opens the file waits that
    // long (at most fs.lease-break-time).
    int take(int fd, bool stop_on_break = true);
    [[nodiscard]] bool held() const noexcept { return fd_ >= 0; }
    [[nodiscard]] bool stop_on_break() const noexcept { return stop_on_break_; }
    [[nodiscard]] int fd() const noexcept { return fd_; }
    // Another process asked for the file (an open or a truncate is waiting), or the kernel
    // already took the lease back after fs.lease-break-time.
    [[nodiscard]] bool broken() const;
    // Sets or clears O_DIRECT on the leased description: 0 or -errno.
    int set_direct(bool on) const;
    // Releases the lease and restores what take() changed; nothing when not held.
    void release() noexcept;

    // The lease held on this thread on the file FD refers to (the same inode), or nullptr.
    [[nodiscard]] static const write_lease* held_on(int fd);

private:
    int fd_ = -1;
    bool stop_on_break_ = true;
    dev_t dev_ = 0;
    ino_t ino_ = 0;
    int saved_direct_ = 0;  // the O_DIRECT bit of the description's flags before take()
    int saved_signal_ = 0;
    int saved_owner_type_ = 0;
    pid_t saved_owner_pid_ = 0;
    write_lease* outer_ = nullptr;  // the lease held on this thread before this one
};

// Who has the file (DEV, INO) open or mapped, as far as /proc shows (all processes for root,
// one's own otherwise), at most MAX of them. The calling thread's own descriptor SELF_FD is not
// counted; this process is, for its other descriptors and mappings.
struct file_holder {
    pid_t pid = 0;
    std::string comm;  // /proc/PID/comm
    bool self = false;  // this process
};
[[nodiscard]] std::vector<file_holder> file_holders(dev_t dev, ino_t ino, int self_fd, std::size_t max);
// "pid 1234 (sqlite3)", "pid 99 (db, this process)".
[[nodiscard]] std::string to_string(const file_holder& h);

}  // namespace wz
