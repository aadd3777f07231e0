#include "runtime/autograd/op_node.h"

#include "runtime/autograd/autograd_meta.h"
#include "runtime/error.h"

namespace kiln {

namespace {
std::string sizes_str(const DimVector& d) { return shape_str(d); }
}  // namespace

SavedTensor SavedTensor::save(const Tensor& t) {
  const TensorImpl* x = t.impl();
  Tensor alias(make_ref<TensorImpl>(x->sizes(), x->strides(), x->offset(), x->dtype(), x->device(),
                                    x->storage_ref()));
  return {alias, x->storage()->version()};
}

OpNode::OpNode(const OpDef& def, const OpCall& call, const Tensor& out, uint32_t needs)
    : def_(&def), op_(call.op), attrs_(call.attrs), needs_(needs) {
  size_t n = call.inputs.size();
  inputs_.resize(n);
  info_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const TensorImpl* x = call.inputs[i].impl();
    info_.push_back({x->sizes(), x->dtype()});
    if (def.saves & save_input(static_cast<int>(i))) inputs_[i] = SavedTensor::save(call.inputs[i]);
  }
  if (def.saves & kSaveOutput) output_ = SavedTensor::save(out);
}

std::string OpNode::name() const { return std::string(op_id_name(op_)) + "Backward"; }

void OpNode::release_saved() {
  for (auto& s : inputs_) s = SavedTensor{};
  output_ = SavedTensor{};
  released_ = true;
}

void OpNode::check_saved(const SavedTensor& s, const char* what, size_t index) const {
  if (!s.data.defined()) return;
  uint32_t now = s.data.impl()->storage()->version();
  KILN_CHECK(
      now == s.version,
      "backward of {}: one of the tensors needed for the gradient ({} {}, shape {}) has been "
      "modified by an in-place operation: it is at version {}, expected version {}. Clone "
      "it before the in-place write, or write out of place.",
      op_name(op_), what, index, sizes_str(s.data.impl()->sizes()), now, s.version);
}

std::vector<Tensor> OpNode::apply(const Tensor& grad_output) {
  KILN_CHECK(!released_,
             "backward of {}: trying to backward through the graph a second time (its saved "
             "tensors were freed); call backward(grad, /*retain_graph=*/true) the first time",
             op_name(op_));
  KILN_CHECK(def_->backward != nullptr, "backward of {}: the op is not differentiable",
             op_name(op_));
  std::vector<Tensor> saved(inputs_.size());
  for (size_t i = 0; i < inputs_.size(); ++i) {
    check_saved(inputs_[i], "input", i);
    saved[i] = inputs_[i].data;
  }
  check_saved(output_, "output", 0);
  std::vector<Tensor> grads(inputs_.size());
  BackwardCall call{op_, attrs_, saved, info_, output_.data, grad_output, needs_};
  def_->backward(call, grads);
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!((needs_ >> i) & 1u) || !grads[i].defined()) {
      grads[i] = Tensor();
      continue;
    }
    KILN_CHECK(grads[i].impl()->sizes() == info_[i].sizes,
               "backward of {}: the rule produced a gradient of shape {} for input {} of shape {}",
               op_name(op_), sizes_str(grads[i].impl()->sizes()), i, sizes_str(info_[i].sizes));
    if (grads[i].impl()->dtype() != info_[i].dtype && is_floating(info_[i].dtype))
      grads[i] = grads[i].to(info_[i].dtype);
  }
  return grads;
}

}  // namespace kiln
