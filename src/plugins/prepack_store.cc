#include "plugins/prepack_store.h"

#include <cstdio>
#include <cstring>

#include "base/element_type.h"

namespace nxrt {
namespace {

// A 128-bit content hash: four independent multiply-rotate lanes over 32-byte blocks (fast
// enough to hash a model's weights at memory speed), folded into two 64-bit halves.
struct Hash128 {
  static uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t Mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
  }
  uint64_t lane[4] = {0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull,
                      0x2545f4914f6cdd1dull};
  uint64_t length = 0;

  void Add(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
      for (int k = 0; k < 4; ++k) {
        uint64_t w;
        std::memcpy(&w, p + i + 8 * k, 8);
        lane[k] = Rotl(lane[k] + w * 0xc2b2ae3d27d4eb4full, 31) * 0x9e3779b185ebca87ull;
      }
    }
    for (; i < n; ++i)
      lane[i & 3] = Rotl(lane[i & 3] ^ (p[i] * 0x165667b19e3779f9ull), 23) * 0x85ebca77c2b2ae63ull;
    length += n;
  }
  std::string Hex() const {
    uint64_t a = Mix(lane[0] ^ Rotl(lane[1], 17) ^ length);
    uint64_t b = Mix(lane[2] ^ Rotl(lane[3], 29) ^ (length * 0x9e3779b97f4a7c15ull) ^ a);
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(a),
                  static_cast<unsigned long long>(b));
    return buf;
  }
};

// Exact text for a float: its bit pattern (std::to_string would round 1e-7 and 2e-7 alike).
std::string FloatBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return std::to_string(bits);
}

// Strings carry their length so no two attribute lists print alike.
std::string Counted(const std::string& v) { return std::to_string(v.size()) + ":" + v; }

std::string DescribeAttribute(const Attribute& a) {
  std::string s = Counted(a.name) + ":" + std::to_string(a.type) + "=";
  s += std::to_string(a.i) + "," + FloatBits(a.f) + "," + Counted(a.s) + ";";
  for (int64_t v : a.ints) s += std::to_string(v) + ",";
  s += ";";
  for (float v : a.floats) s += FloatBits(v) + ",";
  s += ";";
  for (const auto& v : a.strings) s += Counted(v) + ",";
  auto tensor_hash = [](const ValuePtr& t) {
    if (!t || t->type == NX_TYPE_STRING || !IsHostReadable(*t)) return std::string("-");
    Hash128 h;
    h.Add(t->data, TensorBytes(*t));
    return DescribeTensor(*t) + h.Hex();
  };
  if (a.tensor) s += tensor_hash(a.tensor);
  for (const auto& t : a.tensors) s += tensor_hash(t);
  // Graph attributes make a node unique enough that sharing is not worth a deep comparison.
  if (a.graph || !a.graphs.empty())
    s += "graph@" + std::to_string(reinterpret_cast<uintptr_t>(a.graph.get()));
  return s;
}

}  // namespace

size_t PackedWeight::bytes() const {
  size_t n = 0;
  for (size_t s : sizes) n += s;
  return n;
}

PackedWeight::~PackedWeight() {
  for (void* b : buffers) allocator->FreeBlock(b);
}

std::string PrePackStore::Key(const std::string& ep, const Node& node, size_t input,
                              const Value& weight) {
  std::string key = ep + "|" + node.domain + ":" + node.op_type + "@" + std::to_string(node.opset) +
                    "|in" + std::to_string(input) + "|";
  for (const Attribute& a : node.attributes) key += DescribeAttribute(a) + "|";
  for (int v : node.inputs) {
    if (v < 0) {
      key += "none|";
      continue;
    }
    const TypeInfo& t = node.owner->value(v).type;
    key +=
        std::to_string(t.elem_type) + (t.has_shape ? ShapeString(t.dims) : std::string("?")) + "|";
  }
  Hash128 h;
  h.Add(weight.data, TensorBytes(weight));
  return key + DescribeTensor(weight) + "#" + h.Hex();
}

std::shared_ptr<PackedWeight> PrePackStore::Find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return nullptr;
  auto entry = it->second.lock();
  if (!entry) entries_.erase(it);
  return entry;
}

std::shared_ptr<PackedWeight> PrePackStore::Insert(const std::string& key,
                                                   std::shared_ptr<PackedWeight> packed) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = entries_[key];
  if (auto existing = slot.lock()) return existing;
  slot = packed;
  return packed;
}

size_t PrePackStore::entries() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, weak] : entries_) n += weak.expired() ? 0 : 1;
  return n;
}

size_t PrePackStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, weak] : entries_)
    if (auto e = weak.lock()) n += e->bytes();
  return n;
}

}  // namespace nxrt
