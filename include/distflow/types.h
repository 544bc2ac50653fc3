// Element types of tensors.
#ifndef DISTFLOW_TYPES_H_
#define DISTFLOW_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace distflow {

// The numbers match proto::DataType (proto/types.proto), the wire encoding.
enum class DataType : int {
  kInvalid = 0,
  kFloat = 1,
  kDouble = 2,
  kInt32 = 3,
  kUInt8 = 4,
  kString = 7,
  kInt64 = 9,
  kBool = 10,
  kResource = 20,  // a handle to a resource, such as a variable, on one device
};

// "float32", "float64", "int32", "int64", "uint8", "bool", "string",
// "resource".
std::string DataTypeName(DataType type);

// Bytes per element; 0 for types whose elements are objects (string, resource).
size_t DataTypeSize(DataType type);

// True for float32 and float64.
bool DataTypeIsFloating(DataType type);

// True if `type` is one of the enumerators above other than kInvalid.
bool DataTypeIsValid(DataType type);

// A handle to a resource that lives on a device: the element type of kResource
// tensors.
struct ResourceHandle {
  std::string device;     // full device name, such as
                          // /job:ps/replica:0/task:0/device:CPU:0
  std::string container;  // groups resources; "" is the default container
  std::string
      name;  // unique within the container, such as the variable's node name
  DataType dtype = DataType::kInvalid;  // the dtype of the value it holds

  bool operator==(const ResourceHandle& o) const {
    return device == o.device && container == o.container && name == o.name &&
           dtype == o.dtype;
  }
};

// DataTypeOf<T>::value is the DataType whose elements are T.
template <typename T>
struct DataTypeOf;
#define DISTFLOW_DATA_TYPE_OF_(T, enumerator)               \
  template <>                                               \
  struct DataTypeOf<T> {                                    \
    static constexpr DataType value = DataType::enumerator; \
  }
DISTFLOW_DATA_TYPE_OF_(float, kFloat);
DISTFLOW_DATA_TYPE_OF_(double, kDouble);
DISTFLOW_DATA_TYPE_OF_(int32_t, kInt32);
DISTFLOW_DATA_TYPE_OF_(int64_t, kInt64);
DISTFLOW_DATA_TYPE_OF_(uint8_t, kUInt8);
DISTFLOW_DATA_TYPE_OF_(bool, kBool);
DISTFLOW_DATA_TYPE_OF_(std::string, kString);
DISTFLOW_DATA_TYPE_OF_(ResourceHandle, kResource);
#undef DISTFLOW_DATA_TYPE_OF_

}  // namespace distflow

#endif  // DISTFLOW_TYPES_H_
