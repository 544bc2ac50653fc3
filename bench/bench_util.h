// Helpers for the distributed benchmarks: a ps task in a child process, timing.
#ifndef DISTFLOW_BENCH_BENCH_UTIL_H_
#define DISTFLOW_BENCH_BENCH_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace bench {

inline int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

// Starts `argv` as a child process; killed by the destructor.
class Child {
 public:
  explicit Child(std::vector<std::string> argv) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], nullptr, nullptr, args.data(), environ) !=
        0) {
      pid_ = -1;
    }
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// CPU time (user + system) process `pid` has used so far, in seconds; 0 when
// /proc does not tell. Per-step CPU time moves less with the load of a shared
// machine than wall time does.
inline double CpuSeconds(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return 0;
  char buffer[1024];
  const size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, f);
  std::fclose(f);
  buffer[n] = '\0';
  // Fields after the command name (which may hold spaces) start past ')';
  // utime and stime are fields 14 and 15.
  const char* p = std::strrchr(buffer, ')');
  unsigned long utime = 0, stime = 0;
  if (p == nullptr || std::sscanf(p + 2,
                                  "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
                                  "%*u %lu %lu",
                                  &utime, &stime) != 2) {
    return 0;
  }
  return static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK);
}

// The share of the machine's CPU time that its hypervisor gave to other
// guests ("steal" in /proc/stat) from construction to Share(). On a virtual
// machine whose host is oversubscribed it swings from nothing to more than
// half of the time, and every wall-clock rate swings with it; a comparison
// taken while one side lost its cores says nothing, so the benchmarks print
// this beside their rates. Negative when /proc/stat cannot be read.
class StealMeter {
 public:
  StealMeter() : start_(Read()) {}
  double Share() const {
    const Ticks now = Read();
    const double total = static_cast<double>(now.total - start_.total);
    if (start_.total == 0 || now.total == 0 || total <= 0) return -1;
    return static_cast<double>(now.steal - start_.steal) / total;
  }

 private:
  struct Ticks {
    unsigned long long steal = 0, total = 0;
  };
  static Ticks Read() {
    Ticks t;
    FILE* f = std::fopen("/proc/stat", "r");
    if (f == nullptr) return t;
    // "cpu  user nice system idle iowait irq softirq steal guest guest_nice"
    unsigned long long v[8] = {};
    const int n =
        std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                    &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    std::fclose(f);
    if (n != 8) return t;
    for (unsigned long long x : v) t.total += x;
    t.steal = v[7];
    return t;
  }
  Ticks start_;
};

// A measurement during which the host stole more than this share of the CPU
// time is not a comparison: the benchmarks that compare in rounds run more
// rounds (up to kExtraRoundsForSteal) to find quiet ones, and count a stolen
// round only when no round was quiet.
inline constexpr double kQuietStealShare = 0.05;
inline constexpr int kExtraRoundsForSteal = 3;

// The best of a comparison's rounds by that rule: `Best` gathers rounds (its
// caller's `add` folds one in), once over every round and once over the quiet
// ones, and best() is the quiet rounds' when there were any.
template <typename Best>
class QuietRounds {
 public:
  explicit QuietRounds(int rounds) : rounds_(rounds) {}
  // Whether to run another round: fewer than `rounds` were quiet, and fewer
  // than kExtraRoundsForSteal extra rounds have run.
  bool WantsAnother() const {
    return quiet_ < rounds_ && run_ < rounds_ + kExtraRoundsForSteal;
  }
  // Folds a round in with `add(Best*)`; `stolen` is its StealMeter share.
  template <typename Add>
  void Record(double stolen, const Add& add) {
    ++run_;
    add(&all_);
    if (stolen <= kQuietStealShare) {
      ++quiet_;
      add(&quiet_best_);
    }
  }
  const Best& best() const { return quiet_ > 0 ? quiet_best_ : all_; }
  bool any_quiet() const { return quiet_ > 0; }
  // The rounds that best() counts.
  int counted() const { return quiet_ > 0 ? quiet_ : run_; }

 private:
  const int rounds_;
  int run_ = 0, quiet_ = 0;
  Best all_, quiet_best_;
};

inline double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace bench

#endif  // DISTFLOW_BENCH_BENCH_UTIL_H_
