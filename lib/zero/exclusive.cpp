// SPDX-License-Identifier: MIT
#include "zero/exclusive.hpp"

#include "util/errors.hpp"

#include <sys/stat.h>

#include <fmt/format.h>

#include <cerrno>
#include <string>
#include <vector>

namespace wz::zero {

namespace {

// Who else has the file open, for the message; `only_self`: nobody but this process (its other
// descriptors), as far as /proc shows.
std::string holders_text(int fd, bool& only_self) {
    only_self = false;
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
        return "another open file description";
    }
    const std::vector<file_holder> who = file_holders(st.st_dev, st.st_ino, fd, 8);
    if (who.empty()) {
        return "another open file description, of a process /proc does not show here";
    }
    std::string out;
    only_self = true;
    for (const auto& w : who) {
        out += (out.empty() ? "" : ", ") + to_string(w);
        only_self = only_self && w.self;
    }
    return out;
}

std::string unavailable_text(int err) {
    switch (err) {
    case EACCES:
        return "F_SETLEASE: Permission denied: not the file's owner, and no CAP_LEASE";
    case EINVAL:
        return "F_SETLEASE: Invalid argument: no leases on this filesystem, or fs.leases-enable is 0";
    case EEXIST:
        return "the descriptor already holds a lease of its owner's";
    default:
        return "F_SETLEASE: " + errno_text(err);
    }
}

}  // namespace

status take_exclusive_use(write_lease& lease, int fd, const std::string& what, const preallocate_options& options,
                          exclusive_request request, preallocate_report& rep) {
    struct ::stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        return {};  // a block device is claimed exclusively (O_EXCL) when opened by path instead
    }
    auto decide = [&rep](std::string use, std::string line) {
        rep.exclusive_use = std::move(use);
        rep.decisions.push_back("exclusive use: " + std::move(line));
    };
    if (options.exclusive == exclusive_mode::none) {
        decide("none", "not taken (asked not to): another process may write, truncate or map the file during the "
                       "run, and its writes into the range can be lost");
        return {};
    }
    if (options.dry_run) {
        // A dry run opens read-only and takes nothing; it says what the run would need.
        decide("none", "a write lease would be taken for the run (dry run: not taken)");
        return {};
    }
    const bool required = request.by_path || options.exclusive == exclusive_mode::require;
    // A required lease gives way: whoever opens the file stops the run. One taken on a caller's
    // descriptor only because it could be is kept to the end (the caller owns the file, and its
    // write must not fail because a reader opened the file): an opener waits until the run ends.
    const int rc = lease.take(fd, required);
    if (rc == 0) {
        decide("lease", required ? "a write lease on the file: no other process has it open or mapped, and an open "
                                   "or a truncate by another process waits for this run, which then stops after "
                                   "the command in flight"
                                 : "a write lease on the file (the caller's descriptor is its only open one): an "
                                   "open or a truncate by another process waits until the run ends");
        return {};
    }
    const int err = -rc;
    if (err == EAGAIN) {
        bool only_self = false;
        const std::string who = holders_text(fd, only_self);
        if (!required || (only_self && request.by_path)) {
            // By path, descriptors of the caller's own process are the caller's: it owns them as
            // it owns a descriptor it hands over (another process is what the lease keeps out).
            decide("none", fmt::format("not taken: the file is open elsewhere too ({}); the caller owns the file "
                                       "and keeps others from writing into the range",
                                       who));
            return {};
        }
        rep.exclusive_use = "refused";
        return make_error_msg(EBUSY, error_reason::in_use,
                              fmt::format("{}: the file is open elsewhere ({}): refused before any I/O, as "
                                          "zeroing it while another process may write, truncate or map it "
                                          "can lose that process's writes (no exclusive write lease: "
                                          "F_SETLEASE: {})",
                                          what, who, errno_text(err)));
    }
    if (err == EBADF) {
        if (!required) {
            decide("none", "not taken: the descriptor is not open read-write");
            return {};
        }
        rep.exclusive_use = "refused";
        return make_error_msg(EBADF, error_reason::exclusive_unavailable,
                              fmt::format("{}: exclusive use asked for, but the descriptor is not open "
                                          "read-write (the lease's description also serves the run's reads)",
                                          what));
    }
    if (required && request.keep_data) {
        rep.exclusive_use = "refused";
        return make_error_msg(ENOLCK, error_reason::exclusive_unavailable,
                              fmt::format("{}: exclusive use cannot be ensured here ({}): keeping the data "
                                          "means mapping the range first and zeroing its holes after, and a "
                                          "write into a hole meanwhile would be lost; refused before any I/O",
                                          what, unavailable_text(err)));
    }
    decide("none", fmt::format("not available here ({}): another process could write into the range during the run",
                               unavailable_text(err)));
    return {};
}

error_info lease_broken_error(const std::string& what) {
    return make_error_msg(EBUSY, error_reason::lease_lost,
                          fmt::format("{}: stopped: another process opened or truncated the file during the "
                                      "run (the exclusive write lease was broken); it goes on once this run "
                                      "has let go of the file",
                                      what));
}

}  // namespace wz::zero
