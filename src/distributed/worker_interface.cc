#include "distributed/worker_interface.h"

#include <memory>
#include <utility>

#include "core/tensor_coding.h"

namespace distflow {

void WorkerInterface::RunGraphWithTensorsAsync(
    const proto::RunGraphRequest* request, std::vector<Tensor> feeds,
    std::vector<Tensor>* fetches, StatusCallback done) {
  struct Call {
    proto::RunGraphRequest request;
    proto::RunGraphResponse response;
  };
  auto call = std::make_shared<Call>();
  call->request = *request;
  for (const Tensor& feed : feeds)
    TensorToProto(feed, call->request.add_feed());
  RunGraphAsync(&call->request, &call->response,
                [call, fetches, done = std::move(done)](const absl::Status& s) {
                  if (!s.ok()) {
                    done(s);
                    return;
                  }
                  const int n = call->request.num_fetches();
                  fetches->assign(n, Tensor());
                  const auto& out = call->response.fetch();
                  for (int j = 0; j < out.size() && j < n; ++j) {
                    if (out[j].dtype() == 0) continue;  // another partition's
                    auto value = TensorFromProto(out[j]);
                    if (!value.ok()) {
                      done(value.status());
                      return;
                    }
                    (*fetches)[j] = std::move(*value);
                  }
                  done(absl::OkStatus());
                });
}

}  // namespace distflow
