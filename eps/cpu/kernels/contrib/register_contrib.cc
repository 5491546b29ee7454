#include "kernels/all_kernels.h"
#include "kernels/contrib/contrib_common.h"

namespace nxrt::cpu {

// onnxruntime's com.microsoft transformer operators (what its graph optimiser fuses BERT/GPT
// subgraphs into). Each source file of kernels/contrib/ registers its own operators.
void RegisterContribTransformerKernels(NxKernelRegistry* registry) {
  contrib::RegisterGeluVariantKernels(registry);
  contrib::RegisterSkipLayerNormKernels(registry);
  contrib::RegisterSimplifiedLayerNormKernels(registry);
  contrib::RegisterEmbedLayerNormKernels(registry);
  contrib::RegisterAttentionContribKernels(registry);
  contrib::RegisterMultiHeadAttentionKernels(registry);
  contrib::RegisterRotaryContribKernels(registry);
  contrib::RegisterGroupQueryAttentionKernels(registry);
}

}  // namespace nxrt::cpu
