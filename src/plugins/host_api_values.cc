// The host table's value part: tensors, sequences and optionals an EP reads, the sequence /
// optional / value outputs a kernel sets (shared when the run owns them, copied otherwise), memory
// infos, and the prepacked-weight cache an EP offers packings to.
#include <cstring>
#include <string>
#include <vector>

#include "base/element_type.h"
#include "base/error.h"
#include "base/memory_info.h"
#include "plugins/host_api_parts.h"
#include "plugins/host_objects.h"
#include "plugins/prepack_store.h"

namespace nxrt::host_api {
namespace {

// ---- Values ----
// A NULL value (a plugin's bug, e.g. an optional input it did not check) reads as an empty
// tensor, as in the public C API, instead of crashing the host.
NxValueKind ValueGetKind(const NxValue* v) { return v ? v->kind : NX_VALUE_TENSOR; }
NxElementType ValueGetElementType(const NxValue* v) {
  if (v == nullptr) return NX_TYPE_UNDEFINED;
  return v->kind == NX_VALUE_SEQUENCE ? v->sequence_type : v->type;
}
void ValueGetShape(const NxValue* v, const int64_t** dims, size_t* rank) {
  if (dims) *dims = v ? v->dims.data() : nullptr;
  if (rank) *rank = v ? v->dims.size() : 0;
}
size_t ValueGetElementCount(const NxValue* v) { return v ? v->count : 0; }
void* ValueGetData(const NxValue* v) {
  if (v == nullptr || v->type == NX_TYPE_STRING) return nullptr;
  return v->data;
}
const char* ValueGetString(const NxValue* v, size_t i, size_t* size) {
  if (v == nullptr || v->type != NX_TYPE_STRING || i >= v->strings.size()) {
    if (size) *size = 0;
    return nullptr;
  }
  if (size) *size = v->strings[i].size();
  return v->strings[i].data();
}
NxStatus* ValueSetString(NxValue* v, size_t i, const char* data, size_t size) {
  if (v == nullptr) return CreateStatus(NX_INVALID_ARGUMENT, "Value_SetString: value is null");
  if (v->type != NX_TYPE_STRING)
    return CreateStatus(NX_INVALID_ARGUMENT, "Value_SetString: not a string tensor");
  if (i >= v->strings.size())
    return CreateStatus(NX_INVALID_ARGUMENT, "Value_SetString: index out of range");
  if (size > 0 && data == nullptr)
    return CreateStatus(NX_INVALID_ARGUMENT, "Value_SetString: data is null");
  return CatchAsStatus([&] { v->strings[i].assign(data ? data : "", size); });
}

// ---- Sequences and optionals (version 4) ----
size_t ValueGetSequenceLength(const NxValue* v) {
  return v && v->kind == NX_VALUE_SEQUENCE ? v->elements.size() : 0;
}
const NxValue* ValueGetSequenceElement(const NxValue* v, size_t i) {
  if (!v || v->kind != NX_VALUE_SEQUENCE || i >= v->elements.size()) return nullptr;
  return v->elements[i].get();
}
bool ValueOptionalHasValue(const NxValue* v) {
  return v && v->kind == NX_VALUE_OPTIONAL && v->contained != nullptr;
}
const NxValue* ValueGetOptionalValue(const NxValue* v) {
  return v && v->kind == NX_VALUE_OPTIONAL ? v->contained.get() : nullptr;
}

// An independent copy (for values the run does not own: graph inputs, initializers).
ValuePtr DeepCopy(const Value& v) {
  if (v.kind == NX_VALUE_SEQUENCE || v.kind == NX_VALUE_OPTIONAL) {
    auto out = std::make_shared<Value>();
    out->kind = v.kind;
    out->type = v.type;
    out->sequence_type = v.sequence_type;
    for (const ValuePtr& e : v.elements) out->elements.push_back(DeepCopy(*e));
    if (v.contained) out->contained = DeepCopy(*v.contained);
    return out;
  }
  NXRT_CHECK(IsHostReadable(v), NX_NOT_IMPLEMENTED,
             "sequences and optionals of tensors in device memory are not supported yet");
  ValuePtr fresh = MakeTensor(v.type, v.dims);
  if (v.type == NX_TYPE_STRING)
    fresh->strings = v.strings;
  else if (TensorBytes(v) > 0)
    std::memcpy(fresh->data, v.data, TensorBytes(v));
  return fresh;
}

// Whether a tensor's data belongs to it (not borrowed from the caller): such a tensor may be
// shared past the run.
bool OwnsData(const Value& v) {
  return v.kind != NX_VALUE_TENSOR || v.type == NX_TYPE_STRING || v.storage != nullptr ||
         v.count == 0;
}

// Maps every value a kernel may hand to SetOutput* to a shareable handle (null: copy it). Built
// once per Compute call, so building a long sequence stays linear.
void IndexShareable(const ValuePtr& v, bool shareable, NxKernelContext& c) {
  if (!v) return;
  c.share_index.emplace(v.get(), shareable && OwnsData(*v) ? v : nullptr);
  for (const ValuePtr& e : v->elements) IndexShareable(e, true, c);
  IndexShareable(v->contained, true, c);
}

void BuildShareIndex(NxKernelContext& c) {
  if (c.share_index_built) return;
  c.share_index_built = true;
  for (const ValuePtr& t : c.created) c.share_index.emplace(t.get(), t);
  for (size_t i = 0; i < c.num_inputs; ++i) {
    const Value* in = c.inputs[i];
    if (in == nullptr) continue;
    if (c.input_owners != nullptr && c.input_owners[i].get() == in) {
      IndexShareable(c.input_owners[i], true, c);
      continue;
    }
    // Not the run's (a graph input or a constant): the value itself is copied, what it holds
    // through shared handles is shared when it owns its data.
    c.share_index.emplace(in, nullptr);
    for (const ValuePtr& e : in->elements) IndexShareable(e, true, c);
    IndexShareable(in->contained, true, c);
  }
}

// `v` as a shared handle (the run's own value, one inside an input, a tensor the kernel created)
// or a copy. Refuses pointers the kernel could not have been given.
ValuePtr ShareOrCopy(NxKernelContext& c, const NxValue* v, const char* what) {
  NXRT_CHECK(v != nullptr, NX_INVALID_ARGUMENT, std::string(what) + ": a value is null");
  BuildShareIndex(c);
  auto it = c.share_index.find(v);
  NXRT_CHECK(it != c.share_index.end(), NX_INVALID_ARGUMENT,
             std::string(what) +
                 ": the value is neither an input (or inside one) nor a tensor from "
                 "KernelContext_CreateTensor");
  return it->second ? it->second : DeepCopy(*v);
}

void CheckOutputSlot(const NxKernelContext& c, size_t index, const char* what) {
  const Node& node = *c.node;
  NXRT_CHECK(index < c.num_outputs, NX_INVALID_ARGUMENT,
             node.Describe() + ": " + what + " for output " + std::to_string(index) +
                 " but the node has " + std::to_string(c.num_outputs) + " outputs");
  NXRT_CHECK(!c.outputs[index], NX_RUNTIME_ERROR,
             node.Describe() + ": output " + std::to_string(index) + " set twice");
}

NxStatus* ContextCreateTensor(NxKernelContext* c, NxElementType type, const int64_t* dims,
                              size_t rank, bool host, NxValue** tensor) {
  if (!c || !tensor) return CreateStatus(NX_INVALID_ARGUMENT, "KernelContext_CreateTensor: null");
  return CatchAsStatus([&] {
    NXRT_CHECK(rank == 0 || dims != nullptr, NX_INVALID_ARGUMENT,
               "KernelContext_CreateTensor: dims is null");
    NXRT_CHECK(type != NX_TYPE_UNDEFINED, NX_INVALID_ARGUMENT,
               "KernelContext_CreateTensor: undefined element type");
    std::vector<int64_t> shape(dims, dims + rank);
    for (int64_t d : shape)
      NXRT_CHECK(d >= 0, NX_INVALID_ARGUMENT,
                 "KernelContext_CreateTensor: negative dimension in " + ShapeString(shape));
    BufferPool* pool = host ? c->host_pool : c->pool;
    ValuePtr t = pool != nullptr ? MakeTensorFromPool(type, shape, *pool) : MakeTensor(type, shape);
    c->created.push_back(t);
    if (c->share_index_built) c->share_index.emplace(t.get(), t);
    *tensor = t.get();
  });
}

NxStatus* ContextSetOutputSequence(NxKernelContext* c, size_t index, NxElementType element_type,
                                   const NxValue* const* elements, size_t count) {
  if (!c) return CreateStatus(NX_INVALID_ARGUMENT, "KernelContext_SetOutputSequence: null");
  return CatchAsStatus([&] {
    CheckOutputSlot(*c, index, "SetOutputSequence");
    NXRT_CHECK(count == 0 || elements != nullptr, NX_INVALID_ARGUMENT,
               "KernelContext_SetOutputSequence: elements are null");
    auto seq = std::make_shared<Value>();
    seq->kind = NX_VALUE_SEQUENCE;
    seq->sequence_type = element_type;
    for (size_t i = 0; i < count; ++i) {
      ValuePtr e = ShareOrCopy(*c, elements[i], "KernelContext_SetOutputSequence");
      NXRT_CHECK(e->kind == NX_VALUE_TENSOR, NX_INVALID_ARGUMENT,
                 c->node->Describe() + ": sequence elements must be tensors");
      if (seq->sequence_type == NX_TYPE_UNDEFINED) seq->sequence_type = e->type;
      NXRT_CHECK(e->type == seq->sequence_type, NX_RUNTIME_ERROR,
                 c->node->Describe() + ": sequence element " + std::to_string(i) + " is " +
                     ElementTypeName(e->type) + ", the sequence holds " +
                     ElementTypeName(seq->sequence_type));
      seq->elements.push_back(std::move(e));
    }
    c->outputs[index] = std::move(seq);
  });
}

NxStatus* ContextSetOutputOptional(NxKernelContext* c, size_t index, const NxValue* value) {
  if (!c) return CreateStatus(NX_INVALID_ARGUMENT, "KernelContext_SetOutputOptional: null");
  return CatchAsStatus([&] {
    CheckOutputSlot(*c, index, "SetOutputOptional");
    auto opt = std::make_shared<Value>();
    opt->kind = NX_VALUE_OPTIONAL;
    if (value != nullptr) {
      opt->contained = ShareOrCopy(*c, value, "KernelContext_SetOutputOptional");
      NXRT_CHECK(opt->contained->kind != NX_VALUE_OPTIONAL, NX_INVALID_ARGUMENT,
                 c->node->Describe() + ": an optional cannot hold an optional");
      opt->type = opt->contained->kind == NX_VALUE_SEQUENCE ? opt->contained->sequence_type
                                                            : opt->contained->type;
    } else if (c->node->outputs[index] >= 0) {
      opt->type = c->node->owner->value(c->node->outputs[index]).type.elem_type;
    }
    c->outputs[index] = std::move(opt);
  });
}

NxStatus* ContextSetOutputValue(NxKernelContext* c, size_t index, const NxValue* value) {
  if (!c) return CreateStatus(NX_INVALID_ARGUMENT, "KernelContext_SetOutputValue: null");
  return CatchAsStatus([&] {
    CheckOutputSlot(*c, index, "SetOutputValue");
    c->outputs[index] = ShareOrCopy(*c, value, "KernelContext_SetOutputValue");
  });
}

const NxMemoryInfo* ValueGetMemoryInfo(const NxValue* v) { return v ? MemoryOf(*v) : HostMemory(); }
bool MemoryInfoAreEqual(const NxMemoryInfo* a, const NxMemoryInfo* b) {
  return a != nullptr && b != nullptr && SameMemory(a, b);
}
NxStatus* PrePackCacheStore(NxPrePackCache* cache, void* const* buffers, const size_t* sizes,
                            size_t count) {
  if (!cache) return CreateStatus(NX_INVALID_ARGUMENT, "PrePackCache_Store: cache is null");
  if (count == 0 || !buffers || !sizes) {
    return CreateStatus(NX_INVALID_ARGUMENT,
                        "PrePackCache_Store: needs at least one buffer with its size");
  }
  return CatchAsStatus([&] {
    std::vector<void*> b(buffers, buffers + count);
    std::vector<size_t> n(sizes, sizes + count);
    cache->FreeBuffers();  // a second call replaces the first: the host owned those
    cache->buffers = std::move(b);
    cache->sizes = std::move(n);
    cache->stored = true;
  });
}

}  // namespace

void FillValuesApi(NxHostApi& api) {
  api.Value_GetMemoryInfo = ValueGetMemoryInfo;
  api.MemoryInfo_AreEqual = MemoryInfoAreEqual;
  api.PrePackCache_Store = PrePackCacheStore;
  api.Value_GetSequenceLength = ValueGetSequenceLength;
  api.Value_GetSequenceElement = ValueGetSequenceElement;
  api.Value_OptionalHasValue = ValueOptionalHasValue;
  api.Value_GetOptionalValue = ValueGetOptionalValue;
  api.KernelContext_CreateTensor = ContextCreateTensor;
  api.KernelContext_SetOutputSequence = ContextSetOutputSequence;
  api.KernelContext_SetOutputOptional = ContextSetOutputOptional;
  api.KernelContext_SetOutputValue = ContextSetOutputValue;
  api.Value_GetKind = ValueGetKind;
  api.Value_GetElementType = ValueGetElementType;
  api.Value_GetShape = ValueGetShape;
  api.Value_GetElementCount = ValueGetElementCount;
  api.Value_GetData = ValueGetData;
  api.Value_GetString = ValueGetString;
  api.Value_SetString = ValueSetString;
}

}  // namespace nxrt::host_api
