// SPDX-License-Identifier: MIT
// Private to lib: one NVMe I/O command as the two passthrough paths send it, the io_uring
// uring_cmd (SQE128) and the NVME_IOCTL_IO_CMD ioctl.
#pragma once

#include <liburing.h>
#include <linux/nvme_ioctl.h>
#include <nvme/types.h>

#include <wzero/wzero.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace wz::io::detail {

// NVM Command Set opcodes and CDW12 bits (NVM Command Set Specification 1.0, 3.2), by
// libnvme's names. libnvme's control flags (NVME_IO_*) are CDW12 bits 31:16 shifted down,
// as its nvme_io_args.control: shifted back up here.
constexpr std::uint8_t opcode_flush = nvme_cmd_flush;
constexpr std::uint8_t opcode_write = nvme_cmd_write;
constexpr std::uint8_t opcode_write_zeroes = nvme_cmd_write_zeroes;
constexpr std::uint32_t cdw12_deac = std::uint32_t{NVME_IO_DEAC} << 16;  // Write Zeroes: deallocate
constexpr std::uint32_t cdw12_fua = std::uint32_t{NVME_IO_FUA} << 16;    // Write / Write Zeroes: force unit access
constexpr std::uint32_t max_nlb = 65536;  // CDW12 bits 15:0, 0's based
static_assert(cdw12_deac == 1U << 25 && cdw12_fua == 1U << 30);

// liburing 2.3 has no io_uring_prep_uring_cmd: the command goes in the SQE's tail, which a
// ring set up with IORING_SETUP_SQE128 makes 80 bytes long.
constexpr std::size_t sqe128_bytes = 128;
static_assert(offsetof(io_uring_sqe, cmd) + sizeof(nvme_uring_cmd) <= sqe128_bytes);

struct command_words {
    std::uint8_t opcode = 0;
    std::uint32_t nsid = 0, cdw10 = 0, cdw11 = 0, cdw12 = 0;
    std::uint64_t addr = 0;      // data buffer (Write)
    std::uint32_t data_len = 0;  // bytes
};

// NVMe Write of `nlb` blocks at `slba` from `buf`, with or without FUA.
inline command_words write_words(std::uint32_t nsid, std::uint64_t slba, std::uint32_t nlb, const void* buf,
                                 std::uint32_t bytes, bool fua) {
    command_words w;
    w.opcode = opcode_write;
    w.nsid = nsid;
    w.cdw10 = static_cast<std::uint32_t>(slba);
    w.cdw11 = static_cast<std::uint32_t>(slba >> 32);
    w.cdw12 = (nlb - 1) | (fua ? cdw12_fua : 0);
    w.addr = reinterpret_cast<std::uintptr_t>(buf);
    w.data_len = bytes;
    return w;
}

inline command_words flush_words(std::uint32_t nsid) {
    command_words w;
    w.opcode = opcode_flush;
    w.nsid = nsid;
    return w;
}

// NVME_IOCTL_IO_CMD rather than IO64: the 64-bit result is of no use for these commands and
// IO_CMD also works on the pre-5.9 kernels that are the reason this path exists.
// 0, an NVMe status (> 0), or -errno: the ioctl's three outcomes.
int ioctl_command(int fd, const command_words& w);

// Fills an SQE of a SQE128 ring with IORING_OP_URING_CMD / NVME_URING_CMD_IO.
void prep_uring_command(io_uring_sqe* sqe, int fd, const command_words& w, std::uint64_t user_data);

// An error for a command's outcome rc (an NVMe status > 0, or -errno): the NVMe status
// category or the system one, with "WHAT: reason" as the message.
error_info command_error(int rc, const std::string& what);

}  // namespace wz::io::detail
