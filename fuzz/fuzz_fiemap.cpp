// SPDX-License-Identifier: MIT
// The FIEMAP batch decoder (extent::detail::apply_fiemap_batch): any kernel answer (extents
// unsorted, overlapping, straddling the request, of length 0, any flags) for a request
// [cursor, end). Properties: what comes out lies in [cursor, end), in order, without gap or
// overlap from the old cursor to the new one, no extent empty; "done" means the new cursor
// is `end`, "stalled" that nothing came out of a full answer, "more" that the cursor moved;
// each extent's kind is classify() of its flags (holes have none) and its device address
// is that of an input extent shifted by the same amount as the file offset, inside it, and
// ends inside 64 bits; it is missing only where the flags or such a wrap say so.

#include "check.hpp"

#include "extent/fiemap.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <vector>

namespace {

using namespace wz::extent;

constexpr std::uint32_t non_linear = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED |
                                     FIEMAP_EXTENT_DATA_INLINE;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    std::uint64_t cursor = in.ConsumeIntegral<std::uint64_t>();
    const std::uint64_t end = in.ConsumeIntegralInRange<std::uint64_t>(cursor, UINT64_MAX);
    const bool full = in.ConsumeBool();
    std::vector<fiemap_extent> answer;
    while (in.remaining_bytes() > 0 && answer.size() < 512) {
        fiemap_extent fe{};
        // Near the cursor most of the time, so that extents meet the range.
        if (in.ConsumeBool()) {
            const std::uint64_t ahead = in.ConsumeIntegral<std::uint16_t>() * 512ULL;
            fe.fe_logical = cursor + ahead - in.ConsumeIntegral<std::uint8_t>() * 512ULL;
            fe.fe_length = in.ConsumeIntegral<std::uint16_t>() * 512ULL;
        } else {
            fe.fe_logical = in.ConsumeIntegral<std::uint64_t>();
            fe.fe_length = in.ConsumeIntegral<std::uint64_t>();
        }
        fe.fe_physical = in.ConsumeIntegral<std::uint64_t>();
        fe.fe_flags = in.ConsumeIntegral<std::uint32_t>();
        answer.push_back(fe);
    }

    const std::uint64_t start = cursor;
    std::vector<extent> out;
    const auto outcome = detail::apply_fiemap_batch(answer, full, cursor, end, out);
    FUZZ_CHECK(cursor >= start && cursor <= end);
    std::uint64_t at = start;
    for (const extent& e : out) {
        FUZZ_CHECK(e.offset == at && e.length > 0 && e.length <= end - at);
        at += e.length;
        if (e.type == kind::hole) {
            FUZZ_CHECK(e.flags == 0 && !e.physical);
            continue;
        }
        FUZZ_CHECK(e.type == classify(e.flags));
        FUZZ_CHECK(!e.physical || (e.flags & non_linear) == 0);
        // Some input extent with these flags covers [offset, offset + length).
        bool from_input = false;
        for (const fiemap_extent& fe : answer) {
            const std::uint64_t logical = fe.fe_logical;
            if (fe.fe_flags != e.flags || logical > e.offset || fe.fe_length == 0 ||
                e.offset + e.length - logical > fe.fe_length) {
                continue;
            }
            if (!e.physical) {
                // Only non-linear flags, or a device range past 2^64, take the address away.
                const std::uint64_t delta = e.offset + e.length - logical;
                from_input = (fe.fe_flags & non_linear) != 0 || fe.fe_physical > UINT64_MAX - delta;
                if (from_input) {
                    break;
                }
                continue;
            }
            // The device range is the input's, shifted with the file offset; it does not wrap.
            if (*e.physical - fe.fe_physical == e.offset - logical && *e.physical >= fe.fe_physical &&
                *e.physical <= UINT64_MAX - e.length) {
                from_input = true;
                break;
            }
        }
        FUZZ_CHECK(from_input);
    }
    FUZZ_CHECK(at == cursor);
    switch (outcome) {
    case detail::batch_outcome::done: FUZZ_CHECK(cursor == end); break;
    case detail::batch_outcome::stalled: FUZZ_CHECK(full && cursor == start && out.empty()); break;
    case detail::batch_outcome::more: FUZZ_CHECK(full && cursor > start && cursor < end); break;
    }
    // Classification: the most restrictive flag wins (fiemap.hpp).
    const auto flags = in.ConsumeIntegral<std::uint32_t>();
    const kind k = classify(flags);
    if ((flags & FIEMAP_EXTENT_DELALLOC) != 0) {
        FUZZ_CHECK(k == kind::delalloc);
    } else if ((flags & FIEMAP_EXTENT_UNKNOWN) != 0) {
        FUZZ_CHECK(k == kind::unknown);
    } else if ((flags & (FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_SHARED)) == flags) {
        FUZZ_CHECK(k == ((flags & FIEMAP_EXTENT_SHARED) ? kind::shared
                         : (flags & FIEMAP_EXTENT_UNWRITTEN) ? kind::unwritten
                                                              : kind::written));
    }
    return 0;
}
