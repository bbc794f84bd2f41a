// SPDX-License-Identifier: MIT
// wz_rocksdb_ackwriter DIR FIRST COUNT RECYCLE FLUSH_EVERY [FS [close|nosync [STOP_FILE]]]
// Opens the RocksDB database DIR on the file system RocksDB's registry gives for FS ("wzero",
// the default; "posix": RocksDB's own, the control),
// writes keys FIRST .. FIRST+COUNT-1 with sync=true, printing "ack N" once each is
// acknowledged, flushes the memtable every FLUSH_EVERY keys (0: never; new WALs, recycled ones
// with RECYCLE > 0, under kSkipAnyCorruptedRecords), then exits without closing anything (a process death, for the recovery
// checks) unless "close" is given. "nosync": the crash tests' control, a writer that
// acknowledges what it has not made durable: sync=false and manual_wal_flush, so the WAL
// records since the last memtable flush stay in RocksDB's own buffer (a process death loses
// them) and reach at most the page cache (a power cut loses them). STOP_FILE: once it exists,
// "stop seen" is printed and 32 more keys are written (COUNT stays the limit). For the unit
// tests and the crash tests: a fresh process, so that no RocksDB thread pool is inherited
// across fork().
#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/utilities/object_registry.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unistd.h>

namespace rdb = ROCKSDB_NAMESPACE;

extern "C" int wzero_rocksdb_register(rdb::ObjectLibrary& library, const std::string& arg);

namespace {

// The kind RocksDB's error handler decides on, for the tests to assert.
const char* kind_of(const rdb::Status& s) {
    if (s.IsNoSpace()) {
        return "NoSpace";
    }
    if (s.IsPathNotFound()) {
        return "PathNotFound";
    }
    if (s.IsIOFenced()) {
        return "IOFenced";
    }
    if (s.IsIOError()) {
        return "IOError";
    }
    return "other";
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 6) {
        std::fprintf(stderr, "usage: %s DIR FIRST COUNT RECYCLE FLUSH_EVERY [wzero|posix [close|nosync [STOP_FILE]]]\n",
                     argv[0]);
        return 1;
    }
    const std::string dir = argv[1];
    const long first = std::strtol(argv[2], nullptr, 10);
    const long count = std::strtol(argv[3], nullptr, 10);
    const long recycle = std::strtol(argv[4], nullptr, 10);
    const long flush_every = std::strtol(argv[5], nullptr, 10);
    const std::string fs_name = argc > 6 ? argv[6] : "wzero";
    const bool close = argc > 7 && std::strcmp(argv[7], "close") == 0;
    const bool nosync = argc > 7 && std::strcmp(argv[7], "nosync") == 0;
    const std::string stop_file = argc > 8 ? argv[8] : "";
    long stop_at = -1;  // the last key, once the stop file was seen
    if (argc > 7 && !close && !nosync) {
        std::fprintf(stderr, "%s: unknown mode '%s' (close or nosync)\n", argv[0], argv[7]);
        return 1;
    }

    // The link-time route (plugin.cpp): the registrar into a registry of our own, not the
    // default library the loader filled.
    rdb::ConfigOptions config;
    config.registry = rdb::ObjectRegistry::NewInstance();
    config.registry->AddLibrary("wzero", wzero_rocksdb_register, "");
    std::shared_ptr<rdb::FileSystem> fs = rdb::FileSystem::Default();
    if (fs_name != "posix") {
        if (auto s = rdb::FileSystem::CreateFromString(config, fs_name, &fs); !s.ok()) {
            std::fprintf(stderr, "file system %s: %s\n", fs_name.c_str(), s.ToString().c_str());
            return 1;
        }
    }
    const std::unique_ptr<rdb::Env> env = rdb::NewCompositeEnv(fs);
    rdb::Options o;
    o.create_if_missing = true;
    o.env = env.get();
    o.recycle_log_file_num = static_cast<size_t>(recycle);
    if (recycle > 0) {
        // RocksDB 7.8.3 (SanitizeOptions) sets recycle_log_file_num to 0 under every recovery
        // mode but this one (rocksdb PR 7252): seen in its LOG, "Options.recycle_log_file_num: 0".
        o.wal_recovery_mode = rdb::WALRecoveryMode::kSkipAnyCorruptedRecords;
    }
    o.write_buffer_size = 4 << 20;  // a 4.4 MiB WAL preallocation block
    o.avoid_flush_during_shutdown = true;
    o.manual_wal_flush = nosync;
    rdb::DB* db = nullptr;
    if (auto s = rdb::DB::Open(o, dir, &db); !s.ok()) {
        std::fprintf(stderr, "open %s: %s: %s\n", dir.c_str(), kind_of(s), s.ToString().c_str());
        return 1;
    }
    rdb::WriteOptions w;
    w.sync = !nosync;
    for (long i = first; i < first + count && (stop_at < 0 || i <= stop_at); ++i) {
        if (stop_at < 0 && !stop_file.empty() && ::access(stop_file.c_str(), F_OK) == 0) {
            stop_at = i + 31;
            std::printf("stop seen\n");
            std::fflush(stdout);
        }
        const std::string key = "key" + std::to_string(i);
        const std::string value(100, static_cast<char>('a' + i % 26));
        if (auto s = db->Put(w, key, value); !s.ok()) {
            std::fprintf(stderr, "put %s: %s: %s\n", key.c_str(), kind_of(s), s.ToString().c_str());
            return 1;
        }
        std::printf("ack %ld\n", i);
        std::fflush(stdout);
        if (flush_every > 0 && (i - first + 1) % flush_every == 0) {
            if (auto s = db->Flush(rdb::FlushOptions()); !s.ok()) {
                std::fprintf(stderr, "flush: %s: %s\n", kind_of(s), s.ToString().c_str());
                return 1;
            }
        }
    }
    if (close) {
        const auto s = db->Close();
        delete db;
        return s.ok() ? 0 : 1;
    }
    ::_exit(0);  // no Close, no destructor: what a process death leaves
}
