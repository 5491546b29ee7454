// A loaded model: the IR graph plus the model-level facts applications can ask about.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "graph/graph.h"

namespace nxrt {

struct Model {
  std::shared_ptr<Graph> graph;
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::string graph_doc_string;
  std::map<std::string, std::string> metadata;
  std::string source;  // file path or "<buffer>"
  // Where files the model refers to live (external data, saved compiled groups): the model
  // file's folder; "" for a model from memory without one (then no such file is read).
  std::string external_data_dir;
};

// Loads and validates a model. Throws nxrt::Error (NX_INVALID_MODEL / NX_NOT_FOUND) with a
// message that names the file, the node and the reason.
std::shared_ptr<Model> LoadModelFromFile(const std::string& path);
// `external_data_dir` resolves external tensor data; empty means none is allowed.
std::shared_ptr<Model> LoadModelFromBuffer(const void* data, size_t size,
                                           const std::string& external_data_dir = "");

}  // namespace nxrt
