#include "probe/nvme_decode.hpp"

#include "probe/sysfs.hpp"

#include <cstring>

namespace wz::nvme {

namespace {

std::uint16_t le16(const identify_page& p, std::size_t off) {
    return static_cast<std::uint16_t>(p[off] | (p[off + 1] << 8));
}
std::uint32_t le32(const identify_page& p, std::size_t off) {
    return static_cast<std::uint32_t>(p[off]) | (static_cast<std::uint32_t>(p[off + 1]) << 8) |
           (static_cast<std::uint32_t>(p[off + 2]) << 16) | (static_cast<std::uint32_t>(p[off + 3]) << 24);
}
std::uint64_t le64(const identify_page& p, std::size_t off) {
    return static_cast<std::uint64_t>(le32(p, off)) | (static_cast<std::uint64_t>(le32(p, off + 4)) << 32);
}
std::string ascii(const identify_page& p, std::size_t off, std::size_t len) {
    std::string s(reinterpret_cast<const char*>(p.data() + off), len);
    return sysfs::trim(s.c_str());
}

}  // namespace

dlfeat_fields decode_dlfeat(std::uint8_t dlfeat) {
    dlfeat_fields f;
    f.read_behavior = dlfeat & 0x7U;
    f.wzds = (dlfeat & 0x8U) != 0;
    f.guard_crc = (dlfeat & 0x10U) != 0;
    f.deac_usable = f.wzds && f.read_behavior == 1;
    return f;
}

const char* read_behavior_name(std::uint8_t drb) {
    switch (drb) {
    case 0: return "not reported";
    case 1: return "zeroes";
    case 2: return "ones";
    default: return "reserved";
    }
}

dealloc_geometry decode_dealloc(std::uint8_t nsfeat, std::uint16_t npwg, std::uint16_t npdg, std::uint16_t npda,
                                std::uint32_t npdgl, std::uint32_t npdal, std::uint32_t lba_bytes) {
    dealloc_geometry g;
    const unsigned optperf = (nsfeat >> 4) & 0x3U;
    if (optperf == 0) {
        g.reason = "NSFEAT OPTPERF (bit 4) is 0: NPDG/NPDA are not valid for this namespace";
        return g;
    }
    if (lba_bytes == 0) {
        g.reason = "logical block size unknown";
        return g;
    }
    g.write_granularity_bytes = (static_cast<std::uint64_t>(npwg) + 1) * lba_bytes;
    if ((optperf & 0x2U) != 0 && npdgl != 0) {
        g.granularity_bytes = static_cast<std::uint64_t>(npdgl) * lba_bytes;
        g.alignment_bytes = static_cast<std::uint64_t>(npdal != 0 ? npdal : npdgl) * lba_bytes;
        g.source = "npdgl/npdal";
        return g;
    }
    g.granularity_bytes = (static_cast<std::uint64_t>(npdg) + 1) * lba_bytes;
    g.alignment_bytes = (static_cast<std::uint64_t>(npda) + 1) * lba_bytes;
    g.source = "npdg/npda";
    return g;
}

id_ns_fields parse_id_ns(const identify_page& page) {
    id_ns_fields f;
    f.nsze = le64(page, 0);
    f.nsfeat = page[24];
    f.nlbaf = page[25];
    f.flbas = page[26];
    f.dlfeat = page[33];
    f.npwg = le16(page, 64);
    f.npdg = le16(page, 68);
    f.npda = le16(page, 70);
    return f;
}

std::optional<std::uint32_t> lba_bytes(const identify_page& id_ns) {
    const std::uint8_t flbas = id_ns[26];
    // FLBAS bits 3:0 are the low and bits 6:5 the high bits of the format index.
    const unsigned index = (flbas & 0xFU) | ((flbas & 0x60U) >> 1);
    if (index > 63) {
        return std::nullopt;
    }
    const std::uint8_t lbads = id_ns[128 + 4 * index + 2];
    if (lbads < 9 || lbads > 31) {
        return std::nullopt;
    }
    return 1U << lbads;
}

id_ctrl_fields parse_id_ctrl(const identify_page& page) {
    id_ctrl_fields f;
    f.serial = ascii(page, 4, 20);
    f.model = ascii(page, 24, 40);
    f.firmware = ascii(page, 64, 8);
    f.mdts = page[77];
    f.oncs = le16(page, 520);
    f.vwc = page[525];
    return f;
}

nvm_id_ns_fields parse_nvm_id_ns(const identify_page& page) {
    nvm_id_ns_fields f;
    f.npdgl = le32(page, 268);
    f.npdal = le32(page, 284);
    return f;
}

std::optional<std::uint64_t> limit_bytes(std::uint8_t exponent, std::optional<std::uint64_t> mps_min_bytes) {
    if (exponent == 0) {
        return 0;
    }
    if (!mps_min_bytes || exponent >= 40) {
        return std::nullopt;
    }
    return *mps_min_bytes << exponent;
}

std::string controller_name(const std::string& ns_name) {
    if (ns_name.rfind("nvme", 0) != 0) {
        return {};
    }
    auto n = ns_name.find('n', 4);
    auto c = ns_name.find('c', 4);
    auto end = std::min(n, c);
    if (end == std::string::npos) {
        return {};
    }
    return ns_name.substr(0, end);
}

std::string generic_char_name(const std::string& ns_name) {
    if (ns_name.rfind("nvme", 0) != 0 || ns_name.find('n', 4) == std::string::npos) {
        return {};
    }
    return "ng" + ns_name.substr(4);
}

}  // namespace wz::nvme
