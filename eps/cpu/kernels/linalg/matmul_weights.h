// Constant matrix-multiply weights in oneDNN's preferred layout (matmul_dnnl.h), shared by the
// MatMul, FusedMatMul and Gemm kernels: which layout a [K, N] weight gets, and packing an ONNX
// weight tensor into it.
#pragma once

#include <cstdint>
#include <nxrt/nxrt_ep.hpp>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "kernels/linalg/matmul_dnnl.h"
#include "kernels/linalg/panel_gemm.h"
#include "kernels/linalg/prepacked_weight.h"

namespace nxrt::cpu::linalg {

// Products with at most this many rows, known from a static input shape, keep the plain layout:
// matrix-vector products bound by reading the weight (gemv.h), which read plain rows as one
// stream (MobileNetV2's 1 x 1280 x 1000 classifier: 281 against 322 us through oneDNN's blocked
// kernels). It was 8 rows while oneDNN ran those products; 2-8 rows now go through nxrt's kernel
// over the blocked panels (panel_rows.h), which at one thread took a quarter to a third of the
// plain primitive's time ([4 x 384] x [384 x 1536]: 0.10 against 0.42 ms).
constexpr int64_t kPlainWeightMaxRows = 1;

// The packed layout of a 2-D weight stored [K, N] (or [N, K] when `stored_nk`), when `allowed`:
// oneDNN's blocked one when it has one (AVX-512), else nxrt's panels (panel_gemm.h) where that
// kernel is preferred (AVX2). Otherwise neither is set and the kernel keeps its plain float copy.
// The same for PrePack and for a packing another session made.
struct MatMulWeightLayout {
  dnnl::memory::desc md;
  bool blocked = false;
  bool panels = false;
  int64_t k = 0, n = 0;

  MatMulWeightLayout() = default;
  MatMulWeightLayout(const std::vector<int64_t>& shape, bool stored_nk, bool allowed)
      : k(stored_nk ? shape[1] : shape[0]), n(stored_nk ? shape[0] : shape[1]) {
    if (!allowed) return;
    md = PreferredMatMulWeights(k, n);
    blocked = !IsPlainMatMulWeights(md);
    panels = !blocked;
  }

  // Packing bytes for the kernel's plain copy of `plain_bytes`, or of the packed layout.
  size_t Bytes(size_t plain_bytes) const {
    return blocked ? md.get_size() : panels ? PanelBytes(k, n) : plain_bytes;
  }
};

// `w` (float, float16 or bfloat16, [K, N] or [N, K] when `stored_nk`) packed into the panels of
// `layout`, in a block of `allocator`.
inline ep::Block PackPanelWeights(const ep::ConstTensor& w, bool stored_nk,
                                  const MatMulWeightLayout& layout, ep::Allocator allocator) {
  ep::Block block(allocator, PanelBytes(layout.k, layout.n));
  if (w.type() == NX_TYPE_FLOAT) {
    PackPanels(w.data<float>(), stored_nk, layout.k, layout.n, block.as<float>());
  } else {  // float16 / bfloat16: to float32 first, in the stored layout
    ep::Block plain = PackFloatBlock(w, allocator, /*transpose=*/false);
    PackPanels(plain.as<float>(), stored_nk, layout.k, layout.n, block.as<float>());
  }
  return block;
}

// `w` (float, float16 or bfloat16, [K, N] or [N, K] when `stored_nk`) packed into the blocked
// `layout`, in a block of `allocator`.
inline ep::Block PackBlockedWeights(const ep::ConstTensor& w, bool stored_nk,
                                    const MatMulWeightLayout& layout, ep::Allocator allocator) {
  ep::Block block(allocator, layout.md.get_size());
  if (w.type() == NX_TYPE_FLOAT) {
    PackMatMulWeights(w.data<float>(), stored_nk, layout.k, layout.n, layout.md, block.get());
  } else {  // float16 / bfloat16: to float32 first, in the stored layout
    ep::Block plain = PackFloatBlock(w, allocator, /*transpose=*/false);
    PackMatMulWeights(plain.as<float>(), stored_nk, layout.k, layout.n, layout.md, block.get());
  }
  return block;
}

}  // namespace nxrt::cpu::linalg
