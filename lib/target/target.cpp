// SPDX-License-Identifier: MIT
// Opening what the user named, once (see target.hpp).

#include "target/target.hpp"

#include "probe/file_kind.hpp"
#include "probe/fs.hpp"
#include "probe/sysfs.hpp"
#include "record/record.hpp"
#include "util/errors.hpp"
#include "util/reopen.hpp"

#include <blkid/blkid.h>
#include <dirent.h>
#include <fcntl.h>
#include <libmount.h>
#include <limits.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <array>
#include <cstdio>  // renameat2, RENAME_NOREPLACE (glibc 2.28)
#include <fstream>
#include <memory>
#include <random>
#include <string_view>
#include <utility>

namespace wz::target {

namespace {

// Filesystems whose files are kernel interfaces, not storage: a new regular file there is never
// what the user meant (a mistyped device name under /dev would otherwise become a file in RAM
// that every later step happily zeroes: `wzero alloc -l 1M /dev/mapper/typo`), and zeroes
// written into an existing one (/proc/sys/..., /sys/block/.../queue/...) are a setting changed.
// The filesystem's name for the message: from its magic number, devtmpfs (tmpfs's magic) from
// its mount; empty for storage. `fd` is on the filesystem (the file, or the directory where
// one would be created), `path` names it.
std::string pseudo_fs(int fd, const std::string& path) {
    struct magic_name {
        long magic;
        std::string_view name;
    };
    static constexpr long configfs_magic = 0x62656570;  // not in linux/magic.h
    static constexpr long mqueue_magic = 0x19800202;
    static constexpr long fusectl_magic = 0x65735543;
    static constexpr std::array<magic_name, 17> pseudo = {{
        {PROC_SUPER_MAGIC, "proc"}, {SYSFS_MAGIC, "sysfs"}, {DEBUGFS_MAGIC, "debugfs"},
        {TRACEFS_MAGIC, "tracefs"}, {SECURITYFS_MAGIC, "securityfs"}, {configfs_magic, "configfs"},
        {CGROUP_SUPER_MAGIC, "cgroup"}, {CGROUP2_SUPER_MAGIC, "cgroup2"}, {BPF_FS_MAGIC, "bpf"},
        {PSTOREFS_MAGIC, "pstore"}, {EFIVARFS_MAGIC, "efivarfs"}, {DEVPTS_SUPER_MAGIC, "devpts"},
        {mqueue_magic, "mqueue"}, {fusectl_magic, "fusectl"}, {SELINUX_MAGIC, "selinuxfs"},
        {BINFMTFS_MAGIC, "binfmt_misc"}, {RDTGROUP_SUPER_MAGIC, "resctrl"},
    }};
    struct ::statfs sfs {};
    if (::fstatfs(fd, &sfs) != 0) {
        return {};  // the open or the write that follows says what is wrong
    }
    const auto magic = static_cast<long>(sfs.f_type);
    for (const auto& p : pseudo) {
        if (magic == p.magic) {
            return std::string(p.name);
        }
    }
    if (magic == TMPFS_MAGIC) {
        // The directory's own mount, from its descriptor: a path prefix would name another
        // mount for a relative or bind-mounted path.
        if (auto m = probe::fs::find_mount(fd, path); m && m->fstype == "devtmpfs") {
            return "devtmpfs";
        }
    }
    return {};
}

// Refusals that a write would meet anyway, said before anything is opened for writing, so
// that a dry run tells the truth too.
status check_writable(int pfd, const std::string& path, const struct ::stat& st) {
    struct ::statx stx {};
    if (::statx(pfd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0) {
        if ((stx.stx_attributes_mask & STATX_ATTR_IMMUTABLE) != 0 && (stx.stx_attributes & STATX_ATTR_IMMUTABLE) != 0) {
            return make_error_msg(EPERM, fmt::format("open {} for writing: the file is immutable (chattr +i)", path));
        }
        if ((stx.stx_attributes_mask & STATX_ATTR_APPEND) != 0 && (stx.stx_attributes & STATX_ATTR_APPEND) != 0) {
            return make_error_msg(EPERM, fmt::format("open {} for writing: the file is append-only (chattr +a)", path));
        }
    }
    if (S_ISBLK(st.st_mode)) {
        std::ifstream ro(fmt::format("/sys/dev/block/{}:{}/ro", major(st.st_rdev), minor(st.st_rdev)));
        int v = 0;
        if (ro >> v && v != 0) {
            return make_error_msg(EROFS, fmt::format("open {} for writing: the block device is read-only", path));
        }
        return {};
    }
    if (const std::string fs = pseudo_fs(pfd, path); !fs.empty()) {
        return make_error_msg(EINVAL, fmt::format("open {} for writing: refusing a file on {}, a pseudo filesystem "
                                                  "(its files are kernel interfaces, not storage)",
                                                  path, fs));
    }
    struct ::statvfs vfs {};
    if (::fstatvfs(pfd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0) {
        return make_error_msg(EROFS, fmt::format("open {} for writing: the filesystem is mounted read-only", path));
    }
    return {};
}

result<opened> create(const std::string& path, const open_request& req) {
    const auto slash = path.rfind('/');
    std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (name.empty() || name == "." || name == "..") {
        return make_error("open", path, ENOENT);
    }
    opened t;
    t.dir.reset(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!t.dir) {
        return make_error("open", path, errno == ENOTDIR ? ENOTDIR : ENOENT);
    }
    if (::fstat(t.dir.get(), &t.st) != 0) {
        return make_error("fstat the directory of", path, errno);
    }
    if (const std::string fs = pseudo_fs(t.dir.get(), dir); !fs.empty()) {
        return make_error_msg(EINVAL, fmt::format("create {}: refusing to create a file on {} (no such device or "
                                                  "file; a mistyped device name?)",
                                                  path, fs));
    }
    t.name = std::move(name);
    if (struct ::stat lst {}; ::fstatat(t.dir.get(), t.name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0) {
        if (S_ISLNK(lst.st_mode)) {
            return make_error_msg(ENOENT, fmt::format("open {}: a symbolic link to a file that does not exist (not "
                                                      "followed to create one)",
                                                      path));
        }
        return make_error_msg(EEXIST, fmt::format("create {}: the name appeared meanwhile", path));
    }
    if (req.dry_run) {
        struct ::statvfs vfs {};
        if (::fstatvfs(t.dir.get(), &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0) {
            return make_error_msg(EROFS, fmt::format("create {}: the filesystem is mounted read-only", path));
        }
        if (::faccessat(t.dir.get(), ".", W_OK | X_OK, AT_EACCESS) != 0) {
            return make_error("create", path, errno);
        }
        t.would_create = true;
        return t;
    }
    // O_EXCL: a name that appeared since (a file, or a symlink planted there) is not ours.
    t.fd.reset(::openat(t.dir.get(), t.name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        req.create_mode));
    if (!t.fd) {
        return make_error("create", path, errno);
    }
    if (::fstat(t.fd.get(), &t.st) != 0) {
        const int err = errno;
        (void)::unlinkat(t.dir.get(), t.name.c_str(), 0);  // wz: ignored-error (best-effort undo)
        return make_error("fstat", path, err);
    }
    t.created = true;
    return t;
}

}  // namespace

result<opened> open(const std::string& path, const open_request& req) {
    if (path.empty()) {
        return make_error_msg(ENOENT, "open '': No such file or directory");
    }
    // A name that vanishes or appears between the O_PATH open and the create is looked at
    // again, a few times: each round still opens only what it has checked.
    for (int round = 0; round < 3; ++round) {
        unique_fd pfd(::open(path.c_str(), O_PATH | O_CLOEXEC));
        if (!pfd) {
            const int err = errno;
            if (err == ENOENT && req.create) {
                auto c = create(path, req);
                if (!c && c.error().code.value() == EEXIST) {
                    continue;
                }
                return c;
            }
            return make_error("open", path, err);
        }
        struct ::stat st {};
        if (::fstat(pfd.get(), &st) != 0) {
            return make_error("fstat", path, errno);
        }
        const file_kind kind = file_kind_of(st.st_mode);
        if (kind == file_kind::directory) {
            return make_error("open", path, EISDIR);
        }
        if (kind != file_kind::regular && kind != file_kind::block) {
            return make_error_msg(EINVAL, fmt::format("open {}: {}, not a regular file or block device", path,
                                                      describe(kind)));
        }
        const bool write = req.mode == access::write;
        if (write) {
            if (auto e = check_writable(pfd.get(), path, st); !e.ok()) {
                return std::move(e).error();
            }
        }
        int flags = O_CLOEXEC | O_NOCTTY | (write && !req.dry_run ? O_RDWR : O_RDONLY);
        if (write && kind == file_kind::block) {
            // Claimed on this inode, also in a dry run (which then says it would fail).
            flags |= O_EXCL;
        }
        opened t;
        t.fd = reopen_self(pfd.get(), flags);
        if (!t.fd) {
            const int err = errno;
            if (err == EBUSY && kind == file_kind::block) {
                const std::string at = mounted_at(st.st_rdev);
                return make_error_msg(EBUSY, fmt::format("open {} exclusively: Device or resource busy ({})", path,
                                                         at.empty() ? "mounted, or held by another process"
                                                                    : "mounted at " + at));
            }
            return make_error(write && !req.dry_run ? "open for writing" : "open", path, err);
        }
        if (::fstat(t.fd.get(), &t.st) != 0) {
            return make_error("fstat", path, errno);
        }
        if (t.st.st_dev != st.st_dev || t.st.st_ino != st.st_ino || t.st.st_rdev != st.st_rdev) {
            return make_error_msg(ESTALE, fmt::format("open {}: reopening the checked inode gave another file", path));
        }
        return t;
    }
    struct ::stat lst {};
    if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
        return make_error_msg(ENOENT, fmt::format("open {}: a symbolic link to a file that does not exist (not "
                                                  "followed to create one)",
                                                  path));
    }
    return make_error_msg(EAGAIN, fmt::format("open {}: the name keeps changing (created and removed by "
                                              "someone else)",
                                              path));
}

result<opened_with_record> open_with_record(const std::string& path, std::uint64_t offset, std::uint64_t& length) {
    auto t = open(path, open_request{});
    if (!t) {
        return t.error();
    }
    unique_fd fd = std::move(t->fd);
    auto caps = record::of(fd.get(), path);
    if (!caps) {
        return caps.error();
    }
    if (length == 0) {
        length = caps->size_bytes > offset ? caps->size_bytes - offset : 0;
    }
    return opened_with_record{std::move(fd), std::move(*caps)};
}

int remove_created(const opened& t) {
    if (!t.created || !t.dir) {
        return 0;
    }
    struct ::stat now {};
    if (::fstatat(t.dir.get(), t.name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0) {
        return -errno;
    }
    if (now.st_dev != t.st.st_dev || now.st_ino != t.st.st_ino) {
        return -ESTALE;  // the name is someone else's file now: leave it
    }
    if (::unlinkat(t.dir.get(), t.name.c_str(), 0) != 0) {
        return -errno;
    }
    return 0;
}

namespace {

// ".NAME.wz-tmp.XXXXXX": hidden (a leading dot), and named so that a database's own scan for
// its files (segment numbers, table names) never picks it up.
std::string temporary_name(const std::string& name, std::mt19937_64& rng) {
    static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::string suffix(6, 'x');
    for (char& c : suffix) {
        c = alphabet[rng() % (sizeof(alphabet) - 1)];
    }
    std::string t = "." + name + ".wz-tmp." + suffix;
    if (t.size() > NAME_MAX) {
        t = ".wz-tmp." + suffix + suffix;
    }
    return t;
}

// 0, or -errno. Never replaces TO.
int rename_noreplace(int dir, const std::string& from, const std::string& to) {
    if (::renameat2(dir, from.c_str(), dir, to.c_str(), RENAME_NOREPLACE) == 0) {
        return 0;
    }
    if (errno != EINVAL && errno != ENOSYS) {
        return -errno;
    }
    // No RENAME_NOREPLACE on this filesystem: link (which never replaces) and unlink.
    if (::linkat(dir, from.c_str(), dir, to.c_str(), 0) != 0) {
        return -errno;
    }
    (void)::unlinkat(dir, from.c_str(), 0);  // wz: ignored-error (a second name left is only a leftover temporary)
    return 0;
}

}  // namespace

result<unnamed_file> unnamed_file::make(int dir, const std::string& name, const std::string& path, mode_t mode) {
    unnamed_file f;
    f.dir_ = dir;
    f.name_ = name;
    f.path_ = path;
    f.fd_.reset(::openat(dir, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode));
    if (f.fd_) {
        f.how_ = "an unnamed file (O_TMPFILE), linked to its name (linkat) once complete";
        return f;
    }
    if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL) {
        const int err = errno;
        return make_error_msg(err, fmt::format("create {}: open an unnamed file in its directory: {}", path,
                                               errno_text(err)));
    }
    std::mt19937_64 rng(std::random_device{}());
    for (int attempt = 0; attempt < 100; ++attempt) {
        const std::string t = temporary_name(name, rng);
        f.fd_.reset(::openat(dir, t.c_str(), O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, mode));
        if (f.fd_) {
            f.temporary_ = t;
            f.how_ = fmt::format("the temporary {} (no O_TMPFILE here), renamed to its name (renameat2 "
                                 "RENAME_NOREPLACE) once complete",
                                 t);
            return f;
        }
        if (errno != EEXIST) {
            const int err = errno;
            return make_error_msg(err, fmt::format("create {}: create the temporary {}: {}", path, t,
                                                   errno_text(err)));
        }
    }
    return make_error_msg(EEXIST, fmt::format("create {}: no free temporary name after 100 tries", path));
}

unnamed_file::unnamed_file(unnamed_file&& other) noexcept
    : fd_(std::move(other.fd_)), dir_(other.dir_), name_(std::move(other.name_)), path_(std::move(other.path_)),
      temporary_(std::exchange(other.temporary_, std::string())), how_(std::move(other.how_)) {}

unnamed_file::~unnamed_file() {
    if (!temporary_.empty()) {
        (void)::unlinkat(dir_, temporary_.c_str(), 0);  // wz: ignored-error (best effort on a failure path)
    }
}

status unnamed_file::publish(bool durable) {
    auto taken = [this](int err) {
        return make_error_msg(err, fmt::format("create {}: {}{}", path_, errno_text(err),
                                               err == EEXIST ? " (created by someone else meanwhile: left as it is)"
                                                             : ""));
    };
    if (temporary_.empty()) {
        if (::linkat(AT_FDCWD, self_fd_path(fd_.get()).c_str(), dir_, name_.c_str(), AT_SYMLINK_FOLLOW) != 0) {
            return taken(errno);
        }
    } else {
        if (const int rc = rename_noreplace(dir_, temporary_, name_); rc < 0) {
            return taken(-rc);
        }
        temporary_.clear();  // it has its final name now
    }
    if (!durable) {
        return {};
    }
    // DIR may be an O_PATH handle, which fsync refuses (EBADF): the directory itself, opened
    // read-only through it.
    unique_fd d(::openat(dir_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!d || ::fsync(d.get()) != 0) {
        // The name may not survive a crash: take it back rather than report a file that may
        // vanish. The data is durable, but a database must not count on the name.
        const int err = errno;
        const bool removed = ::unlinkat(dir_, name_.c_str(), 0) == 0;
        if (d) {
            (void)::fsync(d.get());  // wz: ignored-error (best effort after a failed fsync)
        }
        return make_error_msg(err, fmt::format("create {}: fsync its directory: {}; {}", path_, errno_text(err),
                                               removed ? "the name was removed again"
                                                       : "the name could not be removed"));
    }
    return {};
}

std::optional<std::string> ordered_journal(int dir) {
    struct ::statfs sf {};
    if (::fstatfs(dir, &sf) != 0) {
        return std::nullopt;
    }
    if (sf.f_type == XFS_SUPER_MAGIC) {
        return std::string("xfs's log");
    }
    if (sf.f_type != EXT4_SUPER_MAGIC) {
        return std::nullopt;
    }
    // jbd2 names an internal journal after the filesystem's device and the journal's inode
    // (8), as /proc/fs/jbd2/ lists it; a missing entry is no journal, or one elsewhere.
    struct ::stat st {};
    if (::fstat(dir, &st) != 0) {
        return std::nullopt;
    }
    auto node = probe::sysfs::find_block_node(probe::sysfs::tree{}, major(st.st_dev), minor(st.st_dev));
    struct ::stat js {};
    if (!node || ::stat(fmt::format("/proc/fs/jbd2/{}-8", node->name).c_str(), &js) != 0) {
        return std::nullopt;
    }
    return fmt::format("ext4's journal on {}", node->name);
}

status check_positioned_writes(int fd, const std::string& what) {
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0) {
        const int err = errno;
        return make_error_msg(err, fmt::format("{}: fcntl: {}", what, errno_text(err)));
    }
    if ((fl & O_ACCMODE) == O_RDONLY) {
        return make_error_msg(EBADF, fmt::format("{}: not open for writing", what));
    }
    if ((fl & O_APPEND) != 0) {
        return make_error_msg(EINVAL, fmt::format("{}: the descriptor is open with O_APPEND, where positioned "
                                                  "writes append",
                                                  what));
    }
    return {};
}

result<std::string> device_signature(int fd, const std::string& path) {
    std::unique_ptr<std::remove_pointer_t<blkid_probe>, decltype(&blkid_free_probe)> pr(blkid_new_probe(),
                                                                                        blkid_free_probe);
    if (!pr) {
        return make_error_msg(ENOMEM, fmt::format("probe {} for signatures: out of memory", path));
    }
    if (blkid_probe_set_device(pr.get(), fd, 0, 0) != 0) {
        return make_error("probe for signatures", path, errno != 0 ? errno : EIO);
    }
    blkid_probe_enable_superblocks(pr.get(), 1);
    blkid_probe_set_superblocks_flags(pr.get(), BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
    blkid_probe_enable_partitions(pr.get(), 1);
    blkid_probe_set_partitions_flags(pr.get(), BLKID_PARTS_MAGIC);
    const int rc = blkid_do_fullprobe(pr.get());
    if (rc == 1) {
        return std::string();
    }
    if (rc == -2) {
        return std::string("ambivalent signatures (more than one filesystem type)");
    }
    if (rc < 0) {
        return make_error("probe for signatures", path, errno != 0 ? errno : EIO);
    }
    const char* type = nullptr;
    const char* usage = nullptr;
    if (blkid_probe_lookup_value(pr.get(), "TYPE", &type, nullptr) == 0 && type != nullptr) {
        if (blkid_probe_lookup_value(pr.get(), "USAGE", &usage, nullptr) != 0 || usage == nullptr) {
            usage = "filesystem";
        }
        return fmt::format("{} {} signature", type, usage);
    }
    if (blkid_probe_lookup_value(pr.get(), "PTTYPE", &type, nullptr) == 0 && type != nullptr) {
        return fmt::format("{} partition table", type);
    }
    return std::string("an unnamed signature");
}

std::string mounted_at(dev_t rdev) {
    std::unique_ptr<libmnt_table, decltype(&mnt_free_table)> tb(mnt_new_table(), mnt_free_table);
    if (!tb || mnt_table_parse_file(tb.get(), "/proc/self/mountinfo") != 0) {
        return {};
    }
    auto find = [&](dev_t d) -> std::string {
        libmnt_fs* fs = mnt_table_find_devno(tb.get(), d, MNT_ITER_BACKWARD);
        const char* t = fs != nullptr ? mnt_fs_get_target(fs) : nullptr;
        return t != nullptr ? std::string(t) : std::string();
    };
    if (auto at = find(rdev); !at.empty()) {
        return at;
    }
    // A whole disk: its partitions are subdirectories of its sysfs node with a "partition" file.
    const std::string node = fmt::format("/sys/dev/block/{}:{}", major(rdev), minor(rdev));
    auto close_dir = [](DIR* dir) { (void)::closedir(dir); };  // wz: ignored-error (read-only walk)
    std::unique_ptr<DIR, decltype(close_dir)> d(::opendir(node.c_str()), close_dir);
    if (!d) {
        return {};
    }
    while (const dirent* e = ::readdir(d.get())) {
        const std::string part = node + "/" + e->d_name;
        unsigned maj = 0, min = 0;
        char colon = 0;
        std::ifstream dev(part + "/dev");
        if (::access((part + "/partition").c_str(), F_OK) != 0 || !(dev >> maj >> colon >> min) || colon != ':') {
            continue;
        }
        if (auto at = find(makedev(maj, min)); !at.empty()) {
            return fmt::format("{}, partition /dev/{}", at, e->d_name);
        }
    }
    return {};
}

}  // namespace wz::target
