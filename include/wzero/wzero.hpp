// SPDX-License-Identifier: MIT
// wzero: written, zeroed extents and durable writes for Linux storage.
// The public C++ API. Everything else in the library is private.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <sys/types.h>
#include <sys/uio.h>
#include <utility>
#include <variant>
#include <vector>

namespace wz {

// Version of the library the program runs against (not the one it was built with).
[[nodiscard]] const char* version() noexcept;

// Why a call was refused, where the caller can change the outcome: programs decide on this
// and on the code, never on the message text (blkdiscard(8)'s probe returns a code and its
// main() composes "use -f"). The C API gives it as wz_last_error_reason(), same values.
enum class error_reason : std::uint8_t {
    none = 0,  // nothing beyond the error code
    // Another process has the file open or mapped: exclusive use refused before any I/O
    // (EBUSY). preallocate_options::exclusive = exclusive_mode::none goes on without it.
    in_use = 1,
    // Another process opened or truncated the file during the run: the exclusive write lease
    // was broken and the run stopped (EBUSY); the file is consistent, the range not all zeroed.
    lease_lost = 2,
    // Exclusive use required, but it cannot be ensured here (EBADF: the descriptor is not open
    // read-write; ENOLCK: no leases here). exclusive_mode::none goes on without it.
    exclusive_unavailable = 3,
    // A block device with a filesystem signature or partition table (EBUSY), somebody's data:
    // preallocate_options::force (WZ_ZERO_FORCE), writer_options::force (WZ_WRITER_FORCE).
    holds_data = 4,
    // The requested method (preallocate_options::method, fallback off) or in-place zeroing
    // (in_place_mode::require) cannot be used here (ENOTSUP).
    method_unavailable = 5,
    // in_place_mode::require with a method that never zeroes in place (ENOTSUP), where the
    // device could: preallocate_options::method automatic or nvme.
    in_place_excluded = 6,
    // Writer mode `through` needs the whole range preallocated as written extents (EINVAL):
    // wz::allocate or wz::preallocate it first.
    not_written = 7,
    // Writer mode `through` on a cache that is not write-through would lose durability
    // (EINVAL): writer_options::allow_unsafe_through overrides.
    unsafe_durability = 8,
};

// An error with the context a storage engineer needs to act on it:
// which operation failed, on which path, and (where one applies) which byte range.
struct error_info {
    std::error_code code;
    std::string message;  // "open /mnt/x: Permission denied", already complete
    error_reason reason = error_reason::none;  // what the caller can change, if anything
};

// C++20 has no std::expected: a small result type in its spirit. A result holds either
// the value or the error; value() on an error is a programming error (std::bad_variant_access).
template <class T>
class [[nodiscard]] result {
public:
    result(T value) : v_(std::move(value)) {}                // NOLINT(google-explicit-constructor)
    result(error_info err) : v_(std::move(err)) {}                 // NOLINT(google-explicit-constructor)
    [[nodiscard]] bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }
    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    [[nodiscard]] const wz::error_info& error() const& { return std::get<1>(v_); }

private:
    std::variant<T, wz::error_info> v_;
};

// The outcome of a call that returns nothing: success, or the error (as RocksDB's Status).
// Decide on ok(), error().code and error().reason, never on the message text. Deliberately
// not convertible to bool: the calls it replaced returned std::optional<error_info>, where
// "true" meant failure, and code written for those must fail to compile rather than invert
// silently.
class [[nodiscard]] status {
public:
    status() noexcept = default;                                    // success
    status(error_info err) : err_(std::move(err)) {}                // NOLINT(google-explicit-constructor)
    [[nodiscard]] bool ok() const noexcept { return !err_.has_value(); }
    [[nodiscard]] std::error_code code() const noexcept { return err_ ? err_->code : std::error_code(); }
    // The error; only after !ok() (std::bad_optional_access otherwise).
    [[nodiscard]] const error_info& error() const& { return err_.value(); }
    [[nodiscard]] error_info&& error() && { return std::move(err_).value(); }

private:
    std::optional<error_info> err_;
};

// ---------------------------------------------------------------------------
// The I/O engine (one per process)
// ---------------------------------------------------------------------------
// Data writes of zeroes, the NVMe passthrough commands and the writer's asynchronous API run
// on one of two engines with the same guarantees: io_uring, or psync, a small thread pool
// doing pwrite/fdatasync and NVMe passthrough through the ioctl. psync is for where io_uring
// cannot be set up: kernel.io_uring_disabled, a seccomp profile refusing io_uring_setup (the
// default of Docker, containerd and podman), no CONFIG_IO_URING, RLIMIT_MEMLOCK on kernels
// before 5.12, too few descriptors.
enum class io_engine { io_uring, psync };
[[nodiscard]] const char* to_string(io_engine e) noexcept;  // "io_uring" / "psync"
enum class io_engine_request { automatic, io_uring, psync };

struct io_engine_info {
    io_engine engine = io_engine::io_uring;
    // Why this one: "io_uring set up", "forced (WZERO_ENGINE=psync)", "io_uring setup:
    // Operation not permitted (kernel.io_uring_disabled=2)", ...
    std::string reason;
    bool forced = false;  // asked for by select_io_engine() or WZERO_ENGINE, not probed
};

// The engine is chosen once per process, at the first call that needs one (or here):
// select_io_engine() if it was called, else the environment variable WZERO_ENGINE
// ("io_uring", "psync" or "auto"), else automatic: io_uring when a ring can be set up and the
// kernel has the opcodes used (IORING_OP_WRITE), psync otherwise. Automatic also moves to
// psync, once and for the rest of the process, when a later ring setup is refused for a reason
// that will not go away (EPERM, ENOSYS, EMFILE, ENFILE, ENOMEM); io_uring asked for
// explicitly never falls back: its setup errors are returned.
// select_io_engine() after the choice was made returns EBUSY unless it asks for the same
// engine (or automatic); an unknown WZERO_ENGINE value makes current_io_engine() say so in
// its reason and choose automatically (the CLI refuses it instead). REQUESTED_BY names who
// asked in the engine's reason ("forced (REQUESTED_BY)"): a program may name its option.
status select_io_engine(io_engine_request request, std::string_view requested_by = "select_io_engine()");
[[nodiscard]] io_engine_info current_io_engine();

// ---------------------------------------------------------------------------
// Capability record (wz::stat)
// ---------------------------------------------------------------------------

// Ways of turning a byte range into written zeroes, best first.
enum class zero_method {
    kernel,     // fallocate(FALLOC_FL_WRITE_ZEROES), Linux 6.17+
    nvme_deac,  // NVMe Write Zeroes with DEAC through the passthrough char device
    nvme,       // NVMe Write Zeroes without DEAC through the passthrough char device
    zeroout,    // BLKZEROOUT on a block device (never deallocates)
    write,      // data writes of zeroes
};
inline constexpr zero_method all_zero_methods[] = {zero_method::kernel, zero_method::nvme_deac, zero_method::nvme,
                                                   zero_method::zeroout, zero_method::write};
[[nodiscard]] const char* to_string(zero_method m) noexcept;

enum class cache_mode { write_back, write_through };
[[nodiscard]] const char* to_string(cache_mode m) noexcept;  // "write-back" / "write-through"

// What the probe could not find out, keyed by the JSON field name ("nvme.vwc_enabled"),
// with the reason ("Get Features FID 06h: Operation not permitted (needs CAP_SYS_ADMIN)").
using unknown_reasons = std::map<std::string, std::string>;

struct fs_info {
    std::string type;                  // "ext4", "xfs", "btrfs", "tmpfs", ...
    std::uint64_t magic = 0;           // statfs f_type
    std::uint64_t block_size = 0;      // statfs f_bsize
    std::string mount_point;
    std::string mount_source;
    std::string mount_options;         // VFS and fs options, as in /proc/self/mountinfo
    bool cow = false;                  // data is copy-on-write for this file
    std::string cow_reason;
    // Does fallocate(2) mode 0 allocate here? false: ext2, and ext3/ext4 files mapped by
    // indirect blocks (no extents flag); nullopt: not known for this filesystem (tried, and a
    // refusal with EOPNOTSUPP falls back to data writes, which allocate).
    std::optional<bool> fallocate;
    std::string fallocate_reason;
};

struct device_info {
    std::string path;                  // the block device holding the data: /dev/nvme0n1p2, /dev/loop3
    std::string disk;                  // the whole disk: /dev/nvme0n1
    std::string kind;                  // nvme, loop, dm, md, scsi, virtio, nullb, other
    std::uint32_t major = 0, minor = 0;
    bool partition = false;
    std::uint64_t partition_start_bytes = 0;
    std::uint64_t size_bytes = 0;
    std::uint32_t logical_block_size = 0;
    std::uint32_t physical_block_size = 0;
    std::uint64_t max_hw_transfer_bytes = 0;
    std::uint64_t discard_granularity = 0;
    std::uint64_t discard_max_bytes = 0;
    std::optional<bool> rotational;
    std::optional<bool> io_poll;       // queue/io_poll: the disk has poll queues (IOPOLL completes)
    std::string backing_file;          // loop devices
    std::optional<bool> loop_direct_io;  // loop devices: loop/dio (direct I/O to the backing file)
    std::vector<std::string> slaves;   // dm/md: the devices below
};

struct write_zeroes_info {
    std::uint64_t max_bytes = 0;                 // queue/write_zeroes_max_bytes
    std::optional<bool> unmap;                   // unmap write zeroes (Linux 6.17+ sysfs)
    std::optional<std::uint64_t> unmap_max_bytes;
    std::optional<std::uint64_t> unmap_max_hw_bytes;
};

// Where NVMe I/O commands (Write Zeroes, Flush, Write with FUA) go: the namespace's generic
// char device (/dev/ngXnY, Linux 5.13+: io_uring uring_cmd or the NVME_IOCTL_IO_CMD ioctl),
// else its block device (the same ioctl, no uring_cmd: Linux 5.10 to 5.12, or a container
// given only /dev/nvmeXnY), else none.
enum class passthrough_route { none, char_device, block_device };
// "none" / "char_device" / "block_device"
[[nodiscard]] const char* to_string(passthrough_route r) noexcept;

// Decoded NVMe Identify data for the namespace under the file (NVMe base spec 2.x,
// NVM command set spec 1.x). Raw fields are kept next to their decoding.
struct nvme_info {
    std::string controller;            // /dev/nvme0
    std::string namespace_device;      // /dev/nvme0n1
    std::string char_device;           // /dev/ng0n1 (empty when the kernel has none: < 5.13)
    passthrough_route passthrough = passthrough_route::none;
    std::string passthrough_device;    // char_device or namespace_device, as passthrough says
    std::string passthrough_reason;    // why that route (or why none)
    std::uint32_t nsid = 0;
    std::string model, serial, firmware, transport;
    std::uint64_t partition_start_lba = 0;
    std::uint32_t lba_bytes = 0;
    std::uint64_t nsze_lba = 0;
    // Identify Controller
    std::optional<std::uint16_t> oncs;
    std::optional<bool> write_zeroes_supported;  // ONCS bit 3
    std::optional<std::uint8_t> mdts;
    std::optional<std::uint8_t> wzsl;            // NVM-specific Identify Controller byte 1
    std::optional<std::uint64_t> mps_min_bytes;  // CAP.MPSMIN (PCIe only: read from BAR0)
    std::optional<std::uint64_t> wzsl_max_bytes; // 0 = no limit stated
    std::optional<std::uint8_t> vwc;             // raw VWC byte
    std::optional<bool> vwc_present;             // VWC bit 0
    std::optional<bool> vwc_enabled;             // Get Features FID 06h DW0 bit 0 (WCE)
    // Identify Namespace
    std::optional<std::uint8_t> nsfeat;
    std::optional<std::uint8_t> dlfeat;
    std::optional<std::uint8_t> dlfeat_read_behavior;  // DRB, bits 2:0
    std::optional<bool> wzds;                          // bit 3
    std::optional<bool> deac;                          // WZDS && DRB == 001b
    std::optional<std::uint64_t> npdg_bytes;           // dealloc granularity
    std::optional<std::uint64_t> npda_bytes;           // dealloc alignment
    std::string npd_source;                            // "npdg/npda", "npdgl/npdal", or ""
    std::optional<std::uint64_t> npwg_bytes;
};

struct cache_info {
    std::optional<cache_mode> kernel;            // queue/write_cache
    std::optional<cache_mode> effective;         // what the device really does
    std::string effective_reason;
    std::optional<bool> fua;                     // queue/fua
    // Does a durable write need a cache flush (fdatasync), or is writing the data to the device
    // enough? false only when every device is write-through and, for a regular file, its
    // filesystem overwrites written extents in place (ext4, xfs): a copy-on-write file needs
    // the filesystem's commit whatever the cache. true, never nullopt, where the cache or the
    // device is not known (the safe side); false on a memory filesystem (nothing to flush).
    std::optional<bool> flush_needed;
    std::string flush_reason;
    // Regular files: is an O_DSYNC/RWF_DSYNC O_DIRECT overwrite of written extents sent as a
    // FUA write with no flush? true only on filesystems where this has been confirmed at the
    // device (wzero(1) lists them), nullopt elsewhere: never claimed from the kernel's word.
    std::optional<bool> dsync_overwrite_fua;
    std::string dsync_overwrite_reason;
};

// One block device holding a file's data (or the block device itself), with its cache as that
// device alone has it. A filesystem over several devices (btrfs) has one for each, and the
// record's `cache` is then the most conservative answer over all of them.
struct data_device {
    device_info device;
    std::optional<nvme_info> nvme;  // nullopt: not an NVMe namespace
    // kernel, effective, fua and flush_needed of this device, with their reasons (the
    // dsync_overwrite fields are the file's: in capabilities::cache only).
    cache_info cache;
};

struct method_assessment {
    std::optional<bool> usable;  // nullopt: unknown (see reason)
    std::string reason;
};

struct dio_alignment {
    std::uint32_t mem_align = 0;
    std::uint32_t offset_align = 0;
    // "statx", or "block size" where statx has no STATX_DIOALIGN for this filesystem (btrfs)
    // but O_DIRECT opens: then the larger of the fs and logical block size, which is safe.
    std::string source = "statx";
};

struct capabilities {
    std::string path;
    std::string file_type;                       // "regular" or "block"
    std::uint64_t size_bytes = 0;
    std::string kernel_release;
    std::optional<fs_info> fs;                   // nullopt for a raw block device
    std::optional<dio_alignment> dio;            // nullopt: O_DIRECT not supported here
    // The block device holding the data; on a filesystem over several (btrfs), the first of
    // `devices`. nullopt: none (tmpfs), or not known (the reason in unknown["device"]: a
    // filesystem whose devices the record cannot name, never another mount's device).
    std::optional<device_info> device;
    // Every block device the data may be on, ordered by major:minor: one for a block device and
    // for most filesystems, each device of a btrfs; empty when `device` is nullopt.
    std::vector<data_device> devices;
    write_zeroes_info write_zeroes;              // of `device`
    std::optional<nvme_info> nvme;               // of `device`; nullopt: not an NVMe namespace
    // Over all of `devices`: write-back if any is, FUA only if all have it, a flush needed if
    // any needs one. Without a known device a flush is taken as needed, except on a
    // filesystem that keeps data in memory only (tmpfs), where there is nothing to flush to.
    cache_info cache;
    std::map<zero_method, method_assessment> methods;
    std::optional<zero_method> recommended_method;
    std::string recommended_reason;
    io_engine_info io;                           // the engine this process uses for I/O
    unknown_reasons unknown;
};

struct stat_options {
    // Re-read everything, also what is cached per device (e.g. after Set Features).
    bool refresh = false;
};

// The capability record of a regular file or a block device (whole disk or partition).
result<capabilities> stat(const std::string& path, const stat_options& options = {});
// The same for an open file descriptor; `path` is used in messages and the record only.
result<capabilities> stat(int fd, const std::string& path, const stat_options& options = {});

// The write cache as it is now, for durability that rests on "write-through" (a
// sync_file_range without a flush, O_DIRECT writes without FUA): the record's cache.effective,
// which an administrator's `nvme set-feature -f 6 -v 1`, a vendor tool or a controller reset
// can turn write-back at any time without Linux noticing.
struct write_cache_state {
    std::optional<cache_mode> effective;  // as capabilities::cache.effective; nullopt: unknown
    std::string reason;                   // as capabilities::cache.effective_reason
    std::chrono::nanoseconds age{0};      // since the read this answer rests on started
    bool reread = false;                  // read during this call (a device command or sysfs), not held
};

// The maximum age the writer and the plugins allow an answer at an acknowledgement: a write
// acknowledged more than this after the cache turned on is covered by FUA or a flush.
inline constexpr std::chrono::milliseconds default_cache_max_age{100};

// The effective write cache of the device under FD (a regular file's data device, or the block
// device itself), re-read when the answer held for that device was read more than MAX_AGE ago
// (0: always): one Get Features FID 06h on an NVMe namespace whose controller has a volatile
// write cache (CAP_SYS_ADMIN; without it the answer is unknown), and the kernel's
// queue/write_cache. The answer is held per device for the whole process and shared with
// wz::stat and the writer: a fresh one costs no I/O (a statx and a table look-up). The first
// call for a filesystem resolves its device with a whole stat(). Ask after the data reached the
// device (sync_file_range returned) and before acknowledging it: if the answer is not
// write-through, flush (fdatasync). PATH is for messages.
result<write_cache_state> write_cache(int fd, const std::string& path,
                                      std::chrono::nanoseconds max_age = default_cache_max_age);

// The record as JSON text (stable keys, documented in wzero(1)).
[[nodiscard]] std::string to_json(const capabilities& caps, int indent = 2);

// ---------------------------------------------------------------------------
// Preallocation as written, zeroed extents (wz::preallocate)
// ---------------------------------------------------------------------------

enum class method_request { automatic, kernel, nvme, zeroout, write };
enum class in_place_mode { automatic, never, require };
enum class verify_mode { none, extents, data };
// Exclusive use of an existing regular file while parts of it are zeroed: an exclusive write
// lease (fcntl F_SETLEASE F_WRLCK), which the kernel grants only while no other process has the
// file open or mapped, and which then makes every other open and truncate of the file wait
// until the run lets go of it. A run whose required lease is broken by such an open stops
// after the command in flight, leaves the file consistent, and fails (EBUSY) saying how far it
// got; the waiting process goes on after it. See wzero(1), EXCLUSIVE USE.
enum class exclusive_mode {
    // By path: required for a file that exists (a new file is built unnamed, where nobody can
    // open it): refused before any I/O (EBUSY) while another process has the file open or
    // mapped, naming the processes /proc shows; where leases are not available (NFS, some FUSE,
    // fs.leases-enable = 0, not the file's owner without CAP_LEASE) allocate() refuses
    // (ENOLCK) and preallocate() goes on without. On a descriptor: taken when the caller's open
    // file description is the file's only one, else the run goes on (the caller owns the file:
    // libwzero(3)); a lease taken so does not stop the run when broken: it is kept to the end,
    // and whoever opens the file meanwhile waits that long.
    automatic,
    // As by path, also on a descriptor.
    require,
    // Never taken: another process may write, truncate or map the file during the run; its
    // writes into a hole of the range can be lost, and its page cache can collide with the
    // run's direct I/O.
    none,
};

// How NVMe commands reach the char device: io_uring uring_cmd (Linux 5.19+) falling back to
// the NVME_IOCTL_IO_CMD ioctl, or only one of them (a missing uring_cmd is then an error).
enum class passthrough_mode { automatic, uring_cmd, ioctl };

struct progress_info {
    std::uint64_t bytes_done = 0;   // zeroed so far (all methods)
    std::uint64_t bytes_total = 0;
};

struct preallocate_options {
    method_request method = method_request::automatic;
    bool fallback = true;                        // go down the chain when a method is refused
    // Re-zero a file's written extents through NVMe at their own addresses (automatic), never
    // (data writes instead), or require it: then a range holding an extent that cannot be
    // zeroed in place (NVMe unusable here, or a shared, encoded, encrypted, inline, delayed or
    // unknown extent) is refused with ENOTSUP before any I/O. Holes and unwritten extents are
    // filled by data writes in every mode.
    in_place_mode in_place = in_place_mode::automatic;
    // I/O commands in flight; 0: automatic (32, but 2 on a loop device doing buffered I/O,
    // whose single worker gains nothing from more and the page cache loses).
    unsigned queue_depth = 0;
    passthrough_mode passthrough = passthrough_mode::automatic;
    // 0: unlimited. Otherwise every method holds it: each data write, NVMe Write Zeroes,
    // BLKZEROOUT and FALLOC_FL_WRITE_ZEROES call is cut to at most about a twentieth of a
    // second's worth (preallocate_report::rate_piece_bytes) and sent when a token bucket,
    // starting empty, has its bytes: zeroing N bytes takes at least N / rate seconds.
    std::uint64_t rate_bytes_per_second = 0;
    verify_mode verify = verify_mode::extents;
    bool dry_run = false;                        // plan only: touch nothing
    // Zero a block device that carries a filesystem signature or partition table (found
    // with libblkid, as blkdiscard(8) does); without it such a device is refused (EBUSY).
    bool force = false;
    exclusive_mode exclusive = exclusive_mode::automatic;
    // Make the result durable before returning: fdatasync (which sends the device flush the
    // kernel believes in) plus an NVMe Flush after passthrough commands on a write-back
    // device. Off: for callers that sync themselves; the zeroes are then written, not durable.
    bool sync = true;
    std::function<void(const progress_info&)> on_progress;
    const std::atomic<bool>* cancel = nullptr;   // set to stop; the run ends with ECANCELED
    // The path forms: a missing file is created (0666 less the umask, named only once it is
    // complete). Off: a missing file is an error (ENOENT), as util-linux's fallocate opens
    // without O_CREAT for --keep-size and --zero-range.
    bool create = true;
};

// One planned or executed step, as the report and `--dry-run` show it.
struct planned_operation {
    std::string kind;      // kernel, allocate, nvme, zeroout, write, write-buffered
    std::uint64_t offset = 0, length = 0;
    std::uint64_t slba = 0;
    std::uint32_t nlb = 0;
    bool deac = false;
    std::string reason;
};

struct preallocate_report {
    std::string path;
    std::uint64_t offset = 0, length = 0;
    std::map<zero_method, std::uint64_t> bytes_by_method;  // bytes zeroed by each method
    // Zeroed so far. On failure, how far it got: the operations that completed plus the
    // unbroken prefix of the one that failed (writes completing out of order after a gap
    // are not counted), so nothing counted here is left unzeroed. When verification after the
    // run finds part of the range gone (a hole, an unwritten extent, a file now shorter: another
    // process truncated or punched it), only the prefix still proven.
    std::uint64_t bytes_done = 0;
    std::uint64_t device_commands = 0;  // NVMe commands, write syscalls/SQEs, fallocate/ioctl calls
    std::string passthrough_path;       // "uring_cmd" or "ioctl" when NVMe commands were sent
    // Under options.rate_bytes_per_second (copied here; 0: none), the most bytes one command
    // or write zeroed before the token bucket was asked again; 0 without a rate.
    std::uint64_t rate_bytes_per_second = 0;
    std::uint64_t rate_piece_bytes = 0;
    std::string io_engine;              // "io_uring" or "psync" when data writes or NVMe commands were sent
    bool flushed = false;
    // A regular file whose data is copy-on-write (btrfs without No_COW, bcachefs, zfs): zeroes
    // written into it went to new extents, not in place over the old ones.
    bool copy_on_write = false;
    double elapsed_seconds = 0;
    std::optional<bool> verified;       // nullopt: not verified
    std::string verify_detail;
    std::vector<std::string> decisions; // one line per decision, as -v prints them
    std::vector<planned_operation> plan;  // dry run: the plan; otherwise the steps taken (bounded)
    // After a failure: what was undone so that the run leaves no more than it found ("removed
    // the file it created", "cut back to N bytes"), or why that could not be done; empty
    // when there was nothing to undo.
    std::string cleanup;
    // Exclusive use of the file during the run (exclusive_mode): "lease" (held for the run),
    // "none" (not taken: `decisions` says why: asked so, the caller's descriptor is not the
    // file's only one, leases not available here, a new file nobody else can open), "refused"
    // (the run was refused for it); empty for a block device or a run refused before.
    std::string exclusive_use;
};

// Makes [offset, offset + length) of a regular file or block device written zeroes, by the
// best method available (see wzero(1)), proving the result as `options.verify` asks.
// Files grow to offset + length as with fallocate(2) and never shrink. On failure the error
// names the operation, path and range, and `*partial` (if given) says how far it got.
result<preallocate_report> preallocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial = nullptr);
// Opens PATH (creating a regular file if missing; a block device exclusively) and preallocates.
result<preallocate_report> preallocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial = nullptr);

// fallocate(2) mode 0 (posix_fallocate) with written zeroes: [offset, offset + length) of a
// regular file ends up allocated as written extents, and every byte of data already in it is
// kept. Holes and unwritten extents inside the file become written zeroes (preallocate() on
// each, which leaves the size as it is); past the end, the file grows to offset + length with
// written zeroes, and never shrinks. As with fallocate(2), a range starting past the end
// leaves [size, offset) a hole: nothing outside the range is written.
// Data is told from holes with FIEMAP after writing back dirty pages (FIEMAP_FLAG_SYNC), so
// data still in the page cache counts as data; delayed, shared, encoded and unknown extents
// are data too. Without FIEMAP (tmpfs), SEEK_DATA/SEEK_HOLE find the holes.
// Race: like `fallocate --dig-holes`, this maps first and zeroes after, so a write by another
// process into a hole or unwritten extent of the range between the two can be overwritten by
// zeroes. Do not run it on a range someone else is writing.
// A block device has no holes: EOPNOTSUPP, as fallocate(2) mode 0 gives there (preallocate()
// zeroes one). The report counts the bytes zeroed (bytes_done); the rest of the range was
// data and is untouched. options as for preallocate(); verification proves the whole range
// written (verify_mode::data reads back the zeroed parts only).
result<preallocate_report> allocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                    const preallocate_options& options, preallocate_report* partial = nullptr);
// Opens PATH as preallocate(PATH) does (creating a missing regular file) and allocates.
result<preallocate_report> allocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                    const preallocate_options& options, preallocate_report* partial = nullptr);

// The report as JSON text.
[[nodiscard]] std::string to_json(const preallocate_report& report, int indent = 2);

// ---------------------------------------------------------------------------
// Database file lifecycle: create, grow, recycle (crash-safe, durable on return)
// ---------------------------------------------------------------------------
// Each call works on a descriptor the caller owns (or a directory descriptor and a name),
// takes preallocate_options (options.sync = false skips the final flush, options.verify =
// none the proof) and, when `report` is given, fills it as preallocate() does.

// Creates PATH, as openat(2) takes it (relative to the directory DIRFD, AT_FDCWD for the
// working directory, or absolute), as a file of SIZE bytes of written zeroes that appears
// under PATH only complete and durable. The directory part of PATH is resolved once
// (O_PATH | O_DIRECTORY, symlinks in it followed) and every step after works relative to
// it; NAME, the last component, is never followed. The file is
// made nameless (O_TMPFILE) where the filesystem allows it, else under a hidden temporary
// name ".NAME.wz-tmp.XXXXXX" in the same directory; zeroed and fdatasync'ed (one flush: the
// data, the size and the inode's creation before them); then linked or renamed to NAME
// without replacing anything (linkat, renameat2 RENAME_NOREPLACE); then the directory is
// fsync'ed. MODE is masked by the umask, as with open(2). An existing NAME is EEXIST and is
// never touched. On failure nothing is left under NAME and the temporary is removed; a crash
// may leave a ".NAME.wz-tmp.XXXXXX" file (never a partial NAME) on filesystems without
// O_TMPFILE. SIZE 0 makes an empty file. Always durable on
// success (options.sync does not apply); options.dry_run plans on the unnamed file and
// creates nothing.
status create_zeroed(int dirfd, const std::string& path, std::uint64_t size, mode_t mode,
                     const preallocate_options& options = {}, preallocate_report* report = nullptr);

// Grows the file FD to NEW_SIZE bytes with written zeroes, durable on return (the new size
// included). NEW_SIZE equal to the size only syncs; smaller is EINVAL: never a truncate.
status extend(int fd, std::uint64_t new_size, const preallocate_options& options = {},
              preallocate_report* report = nullptr);

// Recycles [offset, offset + length) of a file or block device in place (WAL reuse): it reads
// back as zeroes and stays written extents. NVMe Write Zeroes at the extents' own addresses
// where the record allows in-place zeroing, data writes otherwise; never the kernel's
// FALLOC_FL_WRITE_ZEROES or a punch and reallocation, which may leave unwritten extents.
// The range must lie inside the file (EINVAL otherwise: recycling never grows a file). On a
// copy-on-write filesystem the data writes land in new extents: `report` says so.
status rezero(int fd, std::uint64_t offset, std::uint64_t length, const preallocate_options& options = {},
              preallocate_report* report = nullptr);

// Makes [offset, offset + length) of the file or block device FD written zeroes, as
// preallocate() does on a descriptor (files grow to offset + length, never shrink).
status zero_range(int fd, std::uint64_t offset, std::uint64_t length, const preallocate_options& options = {},
                  preallocate_report* report = nullptr);

// Checks that [offset, offset + length) holds no hole or unwritten extent (verify_mode::extents)
// and, with verify_mode::data, reads back as zeroes. The report's `verified` and
// `verify_detail` say what was found; a failed check is an error naming the first bad spot.
// A range ending past the end of the file or device is an error. Zeroes read back do not
// prove a regular file's range by themselves (holes and unwritten extents read as zeroes):
// without an extent map (tmpfs), `verified` stays unset, "not proven". On a failure, PARTIAL
// (when given) holds what was found: `verified` false and `verify_detail` for a failed check,
// `verified` unset for an error that stopped it (open, read).
result<preallocate_report> verify(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                  verify_mode mode, preallocate_report* partial = nullptr);

// What the addresses FIEMAP gives for a file's extents are.
enum class extent_addresses {
    device,         // byte offsets on the record's one `device` (partition-relative): physical, lba
    fs_logical,     // the filesystem's own logical addresses (btrfs: its chunk tree maps them to
                    // its devices; a block may be on several, at other offsets): logical
    unknown,        // the device under the file is not known, or there are several: neither
};

// One extent of a file's map, with the device addresses passthrough would use.
struct mapped_extent {
    std::uint64_t offset = 0, length = 0;
    std::string kind;                       // written, unwritten, hole, shared, encoded, ...
    std::uint32_t flags = 0;                // FIEMAP_EXTENT_* as the kernel gave them
    // Bytes from the start of the fs's block device; only where `addresses` is device.
    std::optional<std::uint64_t> physical;
    // FIEMAP's address where it is the filesystem's own, not a device offset (fs_logical).
    std::optional<std::uint64_t> logical;
    std::optional<std::uint64_t> lba;       // namespace/disk LBA (partition start added)
    std::uint64_t nlb = 0;                  // blocks
    std::optional<bool> dealloc_aligned;    // on NPDA alignment and an NPDG multiple (NVMe only)
    extent_addresses addresses = extent_addresses::device;  // the same for every extent of a file
};
// The extent map of [offset, offset + length) of a file (length 0: to the end of the file;
// a range past the end is EINVAL), in one vector: memory grows with the number of extents (about 100 bytes each). For files
// that may have many, use the streaming form below.
result<std::vector<mapped_extent>> map_extents(const std::string& path, std::uint64_t offset, std::uint64_t length);
// The same map, streamed: calls `on_extent` once per extent, in file order, as FIEMAP hands
// them out in batches of 512, so memory stays bounded whatever the number of extents (a
// 1,048,576-extent file maps in the same few MiB as a small one). A callback that returns an
// error stops the walk, and that error is returned; a FIEMAP failure part-way is returned
// after the extents before it were handed out (the error names the range not mapped).
status map_extents(const std::string& path, std::uint64_t offset, std::uint64_t length,
                   const std::function<status(const mapped_extent&)>& on_extent);

// ---------------------------------------------------------------------------
// Durable writer (wz::writer): O_DSYNC semantics without flushes that do nothing
// ---------------------------------------------------------------------------

enum class durability_mode {
    automatic,  // pick from the capability record
    through,    // write-through device, range written: O_DIRECT writes, no flush, no FUA
    fua,        // FUA per write: NVMe Write with FUA (raw namespace) or RWF_DSYNC on O_DIRECT
    flush,      // O_DIRECT writes + one flush shared by every write completed before it
    dsync,      // plain O_DSYNC | O_DIRECT, the baseline
};
[[nodiscard]] const char* to_string(durability_mode m) noexcept;

// How the writer's io_uring waits for completions (asynchronous API). On the psync engine
// (wz::current_io_engine) the mode is checked at open as on io_uring (poll needs poll queues)
// and then ignored: its threads block in pwrite and complete() on a condition variable.
enum class completion_mode {
    interrupt,  // block in io_uring_enter until a completion arrives (the device's interrupt)
    poll,       // IORING_SETUP_IOPOLL: the kernel polls the device's poll queues (needs
                // queue/io_poll = 1, e.g. nvme.poll_queues > 0); flushes are then synchronous
    adaptive,   // blocking waits while the load is light; busy-reaping while it is heavy
};
[[nodiscard]] const char* to_string(completion_mode m) noexcept;

// Adaptive completion: after a blocking wait returns, keep reaping without waiting in the
// kernel: while in-flight >= high_watermark spin on the completion queue; when it is empty,
// sleep `interval` and look again; go back to blocking waits after 3 consecutive empty
// looks with in-flight < low_watermark, or after max_loops looks. Validated at open:
// every value non-zero and low_watermark < high_watermark < queue_depth.
struct completion_options {
    completion_mode mode = completion_mode::interrupt;
    unsigned high_watermark = 32;
    unsigned low_watermark = 3;
    std::chrono::microseconds interval{30};
    unsigned max_loops = 1000;
};

struct writer_options {
    durability_mode mode = durability_mode::automatic;
    // Forcing `through` on a device whose cache is write-back loses durability; refused
    // unless this is set.
    bool allow_unsafe_through = false;
    // Write to a block device that carries a filesystem signature or partition table (found
    // with libblkid, as blkdiscard(8) does); refused (EBUSY) unless this is set. Mounted
    // devices, whole disks with a mounted partition and devices another process holds
    // exclusively are refused whatever this says.
    bool force = false;
    // Asynchronous API: the io_uring's size, and the most writes submit() keeps in flight.
    unsigned queue_depth = 128;
    completion_options completion;
    // Mode `through` rests on a write-through cache that can turn write-back under the writer
    // (Set Features FID 06h, a vendor tool, a controller reset): before acknowledging a write,
    // the writer re-reads the cache (wz::write_cache) when its answer is older than this (0:
    // before every acknowledgement). On a cache no longer write-through (or unknown) it moves
    // to fua or flush, and one flush covers every write it acknowledged before. Not with
    // allow_unsafe_through, which stays in `through` whatever the cache does.
    std::chrono::nanoseconds cache_max_age = default_cache_max_age;
};

struct writer_stats {
    std::uint64_t writes = 0, bytes = 0;
    std::uint64_t fua_writes = 0;  // writes sent with FUA (or RWF_DSYNC in fua mode)
    std::uint64_t flushes = 0;     // flushes this writer issued (fdatasync or NVMe Flush)
    // Flush mode on a file: writes with no other in flight, sent as RWF_DSYNC (the filesystem's
    // write and flush, as O_DSYNC) rather than followed by a flush of the writer's own.
    std::uint64_t dsync_writes = 0;
    double p50_us = 0, p99_us = 0, p999_us = 0;  // call (or submit) to durable
    // Asynchronous API: how complete() waited.
    std::uint64_t blocking_waits = 0;  // io_uring_enter calls that slept (or polled, IOPOLL)
    std::uint64_t busy_looks = 0;      // adaptive: looks at the completion queue without a wait
    std::uint64_t idle_sleeps = 0;     // adaptive: `interval` sleeps
    std::string passthrough;           // "uring_cmd" or "ioctl" once NVMe commands were sent
    // The asynchronous API's engine: "io_uring" or "psync" (before the first submit(), the one
    // it would use: the process's, wz::current_io_engine()). Under psync the completion mode
    // means nothing (its threads block in pwrite; complete() waits count as blocking_waits)
    // and NVMe commands go through the ioctl.
    std::string engine;
    // Mode `through`: re-reads of the write cache this writer made (Get Features FID 06h or
    // sysfs; an answer another user of the device read fresh enough is not counted), and the
    // moves out of `through` it made because the cache was no longer write-through.
    std::uint64_t cache_rereads = 0;
    std::uint64_t mode_changes = 0;
};

// One write finished by writer::complete(): durable in the writer's mode, or failed.
struct writer_completion {
    std::uint64_t user_data = 0;
    std::size_t bytes = 0;            // on success, the write's length
    std::optional<error_info> error;  // names the path, operation and range
};

// A durable writer over [offset, offset + length) of a file or block device: every write
// returns only once it is durable in the chosen mode. Thread-safe: concurrent writers in
// `flush` mode share flushes (group commit). Writes must be aligned for O_DIRECT (the
// record's DIO alignment) and lie inside the range; anything else is an error, never a
// silent loss of durability.
class writer {
public:
    static result<writer> open(const std::string& path, std::uint64_t offset, std::uint64_t length,
                               const writer_options& options = {});
    // On an open descriptor (O_WRONLY or O_RDWR) of a file or block device: the writer reopens
    // it through /proc/self/fd with the flags its mode needs; `fd` stays the caller's. `path`
    // is for messages.
    static result<writer> open(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                               const writer_options& options = {});
    writer(writer&&) noexcept;
    writer& operator=(writer&&) noexcept;
    writer(const writer&) = delete;
    writer& operator=(const writer&) = delete;
    ~writer();

    // Writes `len` bytes (aligned buffer, offset and length) at `offset`; durable on return.
    result<std::size_t> pwrite(const void* buf, std::size_t len, std::uint64_t offset);
    // The same for a vector: every segment aligned; all of it durable on return.
    result<std::size_t> pwritev(const ::iovec* iov, int iovcnt, std::uint64_t offset);

    // Asynchronous API, on the process's I/O engine (io_uring, or psync's thread pool; one
    // thread at a time; pwrite() may run alongside).
    // Queues one write; it is durable once complete() hands it back. EBUSY when
    // options.queue_depth writes are already in flight; the checks of pwrite() apply.
    status submit(const void* buf, std::size_t len, std::uint64_t offset, std::uint64_t user_data);
    // Waits (as options.completion says) until at least min_complete submitted writes are
    // durable or failed (capped at in_flight()), appends them to `out`, returns how many.
    // In flush mode a completed write waits for a flush that started after it completed;
    // one flush serves every write completed before it (group commit).
    result<std::size_t> complete(std::vector<writer_completion>& out, std::size_t min_complete = 1);
    [[nodiscard]] std::size_t in_flight() const noexcept;
    // The mode in use and why. Both change when a writer in `through` finds the write cache
    // no longer write-through (writer_options::cache_max_age): the reason then starts "moved
    // from through to". A reason returned stays valid until refresh(), however often it moves.
    [[nodiscard]] durability_mode mode() const noexcept;
    [[nodiscard]] const std::string& reason() const noexcept;
    [[nodiscard]] std::uint32_t alignment() const noexcept;
    [[nodiscard]] completion_mode completion() const noexcept;
    [[nodiscard]] writer_stats stats() const;
    // Re-reads the device's write cache (e.g. after Set Features FID 06h) and re-picks the
    // mode; a cache turned on never leaves the writer in `through`. The only way back into
    // `through` after a move out of it. Not concurrently with pwrite() on the same writer.
    status refresh();
    // Closes, returning the error a user of durable writes must see.
    status close();

    struct impl;

private:
    explicit writer(std::unique_ptr<impl> p);
    std::unique_ptr<impl> p_;
};

}  // namespace wz
