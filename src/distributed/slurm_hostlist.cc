#include "distributed/slurm_hostlist.h"

#include <cstdint>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace distflow {
namespace {

// Beyond any real allocation; stops "n[0-999999999]" from eating the memory.
constexpr size_t kMaxHosts = 1 << 20;
// The names' text, all together: a million hosts of 32 characters. Without it
// "n[0-999999]" after a 4 KiB literal would stand for 4 GiB.
constexpr size_t kMaxHostBytes = size_t{32} << 20;

size_t TotalBytes(const std::vector<std::string>& names) {
  size_t total = 0;
  for (const std::string& name : names) total += name.size();
  return total;
}

absl::Status TooLong(absl::string_view entry) {
  return absl::InvalidArgumentError(absl::StrCat(
      "entry '", entry.substr(0, 200), entry.size() > 200 ? "...'" : "'",
      " stands for more than ", kMaxHostBytes, " bytes of host names"));
}

bool AllDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Every number a bracket's body ("01-03,07") stands for, as text with its
// padding.
absl::StatusOr<std::vector<std::string>> ExpandBracket(absl::string_view body) {
  std::vector<std::string> out;
  for (absl::string_view item : absl::StrSplit(body, ',')) {
    const size_t dash = item.find('-');
    const absl::string_view lo_text = item.substr(0, dash);
    const absl::string_view hi_text =
        dash == absl::string_view::npos ? lo_text : item.substr(dash + 1);
    uint64_t lo = 0, hi = 0;
    if (!AllDigits(lo_text) || !AllDigits(hi_text) || lo_text.size() > 18 ||
        hi_text.size() > 18 || !absl::SimpleAtoi(lo_text, &lo) ||
        !absl::SimpleAtoi(hi_text, &hi)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'[", body, "]' holds '", item,
          "', which is neither a number nor a range such as 01-04"));
    }
    if (hi < lo) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'[", body, "]' holds the descending range '", item, "'"));
    }
    if (hi - lo >= kMaxHosts || out.size() + (hi - lo) >= kMaxHosts) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'[", body, "]' stands for more than ", kMaxHosts, " numbers"));
    }
    for (uint64_t v = lo; v <= hi; ++v) {
      std::string digits = absl::StrCat(v);
      if (digits.size() < lo_text.size()) {
        digits.insert(0, lo_text.size() - digits.size(), '0');
      }
      out.push_back(std::move(digits));
    }
  }
  return out;
}

// The hosts of one entry ("gpu-[1-2]x"): literal text and bracket groups,
// every combination in order.
absl::StatusOr<std::vector<std::string>> ExpandEntry(absl::string_view entry) {
  std::vector<std::string> hosts = {""};
  size_t host_bytes = 0;  // TotalBytes(hosts)
  size_t pos = 0;
  while (pos < entry.size()) {
    const size_t open = entry.find('[', pos);
    const absl::string_view literal = entry.substr(pos, open - pos);
    if (literal.find(']') != absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("entry '", entry, "' has a ']' without its '['"));
    }
    // hosts.size() <= kMaxHosts and literal.size() < entry.size(): no
    // overflow.
    if (literal.size() > kMaxHostBytes ||
        host_bytes + hosts.size() * literal.size() > kMaxHostBytes) {
      return TooLong(entry);
    }
    for (std::string& host : hosts) absl::StrAppend(&host, literal);
    host_bytes += hosts.size() * literal.size();
    if (open == absl::string_view::npos) break;
    const size_t close = entry.find(']', open);
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("entry '", entry, "' has a '[' that is never closed"));
    }
    const absl::string_view body = entry.substr(open + 1, close - open - 1);
    if (body.empty() || body.find('[') != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "entry '", entry, "' has an empty or nested bracket: write ",
          "node[01-04]"));
    }
    auto numbers = ExpandBracket(body);
    if (!numbers.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("entry '", entry, "': ", numbers.status().message()));
    }
    if (hosts.size() * numbers->size() > kMaxHosts) {
      return absl::InvalidArgumentError(absl::StrCat(
          "entry '", entry, "' stands for more than ", kMaxHosts, " hosts"));
    }
    // Each factor is at most kMaxHostBytes or kMaxHosts (2^25 * 2^20, and
    // numbers of at most 18 digits): far from overflowing.
    const size_t next_bytes =
        host_bytes * numbers->size() + TotalBytes(*numbers) * hosts.size();
    if (next_bytes > kMaxHostBytes) return TooLong(entry);
    std::vector<std::string> next;
    next.reserve(hosts.size() * numbers->size());
    for (const std::string& host : hosts) {
      for (const std::string& number : *numbers) {
        next.push_back(absl::StrCat(host, number));
      }
    }
    hosts = std::move(next);
    host_bytes = next_bytes;
    pos = close + 1;
  }
  return hosts;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandSlurmHostlist(
    absl::string_view hostlist) {
  auto fail = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("hostlist '", hostlist, "': ", why));
  };
  // Split at the commas outside brackets.
  std::vector<absl::string_view> entries;
  size_t start = 0;
  bool in_bracket = false;
  for (size_t i = 0; i <= hostlist.size(); ++i) {
    if (i == hostlist.size() || (hostlist[i] == ',' && !in_bracket)) {
      entries.push_back(hostlist.substr(start, i - start));
      start = i + 1;
    } else if (hostlist[i] == '[') {
      in_bracket = true;
    } else if (hostlist[i] == ']') {
      in_bracket = false;
    }
  }
  std::vector<std::string> hosts;
  size_t host_bytes = 0;
  for (absl::string_view entry : entries) {
    if (entry.empty()) return fail("has an empty entry (two commas in a row?)");
    if (entry.find_first_of(" \t\n") != absl::string_view::npos) {
      return fail(absl::StrCat("entry '", entry, "' contains blanks"));
    }
    auto expanded = ExpandEntry(entry);
    if (!expanded.ok()) return fail(expanded.status().message());
    if (hosts.size() + expanded->size() > kMaxHosts) {
      return fail(absl::StrCat("stands for more than ", kMaxHosts, " hosts"));
    }
    host_bytes += TotalBytes(*expanded);
    if (host_bytes > kMaxHostBytes) {
      return fail(absl::StrCat("stands for more than ", kMaxHostBytes,
                               " bytes of host names"));
    }
    for (std::string& host : *expanded) hosts.push_back(std::move(host));
  }
  return hosts;
}

absl::StatusOr<std::vector<int>> ExpandSlurmTaskCounts(
    absl::string_view value) {
  std::vector<int> counts;
  for (absl::string_view item : absl::StrSplit(value, ',')) {
    absl::string_view count_text = item;
    int repeat = 1;
    const size_t paren = item.find('(');
    if (paren != absl::string_view::npos) {
      count_text = item.substr(0, paren);
      absl::string_view rest = item.substr(paren);
      if (rest.size() < 4 || rest.substr(0, 2) != "(x" || rest.back() != ')' ||
          !AllDigits(rest.substr(2, rest.size() - 3)) ||
          !absl::SimpleAtoi(rest.substr(2, rest.size() - 3), &repeat) ||
          repeat <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("task counts '", value, "': '", item,
                         "' is not COUNT or COUNT(xNODES), such as 2(x3)"));
      }
    }
    int count = 0;
    if (!AllDigits(count_text) || !absl::SimpleAtoi(count_text, &count) ||
        count <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("task counts '", value, "': '", item,
                       "' does not start with a positive count"));
    }
    if (counts.size() + repeat > kMaxHosts) {
      return absl::InvalidArgumentError(absl::StrCat(
          "task counts '", value, "' cover more than ", kMaxHosts, " nodes"));
    }
    counts.insert(counts.end(), repeat, count);
  }
  return counts;
}

}  // namespace distflow
