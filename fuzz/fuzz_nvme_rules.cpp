// SPDX-License-Identifier: MIT
// The deallocate and Write Zeroes limit rules, from the Identify fields to the commands:
// decode_dlfeat, decode_dealloc (NPDG/NPDA, NPDGL/NPDAL, NPWG), limit_bytes (WZSL/MDTS),
// then plan::geometry_from and plan::split_nvme_range on a record built from them.
// Properties: DRB within its 3 bits and DEAC usable exactly for WZDS=1, DRB=001b; the
// geometry in whole logical blocks, within the field's range (NPDG+1 <= 2^16 blocks, NPDGL
// < 2^32 blocks) and only when OPTPERF says it is valid; a limit is MPSMIN * 2^exponent
// exactly or nothing; the commands cover the range exactly once, in order, each 1..max_nlb
// blocks (<= 65536), DEAC only where allowed, on NPDA and a multiple of NPDG.

#include "check.hpp"

#include "plan/zero_plan.hpp"
#include "probe/nvme_decode.hpp"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace wz;
using u128 = unsigned __int128;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    const auto dlfeat = in.ConsumeIntegral<std::uint8_t>();
    const auto nsfeat = in.ConsumeIntegral<std::uint8_t>();
    const auto npwg = in.ConsumeIntegral<std::uint16_t>();
    const auto npdg = in.ConsumeIntegral<std::uint16_t>();
    const auto npda = in.ConsumeIntegral<std::uint16_t>();
    const auto npdgl = in.ConsumeIntegral<std::uint32_t>();
    const auto npdal = in.ConsumeIntegral<std::uint32_t>();
    // LBADS 9..31 as lba_bytes() returns it, or 0 (unknown).
    const unsigned lbads = in.ConsumeIntegralInRange<unsigned>(8, 31);
    const std::uint32_t lba = lbads == 8 ? 0 : 1U << lbads;
    const auto wzsl = in.ConsumeIntegral<std::uint8_t>();
    // CAP.MPSMIN is 4 bits: 2^(12 + MPSMIN).
    const auto mpsmin = in.ConsumeIntegralInRange<unsigned>(0, 16);
    std::optional<std::uint64_t> mps;
    if (mpsmin < 16) {
        mps = 4096ULL << mpsmin;
    }

    const probe::nvme::dlfeat_fields f = probe::nvme::decode_dlfeat(dlfeat);
    FUZZ_CHECK(f.read_behavior == (dlfeat & 7));
    FUZZ_CHECK(f.wzds == ((dlfeat & 8) != 0) && f.guard_crc == ((dlfeat & 16) != 0));
    FUZZ_CHECK(f.deac_usable == (f.wzds && f.read_behavior == 1));
    const std::string drb = probe::nvme::read_behavior_name(f.read_behavior);
    FUZZ_CHECK(drb == (f.read_behavior == 0   ? "not reported"
                       : f.read_behavior == 1 ? "zeroes"
                       : f.read_behavior == 2 ? "ones"
                                              : "reserved"));

    const probe::nvme::dealloc_geometry g = probe::nvme::decode_dealloc(nsfeat, npwg, npdg, npda, npdgl, npdal, lba);
    if ((nsfeat & 0x30) == 0 || lba == 0) {
        FUZZ_CHECK(!g.granularity_bytes && !g.alignment_bytes && !g.write_granularity_bytes);
        FUZZ_CHECK(g.source.empty() && !g.reason.empty());
    } else {
        FUZZ_CHECK(g.granularity_bytes && g.alignment_bytes && g.write_granularity_bytes && g.reason.empty());
        FUZZ_CHECK(*g.write_granularity_bytes == (npwg + 1ULL) * lba);
        for (std::uint64_t b : {*g.granularity_bytes, *g.alignment_bytes}) {
            FUZZ_CHECK(b >= lba && b % lba == 0);
        }
        if (g.source == "npdgl/npdal") {
            FUZZ_CHECK(probe::nvme::npdgl_valid(nsfeat) && npdgl != 0);
            FUZZ_CHECK(*g.granularity_bytes == std::uint64_t{npdgl} * lba);
            FUZZ_CHECK(*g.alignment_bytes == std::uint64_t{npdal != 0 ? npdal : npdgl} * lba);
        } else {
            FUZZ_CHECK(g.source == "npdg/npda");
            FUZZ_CHECK(!(probe::nvme::npdgl_valid(nsfeat) && npdgl != 0));
            FUZZ_CHECK(*g.granularity_bytes == (npdg + 1ULL) * lba && *g.granularity_bytes <= 65536ULL * lba);
            FUZZ_CHECK(*g.alignment_bytes == (npda + 1ULL) * lba && *g.alignment_bytes <= 65536ULL * lba);
        }
    }

    const auto limit = probe::nvme::limit_bytes(wzsl, mps);
    if (wzsl == 0) {
        FUZZ_CHECK(limit && *limit == 0);
    } else if (limit) {
        FUZZ_CHECK(mps && u128{*limit} == u128{*mps} << wzsl);
    }

    // The record as the probe fills it, then the planner's commands for a range.
    capabilities caps;
    caps.nvme.emplace();
    nvme_info& n = *caps.nvme;
    n.lba_bytes = lba;
    n.nsze_lba = in.ConsumeIntegral<std::uint64_t>();
    n.wzsl = wzsl;
    n.wzsl_max_bytes = limit;
    n.deac = f.deac_usable;
    n.npdg_bytes = g.granularity_bytes;
    n.npda_bytes = g.alignment_bytes;
    caps.write_zeroes.max_bytes = in.ConsumeIntegral<std::uint32_t>();
    const plan::nvme_geometry geo = plan::geometry_from(caps);
    FUZZ_CHECK(geo.max_nlb >= 1 && geo.max_nlb <= 65536);
    FUZZ_CHECK(geo.lba_bytes == (lba != 0 ? lba : 512));
    const plan::dealloc_blocks blocks = plan::dealloc_blocks_of(geo);
    FUZZ_CHECK(blocks.granularity >= 1 && blocks.alignment >= 1);

    // A range inside what byte offsets can address, of at most 64 commands of max_nlb.
    const std::uint64_t max_lba = UINT64_MAX / geo.lba_bytes;
    const std::uint64_t nlb_total = in.ConsumeIntegralInRange<std::uint64_t>(0, std::uint64_t{geo.max_nlb} * 64);
    const std::uint64_t slba = in.ConsumeIntegralInRange<std::uint64_t>(0, max_lba - nlb_total);
    const std::uint64_t offset = slba * geo.lba_bytes;
    std::vector<plan::operation> ops;
    plan::split_nvme_range(geo, slba, nlb_total, offset, "fuzz", ops);
    std::uint64_t at = slba;
    bool any_deac = false;
    for (const plan::operation& op : ops) {
        FUZZ_CHECK(op.kind == plan::op_kind::nvme_write_zeroes);
        FUZZ_CHECK(op.slba == at);
        FUZZ_CHECK(op.nlb >= 1 && op.nlb <= geo.max_nlb && op.nlb <= 65536);
        FUZZ_CHECK(op.offset == offset + (op.slba - slba) * geo.lba_bytes);
        FUZZ_CHECK(op.length == std::uint64_t{op.nlb} * geo.lba_bytes);
        FUZZ_CHECK(op.reason.rfind("fuzz", 0) == 0);
        if (op.deac) {
            any_deac = true;
            FUZZ_CHECK(geo.deac);
            FUZZ_CHECK(op.nlb % blocks.granularity == 0);
        }
        at += op.nlb;
    }
    FUZZ_CHECK(at == slba + nlb_total);
    // DEAC commands form one run that starts on the alignment.
    if (any_deac) {
        std::size_t first = 0;
        while (!ops[first].deac) {
            ++first;
        }
        FUZZ_CHECK(ops[first].slba % blocks.alignment == 0);
        FUZZ_CHECK(plan::dealloc_aligned(geo, ops[first].slba, ops[first].nlb));
        std::size_t last = first;
        while (last + 1 < ops.size() && ops[last + 1].deac) {
            ++last;
        }
        for (std::size_t i = last + 1; i < ops.size(); ++i) {
            FUZZ_CHECK(!ops[i].deac);
        }
    }
    return 0;
}
