// Seed 000 on three hosts: three network namespaces, each with its own
// network stack and address (10.77.0.1-3, private to the namespaces) on a
// bridge, run the program's tasks, launched the three ways a real cluster
// does: the seeds' flags, TF_CONFIG as Kubeflow writes it, and Slurm's
// variables; and the Fashion-MNIST trainer with a TFJob's Master replica.
// Needs root (or CAP_SYS_ADMIN) and iproute2; skipped otherwise.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "subprocess.h"

namespace distflow {
namespace {

using ::distflow::testing::Subprocess;
using ::testing::HasSubstr;

constexpr auto kCommandTimeout = std::chrono::seconds(10);
constexpr auto kJobTimeout = std::chrono::seconds(60);
constexpr int kSteps = 5;
// Namespaces are named kPrefix + pid + "-" + host, so parallel runs do not
// collide and leftovers of a killed run can be told apart.
constexpr char kPrefix[] = "distflow-test-";

std::string FindIp() {
  for (const char* path :
       {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

struct CommandResult {
  std::optional<int> code;  // nullopt: did not finish in time
  std::string output;
  bool ok() const { return code == 0; }
};

CommandResult RunCommand(const std::vector<std::string>& argv) {
  Subprocess process(argv);
  if (!process.started()) return {std::nullopt, "could not start " + argv[0]};
  auto code = process.Wait(kCommandTimeout);
  return {code, process.Output()};
}

// Three hosts: network namespaces joined by veth pairs to a bridge in the
// first, host i at 10.77.0.<i+1> with the name node0<i+1> in its own
// /etc/hosts (ip netns exec mounts /etc/netns/<name>/hosts over /etc/hosts).
// The destructor removes all of it.
class ThreeHosts {
 public:
  static constexpr int kCount = 3;

  ThreeHosts() : ip_(FindIp()) {}
  ~ThreeHosts() {
    for (int i = 0; i < kCount; ++i) Remove(Namespace(i));
  }
  ThreeHosts(const ThreeHosts&) = delete;
  ThreeHosts& operator=(const ThreeHosts&) = delete;

  // Empty when the hosts are up; else why not, and whether the machine does
  // not allow it (skip) rather than a setup step failing.
  std::string Create(bool* not_permitted) {
    *not_permitted = true;
    if (ip_.empty()) {
      return "iproute2's ip is not installed (scripts/install_deps.sh "
             "installs it)";
    }
    RemoveLeftovers();
    // A namespace of this pid can only be left from a run before a restart.
    for (int i = 0; i < kCount; ++i) Remove(Namespace(i));
    CommandResult add = Ip({"netns", "add", Namespace(0)});
    if (!add.ok()) {
      return absl::StrCat(
          "creating a network namespace is not permitted here (it needs root "
          "or CAP_SYS_ADMIN): ",
          add.output);
    }
    if (!WriteHostsFiles()) {
      return "cannot write /etc/netns/<namespace>/hosts (read-only /etc?)";
    }
    *not_permitted = false;
    const std::string hub = Namespace(0);
    std::vector<std::vector<std::string>> steps = {
        {"netns", "add", Namespace(1)},
        {"netns", "add", Namespace(2)},
        {"-n", hub, "link", "add", "br0", "type", "bridge"},
        {"-n", hub, "link", "set", "br0", "up"},
        {"-n", hub, "addr", "add", Address(0) + "/24", "dev", "br0"},
        {"-n", hub, "link", "set", "lo", "up"}};
    for (int i = 1; i < kCount; ++i) {
      const std::string peer = absl::StrCat("veth", i);
      steps.push_back({"link", "add", "eth0", "netns", Namespace(i), "type",
                       "veth", "peer", "name", peer, "netns", hub});
      steps.push_back({"-n", hub, "link", "set", peer, "master", "br0", "up"});
      steps.push_back({"-n", Namespace(i), "addr", "add", Address(i) + "/24",
                       "dev", "eth0"});
      steps.push_back({"-n", Namespace(i), "link", "set", "eth0", "up"});
      steps.push_back({"-n", Namespace(i), "link", "set", "lo", "up"});
    }
    for (const auto& step : steps) {
      CommandResult r = Ip(step);
      if (!r.ok()) {
        // A kernel without bridge or veth devices (some containers) is a
        // machine that does not allow the test, not a failure of distflow.
        *not_permitted = absl::StrContains(r.output, "not supported") ||
                         absl::StrContains(r.output, "Unknown device type") ||
                         absl::StrContains(r.output, "not permitted");
        return absl::StrCat("ip ", absl::StrJoin(step, " "),
                            " failed: ", r.output);
      }
    }
    return "";
  }

  std::string Namespace(int host) const {
    return absl::StrCat(kPrefix, getpid(), "-", host);
  }
  static std::string Address(int host) {
    return absl::StrCat("10.77.0.", host + 1);
  }
  static std::string HostName(int host) {
    return absl::StrCat("node0", host + 1);
  }
  // `argv` run on host `host`.
  std::unique_ptr<Subprocess> Start(int host,
                                    const std::vector<std::string>& argv) {
    std::vector<std::string> full = {ip_, "netns", "exec", Namespace(host)};
    full.insert(full.end(), argv.begin(), argv.end());
    return std::make_unique<Subprocess>(full);
  }

 private:
  CommandResult Ip(std::vector<std::string> args) const {
    args.insert(args.begin(), ip_);
    return RunCommand(args);
  }

  bool WriteHostsFiles() {
    for (int i = 0; i < kCount; ++i) {
      const std::string dir = "/etc/netns/" + Namespace(i);
      // A parallel run may remove /etc/netns between the two mkdirs.
      bool made = false;
      for (int attempt = 0; attempt < 3 && !made; ++attempt) {
        mkdir("/etc/netns", 0755);
        made = mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
      }
      if (!made) return false;
      std::ofstream hosts(dir + "/hosts");
      hosts << "127.0.0.1 localhost\n";
      for (int j = 0; j < kCount; ++j) {
        hosts << Address(j) << " " << HostName(j) << "\n";
      }
      if (!hosts.good()) return false;
    }
    return true;
  }

  // Ends the processes still in namespace `name` (tasks of a run that was
  // killed) and deletes it, which takes its links and the bridge with it.
  void Remove(const std::string& name) const {
    const std::string path = "/run/netns/" + name;
    if (!ip_.empty() && access(path.c_str(), F_OK) == 0) {
      for (absl::string_view pid_text : absl::StrSplit(
               Ip({"netns", "pids", name}).output, '\n', absl::SkipEmpty())) {
        int pid = 0;
        if (absl::SimpleAtoi(pid_text, &pid) && pid > 1) kill(pid, SIGKILL);
      }
      Ip({"netns", "del", name});
    }
    const std::string dir = "/etc/netns/" + name;
    unlink((dir + "/hosts").c_str());
    rmdir(dir.c_str());
    rmdir("/etc/netns");  // only if no other namespace has files there
  }

  // Namespaces of test runs that were killed before they could clean up.
  void RemoveLeftovers() const {
    for (const char* root : {"/run/netns", "/etc/netns"}) {
      DIR* dir = opendir(root);
      if (dir == nullptr) continue;
      std::vector<std::string> stale;
      while (dirent* entry = readdir(dir)) {
        absl::string_view name = entry->d_name;
        if (!absl::ConsumePrefix(&name, kPrefix)) continue;
        int pid = 0;
        if (!absl::SimpleAtoi(name.substr(0, name.find('-')), &pid)) continue;
        if (kill(pid, 0) != 0 && errno == ESRCH) stale.push_back(entry->d_name);
      }
      closedir(dir);
      for (const std::string& name : stale) Remove(name);
    }
  }

  std::string ip_;
};

class NetnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bool not_permitted = false;
    const std::string error = hosts_.Create(&not_permitted);
    if (error.empty()) return;
    if (not_permitted) GTEST_SKIP() << "three-host test skipped: " << error;
    FAIL() << error;
  }

  static std::string Binary() {
    return absl::StrCat(DISTFLOW_BIN_DIR, "/between_graph_matmul");
  }

  // Runs seed 000 with ps 0 on host 0, ps 1 on host 1 and the worker on host
  // 2; `command(host)` is each host's command line. The worker must print
  // [[20]] every step and every task exit 0.
  void RunSeed000(
      const std::function<std::vector<std::string>(int host)>& command) {
    std::vector<std::unique_ptr<Subprocess>> tasks;
    for (int host = 0; host < ThreeHosts::kCount; ++host) {
      tasks.push_back(hosts_.Start(host, command(host)));
      ASSERT_TRUE(tasks.back()->started());
    }
    Subprocess& worker = *tasks[2];
    auto code = worker.Wait(kJobTimeout);
    ASSERT_TRUE(code.has_value()) << "the worker hung: " << worker.Output();
    EXPECT_EQ(*code, 0) << worker.Output();
    int products = 0;
    for (absl::string_view line :
         absl::StrSplit(worker.Output(), '\n', absl::SkipEmpty())) {
      products += line == "[[20]]";
    }
    EXPECT_EQ(products, kSteps) << worker.Output();
    // The worker, as chief, ends both ps tasks when it is done.
    for (int host = 0; host < 2; ++host) {
      auto ps_code = tasks[host]->Wait(std::chrono::seconds(20));
      ASSERT_TRUE(ps_code.has_value())
          << "ps " << host << " did not exit: " << tasks[host]->Output();
      EXPECT_EQ(*ps_code, 0) << tasks[host]->Output();
    }
  }

  ThreeHosts hosts_;
};

TEST_F(NetnsTest, SeedFlags) {
  const std::string ps_hosts = absl::StrCat(ThreeHosts::Address(0), ":2222,",
                                            ThreeHosts::Address(1), ":2222");
  const std::string worker_hosts = ThreeHosts::Address(2) + ":2222";
  RunSeed000([&](int host) -> std::vector<std::string> {
    const bool ps = host < 2;
    return {Binary(),
            ps ? "--job_name=ps" : "--job_name=worker",
            absl::StrCat("--task_index=", ps ? host : 0),
            "--ps_hosts=" + ps_hosts,
            "--worker_hosts=" + worker_hosts,
            absl::StrCat("--steps=", kSteps)};
  });
}

TEST_F(NetnsTest, KubeflowTfConfig) {
  // What the TFJob operator writes, with the hosts' names for its Services'.
  const std::string cluster = absl::StrCat(
      R"({"cluster":{"ps":[")", ThreeHosts::HostName(0), R"(:2222",")",
      ThreeHosts::HostName(1), R"(:2222"],"worker":[")",
      ThreeHosts::HostName(2), R"(:2222"]},)");
  RunSeed000([&](int host) -> std::vector<std::string> {
    const bool ps = host < 2;
    const std::string task = absl::StrCat(
        R"("task":{"type":")", ps ? "ps" : "worker", R"(","index":)",
        ps ? host : 0, R"(},"environment":"cloud"})");
    return {"env", "TF_CONFIG=" + cluster + task, Binary(),
            absl::StrCat("--steps=", kSteps)};
  });
}

TEST_F(NetnsTest, SlurmEnvironment) {
  // What srun gives each rank of `sbatch --nodes=3 --ntasks=3`.
  RunSeed000([&](int host) -> std::vector<std::string> {
    return {"env",
            "SLURM_JOB_NODELIST=node[01-03]",
            "SLURM_TASKS_PER_NODE=1(x3)",
            "SLURM_NTASKS=3",
            absl::StrCat("SLURM_PROCID=", host),
            absl::StrCat("SLURM_NODEID=", host),
            "SLURM_LOCALID=0",
            Binary(),
            "--ps_count=2",
            absl::StrCat("--steps=", kSteps)};
  });
}

// A TFJob with a Master replica (TF 1.x's layout): the trainer runs the master
// as the chief on host 0, a ps on host 1 and a worker on host 2.
TEST_F(NetnsTest, KubeflowMasterReplicaTrainsFashionMnist) {
  if (access("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz",
             R_OK) != 0) {
    GTEST_SKIP() << "Debian's dataset-fashion-mnist is not installed";
  }
  const char* types[] = {"master", "ps", "worker"};
  const std::string cluster = absl::StrCat(
      R"({"cluster":{"master":[")", ThreeHosts::HostName(0),
      R"(:2222"],"ps":[")", ThreeHosts::HostName(1), R"(:2222"],"worker":[")",
      ThreeHosts::HostName(2), R"(:2222"]},)");
  std::vector<std::unique_ptr<Subprocess>> tasks;
  for (int host = 0; host < ThreeHosts::kCount; ++host) {
    const std::string tf_config =
        absl::StrCat(cluster, R"("task":{"type":")", types[host],
                     R"(","index":0},"environment":"cloud"})");
    tasks.push_back(
        hosts_.Start(host, {"env", "TF_CONFIG=" + tf_config,
                            absl::StrCat(DISTFLOW_BIN_DIR, "/fashion_mnist"),
                            "--train_steps=30", "--threads=1"}));
    ASSERT_TRUE(tasks.back()->started());
  }
  for (int host = 0; host < ThreeHosts::kCount; ++host) {
    auto code = tasks[host]->Wait(kJobTimeout);
    ASSERT_TRUE(code.has_value())
        << types[host] << " hung: " << tasks[host]->Output();
    EXPECT_EQ(*code, 0) << types[host] << ": " << tasks[host]->Output();
  }
  // The master is the chief: it evaluates the model at the end.
  EXPECT_THAT(tasks[0]->Output(), HasSubstr("test_accuracy="));
  EXPECT_THAT(tasks[2]->Output(), ::testing::Not(HasSubstr("test_accuracy=")));
}

}  // namespace
}  // namespace distflow
