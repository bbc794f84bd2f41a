// SPDX-License-Identifier: MIT
// The C API: thin wrappers over the C++ one. No exception crosses this boundary.

#include <wzero/wzero.h>
#include <wzero/wzero.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

namespace {

void copy_message(const std::string& msg, char* buf, unsigned long len) {
    if (buf == nullptr || len == 0) {
        return;
    }
    std::size_t n = std::min<std::size_t>(msg.size(), len - 1);
    std::memcpy(buf, msg.data(), n);
    buf[n] = '\0';
}

}  // namespace

extern "C" {

const char* wz_version(void) { return wz::version(); }

int wz_stat_json(const char* path, char** json_out, char* errbuf, unsigned long errbuf_len) {
    if (path == nullptr || json_out == nullptr) {
        copy_message("wz_stat_json: path and json_out must not be NULL", errbuf, errbuf_len);
        return -EINVAL;
    }
    *json_out = nullptr;
    try {
        auto caps = wz::stat(path);
        if (!caps) {
            copy_message(caps.error().message, errbuf, errbuf_len);
            return -(caps.error().code.value() != 0 ? caps.error().code.value() : EIO);
        }
        std::string text = wz::to_json(*caps);
        char* out = static_cast<char*>(std::malloc(text.size() + 1));
        if (out == nullptr) {
            copy_message("wz_stat_json: out of memory", errbuf, errbuf_len);
            return -ENOMEM;
        }
        std::memcpy(out, text.c_str(), text.size() + 1);
        *json_out = out;
        return 0;
    } catch (const std::bad_alloc&) {
        copy_message("wz_stat_json: out of memory", errbuf, errbuf_len);
        return -ENOMEM;
    } catch (const std::exception& e) {
        copy_message(std::string("wz_stat_json: ") + e.what(), errbuf, errbuf_len);
        return -EIO;
    }
}

void wz_free(void* p) { std::free(p); }

}  // extern "C"
