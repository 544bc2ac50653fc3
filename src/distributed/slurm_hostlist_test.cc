#include "distributed/slurm_hostlist.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Expand(const std::string& hostlist) {
  auto hosts = ExpandSlurmHostlist(hostlist);
  EXPECT_TRUE(hosts.ok()) << hosts.status();
  return hosts.ok() ? *hosts : std::vector<std::string>{};
}

TEST(SlurmHostlistTest, SingleHostAndPlainList) {
  EXPECT_THAT(Expand("login5"), ElementsAre("login5"));
  EXPECT_THAT(Expand("node1,node7"), ElementsAre("node1", "node7"));
}

TEST(SlurmHostlistTest, RangesAndSingleNumbersInOneBracket) {
  // The example of Slurm's hostlist documentation.
  EXPECT_THAT(Expand("tux[0-5,12,20-22]"),
              ElementsAre("tux0", "tux1", "tux2", "tux3", "tux4", "tux5",
                          "tux12", "tux20", "tux21", "tux22"));
  EXPECT_THAT(
      Expand("node1,node[2-5,12]"),
      ElementsAre("node1", "node2", "node3", "node4", "node5", "node12"));
}

TEST(SlurmHostlistTest, ZeroPaddingIsKept) {
  EXPECT_THAT(Expand("node[01-03,07]"),
              ElementsAre("node01", "node02", "node03", "node07"));
  EXPECT_THAT(Expand("cn[098-101]"),
              ElementsAre("cn098", "cn099", "cn100", "cn101"));
  EXPECT_THAT(Expand("n[8-10]"), ElementsAre("n8", "n9", "n10"));
}

TEST(SlurmHostlistTest, SeveralEntriesWithSuffixesAndDashes) {
  EXPECT_THAT(Expand("node[01-03,07],gpu-[1-2]x,login5"),
              ElementsAre("node01", "node02", "node03", "node07", "gpu-1x",
                          "gpu-2x", "login5"));
  EXPECT_THAT(Expand("clip-g1-[0-1],clip-g2-[2-3]"),
              ElementsAre("clip-g1-0", "clip-g1-1", "clip-g2-2", "clip-g2-3"));
}

TEST(SlurmHostlistTest, SeveralBracketGroupsInOneName) {
  EXPECT_THAT(Expand("rack[1-2]-node[01-02]"),
              ElementsAre("rack1-node01", "rack1-node02", "rack2-node01",
                          "rack2-node02"));
}

TEST(SlurmHostlistTest, MalformedHostlistsNameTheFault) {
  struct Case {
    std::string hostlist;
    std::string expected;
  };
  const Case cases[] = {
      {"node[1-3", "never closed"},
      {"node1-3]", "']' without its '['"},
      {"node[]", "empty or nested bracket"},
      {"node[1-[2]]", "empty or nested bracket"},
      {"node[a-c]", "'a-c', which is neither a number nor a range"},
      {"node[1-2,,4]", "neither a number nor a range"},
      {"node[5-3]", "descending range '5-3'"},
      {"node1,,node2", "empty entry"},
      {"", "empty entry"},
      {"node[0-99999999]", "more than 1048576"},
      {"a[0-2047]b[0-1023]", "more than 1048576"},
      {"node1 node2", "contains blanks"},
  };
  for (const Case& c : cases) {
    auto hosts = ExpandSlurmHostlist(c.hostlist);
    ASSERT_FALSE(hosts.ok()) << c.hostlist;
    EXPECT_EQ(hosts.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(hosts.status().message(), HasSubstr(c.expected)) << c.hostlist;
    EXPECT_THAT(hosts.status().message(),
                HasSubstr("hostlist '" + c.hostlist + "'"));
  }
}

TEST(SlurmTaskCountsTest, RepeatsAndSingleCounts) {
  // The example of sbatch's documentation of SLURM_TASKS_PER_NODE.
  auto counts = ExpandSlurmTaskCounts("2(x3),1");
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_THAT(*counts, ElementsAre(2, 2, 2, 1));
  counts = ExpandSlurmTaskCounts("4");
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_THAT(*counts, ElementsAre(4));
  counts = ExpandSlurmTaskCounts("1(x2),3,2(x2)");
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_THAT(*counts, ElementsAre(1, 1, 3, 2, 2));
}

TEST(SlurmTaskCountsTest, MalformedCountsNameTheItem) {
  for (const char* value :
       {"2(x3", "2(3)", "2(x0)", "0", "x", "2,,1", "", "-1", "2(x-1)"}) {
    auto counts = ExpandSlurmTaskCounts(value);
    ASSERT_FALSE(counts.ok()) << value;
    EXPECT_THAT(counts.status().message(),
                HasSubstr(std::string("task counts '") + value + "'"));
  }
}

// A long name times many numbers is gigabytes of text from a short value:
// refused before it is built, in one group, across groups and across entries.
TEST(SlurmHostlistTest, HostNamesBeyond32MiBAreRefused) {
  const std::string prefix(4096, 'n');
  for (const std::string& hostlist :
       {prefix + "[0-999999]", "[0-999]" + prefix + "[0-999]",
        prefix + "[0-4999]," + prefix + "x[0-4999]"}) {
    auto hosts = ExpandSlurmHostlist(hostlist);
    EXPECT_EQ(hosts.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(hosts.status().message(), HasSubstr("bytes of host names"));
  }
  // Just under the limit still expands.
  auto hosts = ExpandSlurmHostlist(std::string(20, 'n') + "[000000-999999]");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  EXPECT_EQ(hosts->size(), 1000000u);
}

}  // namespace
}  // namespace distflow
