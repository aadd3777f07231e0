// OpNode: the autograd node of one dispatched op. It keeps the op's attributes, the tensors its
// backward rule asked to save (with their versions, to catch in-place writes) and the inputs'
// sizes and dtypes, and calls the op's backward rule.
#pragma once
#include <vector>

#include "runtime/autograd/grad_node.h"
#include "runtime/dispatcher.h"

namespace kiln {

// A saved tensor: an alias without autograd state (so no reference cycle through grad_fn) and
// the storage version at save time.
struct SavedTensor {
  Tensor data;
  uint32_t version = 0;
  static SavedTensor save(const Tensor& t);
};

class OpNode : public GradNode {
 public:
  OpNode(const OpDef& def, const OpCall& call, const Tensor& out, uint32_t needs);
  std::vector<Tensor> apply(const Tensor& grad_output) override;
  std::string name() const override;
  void release_saved() override;

 private:
  void check_saved(const SavedTensor& s, const char* what, size_t index) const;

  const OpDef* def_;
  OpId op_;
  Attrs attrs_;
  std::vector<SavedTensor> inputs_;
  SavedTensor output_;
  std::vector<InputInfo> info_;
  uint32_t needs_;
  bool released_ = false;
};

}  // namespace kiln
