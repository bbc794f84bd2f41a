// SPDX-License-Identifier: MIT
#pragma once

// Pure decoding of NVMe Identify data, so that every rule can be tested on recorded pages.
// References: NVMe Base Specification 2.1 (Identify Controller, Identify Namespace),
// NVM Command Set Specification 1.1 (I/O command set specific Identify pages).

#include <nvme/types.h>

#include <wzero/wzero.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace wz::probe::nvme {

inline constexpr std::size_t identify_page_bytes = NVME_IDENTIFY_DATA_SIZE;
using identify_page = std::array<std::uint8_t, identify_page_bytes>;

struct dlfeat_fields {
    std::uint8_t read_behavior = 0;  // DRB, bits 2:0: 000b not reported, 001b zeroes, 010b ones
    bool wzds = false;               // bit 3: Write Zeroes with DEAC deallocates
    bool guard_crc = false;          // bit 4: guard field of deallocated blocks is the CRC
    // DEAC is only worth sending when the device deallocates on it and deallocated
    // blocks read back as zeroes: WZDS=1 and DRB=001b (Linux requires the same before it
    // advertises unmap write zeroes for a namespace).
    bool deac_usable = false;
};
dlfeat_fields decode_dlfeat(std::uint8_t dlfeat);
const char* read_behavior_name(std::uint8_t drb);

struct dealloc_geometry {
    std::optional<std::uint64_t> granularity_bytes;
    std::optional<std::uint64_t> alignment_bytes;
    std::optional<std::uint64_t> write_granularity_bytes;
    std::string source;  // "npdg/npda", "npdgl/npdal" or ""
    std::string reason;  // why no geometry, when there is none
};

// NSFEAT OPTPERF: bit 4 up to NVMe 2.0 (libnvme's NVME_NS_FEAT_IO_OPT); bits 5:4 from
// NVMe 2.1, where 10b/11b also make NPDGL/NPDAL (NVM-specific Identify Namespace, 32-bit,
// not 0's based) valid. NPDG/NPDA are 16-bit 0's based counts of logical blocks.
// libnvme 1.3 (Debian 12) names bit 4 only: bit 5 is named here.
inline constexpr std::uint8_t nsfeat_optperf_large = 1U << 5;  // NVMe 2.1, Identify Namespace, NSFEAT bit 5
// NPDGL/NPDAL are valid (and worth a CNS 05h Identify to read).
inline bool npdgl_valid(std::uint8_t nsfeat) { return (nsfeat & nsfeat_optperf_large) != 0; }
dealloc_geometry decode_dealloc(std::uint8_t nsfeat, std::uint16_t npwg, std::uint16_t npdg, std::uint16_t npda,
                                std::uint32_t npdgl, std::uint32_t npdal, std::uint32_t lba_bytes);

// The logical block size of the namespace's current format (FLBAS bits 3:0 and 6:5 select
// among up to 64 LBA formats; LBADS is a power of two).
std::optional<std::uint32_t> lba_bytes(const identify_page& id_ns);

// Fields of the pages, by byte offset (Identify Namespace: NSZE 7:0, NSFEAT 24, NLBAF 25,
// FLBAS 26, DLFEAT 33, NPWG 65:64, NPDG 69:68, NPDA 71:70, LBAF 131:128 + 4n;
// Identify Controller: MDTS 77, ONCS 521:520, VWC 525; NVM-specific Identify Controller:
// WZSL byte 1; NVM-specific Identify Namespace: NPDGL 271:268, NPDAL 287:284).
struct id_ns_fields {
    std::uint64_t nsze = 0;
    std::uint8_t nsfeat = 0, nlbaf = 0, flbas = 0, dlfeat = 0;
    std::uint16_t npwg = 0, npdg = 0, npda = 0;
};
id_ns_fields parse_id_ns(const identify_page& page);

struct id_ctrl_fields {
    std::uint8_t mdts = 0;
    std::uint16_t oncs = 0;
    std::uint8_t vwc = 0;
    std::string model, serial, firmware;
};
id_ctrl_fields parse_id_ctrl(const identify_page& page);

struct nvm_id_ns_fields {
    std::uint32_t npdgl = 0, npdal = 0;
};
nvm_id_ns_fields parse_nvm_id_ns(const identify_page& page);

inline std::uint8_t parse_wzsl(const identify_page& nvm_id_ctrl) {
    return nvm_id_ctrl[offsetof(nvme_id_ctrl_nvm, wzsl)];
}

inline constexpr std::uint16_t oncs_write_zeroes_bit = NVME_CTRL_ONCS_WRITE_ZEROES;
inline bool vwc_present(std::uint8_t vwc) { return (vwc & NVME_CTRL_VWC_PRESENT) != 0; }
// Get Features, Volatile Write Cache (NVME_FEAT_FID_VOLATILE_WC): DW0 bit 0 = WCE.
inline bool wce_enabled(std::uint32_t dw0) { return NVME_GET(dw0, FEAT_VWC_WCE) != 0; }

// WZSL and MDTS are powers of two in units of CAP.MPSMIN; 0 means no limit stated.
// nullopt: MPSMIN unknown, or the limit does not fit in 64 bits.
std::optional<std::uint64_t> limit_bytes(std::uint8_t exponent, std::optional<std::uint64_t> mps_min_bytes);

// "nvme0n1" -> "ng0n1" (the generic char device, Linux 5.13+); "nvme0c1n1" style
// multipath paths keep their name shape. Returns "" for names that are not namespaces.
std::string generic_char_name(const std::string& ns_name);
// "nvme0n1" -> "nvme0".
std::string controller_name(const std::string& ns_name);

// Sets N's passthrough route, device and reason from what exists: N.char_device (empty: no
// generic char device, whose name would be CHAR_NAME) is preferred, being the one uring_cmd
// takes; else N.namespace_device when BLOCK_NODE (it is a block device node here), which
// takes the same NVME_IOCTL_IO_CMD on every kernel; else none.
void set_passthrough_route(nvme_info& n, const std::string& char_name, bool block_node);

}  // namespace wz::probe::nvme
