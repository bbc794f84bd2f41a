// SPDX-License-Identifier: MIT
// nvme_zero_tool: a test driver for wz::io::nvme_write_zeroes / nvme_flush, run inside the VM
// rig (not the CLI: wzero's front end lives in tools/wzero).
//   nvme_zero_tool CHARDEV NSID LBA_BYTES SLBA NLB [deac] [ioctl|uring] [max=BLOCKS] [qd=N] [rate=BYTES]
// max= caps the blocks per command below the 65536 of the 16-bit NLB (to drive the queue);
// rate= is the rate limit in bytes per second (commands then go as pieces).
//   nvme_zero_tool flush CHARDEV NSID
// Exit status: 0 success, 1 failure or usage, 2 the requested path is not supported.
#include "io/engine.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

template <class T>
bool parse(std::string_view s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

int usage() {
    std::fputs("usage: nvme_zero_tool CHARDEV NSID LBA_BYTES SLBA NLB [deac] [ioctl|uring] [max=BLOCKS] [qd=N] "
               "[rate=BYTES]\n"
               "       nvme_zero_tool flush CHARDEV NSID\n",
               stderr);
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace wz::io;
    std::vector<std::string_view> args(argv + 1, argv + argc);
    const bool flush = !args.empty() && args[0] == "flush";
    if (flush) {
        args.erase(args.begin());
    }
    if (args.size() < (flush ? 2U : 5U)) {
        return usage();
    }
    nvme_target t;
    t.dev_path = std::string(args[0]);
    if (!parse(args[1], t.nsid) || (!flush && !parse(args[2], t.lba_bytes))) {
        return usage();
    }
    const int fd = ::open(t.dev_path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fmt::print(stderr, "open {}: {}\n", t.dev_path, std::strerror(errno));
        return 1;
    }
    t.dev_fd = fd;
    if (flush) {
        auto st = nvme_flush(t);
        if (!st.ok()) {
            fmt::print(stderr, "{}\n", st.error().message);
            return 1;
        }
        fmt::print("flush nsid {}: ok\n", t.nsid);
        return 0;
    }

    std::uint64_t slba = 0, nlb_total = 0;
    if (!parse(args[3], slba) || !parse(args[4], nlb_total)) {
        return usage();
    }
    bool deac = false;
    passthrough_choice choice = passthrough_choice::automatic;
    std::uint64_t max_blocks = 65536;
    unsigned queue_depth = 8;
    rate_limit rate;
    for (std::size_t i = 5; i < args.size(); ++i) {
        if (args[i].starts_with("max=")) {
            if (!parse(args[i].substr(4), max_blocks) || max_blocks == 0) {
                return usage();
            }
        } else if (args[i].starts_with("rate=")) {
            if (!parse(args[i].substr(5), rate.bytes_per_second)) {
                return usage();
            }
        } else if (args[i].starts_with("qd=")) {
            if (!parse(args[i].substr(3), queue_depth)) {
                return usage();
            }
        } else if (args[i] == "deac") {
            deac = true;
        } else if (args[i] == "ioctl") {
            choice = passthrough_choice::ioctl;
        } else if (args[i] == "uring") {
            choice = passthrough_choice::uring_cmd;
        } else {
            return usage();
        }
    }
    // NLB is 16 bits, 0's based: at most 65536 blocks per command.
    std::vector<nvme_zero_cmd> cmds;
    for (std::uint64_t lba = slba, left = nlb_total; left > 0;) {
        const auto n = static_cast<std::uint32_t>(std::min(left, max_blocks));
        cmds.push_back(nvme_zero_cmd{lba, n, deac});
        lba += n;
        left -= n;
    }
    std::uint64_t progress_bytes = 0;
    passthrough_path used = passthrough_path::ioctl;
    io_outcome partial;
    auto res = nvme_write_zeroes(
        t, cmds, queue_depth,
        [&](std::uint64_t n) {
            progress_bytes += n;
            return true;
        },
        rate, &used, choice, &partial);
    fmt::print("path: {}\ncommands: {}\nbytes_done: {}\nprogress_bytes: {}\n",
               partial.commands > 0 ? to_string(used) : "none", partial.commands,
               partial.bytes_done, progress_bytes);
    if (!res) {
        fmt::print(stderr, "{}\n", res.error().message);
        return res.error().code == std::errc::operation_not_supported ? 2 : 1;
    }
    return 0;
}
