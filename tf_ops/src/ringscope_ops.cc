// TensorFlow custom ops over the ringscope runtime: asynchronous kernels for
// allreduce, allgather, broadcast, reducescatter, alltoall and join, and the
// in-place broadcast of resource variables. Each op hands its tensor to
// ringscope under the name given by Python (derived from the TF op or
// variable name, so traces show names the user recognises) and completes
// TensorFlow's `done` from ringscope's callback, carrying any error message.
// CPU kernels for every op; in builds with CUDA (RINGSCOPE_TF_GPU), GPU
// kernels too for allreduce, grouped allreduce, allgather, broadcast and the
// in-place broadcast, the ops the runtime runs on device memory through NCCL
// (placement.h says how the two differ). Reducescatter and alltoall have CPU
// kernels only: TensorFlow places them on the CPU and copies a GPU tensor
// there and back. Compiled with TensorFlow's flags (C++17); includes only
// ringscope.h of the runtime.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <locale>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "placement.h"
#include "ringscope/ringscope.h"
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/resource_mgr.h"
#include "tensorflow/core/framework/resource_var.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tf = tensorflow;
using ringscope_tf::Placement;

namespace ringscope_tf {
namespace {
class CpuPlacement : public Placement {
 public:
  tf::Status begin(tf::OpKernelContext*, Call*) const override { return tf::Status(); }
  tf::Status ready(const Call&) const override { return tf::Status(); }
  ringscope::Device device(const Call&) const override { return ringscope::Device::cpu(); }
  tf::Status copy(const Call&, void* dst, const void* src, size_t bytes) const override {
    if (bytes > 0) std::memcpy(dst, src, bytes);
    return tf::Status();
  }
};
}  // namespace

const Placement& cpu_placement() {
  static const CpuPlacement cpu;
  return cpu;
}
}  // namespace ringscope_tf

namespace {

// The placement of a kernel built for `device_type`.
const Placement& placement_for(const tf::DeviceType& device_type) {
#if RINGSCOPE_TF_GPU
  if (device_type == tf::DEVICE_GPU) return ringscope_tf::gpu_placement();
#endif
  return ringscope_tf::cpu_placement();
}

bool to_ringscope_dtype(tf::DataType t, ringscope::DataType* out) {
  switch (t) {
    case tf::DT_UINT8:
      *out = ringscope::DataType::kUInt8;
      return true;
    case tf::DT_INT32:
      *out = ringscope::DataType::kInt32;
      return true;
    case tf::DT_INT64:
      *out = ringscope::DataType::kInt64;
      return true;
    case tf::DT_HALF:
      *out = ringscope::DataType::kFloat16;
      return true;
    case tf::DT_BFLOAT16:
      *out = ringscope::DataType::kBFloat16;
      return true;
    case tf::DT_FLOAT:
      *out = ringscope::DataType::kFloat32;
      return true;
    case tf::DT_DOUBLE:
      *out = ringscope::DataType::kFloat64;
      return true;
    case tf::DT_INT8:
      *out = ringscope::DataType::kInt8;
      return true;
    case tf::DT_INT16:
      *out = ringscope::DataType::kInt16;
      return true;
    case tf::DT_UINT16:
      *out = ringscope::DataType::kUInt16;
      return true;
    default:
      return false;
  }
}

ringscope::Shape to_shape(const tf::TensorShape& s) {
  ringscope::Shape out;
  for (int i = 0; i < s.dims(); ++i) out.push_back(s.dim_size(i));
  return out;
}

tf::Status to_tf_status(const ringscope::Status& s) {
  if (s.ok()) return tf::Status();
  std::string msg = "ringscope: " + s.to_string();
  // What runs one op twice at once in TensorFlow.
  if (s.code() == ringscope::StatusCode::kDuplicateName)
    msg +=
        ". In TensorFlow: a Dataset.map (or interleave) with num_parallel_calls over a function "
        "with collectives, or one tf.function called from two threads; map with "
        "num_parallel_calls=None, or give each concurrent call its own name "
        "(docs/tensorflow.md, \"Collectives in tf.data\")";
  switch (s.code()) {
    case ringscope::StatusCode::kInvalidArgument:
    case ringscope::StatusCode::kDuplicateName:
      return tf::errors::InvalidArgument(msg);
    // Ranks that disagree about a tensor: Horovod's class for it, which
    // ported code catches.
    case ringscope::StatusCode::kMismatch:
      return tf::errors::FailedPrecondition(msg);
    case ringscope::StatusCode::kTimeout:
      return tf::errors::DeadlineExceeded(msg);
    case ringscope::StatusCode::kNotInitialized:
      return tf::errors::FailedPrecondition(msg);
    case ringscope::StatusCode::kShutdown:
    case ringscope::StatusCode::kStalled:
      return tf::errors::Aborted(msg);
    case ringscope::StatusCode::kOutOfMemory:
      return tf::errors::ResourceExhausted(msg);
    // A dead peer is what recovery code catches (UnavailableError), as it
    // does for TensorFlow's own collectives; Internal says "a bug".
    case ringscope::StatusCode::kPeerFailure:
    case ringscope::StatusCode::kIoError:
      return tf::errors::Unavailable(msg);
    case ringscope::StatusCode::kUnimplemented:
      return tf::errors::Unimplemented(msg);
    case ringscope::StatusCode::kCorrupt:
      return tf::errors::DataLoss(msg);
    default:
      return tf::errors::Internal(msg);
  }
}

// Shared part of the kernels: attributes, dtype, placement, the callback.
class RingscopeKernel : public tf::AsyncOpKernel {
 public:
  explicit RingscopeKernel(tf::OpKernelConstruction* ctx)
      : AsyncOpKernel(ctx), placement_(placement_for(ctx->device_type())) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("tensor_name", &tensor_name_));
    if (tensor_name_.empty()) tensor_name_ = name();  // the graph node name
    // The set of ranks the op runs among, as Horovod's process_set_id: 0 is
    // every rank (add_process_set makes the others).
    OP_REQUIRES_OK(ctx, ctx->GetAttr("process_set_id", &process_set_));
  }

 protected:
  bool dtype_of(tf::OpKernelContext* ctx, ringscope::DataType* out, const DoneCallback& done) {
    if (to_ringscope_dtype(ctx->input(0).dtype(), out)) return true;
    ctx->SetStatus(tf::errors::InvalidArgument("ringscope: unsupported dtype ",
                                               tf::DataTypeString(ctx->input(0).dtype()),
                                               " for tensor '", tensor_name_, "'"));
    done();
    return false;
  }
  // Completes the op; `call` (the placement's event) lives until then.
  static ringscope::DoneCallback finish(tf::OpKernelContext* ctx, DoneCallback done,
                                        Placement::Call call) {
    return [ctx, done, call = std::move(call)](const ringscope::Status& s) {
      if (!s.ok()) ctx->SetStatus(to_tf_status(s));
      done();
    };
  }
  // For an immediate rejection from submit().
  static void fail_now(tf::OpKernelContext* ctx, const ringscope::Status& s,
                       const DoneCallback& done) {
    ctx->SetStatus(to_tf_status(s));
    done();
  }
  const Placement& placement_;
  std::string tensor_name_;
  int process_set_ = 0;
};

class AllreduceOp : public RingscopeKernel {
 public:
  explicit AllreduceOp(tf::OpKernelConstruction* ctx) : RingscopeKernel(ctx) {
    int op = 0;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("reduce_op", &op));
    OP_REQUIRES(ctx, op >= 0 && op <= 4,
                tf::errors::InvalidArgument(
                    "reduce_op must be 0..4 (Sum, Average, Min, Max, Product)"));
    reduce_op_ = static_cast<ringscope::ReduceOp>(op);
    OP_REQUIRES_OK(ctx, scale_factor_attr(ctx, "prescale_factor", &prescale_));
    OP_REQUIRES_OK(ctx, scale_factor_attr(ctx, "postscale_factor", &postscale_));
  }
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    ringscope::DataType dtype;
    if (!dtype_of(ctx, &dtype, done)) return;
    const tf::Tensor& in = ctx->input(0);
    Placement::Call call;
    OP_REQUIRES_OK_ASYNC(ctx, placement_.begin(ctx, &call), done);
    void* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, output_for(ctx, 0, result_is_input(), &out), done);
    OP_REQUIRES_OK_ASYNC(ctx, placement_.ready(call), done);
    const ringscope::Device device = placement_.device(call);
    ringscope::Status s = ringscope::allreduce_async(
        tensor_name_, dtype, to_shape(in.shape()), in.tensor_data().data(), out, reduce_op_,
        finish(ctx, done, std::move(call)), prescale_, postscale_, device, process_set_);
    if (!s.ok()) fail_now(ctx, s, done);
  }

 protected:
  // Among one rank with nothing to scale the result is the input. Asked
  // once per call: the set's size takes the process's lock.
  bool result_is_input() const {
    return prescale_ == 1.0 && postscale_ == 1.0 && ringscope::process_set_size(process_set_) == 1;
  }
  // Where input i's result lands. Where `result_is_input`, the output is
  // the input tensor itself (TensorFlow tensors are immutable and shared,
  // as Identity's output is) and the runtime, handed the same pointer
  // twice, writes nothing. Otherwise in place where TensorFlow lets the
  // input's buffer be the output's (no one else holds it), else a new
  // buffer.
  tf::Status output_for(tf::OpKernelContext* ctx, int i, bool result_is_input, void** out) const {
    const tf::Tensor& in = ctx->input(i);
    if (result_is_input) {
      ctx->set_output(i, in);
      *out = const_cast<char*>(in.tensor_data().data());  // never written
      return tf::Status();
    }
    tf::Tensor* t = nullptr;
    TF_RETURN_IF_ERROR(ctx->forward_input_or_allocate_output({i}, i, in.shape(), &t));
    *out = const_cast<char*>(t->tensor_data().data());
    return tf::Status();
  }
  ringscope::ReduceOp reduce_op_ = ringscope::ReduceOp::kSum;
  double prescale_ = 1.0, postscale_ = 1.0;

 private:
  // A scale factor travels as decimal text: a TensorFlow "float" attr holds
  // 32 bits, and float32(0.04) * 25 truncates to 0 in an int32 Sum, float32
  // (1/3) is off by 3e-8 for float64 tensors. Python writes repr(float(x)),
  // which parses back to the same double.
  static tf::Status scale_factor_attr(tf::OpKernelConstruction* ctx, const char* attr,
                                      double* out) {
    std::string text;
    TF_RETURN_IF_ERROR(ctx->GetAttr(attr, &text));
    // The classic locale: a decimal comma locale must not change the
    // value. (std::from_chars for double would need libstdc++ 11.)
    std::istringstream in(text);
    in.imbue(std::locale::classic());
    in >> *out;
    if (text.empty() || in.fail() || !in.eof() || !std::isfinite(*out))
      return tf::errors::InvalidArgument(attr,
                                         " must be a finite number written as text (as "
                                         "Python's repr(float(x))), got '",
                                         text, "'");
    return tf::Status();
  }
};

// The attributes of an allreduce; the output is this rank's rows only.
class ReducescatterOp : public AllreduceOp {
 public:
  using AllreduceOp::AllreduceOp;
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    ringscope::DataType dtype;
    if (!dtype_of(ctx, &dtype, done)) return;
    const tf::Tensor& in = ctx->input(0);
    // Rows split among the process set's ranks (the world's for set 0).
    const int n = ringscope::process_set_size(process_set_),
              r = ringscope::process_set_rank(process_set_);
    OP_REQUIRES_ASYNC(ctx, ringscope::is_initialized(),
                      tf::errors::FailedPrecondition("ringscope is not initialised: call init()"),
                      done);
    OP_REQUIRES_ASYNC(ctx, n > 0 && r >= 0,
                      tf::errors::InvalidArgument("ringscope reducescatter of '", tensor_name_,
                                                  "': this rank is not in process set ",
                                                  process_set_, ", or it does not exist"),
                      done);
    // A scalar goes to the runtime as it is: its coordinator fails it on
    // every rank alike (refusing it here would leave the others waiting).
    tf::TensorShape out_shape = in.shape();
    if (in.dims() >= 1) out_shape.set_dim(0, ringscope::reducescatter_rows(in.dim_size(0), n, r));
    tf::Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, out_shape, &out), done);
    ringscope::Status s = ringscope::reducescatter_async(
        tensor_name_, dtype, to_shape(in.shape()), in.tensor_data().data(),
        const_cast<char*>(out->tensor_data().data()), reduce_op_, finish(ctx, done, nullptr),
        prescale_, postscale_, ringscope::Device::cpu(), process_set_);
    if (!s.ok()) fail_now(ctx, s, done);
  }
};

}  // namespace

// The member names of eager groups, registered once by Python under a key
// (the op's tensor_name attr): an eager op's attrs are converted and hashed
// on every call, and a list of 200 names there cost ~430 us a step. A key
// names one list for the life of the process (Python derives it from the
// names).
class GroupNames {
 public:
  static GroupNames& get() {
    static GroupNames* names = new GroupNames;  // outlives every kernel
    return *names;
  }
  void put(const std::string& key, std::vector<std::string> names) {
    auto list = std::make_shared<const std::vector<std::string>>(std::move(names));
    std::lock_guard<std::mutex> lock(mu_);
    by_key_[key] = std::move(list);
  }
  std::shared_ptr<const std::vector<std::string>> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_key_.find(key);
    return it == by_key_.end() ? nullptr : it->second;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const std::vector<std::string>>> by_key_;
};

extern "C" void ringscope_c_register_group(const char* key, const char* const* names, int n) {
  std::vector<std::string> list;
  for (int i = 0; i < n; ++i) list.emplace_back(names[i]);
  GroupNames::get().put(key ? key : "", std::move(list));
}

namespace {

// N tensors of one dtype allreduced with one hand-off to the runtime and
// one completion (each still its own op: negotiated, fused and traced by its
// name). Names: tensor_names; else those registered under tensor_name
// (ringscope_c_register_group); else "<tensor_name or node name>/<i>".
class GroupedAllreduceOp : public AllreduceOp {
 public:
  explicit GroupedAllreduceOp(tf::OpKernelConstruction* ctx) : AllreduceOp(ctx) {
    std::vector<std::string> names;
    OP_REQUIRES_OK(ctx, ctx->GetAttr("tensor_names", &names));
    const int n = ctx->num_inputs();
    OP_REQUIRES(ctx, names.empty() || static_cast<int>(names.size()) == n,
                tf::errors::InvalidArgument("ringscope grouped allreduce: ", names.size(),
                                            " tensor_names for ", n, " tensors"));
    if (names.empty()) {
      names_ = GroupNames::get().find(tensor_name_);
      if (names_ && static_cast<int>(names_->size()) == n) return;
      for (int i = 0; i < n; ++i) names.push_back(tensor_name_ + "/" + std::to_string(i));
    }
    names_ = std::make_shared<const std::vector<std::string>>(std::move(names));
  }
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    ringscope::DataType dtype;
    if (!dtype_of(ctx, &dtype, done)) return;
    const int n = ctx->num_inputs();
    Placement::Call call;
    OP_REQUIRES_OK_ASYNC(ctx, placement_.begin(ctx, &call), done);
    std::vector<ringscope::AllreduceItem> items(static_cast<size_t>(n));
    const bool alias = result_is_input();
    for (int i = 0; i < n; ++i) {
      const tf::Tensor& in = ctx->input(i);
      ringscope::AllreduceItem& item = items[static_cast<size_t>(i)];
      OP_REQUIRES_OK_ASYNC(ctx, output_for(ctx, i, alias, &item.output), done);
      item.name = (*names_)[static_cast<size_t>(i)];
      item.shape = to_shape(in.shape());
      item.input = in.tensor_data().data();
    }
    OP_REQUIRES_OK_ASYNC(ctx, placement_.ready(call), done);
    const ringscope::Device device = placement_.device(call);
    ringscope::Status s = ringscope::grouped_allreduce_async(
        items, dtype, reduce_op_, finish(ctx, done, std::move(call)), prescale_, postscale_, device,
        process_set_);
    if (!s.ok()) fail_now(ctx, s, done);
  }

 private:
  std::shared_ptr<const std::vector<std::string>> names_;  // one per input
};

class AllgatherOp : public RingscopeKernel {
 public:
  using RingscopeKernel::RingscopeKernel;
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    ringscope::DataType dtype;
    if (!dtype_of(ctx, &dtype, done)) return;
    const tf::Tensor& in = ctx->input(0);
    OP_REQUIRES_ASYNC(ctx, in.dims() >= 1,
                      tf::errors::InvalidArgument("ringscope allgather of '", tensor_name_,
                                                  "' needs a tensor with at least one dimension"),
                      done);
    Placement::Call call;
    OP_REQUIRES_OK_ASYNC(ctx, placement_.begin(ctx, &call), done);
    OP_REQUIRES_OK_ASYNC(ctx, placement_.ready(call), done);
    // Called on ringscope's thread once every rank's dim 0 is known. On a
    // GPU the new output may be memory that work queued on TensorFlow's
    // stream still uses: `ready` again orders ringscope's writes after it.
    auto allocate = [ctx, call, &placement = placement_](const ringscope::Shape& shape) -> void* {
      tf::TensorShape ts;
      for (int64_t d : shape) ts.AddDim(d);
      tf::Tensor* out = nullptr;
      if (!ctx->allocate_output(0, ts, &out).ok() || !placement.ready(call).ok()) return nullptr;
      return const_cast<char*>(out->tensor_data().data());
    };
    const ringscope::Device device = placement_.device(call);
    ringscope::Status s = ringscope::allgather_async(
        tensor_name_, dtype, to_shape(in.shape()), in.tensor_data().data(), allocate,
        finish(ctx, done, std::move(call)), device, process_set_);
    if (!s.ok()) fail_now(ctx, s, done);
  }
};

class AlltoallOp : public RingscopeKernel {
 public:
  using RingscopeKernel::RingscopeKernel;
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    ringscope::DataType dtype;
    if (!dtype_of(ctx, &dtype, done)) return;
    const tf::Tensor& in = ctx->input(0);
    // The splits, whatever their shape (empty: an equal split). Wrong
    // splits and scalars go to the runtime as they are: its coordinator
    // fails them on every rank alike, naming the rank.
    const tf::Tensor& splits_in = ctx->input(1);
    std::vector<int64_t> splits;
    for (int64_t i = 0; i < splits_in.NumElements(); ++i)
      splits.push_back(splits_in.flat<tf::int32>()(i));
    // Called on ringscope's thread once every rank's splits are known.
    auto allocate = [ctx](const ringscope::Shape& shape,
                          const std::vector<int64_t>& received) -> void* {
      tf::TensorShape ts;
      for (int64_t d : shape) ts.AddDim(d);
      tf::Tensor* out = nullptr;
      tf::Tensor* received_out = nullptr;
      if (!ctx->allocate_output(0, ts, &out).ok() ||
          !ctx->allocate_output(1, tf::TensorShape({static_cast<int64_t>(received.size())}),
                                &received_out)
               .ok())
        return nullptr;
      for (size_t i = 0; i < received.size(); ++i)
        received_out->flat<tf::int32>()(static_cast<int64_t>(i)) =
            static_cast<tf::int32>(received[i]);
      return const_cast<char*>(out->tensor_data().data());
    };
    ringscope::Status s = ringscope::alltoall_async(
        tensor_name_, dtype, to_shape(in.shape()), in.tensor_data().data(), splits, allocate,
        finish(ctx, done, nullptr), ringscope::Device::cpu(), process_set_);
    if (!s.ok()) fail_now(ctx, s, done);
  }
};

class BroadcastOp : public RingscopeKernel {
 public:
  explicit BroadcastOp(tf::OpKernelConstruction* ctx) : RingscopeKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("root_rank", &root_));
  }
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    ringscope::DataType dtype;
    if (!dtype_of(ctx, &dtype, done)) return;
    const tf::Tensor& in = ctx->input(0);
    Placement::Call call;
    OP_REQUIRES_OK_ASYNC(ctx, placement_.begin(ctx, &call), done);
    tf::Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, in.shape(), &out), done);
    // Broadcast is in place: start from this rank's value.
    OP_REQUIRES_OK_ASYNC(ctx,
                         placement_.copy(call, const_cast<char*>(out->tensor_data().data()),
                                         in.tensor_data().data(), in.TotalBytes()),
                         done);
    OP_REQUIRES_OK_ASYNC(ctx, placement_.ready(call), done);
    const ringscope::Device device = placement_.device(call);
    ringscope::Status s = ringscope::broadcast_async(
        tensor_name_, dtype, to_shape(in.shape()), const_cast<char*>(out->tensor_data().data()),
        root_, finish(ctx, done, std::move(call)), device, process_set_);
    if (!s.ok()) fail_now(ctx, s, done);
  }

 private:
  int root_ = 0;
};

// broadcast_(variables, root): root's values written into every rank's
// resource variables themselves, as Horovod's in-place broadcast does. The
// variables stay locked (in address order, so two such ops over the same
// variables cannot deadlock) from before the broadcasts start until they
// end, so no other op reads a half-written value or replaces the buffer
// being written. A synchronous kernel: a lock is released by the thread
// that took it. Its wait ends when the runtime completes every broadcast,
// which it does within its op timeout even when a peer fails.
class BroadcastInplaceOp : public tf::OpKernel {
 public:
  explicit BroadcastInplaceOp(tf::OpKernelConstruction* ctx)
      : OpKernel(ctx), placement_(placement_for(ctx->device_type())) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("root_rank", &root_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("variable_names", &names_));
    OP_REQUIRES(ctx, static_cast<int>(names_.size()) == ctx->num_inputs(),
                tf::errors::InvalidArgument("ringscope broadcast_: ", names_.size(),
                                            " variable_names for ", ctx->num_inputs(),
                                            " variables"));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("process_set_id", &process_set_));
  }
  void Compute(tf::OpKernelContext* ctx) override {
    const int n = ctx->num_inputs();
    std::vector<tf::core::RefCountPtr<tf::Var>> vars(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
      OP_REQUIRES_OK(ctx, tf::LookupResource(ctx, tf::HandleFromInput(ctx, i), &vars[i]));
    std::vector<tf::Var*> order;
    for (auto& v : vars) order.push_back(v.get());
    std::sort(order.begin(), order.end());
    order.erase(std::unique(order.begin(), order.end()), order.end());
    std::vector<std::unique_ptr<tf::mutex_lock>> locks;
    for (tf::Var* v : order) locks.push_back(std::make_unique<tf::mutex_lock>(*v->mu()));
    Placement::Call call;
    OP_REQUIRES_OK(ctx, placement_.begin(ctx, &call));

    std::vector<ringscope::DataType> dtypes(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      tf::Var* var = vars[i].get();
      const std::string& name = names_[static_cast<size_t>(i)];
      OP_REQUIRES(ctx, var->is_initialized,
                  tf::errors::FailedPrecondition("ringscope broadcast_: variable '", name,
                                                 "' is not initialised"));
      tf::Tensor* t = var->tensor();
      // bool moves as its bytes (one each), as the other ops move it.
      const bool known = t->dtype() == tf::DT_BOOL
                             ? (dtypes[i] = ringscope::DataType::kUInt8, true)
                             : to_ringscope_dtype(t->dtype(), &dtypes[i]);
      OP_REQUIRES(ctx, known,
                  tf::errors::InvalidArgument("ringscope broadcast_: unsupported dtype ",
                                              tf::DataTypeString(t->dtype()), " of variable '",
                                              name, "'"));
      // Copy on write, as TensorFlow's own updates: a value someone still
      // holds (a read_value() result) keeps what it read.
      if (!t->RefCountIsOne() || var->copy_on_read_mode.load()) {
        tf::Tensor fresh;
        OP_REQUIRES_OK(ctx, ctx->allocate_temp(t->dtype(), t->shape(), &fresh));
        OP_REQUIRES_OK(ctx, placement_.copy(call, const_cast<char*>(fresh.tensor_data().data()),
                                            t->tensor_data().data(), t->TotalBytes()));
        *t = fresh;
      }
    }

    struct Pending {
      std::mutex mu;
      std::condition_variable cv;
      int left = 0;
      ringscope::Status first;
    };
    OP_REQUIRES_OK(ctx, placement_.ready(call));
    const ringscope::Device device = placement_.device(call);
    auto pending = std::make_shared<Pending>();
    pending->left = n;
    for (int i = 0; i < n; ++i) {
      tf::Tensor* t = vars[i]->tensor();
      ringscope::Status s = ringscope::broadcast_async(
          names_[static_cast<size_t>(i)], dtypes[i], to_shape(t->shape()),
          const_cast<char*>(t->tensor_data().data()), root_,
          [pending](const ringscope::Status& st) {
            std::lock_guard<std::mutex> lock(pending->mu);
            if (!st.ok() && pending->first.ok()) pending->first = st;
            if (--pending->left == 0) pending->cv.notify_all();
          },
          device, process_set_);
      if (!s.ok()) {  // the ones not submitted will not call back
        std::lock_guard<std::mutex> lock(pending->mu);
        if (pending->first.ok()) pending->first = s;
        pending->left -= n - i;
        break;
      }
    }
    std::unique_lock<std::mutex> lock(pending->mu);
    pending->cv.wait(lock, [&] { return pending->left == 0; });
    if (!pending->first.ok()) ctx->SetStatus(to_tf_status(pending->first));
  }  // `call` (the ready event) goes only after every callback ran

 private:
  const Placement& placement_;
  int root_ = 0;
  int process_set_ = 0;
  std::vector<std::string> names_;
};

// join(): waits, asynchronously, until every rank has joined; meanwhile the
// runtime stands in for this rank's part of the others' collectives. The
// output is the rank that joined last (Horovod's hvd.join()).
class JoinOp : public tf::AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;
  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    tf::Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, ctx->allocate_output(0, tf::TensorShape({}), &out), done);
    ringscope::Status s =
        ringscope::join_async([ctx, out, done](const ringscope::Status& st, int last) {
          if (!st.ok()) ctx->SetStatus(to_tf_status(st));
          out->scalar<tf::int32>()() = last;
          done();
        });
    if (!s.ok()) {
      ctx->SetStatus(to_tf_status(s));
      done();
    }
  }
};

// size_op(), rank_op(), ...: the topology as int32 scalars, for graphs that
// need it as a tensor (as Horovod's size_op/rank_op); size_op and
// process_set_included_op of a process set (attr process_set_id).
int set_size(int id) { return ringscope::process_set_size(id); }
int set_included(int id) {
  if (!ringscope::is_initialized() || ringscope::process_sets().count(id) == 0) return -1;
  return ringscope::process_set_rank(id) >= 0 ? 1 : 0;
}
template <int (*Fn)()>
int world(int) {
  return Fn();
}

template <int (*Fn)(int)>
class TopologyOp : public tf::OpKernel {
 public:
  explicit TopologyOp(tf::OpKernelConstruction* ctx) : OpKernel(ctx) {
    if (ctx->HasAttr("process_set_id"))
      OP_REQUIRES_OK(ctx, ctx->GetAttr("process_set_id", &process_set_));
  }
  void Compute(tf::OpKernelContext* ctx) override {
    const int value = Fn(process_set_);
    OP_REQUIRES(ctx, value >= 0 || !ringscope::is_initialized(),
                tf::errors::InvalidArgument("ringscope: process set ", process_set_,
                                            " does not exist"));
    OP_REQUIRES(ctx, value >= 0,
                tf::errors::FailedPrecondition(
                    "ringscope is not initialised: call ringscope.tensorflow.init() first"));
    tf::Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, tf::TensorShape({}), &out));
    out->scalar<tf::int32>()() = value;
  }

 private:
  int process_set_ = 0;
};

}  // namespace

#define RINGSCOPE_TOPOLOGY_OP(OpName, fn, ...)                   \
  REGISTER_OP(OpName)                                            \
      .Output("value: int32") __VA_ARGS__                        \
      .SetIsStateful()                                           \
      .SetShapeFn([](tf::shape_inference::InferenceContext* c) { \
        c->set_output(0, c->Scalar());                           \
        return tf::Status();                                     \
      });                                                        \
  REGISTER_KERNEL_BUILDER(Name(OpName).Device(tf::DEVICE_CPU), TopologyOp<fn>)
RINGSCOPE_TOPOLOGY_OP("RingscopeSize", set_size, .Attr("process_set_id: int = 0"));
RINGSCOPE_TOPOLOGY_OP("RingscopeProcessSetIncluded", set_included,
                      .Attr("process_set_id: int = 0"));
RINGSCOPE_TOPOLOGY_OP("RingscopeRank", world<ringscope::rank>);
RINGSCOPE_TOPOLOGY_OP("RingscopeLocalSize", world<ringscope::local_size>);
RINGSCOPE_TOPOLOGY_OP("RingscopeLocalRank", world<ringscope::local_rank>);

#define RINGSCOPE_TYPES "T: {uint8, int8, int16, uint16, int32, int64, half, bfloat16, float, double}"

// The collectives are stateful: they run on every rank even where a rank
// does not use the result (`if hvd.rank() == 0: tf.print(avg)` would
// otherwise prune it on the others, and rank 0 would wait forever), and
// TensorFlow never folds or merges them. Inside a tf.function TensorFlow
// would also run stateful ops in program order, each allreduce waiting for
// the one before and nothing fused: the Python layer marks each collective
// to run independently (_library.py), as TensorFlow's own collectives are.

REGISTER_OP("RingscopeAllreduce")
    .Attr(RINGSCOPE_TYPES)
    .Attr("reduce_op: int = 1")
    .Attr("prescale_factor: string = '1.0'")  // text: a float attr is only 32 bits
    .Attr("postscale_factor: string = '1.0'")
    .Attr("tensor_name: string = ''")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Output("output: T")
    .SetIsStateful()
    .SetShapeFn([](tf::shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(0));
      return tf::Status();
    })
    .Doc(
        "Allreduce of `tensor` across all ranks (reduce_op: 0 Sum, 1 Average, 2 Min, 3 Max, 4 "
        "Product).");

REGISTER_OP("RingscopeGroupedAllreduce")
    .Attr(RINGSCOPE_TYPES)
    .Attr("N: int >= 1")
    .Attr("reduce_op: int = 1")
    .Attr("prescale_factor: string = '1.0'")  // text: a float attr is only 32 bits
    .Attr("postscale_factor: string = '1.0'")
    .Attr("tensor_name: string = ''")
    .Attr("tensor_names: list(string) = []")
    .Attr("process_set_id: int = 0")
    .Input("tensors: N * T")
    .Output("outputs: N * T")
    .SetIsStateful()
    .SetShapeFn([](tf::shape_inference::InferenceContext* c) {
      for (int i = 0; i < c->num_inputs(); ++i) c->set_output(i, c->input(i));
      return tf::Status();
    })
    .Doc(
        "Allreduce of each of `tensors` across all ranks, handed to the runtime together "
        "(tensor_names: one per tensor; empty: <node name>/<i>).");

REGISTER_OP("RingscopeAllgather")
    .Attr(RINGSCOPE_TYPES)
    .Attr("tensor_name: string = ''")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Output("output: T")
    .SetIsStateful()
    .SetShapeFn([](tf::shape_inference::InferenceContext* c) {
      tf::shape_inference::ShapeHandle out;
      TF_RETURN_IF_ERROR(
          c->ReplaceDim(c->input(0), 0, c->UnknownDim(), &out));  // dim 0 is the gathered one
      c->set_output(0, out);
      return tf::Status();
    })
    .Doc("Concatenation along dim 0 of `tensor` from every rank, in rank order.");

REGISTER_OP("RingscopeReducescatter")
    .Attr(RINGSCOPE_TYPES)
    .Attr("reduce_op: int = 1")
    .Attr("prescale_factor: string = '1.0'")  // text: a float attr is only 32 bits
    .Attr("postscale_factor: string = '1.0'")
    .Attr("tensor_name: string = ''")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Output("output: T")
    .SetIsStateful()
    .SetShapeFn([](tf::shape_inference::InferenceContext* c) {
      // This rank's rows: dim 0 unknown until run (a scalar stays one, and
      // the runtime fails it on every rank).
      if (c->RankKnown(c->input(0)) && c->Rank(c->input(0)) == 0) {
        c->set_output(0, c->input(0));
        return tf::Status();
      }
      tf::shape_inference::ShapeHandle out;
      TF_RETURN_IF_ERROR(c->ReplaceDim(c->input(0), 0, c->UnknownDim(), &out));
      c->set_output(0, out);
      return tf::Status();
    })
    .Doc(
        "Reduction of `tensor` across all ranks, split along dim 0: this rank's rows (the first "
        "dim0 % size ranks get one more).");

REGISTER_OP("RingscopeAlltoall")
    .Attr(RINGSCOPE_TYPES)
    .Attr("tensor_name: string = ''")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Input("splits: int32")
    .Output("output: T")
    .Output("received_splits: int32")
    .SetIsStateful()
    .SetShapeFn([](tf::shape_inference::InferenceContext* c) {
      if (c->RankKnown(c->input(0)) && c->Rank(c->input(0)) == 0) {
        c->set_output(0, c->input(0));  // the runtime fails it on every rank
      } else {
        tf::shape_inference::ShapeHandle out;
        TF_RETURN_IF_ERROR(c->ReplaceDim(c->input(0), 0, c->UnknownDim(), &out));
        c->set_output(0, out);
      }
      c->set_output(1, c->Vector(c->UnknownDim()));
      return tf::Status();
    })
    .Doc(
        "Sends splits[d] consecutive rows of dim 0 to rank d (empty splits: an equal split); "
        "returns what every rank sent this rank, in rank order, and how many rows came from "
        "each.");

REGISTER_OP("RingscopeBroadcast")
    .Attr(RINGSCOPE_TYPES)
    .Attr("root_rank: int")
    .Attr("tensor_name: string = ''")
    .Attr("process_set_id: int = 0")
    .Input("tensor: T")
    .Output("output: T")
    .SetIsStateful()
    .SetShapeFn([](tf::shape_inference::InferenceContext* c) {
      c->set_output(0, c->input(0));
      return tf::Status();
    })
    .Doc("`tensor` of rank `root_rank`, on every rank.");

REGISTER_KERNEL_BUILDER(Name("RingscopeAllreduce").Device(tf::DEVICE_CPU), AllreduceOp);
REGISTER_KERNEL_BUILDER(Name("RingscopeGroupedAllreduce").Device(tf::DEVICE_CPU),
                        GroupedAllreduceOp);
REGISTER_KERNEL_BUILDER(Name("RingscopeAllgather").Device(tf::DEVICE_CPU), AllgatherOp);
REGISTER_KERNEL_BUILDER(Name("RingscopeBroadcast").Device(tf::DEVICE_CPU), BroadcastOp);
REGISTER_KERNEL_BUILDER(Name("RingscopeReducescatter").Device(tf::DEVICE_CPU), ReducescatterOp);
REGISTER_KERNEL_BUILDER(Name("RingscopeAlltoall").Device(tf::DEVICE_CPU), AlltoallOp);

REGISTER_OP("RingscopeBroadcastInplace")
    .Attr("N: int >= 1")
    .Attr("root_rank: int")
    .Attr("variable_names: list(string)")
    .Attr("process_set_id: int = 0")
    .Input("variables: N * resource")
    .SetIsStateful()
    .SetShapeFn(tf::shape_inference::NoOutputs)
    .Doc("Writes the values of `variables` on rank `root_rank` into them on every rank.");
REGISTER_KERNEL_BUILDER(Name("RingscopeBroadcastInplace").Device(tf::DEVICE_CPU),
                        BroadcastInplaceOp);

#if RINGSCOPE_TF_GPU
// Device memory, reduced by NCCL on the GPU (docs/gpu.md, "TensorFlow"),
// for the types NCCL has: TensorFlow runs a 16-bit integer tensor on a GPU
// through the CPU kernel, copying it to the host and back.
#define RINGSCOPE_GPU_KERNEL(OpName, Kernel)                                                 \
  REGISTER_KERNEL_BUILDER(                                                                   \
      Name(OpName)                                                                           \
          .Device(tf::DEVICE_GPU)                                                            \
          .TypeConstraint("T", {tf::DT_UINT8, tf::DT_INT8, tf::DT_INT32, tf::DT_INT64,       \
                                tf::DT_HALF, tf::DT_BFLOAT16, tf::DT_FLOAT, tf::DT_DOUBLE}), \
      Kernel)
RINGSCOPE_GPU_KERNEL("RingscopeAllreduce", AllreduceOp);
RINGSCOPE_GPU_KERNEL("RingscopeGroupedAllreduce", GroupedAllreduceOp);
RINGSCOPE_GPU_KERNEL("RingscopeAllgather", AllgatherOp);
RINGSCOPE_GPU_KERNEL("RingscopeBroadcast", BroadcastOp);
// A resource handle is host memory; the variables' values are on the GPU.
REGISTER_KERNEL_BUILDER(
    Name("RingscopeBroadcastInplace").Device(tf::DEVICE_GPU).HostMemory("variables"),
    BroadcastInplaceOp);
#endif

REGISTER_OP("RingscopeJoin")
    .Output("last_joined_rank: int32")
    .SetIsStateful()
    .SetShapeFn([](tf::shape_inference::InferenceContext* c) {
      c->set_output(0, c->Scalar());
      return tf::Status();
    });
REGISTER_KERNEL_BUILDER(Name("RingscopeJoin").Device(tf::DEVICE_CPU), JoinOp);
