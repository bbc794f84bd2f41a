// SPDX-License-Identifier: MIT
// The JSON emitter (lib/util/json_text.hpp) and the capability record's JSON
// (lib/record/record_json.cpp), where paths and names are bytes, not text.
//   1. escape_invalid_utf8 on the input: it changes the text exactly when nlohmann's own
//      UTF-8 check refuses it (two validators that must agree); the result is UTF-8; put
//      back (\xNN -> byte), it is the input again (for inputs without a backslash, the one
//      ambiguity json_text.hpp documents).
//   2. A record whose strings (path, mount point, device, loop backing file, slaves, model,
//      serial, unknown keys and reasons) are cut from the input and whose numbers come from
//      it: to_json, parse with nlohmann, and every field is the escaped string or the number.

#include "check.hpp"

#include "util/json_text.hpp"

#include <wzero/wzero.hpp>

#include <fuzzer/FuzzedDataProvider.h>
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace {

using json = nlohmann::json;
using wz::escape_invalid_utf8;

bool nlohmann_accepts(const std::string& s) {
    try {
        (void)json(s).dump();
        return true;
    } catch (const json::type_error&) {
        return false;
    }
}

std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
            out += static_cast<char>(std::stoi(std::string(s.substr(i + 2, 2)), nullptr, 16));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

void check_escape(const std::string& s) {
    const std::string e = escape_invalid_utf8(s);
    FUZZ_CHECK((e == s) == nlohmann_accepts(s));
    FUZZ_CHECK(nlohmann_accepts(e));
    FUZZ_CHECK(json::parse(json(e).dump()).get<std::string>() == e);
    if (s.find('\\') == std::string::npos) {
        FUZZ_CHECK(unescape(e) == s);
    }
}

void check_record(FuzzedDataProvider& in) {
    auto text = [&in] { return in.ConsumeRandomLengthString(64); };
    wz::capabilities c;
    c.path = text();
    c.file_type = text();
    c.size_bytes = in.ConsumeIntegral<std::uint64_t>();
    c.kernel_release = text();
    if (in.ConsumeBool()) {
        c.fs.emplace();
        c.fs->type = text();
        c.fs->magic = in.ConsumeIntegral<std::uint64_t>();
        c.fs->mount_point = text();
        c.fs->mount_source = text();
        c.fs->mount_options = text();
    }
    if (in.ConsumeBool()) {
        c.device.emplace();
        c.device->path = text();
        c.device->disk = text();
        c.device->major = in.ConsumeIntegral<std::uint32_t>();
        c.device->minor = in.ConsumeIntegral<std::uint32_t>();
        c.device->backing_file = text();
        c.device->size_bytes = in.ConsumeIntegral<std::uint64_t>();
        for (int i = in.ConsumeIntegralInRange(0, 3); i > 0; --i) {
            c.device->slaves.push_back(text());
        }
    }
    if (in.ConsumeBool()) {
        c.nvme.emplace();
        c.nvme->model = text();
        c.nvme->serial = text();
        c.nvme->firmware = text();
        c.nvme->nsze_lba = in.ConsumeIntegral<std::uint64_t>();
        if (in.ConsumeBool()) {
            c.nvme->npdg_bytes = in.ConsumeIntegral<std::uint64_t>();
        }
    }
    json unknown = json::object();
    for (int i = in.ConsumeIntegralInRange(0, 4); i > 0; --i) {
        std::string k = text();
        std::string v = text();
        c.unknown[k] = v;
    }
    // Keys in the record's order (std::map), a later key that escapes the same way wins.
    for (const auto& [k, v] : c.unknown) {
        unknown[escape_invalid_utf8(k)] = escape_invalid_utf8(v);
    }
    const int indent = in.ConsumeIntegralInRange(-1, 2);

    const std::string out = wz::to_json(c, indent);
    const json j = json::parse(out);  // throws (a crash) unless it is JSON
    FUZZ_CHECK(j.at("path") == escape_invalid_utf8(c.path));
    FUZZ_CHECK(j.at("file_type") == escape_invalid_utf8(c.file_type));
    FUZZ_CHECK(j.at("size_bytes").get<std::uint64_t>() == c.size_bytes);
    FUZZ_CHECK(j.at("kernel") == escape_invalid_utf8(c.kernel_release));
    if (c.fs) {
        const json& f = j.at("fs");
        FUZZ_CHECK(f.at("type") == escape_invalid_utf8(c.fs->type));
        FUZZ_CHECK(std::stoull(f.at("magic").get<std::string>(), nullptr, 16) == c.fs->magic);
        FUZZ_CHECK(f.at("mount_point") == escape_invalid_utf8(c.fs->mount_point));
        FUZZ_CHECK(f.at("mount_source") == escape_invalid_utf8(c.fs->mount_source));
        FUZZ_CHECK(f.at("mount_options") == escape_invalid_utf8(c.fs->mount_options));
    } else {
        FUZZ_CHECK(j.at("fs").is_null());
    }
    if (c.device) {
        const json& d = j.at("device");
        FUZZ_CHECK(d.at("path") == escape_invalid_utf8(c.device->path));
        FUZZ_CHECK(d.at("disk") == escape_invalid_utf8(c.device->disk));
        FUZZ_CHECK(d.at("dev") == std::to_string(c.device->major) + ":" + std::to_string(c.device->minor));
        FUZZ_CHECK(d.at("size_bytes").get<std::uint64_t>() == c.device->size_bytes);
        if (c.device->backing_file.empty()) {
            FUZZ_CHECK(d.at("backing_file").is_null());
        } else {
            FUZZ_CHECK(d.at("backing_file") == escape_invalid_utf8(c.device->backing_file));
        }
        FUZZ_CHECK(d.at("slaves").size() == c.device->slaves.size());
        for (std::size_t i = 0; i < c.device->slaves.size(); ++i) {
            FUZZ_CHECK(d.at("slaves").at(i) == escape_invalid_utf8(c.device->slaves[i]));
        }
    } else {
        FUZZ_CHECK(j.at("device").is_null());
    }
    if (c.nvme) {
        const json& n = j.at("nvme");
        FUZZ_CHECK(n.at("model") == escape_invalid_utf8(c.nvme->model));
        FUZZ_CHECK(n.at("serial") == escape_invalid_utf8(c.nvme->serial));
        FUZZ_CHECK(n.at("firmware") == escape_invalid_utf8(c.nvme->firmware));
        FUZZ_CHECK(n.at("nsze_lba").get<std::uint64_t>() == c.nvme->nsze_lba);
        FUZZ_CHECK(c.nvme->npdg_bytes ? n.at("npdg_bytes").get<std::uint64_t>() == *c.nvme->npdg_bytes
                                      : n.at("npdg_bytes").is_null());
    } else {
        FUZZ_CHECK(j.at("nvme").is_null());
    }
    FUZZ_CHECK(j.at("unknown") == unknown);
    // The same record at another indentation is the same JSON value.
    FUZZ_CHECK(json::parse(wz::to_json(c, indent == 2 ? -1 : 2)) == j);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    check_escape(std::string(reinterpret_cast<const char*>(data), size));
    FuzzedDataProvider in(data, size);
    check_record(in);
    return 0;
}
