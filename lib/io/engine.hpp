// SPDX-License-Identifier: MIT
// Data writes of zeroes at queue depth, and NVMe Write Zeroes / Flush through the namespace's
// generic char device (/dev/ngXnY), on the process's I/O engine (wz::current_io_engine():
// io_uring, or psync, a small thread pool doing pwrite and the passthrough ioctl). Both give
// the same guarantees; io_outcome::engine says which one ran.
#pragma once

#include <wzero/wzero.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

namespace wz::io {

// One page-aligned buffer of zeroes shared by every write (never written to).
// Anonymous memory, populated up front: O_DIRECT and io_uring buffer registration pin
// real pages, and registration asks for writable ones (FOLL_WRITE), so it is not PROT_READ.
class zero_buffer {
public:
    explicit zero_buffer(std::size_t bytes);  // rounded up to pages; throws std::bad_alloc
    zero_buffer(const zero_buffer&) = delete;
    zero_buffer& operator=(const zero_buffer&) = delete;
    ~zero_buffer();
    [[nodiscard]] const void* data() const { return data_; }
    [[nodiscard]] std::size_t size() const { return size_; }

private:
    void* data_ = nullptr;
    std::size_t size_ = 0;
};

// Called from the submitting thread after completions, with the number of bytes newly
// completed; return false to cancel (in-flight I/O is reaped, nothing new is submitted, the
// call returns ECANCELED with the progress made). Not called again once it returned false.
// While a rate limit holds writes or commands back it is also called with 0, at least every
// 50 ms, so that a cancel ends the wait at once.
using progress_fn = std::function<bool(std::uint64_t bytes_completed_now)>;

// Bytes per second; 0 = unlimited. A token bucket (io/pacing.hpp), starting empty and
// holding at most two pieces, is charged with the bytes each write or command zeroes before
// it is submitted: over any call, bytes submitted <= rate * elapsed. Under a rate, NVMe
// commands are cut into pieces of io::paced_piece_bytes (about a twentieth of a second's
// worth) so that the bucket meters them finely; writes go in chunks of at most chunk_bytes.
struct rate_limit {
    std::uint64_t bytes_per_second = 0;
};

struct zero_write_request {
    int fd = -1;
    std::string path;                     // for messages
    std::uint64_t offset = 0, length = 0; // byte range to overwrite with zeroes
    std::uint32_t chunk_bytes = 1 << 20;  // per write; the last may be shorter
    unsigned queue_depth = 32;
    // fd opened O_DIRECT: offset, length and chunk_bytes must be multiples of the offset
    // alignment (statx STATX_DIOALIGN, else the logical block size of a block device, else
    // 512); checked, EINVAL naming the range if not.
    bool direct = true;
};

struct io_outcome {
    std::uint64_t bytes_done = 0;  // contiguous from the request's start (see each function)
    std::uint64_t commands = 0;    // I/O commands issued (resubmissions of short writes count)
    bool fixed_buffer = false;     // write_zeroes: WRITE_FIXED from a registered buffer, else WRITE
    io_engine engine = io_engine::io_uring;  // the engine that ran (psync after a fallback)
};

// Writes zeroes with up to queue_depth writes in flight.
// io_uring: one ring per call. The
// zero buffer is registered (io_uring_register_buffers) and written with WRITE_FIXED; if
// registration fails (RLIMIT_MEMLOCK, > 1 GiB chunk, old kernel) plain WRITE is used and
// io_outcome::fixed_buffer says so. If the ring cannot be set up and the engine was chosen
// automatically, io::fall_back_to_psync() decides and the request runs on psync instead.
// psync: min(queue_depth, 8) threads doing pwrite of the same buffer; progress, cancel and
// the rate limit stay on the calling thread (the workers block every signal).
// Either way short writes are resubmitted for the rest.
// bytes_done: every byte below offset + bytes_done is written.
// On error: stop submitting, reap what is in flight, return an error naming "write zeroes",
// the path and the failing range (the lowest one, if several fail) with the errno; `*partial`
// (when given) holds the outcome on success and on failure alike.
result<io_outcome> write_zeroes(const zero_write_request& req, const progress_fn& progress, const rate_limit& rate,
                                io_outcome* partial = nullptr);

// NVMe Write Zeroes through the namespace's passthrough device: its generic char device
// (/dev/ngXnY) or, where there is none, its block device (nvme_info::passthrough_device).
struct nvme_target {
    int dev_fd = -1;  // from open_passthrough (util/privilege.hpp)
    std::string dev_path;
    std::uint32_t nsid = 0;
    std::uint32_t lba_bytes = 512;
    // Under a rate a DEAC command is cut only at multiples of this many blocks from its start:
    // the deallocation granularity's and alignment's least common multiple, so that every
    // piece is aligned and whole granules as the command was. 1: no such geometry.
    std::uint32_t deac_unit_lba = 1;
    // dev_path is the namespace's block device (no generic char device): NVME_IOCTL_IO_CMD
    // only, uring_cmd being the char device's.
    bool block_device = false;
};

struct nvme_zero_cmd {
    std::uint64_t slba = 0;
    std::uint32_t nlb = 0;  // count of blocks, 1..65536 (sent 0's based)
    bool deac = false;      // CDW12 bit 25: deallocate; only meaningful when DLFEAT says WZDS/DRB 001b
};

enum class passthrough_path { uring_cmd, ioctl };
[[nodiscard]] const char* to_string(passthrough_path p) noexcept;  // "uring_cmd" / "ioctl"

// What the caller asks for. automatic: io_uring uring_cmd, falling back to the ioctl when the
// kernel lacks it; the other two use that path only, and a missing uring_cmd is then an
// EOPNOTSUPP error of its own ("not supported"), never a silent fallback.
enum class passthrough_choice { automatic, uring_cmd, ioctl };

// Issues the commands in order with up to queue_depth in flight.
// uring_cmd (Linux 5.19+): a ring with IORING_SETUP_SQE128 | IORING_SETUP_CQE32,
// IORING_OP_URING_CMD with cmd_op NVME_URING_CMD_IO. It counts as missing when ring setup
// fails with EINVAL/ENOSYS/EPERM/EOPNOTSUPP (flags unknown, io_uring absent or disabled by
// sysctl), when the opcode probe lacks URING_CMD, or when the first command (sent alone;
// under a rate, its first piece) fails with EOPNOTSUPP or EINVAL; automatic then sends every
// command, that first one included, with NVME_IOCTL_IO_CMD one at a time. `*used` records
// the path of every command. A target on the block device (nvme_target::block_device) takes
// the ioctl whatever the engine, and passthrough_choice::uring_cmd is EOPNOTSUPP for it.
// psync: NVME_IOCTL_IO_CMD from the thread pool, the first command alone, then up to
// min(queue_depth, 8) in flight; passthrough_choice::uring_cmd is EOPNOTSUPP ("not
// supported") naming the engine and why.
// A command failing with an NVMe status is an error with
// std::error_code(status, wz::nvme_status_category()); -errno with the system category;
// the message names the char device, SLBA, NLB and DEAC.
// Under a rate (`rate`) each command is sent as pieces of at most io::paced_piece_bytes
// (io::nvme_pieces: DEAC ones whole multiples of t.deac_unit_lba), each charged to the token
// bucket before it goes, the same on both engines and both paths; without one, commands go
// as given. io_outcome::commands and the error name what was sent: pieces.
// Progress gets nlb * lba_bytes per completed piece. An nlb outside 1..65536 is EINVAL
// before anything is sent.
// bytes_done: the bytes of the longest prefix of `cmds` (in pieces) that all completed.
result<io_outcome> nvme_write_zeroes(const nvme_target& t, std::span<const nvme_zero_cmd> cmds, unsigned queue_depth,
                                     const progress_fn& progress, const rate_limit& rate,
                                     passthrough_path* used = nullptr,
                                     passthrough_choice choice = passthrough_choice::automatic,
                                     io_outcome* partial = nullptr);

// NVMe Flush (opcode 00h) of the namespace through the passthrough ioctl (one command, no
// reason for a ring) on the target's char or block device; a failed status names the device,
// the nsid and the NVMe status or errno.
[[nodiscard]] status nvme_flush(const nvme_target& t);

}  // namespace wz::io
