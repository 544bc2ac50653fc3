#include "graph/device_name.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace distflow {
namespace {

absl::Status BadName(absl::string_view name, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("device name '", name, "' is malformed: ", why,
                   "; expected /job:NAME/replica:N/task:N/device:TYPE:N or a "
                   "part of it, such as /job:ps/task:1 "
                   "or /cpu:0"));
}

bool ParseIndex(absl::string_view s, int* out) {
  return absl::SimpleAtoi(s, out) && *out >= 0;
}

// A job name or device type: a letter, then letters, digits or '_'.
bool ValidName(absl::string_view s) {
  if (s.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(s[0])))
    return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<DeviceName> DeviceName::Parse(absl::string_view name) {
  DeviceName d;
  if (name.empty()) return d;
  if (name[0] != '/') return BadName(name, "it must start with '/'");
  std::vector<absl::string_view> parts =
      absl::StrSplit(name.substr(1), '/', absl::SkipEmpty());
  for (absl::string_view part : parts) {
    std::vector<absl::string_view> kv = absl::StrSplit(part, ':');
    const std::string key = absl::AsciiStrToLower(kv[0]);
    if (key == "job" && kv.size() == 2) {
      if (!ValidName(kv[1]))
        return BadName(name, absl::StrCat("bad job name '", kv[1], "'"));
      d.job = std::string(kv[1]);
    } else if ((key == "replica" || key == "task") && kv.size() == 2) {
      int v;
      if (!ParseIndex(kv[1], &v)) {
        return BadName(name, absl::StrCat("bad ", key, " index '", kv[1], "'"));
      }
      (key == "replica" ? d.replica : d.task) = v;
    } else if (key == "device" && kv.size() == 3) {
      if (!ValidName(kv[1])) {
        return BadName(name, absl::StrCat("bad device type '", kv[1], "'"));
      }
      d.type = absl::AsciiStrToUpper(kv[1]);
      if (kv[2] != "*") {
        int v;
        if (!ParseIndex(kv[2], &v)) {
          return BadName(name, absl::StrCat("bad device index '", kv[2], "'"));
        }
        d.id = v;
      }
    } else if ((key == "cpu" || key == "gpu") && kv.size() == 2) {
      // The legacy short form "/cpu:0".
      d.type = absl::AsciiStrToUpper(key);
      if (kv[1] != "*") {
        int v;
        if (!ParseIndex(kv[1], &v)) {
          return BadName(name, absl::StrCat("bad device index '", kv[1], "'"));
        }
        d.id = v;
      }
    } else {
      return BadName(name, absl::StrCat("unknown part '", part, "'"));
    }
  }
  return d;
}

std::string DeviceName::ToString() const {
  std::string s;
  if (job) absl::StrAppend(&s, "/job:", *job);
  if (replica) absl::StrAppend(&s, "/replica:", *replica);
  if (task) absl::StrAppend(&s, "/task:", *task);
  if (type)
    absl::StrAppend(&s, "/device:", *type, ":", id ? absl::StrCat(*id) : "*");
  return s;
}

void DeviceName::MergeFrom(const DeviceName& other) {
  if (other.job) job = other.job;
  if (other.replica) replica = other.replica;
  if (other.task) task = other.task;
  if (other.type) {
    type = other.type;
    id = other.id;
  }
}

bool DeviceName::Matches(const DeviceName& device) const {
  if (job && job != device.job) return false;
  if (replica && replica != device.replica) return false;
  if (task && task != device.task) return false;
  if (type && type != device.type) return false;
  if (id && id != device.id) return false;
  return true;
}

absl::StatusOr<std::string> MergeDeviceNames(absl::string_view outer,
                                             absl::string_view inner) {
  DF_ASSIGN_OR_RETURN(DeviceName merged, DeviceName::Parse(outer));
  DF_ASSIGN_OR_RETURN(DeviceName in, DeviceName::Parse(inner));
  merged.MergeFrom(in);
  return merged.ToString();
}

}  // namespace distflow
