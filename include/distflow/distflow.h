// distflow: the whole public API.
#ifndef DISTFLOW_DISTFLOW_H_
#define DISTFLOW_DISTFLOW_H_

#include "distflow/cluster.h"
#include "distflow/data.h"
#include "distflow/gradients.h"
#include "distflow/graph_file.h"
#include "distflow/layers.h"
#include "distflow/ops.h"
#include "distflow/partitioned_variable.h"
#include "distflow/replica_device_setter.h"
#include "distflow/scope.h"
#include "distflow/server.h"
#include "distflow/session.h"
#include "distflow/tensor.h"
#include "distflow/tensor_shape.h"
#include "distflow/train/bounded_staleness.h"
#include "distflow/train/clip.h"
#include "distflow/train/global_step.h"
#include "distflow/train/hooks.h"
#include "distflow/train/learning_rate.h"
#include "distflow/train/monitored_session.h"
#include "distflow/train/optimizer.h"
#include "distflow/train/optimizers.h"
#include "distflow/train/recoverable_session.h"
#include "distflow/train/saver.h"
#include "distflow/train/session_run_hook.h"
#include "distflow/train/summary.h"
#include "distflow/train/sync_replicas_optimizer.h"
#include "distflow/types.h"

#endif  // DISTFLOW_DISTFLOW_H_
