#include "graph/node_builder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "core/type_dispatch.h"

namespace distflow {
namespace {

// `t` converted to `dtype` (numeric types only).
absl::StatusOr<Tensor> CastLiteral(const Tensor& t, DataType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out(dtype, t.shape());
  DF_RETURN_IF_ERROR(VisitNumericType(t.dtype(), [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    return VisitNumericType(dtype, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      auto src = t.flat<From>();
      auto dst = out.flat<To>();
      for (size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<To>(src[i]);
      return absl::OkStatus();
    });
  }));
  return out;
}

}  // namespace

NodeBuilder::NodeBuilder(const Scope& scope, std::string op,
                         const std::string& default_name)
    : scope_(scope) {
  def_.set_op(std::move(op));
  if (scope_.ok()) def_.set_name(scope_.GetUniqueNameForOp(default_name));
}

NodeBuilder& NodeBuilder::Input(const Output& output) {
  if (!output.valid()) {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(absl::StrCat(
          def_.op(), " '", def_.name(), "': input ", def_.input_size(),
          " is invalid (the op that should produce it failed, or a list "
          "literal is ragged)"));
    }
    return *this;
  }
  def_.add_input(output.index() == 0 ? output.node()->name()
                                     : absl::StrCat(output.node()->name(), ":",
                                                    output.index()));
  return *this;
}

NodeBuilder& NodeBuilder::Input(const std::vector<Output>& list) {
  for (const Output& o : list) Input(o);
  return *this;
}

NodeBuilder& NodeBuilder::ControlInput(const Operation& op) {
  if (op.valid()) def_.add_input(absl::StrCat("^", op.name()));
  return *this;
}

NodeBuilder& NodeBuilder::Attr(const std::string& name,
                               proto::AttrValue value) {
  (*def_.mutable_attr())[name] = std::move(value);
  return *this;
}

Operation NodeBuilder::Finalize() {
  if (!scope_.ok()) return Operation();
  scope_.UpdateStatus(status_);
  if (!status_.ok()) return Operation();
  for (const Operation& dep : scope_.control_dependencies()) ControlInput(dep);
  const Operation& coloc = scope_.colocate_with();
  if (coloc.valid()) {
    def_.set_device(coloc.node()->requested_device());
    proto::AttrValue cls;
    cls.mutable_list()->add_s(absl::StrCat("loc:@", coloc.name()));
    (*def_.mutable_attr())["_class"] = std::move(cls);
  }
  auto node = scope_.graph()->AddNode(std::move(def_));
  if (!node.ok()) {
    scope_.UpdateStatus(node.status());
    return Operation();
  }
  Operation op(*node);
  if (!coloc.valid()) {
    auto device = scope_.DeviceFor(op);
    if (!device.ok()) {
      scope_.UpdateStatus(device.status());
      return Operation();
    }
    (*node)->set_requested_device(*device);
  }
  return op;
}

Output ConstNode(const Scope& scope, const Tensor& value) {
  return NodeBuilder(scope, "Const", "Const")
      .Attr("value", value)
      .Attr("dtype", value.dtype())
      .Finalize()
      .output(0);
}

Output AsOutput(const Scope& scope, const Input& input) {
  if (input.is_output()) return input.output();
  // A fresh sub-scope: the op name given by WithOpName belongs to the op, not
  // to its constants.
  return ConstNode(scope.NewSubScope(""), input.tensor());
}

std::vector<Output> AsOutputsOfOneType(const Scope& scope,
                                       const std::vector<Input>& inputs) {
  DataType common = DataType::kInvalid;
  for (const distflow::Input& in : inputs) {
    if (in.is_output() && in.output().valid()) {
      common = in.output().dtype();
      break;
    }
  }
  std::vector<Output> outputs;
  for (const distflow::Input& in : inputs) {
    if (in.is_literal() && common != DataType::kInvalid &&
        in.tensor().dtype() != common) {
      auto cast = CastLiteral(in.tensor(), common);
      if (!cast.ok()) {
        scope.UpdateStatus(AddErrorContext(
            cast.status(), absl::StrCat("literal ", in.tensor().DebugString(),
                                        " as ", DataTypeName(common))));
        outputs.push_back(Output());
        continue;
      }
      outputs.push_back(AsOutput(scope, *cast));
    } else {
      outputs.push_back(AsOutput(scope, in));
    }
  }
  return outputs;
}

Output AsOutputOfType(const Scope& scope, const Input& input, DataType dtype) {
  if (!input.is_literal() || input.tensor().dtype() == dtype) {
    return AsOutput(scope, input);
  }
  auto cast = CastLiteral(input.tensor(), dtype);
  if (!cast.ok()) {
    scope.UpdateStatus(AddErrorContext(
        cast.status(), absl::StrCat("literal ", input.tensor().DebugString(),
                                    " as ", DataTypeName(dtype))));
    return Output();
  }
  return AsOutput(scope, *cast);
}

}  // namespace distflow
