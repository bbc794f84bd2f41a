// SPDX-License-Identifier: MIT
#pragma once

// A public call answered in place, on the caller's thread and in the process's descriptor
// table, because the caches already hold everything it needs: no thread, no hand-over (a
// cached wz::stat(fd) costs 7 us in place and 35 us through a worker). That is safe only while
// it opens nothing that can carry the process's POSIX record locks (closing any descriptor of
// a file drops them: util/private_fd_table.hpp): the caller's file reopened, a device probed
// for the first time (its node opened). The code that would do either asks refuse() first; in
// an attempt it gets true, does not open, and the attempt's answer is thrown away: the call
// then runs through its worker as usual. Opens of procfs and sysfs files (the mount table, a
// btrfs's device list) stay allowed: no database locks those.

namespace wz::cached_only {

namespace detail {
inline thread_local bool* missed = nullptr;
}  // namespace detail

// One attempt, on this thread, for its lifetime.
class attempt {
public:
    attempt() noexcept : outer_(detail::missed) { detail::missed = &missed_; }
    ~attempt() { detail::missed = outer_; }
    attempt(const attempt&) = delete;
    attempt& operator=(const attempt&) = delete;
    // Something had to be opened: the answer is not to be used.
    [[nodiscard]] bool missed() const noexcept { return missed_; }

private:
    bool missed_ = false;
    bool* outer_;
};

// True inside an attempt (which is then marked missed): do not open. False otherwise.
[[nodiscard]] inline bool refuse() noexcept {
    if (detail::missed == nullptr) {
        return false;
    }
    *detail::missed = true;
    return true;
}

}  // namespace wz::cached_only
