// SPDX-License-Identifier: MIT
// The capability record as JSON. Keys are stable and documented in man/wzero.1;
// a value that could not be probed is null, with its reason under "unknown".

#include "util/json_text.hpp"

#include <wzero/wzero.hpp>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

namespace wz {

namespace {

using json = nlohmann::ordered_json;

template <class T>
json opt(const std::optional<T>& v) {
    return v ? json(*v) : json(nullptr);
}

json opt_mode(const std::optional<cache_mode>& m) {
    return m ? json(to_string(*m)) : json(nullptr);
}

json device_json(const device_info& d) {
    return {{"path", d.path},
            {"disk", d.disk},
            {"kind", d.kind},
            {"dev", fmt::format("{}:{}", d.major, d.minor)},
            {"partition", d.partition},
            {"partition_start_bytes", d.partition_start_bytes},
            {"size_bytes", d.size_bytes},
            {"logical_block_size", d.logical_block_size},
            {"physical_block_size", d.physical_block_size},
            {"max_hw_transfer_bytes", d.max_hw_transfer_bytes},
            {"discard_granularity", d.discard_granularity},
            {"discard_max_bytes", d.discard_max_bytes},
            {"rotational", opt(d.rotational)},
            {"io_poll", opt(d.io_poll)},
            {"backing_file", d.backing_file.empty() ? json(nullptr) : json(d.backing_file)},
            {"loop_direct_io", opt(d.loop_direct_io)},
            {"slaves", d.slaves}};
}

}  // namespace

std::string to_json(const capabilities& c, int indent) {
    json j;
    j["path"] = c.path;
    j["file_type"] = c.file_type;
    j["size_bytes"] = c.size_bytes;
    j["kernel"] = c.kernel_release;
    if (c.fs) {
        j["fs"] = {{"type", c.fs->type},
                   {"magic", fmt::format("{:#x}", c.fs->magic)},
                   {"block_size", c.fs->block_size},
                   {"mount_point", c.fs->mount_point},
                   {"mount_source", c.fs->mount_source},
                   {"mount_options", c.fs->mount_options},
                   {"cow", c.fs->cow},
                   {"cow_reason", c.fs->cow_reason},
                   {"fallocate", opt(c.fs->fallocate)},
                   {"fallocate_reason", c.fs->fallocate_reason}};
    } else {
        j["fs"] = nullptr;
    }
    j["dio"] = c.dio ? json{{"mem_align", c.dio->mem_align}, {"offset_align", c.dio->offset_align},
                            {"source", c.dio->source}}
                     : json(nullptr);
    j["device"] = c.device ? device_json(*c.device) : json(nullptr);
    json devices = json::array();
    for (const auto& d : c.devices) {
        json one = device_json(d.device);
        one["cache"] = {{"kernel", opt_mode(d.cache.kernel)},
                        {"effective", opt_mode(d.cache.effective)},
                        {"effective_reason", d.cache.effective_reason},
                        {"fua", opt(d.cache.fua)},
                        {"flush_needed", opt(d.cache.flush_needed)},
                        {"flush_reason", d.cache.flush_reason}};
        devices.push_back(std::move(one));
    }
    j["devices"] = std::move(devices);
    j["write_zeroes"] = {{"max_bytes", c.write_zeroes.max_bytes},
                         {"unmap", opt(c.write_zeroes.unmap)},
                         {"unmap_max_bytes", opt(c.write_zeroes.unmap_max_bytes)},
                         {"unmap_max_hw_bytes", opt(c.write_zeroes.unmap_max_hw_bytes)}};
    if (c.nvme) {
        const auto& n = *c.nvme;
        j["nvme"] = {{"controller", n.controller},
                     {"namespace", n.namespace_device},
                     {"char_device", n.char_device.empty() ? json(nullptr) : json(n.char_device)},
                     {"passthrough",
                      {{"route", to_string(n.passthrough)},
                       {"device", n.passthrough_device.empty() ? json(nullptr) : json(n.passthrough_device)},
                       {"reason", n.passthrough_reason}}},
                     {"nsid", n.nsid},
                     {"model", n.model},
                     {"serial", n.serial},
                     {"firmware", n.firmware},
                     {"transport", n.transport},
                     {"lba_bytes", n.lba_bytes},
                     {"nsze_lba", n.nsze_lba},
                     {"partition_start_lba", n.partition_start_lba},
                     {"oncs", opt(n.oncs)},
                     {"write_zeroes_supported", opt(n.write_zeroes_supported)},
                     {"mdts", opt(n.mdts)},
                     {"mps_min_bytes", opt(n.mps_min_bytes)},
                     {"wzsl", opt(n.wzsl)},
                     {"wzsl_max_bytes", opt(n.wzsl_max_bytes)},
                     {"nsfeat", opt(n.nsfeat)},
                     {"dlfeat", opt(n.dlfeat)},
                     {"dlfeat_read_behavior", opt(n.dlfeat_read_behavior)},
                     {"wzds", opt(n.wzds)},
                     {"deac", opt(n.deac)},
                     {"npdg_bytes", opt(n.npdg_bytes)},
                     {"npda_bytes", opt(n.npda_bytes)},
                     {"npd_source", n.npd_source.empty() ? json(nullptr) : json(n.npd_source)},
                     {"npwg_bytes", opt(n.npwg_bytes)},
                     {"vwc", opt(n.vwc)},
                     {"vwc_present", opt(n.vwc_present)},
                     {"vwc_enabled", opt(n.vwc_enabled)}};
    } else {
        j["nvme"] = nullptr;
    }
    j["cache"] = {{"kernel", opt_mode(c.cache.kernel)},
                  {"effective", opt_mode(c.cache.effective)},
                  {"effective_reason", c.cache.effective_reason},
                  {"fua", opt(c.cache.fua)},
                  {"flush_needed", opt(c.cache.flush_needed)},
                  {"flush_reason", c.cache.flush_reason},
                  {"dsync_overwrite_fua", opt(c.cache.dsync_overwrite_fua)},
                  {"dsync_overwrite_reason", c.cache.dsync_overwrite_reason}};
    json methods = json::object();
    for (zero_method m : all_zero_methods) {
        auto it = c.methods.find(m);
        if (it == c.methods.end()) {
            continue;
        }
        methods[to_string(m)] = {{"usable", opt(it->second.usable)}, {"reason", it->second.reason}};
    }
    j["methods"] = methods;
    j["recommended_method"] = c.recommended_method ? json(to_string(*c.recommended_method)) : json(nullptr);
    j["recommended_reason"] = c.recommended_reason;
    j["io"] = {{"engine", to_string(c.io.engine)}, {"reason", c.io.reason}, {"forced", c.io.forced}};
    json unknown = json::object();
    for (const auto& [k, v] : c.unknown) {
        unknown[k] = v;
    }
    j["unknown"] = unknown;
    return dump_json(std::move(j), indent);
}

}  // namespace wz
