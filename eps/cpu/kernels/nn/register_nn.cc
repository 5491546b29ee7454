#include "kernels/all_kernels.h"
#include "kernels/nn/nn_common.h"

namespace nxrt::cpu {

// The neural-network family: pooling, normalisation, resampling, recurrent and attention ops.
// Each source file of kernels/nn/ registers its own operators.
void RegisterNnKernels(NxKernelRegistry* registry) {
  nn::RegisterPoolKernels(registry);
  nn::RegisterMaxPoolNhwcKernels(registry);
  nn::RegisterGlobalPoolKernels(registry);
  nn::RegisterMaxUnpoolKernels(registry);
  nn::RegisterBatchNormKernels(registry);
  nn::RegisterLayerNormKernels(registry);
  nn::RegisterGroupNormKernels(registry);
  nn::RegisterLpNormKernels(registry);
  nn::RegisterLrnKernels(registry);
  nn::RegisterResizeKernels(registry);
  nn::RegisterLstmKernels(registry);
  nn::RegisterGruKernels(registry);
  nn::RegisterSimpleRnnKernels(registry);
  nn::RegisterGridSampleKernels(registry);
  nn::RegisterAffineGridKernels(registry);
  nn::RegisterAttentionKernels(registry);
  nn::RegisterFusedAttentionKernel(registry);
  nn::RegisterRotaryEmbeddingKernels(registry);
  nn::RegisterRoiKernels(registry);
  nn::RegisterNonMaxSuppressionKernels(registry);
  nn::RegisterOptimizerKernels(registry);
  nn::RegisterDeformConvKernels(registry);
  nn::RegisterLinearAttentionKernels(registry);
  nn::RegisterCausalConvKernels(registry);
}

}  // namespace nxrt::cpu
