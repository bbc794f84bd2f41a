// SPDX-License-Identifier: MIT
#include "probe/nvme_probe.hpp"

#include "probe/nvme_decode.hpp"
#include "util/errors.hpp"
#include "util/nvme_status.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <libnvme.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

namespace wz::probe::nvme {

namespace {

// libnvme's three outcomes: 0 success, > 0 an NVMe status, -1 with errno.
std::string describe_failure(int rc, int saved_errno) {
    if (rc > 0) {
        return nvme_status_category().message(rc);
    }
    std::string text = errno_text(saved_errno);
    if (saved_errno == EPERM || saved_errno == EACCES) {
        text += " (admin commands need CAP_SYS_ADMIN)";
    }
    return text;
}

// CAP.MPSMIN is only in the controller's registers; on PCIe they are BAR0 of the function.
// Reading CAP (offset 0, 64 bits) is side-effect free. Fabrics controllers have no BAR.
std::optional<std::uint64_t> read_mps_min(const sysfs::tree& sys, const std::string& ctrl_name,
                                          std::string& why_not) {
    if (sys.root() != "/sys") {
        why_not = "CAP register not available in a recorded sysfs tree";
        return std::nullopt;
    }
    std::string res = fmt::format("/sys/class/nvme/{}/device/resource0", ctrl_name);
    unique_fd fd(::open(res.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
        why_not = fmt::format("read CAP.MPSMIN from {}: {} (fabrics controllers have no BAR)", res, errno_text(errno));
        return std::nullopt;
    }
    void* map = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd.get(), 0);
    if (map == MAP_FAILED) {
        why_not = fmt::format("mmap {}: {}", res, errno_text(errno));
        return std::nullopt;
    }
    volatile const std::uint32_t* regs = static_cast<volatile const std::uint32_t*>(map);
    std::uint64_t cap = regs[0] | (static_cast<std::uint64_t>(regs[1]) << 32);
    ::munmap(map, 4096);
    if (cap == ~0ULL) {
        why_not = "CAP register reads all ones (device not responding)";
        return std::nullopt;
    }
    const auto mpsmin = static_cast<unsigned>(NVME_CAP_MPSMIN(cap));  // CAP bits 51:48, 2^(12 + MPSMIN)
    return 1ULL << (12 + mpsmin);
}

}  // namespace

wce_reading read_wce(int fd, const std::string& device) {
    wce_reading r;
    __u32 dw0 = 0;
    const int rc = nvme_get_features_volatile_wc(fd, NVME_GET_FEATURES_SEL_CURRENT, &dw0);
    const int err = errno;
    if (rc == 0) {
        r.enabled = wce_enabled(dw0);
    } else {
        r.why_not = fmt::format("Get Features FID 06h on {}: {}", device, describe_failure(rc, err));
    }
    return r;
}

wce_reading reread_wce(const nvme_info& ns) {
    const std::string& dev = !ns.char_device.empty() ? ns.char_device : ns.namespace_device;
    unique_fd fd(::open(dev.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) {
        const int err = errno;
        return {std::nullopt, fmt::format("Get Features FID 06h: open {}: {}", dev, errno_text(err))};
    }
    return read_wce(fd.get(), dev);
}

void probe_namespace(const sysfs::tree& sys, const sysfs::block_node& node, const device_info& dev,
                     nvme_info& out, unknown_reasons& unknown) {
    const std::string ctrl = controller_name(node.disk_name);
    out.controller = ctrl.empty() ? std::string() : "/dev/" + ctrl;
    out.namespace_device = "/dev/" + node.disk_name;
    if (auto nsid = sys.read_u64(node.disk_sys_path + "/nsid")) {
        out.nsid = static_cast<std::uint32_t>(*nsid);
    }
    out.lba_bytes = dev.logical_block_size;
    if (dev.logical_block_size != 0) {
        out.partition_start_lba = dev.partition_start_bytes / dev.logical_block_size;
        out.nsze_lba = node.size_sectors * 512 / dev.logical_block_size;
    }
    const std::string ctrl_sys = fmt::format("class/nvme/{}", ctrl);
    out.model = sys.read(ctrl_sys + "/model").value_or("");
    out.serial = sys.read(ctrl_sys + "/serial").value_or("");
    out.firmware = sys.read(ctrl_sys + "/firmware_rev").value_or("");
    out.transport = sys.read(ctrl_sys + "/transport").value_or("");

    std::string ng = generic_char_name(node.disk_name);
    struct ::stat st {};
    if (!ng.empty() && sys.root() == "/sys" && ::stat(("/dev/" + ng).c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
        out.char_device = "/dev/" + ng;
    } else if (!ng.empty() && sys.root() != "/sys") {
        out.char_device = "/dev/" + ng;
    } else {
        unknown["nvme.char_device"] =
            fmt::format("/dev/{} does not exist (the generic char device needs Linux 5.13)", ng);
    }
    const bool block_node = sys.root() != "/sys" || (::stat(out.namespace_device.c_str(), &st) == 0 &&
                                                     S_ISBLK(st.st_mode));
    set_passthrough_route(out, ng, block_node);

    auto set_all_unknown = [&](const std::string& why) {
        for (const char* k : {"nvme.oncs", "nvme.dlfeat", "nvme.deac", "nvme.npdg_bytes", "nvme.npda_bytes",
                              "nvme.vwc_present", "nvme.vwc_enabled", "nvme.wzsl", "nvme.mdts"}) {
            unknown[k] = why;
        }
    };
    if (sys.root() != "/sys") {
        set_all_unknown("identify data not available in a recorded sysfs tree");
        return;
    }

    // Admin commands on the namespace's block device: the same ioctls nvme-cli uses.
    unique_fd fd(::open(out.namespace_device.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd) {
        set_all_unknown(fmt::format("open {}: {}", out.namespace_device, errno_text(errno)));
        return;
    }
    if (out.nsid == 0) {
        __u32 nsid = 0;
        if (nvme_get_nsid(fd.get(), &nsid) == 0) {
            out.nsid = nsid;
        }
    }

    identify_page page{};
    int rc = nvme_identify_ctrl(fd.get(), reinterpret_cast<nvme_id_ctrl*>(page.data()));
    if (rc != 0) {
        std::string why = fmt::format("Identify Controller on {}: {}", out.namespace_device,
                                      describe_failure(rc, errno));
        for (const char* k : {"nvme.oncs", "nvme.vwc_present", "nvme.vwc_enabled", "nvme.wzsl", "nvme.mdts"}) {
            unknown[k] = why;
        }
    } else {
        auto c = parse_id_ctrl(page);
        out.oncs = c.oncs;
        out.write_zeroes_supported = (c.oncs & oncs_write_zeroes_bit) != 0;
        out.mdts = c.mdts;
        out.vwc = c.vwc;
        out.vwc_present = vwc_present(c.vwc);
        if (out.model.empty()) {
            out.model = c.model;
            out.serial = c.serial;
            out.firmware = c.firmware;
        }
        std::string mps_why;
        out.mps_min_bytes = read_mps_min(sys, ctrl, mps_why);
        if (!out.mps_min_bytes) {
            unknown["nvme.mps_min_bytes"] = mps_why;
        }

        identify_page nvm_ctrl{};
        rc = nvme_nvm_identify_ctrl(fd.get(), reinterpret_cast<nvme_id_ctrl_nvm*>(nvm_ctrl.data()));
        if (rc == 0) {
            out.wzsl = parse_wzsl(nvm_ctrl);
            out.wzsl_max_bytes = limit_bytes(*out.wzsl, out.mps_min_bytes);
            if (!out.wzsl_max_bytes) {
                unknown["nvme.wzsl_max_bytes"] = "WZSL is in units of CAP.MPSMIN, which is unknown: " + mps_why;
            }
        } else {
            unknown["nvme.wzsl"] = fmt::format("Identify Controller (CNS 06h, NVM command set) on {}: {}",
                                               out.namespace_device, describe_failure(rc, errno));
        }

        if (out.vwc_present.value_or(false)) {
            auto wce = read_wce(fd.get(), out.namespace_device);
            out.vwc_enabled = wce.enabled;
            if (!wce.enabled) {
                unknown["nvme.vwc_enabled"] = std::move(wce.why_not);
            }
        } else {
            out.vwc_enabled = false;  // no volatile write cache: nothing to enable
        }
    }

    if (out.nsid == 0) {
        for (const char* k : {"nvme.dlfeat", "nvme.deac", "nvme.npdg_bytes", "nvme.npda_bytes"}) {
            unknown[k] = fmt::format("namespace id of {} unknown", out.namespace_device);
        }
        return;
    }
    page.fill(0);
    rc = nvme_identify_ns(fd.get(), out.nsid, reinterpret_cast<nvme_id_ns*>(page.data()));
    if (rc != 0) {
        std::string why = fmt::format("Identify Namespace {} on {}: {}", out.nsid, out.namespace_device,
                                      describe_failure(rc, errno));
        for (const char* k : {"nvme.dlfeat", "nvme.deac", "nvme.npdg_bytes", "nvme.npda_bytes"}) {
            unknown[k] = why;
        }
        return;
    }
    auto ns = parse_id_ns(page);
    out.nsfeat = ns.nsfeat;
    out.dlfeat = ns.dlfeat;
    auto dl = decode_dlfeat(ns.dlfeat);
    out.dlfeat_read_behavior = dl.read_behavior;
    out.wzds = dl.wzds;
    out.deac = dl.deac_usable;
    if (auto lb = lba_bytes(page)) {
        out.lba_bytes = *lb;
    }
    out.nsze_lba = ns.nsze;

    nvm_id_ns_fields large{};
    if (npdgl_valid(ns.nsfeat)) {
        identify_page nvm_ns{};
        rc = nvme_identify_ns_csi(fd.get(), out.nsid, NVME_UUID_NONE, NVME_CSI_NVM, nvm_ns.data());
        if (rc == 0) {
            large = parse_nvm_id_ns(nvm_ns);
        } else {
            unknown["nvme.npdgl"] = fmt::format("Identify Namespace (CNS 05h, NVM) on {}: {}",
                                                out.namespace_device, describe_failure(rc, errno));
        }
    }
    auto geo = decode_dealloc(ns.nsfeat, ns.npwg, ns.npdg, ns.npda, large.npdgl, large.npdal, out.lba_bytes);
    out.npdg_bytes = geo.granularity_bytes;
    out.npda_bytes = geo.alignment_bytes;
    out.npwg_bytes = geo.write_granularity_bytes;
    out.npd_source = geo.source;
    if (!geo.granularity_bytes) {
        unknown["nvme.npdg_bytes"] = geo.reason;
        unknown["nvme.npda_bytes"] = geo.reason;
    }
}

}  // namespace wz::probe::nvme
