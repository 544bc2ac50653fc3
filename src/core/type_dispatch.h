// Calls a generic lambda with the C++ element type of a DataType.
#ifndef DISTFLOW_CORE_TYPE_DISPATCH_H_
#define DISTFLOW_CORE_TYPE_DISPATCH_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "distflow/types.h"

namespace distflow {

// A value-less stand-in for a type, so that a generic lambda can receive it.
template <typename T>
struct TypeTag {
  using type = T;
};

// fn(TypeTag<T>{}) for the numeric element type T of `dtype` (float32, float64,
// int32, int64, uint8); INVALID_ARGUMENT for other types. `fn` returns
// absl::Status.
template <typename Fn>
absl::Status VisitNumericType(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat:
      return fn(TypeTag<float>{});
    case DataType::kDouble:
      return fn(TypeTag<double>{});
    case DataType::kInt32:
      return fn(TypeTag<int32_t>{});
    case DataType::kInt64:
      return fn(TypeTag<int64_t>{});
    case DataType::kUInt8:
      return fn(TypeTag<uint8_t>{});
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("expected a numeric type, got ", DataTypeName(dtype)));
}

// fn(TypeTag<T>{}) for the element type T of `dtype`; INVALID_ARGUMENT for
// kInvalid. `fn` returns absl::Status.
template <typename Fn>
absl::Status VisitDataType(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kBool:
      return fn(TypeTag<bool>{});
    case DataType::kString:
      return fn(TypeTag<std::string>{});
    case DataType::kResource:
      return fn(TypeTag<ResourceHandle>{});
    case DataType::kInvalid:
      return absl::InvalidArgumentError("unsupported data type invalid(0)");
    default:
      return VisitNumericType(dtype, std::forward<Fn>(fn));
  }
}

}  // namespace distflow

#endif  // DISTFLOW_CORE_TYPE_DISPATCH_H_
