// Slurm's compressed lists, as its environment variables carry them.
//
// A hostlist ("node[01-03,07],gpu-[1-2]x,login5", SLURM_JOB_NODELIST) names
// nodes with bracketed numeric ranges; a task count list ("2(x3),1",
// SLURM_TASKS_PER_NODE) gives the tasks of each node, a count followed by
// "(xN)" standing for N nodes in a row.
#ifndef DISTFLOW_DISTRIBUTED_SLURM_HOSTLIST_H_
#define DISTFLOW_DISTRIBUTED_SLURM_HOSTLIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distflow {

// The host names of `hostlist`, in Slurm's order. Entries are separated by
// commas outside brackets; a bracket holds comma-separated numbers and ranges
// ("01-03,07"), and a range keeps the zero padding of its first number ("08-10"
// gives 08, 09, 10). Several bracket groups in one name ("r[1-2]n[1-3]")
// expand to every combination, the leftmost group varying slowest, as Slurm
// does. INVALID_ARGUMENT naming the hostlist and the fault for an unclosed or
// empty bracket, a non-numeric or descending range, an empty entry, or more
// than a million hosts or 32 MiB of host names.
absl::StatusOr<std::vector<std::string>> ExpandSlurmHostlist(
    absl::string_view hostlist);

// The per-node task counts of "2(x3),1" ({2, 2, 2, 1}). INVALID_ARGUMENT
// naming the value and the fault for anything but positive counts with
// optional positive "(xN)" repeats.
absl::StatusOr<std::vector<int>> ExpandSlurmTaskCounts(absl::string_view value);

}  // namespace distflow

#endif  // DISTFLOW_DISTRIBUTED_SLURM_HOSTLIST_H_
