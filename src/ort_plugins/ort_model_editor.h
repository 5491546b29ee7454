// OrtModelEditorApi as far as plugin EPs use it: CreateNode, for the EPContext nodes an EP's
// Compile returns when the session writes a compiled model (`nxrt compile`). Building graphs,
// models and sessions through the table is an application's business, not an EP's: those slots
// stay stubs.
#pragma once

#include <onnx/onnx_pb.h>

#include <memory>

#include "ort_plugins/ort_abi.h"
#include "ort_plugins/ort_graph_view.h"

namespace nxrt::ort {

// Fills the editor table's slots and OrtApi::ReleaseNode.
void InstallModelEditorApi(OrtApi& api, OrtModelEditorApi& editor);

// Takes over a node a plugin made with CreateNode and has not released. Null for any other
// pointer (a view's node, a released or already taken one, garbage): nothing is read through it.
std::unique_ptr<OrtNode> TakePluginNode(const OrtNode* node);

// The node as an ONNX NodeProto (attributes of the kinds CreateOpAttr makes).
onnx::NodeProto ToNodeProto(const OrtNode& node);

}  // namespace nxrt::ort
