// Bytes -> Slurm's compressed host and task-count lists
// (distributed/slurm_hostlist.h), as SLURM_JOB_NODELIST and
// SLURM_TASKS_PER_NODE carry them: a short value can stand for millions of
// names, which must be refused before they are built.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "distributed/slurm_hostlist.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  (void)distflow::ExpandSlurmHostlist(text);
  (void)distflow::ExpandSlurmTaskCounts(text);
  return 0;
}
