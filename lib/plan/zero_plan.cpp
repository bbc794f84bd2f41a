// SPDX-License-Identifier: MIT
#include "plan/zero_plan.hpp"

#include "plan/method_order.hpp"
#include "util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace wz::plan {

namespace {

std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }
std::uint64_t align_down(std::uint64_t v, std::uint64_t a) { return a <= 1 ? v : v / a * a; }

bool usable(const capabilities& caps, zero_method m) {
    auto it = caps.methods.find(m);
    return it != caps.methods.end() && it->second.usable.value_or(false);
}
std::string why(const capabilities& caps, zero_method m) {
    auto it = caps.methods.find(m);
    return it != caps.methods.end() ? it->second.reason : std::string("not assessed");
}

// A request (a named method, in-place zeroing required) that cannot be met here.
error_info not_supported(const capabilities& caps, std::string what,
                         error_reason reason = error_reason::method_unavailable) {
    return make_error_msg(ENOTSUP, reason, fmt::format("{}: {}", caps.path, what));
}

// Adjacent operations of the same data-write kind merge into one: the executor chunks them.
void merge_writes(std::vector<operation>& ops) {
    std::vector<operation> out;
    for (auto& op : ops) {
        if (!out.empty() && (op.kind == op_kind::write_direct || op.kind == op_kind::write_buffered) &&
            out.back().kind == op.kind && out.back().offset + out.back().length == op.offset &&
            out.back().reason == op.reason) {
            out.back().length += op.length;
            continue;
        }
        out.push_back(std::move(op));
    }
    ops = std::move(out);
}

std::uint32_t dio_align(const capabilities& caps) {
    if (!caps.dio) {
        return 0;
    }
    return std::max(caps.dio->offset_align, 1U);
}

}  // namespace

const char* to_string(op_kind k) noexcept {
    switch (k) {
    case op_kind::kernel_write_zeroes: return "kernel";
    case op_kind::allocate: return "allocate";
    case op_kind::nvme_write_zeroes: return "nvme";
    case op_kind::zeroout: return "zeroout";
    case op_kind::write_direct: return "write";
    case op_kind::write_buffered: return "write-buffered";
    }
    return "?";
}

zero_method method_of(const operation& op) noexcept {
    switch (op.kind) {
    case op_kind::kernel_write_zeroes: return zero_method::kernel;
    case op_kind::nvme_write_zeroes: return op.deac ? zero_method::nvme_deac : zero_method::nvme;
    case op_kind::zeroout: return zero_method::zeroout;
    case op_kind::allocate:
    case op_kind::write_direct:
    case op_kind::write_buffered: return zero_method::write;
    }
    return zero_method::write;
}

nvme_geometry geometry_from(const capabilities& caps) {
    nvme_geometry g;
    if (!caps.nvme) {
        return g;
    }
    const nvme_info& n = *caps.nvme;
    g.lba_bytes = n.lba_bytes != 0 ? n.lba_bytes : 512;
    g.partition_start_bytes = caps.device ? caps.device->partition_start_bytes : 0;
    g.nsze_lba = n.nsze_lba;
    std::uint64_t max_nlb = 65536;  // NLB is 16 bits, 0's based
    // WZSL bounds Write Zeroes (NVM command set spec, Identify Controller NVM); where its
    // unit (CAP.MPSMIN) is unknown, the kernel's write_zeroes_max_bytes, derived from it,
    // stands in.
    if (n.wzsl_max_bytes && *n.wzsl_max_bytes != 0) {
        max_nlb = std::min<std::uint64_t>(max_nlb, *n.wzsl_max_bytes / g.lba_bytes);
    } else if ((!n.wzsl_max_bytes || n.wzsl.value_or(0) != 0) && caps.write_zeroes.max_bytes != 0) {
        max_nlb = std::min<std::uint64_t>(max_nlb, caps.write_zeroes.max_bytes / g.lba_bytes);
    }
    g.max_nlb = static_cast<std::uint32_t>(std::max<std::uint64_t>(max_nlb, 1));
    g.npdg_bytes = n.npdg_bytes;
    g.npda_bytes = n.npda_bytes;
    g.deac = n.deac.value_or(false);
    return g;
}

dealloc_blocks dealloc_blocks_of(const nvme_geometry& g) {
    dealloc_blocks b;
    b.granularity = std::max<std::uint64_t>(g.npdg_bytes.value_or(0) / g.lba_bytes, 1);
    b.alignment = std::max<std::uint64_t>(g.npda_bytes.value_or(0) / g.lba_bytes, 1);
    return b;
}

bool dealloc_aligned(const nvme_geometry& g, std::uint64_t slba, std::uint64_t nlb) {
    const dealloc_blocks b = dealloc_blocks_of(g);
    return slba % b.alignment == 0 && nlb % b.granularity == 0;
}

void split_nvme_range(const nvme_geometry& g, std::uint64_t slba, std::uint64_t nlb_total, std::uint64_t offset,
                      const std::string& reason, std::vector<operation>& out) {
    const std::uint64_t end = slba + nlb_total;
    auto emit = [&](std::uint64_t from, std::uint64_t to, bool deac, std::uint64_t chunk, const std::string& why) {
        for (std::uint64_t lba = from; lba < to;) {
            std::uint64_t n = std::min(chunk, to - lba);
            operation op;
            op.kind = op_kind::nvme_write_zeroes;
            op.slba = lba;
            op.nlb = static_cast<std::uint32_t>(n);
            op.deac = deac;
            op.offset = offset + (lba - slba) * g.lba_bytes;
            op.length = n * g.lba_bytes;
            op.reason = why;
            out.push_back(std::move(op));
            lba += n;
        }
    };
    if (!g.deac || nlb_total == 0) {
        emit(slba, end, false, g.max_nlb, reason);
        return;
    }
    const dealloc_blocks blocks = dealloc_blocks_of(g);
    const std::uint64_t gran = blocks.granularity;
    const std::uint64_t align = blocks.alignment;
    const std::uint64_t deac_chunk = align_down(g.max_nlb, gran);
    const std::uint64_t mid_start = align_up(slba, align);
    const std::uint64_t mid_end = mid_start < end ? mid_start + align_down(end - mid_start, gran) : mid_start;
    if (deac_chunk == 0 || mid_start >= mid_end) {
        emit(slba, end, false, g.max_nlb,
             reason + (deac_chunk == 0 ? "; deallocate granularity exceeds the largest command: no DEAC"
                                       : "; no deallocation-aligned span: no DEAC"));
        return;
    }
    emit(slba, mid_start, false, g.max_nlb, reason + "; head before the deallocate alignment: no DEAC");
    emit(mid_start, mid_end, true, deac_chunk, reason + "; aligned to NPDA/NPDG: DEAC");
    emit(mid_end, end, false, g.max_nlb, reason + "; tail after the last deallocate granule: no DEAC");
}

void split_write_range(std::uint64_t offset, std::uint64_t length, std::uint32_t align, const std::string& reason,
                       std::vector<operation>& out) {
    if (length == 0) {
        return;
    }
    const std::uint64_t end = offset + length;
    auto emit = [&](op_kind k, std::uint64_t from, std::uint64_t to, const std::string& why) {
        if (from < to) {
            operation op;
            op.kind = k;
            op.offset = from;
            op.length = to - from;
            op.reason = why;
            out.push_back(std::move(op));
        }
    };
    if (align == 0) {
        emit(op_kind::write_buffered, offset, end, reason + " (no O_DIRECT here)");
        return;
    }
    const std::uint64_t mid_start = std::min(align_up(offset, align), end);
    const std::uint64_t mid_end = std::max(align_down(end, align), mid_start);
    emit(op_kind::write_buffered, offset, mid_start, reason + " (head not aligned for O_DIRECT)");
    emit(op_kind::write_direct, mid_start, mid_end, reason);
    emit(op_kind::write_buffered, mid_end, end, reason + " (tail not aligned for O_DIRECT)");
}

edge_split split_range_edges(std::uint64_t offset, std::uint64_t length, std::uint32_t page_bytes) {
    edge_split s;
    const std::uint64_t end = offset + length;
    s.mid_start = std::min(align_up(offset, page_bytes), end);
    s.mid_end = std::max(align_down(end, page_bytes), s.mid_start);
    auto edge = [](std::uint64_t from, std::uint64_t to, const char* where, std::vector<operation>& out) {
        if (from < to) {
            operation op;
            op.kind = op_kind::write_buffered;
            op.offset = from;
            op.length = to - from;
            op.reason = fmt::format("partial page at the {}: through the page cache (the page also holds bytes "
                                    "outside the range)",
                                    where);
            out.push_back(std::move(op));
        }
    };
    edge(offset, s.mid_start, "head", s.head);
    edge(s.mid_end, end, "tail", s.tail);
    return s;
}

result<plan_result> plan_block_device(const capabilities& caps, const request& req) {
    plan_result r;
    if (req.offset + req.length > caps.size_bytes || req.offset + req.length < req.offset) {
        return make_error_msg(EINVAL, fmt::format("zero {} [offset {}, length {}]: range ends past the end of the "
                                                  "device ({} bytes)",
                                                  caps.path, req.offset, req.length, caps.size_bytes));
    }
    const std::uint32_t lbs = caps.device && caps.device->logical_block_size != 0 ? caps.device->logical_block_size
                                                                                 : 512;
    // The device's own page cache may hold another process's dirty page at either end of
    // the range: partial pages (and sub-block edges, where a logical block is larger than a
    // page) only through the cache, device commands and O_DIRECT on the whole-page middle.
    const edge_split split = split_range_edges(req.offset, req.length, std::max(lbs, req.page_bytes));
    const std::uint64_t mid_start = split.mid_start;
    const std::uint64_t mid_end = split.mid_end;
    auto edges = [&](std::vector<operation>& ops) {
        ops.insert(ops.begin(), split.head.begin(), split.head.end());
        ops.insert(ops.end(), split.tail.begin(), split.tail.end());
    };

    // The requested method first; then, or for automatic, the block device's order.
    std::vector<method_request> order;
    if (req.method != method_request::automatic) {
        order.push_back(req.method);
    }
    if (req.method == method_request::automatic || req.fallback) {
        for (method_request m : block_device_requests()) {
            if (m != req.method) {
                order.push_back(m);
            }
        }
    }
    for (method_request m : order) {
        switch (m) {
        case method_request::nvme: {
            const bool deac_ok = usable(caps, zero_method::nvme_deac);
            if (!deac_ok && !usable(caps, zero_method::nvme)) {
                r.notes.push_back("nvme: " + why(caps, zero_method::nvme));
                continue;
            }
            nvme_geometry g = geometry_from(caps);
            g.deac = deac_ok;
            if (!deac_ok) {
                r.notes.push_back("nvme_deac: " + why(caps, zero_method::nvme_deac));
            }
            if (mid_end > mid_start) {
                const std::uint64_t slba = (mid_start + g.partition_start_bytes) / g.lba_bytes;
                split_nvme_range(g, slba, (mid_end - mid_start) / g.lba_bytes, mid_start,
                                 fmt::format("NVMe Write Zeroes through {}", caps.nvme->passthrough_device), r.operations);
            }
            edges(r.operations);
            return r;
        }
        case method_request::kernel:
            if (!usable(caps, zero_method::kernel)) {
                r.notes.push_back("kernel: " + why(caps, zero_method::kernel));
                continue;
            }
            if (mid_end > mid_start) {
                r.operations.push_back({op_kind::kernel_write_zeroes, mid_start, mid_end - mid_start, 0, 0, false,
                                        "fallocate(FALLOC_FL_WRITE_ZEROES) on the block device"});
            }
            edges(r.operations);
            return r;
        case method_request::zeroout:
            if (mid_end > mid_start) {
                r.operations.push_back({op_kind::zeroout, mid_start, mid_end - mid_start, 0, 0, false,
                                        why(caps, zero_method::zeroout)});
            }
            edges(r.operations);
            return r;
        case method_request::write:
            split_write_range(mid_start, mid_end - mid_start, lbs, "data writes of zeroes", r.operations);
            edges(r.operations);
            return r;
        case method_request::automatic: break;
        }
    }
    const auto named = named_method(req.method);
    return not_supported(caps, fmt::format("method {} is not supported here: {}", named ? to_string(*named) : "auto",
                                           r.notes.empty() ? std::string("no usable method") : r.notes.back()));
}

result<file_first_stage> plan_file_first_stage(const capabilities& caps, const request& req) {
    file_first_stage s;
    if (req.method == method_request::zeroout && !req.fallback) {
        return not_supported(caps, "method zeroout is not supported for regular files (block devices only)");
    }
    auto it = caps.methods.find(zero_method::kernel);
    // Tri-state without std::optional<bool>: g++ 12 warns (maybe-uninitialized) on a copy.
    const bool k_known = it != caps.methods.end() && it->second.usable.has_value();
    const bool k_usable = k_known && *it->second.usable;
    const bool wants_kernel = req.method == method_request::automatic || req.method == method_request::kernel ||
                              (req.fallback && req.method == method_request::zeroout);
    if (!wants_kernel) {
        s.reason = "method chosen: skip FALLOC_FL_WRITE_ZEROES";
        return s;
    }
    if (!k_known || k_usable) {
        // Unknown support is tried: the call itself is the only complete probe, and a
        // refusal (EOPNOTSUPP/EINVAL) costs nothing and is remembered.
        s.try_kernel = true;
        s.reason = k_known ? why(caps, zero_method::kernel)
                           : "support unknown (" + why(caps, zero_method::kernel) + "): trying";
        return s;
    }
    if (req.method == method_request::kernel && !req.fallback) {
        return not_supported(caps, "method kernel is not supported here: " + why(caps, zero_method::kernel));
    }
    s.reason = "kernel: " + why(caps, zero_method::kernel);
    return s;
}

file_allocation plan_file_allocation(const capabilities& caps, const request& req) {
    if (caps.fs && caps.fs->fallocate == false) {
        return {false, fmt::format("allocate: {}: data writes allocate [offset {}, length {}]",
                                   caps.fs->fallocate_reason, req.offset, req.length)};
    }
    if (caps.fs && !caps.fs->fallocate) {
        return {true, "fallocate(0): allocate the range (unwritten extents); support unknown, a refusal falls back "
                      "to data writes"};
    }
    return {true, "fallocate(0): allocate the range (unwritten extents)"};
}

result<std::string> allocation_refused(const capabilities& caps, const request& req, const std::string& error_text) {
    if (req.method == method_request::nvme && !req.fallback) {
        return not_supported(caps, fmt::format("method nvme is not supported here: {}; the range can only be "
                                               "allocated by data writes",
                                               error_text));
    }
    return fmt::format("allocate: {}: data writes allocate the range instead", error_text);
}

namespace {

// Why an extent of this kind is never zeroed in place, whatever the device can do; nullptr
// where it may be (written with a device address) or where in place is not the question (a
// hole or unwritten extent holds no data: data writes fill it, as they always have).
const char* never_in_place(const extent::extent& e) noexcept {
    switch (e.type) {
    case extent::kind::written:
        return e.physical ? nullptr : "the filesystem gives no device address for it";
    case extent::kind::unwritten:
    case extent::kind::hole: return nullptr;
    case extent::kind::shared:
        return "its blocks are shared with another file or a snapshot (reflink, dedupe): a write would copy "
               "it to new blocks, and a device command would zero the other file's data too";
    case extent::kind::encoded:
        return "its data is stored encoded (compressed): its blocks do not hold the file's bytes one to one";
    case extent::kind::encrypted:
        return "its data is encrypted on the device: zeroes written there would not read back as zeroes";
    case extent::kind::inline_data:
        return "its data lives inside filesystem metadata (inline, tail-packed or not block-aligned)";
    case extent::kind::delalloc: return "its blocks are not allocated yet (delayed allocation)";
    case extent::kind::unknown: return "the filesystem does not say where its data is";
    }
    return "unrecognized extent type";
}

}  // namespace

status check_in_place_required(const capabilities& caps, const request& req, std::span<const extent::extent> extents,
                               bool written_needs_nvme) {
    if (req.in_place != in_place_mode::require) {
        return {};
    }
    const bool nvme_ok = usable(caps, zero_method::nvme_deac) || usable(caps, zero_method::nvme);
    const bool nvme_allowed = may_zero_in_place(caps, req);
    const edge_split split = split_range_edges(req.offset, req.length, req.page_bytes);
    for (const auto& e : extents) {
        if (const char* why_not = never_in_place(e)) {
            return not_supported(caps, fmt::format("in-place zeroing required, but the {} extent at [offset {}, length "
                                                   "{}] cannot be zeroed in place: {}",
                                                   extent::to_string(e.type), e.offset, e.length, why_not));
        }
        // A written extent's whole-page middle goes to the device; the partial pages at the
        // range's ends are written through the page cache, over the same blocks.
        const std::uint64_t from = std::max(e.offset, split.mid_start);
        const std::uint64_t to = std::min(e.offset + e.length, split.mid_end);
        if (written_needs_nvme && e.type == extent::kind::written && from < to && !nvme_allowed) {
            return not_supported(caps,
                                 fmt::format("in-place zeroing required, but the written extent at offset {} "
                                             "cannot be zeroed in place: {}",
                                             from, nvme_ok ? "the requested method never zeroes in place"
                                                           : why(caps, zero_method::nvme)),
                                 nvme_ok ? error_reason::in_place_excluded : error_reason::method_unavailable);
        }
    }
    return {};
}

bool may_zero_in_place(const capabilities& caps, const request& req) {
    const bool nvme_ok = usable(caps, zero_method::nvme_deac) || usable(caps, zero_method::nvme);
    return nvme_ok && req.in_place != in_place_mode::never &&
           (req.method == method_request::automatic || req.method == method_request::nvme);
}

result<plan_result> plan_file_extents(const capabilities& caps, const request& req,
                                      std::span<const extent::extent> extents) {
    plan_result r;
    const bool nvme_ok = usable(caps, zero_method::nvme_deac) || usable(caps, zero_method::nvme);
    const bool nvme_allowed = may_zero_in_place(caps, req);
    if (req.method == method_request::nvme && !nvme_ok && !req.fallback) {
        return not_supported(caps, "method nvme is not supported here: " + why(caps, zero_method::nvme));
    }
    if (!nvme_ok) {
        r.notes.push_back("nvme: " + why(caps, zero_method::nvme));
    }
    // The executor checks the whole range before any I/O; this holds the same rule for the
    // map as it is now, in case the file changed in between.
    if (auto s = check_in_place_required(caps, req, extents, true); !s.ok()) {
        return std::move(s).error();
    }
    nvme_geometry g = geometry_from(caps);
    g.deac = usable(caps, zero_method::nvme_deac);
    const std::uint32_t align = dio_align(caps);
    // Partial pages at the ends: through the page cache, whatever the extents (see
    // split_range_edges); the extents are planned over the whole-page middle only.
    const edge_split split = split_range_edges(req.offset, req.length, req.page_bytes);
    r.operations = split.head;
    std::uint64_t expect = req.offset;
    for (const auto& whole : extents) {
        if (whole.offset != expect) {
            return make_error_msg(EINVAL, fmt::format("plan {}: extent map does not cover [offset {}, length {}] "
                                                      "(gap at {})",
                                                      caps.path, req.offset, req.length, expect));
        }
        expect = whole.offset + whole.length;
        const std::uint64_t from = std::max(whole.offset, split.mid_start);
        const std::uint64_t to = std::min(whole.offset + whole.length, split.mid_end);
        if (from >= to) {
            continue;  // inside an edge page
        }
        extent::extent e = whole;
        e.offset = from;
        e.length = to - from;
        if (e.physical) {
            *e.physical += from - whole.offset;
        }
        const bool written = e.type == extent::kind::written && e.physical;
        if (written && nvme_allowed) {
            // The extent's LBA-aligned middle in place; a clipped, unaligned edge by writes.
            const std::uint64_t lba = g.lba_bytes;
            const std::uint64_t dev_start = *e.physical + g.partition_start_bytes;
            const std::uint64_t head = (lba - dev_start % lba) % lba;
            const std::uint64_t body = e.length > head ? align_down(e.length - head, lba) : 0;
            if (body == 0) {
                split_write_range(e.offset, e.length, align, "written extent smaller than a logical block",
                                  r.operations);
                continue;
            }
            split_write_range(e.offset, head, align, "written extent: partial logical block", r.operations);
            split_nvme_range(g, (dev_start + head) / lba, body / lba, e.offset + head,
                             fmt::format("written extent in place through {}", caps.nvme->passthrough_device), r.operations);
            split_write_range(e.offset + head + body, e.length - head - body, align,
                              "written extent: partial logical block", r.operations);
            continue;
        }
        if (!written && req.method == method_request::nvme && !req.fallback) {
            return not_supported(caps, fmt::format("method nvme: the {} extent at offset {} must be converted by "
                                                   "data writes",
                                                   extent::to_string(e.type), e.offset));
        }
        std::string reason = e.type == extent::kind::written  ? "written extent: data writes"
                             : e.type == extent::kind::unwritten || e.type == extent::kind::hole
                                 ? "unwritten extent or hole: data writes convert it"
                                 : fmt::format("{} extent: never zeroed in place, data writes",
                                               extent::to_string(e.type));
        split_write_range(e.offset, e.length, align, reason, r.operations);
    }
    if (expect != req.offset + req.length) {
        return make_error_msg(EINVAL, fmt::format("plan {}: extent map ends at {}, range ends at {}", caps.path, expect,
                                                  req.offset + req.length));
    }
    r.operations.insert(r.operations.end(), split.tail.begin(), split.tail.end());
    merge_writes(r.operations);
    return r;
}

queue_choice choose_queue_depth(const capabilities& caps, unsigned requested) {
    if (requested != 0) {
        return {requested, fmt::format("queue depth {}: as requested", requested)};
    }
    if (caps.device && caps.device->kind == "loop" && caps.device->loop_direct_io == false) {
        return {2, fmt::format("queue depth 2: {} does buffered I/O to its backing file (one worker copies each "
                               "request into the page cache; more in flight only adds dirty pages)",
                               caps.device->disk)};
    }
    return {32, "queue depth 32 (default)"};
}

}  // namespace wz::plan
