// SPDX-License-Identifier: MIT
#include "probe/nvme_decode.hpp"

#include "probe/sysfs.hpp"

#include <fmt/format.h>

#include <cstddef>
#include <cstring>
#include <limits>
#include <type_traits>

namespace wz::probe::nvme {

namespace {

// NVM Command Set Specification 1.1 (NVMe 2.1), I/O Command Set Specific Identify Namespace
// (CNS 05h, CSI 00h): NPDGL bytes 271:268, NPDAL bytes 287:284. libnvme 1.3 (Debian 12)
// still has them as reserved bytes of struct nvme_nvm_id_ns.
constexpr std::size_t nvm_id_ns_npdgl_offset = 268;
constexpr std::size_t nvm_id_ns_npdal_offset = 284;

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
    f.read_behavior = dlfeat & NVME_NS_DLFEAT_RB;
    f.wzds = (dlfeat & NVME_NS_DLFEAT_WRITE_ZEROES) != 0;
    f.guard_crc = (dlfeat & NVME_NS_DLFEAT_CRC_GUARD) != 0;
    f.deac_usable = f.wzds && f.read_behavior == NVME_NS_DLFEAT_RB_ALL_0S;
    return f;
}

const char* read_behavior_name(std::uint8_t drb) {
    switch (drb) {
    case NVME_NS_DLFEAT_RB_NR: return "not reported";
    case NVME_NS_DLFEAT_RB_ALL_0S: return "zeroes";
    case NVME_NS_DLFEAT_RB_ALL_FS: return "ones";
    default: return "reserved";
    }
}

dealloc_geometry decode_dealloc(std::uint8_t nsfeat, std::uint16_t npwg, std::uint16_t npdg, std::uint16_t npda,
                                std::uint32_t npdgl, std::uint32_t npdal, std::uint32_t lba_bytes) {
    dealloc_geometry g;
    if ((nsfeat & (NVME_NS_FEAT_IO_OPT | nsfeat_optperf_large)) == 0) {
        g.reason = "NSFEAT OPTPERF (bit 4) is 0: NPDG/NPDA are not valid for this namespace";
        return g;
    }
    if (lba_bytes == 0) {
        g.reason = "logical block size unknown";
        return g;
    }
    g.write_granularity_bytes = (static_cast<std::uint64_t>(npwg) + 1) * lba_bytes;
    if (npdgl_valid(nsfeat) && npdgl != 0) {
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
    f.nsze = le64(page, offsetof(nvme_id_ns, nsze));
    f.nsfeat = page[offsetof(nvme_id_ns, nsfeat)];
    f.nlbaf = page[offsetof(nvme_id_ns, nlbaf)];
    f.flbas = page[offsetof(nvme_id_ns, flbas)];
    f.dlfeat = page[offsetof(nvme_id_ns, dlfeat)];
    f.npwg = le16(page, offsetof(nvme_id_ns, npwg));
    f.npdg = le16(page, offsetof(nvme_id_ns, npdg));
    f.npda = le16(page, offsetof(nvme_id_ns, npda));
    return f;
}

std::optional<std::uint32_t> lba_bytes(const identify_page& id_ns) {
    const std::uint8_t flbas = id_ns[offsetof(nvme_id_ns, flbas)];
    // FLBAS bits 3:0 are the low and bits 6:5 the high bits of the format index.
    const unsigned index = (flbas & NVME_NS_FLBAS_LOWER_MASK) | ((flbas & NVME_NS_FLBAS_HIGHER_MASK) >> 1);
    if (index >= std::extent_v<decltype(nvme_id_ns::lbaf)>) {
        return std::nullopt;
    }
    const std::uint8_t lbads =
        id_ns[offsetof(nvme_id_ns, lbaf) + index * sizeof(nvme_lbaf) + offsetof(nvme_lbaf, ds)];
    if (lbads < 9 || lbads > 31) {
        return std::nullopt;
    }
    return 1U << lbads;
}

id_ctrl_fields parse_id_ctrl(const identify_page& page) {
    id_ctrl_fields f;
    f.serial = ascii(page, offsetof(nvme_id_ctrl, sn), sizeof(nvme_id_ctrl{}.sn));
    f.model = ascii(page, offsetof(nvme_id_ctrl, mn), sizeof(nvme_id_ctrl{}.mn));
    f.firmware = ascii(page, offsetof(nvme_id_ctrl, fr), sizeof(nvme_id_ctrl{}.fr));
    f.mdts = page[offsetof(nvme_id_ctrl, mdts)];
    f.oncs = le16(page, offsetof(nvme_id_ctrl, oncs));
    f.vwc = page[offsetof(nvme_id_ctrl, vwc)];
    return f;
}

nvm_id_ns_fields parse_nvm_id_ns(const identify_page& page) {
    nvm_id_ns_fields f;
    f.npdgl = le32(page, nvm_id_ns_npdgl_offset);
    f.npdal = le32(page, nvm_id_ns_npdal_offset);
    return f;
}

std::optional<std::uint64_t> limit_bytes(std::uint8_t exponent, std::optional<std::uint64_t> mps_min_bytes) {
    if (exponent == 0) {
        return 0;
    }
    // A limit that 64 bits cannot hold is none we can use: shifted past them it would wrap,
    // CAP.MPSMIN 128 MiB with WZSL 37 to 0, which reads as "no limit stated".
    if (!mps_min_bytes || exponent >= 64 || *mps_min_bytes > (std::numeric_limits<std::uint64_t>::max() >> exponent)) {
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

void set_passthrough_route(nvme_info& n, const std::string& char_name, bool block_node) {
    if (!n.char_device.empty()) {
        n.passthrough = passthrough_route::char_device;
        n.passthrough_device = n.char_device;
        n.passthrough_reason = fmt::format("the generic char device {}: io_uring uring_cmd (Linux 5.19+), else "
                                           "NVME_IOCTL_IO_CMD",
                                           n.char_device);
    } else if (block_node) {
        n.passthrough = passthrough_route::block_device;
        n.passthrough_device = n.namespace_device;
        n.passthrough_reason = fmt::format("no /dev/{} (the generic char device needs Linux 5.13): "
                                           "NVME_IOCTL_IO_CMD on the namespace's block device {}, no uring_cmd",
                                           char_name, n.namespace_device);
    } else {
        n.passthrough = passthrough_route::none;
        n.passthrough_device.clear();
        n.passthrough_reason =
            fmt::format("neither /dev/{} nor {} is a device node here", char_name, n.namespace_device);
    }
}

}  // namespace wz::probe::nvme
