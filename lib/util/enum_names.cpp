// SPDX-License-Identifier: MIT
// The names of the public enums as the capability record's JSON and the CLI print them: in
// a file of their own, so that the record's JSON (record/record_json.cpp) links without the
// probes and the I/O engine (fuzz/fuzz_json.cpp builds it alone).
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

}  // namespace wz
