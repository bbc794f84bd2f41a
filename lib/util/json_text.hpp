// SPDX-License-Identifier: MIT
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <utility>

namespace wz {

// Paths, mount points and messages are bytes, not text: Linux allows any byte but '/' and NUL
// in a name. JSON text must be UTF-8 (RFC 8259 section 8.1), and nlohmann::json::dump()
// throws type_error 316 on anything else, after the work was done. Every byte that does not
// start a well-formed UTF-8 sequence (RFC 3629 section 4: no overlong forms, no surrogates,
// nothing above U+10FFFF, no lone continuation bytes, no truncated sequences) becomes the four
// characters \xNN (two lower-case hex digits), the escape util-linux uses for unprintable bytes
// in names; well-formed UTF-8 passes unchanged. A literal backslash is not escaped, so
// `\xff` in the output is either that byte or those four characters in the name: the cost of
// leaving every valid name untouched.
[[nodiscard]] std::string escape_invalid_utf8(std::string_view bytes);

// The same for every string and every object key in a JSON value, in place.
template <class Json>
void escape_invalid_utf8_in(Json& j) {
    if (j.is_string()) {
        auto& s = j.template get_ref<typename Json::string_t&>();
        s = escape_invalid_utf8(s);
        return;
    }
    if (j.is_array()) {
        for (auto& e : j) {
            escape_invalid_utf8_in(e);
        }
        return;
    }
    if (j.is_object()) {
        // Keys cannot be changed in place: rebuild the object, keeping the order.
        Json fixed = Json::object();
        for (auto it = j.begin(); it != j.end(); ++it) {
            Json value = std::move(it.value());
            escape_invalid_utf8_in(value);
            fixed[escape_invalid_utf8(it.key())] = std::move(value);
        }
        j = std::move(fixed);
    }
}

// The one way the library and the CLI turn a JSON value into text: escape, then dump.
template <class Json>
[[nodiscard]] std::string dump_json(Json j, int indent = 2) {
    escape_invalid_utf8_in(j);
    return j.dump(indent);
}

}  // namespace wz
