// SPDX-License-Identifier: MIT
// The preallocation report as JSON (documented in wzero(1), "alloc --json").

#include "util/json_text.hpp"

#include <wzero/wzero.hpp>

#include <nlohmann/json.hpp>

namespace wz {

std::string to_json(const preallocate_report& r, int indent) {
    using json = nlohmann::ordered_json;
    json j;
    j["path"] = r.path;
    j["offset"] = r.offset;
    j["length"] = r.length;
    j["bytes_done"] = r.bytes_done;
    json by = json::object();
    for (zero_method m : all_zero_methods) {
        auto it = r.bytes_by_method.find(m);
        by[to_string(m)] = it != r.bytes_by_method.end() ? it->second : 0;
    }
    j["bytes_by_method"] = by;
    j["device_commands"] = r.device_commands;
    j["passthrough_path"] = r.passthrough_path.empty() ? json(nullptr) : json(r.passthrough_path);
    j["rate"] = r.rate_bytes_per_second == 0
                    ? json(nullptr)
                    : json{{"bytes_per_second", r.rate_bytes_per_second}, {"piece_bytes", r.rate_piece_bytes}};
    j["io_engine"] = r.io_engine.empty() ? json(nullptr) : json(r.io_engine);
    j["flushed"] = r.flushed;
    j["copy_on_write"] = r.copy_on_write;
    j["exclusive_use"] = r.exclusive_use.empty() ? json(nullptr) : json(r.exclusive_use);
    j["elapsed_seconds"] = r.elapsed_seconds;
    j["verified"] = r.verified ? json(*r.verified) : json(nullptr);
    j["verify_detail"] = r.verify_detail;
    j["decisions"] = r.decisions;
    json steps = json::array();
    for (const auto& s : r.plan) {
        json o{{"kind", s.kind}, {"offset", s.offset}, {"length", s.length}};
        if (s.kind == "nvme") {
            o["slba"] = s.slba;
            o["nlb"] = s.nlb;
            o["deac"] = s.deac;
        }
        o["reason"] = s.reason;
        steps.push_back(std::move(o));
    }
    j["operations"] = steps;
    j["cleanup"] = r.cleanup.empty() ? json(nullptr) : json(r.cleanup);
    return dump_json(std::move(j), indent);
}

}  // namespace wz
