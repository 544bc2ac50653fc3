#include "graph/device_name.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::HasSubstr;

DeviceName MustParse(const std::string& name) {
  auto d = DeviceName::Parse(name);
  EXPECT_TRUE(d.ok()) << name << ": " << d.status();
  return d.ok() ? *d : DeviceName();
}

TEST(DeviceNameTest, ParsesFullName) {
  DeviceName d = MustParse("/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(d.job, "ps");
  EXPECT_EQ(d.replica, 0);
  EXPECT_EQ(d.task, 1);
  EXPECT_EQ(d.type, "CPU");
  EXPECT_EQ(d.id, 0);
  EXPECT_TRUE(d.IsFullySpecified());
  EXPECT_EQ(d.ToString(), "/job:ps/replica:0/task:1/device:CPU:0");
}

TEST(DeviceNameTest, ParsesPartialName) {
  DeviceName d = MustParse("/job:ps/task:1");
  EXPECT_EQ(d.job, "ps");
  EXPECT_FALSE(d.replica.has_value());
  EXPECT_EQ(d.task, 1);
  EXPECT_FALSE(d.type.has_value());
  EXPECT_FALSE(d.id.has_value());
  EXPECT_FALSE(d.IsFullySpecified());
  EXPECT_EQ(d.ToString(), "/job:ps/task:1");
}

TEST(DeviceNameTest, ParsesLegacyShortForm) {
  DeviceName d = MustParse("/cpu:0");
  EXPECT_FALSE(d.job.has_value());
  EXPECT_EQ(d.type, "CPU");
  EXPECT_EQ(d.id, 0);
  EXPECT_EQ(d.ToString(), "/device:CPU:0");
  EXPECT_EQ(MustParse("/gpu:1").ToString(), "/device:GPU:1");
}

TEST(DeviceNameTest, AcceptsTrailingSlash) {
  DeviceName d = MustParse("/job:worker/task:0/cpu:0/");
  EXPECT_EQ(d.job, "worker");
  EXPECT_EQ(d.task, 0);
  EXPECT_EQ(d.type, "CPU");
  EXPECT_EQ(d.id, 0);
  EXPECT_EQ(d.ToString(), "/job:worker/task:0/device:CPU:0");
}

TEST(DeviceNameTest, ParsesAnyDeviceOfAType) {
  DeviceName d = MustParse("/device:CPU:*");
  EXPECT_EQ(d.type, "CPU");
  EXPECT_FALSE(d.id.has_value());
  EXPECT_EQ(d.ToString(), "/device:CPU:*");
  // Types are upper-cased.
  EXPECT_EQ(MustParse("/device:gpu:2").ToString(), "/device:GPU:2");
}

TEST(DeviceNameTest, EmptyNameIsTheEmptySpec) {
  DeviceName d = MustParse("");
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(d.ToString(), "");
  EXPECT_FALSE(MustParse("/task:0").empty());
}

TEST(DeviceNameTest, ToStringIsCanonicalAndRoundTrips) {
  // Fields in any order come out in canonical order.
  DeviceName d = MustParse("/device:CPU:0/task:2/job:ps/replica:1");
  EXPECT_EQ(d.ToString(), "/job:ps/replica:1/task:2/device:CPU:0");
  EXPECT_EQ(MustParse(d.ToString()), d);
}

TEST(DeviceNameTest, MalformedNamesAreInvalidArgumentNamingTheString) {
  for (const char* bad : {"job:ps", "/task:x", "/job:ps/foo:1", "/task:-1",
                          "/job:", "/job:1ps", "/device:CPU", "/device:CPU:x",
                          "/cpu:zero", "/job:ps/task:1:2", "/device::0"}) {
    auto d = DeviceName::Parse(bad);
    ASSERT_FALSE(d.ok()) << bad << " parsed as " << d->ToString();
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(d.status().message(), HasSubstr(absl::StrCat("'", bad, "'")))
        << bad;
  }
}

TEST(DeviceNameTest, MergeFromOverridesFieldsTheOtherSets) {
  DeviceName d = MustParse("/job:ps/task:0/device:CPU:0");
  d.MergeFrom(MustParse("/task:1"));
  EXPECT_EQ(d.ToString(), "/job:ps/task:1/device:CPU:0");
  d.MergeFrom(MustParse("/job:worker/replica:2"));
  EXPECT_EQ(d.ToString(), "/job:worker/replica:2/task:1/device:CPU:0");
  // A new type replaces the id too: "any GPU", not GPU 0.
  d.MergeFrom(MustParse("/device:GPU:*"));
  EXPECT_EQ(d.ToString(), "/job:worker/replica:2/task:1/device:GPU:*");
  d.MergeFrom(DeviceName());
  EXPECT_EQ(d.ToString(), "/job:worker/replica:2/task:1/device:GPU:*");
}

TEST(DeviceNameTest, MergeDeviceNames) {
  auto merged = MergeDeviceNames("/job:ps", "/task:1");
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(*merged, "/job:ps/task:1");
  merged = MergeDeviceNames("/job:ps/task:0", "/job:worker/cpu:0");
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(*merged, "/job:worker/task:0/device:CPU:0");
  merged = MergeDeviceNames("", "");
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(*merged, "");
  auto bad = MergeDeviceNames("/job:ps", "/job:ps/bogus:1");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("/job:ps/bogus:1"));
}

TEST(DeviceNameTest, MatchesComparesOnlyTheFieldsSet) {
  const DeviceName full = MustParse("/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_TRUE(DeviceName().Matches(full));
  EXPECT_TRUE(MustParse("/job:ps").Matches(full));
  EXPECT_TRUE(MustParse("/job:ps/task:1").Matches(full));
  EXPECT_TRUE(MustParse("/device:CPU:*").Matches(full));
  EXPECT_TRUE(MustParse("/cpu:0").Matches(full));
  EXPECT_TRUE(full.Matches(full));
  EXPECT_FALSE(MustParse("/job:worker").Matches(full));
  EXPECT_FALSE(MustParse("/job:ps/task:0").Matches(full));
  EXPECT_FALSE(MustParse("/replica:1").Matches(full));
  EXPECT_FALSE(MustParse("/device:GPU:*").Matches(full));
  EXPECT_FALSE(MustParse("/cpu:1").Matches(full));
  // A partial device does not match a spec that sets a field it lacks.
  EXPECT_FALSE(MustParse("/task:1").Matches(MustParse("/job:ps")));
}

}  // namespace
}  // namespace distflow
