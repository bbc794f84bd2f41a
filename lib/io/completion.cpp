// SPDX-License-Identifier: MIT
// Completion settings: validation (the names are in util/enum_names.cpp).
#include "io/completion.hpp"

#include "util/errors.hpp"

#include <fmt/format.h>

namespace wz {

namespace io {

status validate(const completion_options& o, unsigned queue_depth) {
    auto bad = [&](std::string why) {
        return make_error_msg(EINVAL, fmt::format("completion settings (mode {}, high watermark {}, low watermark {}, "
                                                  "interval {} us, max loops {}, queue depth {}): {}",
                                                  to_string(o.mode), o.high_watermark, o.low_watermark,
                                                  o.interval.count(), o.max_loops, queue_depth, why));
    };
    if (queue_depth == 0) {
        return make_error_msg(EINVAL, fmt::format("completion settings (mode {}): the queue depth must be non-zero",
                                                  to_string(o.mode)));
    }
    if (o.mode != completion_mode::adaptive) {
        return {};  // the watermarks are read by the adaptive mode only
    }
    if (o.high_watermark == 0 || o.low_watermark == 0 || o.interval.count() <= 0 || o.max_loops == 0) {
        return bad("every value must be non-zero");
    }
    if (o.low_watermark >= o.high_watermark) {
        return bad("the low watermark must be below the high watermark");
    }
    if (o.high_watermark >= queue_depth) {
        return bad("the high watermark must be below the queue depth");
    }
    return {};
}

}  // namespace io
}  // namespace wz
