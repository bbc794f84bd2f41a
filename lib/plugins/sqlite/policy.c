/* SPDX-License-Identifier: MIT */
#include "policy.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

uint64_t wzs_grow_target(uint64_t current_bytes, uint64_t end_bytes, uint64_t chunk_bytes) {
    if (end_bytes <= current_bytes) {
        return current_bytes;
    }
    if (chunk_bytes == 0 || end_bytes > UINT64_MAX - (chunk_bytes - 1)) {
        return end_bytes;
    }
    return (end_bytes + chunk_bytes - 1) / chunk_bytes * chunk_bytes;
}

uint64_t wzs_chunk_bytes(int is_wal, int64_t app_chunk_bytes, uint64_t wal_chunk_bytes) {
    if (app_chunk_bytes > 0) {
        return (uint64_t)app_chunk_bytes;
    }
    return is_wal ? wal_chunk_bytes : 0;
}

enum wzs_sync_action wzs_sync_decide(const struct wzs_sync_facts* facts, const char** why) {
    const char* reason = "writeback: write-through device, overwrite of durable written extents";
    enum wzs_sync_action action = WZS_SYNC_WRITEBACK;
    if (facts->cache_write_through != 1 || facts->flush_needed != 0) {
        reason = "fdatasync: the device may hold the writes in a volatile cache (or the record does not know)";
        action = WZS_SYNC_UNIX;
    } else if (facts->file_bytes > facts->written_bytes) {
        reason = "fdatasync: part of the file is not proven written extents (allocation or conversion to commit)";
        action = WZS_SYNC_UNIX;
    } else if (!facts->metadata_synced) {
        reason = "fdatasync: the file grew or shrank since the last fdatasync (size and extents to commit)";
        action = WZS_SYNC_UNIX;
    }
    if (why != 0) {
        *why = reason;
    }
    return action;
}

int wzs_grow_gives_way(int err) {
    return err == ENOSPC || err == EDQUOT || err == EFBIG;
}

enum wzs_grow_step wzs_grow_step(const struct wzs_grow_facts* facts, uint64_t* target) {
    *target = wzs_grow_target(facts->current_bytes, facts->end_bytes, facts->chunk_bytes);
    if (*target <= facts->current_bytes || (facts->write_at <= facts->current_bytes && *target <= facts->end_bytes)) {
        return WZS_GROW_NOTHING;
    }
    if (facts->end_bytes <= facts->gave_way_at) {
        return WZS_GROW_WAIT;
    }
    return *target > facts->limit_bytes ? WZS_GROW_OVER_LIMIT : WZS_GROW_ZEROES;
}

void wzs_uri_defaults(struct wzs_uri_config* config) {
    config->wal_chunk_bytes = WZS_DEFAULT_WAL_CHUNK_BYTES;
    config->fast_sync_allowed = 1;
}

int wzs_uri_is_ours(const char* key) {
    return key != NULL && strncasecmp(key, "wzero_", 6) == 0;
}

/* Decimal digits only, at most INT64_MAX: what a file offset can hold. */
static const char* parse_bytes(const char* text, uint64_t* out) {
    uint64_t v = 0;
    if (*text == '\0') {
        return "empty: a number of bytes is expected";
    }
    for (const char* c = text; *c != '\0'; c++) {
        if (!isdigit((unsigned char)*c)) {
            return "not a number of bytes: decimal digits only (no sign, suffix, spaces or 0x)";
        }
        const uint64_t digit = (uint64_t)(*c - '0');
        if (v > ((uint64_t)INT64_MAX - digit) / 10) {
            return "too large: at most 9223372036854775807 bytes";
        }
        v = v * 10 + digit;
    }
    *out = v;
    return NULL;
}

const char* wzs_uri_apply(struct wzs_uri_config* config, const char* key, const char* value) {
    if (strcmp(key, "wzero_wal_chunk") == 0) {
        uint64_t bytes = 0;
        const char* why = parse_bytes(value, &bytes);
        if (why == NULL) {
            config->wal_chunk_bytes = bytes;
        }
        return why;
    }
    if (strcmp(key, "wzero_sync") == 0) {
        if (strcasecmp(value, "auto") == 0) {
            config->fast_sync_allowed = 1;
        } else if (strcasecmp(value, "fdatasync") == 0) {
            config->fast_sync_allowed = 0;
        } else {
            return "not a sync mode: auto or fdatasync";
        }
        return NULL;
    }
    return "unknown parameter: the wzero VFS reads wzero_wal_chunk and wzero_sync";
}
