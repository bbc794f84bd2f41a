// SPDX-License-Identifier: MIT
#pragma once

#include <wzero/wzero.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace wz::probe::sysfs {

// Parsers for the text of single sysfs attributes, pure so that they can be tested on
// recorded values. They accept the trailing newline the kernel writes.
std::optional<std::uint64_t> parse_u64(std::string_view text);
// queue/write_cache: "write back" / "write through" (block/blk-sysfs.c).
std::optional<cache_mode> parse_write_cache(std::string_view text);
// "259:3" (dev attribute) -> major, minor.
std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_dev(std::string_view text);
std::string trim(std::string_view text);

// Reads attributes below a sysfs root ("/sys", or a recorded tree in tests).
class tree {
public:
    explicit tree(std::string root = "/sys") : root_(std::move(root)) {}
    [[nodiscard]] const std::string& root() const noexcept { return root_; }
    // Contents of root/relative, trimmed; nullopt if the file is missing or unreadable.
    [[nodiscard]] std::optional<std::string> read(std::string_view relative) const;
    [[nodiscard]] std::optional<std::uint64_t> read_u64(std::string_view relative) const;
    [[nodiscard]] bool exists(std::string_view relative) const;
    // Resolves a symlink below root to a path relative to root ("devices/...").
    [[nodiscard]] std::optional<std::string> resolve(std::string_view relative) const;

private:
    std::string root_;
};

// The block device behind a dev_t, found by walking sysfs: partitions to their disk,
// loop devices to their backing file, dm/md to the devices they stack on.
struct block_node {
    std::string name;            // "nvme0n1p2"
    std::string disk_name;       // "nvme0n1"
    std::string sys_path;        // relative to the sysfs root: "devices/.../block/nvme0n1/nvme0n1p2"
    std::string disk_sys_path;   // "devices/.../block/nvme0n1"
    bool partition = false;
    std::uint64_t start_sectors = 0;  // partition start, 512-byte sectors
    std::uint64_t size_sectors = 0;
};

result<block_node> find_block_node(const tree& sys, std::uint32_t major, std::uint32_t minor);

// Fills the block part of the record: kind, sizes and queue limits, write cache, FUA,
// write-zeroes limits, loop backing file, dm/md slaves. Missing attributes go to `unknown`.
void read_block_info(const tree& sys, const block_node& node, device_info& dev,
                     write_zeroes_info& wz, cache_info& cache, unknown_reasons& unknown);

// Kind of a disk by its name and sysfs: nvme, loop, dm, md, scsi, virtio, nullb, other.
std::string classify_disk(const tree& sys, const block_node& node);

}  // namespace wz::probe::sysfs
