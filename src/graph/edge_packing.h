// Which cut edges of a placed graph cross between tasks packed together.
//
// Every tensor that crosses between two tasks costs a transfer of its own
// every step, and for a small tensor that fixed cost is all there is: a
// between-graph training step of a small network moves each bias, and each
// small weight, from the ps and its gradient back. The partitioner
// (graph/partition.h) joins the small tensors that go from one task to
// another into one transfer following this plan: gathered on the sender
// without a copy (core/gathered_tensor.h), received into one buffer, sliced
// and reshaped.
#ifndef DISTFLOW_GRAPH_EDGE_PACKING_H_
#define DISTFLOW_GRAPH_EDGE_PACKING_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "graph/graph.h"

namespace distflow {

// Tensors of at most this many bytes are packed, into packs of at most
// kMaxPackBytes (a tensor that would overflow a pack starts another).
//
// A packed tensor saves a transfer of its own: a message, its answer and
// the wake-ups of both tasks. It costs no copy: the sender's transport reads
// each member where it lies, and the receiver's slices are views. For an
// MLP of 0.94 MB, whose 784x256 weights (0.78 MiB) and their gradients cross
// with the rest (one transfer each way), a 1 ps + 1 worker step took less
// CPU in 6 of 8 alternating runs (median 3.86 against 4.10 ms of both tasks'
// CPU) than with only the tensors of up to 64 KiB packed, when packing still
// cost the sender a concatenation. Bulk data is another
// matter: eight 1 MiB tensors each way in packs of 4 MiB made 88-119 steps/s
// over TCP against 123-149 with a transfer each (those overlap). With packs
// of at most 1 MiB, a 1 MiB tensor crosses alone and smaller ones in
// transfers of about that size, which measured within the noise of unpacked
// ones (docs/benchmarks.md, "Packing tensors of up to 1 MiB").
inline constexpr int64_t kMaxPackedTensorBytes = 1 << 20;
inline constexpr int64_t kMaxPackBytes = 1 << 20;

// The tensors of one packed transfer: outputs of nodes on `src_task`, all of
// `dtype` and of fully known shapes, consumed on `dst_task`.
struct EdgePack {
  std::string src_task;
  std::string dst_task;
  DataType dtype = DataType::kFloat;
  std::vector<Endpoint> members;  // in the order they are concatenated
};

struct EdgePackingPlan {
  std::vector<EdgePack> packs;
  // (source node name, output index, destination task) -> (pack, member).
  std::map<std::tuple<std::string, int, std::string>, std::pair<int, int>>
      member_of;
};

// Groups the packable cut edges of `graph` (whose nodes all have an assigned
// device) by source task, destination task and dtype, in the graph's order,
// starting a new group where the last would pass kMaxPackBytes; keeps only
// groups of two or more. A packed transfer waits for all its tensors, so a
// group is kept only if that wait cannot close a cycle: each kept group's
// "every consumer waits for every member" dependencies, added to the graph's
// edges and to the groups kept before it, must leave the graph acyclic, so no
// step can deadlock on a packed transfer.
EdgePackingPlan PlanEdgePacking(const Graph& graph);

}  // namespace distflow

#endif  // DISTFLOW_GRAPH_EDGE_PACKING_H_
