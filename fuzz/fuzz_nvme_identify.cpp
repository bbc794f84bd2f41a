// SPDX-License-Identifier: MIT
// The Identify decoders (lib/probe/nvme_decode.hpp): the input, zero-padded or cut to 4096
// bytes, as an Identify Controller, Identify Namespace and NVM-specific Identify Namespace
// page. Each field must equal what libnvme's structs (nvme/types.h) read at the same place,
// the strings must be the trimmed ASCII fields (no longer than the field, no NUL, no edge
// blanks), and the LBA size must be the selected format's 2^LBADS in [512, 2^31].

#include "check.hpp"

#include "probe/nvme_decode.hpp"

#include <endian.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

namespace {

using namespace wz::probe::nvme;

template <class T>
T as(const identify_page& page) {
    static_assert(sizeof(T) == identify_page_bytes);
    T t;
    std::memcpy(&t, page.data(), sizeof t);
    return t;
}

void check_text(const std::string& s, const char* field, std::size_t len) {
    FUZZ_CHECK(s.size() <= len);
    FUZZ_CHECK(s.find('\0') == std::string::npos);
    if (!s.empty()) {
        FUZZ_CHECK(std::string_view(" \t\r\n").find(s.front()) == std::string_view::npos);
        FUZZ_CHECK(std::string_view(" \t\r\n").find(s.back()) == std::string_view::npos);
        // The text is the field's (up to a NUL), from its first non-blank byte on.
        const std::string_view raw(field, strnlen(field, len));
        const std::size_t at = raw.find_first_not_of(" \t\r\n");
        FUZZ_CHECK(at != std::string_view::npos && raw.substr(at, s.size()) == s);
    } else {
        // Empty: the field up to its first NUL is blank.
        const std::string_view raw(field, strnlen(field, len));
        FUZZ_CHECK(raw.find_first_not_of(" \t\r\n") == std::string_view::npos);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    identify_page page{};
    std::memcpy(page.data(), data, std::min(size, page.size()));

    const auto ctrl = as<nvme_id_ctrl>(page);
    const id_ctrl_fields c = parse_id_ctrl(page);
    FUZZ_CHECK(c.mdts == ctrl.mdts);
    FUZZ_CHECK(c.oncs == le16toh(ctrl.oncs));
    FUZZ_CHECK(c.vwc == ctrl.vwc);
    check_text(c.serial, ctrl.sn, sizeof ctrl.sn);
    check_text(c.model, ctrl.mn, sizeof ctrl.mn);
    check_text(c.firmware, ctrl.fr, sizeof ctrl.fr);
    FUZZ_CHECK(vwc_present(c.vwc) == ((c.vwc & 1) != 0));

    const auto ns = as<nvme_id_ns>(page);
    const id_ns_fields n = parse_id_ns(page);
    FUZZ_CHECK(n.nsze == le64toh(ns.nsze));
    FUZZ_CHECK(n.nsfeat == ns.nsfeat && n.nlbaf == ns.nlbaf && n.flbas == ns.flbas && n.dlfeat == ns.dlfeat);
    FUZZ_CHECK(n.npwg == le16toh(ns.npwg) && n.npdg == le16toh(ns.npdg) && n.npda == le16toh(ns.npda));

    // FLBAS: bits 3:0 the low, bits 6:5 the high two bits of a 6-bit index into 64 formats.
    const unsigned index = (ns.flbas & 0x0fU) | (((ns.flbas >> 5) & 0x3U) << 4);
    FUZZ_CHECK(index < 64);
    const unsigned lbads = ns.lbaf[index].ds;
    const auto lba = lba_bytes(page);
    if (lbads >= 9 && lbads <= 31) {
        FUZZ_CHECK(lba && *lba == (1U << lbads));
        FUZZ_CHECK(*lba >= 512 && (*lba & (*lba - 1)) == 0);
    } else {
        FUZZ_CHECK(!lba);
    }

    const auto nvm = as<nvme_nvm_id_ns>(page);
    const nvm_id_ns_fields v = parse_nvm_id_ns(page);
    static_assert(offsetof(nvme_nvm_id_ns, rsvd268) == 268);
    std::uint32_t npdgl = 0, npdal = 0;
    std::memcpy(&npdgl, nvm.rsvd268, 4);       // NPDGL, bytes 271:268
    std::memcpy(&npdal, nvm.rsvd268 + 16, 4);  // NPDAL, bytes 287:284
    FUZZ_CHECK(v.npdgl == le32toh(npdgl) && v.npdal == le32toh(npdal));

    const auto nvm_ctrl = as<nvme_id_ctrl_nvm>(page);
    FUZZ_CHECK(parse_wzsl(page) == nvm_ctrl.wzsl);
    return 0;
}
