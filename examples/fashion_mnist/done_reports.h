// How the workers of the distributed example tell the chief that they are
// done, in a way that a ps restart does not lose.
//
// Every replica but the chief has a flag on the ps tasks: a variable that
// nobody initializes but that replica, which is done once the flag has a
// value. No checkpoint holds the flags and no init op sets them, so a ps that
// restarts forgets them; a worker that has finished therefore keeps watching
// its flag and sets it again on the restarted ps, until the chief ends the
// job. The chief waits (boundedly) until every flag has a value.
#ifndef DISTFLOW_EXAMPLES_FASHION_MNIST_DONE_REPORTS_H_
#define DISTFLOW_EXAMPLES_FASHION_MNIST_DONE_REPORTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "distflow/distflow.h"

namespace fashion_mnist {

struct DoneFlags {
  // The flag of replica i is flags[i - 1] (the chief, replica 0, has none).
  std::vector<distflow::ops::Variable> flags;
  // is_set[i - 1]: a scalar bool, whether replica i's flag has a value.
  std::vector<distflow::Output> is_set;
  // A string vector naming the flags without a value: the replicas not done.
  distflow::Output not_done;
};

// Makes one flag per replica but the chief in `scope` (whose device function
// places them on the ps tasks); `replica_names[i]` names replica i's flag
// ("worker 1" makes "worker_1_done"). Make them after the init op, the ready
// op and the saver, which must leave them out.
DoneFlags MakeDoneFlags(const distflow::Scope& scope,
                        const std::vector<std::string>& replica_names);

// Replica `replica`'s end (not the chief's): sets its flag and keeps it set,
// through sessions of its own on `target`, until the chief ends the job (a ps
// refuses the step with OUT_OF_RANGE) or the ps tasks stay unreachable for a
// minute (they exited after the end). Each re-set after a ps restart is logged.
// OK then; the first other error of a step otherwise.
absl::Status ReportDoneUntilTheJobEnds(const distflow::Scope& root,
                                       const std::string& target,
                                       const DoneFlags& done, int replica,
                                       const std::string& replica_name);

// The chief's end: waits until every other replica's flag has a value (or a
// minute has passed: a worker that died never reports), reading them through
// `session` (which recovers from a ps restart), then ends the job on the ps
// tasks of `cluster` (EndJob).
absl::Status EndJobWhenOthersAreDone(
    distflow::train::RecoverableSession* session, const DoneFlags& done,
    const distflow::ClusterSpec& cluster);

}  // namespace fashion_mnist

#endif  // DISTFLOW_EXAMPLES_FASHION_MNIST_DONE_REPORTS_H_
