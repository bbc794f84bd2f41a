// SPDX-License-Identifier: MIT
// probe/file_kind: the enum internal code decides on, and the record's strings at the edge.

#include "probe/file_kind.hpp"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <string>

namespace wz {
namespace {

TEST(file_kind, from_mode) {
    EXPECT_EQ(file_kind_of(S_IFREG | 0644), file_kind::regular);
    EXPECT_EQ(file_kind_of(S_IFBLK | 0660), file_kind::block);
    EXPECT_EQ(file_kind_of(S_IFDIR | 0755), file_kind::directory);
    EXPECT_EQ(file_kind_of(S_IFIFO), file_kind::fifo);
    EXPECT_EQ(file_kind_of(S_IFCHR), file_kind::char_device);
    EXPECT_EQ(file_kind_of(S_IFSOCK), file_kind::socket);
    EXPECT_EQ(file_kind_of(S_IFLNK | 0777), file_kind::symlink);
    EXPECT_EQ(file_kind_of(0), file_kind::other);
}

// The record's strings are public (and in the JSON): they must not change.
TEST(file_kind, record_round_trip) {
    EXPECT_STREQ(record_name(file_kind::regular), "regular");
    EXPECT_STREQ(record_name(file_kind::block), "block");
    EXPECT_STREQ(record_name(file_kind::fifo), "");
    for (file_kind k : {file_kind::regular, file_kind::block}) {
        capabilities c;
        c.file_type = record_name(k);
        EXPECT_EQ(file_kind_of(c), k);
    }
    capabilities c;
    EXPECT_EQ(file_kind_of(c), file_kind::other);  // no type recorded
    c.file_type = "Block";
    EXPECT_EQ(file_kind_of(c), file_kind::other);
}

TEST(file_kind, describe_for_messages) {
    EXPECT_STREQ(describe(file_kind::fifo), "a FIFO");
    EXPECT_STREQ(describe(file_kind::char_device), "a character device");
    EXPECT_STREQ(describe(file_kind::socket), "a socket");
    EXPECT_STREQ(describe(file_kind::symlink), "a symbolic link");
    EXPECT_STREQ(describe(file_kind::directory), "a directory");
    EXPECT_STREQ(describe(file_kind::other), "not a regular file or block device");
}

}  // namespace
}  // namespace wz
