// SPDX-License-Identifier: MIT
#include "probe/sysfs.hpp"

#include "util/errors.hpp"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace wz::probe::sysfs {

namespace fs = std::filesystem;

std::string trim(std::string_view text) {
    const char* ws = " \t\r\n";
    auto b = text.find_first_not_of(ws);
    if (b == std::string_view::npos) {
        return {};
    }
    auto e = text.find_last_not_of(ws);
    return std::string(text.substr(b, e - b + 1));
}

std::optional<std::uint64_t> parse_u64(std::string_view text) {
    std::string t = trim(text);
    if (t.empty()) {
        return std::nullopt;
    }
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v, 10);
    if (ec != std::errc() || p != t.data() + t.size()) {
        return std::nullopt;
    }
    return v;
}

std::optional<cache_mode> parse_write_cache(std::string_view text) {
    std::string t = trim(text);
    if (t == "write back") {
        return cache_mode::write_back;
    }
    if (t == "write through") {
        return cache_mode::write_through;
    }
    return std::nullopt;
}

std::optional<std::pair<std::uint32_t, std::uint32_t>> parse_dev(std::string_view text) {
    std::string t = trim(text);
    auto colon = t.find(':');
    if (colon == std::string::npos) {
        return std::nullopt;
    }
    auto maj = parse_u64(std::string_view(t).substr(0, colon));
    auto min = parse_u64(std::string_view(t).substr(colon + 1));
    if (!maj || !min || *maj > UINT32_MAX || *min > UINT32_MAX) {
        return std::nullopt;
    }
    return std::make_pair(static_cast<std::uint32_t>(*maj), static_cast<std::uint32_t>(*min));
}

std::optional<std::string> tree::read(std::string_view relative) const {
    std::ifstream in(fmt::format("{}/{}", root_, relative));
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) {
        return std::nullopt;
    }
    return trim(ss.str());
}

std::optional<std::uint64_t> tree::read_u64(std::string_view relative) const {
    auto s = read(relative);
    if (!s) {
        return std::nullopt;
    }
    return parse_u64(*s);
}

bool tree::exists(std::string_view relative) const {
    std::error_code ec;
    return fs::exists(fmt::format("{}/{}", root_, relative), ec);
}

std::optional<std::string> tree::resolve(std::string_view relative) const {
    std::error_code ec;
    fs::path full = fs::canonical(fmt::format("{}/{}", root_, relative), ec);
    if (ec) {
        return std::nullopt;
    }
    fs::path root = fs::canonical(root_, ec);
    if (ec) {
        return std::nullopt;
    }
    fs::path rel = full.lexically_relative(root);
    if (rel.empty() || *rel.begin() == "..") {
        return std::nullopt;
    }
    return rel.string();
}

result<block_node> find_block_node(const tree& sys, std::uint32_t major, std::uint32_t minor) {
    std::string link = fmt::format("dev/block/{}:{}", major, minor);
    auto resolved = sys.resolve(link);
    if (!resolved) {
        return make_error_msg(ENODEV, fmt::format("find block device {}:{} in {}/{}: not found", major, minor,
                                                  sys.root(), link));
    }
    block_node node;
    node.sys_path = *resolved;
    node.name = fs::path(node.sys_path).filename().string();
    node.partition = sys.exists(node.sys_path + "/partition");
    node.size_sectors = sys.read_u64(node.sys_path + "/size").value_or(0);
    if (node.partition) {
        node.start_sectors = sys.read_u64(node.sys_path + "/start").value_or(0);
        node.disk_sys_path = fs::path(node.sys_path).parent_path().string();
    } else {
        node.disk_sys_path = node.sys_path;
    }
    node.disk_name = fs::path(node.disk_sys_path).filename().string();
    return node;
}

std::string classify_disk(const tree& sys, const block_node& node) {
    const std::string& n = node.disk_name;
    auto starts = [&](std::string_view p) { return n.rfind(p, 0) == 0; };
    if (sys.exists(node.disk_sys_path + "/dm")) {
        return "dm";
    }
    if (sys.exists(node.disk_sys_path + "/md")) {
        return "md";
    }
    if (sys.exists(node.disk_sys_path + "/loop") || starts("loop")) {
        return "loop";
    }
    if (starts("nvme")) {
        return "nvme";
    }
    if (starts("nullb")) {
        return "nullb";
    }
    if (starts("vd")) {
        return "virtio";
    }
    if (starts("sd")) {
        return "scsi";
    }
    if (starts("zram")) {
        return "zram";
    }
    return "other";
}

namespace {

void note_unknown(unknown_reasons& unknown, const std::string& key, const tree& sys, const std::string& attr) {
    unknown[key] = fmt::format("{}/{} is not readable (attribute missing on this kernel?)", sys.root(), attr);
}

}  // namespace

void read_block_info(const tree& sys, const block_node& node, device_info& dev, write_zeroes_info& wz,
                     cache_info& cache, unknown_reasons& unknown) {
    dev.kind = classify_disk(sys, node);
    dev.path = "/dev/" + node.name;
    dev.disk = "/dev/" + node.disk_name;
    dev.partition = node.partition;
    dev.size_bytes = node.size_sectors * 512;
    if (auto d = sys.read(node.sys_path + "/dev")) {
        if (auto mm = parse_dev(*d)) {
            dev.major = mm->first;
            dev.minor = mm->second;
        }
    }
    const std::string q = node.disk_sys_path + "/queue/";
    auto u32 = [](std::optional<std::uint64_t> v) { return static_cast<std::uint32_t>(v.value_or(0)); };
    dev.logical_block_size = u32(sys.read_u64(q + "logical_block_size"));
    dev.physical_block_size = u32(sys.read_u64(q + "physical_block_size"));
    dev.max_hw_transfer_bytes = sys.read_u64(q + "max_hw_sectors_kb").value_or(0) * 1024;
    dev.discard_granularity = sys.read_u64(q + "discard_granularity").value_or(0);
    dev.discard_max_bytes = sys.read_u64(q + "discard_max_bytes").value_or(0);
    if (auto r = sys.read_u64(q + "rotational")) {
        dev.rotational = *r != 0;
    }
    if (auto p = sys.read_u64(q + "io_poll")) {
        dev.io_poll = *p != 0;
    }
    if (node.partition) {
        dev.partition_start_bytes = node.start_sectors * 512;
    }
    if (dev.kind == "loop") {
        if (auto b = sys.read(node.disk_sys_path + "/loop/backing_file")) {
            dev.backing_file = *b;
        }
        if (auto d = sys.read_u64(node.disk_sys_path + "/loop/dio")) {
            dev.loop_direct_io = *d != 0;
        }
    }
    if (dev.kind == "dm" || dev.kind == "md") {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(fmt::format("{}/{}/slaves", sys.root(), node.disk_sys_path), ec)) {
            dev.slaves.push_back("/dev/" + e.path().filename().string());
        }
    }

    if (auto v = sys.read_u64(q + "write_zeroes_max_bytes")) {
        wz.max_bytes = *v;
    } else {
        note_unknown(unknown, "write_zeroes.max_bytes", sys, q + "write_zeroes_max_bytes");
    }
    // Linux 6.17 added the unmap write-zeroes limits; older kernels have neither file,
    // which means the kernel has no FALLOC_FL_WRITE_ZEROES either.
    wz.unmap_max_bytes = sys.read_u64(q + "write_zeroes_unmap_max_bytes");
    wz.unmap_max_hw_bytes = sys.read_u64(q + "write_zeroes_unmap_max_hw_bytes");
    if (wz.unmap_max_bytes) {
        wz.unmap = *wz.unmap_max_bytes != 0;
    } else {
        unknown["write_zeroes.unmap"] = fmt::format(
            "{}/{}write_zeroes_unmap_max_bytes is missing: the kernel predates unmap write zeroes (Linux 6.17)",
            sys.root(), q);
    }

    if (auto wc = sys.read(q + "write_cache")) {
        cache.kernel = parse_write_cache(*wc);
    }
    if (!cache.kernel) {
        note_unknown(unknown, "cache.kernel", sys, q + "write_cache");
    }
    if (auto f = sys.read_u64(q + "fua")) {
        cache.fua = *f != 0;
    } else {
        note_unknown(unknown, "cache.fua", sys, q + "fua");
    }
}

}  // namespace wz::probe::sysfs
