// SPDX-License-Identifier: MIT
// The database file lifecycle on top of preallocate(): create a file that appears only
// complete (create_zeroed), grow one (extend), recycle a range in place (rezero), zero a range
// (zero_range). What databases do by hand today, and what each step here replaces:
// PostgreSQL's XLogFileInitInternal (zeroes into xlogtemp.PID, fsync, durable rename,
// directory fsync), RocksDB's fallocate(KEEP_SIZE) (unwritten extents) and WAL recycling.

#include "db/lifecycle.hpp"

#include "probe/file_kind.hpp"
#include "record/record.hpp"
#include "target/target.hpp"
#include "util/errors.hpp"
#include "util/reopen.hpp"
#include "util/unique_fd.hpp"
#include "zero/zero.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace wz {

namespace {

status finish(result<preallocate_report>&& r, const preallocate_report& partial, preallocate_report* report) {
    if (report != nullptr) {
        *report = r ? *r : partial;
    }
    if (!r) {
        return std::move(r).error();
    }
    return {};
}

// PATH as openat(2) takes it, split into the directory part (resolved once, by the caller)
// and the final component that create_zeroed links into it: "seg" is {".", "seg"},
// "wal/seg" {"wal", "seg"}, "/var/db/seg" {"/var/db", "seg"}, "/seg" {"/", "seg"}.
struct split_path {
    std::string dir, name;
};

result<split_path> split(const std::string& path, const std::string& base) {
    const char* why = nullptr;
    int err = EINVAL;
    split_path out;
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) {
        out = {".", path};
    } else {
        out = {slash == 0 ? std::string("/") : path.substr(0, slash), path.substr(slash + 1)};
    }
    if (path.find('\0') != std::string::npos) {
        why = "the path contains a NUL byte";
    } else if (path.empty()) {
        why = "the path is empty";
    } else if (out.name.empty()) {
        why = "the path ends in '/' (a directory, not a file to create)";
        err = EISDIR;
    } else if (out.name == "." || out.name == "..") {
        why = "the last component is . or .. (a directory, not a file to create)";
    } else if (out.name.size() > NAME_MAX) {
        return make_error_msg(ENAMETOOLONG, fmt::format("create {}: the last component is longer than {} bytes",
                                                        base, NAME_MAX));
    } else if (path.size() >= PATH_MAX) {
        return make_error_msg(ENAMETOOLONG, fmt::format("create {}: the path is {} bytes, PATH_MAX is {}", base,
                                                        path.size(), PATH_MAX));
    }
    if (why != nullptr) {
        return make_error_msg(err, fmt::format("create \"{}\" (relative to {}): {}", path, base, why));
    }
    return out;
}

}  // namespace

namespace db {

status zero_range(int fd, std::uint64_t offset, std::uint64_t length, const preallocate_options& options,
                       preallocate_report* report) {
    preallocate_report partial;
    auto r = zero::preallocate(fd, self_fd_name(fd), offset, length, options, &partial);
    return finish(std::move(r), partial, report);
}

status extend(int fd, std::uint64_t new_size, const preallocate_options& options, preallocate_report* report) {
    const std::string path = self_fd_name(fd);
    const std::string what = fmt::format("extend {} to {} bytes", path, new_size);
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        return make_error_msg(err, fmt::format("{}: fstat: {}", what, errno_text(err)));
    }
    if (file_kind_of(st.st_mode) != file_kind::regular) {
        return make_error_msg(file_kind_of(st.st_mode) == file_kind::directory ? EISDIR : EINVAL,
                              fmt::format("{}: {}, not a regular file", what, describe(file_kind_of(st.st_mode))));
    }
    if (auto s = target::check_positioned_writes(fd, what); !s.ok()) {
        return s;
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    if (new_size < size) {
        return make_error_msg(EINVAL, fmt::format("{}: the file is already {} bytes; extend never truncates",
                                                  what, size));
    }
    if (new_size == size) {
        // Nothing to add; still durable on return, as the caller asked.
        if (options.sync && !options.dry_run && ::fdatasync(fd) != 0) {
            return make_error("fdatasync", path, errno);
        }
        if (report != nullptr) {
            *report = preallocate_report{};
            report->path = path;
            report->offset = size;
            report->decisions.push_back(fmt::format("extend: the file is already {} bytes: nothing to zero", size));
        }
        return {};
    }
    return db::zero_range(fd, size, new_size - size, options, report);
}

status rezero(int fd, std::uint64_t offset, std::uint64_t length, const preallocate_options& options,
                   preallocate_report* report) {
    const std::string path = self_fd_name(fd);
    const std::string what = fmt::format("rezero {} [offset {}, length {}]", path, offset, length);
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        return make_error_msg(err, fmt::format("{}: fstat: {}", what, errno_text(err)));
    }
    const file_kind kind = file_kind_of(st.st_mode);
    if (kind != file_kind::regular && kind != file_kind::block) {
        return make_error_msg(kind == file_kind::directory ? EISDIR : EINVAL,
                              fmt::format("{}: {}, not a regular file or block device", what, describe(kind)));
    }
    if (auto s = target::check_positioned_writes(fd, what); !s.ok()) {
        return s;
    }
    if (length == 0) {
        return make_error_msg(EINVAL, fmt::format("{}: length must be greater than zero", what));
    }
    if (offset > static_cast<std::uint64_t>(INT64_MAX) || length > static_cast<std::uint64_t>(INT64_MAX) - offset) {
        return make_error_msg(EFBIG, fmt::format("{}: offset + length overflows", what));
    }
    preallocate_options o = options;
    if (kind == file_kind::regular) {
        const auto size = static_cast<std::uint64_t>(st.st_size);
        if (offset > size || length > size - offset) {
            return make_error_msg(EINVAL, fmt::format("{}: past the end of the file ({} bytes); recycling never "
                                                      "grows a file",
                                                      what, size));
        }
        // The kernel's FALLOC_FL_WRITE_ZEROES may convert the extents it zeroes (unwritten, then
        // written again): exactly the metadata work recycling is meant to avoid. NVMe Write
        // Zeroes at the extents' own addresses where in-place zeroing is allowed, data writes
        // over the written extents otherwise.
        if (o.method == method_request::kernel) {
            return make_error_msg(EINVAL, fmt::format("{}: method kernel is not used to recycle file ranges: "
                                                      "FALLOC_FL_WRITE_ZEROES may reallocate the extents",
                                                      what));
        }
        if (o.method == method_request::automatic) {
            o.method = method_request::nvme;  // falling back (o.fallback) to data writes
        }
    }
    preallocate_report partial;
    auto r = zero::preallocate(fd, path, offset, length, o, &partial);
    preallocate_report& rep = r ? *r : partial;
    if (kind == file_kind::regular) {
        rep.decisions.insert(rep.decisions.begin(),
                             "rezero: in place (NVMe Write Zeroes at the extents' addresses where allowed, data "
                             "writes otherwise), never FALLOC_FL_WRITE_ZEROES");
        // Where "in place" cannot hold, say so: a copy-on-write file gets new extents, and a
        // filesystem without an extent map cannot show that its extents stayed written.
        if (auto caps = record::of(fd, path); caps && caps->fs) {
            if (caps->fs->cow) {
                rep.decisions.push_back(fmt::format("rezero: not in place: {} writes this file's data to new "
                                                    "extents (copy-on-write: {})",
                                                    caps->fs->type, caps->fs->cow_reason));
            } else if (r && !rep.verified.has_value()) {
                rep.decisions.push_back(fmt::format("rezero: written extents not proven: {} has no extent map",
                                                    caps->fs->type));
            }
        }
    }
    return finish(std::move(r), partial, report);
}

status create_zeroed(int dirfd, const std::string& path_arg, std::uint64_t size, mode_t mode,
                     const preallocate_options& options, preallocate_report* report) {
    // What the path is relative to, for messages: the descriptor's directory, or the
    // working directory.
    const std::string base = dirfd == AT_FDCWD ? std::string("the working directory")
                                               : fmt::format("directory descriptor {}", dirfd);
    auto parts = split(path_arg, base);
    if (!parts) {
        return parts.error();
    }
    // The directory is resolved once, as openat(2) would (symlinks in it followed); every
    // step after works relative to this descriptor, so a rename of a directory above cannot
    // move the file elsewhere half way. O_PATH: search permission is enough to resolve it
    // (the directory fsync at the end opens it for reading, as before).
    unique_fd dir(::openat(dirfd, parts->dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir) {
        const int err = errno;
        return make_error_msg(err, fmt::format("create \"{}\" (relative to {}): open the directory \"{}\": {}",
                                               path_arg, base, parts->dir, errno_text(err)));
    }
    const std::string& name = parts->name;
    const std::string dir_path = self_fd_name(dir.get());
    const std::string path = dir_path == "/" ? "/" + name : dir_path + "/" + name;
    if (size > static_cast<std::uint64_t>(INT64_MAX)) {
        return make_error_msg(EFBIG, fmt::format("create {}: size {} is larger than a file can be", path, size));
    }
    struct ::stat st {};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
        return make_error_msg(EEXIST, fmt::format("create {}: the file exists; create_zeroed never replaces a file",
                                                  path));
    }
    if (errno != ENOENT) {
        const int err = errno;
        return make_error_msg(err, fmt::format("create {}: fstatat: {}", path, errno_text(err)));
    }

    // The file is built where no one looks for it (target/target.hpp unnamed_file).
    auto tmp = target::unnamed_file::make(dir.get(), name, path, mode);
    if (!tmp) {
        return tmp.error();
    }
    const std::string how = tmp->how();
    // The name must never point at data that is not durable: where the filesystem commits in
    // order, the commit that the directory's fsync forces carries the file and its name
    // together; elsewhere the file is made durable first.
    zero::sync_plan sync;
    if (auto journal = target::ordered_journal(dir.get())) {
        sync.by_name_commit = std::move(*journal);
    }

    preallocate_report rep;
    if (size > 0) {
        preallocate_options o = options;
        o.sync = true;
        auto r = zero::preallocate(tmp->fd(), path, 0, size, o, &rep, sync);
        if (r) {
            rep = std::move(*r);
        }
        rep.decisions.insert(rep.decisions.begin(), "create: " + how);
        if (!r) {
            if (report != nullptr) {
                *report = std::move(rep);
            }
            return std::move(r).error();
        }
    } else {
        rep.path = path;
        rep.decisions.push_back("create: " + how + "; size 0: nothing to zero");
    }
    if (options.dry_run) {
        if (report != nullptr) {
            *report = std::move(rep);
        }
        return {};
    }
    // Without the one commit: the fdatasync in preallocate() made the data, the size and the
    // allocation durable, and with them the journal transactions before (the inode's creation,
    // its mode), as PostgreSQL's fsync of a new segment. An empty file had none: fsync it here.
    if (size == 0 && sync.by_name_commit.empty() && ::fsync(tmp->fd()) != 0) {
        return make_error("fsync", path, errno);
    }
    if (auto s = tmp->publish(true); !s.ok()) {
        return s;
    }
    rep.decisions.push_back(
        sync.by_name_commit.empty()
            ? fmt::format("create: {} linked and the directory {} fsync'ed", name, dir_path)
            : fmt::format("create: {} linked and the directory {} fsync'ed: one commit of {} for the file and its "
                          "name",
                          name, dir_path, sync.by_name_commit));
    if (report != nullptr) {
        *report = std::move(rep);
    }
    return {};
}

}  // namespace db

}  // namespace wz
