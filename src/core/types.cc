#include "distflow/types.h"

#include <string>

namespace distflow {

std::string DataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat:
      return "float32";
    case DataType::kDouble:
      return "float64";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kUInt8:
      return "uint8";
    case DataType::kBool:
      return "bool";
    case DataType::kString:
      return "string";
    case DataType::kResource:
      return "resource";
    case DataType::kInvalid:
      break;
  }
  return "invalid(" + std::to_string(static_cast<int>(type)) + ")";
}

size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kFloat:
      return sizeof(float);
    case DataType::kDouble:
      return sizeof(double);
    case DataType::kInt32:
      return sizeof(int32_t);
    case DataType::kInt64:
      return sizeof(int64_t);
    case DataType::kUInt8:
      return sizeof(uint8_t);
    case DataType::kBool:
      return sizeof(bool);
    default:
      return 0;
  }
}

bool DataTypeIsFloating(DataType type) {
  return type == DataType::kFloat || type == DataType::kDouble;
}

bool DataTypeIsValid(DataType type) {
  switch (type) {
    case DataType::kFloat:
    case DataType::kDouble:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt8:
    case DataType::kBool:
    case DataType::kString:
    case DataType::kResource:
      return true;
    case DataType::kInvalid:
      break;
  }
  return false;
}

}  // namespace distflow
