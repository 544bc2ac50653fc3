#include "distributed/worker_interface.h"

#include <memory>
#include <utility>

#include "absl/synchronization/notification.h"
#include "core/tensor_coding.h"

namespace distflow {

void AddRunGraphFeeds(const std::vector<Tensor>& feeds,
                      proto::RunGraphRequest* request) {
  for (const Tensor& feed : feeds) TensorToProto(feed, request->add_feed());
}

absl::Status CallAndWait(const std::function<void(StatusCallback)>& call) {
  // Shared with the callback, which may still be returning when we wake.
  struct State {
    absl::Notification done;
    absl::Status status;
  };
  auto state = std::make_shared<State>();
  call([state](const absl::Status& s) {
    state->status = s;
    state->done.Notify();
  });
  state->done.WaitForNotification();
  return state->status;
}

absl::Status DecodeRunGraphFetches(const proto::RunGraphResponse& response,
                                   int num_fetches,
                                   std::vector<Tensor>* fetches) {
  fetches->assign(num_fetches, Tensor());
  const auto& out = response.fetch();
  for (int j = 0; j < out.size() && j < num_fetches; ++j) {
    if (out[j].dtype() == 0) continue;  // another partition's
    auto value = TensorFromProto(out[j]);
    if (!value.ok()) return value.status();
    (*fetches)[j] = std::move(*value);
  }
  return absl::OkStatus();
}

void WorkerInterface::RunGraphWithTensorsAsync(
    const proto::RunGraphRequest* request, std::vector<Tensor> feeds,
    std::vector<Tensor>* fetches, StatusCallback done) {
  struct Call {
    proto::RunGraphRequest request;
    proto::RunGraphResponse response;
  };
  auto call = std::make_shared<Call>();
  call->request = *request;
  AddRunGraphFeeds(feeds, &call->request);
  RunGraphAsync(&call->request, &call->response,
                [call, fetches, done = std::move(done)](const absl::Status& s) {
                  if (!s.ok()) {
                    done(s);
                    return;
                  }
                  done(DecodeRunGraphFetches(
                      call->response, call->request.num_fetches(), fetches));
                });
}

absl::Status WorkerInterface::RunGraphWithTensors(
    const proto::RunGraphRequest* request, std::vector<Tensor> feeds,
    std::vector<Tensor>* fetches) {
  // Shared with the callback, which may still be returning when we wake.
  struct State {
    absl::Notification done;
    absl::Status status;
  };
  auto state = std::make_shared<State>();
  RunGraphWithTensorsAsync(request, std::move(feeds), fetches,
                           [state](const absl::Status& s) {
                             state->status = s;
                             state->done.Notify();
                           });
  state->done.WaitForNotification();
  return state->status;
}

}  // namespace distflow
