// SPDX-License-Identifier: MIT
// The names of the public enums (include/wzero/wzero.hpp), all in one place, as the
// capability record's JSON, the writer's reason and stats and the CLI print them: in a file
// of their own, so that the record's JSON (record/record_json.cpp) links without the probes
// and the I/O engine (fuzz/fuzz_json.cpp builds it alone).
#include <wzero/wzero.hpp>

namespace wz {

const char* to_string(io_engine e) noexcept {
    switch (e) {
    case io_engine::io_uring:
        return "io_uring";
    case io_engine::psync:
        return "psync";
    }
    return "?";
}

const char* to_string(zero_method m) noexcept {
    switch (m) {
    case zero_method::kernel: return "kernel";
    case zero_method::nvme_deac: return "nvme_deac";
    case zero_method::nvme: return "nvme";
    case zero_method::zeroout: return "zeroout";
    case zero_method::write: return "write";
    }
    return "?";
}

const char* to_string(cache_mode m) noexcept {
    return m == cache_mode::write_back ? "write-back" : "write-through";
}

const char* to_string(passthrough_route r) noexcept {
    switch (r) {
    case passthrough_route::none: return "none";
    case passthrough_route::char_device: return "char_device";
    case passthrough_route::block_device: return "block_device";
    }
    return "?";
}

const char* to_string(durability_mode m) noexcept {
    switch (m) {
    case durability_mode::automatic: return "auto";
    case durability_mode::through: return "through";
    case durability_mode::fua: return "fua";
    case durability_mode::flush: return "flush";
    case durability_mode::dsync: return "dsync";
    }
    return "?";
}

const char* to_string(completion_mode m) noexcept {
    switch (m) {
    case completion_mode::interrupt: return "interrupt";
    case completion_mode::poll: return "poll";
    case completion_mode::adaptive: return "adaptive";
    }
    return "?";
}

}  // namespace wz
