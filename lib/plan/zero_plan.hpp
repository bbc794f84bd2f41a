// SPDX-License-Identifier: MIT
#pragma once

// The zeroing planner: capabilities + a byte range (+ the file's extents) in, an ordered
// list of operations out, each with its reason. Pure: no I/O, so that every rule of
// the method chain for alloc (docs/design.md) is unit-tested without devices.

#include "extent/fiemap.hpp"

#include <wzero/wzero.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace wz::plan {

enum class op_kind {
    kernel_write_zeroes,  // fallocate(FALLOC_FL_WRITE_ZEROES) over the byte range
    allocate,             // fallocate(0): allocate (as unwritten extents) before zeroing
    nvme_write_zeroes,    // NVMe Write Zeroes over [slba, slba + nlb), DEAC or not
    zeroout,              // BLKZEROOUT over the byte range of a block device
    write_direct,         // O_DIRECT writes of zeroes (range aligned to the DIO alignment)
    write_buffered,       // buffered writes of zeroes (unaligned head/tail, or no O_DIRECT)
};
const char* to_string(op_kind k) noexcept;

struct operation {
    op_kind kind = op_kind::write_buffered;
    std::uint64_t offset = 0;  // file or block-device bytes
    std::uint64_t length = 0;
    // nvme_write_zeroes: namespace LBAs (partition start already added)
    std::uint64_t slba = 0;
    std::uint32_t nlb = 0;  // blocks, 1..65536 (NLB is a 16-bit 0's based field)
    bool deac = false;
    std::string reason;
    friend bool operator==(const operation&, const operation&) = default;
};

// Which zeroing method the report attributes an operation's bytes to.
zero_method method_of(const operation& op) noexcept;

struct request {
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    method_request method = method_request::automatic;
    bool fallback = true;
    in_place_mode in_place = in_place_mode::automatic;
    // The page cache's page size (sysconf(_SC_PAGESIZE), passed in to keep the planner pure).
    // A partial page at either end of the range also holds bytes outside it, which another
    // process may be writing through the page cache: such a page is only ever written through
    // the cache, never by O_DIRECT or a device command (see split_range_edges).
    std::uint32_t page_bytes = 4096;
};

// Device limits for NVMe Write Zeroes commands.
struct nvme_geometry {
    std::uint32_t lba_bytes = 512;
    std::uint64_t partition_start_bytes = 0;
    std::uint64_t nsze_lba = 0;                 // namespace size (commands past it are a bug)
    std::uint32_t max_nlb = 65536;              // min(65536, WZSL, transfer limits) in blocks
    std::optional<std::uint64_t> npdg_bytes;    // DEAC granularity (nullopt: not stated)
    std::optional<std::uint64_t> npda_bytes;    // DEAC alignment
    bool deac = false;                          // DEAC may be set at all
};
nvme_geometry geometry_from(const capabilities& caps);

// The deallocation geometry in logical blocks, as split_nvme_range applies it: NPDG and NPDA
// over the LBA size, and one block where they are not stated (or finer than a block).
struct dealloc_blocks {
    std::uint64_t granularity = 1;
    std::uint64_t alignment = 1;
};
dealloc_blocks dealloc_blocks_of(const nvme_geometry& g);

// [slba, slba + nlb) starts on the deallocation alignment and is a whole number of granules:
// split_nvme_range would send all of it with DEAC (where DEAC is allowed at all; g.deac is
// not looked at here). What `wzero map` reports per extent as dealloc_aligned.
bool dealloc_aligned(const nvme_geometry& g, std::uint64_t slba, std::uint64_t nlb);

// Splits the namespace range [slba, slba + nlb_total) into Write Zeroes commands: DEAC only
// on the NPDA-aligned, NPDG-multiple middle (when deac is allowed and the geometry is
// stated), the unaligned head and tail without DEAC, every command at most max_nlb blocks
// (and DEAC commands a multiple of NPDG). Appends to `out`; `offset` is the byte address
// (file or device) that slba corresponds to, for the report.
void split_nvme_range(const nvme_geometry& g, std::uint64_t slba, std::uint64_t nlb_total, std::uint64_t offset,
                      const std::string& reason, std::vector<operation>& out);

// Splits a byte range for data writes: the middle aligned to `align` goes direct, the
// unaligned head and tail buffered. align == 0: everything buffered.
void split_write_range(std::uint64_t offset, std::uint64_t length, std::uint32_t align, const std::string& reason,
                       std::vector<operation>& out);

// The page-aligned middle of a range and the buffered writes of its partial edge pages.
// O_DIRECT into a page that holds a neighbour's dirty bytes makes the kernel fail to drop
// that page after the write ("Page cache invalidation failure on direct I/O", Linux 6.18
// ext4/xfs, with a neighbour writing beside the range) and set EIO on the whole file for every process; a device
// command (NVMe, BLKZEROOUT) under such a page can be undone when the neighbour's page, read
// before the zeroing landed, is written back after it. So the partial pages are zeroed through the page cache, where
// the neighbour's writes and ours meet in one page, and only [mid_start, mid_end) goes to
// O_DIRECT or the device. page_bytes 0 or 1: no edges.
struct edge_split {
    std::uint64_t mid_start = 0;
    std::uint64_t mid_end = 0;  // mid_start == mid_end: no whole page in the range
    std::vector<operation> head, tail;  // write_buffered, empty when already aligned
};
edge_split split_range_edges(std::uint64_t offset, std::uint64_t length, std::uint32_t page_bytes);

struct plan_result {
    std::vector<operation> operations;
    std::vector<std::string> notes;  // decisions that are not operations (CoW, fallbacks)
};

// Block device: the whole range by the best usable method (passthrough, kernel, BLKZEROOUT,
// writes), or by the requested one. An unusable requested method with fallback off is an
// error with ENOTSUP ("not supported").
result<plan_result> plan_block_device(const capabilities& caps, const request& req);

// Regular file, first stage: the kernel's FALLOC_FL_WRITE_ZEROES if it may be tried, else
// (or after it failed with EOPNOTSUPP) allocate with fallocate(0) and plan the extents.
struct file_first_stage {
    bool try_kernel = false;
    std::string reason;
};
result<file_first_stage> plan_file_first_stage(const capabilities& caps, const request& req);

// Regular file, between the stages: allocate the range with fallocate(2) mode 0, so that the
// extents exist and the file has its final size, unless the record says this file has no
// fallocate (ext2; ext3/ext4 files without extents): then no allocate step is planned and the
// range stays holes that the second stage's data writes allocate. Where the record does not
// know, the allocation is tried (see allocation_refused).
struct file_allocation {
    bool allocate = true;
    std::string reason;
};
file_allocation plan_file_allocation(const capabilities& caps, const request& req);

// fallocate(0) was refused with EOPNOTSUPP where the record did not know: the decision line
// for going on with data writes, which allocate. An error (ENOTSUP) only when the request
// cannot use data writes: --method nvme without fallback.
result<std::string> allocation_refused(const capabilities& caps, const request& req, const std::string& error_text);

// Whether plan_file_extents may send NVMe Write Zeroes to written extents in place: then the
// executor first writes back dirty pages and commits the mapping (fdatasync), which a run of
// data writes alone does not need.
bool may_zero_in_place(const capabilities& caps, const request& req);

// in_place_mode::require promises that nothing in the range is zeroed other than in place.
// Refused (ENOTSUP, naming the first such extent and why) when `extents` (a batch of the
// range's map, in file order) hold an extent nothing may zero in place: shared (reflink,
// dedupe, snapshots: a write copies it, a device command would zero the other owner's data),
// encoded, encrypted, inline, delayed-allocation or unknown, or written with no device
// address; wherever in the range it lies, partial edge pages included. With
// `written_needs_nvme`, also a written extent of the range's whole-page middle when NVMe Write
// Zeroes may not reach it (may_zero_in_place false): the rule plan_file_extents applies, which
// the executor leaves out while the kernel's FALLOC_FL_WRITE_ZEROES, which zeroes written
// extents where it works, is still to be tried. Holes and unwritten extents pass: they hold no
// data, and data writes fill them. Other in_place modes: always passes. Pure, so that the
// executor can hold it against the whole range's map before any I/O.
status check_in_place_required(const capabilities& caps, const request& req, std::span<const extent::extent> extents,
                               bool written_needs_nvme);

// Regular file, second stage, over the allocated range's extents (in file order, covering
// the range exactly): already-written extents on an in-place filesystem over an NVMe
// namespace -> NVMe Write Zeroes at their device LBAs (when allowed); everything else ->
// data writes, which also convert unwritten extents to written. Under in_place_mode::require,
// check_in_place_required with written_needs_nvme holds over `extents` first.
result<plan_result> plan_file_extents(const capabilities& caps, const request& req,
                                      std::span<const extent::extent> extents);

// Commands in flight. `requested` 0 is automatic: 32, except on a loop device doing buffered
// I/O to its backing file: one worker copies each request into the page cache in turn, so
// depth adds nothing there but dirty pages (measured on ext4 over such a loop device, 1 GiB:
// QD 32 1.23 s, QD 2 0.77 s, dd bs=2M 0.88 s). A requested depth is kept.
struct queue_choice {
    unsigned depth = 32;
    std::string reason;
};
queue_choice choose_queue_depth(const capabilities& caps, unsigned requested);

}  // namespace wz::plan
