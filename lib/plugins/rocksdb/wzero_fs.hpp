// SPDX-License-Identifier: MIT
// The wzero FileSystem for RocksDB: a FileSystemWrapper over RocksDB's default (POSIX) file
// system that preallocates the WAL and the MANIFEST as written zeroes and syncs them without
// flushes that do nothing. What it does with each file, and why: file_policy.hpp.
#pragma once

#include <rocksdb/file_system.h>

#include <wzero/wzero.hpp>

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

// A failure as RocksDB's own file system reports it (env/io_posix.cc, IOError()), so that
// RocksDB's error handler treats it alike: ENOSPC is NoSpace and retryable (the DB resumes once
// space is freed), ENOENT PathNotFound, ESTALE a stale file, anything else IOError; a wzero run
// stopped because another process opened or truncated the file (error_reason::lease_lost) is
// IOFenced: somebody else has the file. Worded "While CONTEXT: FILE" as RocksDB does.
[[nodiscard]] ROCKSDB_NAMESPACE::IOStatus io_status_of(const std::string& context, const std::string& file,
                                                       int err);
[[nodiscard]] ROCKSDB_NAMESPACE::IOStatus io_status_of(const std::string& context, const std::string& file,
                                                       const wz::error_info& e);

// WZERO_ROCKSDB_VERBOSE set (and not "0"): one line per decision on stderr, "wzero-rocksdb: ...".
[[nodiscard]] bool verbose();

}  // namespace wz::rocksdb_plugin
