// Early-return helpers for absl::Status and absl::StatusOr.
#ifndef DISTFLOW_BASE_STATUS_MACROS_H_
#define DISTFLOW_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DF_STATUS_CONCAT_INNER_(a, b) a##b
#define DF_STATUS_CONCAT_(a, b) DF_STATUS_CONCAT_INNER_(a, b)

// Returns from the enclosing function if `expr` (an absl::Status) is not OK.
#define DF_RETURN_IF_ERROR(expr)             \
  do {                                       \
    ::absl::Status df_status_ = (expr);      \
    if (!df_status_.ok()) return df_status_; \
  } while (0)

// `lhs` = value of `rexpr` (an absl::StatusOr<T>), or returns its error.
#define DF_ASSIGN_OR_RETURN(lhs, rexpr)                                     \
  DF_ASSIGN_OR_RETURN_IMPL_(DF_STATUS_CONCAT_(df_statusor_, __LINE__), lhs, \
                            rexpr)

#define DF_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                              \
  if (!statusor.ok()) return statusor.status();         \
  lhs = std::move(statusor).value()

namespace distflow {

// Returns `status` with `context` prepended to its message ("context:
// message"), same code.
absl::Status AddErrorContext(const absl::Status& status,
                             absl::string_view context);

}  // namespace distflow

#endif  // DISTFLOW_BASE_STATUS_MACROS_H_
