// Small ONNX models `nxrt certify` builds to exercise an EP: chains of the elementwise ops it
// claims, the same chains inside If / Loop / Scan bodies, and ops with constant weights (for
// pre-packing). Each returns the serialized ModelProto (opset 17).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace nxrt::cli::certify {

// The float elementwise ops the chains are made of, in the order tried.
const std::vector<std::string>& ChainOpCandidates();
bool IsBinary(const std::string& op);

// Inputs X and Y (float [2,3,4,5]); h = X, then each op: h = op(h) or op(h, Y); output Z = h.
std::string SingleOpModel(const std::string& op);
std::string ChainModel(const std::vector<std::string>& ops);
// Input cond (bool scalar), X, Y; then-branch = the chain, else-branch = the chain reversed,
// both reading X and Y from the outer scope; output Z.
std::string IfModel(const std::vector<std::string>& ops);
// Input M (int64 scalar trip count), X, Y; loop-carried h = X through the chain each
// iteration (Y from the outer scope); outputs the final h and the stacked per-iteration values.
std::string LoopModel(const std::vector<std::string>& ops);
// Input S0 (float [3,4,5]), X (float [2,3,4,5]) scanned along axis 0: state h = chain(h, x_i)
// (binary ops take x_i); outputs the final state and the stacked states.
std::string ScanModel(const std::vector<std::string>& ops);

// An op with constant weights: "MatMul" (A [4,16] x B [16,8]), "Gemm" (A [4,16], B [16,8],
// C [8]) or "Conv" (X [1,3,8,8], W [4,3,3,3], B [4], pads 1). Input "A" or "X".
const std::vector<std::string>& WeightOpCandidates();
std::string WeightModel(const std::string& op);

}  // namespace nxrt::cli::certify
