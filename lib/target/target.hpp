// SPDX-License-Identifier: MIT
#pragma once

// Opening what the user named, once. Every entry point that takes a path (alloc, verify, map,
// stat, the writer, bench write) resolves it to one inode with O_PATH, decides on fstat of
// that descriptor, and reopens the same inode through /proc/self/fd: never by name twice, so
// swapping the name for a symlink to another device between the check and the open
// (renameat2 RENAME_EXCHANGE) cannot redirect a write. A block device
// opened for writing is claimed exclusively (O_EXCL) on that same inode; that refuses a
// mounted device, a whole disk with a mounted partition, and one another process holds.

#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>

namespace wz::target {

enum class access { read, write };

struct open_request {
    access mode = access::read;
    // Create a regular file when the name does not exist (O_CREAT | O_EXCL: never through a
    // symlink, and never on a pseudo filesystem such as devtmpfs, proc or sysfs).
    bool create = false;
    // With create: plan the creation but do not create (a dry run, or a check before
    // creating); `fd` stays empty.
    bool dry_run = false;
    mode_t create_mode = 0666;  // masked by the umask, as open(2) and util-linux fallocate do
};

struct opened {
    unique_fd fd;             // the descriptor to use (empty for a file a dry run would create)
    struct ::stat st {};      // fstat of `fd` (of the parent directory when it would be created)
    bool created = false;     // this call created the file
    bool would_create = false;  // dry run: the file does not exist and would be created
    unique_fd dir;            // O_PATH descriptor of the parent directory (create only)
    std::string name;         // the file's name in `dir`
};

// Opens PATH as asked. Errors name the path and the reason: EISDIR for a directory, EINVAL
// for anything that is not a regular file or block device (a FIFO is never opened, so it
// cannot block) and for a file on a pseudo filesystem (proc, sysfs, debugfs, configfs...)
// opened for writing, EBUSY for a block device that cannot be claimed exclusively, EROFS,
// EPERM (immutable or append-only), EACCES and the like from open(2).
result<opened> open(const std::string& path, const open_request& request);

// Opens PATH read-only as open() does, with its capability record (wz::stat of the
// descriptor). A length of 0 becomes "to the end" of the file or device, from `offset`.
struct opened_with_record {
    unique_fd fd;
    capabilities caps;
};
result<opened_with_record> open_with_record(const std::string& path, std::uint64_t offset, std::uint64_t& length);

// A descriptor positioned writes may go through: open for writing (EBADF otherwise), and
// without O_APPEND (EINVAL: Linux appends every pwrite on an O_APPEND description at the end
// of the file, whatever the offset, so zeroes would land outside their range). WHAT begins
// the message ("zero PATH [offset O, length L]").
status check_positioned_writes(int fd, const std::string& what);

// Removes a file that open() created, if the name still refers to the same inode.
// Returns 0 or -errno.
int remove_created(const opened& target);

// A new regular file built where nobody can open it, so that its name never refers to
// anything half-made, after a crash or a SIGKILL included: nameless (O_TMPFILE, Linux 3.11;
// ext4, xfs, btrfs, tmpfs) where the filesystem allows it, else under a hidden temporary name
// ".NAME.wz-tmp.XXXXXX" in the same directory (which a crash may leave behind; never NAME).
// publish() gives it NAME, never replacing anything; until then the destructor removes the
// temporary name, and a nameless file is gone when its descriptor closes.
class unnamed_file {
public:
    // In the directory DIR (a descriptor the caller keeps open while this lives), for NAME
    // (one component); PATH is for messages. MODE is masked by the umask, as with open(2).
    static result<unnamed_file> make(int dir, const std::string& name, const std::string& path, mode_t mode);
    unnamed_file(unnamed_file&& other) noexcept;
    unnamed_file& operator=(unnamed_file&&) = delete;
    unnamed_file(const unnamed_file&) = delete;
    unnamed_file& operator=(const unnamed_file&) = delete;
    ~unnamed_file();

    [[nodiscard]] int fd() const noexcept { return fd_.get(); }
    // How the file is built, for the report: "an unnamed file (O_TMPFILE), linked ...".
    [[nodiscard]] const std::string& how() const noexcept { return how_; }
    // Links the file as NAME (linkat of the nameless file; renameat2 RENAME_NOREPLACE of a
    // temporary): EEXIST when NAME appeared meanwhile, which is left as it is. With DURABLE the
    // directory is fsync'ed after, and a failed fsync takes the name back (a name a crash may
    // lose is not reported as made).
    status publish(bool durable);

private:
    unnamed_file() = default;
    unique_fd fd_;
    int dir_ = -1;
    std::string name_, path_;
    std::string temporary_;  // empty: nameless
    std::string how_;
};

// Whether one commit of the filesystem's journal, forced by the directory fsync after the
// link, makes a new file durable together with its name. It does where the filesystem
// commits its metadata in order (a later transaction is never durable without every earlier
// one) and sends the device a flush before each commit record: then the file's allocation,
// size and written extents, changed before the link, commit no later than the name, and data
// whose writes had completed before the commit is covered by its flush. So on xfs (its log)
// and on ext4 while a journal of its own is loaded (jbd2, /proc/fs/jbd2/DEV-8). Not on ext4
// without a journal or with an external one, btrfs (an fsync writes a log tree of the inodes
// it names), or anything else. DIR is a descriptor of the directory. Returns the journal's
// name for the report ("ext4's journal on loop3", "xfs's log"), or nullopt.
std::optional<std::string> ordered_journal(int dir);

// A filesystem signature or partition table on an open block device, probed with libblkid
// as blkdiscard(8) does: an empty string when there is none, else e.g. "ext4 file system"
// or "gpt partition table".
result<std::string> device_signature(int fd, const std::string& path);

// Is this block device (or, for a whole disk, any of its partitions) mounted? The mount
// point of the first one found, or an empty string.
std::string mounted_at(dev_t rdev);

}  // namespace wz::target
