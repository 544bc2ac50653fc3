// Device names: "/job:ps/replica:0/task:1/device:CPU:0" and partial forms such
// as "/job:ps",
// "/job:worker/task:0", "/cpu:0" or "/device:CPU:*".
#ifndef DISTFLOW_GRAPH_DEVICE_NAME_H_
#define DISTFLOW_GRAPH_DEVICE_NAME_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distflow {

struct DeviceName {
  std::optional<std::string> job;
  std::optional<int> replica;
  std::optional<int> task;
  std::optional<std::string> type;  // upper case, such as "CPU"
  std::optional<int>
      id;  // unset with a type means any device of the type ("*")

  // Parses a full or partial name; "" is the empty spec. INVALID_ARGUMENT
  // naming the string and the field at fault.
  static absl::StatusOr<DeviceName> Parse(absl::string_view name);

  // The canonical string of the fields that are set:
  // "/job:ps/replica:0/task:1/device:CPU:0".
  std::string ToString() const;
  bool empty() const { return !job && !replica && !task && !type && !id; }
  bool IsFullySpecified() const { return job && replica && task && type && id; }

  // Fields set in `other` replace this spec's (inner device scopes override
  // outer ones).
  void MergeFrom(const DeviceName& other);
  // True if every field this spec sets equals that field of `device`.
  bool Matches(const DeviceName& device) const;

  bool operator==(const DeviceName& o) const {
    return job == o.job && replica == o.replica && task == o.task &&
           type == o.type && id == o.id;
  }
};

// Merges two device strings, `inner` overriding `outer`; INVALID_ARGUMENT if
// either is malformed.
absl::StatusOr<std::string> MergeDeviceNames(absl::string_view outer,
                                             absl::string_view inner);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_DEVICE_NAME_H_
