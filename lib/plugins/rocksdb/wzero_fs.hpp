// SPDX-License-Identifier: MIT
// The wzero FileSystem for RocksDB: a FileSystemWrapper over RocksDB's default (POSIX) file
// system that preallocates the WAL and the MANIFEST as written zeroes and syncs them without
// flushes that do nothing. What it does with each file, and why: file_policy.hpp.
#pragma once

#include <rocksdb/file_system.h>

#include <memory>
#include <string>

namespace wz::rocksdb_plugin {

class wzero_file_system : public ROCKSDB_NAMESPACE::FileSystemWrapper {
public:
    explicit wzero_file_system(const std::shared_ptr<ROCKSDB_NAMESPACE::FileSystem>& target);

    // The name in RocksDB's object registry (--fs_uri=wzero) and in its logs.
    static const char* kClassName() { return "wzero"; }
    const char* Name() const override { return kClassName(); }

    ROCKSDB_NAMESPACE::IOStatus NewWritableFile(const std::string& fname, const ROCKSDB_NAMESPACE::FileOptions& options,
                                                std::unique_ptr<ROCKSDB_NAMESPACE::FSWritableFile>* result,
                                                ROCKSDB_NAMESPACE::IODebugContext* dbg) override;
    ROCKSDB_NAMESPACE::IOStatus ReuseWritableFile(const std::string& fname, const std::string& old_fname,
                                                  const ROCKSDB_NAMESPACE::FileOptions& options,
                                                  std::unique_ptr<ROCKSDB_NAMESPACE::FSWritableFile>* result,
                                                  ROCKSDB_NAMESPACE::IODebugContext* dbg) override;
};

// WZERO_ROCKSDB_VERBOSE set (and not "0"): one line per decision on stderr, "wzero-rocksdb: ...".
[[nodiscard]] bool verbose();

}  // namespace wz::rocksdb_plugin
