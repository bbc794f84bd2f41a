// SPDX-License-Identifier: MIT
// libwzero_rocksdb.so: registers the wzero FileSystem with RocksDB's default object library
// when the library is loaded, so that a program that never heard of wzero finds it by name:
//   LD_PRELOAD=libwzero_rocksdb.so db_bench --fs_uri=wzero ...
// db_bench's --fs_uri goes to Env::CreateFromUri, FileSystem::CreateFromString and
// ObjectRegistry::Default(), whose first library is ObjectLibrary::Default(): the one filled
// here. A program that links the library instead can also call wzero_rocksdb_register() on a
// library of its own (ObjectRegistry::AddLibrary("wzero", wzero_rocksdb_register, "")).
#include "wzero_fs.hpp"

#include <rocksdb/utilities/object_registry.h>
#include <rocksdb/version.h>

#include <cstdio>

namespace rdb = ROCKSDB_NAMESPACE;

extern "C" __attribute__((visibility("default"))) int wzero_rocksdb_register(rdb::ObjectLibrary& library,
                                                                            const std::string& /*arg*/) {
    using wz::rocksdb_plugin::wzero_file_system;
    library.AddFactory<rdb::FileSystem>(
        rdb::ObjectLibrary::PatternEntry(wzero_file_system::kClassName()),
        [](const std::string& /*uri*/, std::unique_ptr<rdb::FileSystem>* guard, std::string* /*errmsg*/) {
            guard->reset(new wzero_file_system(rdb::FileSystem::Default()));
            return guard->get();
        });
    return 1;
}

namespace {

// Runs when the dynamic loader initialises this library: after librocksdb's own initialisers
// (a library's dependencies are initialised first), before the program's main().
[[maybe_unused]] const int registered = [] {
    const int n = wzero_rocksdb_register(*rdb::ObjectLibrary::Default(), "");
    if (wz::rocksdb_plugin::verbose()) {
        std::fprintf(stderr, "wzero-rocksdb: registered FileSystem \"%s\" with RocksDB %s's default object library\n",
                     wz::rocksdb_plugin::wzero_file_system::kClassName(), rdb::GetRocksVersionAsString().c_str());
    }
    return n;
}();

}  // namespace
