// SPDX-License-Identifier: MIT
// The sysfs attribute parsers (lib/probe/sysfs.hpp) and the NVMe device names
// (nvme_decode.hpp) on any text. Properties, against rules of our own: trim removes exactly
// the blanks " \t\r\n" at both ends; parse_u64 accepts exactly the decimal digit strings
// (after trim) whose value fits 64 bits, with that value; parse_write_cache exactly the two
// kernel strings; parse_dev "MAJ:MIN" with both parts such numbers below 2^32, and its
// result printed back parses the same; the controller name is a prefix "nvmeN" of the name.

#include "check.hpp"

#include "probe/nvme_decode.hpp"
#include "probe/sysfs.hpp"

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace {

using namespace wz;

constexpr std::string_view blanks = " \t\r\n";

std::string_view stripped(std::string_view t) {
    const auto b = t.find_first_not_of(blanks);
    if (b == std::string_view::npos) {
        return {};
    }
    return t.substr(b, t.find_last_not_of(blanks) - b + 1);
}

// Decimal digits only, value below 2^64: the value; else nullopt.
std::optional<std::uint64_t> decimal(std::string_view t) {
    if (t.empty()) {
        return std::nullopt;
    }
    unsigned __int128 v = 0;
    for (char c : t) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        v = v * 10 + static_cast<unsigned>(c - '0');
        if (v > UINT64_MAX) {
            return std::nullopt;
        }
    }
    return static_cast<std::uint64_t>(v);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string t = probe::sysfs::trim(text);
    FUZZ_CHECK(t == stripped(text));
    FUZZ_CHECK(probe::sysfs::trim(t) == t);

    FUZZ_CHECK(probe::sysfs::parse_u64(text) == decimal(t));

    const auto wc = probe::sysfs::parse_write_cache(text);
    FUZZ_CHECK(wc.has_value() == (t == "write back" || t == "write through"));
    if (wc) {
        FUZZ_CHECK(*wc == (t == "write back" ? cache_mode::write_back : cache_mode::write_through));
    }

    const auto dev = probe::sysfs::parse_dev(text);
    const auto colon = t.find(':');
    if (colon == std::string::npos) {
        FUZZ_CHECK(!dev);
    } else {
        const auto maj = decimal(stripped(std::string_view(t).substr(0, colon)));
        const auto min = decimal(stripped(std::string_view(t).substr(colon + 1)));
        const bool valid = maj && min && *maj <= UINT32_MAX && *min <= UINT32_MAX;
        FUZZ_CHECK(dev.has_value() == valid);
        if (dev) {
            FUZZ_CHECK(dev->first == *maj && dev->second == *min);
            FUZZ_CHECK(probe::sysfs::parse_dev(fmt::format("{}:{}\n", dev->first, dev->second)) == dev);
        }
    }

    const std::string name(text);
    const std::string ctrl = probe::nvme::controller_name(name);
    if (!ctrl.empty()) {
        FUZZ_CHECK(name.rfind(ctrl, 0) == 0 && ctrl.rfind("nvme", 0) == 0);
        FUZZ_CHECK(ctrl.find_first_of("cn", 4) == std::string::npos && ctrl.size() < name.size());
    }
    const std::string generic = probe::nvme::generic_char_name(name);
    if (!generic.empty()) {
        FUZZ_CHECK(name.rfind("nvme", 0) == 0 && generic == "ng" + name.substr(4));
    } else {
        FUZZ_CHECK(name.rfind("nvme", 0) != 0 || name.find('n', 4) == std::string::npos);
    }
    return 0;
}
