// SPDX-License-Identifier: MIT
#include "util/nvme_status.hpp"

#include <libnvme.h>

#include <fmt/format.h>

#include <string>

namespace wz {

namespace {

class status_category_impl final : public std::error_category {
public:
    const char* name() const noexcept override { return "nvme-status"; }
    std::string message(int status) const override {
        return fmt::format("NVMe status {:#x}: {}", status, nvme_status_to_string(status, false));
    }
};

}  // namespace

const std::error_category& nvme_status_category() noexcept {
    static const status_category_impl cat;
    return cat;
}

}  // namespace wz
